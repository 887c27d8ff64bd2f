"""Resources, resource templates and prompts of your own, for `McpServer` to serve beside
its tools: `Resource`, `ResourceTemplate`, `Prompt` (with `PromptArgument`), and the
decorators `resource`, `resource_template` and `prompt` that make them from functions.

Reading a resource and rendering a prompt get a `ToolContext`, as a tool call does (the
request's invocation: user, session, services).
"""

from __future__ import annotations

import base64
import enum
import functools
import inspect
import re
import types
import typing
import urllib.parse
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, Literal, TypeAlias, overload

import anyio.to_thread
import docstring_parser
import mcp.types as mt
from mcp import MCPError

from toolsets._context import ToolContext
from toolsets._errors import ToolDefinitionError
from toolsets._json import JsonValue
from toolsets.mcp._convert import block_to_mcp

__all__ = [
    "Catalog",
    "Completer",
    "Prompt",
    "PromptArgument",
    "PromptMessages",
    "Resource",
    "ResourceTemplate",
    "prompt",
    "resource",
    "resource_template",
]


ResourceContent: TypeAlias = str | bytes
"""What reading a resource gives: text, or bytes (sent base64-encoded as a blob)."""
PromptMessages: TypeAlias = "str | Sequence[mt.PromptMessage | Mapping[str, Any] | str]"
"""What rendering a prompt gives: one text (a user message), or messages: each an MCP
``PromptMessage``, a ``{"role": "user" | "assistant", "content": ...}`` mapping whose
content is a text or one content block as toolsets' results write them (``{"type":
"image", "mime_type": ..., "data": ...}``, ``{"type": "resource", "uri": ..., "text":
...}``, ...), or a text (a user message)."""
Completer: TypeAlias = Callable[
    [str, str, Mapping[str, str]], "Awaitable[Sequence[str]] | Sequence[str]"
]
"""Suggests values for an argument of a prompt or a variable of a resource template:
called with the argument's name, the value typed so far, and the other arguments
already given; a sync or async function (a sync one runs in a worker thread)."""

_VARIABLE = re.compile(r"\{([A-Za-z0-9_]+)\}")
_EXPRESSION = re.compile(r"\{[^}]*\}")


@dataclass(frozen=True)
class Resource:
    """A resource at a fixed URI, read by a function of the request's context.

    Args:
        uri: Where it is, e.g. ``"file:///notes/today.md"`` or ``"test://static-text"``.
        name: Its name, as clients list it.
        read: Gives the contents (``str``: text; ``bytes``: binary), given the
            request's `ToolContext`; sync or async (a sync one runs in a worker
            thread).
        title: A human-readable name.
        description: What it holds, for the client (and its model).
        mime_type: Its media type (when None, a text is ``text/plain`` and bytes are
            ``application/octet-stream`` when read).
    """

    uri: str
    name: str
    _: KW_ONLY
    read: Callable[[ToolContext], Awaitable[ResourceContent] | ResourceContent] = field(repr=False)
    title: str | None = None
    description: str = ""
    mime_type: str | None = None

    def to_mcp(self) -> mt.Resource:
        """The resource as ``resources/list`` gives it."""
        return mt.Resource(
            uri=self.uri,
            name=self.name,
            title=self.title,
            description=self.description or None,
            mime_type=self.mime_type,
        )

    async def contents(
        self, ctx: ToolContext
    ) -> list[mt.TextResourceContents | mt.BlobResourceContents]:
        """The resource as ``resources/read`` gives it."""
        return [_contents(self.uri, self.mime_type, await _call(self.read, ctx))]


