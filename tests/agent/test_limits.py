"""What a model (or a prompt injection steering it) cannot do to the agent loop: crash a
run with arguments nested too deep or not an object, flood it with calls or echoes of
huge values, or leave the session holding a call without a result."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from typing import Any

import anyio
import pytest

from tests.agent.helpers import agent_with, call, collect, responses, start
from toolsets import BaseTool, Content, FunctionCall, JsonValue, Part, Tool, ToolContext, tool
from toolsets.agent import DEFAULT_MAX_CALLS_PER_TURN, MAX_JSON_DEPTH, Event, LlmAgent, Runner
from toolsets.models import INVALID_JSON_KEY, ScriptedModel
from toolsets.openapi import OpenApiToolset

pytestmark = pytest.mark.anyio

runs: list[Any] = []


@tool
def echo(value: Any = None) -> Any:
    """Return the value."""
    runs.append(value)
    return "ok"


@tool(read_only=True)
def add(a: int, b: int) -> int:
    """Add."""
    runs.append((a, b))
    return a + b


def nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"a": value}
    return value


def error_of(response: JsonValue) -> str:
    assert isinstance(response, dict), response
    assert isinstance(response["error"], str)
    return response["error"]


def answered_every_call(model: ScriptedModel) -> None:
    """Each request the model got answers every call it holds (as providers require)."""
    for request in model.requests:
        called = {c.id for content in request.contents for c in content.function_calls}
        answered = {
            p.function_response.id
            for content in request.contents
            for p in content.parts
            if p.function_response is not None
        }
        assert called <= answered, called - answered


@pytest.fixture(autouse=True)
def _clear_runs() -> None:
    runs.clear()


# --- arguments nested too deep, or not an object -------------------------------------------


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 1_000, 100_000])
async def test_arguments_nested_too_deep_are_an_error_result_and_the_run_goes_on(
    depth: int,
) -> None:
    runner, model = agent_with([call("echo", value=nested(depth)), "done", "again"], [echo])

    with anyio.fail_after(10):
        session_id, events = await start(runner, "hi")

    (response,) = responses(events)
    assert str(MAX_JSON_DEPTH) in error_of(response.response)
    assert runs == []
    assert events[-1].text == "done"
    # The session stays readable and usable.
    session = await runner.get_session(user_id="u", session_id=session_id)
    assert session.events
    more = await collect(runner.run(user_id="u", session_id=session_id, message="more"))
    assert more[-1].text == "again"
    answered_every_call(model)


async def test_arguments_as_deep_as_the_limit_reach_the_tool() -> None:
    runner, _ = agent_with([call("echo", value=nested(MAX_JSON_DEPTH - 1)), "done"], [echo])
    _, events = await start(runner, "hi")
    assert [r.response for r in responses(events)] == ["ok"]
    assert runs == [nested(MAX_JSON_DEPTH - 1)]


@pytest.mark.parametrize(
    ("args", "kind"), [([1, 2], "array"), ("a string", "string"), (None, "null"), (7, "number")]
)
async def test_arguments_that_are_not_an_object_are_an_error_result(args: Any, kind: str) -> None:
    bad = FunctionCall(name="echo", args=args)
    runner, model = agent_with([bad, call("echo", value=1), "done"], [echo])

    _, events = await start(runner, "hi")

    first, second = responses(events)
    assert kind in error_of(first.response)
    assert "JSON object" in error_of(first.response)
    assert second.response == "ok"
    assert runs == [1]
    answered_every_call(model)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('{"value": 1', "not valid JSON"),
        ("[1, 2]", "array"),
        ('"just a string"', "must be a JSON object, not a string"),
        ("[" * 100_000, str(MAX_JSON_DEPTH)),
    ],
)
async def test_arguments_the_model_could_not_read_say_what_was_wrong(text: str, says: str) -> None:
    bad = FunctionCall(name="echo", args={INVALID_JSON_KEY: text})
    runner, _ = agent_with([bad, "done"], [echo])

    _, events = await start(runner, "hi")

    (response,) = responses(events)
    error = error_of(response.response)
    assert says in error
    assert "Extra inputs" not in error
    assert len(error) < 1_000
    assert runs == []


async def test_a_result_nested_too_deep_is_dropped_for_an_error_and_the_session_stays_usable() -> (
    None
):
    class Deep(BaseTool):
        """A tool handing on what a server sent, as MCP and REST tools do."""

        async def run(self, args: Mapping[str, Any], ctx: ToolContext) -> JsonValue:
            value: JsonValue = nested(100_000)
            return value

    runner, _ = agent_with([call("deep"), "done", "again"], [Deep("deep")])

    with anyio.fail_after(10):
        session_id, events = await start(runner, "hi")
        (response,) = responses(events)
        assert str(MAX_JSON_DEPTH) in error_of(response.response)
        assert await runner.get_session(user_id="u", session_id=session_id)
        more = await collect(runner.run(user_id="u", session_id=session_id, message="more"))
    assert more[-1].text == "again"


# --- a failing turn leaves no call without a result ------------------------------------


class Boom(RuntimeError):
    pass


async def test_a_callback_that_raises_mid_turn_leaves_every_call_answered() -> None:
    def explode(tool: Tool, args: dict[str, Any], ctx: ToolContext) -> None:
        if tool.name == "echo":
            raise Boom("a bug in a callback")

    model = ScriptedModel([[call("add", a=1, b=2), call("echo", value=1)], "recovered"])
    runner = Runner(LlmAgent("assistant", model, tools=[add, echo], before_tool=explode))
    session = await runner.create_session(user_id="u")

    with pytest.raises(Boom):
        await collect(runner.run(user_id="u", session_id=session.id, message="hi"))

    stored = await runner.get_session(user_id="u", session_id=session.id)
    answered = [r for e in stored.events for r in e.function_responses]
    assert [r.name for r in answered] == ["add", "echo"]
    assert all("did not complete" in error_of(r.response) for r in answered)

    events = await collect(runner.run(user_id="u", session_id=session.id, message="again"))
    assert events[-1].text == "recovered"
    answered_every_call(model)


async def test_a_run_cancelled_mid_call_leaves_every_call_answered() -> None:
    started = anyio.Event()

    @tool
    async def hang() -> str:
        """Never returns."""
        started.set()
        await anyio.sleep_forever()
        return "never"

    model = ScriptedModel([call("hang"), "recovered"])
    runner = Runner(LlmAgent("assistant", model, tools=[hang]))
    session = await runner.create_session(user_id="u")

    async def run() -> None:
        await collect(runner.run(user_id="u", session_id=session.id, message="hi"))

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(run)
            await started.wait()
            group.cancel_scope.cancel()

        events = await collect(runner.run(user_id="u", session_id=session.id, message="again"))
    assert events[-1].text == "recovered"
    answered_every_call(model)


async def test_a_caller_that_stops_listening_after_the_calls_leaves_no_call_unanswered() -> None:
    model = ScriptedModel([[call("add", a=1, b=2)], "recovered"])
    runner = Runner(LlmAgent("assistant", model, tools=[add]))
    session = await runner.create_session(user_id="u")

    async with contextlib.aclosing(
        runner.run(user_id="u", session_id=session.id, message="hi")
    ) as events:
        async for event in events:
            if event.function_calls:
                break

    more = await collect(runner.run(user_id="u", session_id=session.id, message="again"))
    assert more[-1].text == "recovered"
    assert runs == []
    answered_every_call(model)


async def test_calls_a_run_that_died_left_without_results_are_answered_by_the_next_run() -> None:
    # As a process killed between recording the calls and their results leaves it.
    model = ScriptedModel(["recovered"])
    runner = Runner(LlmAgent("assistant", model, tools=[add]))
    session = await runner.create_session(user_id="u")
    for event in (
        Event(author="user", invocation_id="inv_1", content=Content.user("hi")),
        Event(
            author="assistant",
            invocation_id="inv_1",
            content=Content(
                role="model",
                parts=(Part(function_call=FunctionCall(name="add", args={"a": 1}, id="c1")),),
            ),
        ),
    ):
        await runner.session_service.append_event(session, event)

    events = await collect(runner.run(user_id="u", session_id=session.id, message="again"))

    assert events[-1].text == "recovered"
    answered_every_call(model)
    stored = await runner.get_session(user_id="u", session_id=session.id)
    (answer,) = [r for e in stored.events for r in e.function_responses]
    assert answer.id == "c1"
    assert "did not complete" in error_of(answer.response)


# --- bounded echoes and a cap on calls per turn ----------------------------------------


async def test_an_unknown_tool_name_is_echoed_back_bounded() -> None:
    name = "x" * 1_000_000
    runner, _ = agent_with([FunctionCall(name=name, args={}), "done"], [echo])

    _, events = await start(runner, "hi")

    (response,) = responses(events)
    error = error_of(response.response)
    assert len(json.dumps(response.response)) < 1_000
    assert "echo" in error


async def test_an_unknown_tool_name_names_the_closest_tools_not_all_of_them() -> None:
    many = [tool(name=f"tool_{i}")(lambda: None) for i in range(300)]
    runner, _ = agent_with([FunctionCall(name="tool_12x", args={}), "done"], many)

    _, events = await start(runner, "hi")

    (response,) = responses(events)
    error = error_of(response.response)
    assert "tool_12" in error
    assert "tool_299" not in error
    assert len(error) < 1_000


async def test_the_model_is_offered_five_close_names_for_an_unknown_tool() -> None:
    twenty = [tool(name=f"tool_{i}")(lambda: None) for i in range(20)]
    runner, _ = agent_with([FunctionCall(name="tool_1x", args={}), "done"], twenty)

    _, events = await start(runner, "hi")

    (response,) = responses(events)
    closest = error_of(response.response).split("The closest: ")[1].rstrip(".").split(", ")
    assert len(closest) == 5
    assert closest[0] == "tool_1"


async def test_calls_beyond_the_per_turn_cap_run_none_and_each_gets_an_error() -> None:
    calls = [call("add", a=i, b=1) for i in range(5)]
    runner, model = agent_with([calls, "fewer then"], [add], max_calls_per_turn=4)

    _, events = await start(runner, "hi")

    answered = responses(events)
    assert len(answered) == 5
    assert all("at most 4" in error_of(r.response) for r in answered)
    assert runs == []
    assert events[-1].text == "fewer then"
    answered_every_call(model)


async def test_the_default_cap_refuses_ten_thousand_calls_quickly() -> None:
    calls = [call("add", a=i, b=1) for i in range(10_000)]
    runner, _ = agent_with([calls, "ok"], [add])

    with anyio.fail_after(30):
        _, events = await start(runner, "hi")

    assert f"at most {DEFAULT_MAX_CALLS_PER_TURN}" in error_of(responses(events)[0].response)
    assert runs == []
    assert len(responses(events)) == 10_000
    assert events[-1].text == "ok"


async def test_calls_up_to_the_cap_run() -> None:
    calls = [call("add", a=i, b=1) for i in range(4)]
    runner, _ = agent_with([calls, "done"], [add], max_calls_per_turn=4)
    _, events = await start(runner, "hi")
    assert [r.response for r in responses(events)] == [1, 2, 3, 4]


def test_the_cap_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_calls_per_turn"):
        LlmAgent("a", ScriptedModel(), max_calls_per_turn=0)


# --- invalid arguments are quoted once, bounded --------------------------------------------


@tool
def named(city: str, count: int) -> str:
    """Needs a city and a count."""
    return city


SPEC = {
    "openapi": "3.0.3",
    "info": {"title": "t", "version": "1"},
    "paths": {
        "/cities": {
            "post": {
                "operationId": "addCity",
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "properties": {"name": {"type": "string", "maxLength": 10}},
                            }
                        }
                    },
                },
                "responses": {"200": {"description": "ok"}},
            }
        }
    },
}


@pytest.mark.parametrize("source", ["function", "openapi"])
async def test_an_invalid_argument_is_quoted_once_and_bounded(source: str) -> None:
    huge = "Q" * 1_000_000
    if source == "function":
        tools: list[Any] = [named]
        bad = call("named", city=huge, count=huge)
    else:
        tools = [OpenApiToolset(SPEC, base_url="http://127.0.0.1:9")]
        bad = call("addCity", name=huge)
    runner, _ = agent_with([bad, "done"], tools)

    _, events = await start(runner, "hi")

    (response,) = responses(events)
    result = response.response
    assert isinstance(result, dict)
    assert result["fields"]
    shown = json.dumps(result)
    assert len(shown) < 2_000
    for problem in result["fields"].values():  # type: ignore[union-attr]
        assert "QQQQ" in problem
    assert "QQQQ" not in error_of(result)
