"""The functions of yours behind resources, resource templates, prompts and completers
(internal): what the decorators read of one (`Signature`: its arguments by name, its
`ToolContext` parameter, the choices its annotations allow, its docstring), how each is
called (`call_function`: an async one awaited, a sync one in a worker thread), and what
it gives made into MCP's resource contents or prompt messages.
"""

from __future__ import annotations

import base64
import enum
import functools
import inspect
import types
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal

import anyio.to_thread
import docstring_parser
import mcp.types as mt

from toolsets._context import ToolContext
from toolsets._errors import ToolDefinitionError
from toolsets._json import JsonValue
from toolsets.mcp._convert import block_to_mcp

__all__ = ["Signature", "call_function", "prompt_messages", "resource_contents"]


class Signature:
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


async def call_function(fn: Callable[..., Any], *args: Any) -> Any:
    """What ``fn`` gives for ``args``: an async function is awaited; a sync one runs in a
    worker thread (it may block)."""
    if isinstance(fn, Signature) or _is_async(fn):
        return await fn(*args)
    return await _in_thread(functools.partial(fn, *args))


async def _in_thread(call: Callable[[], Any]) -> Any:
    """What the sync ``call`` gives, run in a worker thread (it may block): past the
    server's deadline the request no longer waits for it, and its result is dropped."""
    made = await anyio.to_thread.run_sync(call, abandon_on_cancel=True)
    return await made if inspect.isawaitable(made) else made


def resource_contents(
    uri: str, mime_type: str | None, made: object
) -> mt.TextResourceContents | mt.BlobResourceContents:
    """What reading the resource at ``uri`` gave (``str`` or ``bytes``), as MCP contents.

    Raises:
        TypeError: it gave something else.
    """
    if isinstance(made, str):
        return mt.TextResourceContents(uri=uri, mime_type=mime_type or "text/plain", text=made)
    if isinstance(made, bytes | bytearray | memoryview):
        return mt.BlobResourceContents(
            uri=uri,
            mime_type=mime_type or "application/octet-stream",
            blob=base64.b64encode(bytes(made)).decode("ascii"),
        )
    raise TypeError(f"reading {uri!r} gave {type(made).__name__}, not str or bytes")


def prompt_messages(name: str, rendered: object) -> list[mt.PromptMessage]:
    """What rendering the prompt ``name`` gave (see `PromptMessages`), as MCP messages.

    Raises:
        TypeError: it gave something else.
    """
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
