"""`wrap_calls`: the onion around a call — a wrapper may call the next layer once, several
times or not at all; the first is outermost; each run has its own copy of the arguments;
the call's deadline bounds all of it; and it runs in the one call path, so a served call
(the MCP server) goes through it too."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx2
import pytest

from tests.mcp.server_helpers import connected, texts
from toolsets import FunctionTool, StaticToolset, ToolContext
from toolsets._errors import ConnectionError
from toolsets._invoke import Done, invoke
from toolsets._results import error_result
from toolsets.calls import CallNext, Retry, ToolCall, WrappedTool, wrap_calls
from toolsets.mcp import McpServer

pytestmark = pytest.mark.anyio

FAST = Retry(tries=3, backoff=0.01, max_backoff=0.02)


class Runs:
    """A function tool that records each run's arguments (and changes them)."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []

    def tool(self) -> FunctionTool[Any, Any]:
        def note(items: list[int]) -> int:
            """Note the items.

            Args:
                items: Some numbers.
            """
            self.seen.append({"items": list(items)})
            items.append(99)  # the tool changes what it was given
            return len(self.seen)

        return FunctionTool(note)


async def result_of(tool: Any, args: dict[str, Any], deadline: float = 5) -> Any:
    outcome = await invoke(tool, args, ToolContext(), default_timeout=deadline)
    assert isinstance(outcome, Done)
    return outcome.result


async def test_a_wrapper_that_answers_itself_runs_no_tool() -> None:
    runs = Runs()

    async def cached(call: ToolCall, call_next: CallNext) -> Any:
        return {"cached": call.args["items"]}

    assert await result_of(wrap_calls(runs.tool(), cached), {"items": [1]}) == {"cached": [1]}
    assert runs.seen == []


async def test_a_wrapper_may_run_the_tool_twice_each_time_with_the_calls_own_arguments() -> None:
    runs = Runs()

    async def twice(call: ToolCall, call_next: CallNext) -> Any:
        await call_next(call)
        return await call_next(call)

    assert await result_of(wrap_calls(runs.tool(), twice), {"items": [1, 2]}) == 2
    assert runs.seen == [{"items": [1, 2]}, {"items": [1, 2]}]


async def test_the_first_wrapper_is_the_outermost_and_wrapping_again_goes_around() -> None:
    order: list[str] = []

    def named(name: str) -> Any:
        async def wrapper(call: ToolCall, call_next: CallNext) -> Any:
            order.append(f"{name} in")
            result = await call_next(call)
            order.append(f"{name} out")
            return result

        return wrapper

    tool = wrap_calls(wrap_calls(Runs().tool(), named("b"), named("c")), named("a"))
    assert isinstance(tool, WrappedTool)
    await result_of(tool, {"items": []})
    assert order == ["a in", "b in", "c in", "c out", "b out", "a out"]


async def test_the_calls_deadline_bounds_the_wrappers_waits() -> None:
    async def slow(call: ToolCall, call_next: CallNext) -> Any:
        assert call.time_left() <= 0.5
        await anyio.sleep(30)
        return await call_next(call)

    result = await result_of(wrap_calls(Runs().tool(), slow), {"items": []}, deadline=0.5)
    assert isinstance(result, dict)
    assert "no result within 0.5 s" in result["error"]


async def test_what_the_tool_raised_reaches_the_wrapper_and_then_the_call_paths_handling() -> None:
    seen: list[str] = []

    def broken() -> str:
        """Break."""
        raise RuntimeError("it broke")

    async def watch(call: ToolCall, call_next: CallNext) -> Any:
        try:
            return await call_next(call)
        except RuntimeError as error:
            seen.append(str(error))
            raise

    result = await result_of(wrap_calls(FunctionTool(broken), watch), {})
    assert seen == ["it broke"]
    assert isinstance(result, dict)
    assert "it broke" in result["error"]


async def test_a_streaming_tool_wrapped_gives_its_last_result() -> None:
    async def counting() -> AsyncIterator[int]:
        """Count to three."""
        for n in (1, 2, 3):
            yield n

    calls: list[int] = []

    async def once(call: ToolCall, call_next: CallNext) -> Any:
        calls.append(1)
        return await call_next(call)

    assert await result_of(wrap_calls(FunctionTool(counting), once), {}) == 3
    assert calls == [1]


async def test_a_read_only_tool_failing_before_sending_is_run_again() -> None:
    failures = [2]

    def fetch() -> str:
        """Fetch."""
        if failures[0]:
            failures[0] -= 1
            try:
                raise httpx2.ConnectError("refused")
            except httpx2.ConnectError as cause:
                raise ConnectionError("GET x: cannot connect", target="x") from cause
        return "fetched"

    assert await result_of(wrap_calls(FunctionTool(fetch, read_only=True), FAST), {}) == "fetched"
    assert failures == [0]


async def test_an_error_result_with_a_retry_status_is_retried_only_for_a_safe_tool() -> None:
    runs: list[str] = []

    def busy() -> Any:
        """Busy."""
        runs.append("run")
        return error_result("HTTP 503 Service Unavailable", status=503)

    unsafe = await result_of(wrap_calls(FunctionTool(busy), FAST), {})
    assert runs == ["run"]
    assert "tries" not in unsafe
    runs.clear()
    safe = await result_of(wrap_calls(FunctionTool(busy, read_only=True), FAST), {})
    assert runs == ["run"] * 3
    assert (safe["status"], safe["tries"]) == (503, 3)


async def test_a_toolset_wrapped_keeps_its_wrapped_tools_from_one_listing_to_the_next() -> None:
    async def through(call: ToolCall, call_next: CallNext) -> Any:
        return await call_next(call)

    inner = StaticToolset([Runs().tool()])
    toolset = wrap_calls(inner, through)
    first, second = await toolset.list_tools(), await toolset.list_tools()
    assert first is second
    assert isinstance(first[0], WrappedTool)
    assert toolset.listing_varies == inner.listing_varies
    assert wrap_calls(inner) is inner  # no wrapper: the toolset as it is


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_a_served_call_runs_through_the_wrappers(mode: str) -> None:
    seen: list[dict[str, Any]] = []

    async def audit(call: ToolCall, call_next: CallNext) -> Any:
        seen.append(dict(call.args))
        return await call_next(call)

    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    server = McpServer(wrap_calls(StaticToolset([add]), audit))
    async with connected(server, mode) as client:
        result = await client.call_tool("add", {"a": 2, "b": 3})
    assert texts(result) == ["5"]
    assert seen == [{"a": 2, "b": 3}]


def test_wrap_calls_refuses_what_it_cannot_wrap() -> None:
    async def through(call: ToolCall, call_next: CallNext) -> Any:
        return await call_next(call)

    with pytest.raises(TypeError, match="wraps a toolset or a tool, not str"):
        wrap_calls("tools.py", through)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="a call wrapper must be callable, not int"):
        wrap_calls(Runs().tool(), 3)  # type: ignore[arg-type]