@dataclass(frozen=True)
class ResourceTemplate:
    """Resources whose URIs fit a template (RFC 6570 level 1: ``{name}`` stands for one
    path segment), read by a function of the values found there.

    Args:
        uri_template: e.g. ``"test://template/{id}/data"``.
        name: Its name, as clients list it.
        read: Gives the contents of the resource at a URI that fits (``str``: text;
            ``bytes``: binary; None: there is none, and the client hears "Resource
            not found"), given the template's variables (percent-decoded) and the
            request's `ToolContext`; sync or async.
        title: A human-readable name.
        description: What its resources hold.
        mime_type: Their media type (as for `Resource`).
        choices: The values each variable may take, by variable: offered as
            completions (``completion/complete``) unless ``complete`` is given.
        complete: Suggests values for a variable (see `Completer`).

    Raises:
        ToolDefinitionError: the template has an expression other than ``{name}``,
            or ``choices`` names no variable of it (``field`` says which).
    """

    uri_template: str
    name: str
    _: KW_ONLY
    read: Callable[
        [Mapping[str, str], ToolContext],
        Awaitable[ResourceContent | None] | ResourceContent | None,
    ] = field(repr=False)
    title: str | None = None
    description: str = ""
    mime_type: str | None = None
    choices: Mapping[str, Sequence[str]] = field(default_factory=dict)
    complete: Completer | None = field(default=None, repr=False)
    _pattern: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for expression in _EXPRESSION.findall(self.uri_template):
            if not _VARIABLE.fullmatch(expression):
                raise ToolDefinitionError(
                    f"resource template {self.uri_template!r}: only simple {{name}} "
                    f"expressions are supported, not {expression}",
                    field="uri_template",
                )
        unknown = set(self.choices) - set(self.variables)
        if unknown:
            raise ToolDefinitionError(
                f"resource template {self.uri_template!r} has no variable "
                f"{', '.join(sorted(unknown))} (choices)",
                field="choices",
            )
        parts = _VARIABLE.split(self.uri_template)
        pattern = "".join(
            re.escape(part) if index % 2 == 0 else f"(?P<{part}>[^/?#]+)"
            for index, part in enumerate(parts)
        )
        object.__setattr__(self, "_pattern", re.compile(pattern))

    @property
    def variables(self) -> list[str]:
        """The template's variables, in order."""
        return _VARIABLE.findall(self.uri_template)

    def match(self, uri: str) -> dict[str, str] | None:
        """The variables' values in ``uri`` (percent-decoded), or None if it does not
        fit the template."""
        found = self._pattern.fullmatch(uri)
        if found is None:
            return None
        return {name: urllib.parse.unquote(value) for name, value in found.groupdict().items()}

    def to_mcp(self) -> mt.ResourceTemplate:
        """The template as ``resources/templates/list`` gives it."""
        return mt.ResourceTemplate(
            uri_template=self.uri_template,
            name=self.name,
            title=self.title,
            description=self.description or None,
            mime_type=self.mime_type,
        )

    async def contents(
        self, uri: str, variables: Mapping[str, str], ctx: ToolContext
    ) -> list[mt.TextResourceContents | mt.BlobResourceContents] | None:
        """The resource at ``uri`` as ``resources/read`` gives it (None: there is none,
        as when a variable has ``choices`` and its value is not one of them)."""
        if any(variables.get(name) not in allowed for name, allowed in self.choices.items()):
            return None
        made = await _call(self.read, dict(variables), ctx)
        return None if made is None else [_contents(uri, self.mime_type, made)]

    async def completions(self, variable: str, value: str, given: Mapping[str, str]) -> list[str]:
        """Suggested values for ``variable``, given ``value`` typed so far."""
        return await _complete(
            self.complete, self.choices.get(variable, ()), variable, value, given
        )


@dataclass(frozen=True)
class PromptArgument:
    """An argument of a `Prompt` (MCP prompt arguments are strings).

    Args:
        name: Its name.
        description: What it is, for the user.
        required: Whether it must be given.
        choices: The values it may take, offered as completions unless the prompt has
            a ``complete`` function.
    """

    name: str
    description: str = ""
    _: KW_ONLY
    required: bool = True
    choices: Sequence[str] = ()

    def to_mcp(self) -> mt.PromptArgument:
        return mt.PromptArgument(
            name=self.name, description=self.description or None, required=self.required
        )


@dataclass(frozen=True)
class Prompt:
    """A prompt template, rendered into messages by a function of its arguments.

    Args:
        name: Its name, as clients list it.
        description: What it is for.
        arguments: Its arguments.
        render: Gives the messages (see `PromptMessages`), given the arguments (every
            required one is there; optional ones only when given) and the request's
            `ToolContext`; sync or async.
        title: A human-readable name.
        complete: Suggests values for an argument (see `Completer`).
    """

    name: str
    description: str = ""
    _: KW_ONLY
    render: Callable[
        [Mapping[str, str], ToolContext], Awaitable[PromptMessages] | PromptMessages
    ] = field(repr=False)
    arguments: Sequence[PromptArgument] = ()
    title: str | None = None
    complete: Completer | None = field(default=None, repr=False)

    def to_mcp(self) -> mt.Prompt:
        """The prompt as ``prompts/list`` gives it."""
        return mt.Prompt(
            name=self.name,
            title=self.title,
            description=self.description or None,
            arguments=[argument.to_mcp() for argument in self.arguments],
        )

    async def get(
        self, arguments: Mapping[str, str] | None, ctx: ToolContext
    ) -> mt.GetPromptResult:
        """The prompt rendered with ``arguments``, as ``prompts/get`` gives it.

        Raises:
            MCPError: -32602 when a required argument is missing, or one with
                ``choices`` is none of them (``data.argument`` names it).
        """
        given = dict(arguments or {})
        for argument in self.arguments:
            value = given.get(argument.name)
            if value is None and argument.required:
                problem = "needs the argument"
            elif value is not None and argument.choices and value not in argument.choices:
                problem = f"takes {', '.join(map(repr, argument.choices))} as"
            else:
                continue
            raise MCPError(
                mt.INVALID_PARAMS,
                f"The prompt {self.name!r} {problem} {argument.name!r}",
                {"argument": argument.name},
            )
        rendered = await _call(self.render, given, ctx)
        return mt.GetPromptResult(
            description=self.description or None, messages=_messages(self.name, rendered)
        )

    async def completions(self, argument: str, value: str, given: Mapping[str, str]) -> list[str]:
        """Suggested values for ``argument``, given ``value`` typed so far."""
        choices = next((a.choices for a in self.arguments if a.name == argument), ())
        return await _complete(self.complete, choices, argument, value, given)


