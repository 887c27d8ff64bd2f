"""Background tools: the model is told at once that the call is running, the conversation
goes on, and the result is given to the model when it arrives."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

import anyio

from toolsets._content import Content, Part
from toolsets._context import EventActions, ToolContext
from toolsets._errors import ToolDefinitionError
from toolsets._forwarding import ForwardingTool
from toolsets._invoke import (
    Done,
    LongRunning,
    ToolRun,
    describe_error,
)
from toolsets._json import JsonValue
from toolsets._results import error_result, is_error_result
from toolsets._tool import Tool
from toolsets._toolset import StaticToolset, Toolset, as_tool
from toolsets._wrappers import ManyToolsets, WrapperToolset

__all__ = [
    "BackgroundCalls",
    "BackgroundFormatter",
    "BackgroundStatus",
    "BackgroundTool",
    "BackgroundUpdate",
    "LONG_RUNNING_REFUSED",
    "background",
    "background_tool_of",
    "default_background_format",
    "may_run_in_background",
]

BackgroundStatus: TypeAlias = Literal["running", "done", "error", "cancelled"]
"""Where a background call is: just started, finished, failed, or cancelled."""


@dataclass(frozen=True, kw_only=True)
class BackgroundUpdate:
    """What a `BackgroundFormatter` formats: a background call's news."""

    status: BackgroundStatus
    """``"running"`` (the acknowledgment), ``"done"``, ``"error"`` or ``"cancelled"``."""
    tool_name: str
    """The tool called."""
    function_call_id: str
    """The call's id (the model's, as in its function call)."""
    args: Mapping[str, Any]
    """The arguments it ran with."""
    result: JsonValue = None
    """``"done"``: the result; ``"error"``: the error result; otherwise None."""
    reason: str | None = None
    """``"cancelled"``: why (the run ended, or was stopped)."""


BackgroundFormatter: TypeAlias = Callable[[BackgroundUpdate], JsonValue]
"""Shapes what the model is told: for ``"running"``, the function response it gets at
once; for the others, the message it gets when the call ends (a string is sent as it is,
another JSON value as JSON text)."""


def default_background_format(update: BackgroundUpdate) -> JsonValue:
    """The acknowledgment ``{"status": "running", ...}``, and a sentence naming the call
    with its result, error or reason when it ends."""
    call = f"The background call {update.tool_name} ({update.function_call_id})"
    if update.status == "running":
        return {
            "status": "running",
            "note": "The result will be sent in a later message; do not call again for it.",
        }
    if update.status == "done":
        return f"{call} finished: {json.dumps(update.result, ensure_ascii=False)}"
    if update.status == "error":
        return f"{call} failed: {json.dumps(update.result, ensure_ascii=False)}"
    return f"{call} was cancelled ({update.reason or 'no reason given'}); it may not have run."


class BackgroundTool(ForwardingTool):
    """A tool whose calls an agent runs in the background (see `background`); every
    other consumer (an MCP server, an adapter) calls it as the tool it wraps."""

    def __init__(self, tool: Tool, formatter: BackgroundFormatter | None = None) -> None:
        super().__init__(tool)
        self.formatter: BackgroundFormatter = formatter or default_background_format
        """What shapes the model's acknowledgment and the final message."""

    @property
    def is_concurrency_safe(self) -> bool:
        """Always: starting a background call returns at once."""
        return True


class _BackgroundToolset(WrapperToolset):
    keeps_names = True

    def __init__(self, toolset: Toolset, formatter: BackgroundFormatter | None) -> None:
        super().__init__(toolset)
        self._formatter = formatter

    async def list_tools(self, ctx: ToolContext | None = None) -> Sequence[Tool]:
        return tuple(BackgroundTool(t, self._formatter) for t in await self.wrapped.list_tools(ctx))

    def __repr__(self) -> str:
        return f"background({self.wrapped!r})"


def background(
    tools: Tool | Toolset | Callable[..., Any], *, formatter: BackgroundFormatter | None = None
) -> Tool | Toolset:
    """Run the calls of ``tools`` (a tool, a function or a toolset) in the background of
    an `LlmAgent`'s run.

    The call goes through every gate first (scopes, confirmation, credentials); then the
    model gets ``formatter``'s ``"running"`` acknowledgment as the function response at
    once, and the run goes on. When the call ends, its result (after ``after_tool``), its
    error, or its timeout (the agent's ``tool_timeout`` or the tool's own ``timeout``)
    is given to the model as a user-side message, formatted as ``"done"`` or
    ``"error"``, before its next turn (with the call's state and artifact changes; its
    ``transfer_to_agent``, ``escalate`` and ``skip_summarization`` are not applied, the
    turn they belonged to being over); if the model answers meanwhile without calling a
    tool, the run waits for the next one to end. Calls still running when the run ends
    (a pause, an error, a limit, or the caller stops or cancels it) are cancelled, and
    the ``"cancelled"`` message is recorded for the model's next run. The messages are
    events of the agent with a user-role content (`Event.is_final_response` is False for
    them).

    A long-running tool (``is_long_running``: its result arrives later from outside the
    run) cannot run in the background: ``background`` refuses one (`ToolDefinitionError`),
    a call to one a background toolset lists gets an error result, and a call that marks
    itself long-running as it runs ends with an ``"error"`` update.

    An `LlmAgent` sees, when it is made, whether its tools may include a background one
    (through `prefixed`, `renamed`, `filtered`, `combined`, `phased` and a
    `StaticToolset`'s tools); a background tool it could not see then (pushed into a
    `StaticToolset` later, or listed by a toolset of your own) runs as a plain call.

    The calls run in a task of their own, not in the generator the caller iterates: a
    caller may stop early (``break``, an error, dropping the iterator) without closing
    it; the calls are cancelled when the generator is closed or collected.
    """
    if isinstance(tools, Toolset) and not isinstance(tools, Tool):
        return _BackgroundToolset(tools, formatter)
    wrapped = as_tool(tools)
    if wrapped.is_long_running:
        raise ToolDefinitionError(
            f"the tool {wrapped.name!r} is long-running (its result arrives from outside "
            "the run): it cannot run in the background"
        )
    return BackgroundTool(wrapped, formatter)


