"""Where tools come from: the `Toolset` protocol, its defaults, and `StaticToolset`."""

from __future__ import annotations

import abc
import functools
from collections.abc import Callable, Iterable, Sequence
from types import TracebackType
from typing import Any, Literal, Protocol, Self, TypeAlias, runtime_checkable

from toolsets._concurrency import gather
from toolsets._context import ToolContext
from toolsets._errors import ToolDefinitionError, ToolNotFoundError
from toolsets._function_tool import FunctionTool
from toolsets._tool import Tool

__all__ = ["BaseToolset", "ListingVaries", "StaticToolset", "Toolset", "as_tool", "list_each"]

ListingVaries: TypeAlias = Literal["never", "caller", "request"]
"""What a toolset's listing depends on, beyond the changes it announces: ``"never"``
(every caller is offered the same tools), ``"caller"`` (who calls: identity, scopes,
credentials), ``"request"`` (anything in the context, e.g. the client's state)."""


@runtime_checkable
class Toolset(Protocol):
    """A source of tools: an MCP server, an OpenAPI spec, a list of functions, ...

    ``list_tools`` may answer differently per context (per user, per session). A
    toolset that holds resources (a process, a connection) opens them on first use or
    on ``async with``, and releases them in ``shutdown``, which is idempotent and may be
    called from any task. A toolset whose tools change may offer ``on_tools_changed(
    listener) -> stop`` (as `StaticToolset` and `McpToolset` do): an MCP server serving
    it (alone, wrapped or combined) announces each change to its clients.
    """

    async def list_tools(self, ctx: ToolContext | None = None) -> Sequence[Tool]:
        """The tools offered in this context, in a stable order."""
        ...

    async def shutdown(self) -> None:
        """Release every resource; safe to call twice, and from any task."""
        ...

    async def __aenter__(self) -> Self: ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...


class BaseToolset(abc.ABC):
    """Defaults for `Toolset`: ``async with`` calls ``shutdown`` on exit."""

    listing_varies: ListingVaries = "request"
    """What this toolset's listing depends on, beyond the changes it announces (a
    wrapper: what it adds to the toolset it wraps). An MCP server serving it tells
    clients how long and how widely they may cache its lists from it (see `McpServer`'s
    ``list_ttl``); ``"request"``, the default, claims nothing."""

    @abc.abstractmethod
    async def list_tools(self, ctx: ToolContext | None = None) -> Sequence[Tool]:
        """The tools offered in this context."""

    async def shutdown(self) -> None:
        """Nothing to release by default."""
        return None

    async def get_tool(self, name: str, ctx: ToolContext | None = None) -> Tool:
        """The tool called ``name``.

        Raises:
            ToolNotFoundError: no such tool; ``.available`` lists the names offered.
        """
        tools = await self.list_tools(ctx)
        for candidate in tools:
            if candidate.name == name:
                return candidate
        raise ToolNotFoundError(name, (t.name for t in tools))

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.shutdown()


def as_tool(candidate: object, *, toolsets: bool = False) -> Tool:
    """A `Tool` as is; a plain function wrapped in a `FunctionTool`.

    Raises:
        ToolDefinitionError: ``candidate`` is neither; when it has some `Tool`
            members, ``field`` names those it lacks (``toolsets``: the caller accepts a
            `Toolset` too, and the message says so).
    """
    if isinstance(candidate, Tool):
        return candidate
    if callable(candidate):
        return FunctionTool(candidate)
    kinds = "a tool, a toolset or a function" if toolsets else "a tool or a function"
    missing = [member for member in _TOOL_MEMBERS if not hasattr(candidate, member)]
    if len(missing) == len(_TOOL_MEMBERS):  # nothing like a tool: listing all would not help
        raise ToolDefinitionError(f"{candidate!r} is not {kinds}")
    lacks = ", ".join(missing)
    raise ToolDefinitionError(
        f"{candidate!r} is not {kinds}: as a tool it lacks {lacks}", field=lacks
    )


_TOOL_MEMBERS = tuple(member for member in vars(Tool) if not member.startswith("_"))
"""The members the `Tool` protocol declares, in its order."""


async def list_each(toolsets: Sequence[Toolset], ctx: ToolContext | None) -> list[Sequence[Tool]]:
    """The tools of each toolset, in the toolsets' order; they are listed concurrently."""
    return await gather([functools.partial(toolset.list_tools, ctx) for toolset in toolsets])


class StaticToolset(BaseToolset):
    """A fixed list of tools, to which more can be pushed.

    Plain functions are wrapped in `FunctionTool`. Names must be unique.
    """

    listing_varies: ListingVaries = "never"

    def __init__(self, tools: Iterable[Tool | Callable[..., Any]] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        self._listeners: dict[object, Callable[[], None]] = {}
        self.push(*tools)

    def push(self, *tools: Tool | Callable[..., Any]) -> None:
        """Add tools.

        Raises:
            ToolDefinitionError: a name is already taken (nothing is added then).
        """
        new = [as_tool(t) for t in tools]
        seen = set(self._tools)
        for t in new:
            if t.name in seen:
                raise ToolDefinitionError(
                    f"this toolset already has a tool named {t.name!r}", tool_name=t.name
                )
            seen.add(t.name)
        self._tools.update((t.name, t) for t in new)
        if new:
            self._tell()

    def remove(self, *names: str) -> None:
        """Take tools out, by name.

        Raises:
            ToolNotFoundError: a name is not here (nothing is removed then).
        """
        for name in names:
            if name not in self._tools:
                raise ToolNotFoundError(name, self._tools)
        for name in names:
            del self._tools[name]
        if names:
            self._tell()

    def on_tools_changed(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call ``listener`` (a plain function; keep it quick) each time tools are
        pushed or removed. Returns the function that stops it (idempotent). An MCP
        server serving this toolset uses it to tell its clients."""
        token = object()
        self._listeners[token] = listener
        return lambda: self._listeners.pop(token, None) and None

    def _tell(self) -> None:
        for listener in list(self._listeners.values()):
            listener()

    async def list_tools(self, ctx: ToolContext | None = None) -> Sequence[Tool]:
        """Every tool, in the order pushed."""
        return tuple(self._tools.values())

    def __repr__(self) -> str:
        return f"StaticToolset({list(self._tools)!r})"
