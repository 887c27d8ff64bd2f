"""Result interceptors: ``after_tool`` steps chained by `intercept`, transforming each
result before the model sees it, with the state at hand."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import anyio
import pytest

from tests.agent.helpers import agent_with, call, response_of, start
from toolsets import JsonValue, Tool, ToolContext, intercept, tool

pytestmark = pytest.mark.anyio


@tool(read_only=True)
def lookup(customer: str) -> dict[str, str]:
    """Look a customer up."""
    return {"name": customer, "card": "4111 1111 1111 1111", "tier": "gold"}


def redact(tool: Tool, args: Mapping[str, Any], ctx: ToolContext, result: JsonValue) -> JsonValue:
    if isinstance(result, dict) and "card" in result:
        return {**result, "card": "**** " + str(result["card"])[-4:]}
    return None  # leaves it as it is


async def promote(
    tool: Tool, args: Mapping[str, Any], ctx: ToolContext, result: JsonValue
) -> JsonValue:
    if isinstance(result, dict) and "tier" in result:
        ctx.state["user:tier"] = result["tier"]
        return {k: v for k, v in result.items() if k != "tier"}
    return None


async def test_interceptors_run_in_order_each_on_the_result_the_one_before_left() -> None:
    runner, model = agent_with(
        [call("lookup", customer="ann"), "done"], [lookup], after_tool=intercept(redact, promote)
    )
    _, events = await start(runner, "who")
    assert response_of(events, "lookup") == {"name": "ann", "card": "**** 1111"}
    (tool_event,) = [e for e in events if e.function_responses]
    assert tool_event.actions.state_delta == {"user:tier": "gold"}
    sent = [p.function_response for c in model.requests[1].contents for p in c.parts]
    assert "4111" not in str(sent)


async def test_an_interceptor_reads_the_state_the_session_holds() -> None:
    def only_for_admins(
        tool: Tool, args: Mapping[str, Any], ctx: ToolContext, result: JsonValue
    ) -> JsonValue:
        return result if ctx.state.get("role") == "admin" else {"error": "Not shown."}

    runner, _ = agent_with(
        [call("lookup", customer="ann"), "done"], [lookup], after_tool=intercept(only_for_admins)
    )
    session = await runner.create_session(user_id="u", state={"role": "guest"})
    events = [e async for e in runner.run(user_id="u", session_id=session.id, message="go")]
    assert response_of(events, "lookup") == {"error": "Not shown."}


async def test_an_interceptor_sees_the_error_result_of_a_timeout() -> None:
    seen: list[JsonValue] = []

    def record(tool: Tool, args: Any, ctx: ToolContext, result: JsonValue) -> JsonValue:
        seen.append(result)
        return None

    @tool
    async def stuck() -> str:
        """Never answer."""
        await anyio.sleep_forever()
        return "never"

    runner, _ = agent_with(
        [call("stuck"), "gave up"], [stuck], after_tool=intercept(record), tool_timeout=0.1
    )
    await start(runner, "go")
    (result,) = seen
    assert isinstance(result, dict)
    assert "timed out" in str(result["error"])


async def test_an_interceptor_sees_what_before_tool_answered_instead_of_the_tool() -> None:
    def cached(tool: Tool, args: dict[str, Any], ctx: ToolContext) -> JsonValue:
        return {"name": "ann", "card": "4111 1111 1111 1111", "cached": True}

    runner, _ = agent_with(
        [call("lookup", customer="ann"), "done"],
        [lookup],
        before_tool=cached,
        after_tool=intercept(redact),
    )
    _, events = await start(runner, "go")
    assert response_of(events, "lookup") == {"name": "ann", "card": "**** 1111", "cached": True}
