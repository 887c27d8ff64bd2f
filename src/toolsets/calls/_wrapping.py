"""Wrapping tool calls: `CallWrapper`, the onion around one call, and `wrap_calls`, which
puts wrappers on a toolset's tools or on one tool.

A wrapped tool's `run` runs its wrappers, the first outermost, around the tool's own run:
each is given the call (`ToolCall`) and the next layer (`CallNext`), and may call the
next once, several times (a retry), or not at all (an answer of its own: a cached one,
a refusal). Since every consumer calls tools through the one call path (`invoke`), the
agent loop, the framework adapters, the MCP server and the CLI all run the wrappers, and
the call's deadline bounds all of it (the waits between tries included). A tool with no
wrapper costs nothing more: nothing is added to the call path.

What the innermost layer returns is the tool's result (a streaming tool's last result,
the ones before it reported as the call's progress); what it raises reaches the call
path's error handling (``on_tool_error``, else an error result) unless a wrapper catches
it. Each call of the next layer runs the tool with a copy of the call's arguments, so a
tool that changes its arguments does not change those of the next try.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio

from toolsets._concurrency import Ready
from toolsets._context import ToolContext
from toolsets._forwarding import ForwardingTool
from toolsets._invoke import CallPath
from toolsets._json import JsonValue, copy_json
from toolsets._results import clip
from toolsets._streaming import ToolStream
from toolsets._tool import Tool
from toolsets._toolset import ListingVaries, Toolset
from toolsets._wrappers import LastListing, WrapperToolset

__all__ = ["CallNext", "CallWrapper", "ToolCall", "Try", "WrappedTool", "wrap_calls"]

_SHOWN_PARTIAL = 200
"""Characters of a streamed partial result put in a progress report's message."""


@dataclass(frozen=True, slots=True)
class Try:
    """One run of the tool within a call, as a wrapper that ran it again saw it."""

    number: int
    """1 for the first run."""
    waited: float
    """Seconds waited before it (0.0 for the first)."""
    status: int | None = None
    """The HTTP status of its error result, if it had one."""
    error: str | None = None
    """The class of what it raised, if it raised (never its message)."""


@dataclass(slots=True)
class ToolCall:
    """One call of a wrapped tool, as its wrappers see it."""

    tool: Tool
    """The tool called (its declaration, annotations and name as offered)."""
    args: dict[str, Any]
    """The call's arguments, as the call path admitted them. A wrapper may change them
    (for every later layer and try)."""
    ctx: ToolContext
    """The call's context."""
    deadline: float
    """When the call's time is up, on anyio's clock (`anyio.current_time`): a wrapper
    never waits past it."""
    tries: list[Try] = field(default_factory=list)
    """The runs of the tool so far, when a wrapper runs it more than once (`Retry`
    records them)."""

    def time_left(self) -> float:
        """Seconds until `deadline` (never below zero)."""
        return max(0.0, self.deadline - anyio.current_time())


CallNext = Callable[[ToolCall], Awaitable[JsonValue]]
"""The next layer of a wrapped call: the next wrapper, or at the core the tool's run."""


class CallWrapper(Protocol):
    """Something wrapped around tool calls: given the call and the next layer, it returns
    the call's result, calling ``call_next`` as often as it sees fit."""

    async def __call__(self, call: ToolCall, call_next: CallNext) -> JsonValue: ...