# --- decorators ---------------------------------------------------------------------


def resource(
    uri: str,
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    mime_type: str | None = None,
) -> Callable[[Callable[..., Any]], Resource]:
    """Make a function a `Resource` at ``uri``: it takes nothing, or the request's
    `ToolContext` (a parameter annotated so), and returns the contents (``str`` or
    ``bytes``); sync or async. The name defaults to the function's, the description
    to its docstring.

    Example::

        @resource("note://today", mime_type="text/markdown")
        def today() -> str:
            \"\"\"Today's note.\"\"\"
            return "# Today"
    """

    def make(fn: Callable[..., Any]) -> Resource:
        call = _Signature(fn, f"resource {uri!r}")
        call.only(())

        async def read(ctx: ToolContext) -> Any:
            return await call({}, ctx)

        return Resource(
            uri,
            name or fn.__name__,
            read=read,
            title=title,
            description=call.description if description is None else description,
            mime_type=mime_type,
        )

    return make


def resource_template(
    uri_template: str,
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    mime_type: str | None = None,
    complete: Completer | None = None,
) -> Callable[[Callable[..., Any]], ResourceTemplate]:
    """Make a function a `ResourceTemplate`: it takes the template's variables as
    keyword arguments (strings; a ``Literal[...]`` or ``Enum`` annotation gives the
    choices offered as completions) and, if it likes, the request's `ToolContext`; it
    returns the contents (``str`` or ``bytes``), or None when there is no such
    resource.

    Example::

        @resource_template("user://{user_id}/profile", mime_type="application/json")
        async def profile(user_id: str) -> str | None:
            return json.dumps(await load_profile(user_id))

    Raises:
        ToolDefinitionError: a variable is not a parameter of the function, or a
            parameter without a default is not a variable (``field`` names it).
    """

    def make(fn: Callable[..., Any]) -> ResourceTemplate:
        call = _Signature(fn, f"resource template {uri_template!r}")
        variables = _VARIABLE.findall(uri_template)
        call.only(variables)
        missing = [v for v in variables if v not in call.params]
        if missing:
            raise ToolDefinitionError(
                f"resource template {uri_template!r}: the function {fn.__name__!r} has no "
                f"parameter {', '.join(missing)}",
                field=missing[0],
            )
        return ResourceTemplate(
            uri_template,
            name or fn.__name__,
            read=call,
            title=title,
            description=call.description if description is None else description,
            mime_type=mime_type,
            choices={p: c for p, c in call.choices.items() if c},
            complete=complete,
        )

    return make


@overload
def prompt(fn: Callable[..., Any], /) -> Prompt: ...
@overload
def prompt(
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    complete: Completer | None = None,
) -> Callable[[Callable[..., Any]], Prompt]: ...
def prompt(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    complete: Completer | None = None,
) -> Prompt | Callable[[Callable[..., Any]], Prompt]:
    """Make a function a `Prompt`: its parameters are the prompt's arguments (required
    unless they have a default; described by the docstring's ``Args:``; a
    ``Literal[...]`` or ``Enum`` annotation gives the choices offered as completions),
    and a parameter annotated `ToolContext` gets the request's context. It returns the
    messages (see `PromptMessages`); sync or async. ``@prompt`` or ``@prompt(...)``.

    Example::

        @prompt
        def review(code: str, style: Literal["short", "thorough"] = "short") -> str:
            \"\"\"Ask for a code review.

            Args:
                code: The code to review.
                style: How deep to go.
            \"\"\"
            return f"Review this code ({style}):\\n{code}"
    """

    def make(fn: Callable[..., Any]) -> Prompt:
        call = _Signature(fn, f"prompt {name or fn.__name__!r}")
        arguments = [
            PromptArgument(
                param,
                call.argument_doc.get(param, ""),
                required=param in call.required,
                choices=call.choices.get(param, ()),
            )
            for param in call.params
        ]
        return Prompt(
            name or fn.__name__,
            call.description if description is None else description,
            render=call,
            arguments=arguments,
            title=title,
            complete=complete,
        )

    return make if fn is None else make(fn)