LONG_RUNNING_REFUSED = (
    "This tool is long-running (its result arrives later from outside the run), so it "
    "cannot run in the background; it was not called."
)
"""The error result of a call to a long-running tool a `background` toolset listed."""


def background_tool_of(tool: Tool) -> BackgroundTool | None:
    """The `BackgroundTool` ``tool`` is, or wraps (under `prefixed`, `renamed`, ...)."""
    found: object = tool
    while True:
        if isinstance(found, BackgroundTool):
            return found
        if not isinstance(found, ForwardingTool):
            return None
        found = found.tool


def may_run_in_background(items: Iterable[object]) -> bool:
    """Whether any of an agent's tools and toolsets is, or may list, a background tool
    (looking through the wrappers this library makes)."""
    seen: set[int] = set()
    stack = list(items)
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, _BackgroundToolset | BackgroundTool):
            return True
        if isinstance(item, ForwardingTool):
            stack.append(item.tool)
        elif isinstance(item, WrapperToolset):
            stack.append(item.wrapped)
        elif isinstance(item, StaticToolset):
            stack.extend(item._tools.values())
        elif isinstance(item, ManyToolsets):  # combined(), phased()
            stack.extend(item.toolsets)
    return False


@dataclass(kw_only=True)
class _Call:
    tool_name: str
    function_call_id: str
    args: Mapping[str, Any]
    formatter: BackgroundFormatter


@dataclass(kw_only=True)
class _Ended:
    update: BackgroundUpdate
    formatter: BackgroundFormatter
    actions: EventActions | None = None


@dataclass(kw_only=True)
class BackgroundCalls:
    """The background calls of one agent's run, in a task group the run holds."""

    task_group: anyio.abc.TaskGroup
    _running: dict[str, _Call] = field(default_factory=dict)
    _ended: list[_Ended] = field(default_factory=list)
    _arrived: anyio.Event = field(default_factory=anyio.Event)

    @property
    def waiting(self) -> bool:
        """Whether a call is still running, or ended and not yet told to the model."""
        return bool(self._running) or bool(self._ended)

    def start(
        self, run: ToolRun, tool_name: str, call_id: str, formatter: BackgroundFormatter
    ) -> None:
        """Run ``run`` in the background."""
        call = _Call(
            tool_name=tool_name, function_call_id=call_id, args=run.args, formatter=formatter
        )
        self._running[call_id] = call
        self.task_group.start_soon(self._run, run, call, name=f"toolsets.background.{tool_name}")

    async def _run(self, run: ToolRun, call: _Call) -> None:
        status: BackgroundStatus
        actions = None
        try:
            outcome = await run.finish()
        except anyio.get_cancelled_exc_class():
            self._end(call, "cancelled", None, reason="the run ended before the call did")
            raise
        except Exception as error:  # the background task's top-level handler
            self._end(call, "error", describe_error(call.tool_name, error))
            return
        if isinstance(outcome, Done):
            result = outcome.result
            status = "error" if is_error_result(result) else "done"
            actions = outcome.actions
        elif isinstance(outcome, LongRunning):  # marked itself long-running as it ran
            status = "error"
            result = error_result(
                "The call reported itself long-running: its result would arrive from "
                f"outside the run, which a background call cannot wait for. It returned "
                f"{json.dumps(outcome.interim, ensure_ascii=False)} meanwhile."
            )
        else:  # asked for the user's answer while running: there is no one to ask
            status = "error"
            result = error_result(
                "A background call cannot wait for the user's answer; it did not finish."
            )
        self._end(call, status, result, actions=actions)

    def _end(
        self,
        call: _Call,
        status: BackgroundStatus,
        result: JsonValue,
        *,
        reason: str | None = None,
        actions: EventActions | None = None,
    ) -> None:
        if self._running.pop(call.function_call_id, None) is None:
            return
        update = BackgroundUpdate(
            status=status,
            tool_name=call.tool_name,
            function_call_id=call.function_call_id,
            args=call.args,
            result=result,
            reason=reason,
        )
        self._ended.append(_Ended(update=update, formatter=call.formatter, actions=actions))
        self._arrived.set()

    async def wait(self) -> None:
        """Wait until a call ends (each is bounded by its timeout)."""
        if not self._ended:
            await self._arrived.wait()

    def cancel(self, reason: str) -> None:
        """Cancel every call still running; each is reported ``"cancelled"``."""
        for call in list(self._running.values()):
            self._end(call, "cancelled", None, reason=reason)
        self.task_group.cancel_scope.cancel()

    def take(self) -> tuple[Content, EventActions] | None:
        """The message telling the model what ended since last asked, and the actions
        those calls set (None: nothing ended)."""
        if not self._ended:
            return None
        ended, self._ended = self._ended, []
        self._arrived = anyio.Event()
        actions = EventActions()
        parts: list[Part] = []
        for item in ended:
            told = item.formatter(item.update)
            parts.append(Part(text=told if isinstance(told, str) else json.dumps(told)))
            done = item.actions
            if done is not None:
                actions.state_delta.update(done.state_delta)
                actions.artifact_delta.update(done.artifact_delta)
        return Content(role="user", parts=tuple(parts)), actions