class WrappedTool(ForwardingTool):
    """A tool whose calls run through ``wrappers`` (the first outermost)."""

    def __init__(self, tool: Tool, wrappers: Sequence[CallWrapper]) -> None:
        super().__init__(tool)
        self.wrappers: tuple[CallWrapper, ...] = tuple(wrappers)
        """The wrappers, the first outermost."""
        self._outermost = self._layer(0)
        """The whole onion, made once: each layer calls the next."""

    def run(self, args: Mapping[str, Any], ctx: ToolContext) -> Awaitable[JsonValue]:
        return self._wrapped(dict(args), ctx)

    async def _wrapped(self, args: dict[str, Any], ctx: ToolContext) -> JsonValue:
        path = ctx.call_path
        default = path.default_timeout if isinstance(path, CallPath) else None
        seconds = self.timeout or default
        now = anyio.current_time()
        deadline = now + seconds if seconds is not None else float("inf")
        call = ToolCall(tool=self, args=args, ctx=ctx, deadline=deadline)
        return await self._outermost(call)

    def _layer(self, index: int) -> CallNext:
        """The call from the ``index``-th wrapper inwards."""
        if index == len(self.wrappers):
            return self._core
        wrapper, inner = self.wrappers[index], self._layer(index + 1)

        async def layer(call: ToolCall) -> JsonValue:
            return await wrapper(call, inner)

        return layer

    async def _core(self, call: ToolCall) -> JsonValue:
        """The wrapped tool's own run, with a copy of the call's arguments."""
        running = self.tool.run(copy_json(call.args), call.ctx)
        if isinstance(running, Ready):
            value: JsonValue = running.value
            return value
        if isinstance(running, ToolStream):
            return await _pulled(running, call.ctx)
        return await running


async def _pulled(stream: ToolStream, ctx: ToolContext) -> JsonValue:
    """A stream's last result; each before it reported as the call's progress."""
    last: JsonValue = None
    pending: JsonValue = None
    seen = False
    try:
        async for value in stream:
            if seen:
                shown = clip(json.dumps(pending, ensure_ascii=False, default=str), _SHOWN_PARTIAL)
                await ctx.report_progress(stream.count - 1, None, shown)
            pending, seen = value, True
        last = pending
    finally:
        await stream.aclose()
    if not seen:
        raise stream.no_result()
    return last


def wrap_calls(target: Toolset | Tool, *wrappers: CallWrapper) -> Any:
    """``target`` (a toolset, or one tool) with every call of its tools run through
    ``wrappers``, the first outermost: a toolset's tools are wrapped as they are listed.
    Wrapping a wrapped target again puts the new wrappers around the old ones.

    Returns:
        A `WrapperToolset` for a toolset, a `WrappedTool` for a tool.

    Raises:
        TypeError: ``target`` is neither a toolset nor a tool, or a wrapper is not
            callable.
    """
    for wrapper in wrappers:
        if not callable(wrapper):
            raise TypeError(f"a call wrapper must be callable, not {type(wrapper).__name__}")
    if isinstance(target, Toolset):
        return _CallsWrapped(target, wrappers) if wrappers else target
    if isinstance(target, Tool):
        return WrappedTool(target, wrappers) if wrappers else target
    raise TypeError(f"wrap_calls wraps a toolset or a tool, not {type(target).__name__}")


class _CallsWrapped(WrapperToolset):
    """A toolset whose tools' calls run through wrappers."""

    def __init__(self, inner: Toolset, wrappers: Sequence[CallWrapper]) -> None:
        super().__init__(inner)
        self._call_wrappers = tuple(wrappers)
        self._last = LastListing()
        self._made: dict[int, WrappedTool] = {}
        """The last listing's wrapped tools, by the id of the tool each wraps."""

    @property
    def listing_varies(self) -> ListingVaries:  # type: ignore[override]
        """As the wrapped toolset's: wrapping changes no listing."""
        varies: ListingVaries = getattr(self.wrapped, "listing_varies", "request")
        return varies

    async def list_tools(self, ctx: ToolContext | None = None) -> Sequence[Tool]:
        tools = await self.wrapped.list_tools(ctx)
        listed = self._last.made_of(tools)
        if listed is not None:
            return listed
        made: dict[int, WrappedTool] = {}
        for tool in tools:
            # The same tool keeps its wrapped tool from one listing to the next.
            known = self._made.get(id(tool))
            if known is None or known.tool is not tool:
                known = WrappedTool(tool, self._call_wrappers)
            made[id(tool)] = known
        self._made = made
        return self._last.keep(tools, tuple(made[id(tool)] for tool in tools))

    def __repr__(self) -> str:
        return f"wrap_calls({self.wrapped!r})"