class _Signature:
    """A decorated function's parameters: the arguments it takes by name, and the one
    annotated `ToolContext` (if any); calling it passes both."""

    def __init__(self, fn: Callable[..., Any], what: str) -> None:
        self.fn = fn
        self.what = what
        try:
            signature = inspect.signature(fn, eval_str=True, locals={"ToolContext": ToolContext})
        except (NameError, TypeError) as exc:
            raise ToolDefinitionError(f"{what}: cannot read the signature: {exc}") from exc
        self.params: list[str] = []
        self.required: set[str] = set()
        self.choices: dict[str, list[str]] = {}
        self.enums: dict[str, type[enum.Enum]] = {}
        """The parameters annotated with an `Enum`: given its member, not the string."""
        self.context: str | None = None
        for param in signature.parameters.values():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
                raise ToolDefinitionError(
                    f"{what}: the parameter {param.name!r} cannot be passed by name",
                    field=param.name,
                )
            if _is_context(param.annotation):
                self.context = param.name
                continue
            self.params.append(param.name)
            if param.default is param.empty:
                self.required.add(param.name)
            self.choices[param.name] = _choices(param.annotation)
            annotation = _unannotated(param.annotation)
            if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
                self.enums[param.name] = annotation
        doc = docstring_parser.parse(inspect.getdoc(fn) or "")
        self.description = (doc.short_description or "").strip()
        if doc.long_description:
            self.description += "\n\n" + doc.long_description.strip()
        self.argument_doc = {p.arg_name: (p.description or "").strip() for p in doc.params}

    def only(self, names: Iterable[str]) -> None:
        """Check that every parameter without a default is one of ``names``."""
        extra = sorted(self.required - set(names))
        if extra:
            raise ToolDefinitionError(
                f"{self.what}: the function {self.fn.__name__!r} takes {', '.join(extra)}, "
                "which nothing gives",
                field=extra[0],
            )

    async def __call__(self, arguments: Mapping[str, str], ctx: ToolContext) -> Any:
        kwargs: dict[str, Any] = {k: v for k, v in arguments.items() if k in self.params}
        for name, kind in self.enums.items():
            if name in kwargs:  # checked against the choices already
                kwargs[name] = next(m for m in kind if str(m.value) == kwargs[name])
        if self.context is not None:
            kwargs[self.context] = ctx
        if _is_async(self.fn):
            return await self.fn(**kwargs)
        return await _in_thread(functools.partial(self.fn, **kwargs))


def _is_context(annotation: Any) -> bool:
    if annotation is ToolContext:
        return True
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return len(args) == 1 and args[0] is ToolContext
    return False


def _is_async(fn: Callable[..., Any]) -> bool:
    fn = inspect.unwrap(fn)
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004 - a callable object's own method
    )


def _unannotated(annotation: Any) -> Any:
    if typing.get_origin(annotation) is typing.Annotated:
        return typing.get_args(annotation)[0]
    return annotation


def _choices(annotation: Any) -> list[str]:
    """The values a ``Literal[...]`` or ``Enum`` annotation allows (as strings)."""
    annotation = _unannotated(annotation)
    if typing.get_origin(annotation) is Literal:
        return [str(value) for value in typing.get_args(annotation)]
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return [str(member.value) for member in annotation]
    return []


async def _call(fn: Callable[..., Any], *args: Any) -> Any:
    """What ``fn`` gives for ``args``: an async function is awaited; a sync one runs in a
    worker thread (it may block)."""
    if isinstance(fn, _Signature) or _is_async(fn):
        return await fn(*args)
    return await _in_thread(functools.partial(fn, *args))


async def _in_thread(call: Callable[[], Any]) -> Any:
    """What the sync ``call`` gives, run in a worker thread (it may block): past the
    server's deadline the request no longer waits for it, and its result is dropped."""
    made = await anyio.to_thread.run_sync(call, abandon_on_cancel=True)
    return await made if inspect.isawaitable(made) else made


async def _complete(
    complete: Completer | None,
    choices: Sequence[str],
    argument: str,
    value: str,
    given: Mapping[str, str],
) -> list[str]:
    if complete is not None:
        suggested = await _call(complete, argument, value, dict(given))
        return [str(s) for s in suggested]
    return [choice for choice in choices if choice.startswith(value)]


