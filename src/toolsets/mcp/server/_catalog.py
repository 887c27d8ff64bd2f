"""Resources, resource templates and prompts of your own, for `McpServer` to serve beside
its tools: `Resource`, `ResourceTemplate`, `Prompt` (with `PromptArgument`), and a
server's `Catalog` of them (the decorators `resource`, `resource_template` and `prompt`
make them from functions: `_decorators`).

Reading a resource and rendering a prompt get a `ToolContext`, as a tool call does (the
request's invocation: user, session, services).
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, Literal, TypeAlias

import mcp.types as mt
from mcp import MCPError

from toolsets._context import ToolContext
from toolsets._errors import ToolDefinitionError
from toolsets.mcp.server._functions import call_function, prompt_messages, resource_contents

__all__ = [
    "Catalog",
    "Completer",
    "Prompt",
    "PromptArgument",
    "PromptMessages",
    "Resource",
    "ResourceTemplate",
    "variables_of",
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


def variables_of(uri_template: str) -> list[str]:
    """The variables of a URI template (its ``{name}`` expressions), in order."""
    return _VARIABLE.findall(uri_template)


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
        made = await call_function(self.read, ctx)
        return [resource_contents(self.uri, self.mime_type, made)]


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
        return variables_of(self.uri_template)

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
        made = await call_function(self.read, dict(variables), ctx)
        return None if made is None else [resource_contents(uri, self.mime_type, made)]

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
        rendered = await call_function(self.render, given, ctx)
        return mt.GetPromptResult(
            description=self.description or None, messages=prompt_messages(self.name, rendered)
        )

    async def completions(self, argument: str, value: str, given: Mapping[str, str]) -> list[str]:
        """Suggested values for ``argument``, given ``value`` typed so far."""
        choices = next((a.choices for a in self.arguments if a.name == argument), ())
        return await _complete(self.complete, choices, argument, value, given)


async def _complete(
    complete: Completer | None,
    choices: Sequence[str],
    argument: str,
    value: str,
    given: Mapping[str, str],
) -> list[str]:
    if complete is not None:
        suggested = await call_function(complete, argument, value, dict(given))
        return [str(s) for s in suggested]
    return [choice for choice in choices if choice.startswith(value)]


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

    def holds(self, uri: str) -> bool:
        """Whether a resource of this catalog's is at ``uri``, or a template it fits."""
        return uri in self.resources or any(
            t.match(uri) is not None for t in list(self.templates.values())
        )

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
