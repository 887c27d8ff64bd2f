"""Streaming tools through the agent loop: partial results as events while the call runs,
the last as the function response; errors, timeouts and cancellation stop the stream."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

import anyio
import mcp.types as mt
import pytest

import toolsets._invoke
from tests.agent.helpers import (
    RUN_TIMEOUT,
    agent_with,
    approve,
    asked_to_confirm,
    call,
    collect,
    listen_until,
    response_of,
    start,
)
from tests.mcp.server_helpers import connected, texts
from toolsets import (
    BaseTool,
    FunctionTool,
    JsonValue,
    StaticToolset,
    ToolContext,
    ToolStream,
    is_error_result,
    tool,
)
from toolsets._invoke import Running, invoke
from toolsets.agent import Event
from toolsets.mcp import McpServer

pytestmark = pytest.mark.anyio


def partials(events: list[Event]) -> list[JsonValue]:
    return [r.response for e in events if e.partial for r in e.function_responses]


@tool
async def count(to: int) -> AsyncIterator[int]:
    """Count up to a number, one result at a time."""
    for n in range(1, to + 1):
        await anyio.lowlevel.checkpoint()
        yield n


async def test_each_result_of_a_streaming_tool_is_a_partial_event_and_the_last_the_response() -> (
    None
):
    runner, model = agent_with([call("count", to=3), "counted"], [count])
    _, events = await start(runner, "count")
    assert partials(events) == [1, 2, 3]
    assert all(not e.is_final_response() for e in events if e.partial)
    assert response_of([e for e in events if not e.partial], "count") == 3
    assert events[-1].text == "counted"
    # The model sees the final result only.
    (answer,) = [
        p.function_response
        for c in model.requests[1].contents
        for p in c.parts
        if p.function_response is not None
    ]
    assert answer.response == 3
    assert not answer.will_continue


async def test_a_partial_result_reaches_the_caller_while_the_call_still_runs() -> None:
    heard = anyio.Event()

    @tool
    async def waits_for_the_caller() -> AsyncIterator[str]:
        """Yield, then wait until the caller has seen it."""
        yield "first"
        await heard.wait()  # only the caller's reading of "first" lets the call end
        yield "second"

    runner, _ = agent_with([call("waits_for_the_caller"), "ok"], [waits_for_the_caller])
    session = await runner.create_session(user_id="u")
    seen: list[JsonValue] = []
    with anyio.fail_after(RUN_TIMEOUT):
        async for event in runner.run(user_id="u", session_id=session.id, message="go"):
            if event.partial and event.function_responses:
                seen.append(event.function_responses[0].response)
                heard.set()
    assert seen == ["first", "second"]


async def test_an_error_in_the_middle_of_a_stream_is_an_error_result_naming_the_cause() -> None:
    @tool
    async def breaks() -> AsyncIterator[int]:
        """Yield once, then fail."""
        yield 1
        raise RuntimeError("disk on fire")

    runner, _ = agent_with([call("breaks"), "sorry"], [breaks])
    _, events = await start(runner, "go")
    assert partials(events) == [1]
    result = response_of([e for e in events if not e.partial], "breaks")
    assert is_error_result(result)
    assert "disk on fire" in str(result)
    assert events[-1].text == "sorry"


async def test_a_stream_that_outlives_the_timeout_is_closed_and_the_model_told() -> None:
    closed = anyio.Event()

    @tool
    async def hangs() -> AsyncIterator[int]:
        """Yield once, then never again."""
        try:
            yield 1
            await anyio.sleep_forever()
            yield 2
        finally:
            closed.set()

    runner, _ = agent_with([call("hangs"), "too slow"], [hangs], tool_timeout=0.2)
    _, events = await start(runner, "go")
    assert closed.is_set()
    result = response_of([e for e in events if not e.partial], "hangs")
    assert isinstance(result, dict)
    assert "timed out" in str(result["error"])
    assert events[-1].text == "too slow"


async def test_a_caller_that_stops_listening_closes_the_stream_and_the_call_gets_a_result() -> None:
    closed = anyio.Event()

    @tool
    async def endless() -> AsyncIterator[int]:
        """Yield forever."""
        n = 0
        try:
            while True:
                n += 1
                yield n
        finally:
            closed.set()

    runner, _ = agent_with([call("endless"), "never"], [endless])
    session_id = await listen_until(runner, lambda event: event.partial)
    assert closed.is_set()
    stored = await runner.get_session(user_id="u", session_id=session_id)
    result = stored.events[-1].function_responses[0].response
    assert isinstance(result, dict)
    assert "did not complete" in str(result["error"])


async def test_a_cancelled_run_closes_the_stream() -> None:
    closed = anyio.Event()

    @tool
    async def slow() -> AsyncIterator[int]:
        """Yield, then wait."""
        try:
            yield 1
            await anyio.sleep_forever()
            yield 2
        finally:
            closed.set()

    runner, _ = agent_with([call("slow"), "never"], [slow])
    session = await runner.create_session(user_id="u")
    with anyio.CancelScope() as scope:
        async for event in runner.run(user_id="u", session_id=session.id, message="go"):
            if event.partial:
                scope.cancel()
    assert closed.is_set()


class Countdown(BaseTool):
    """A streaming tool the `BaseTool` way: ``run`` returns a `ToolStream`."""

    def __init__(self) -> None:
        super().__init__(
            "countdown",
            "Count down.",
            parameters={"type": "object", "properties": {"start": {"type": "integer"}}},
        )

    def run(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolStream:
        return ToolStream(self._steps(int(args["start"])), tool_name=self.name)

    async def _steps(self, start: int) -> AsyncIterator[JsonValue]:
        for n in range(start, -1, -1):
            yield {"left": n}


async def test_a_base_tool_streams_by_returning_a_tool_stream() -> None:
    runner, _ = agent_with([call("countdown", start=2), "liftoff"], [Countdown()])
    _, events = await start(runner, "go")
    assert partials(events) == [{"left": 2}, {"left": 1}, {"left": 0}]
    assert response_of([e for e in events if not e.partial], "countdown") == {"left": 0}


async def test_a_stream_that_yields_nothing_is_an_error_result() -> None:
    @tool
    async def silent() -> AsyncIterator[int]:
        """Yield nothing."""
        if False:  # pragma: no cover
            yield 0

    runner, _ = agent_with([call("silent"), "hm"], [silent])
    _, events = await start(runner, "go")
    assert "yielded no result" in str(response_of(events, "silent"))


async def test_after_tool_sees_the_last_result_only() -> None:
    seen: list[JsonValue] = []

    def after(tool: Any, args: Any, ctx: ToolContext, result: JsonValue) -> JsonValue:
        seen.append(result)
        return {"total": result}

    runner, _ = agent_with([call("count", to=2), "ok"], [count], after_tool=after)
    _, events = await start(runner, "go")
    assert seen == [2]
    assert response_of([e for e in events if not e.partial], "count") == {"total": 2}


def test_a_streaming_function_declares_the_yielded_type_as_its_response() -> None:
    declaration = count.declaration()
    assert declaration is not None
    assert declaration.response == {"type": "integer"}


# --- other consumers: the one call path pulls the stream to its end ---------------------


async def test_a_caller_that_does_not_stream_gets_the_last_result_and_progress() -> None:
    reported: list[tuple[float, float | None, str | None]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        reported.append((done, total, message))

    ctx = ToolContext(function_call_id="c1")
    ctx.progress = progress
    outcome = await invoke(count, {"to": 3}, ctx, default_timeout=5)
    assert not isinstance(outcome, Running)
    assert outcome.result == 3  # type: ignore[union-attr]
    assert reported == [(1, None, "1"), (2, None, "2"), (3, None, "3")]


async def test_awaiting_a_tool_stream_gives_its_last_result() -> None:
    result = await count.run({"to": 2}, ToolContext())
    assert result == 2


@pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
async def test_an_mcp_client_gets_the_final_result_and_each_partial_as_progress(
    mode: str,
) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        seen.append((done, total, message))

    server = McpServer(StaticToolset([count]))
    async with connected(server, mode) as client:
        result = await client.call_tool("count", {"to": 3}, progress_callback=progress)
    assert isinstance(result, mt.CallToolResult)
    assert not result.is_error
    assert texts(result) == ["3"]
    assert seen == [(1, None, "1"), (2, None, "2"), (3, None, "3")]


def test_a_sync_generator_function_cannot_be_a_tool() -> None:
    from toolsets import ToolDefinitionError

    def gen() -> Any:
        yield 1

    with pytest.raises(ToolDefinitionError) as caught:
        FunctionTool(gen)
    assert caught.value.tool_name == "gen"


async def test_collect_helper_still_bounds_a_streaming_run() -> None:
    runner, _ = agent_with([call("count", to=1), "ok"], [count])
    session = await runner.create_session(user_id="u")
    events = await collect(runner.run(user_id="u", session_id=session.id, message="go"))
    assert partials(events) == [1]


async def test_a_streaming_call_approved_after_a_pause_streams_when_the_run_resumes() -> None:
    @tool(requires_confirmation=True)
    async def migrate(tables: int) -> AsyncIterator[str]:
        """Migrate tables, one at a time."""
        for n in range(1, tables + 1):
            await anyio.lowlevel.checkpoint()
            yield f"{n}/{tables}"

    runner, _ = agent_with([call("migrate", tables=2), "migrated"], [migrate])
    session_id, events = await start(runner, "go")
    assert partials(events) == []
    resumed = await approve(runner, session_id, asked_to_confirm(events))
    assert partials(resumed) == ["1/2", "2/2"]
    assert response_of([e for e in resumed if not e.partial], "migrate") == "2/2"
    assert resumed[-1].text == "migrated"


async def test_streaming_calls_of_one_turn_keep_the_calls_order_among_the_others() -> None:
    @tool(read_only=True)
    def double(x: int) -> int:
        """Double."""
        return 2 * x

    counting = FunctionTool(count.fn, read_only=True)  # concurrency-safe, like double
    runner, _ = agent_with(
        [[call("double", x=1), call("count", to=2), call("double", x=5)], "ok"],
        [double, counting],
    )
    _, events = await start(runner, "go")
    assert partials(events) == [1, 2]
    (tool_event,) = [e for e in events if e.function_responses and not e.partial]
    assert [r.response for r in tool_event.function_responses] == [2, 2, 10]


def stuck_in_cleanup(closing: anyio.Event) -> Any:
    """A streaming tool that yields once, then waits; its cleanup never ends."""

    @tool
    async def stuck() -> AsyncIterator[int]:
        """Yield, wait, and never finish cleaning up."""
        try:
            yield 1
            await anyio.sleep_forever()
            yield 2
        finally:
            closing.set()
            await anyio.sleep_forever()

    return stuck


async def test_a_cleanup_that_never_ends_does_not_hold_up_a_timed_out_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(toolsets._invoke, "STREAM_CLOSE_GRACE", 0.1)
    closing = anyio.Event()
    runner, _ = agent_with(
        [call("stuck"), "too slow"], [stuck_in_cleanup(closing)], tool_timeout=0.2
    )
    with anyio.fail_after(RUN_TIMEOUT):
        _, events = await start(runner, "go")
    assert closing.is_set()
    result = response_of([e for e in events if not e.partial], "stuck")
    assert isinstance(result, dict)
    assert "timed out" in str(result["error"])
    assert events[-1].text == "too slow"


async def test_a_cleanup_that_never_ends_does_not_hold_up_a_caller_that_stops(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(toolsets._invoke, "STREAM_CLOSE_GRACE", 0.1)
    closing = anyio.Event()
    runner, _ = agent_with([call("stuck"), "never"], [stuck_in_cleanup(closing)])
    await listen_until(runner, lambda event: event.partial)
    assert closing.is_set()