def _contents(
    uri: str, mime_type: str | None, made: object
) -> mt.TextResourceContents | mt.BlobResourceContents:
    if isinstance(made, str):
        return mt.TextResourceContents(uri=uri, mime_type=mime_type or "text/plain", text=made)
    if isinstance(made, bytes | bytearray | memoryview):
        return mt.BlobResourceContents(
            uri=uri,
            mime_type=mime_type or "application/octet-stream",
            blob=base64.b64encode(bytes(made)).decode("ascii"),
        )
    raise TypeError(f"reading {uri!r} gave {type(made).__name__}, not str or bytes")


def _messages(name: str, rendered: object) -> list[mt.PromptMessage]:
    if isinstance(rendered, str):
        rendered = [rendered]
    if not isinstance(rendered, Sequence):
        raise TypeError(f"the prompt {name!r} gave {type(rendered).__name__}, not messages")
    return [_message(name, item) for item in rendered]


def _message(name: str, item: object) -> mt.PromptMessage:
    if isinstance(item, mt.PromptMessage):
        return item
    if isinstance(item, str):
        return mt.PromptMessage(role="user", content=mt.TextContent(type="text", text=item))
    if isinstance(item, Mapping) and item.get("role") in ("user", "assistant"):
        content: JsonValue = item.get("content")
        if isinstance(content, str):
            return mt.PromptMessage(
                role=item["role"], content=mt.TextContent(type="text", text=content)
            )
        block = block_to_mcp(content)
        if block is not None:
            return mt.PromptMessage(role=item["role"], content=block)
    raise TypeError(
        f"the prompt {name!r} gave {item!r}, not a message (a text, or a mapping with "
        "'role' and 'content')"
    )


class Catalog:
    """The resources, templates and prompts a server offers of its own; names (URIs,
    templates, prompt names) are unique. ``on_change`` hears which list changed
    (``"resources"`` or ``"prompts"``)."""

    def __init__(self, on_change: Callable[[Literal["resources", "prompts"]], None]) -> None:
        self.resources: dict[str, Resource] = {}
        self.templates: dict[str, ResourceTemplate] = {}
        self.prompts: dict[str, Prompt] = {}
        self._on_change = on_change

    def add_resources(self, items: Iterable[Resource | ResourceTemplate]) -> None:
        new = list(items)
        resources = dict(self.resources)
        templates = dict(self.templates)
        for item in new:
            if isinstance(item, Resource):
                key, taken = item.uri, resources
            elif isinstance(item, ResourceTemplate):
                key, taken = item.uri_template, templates  # type: ignore[assignment]
            else:
                raise ToolDefinitionError(
                    f"{item!r} is not a Resource or a ResourceTemplate (decorate a "
                    "function with @resource or @resource_template)",
                    field="resources",
                )
            if key in taken:
                raise ToolDefinitionError(
                    f"this server already has a resource at {key!r}", field=key
                )
            taken[key] = item  # type: ignore[assignment]
        self.resources, self.templates = resources, templates
        if new:
            self._on_change("resources")

    def remove_resource(self, uri: str) -> None:
        if self.resources.pop(uri, None) is None and self.templates.pop(uri, None) is None:
            raise KeyError(uri)
        self._on_change("resources")

    def add_prompts(self, items: Iterable[Prompt]) -> None:
        new = list(items)
        prompts = dict(self.prompts)
        for item in new:
            if not isinstance(item, Prompt):
                raise ToolDefinitionError(
                    f"{item!r} is not a Prompt (decorate a function with @prompt)",
                    field="prompts",
                )
            if item.name in prompts:
                raise ToolDefinitionError(
                    f"this server already has a prompt named {item.name!r}", field=item.name
                )
            prompts[item.name] = item
        self.prompts = prompts
        if new:
            self._on_change("prompts")

    def remove_prompt(self, name: str) -> None:
        if self.prompts.pop(name, None) is None:
            raise KeyError(name)
        self._on_change("prompts")

    async def read(
        self, uri: str, ctx: ToolContext
    ) -> list[mt.TextResourceContents | mt.BlobResourceContents] | None:
        """The contents of the resource at ``uri``, or of the first template it fits
        that has one there; None: no resource of this catalog's is there."""
        found = self.resources.get(uri)
        if found is not None:
            return await found.contents(ctx)
        for template in list(self.templates.values()):
            variables = template.match(uri)
            if variables is not None:
                contents = await template.contents(uri, variables, ctx)
                if contents is not None:
                    return contents
        return None
