"""The agent-loop scenarios every model passes, against its wire fake (see
`tests.models.scenarios`): each test runs once per fake in ``WIRES``, on asyncio and
trio."""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx2
import pytest

import toolsets
from tests.models.scenarios import Call, Fail, Turn, WireFake, collect
from toolsets import Content, LlmRequest, Part, ToolDeclaration, tool
from toolsets.agent import ConfirmationRequest, Event, LlmAgent, RunConfig, Runner
from toolsets.models import Llm

pytestmark = pytest.mark.anyio

KEY = "sk-test-SECRET-0123456789"
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(40))
WEATHER = "weather.service/get:current"
"""A tool name no provider takes as it is: offered under a legal name, mapped back."""


@tool(name=WEATHER, read_only=True)
def weather(city: str) -> dict[str, Any]:
    """Current weather in a city."""
    return {"city": city, "temp_c": 21}


@tool(read_only=True)
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool(requires_confirmation=True)
def delete_file(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


async def run(
    runner: Runner, message: str | Content, *, stream: bool = False, session_id: str | None = None
) -> tuple[str, list[Event]]:
    if session_id is None:
        session_id = (await runner.create_session(user_id="u")).id
    config = RunConfig(streaming=stream)
    with anyio.fail_after(20):
        events = [
            e
            async for e in runner.run(
                user_id="u", session_id=session_id, message=message, run_config=config
            )
        ]
    return session_id, events


@pytest.fixture
async def llm(wire: WireFake, model_name: str) -> AsyncIterator[Llm]:
    async with wire.make_model(model_name) as model:
        yield model


def final(events: list[Event]) -> list[Event]:
    return [e for e in events if not e.partial]


# -- tool calls ------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
async def test_a_tool_call_runs_and_its_result_goes_back_paired_with_the_call(
    wire: WireFake, llm: Llm, model_name: str, stream: bool
) -> None:
    wire.script(
        model_name,
        Turn(text="Let me look.", calls=[Call(WEATHER, {"city": "Paris"}, id="call_w")]),
        Turn(text="21 °C in Paris."),
    )
    runner = Runner(LlmAgent("assistant", llm, tools=[weather]))

    _, events = await run(runner, "Weather in Paris?", stream=stream)

    model_turn, tool_turn, answer = final(events)
    assert model_turn.content is not None
    assert model_turn.content.function_calls[0].name == WEATHER
    assert model_turn.content.function_calls[0].args == {"city": "Paris"}
    assert model_turn.content.function_calls[0].id == "call_w"
    assert tool_turn.function_responses[0].response == {"city": "Paris", "temp_c": 21}
    assert answer.text == "21 °C in Paris."
    assert answer.is_final_response()
    first, second = wire.seen(model_name)
    assert first.tools == [wire.tool_names.legal(WEATHER)]
    assert second.calls == [(first.tools[0], {"city": "Paris"}, "call_w")]
    (result,) = second.results
    assert result.call_id == "call_w"
    assert json.loads(result.content) == {"city": "Paris", "temp_c": 21}
    assert result.is_error in (None, False)


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
async def test_two_calls_in_one_turn_run_and_both_results_go_back_in_order(
    wire: WireFake, llm: Llm, model_name: str, stream: bool
) -> None:
    wire.script(
        model_name,
        Turn(
            calls=[
                Call("add", {"a": 1, "b": 2}, id="call_1"),
                Call(WEATHER, {"city": "Rome"}, id="call_2"),
            ]
        ),
        Turn(text="3, and 21 °C in Rome."),
    )
    runner = Runner(LlmAgent("assistant", llm, tools=[add, weather]))

    _, events = await run(runner, "Two things", stream=stream)

    model_turn, tool_turn, answer = final(events)
    assert model_turn.content is not None
    assert [c.name for c in model_turn.content.function_calls] == ["add", WEATHER]
    assert [r.response for r in tool_turn.function_responses] == [
        3,
        {"city": "Rome", "temp_c": 21},
    ]
    assert answer.text == "3, and 21 °C in Rome."
    second = wire.seen(model_name)[1]
    assert [r.call_id for r in second.results] == ["call_1", "call_2"]
    assert json.loads(second.results[0].content) == 3
    assert [c[2] for c in second.calls] == ["call_1", "call_2"]


async def test_a_call_needing_confirmation_pauses_and_its_result_goes_back_on_resume(
    wire: WireFake, llm: Llm, model_name: str
) -> None:
    wire.script(
        model_name,
        Turn(calls=[Call("delete_file", {"path": "a.txt"}, id="call_d")]),
        Turn(text="Deleted."),
    )
    runner = Runner(LlmAgent("assistant", llm, tools=[delete_file]))

    session_id, events = await run(runner, "rm a.txt")

    (request,) = events[-1].pending
    assert isinstance(request, ConfirmationRequest)
    assert (request.function_call_id, request.args) == ("call_d", {"path": "a.txt"})
    assert len(wire.requests(model_name)) == 1, "the model waits with the user"
    with anyio.fail_after(20):
        resumed = [
            e
            async for e in runner.resume(
                user_id="u", session_id=session_id, confirmations={"call_d": True}
            )
        ]
    assert resumed[-1].text == "Deleted."
    second = wire.seen(model_name)[1]
    assert second.results == [second.results[0]]
    assert second.results[0].call_id == "call_d"
    assert second.results[0].content in ("deleted a.txt", json.dumps("deleted a.txt"))


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
async def test_an_error_result_goes_back_flagged_where_the_wire_can_say_so(
    wire: WireFake, llm: Llm, model_name: str, stream: bool
) -> None:
    wire.script(
        model_name,
        Turn(calls=[Call("add", {"a": "one", "b": 2}, id="call_e")]),
        Turn(text="Sorry, a number is needed."),
    )
    runner = Runner(LlmAgent("assistant", llm, tools=[add]))

    _, events = await run(runner, "add one and two", stream=stream)

    (response,) = [r for e in events for r in e.function_responses]
    assert isinstance(response.response, dict)
    assert set(response.response["fields"]) == {"a"}  # type: ignore[arg-type]
    (result,) = wire.seen(model_name)[1].results
    assert json.loads(result.content) == response.response
    assert result.is_error in (None, True)
    if wire.name == "anthropic":
        assert result.is_error is True
    assert events[-1].text == "Sorry, a number is needed."


# -- what the model is sent ----------------------------------------------------------


async def test_the_system_prompt_and_an_image_reach_the_model(
    wire: WireFake, llm: Llm, model_name: str
) -> None:
    wire.script(model_name, Turn(text="A PNG."))
    agent = LlmAgent("assistant", llm, instruction="Be brief.")
    message = Content(
        role="user", parts=(Part(text="What is this?"), Part.from_bytes(PNG, "image/png"))
    )

    _, events = await run(Runner(agent), message)

    assert events[-1].text == "A PNG."
    (seen,) = wire.seen(model_name)
    assert seen.system is not None
    assert "Be brief." in seen.system
    assert seen.images == [PNG]
    assert seen.user_texts == ["What is this?"]
    assert seen.tools == []


# -- what the model answers ----------------------------------------------------------


async def test_streaming_text_arrives_in_partial_events_then_whole(
    wire: WireFake, llm: Llm, model_name: str
) -> None:
    wire.script(model_name, Turn(text="Sunny with a light breeze today."))
    runner = Runner(LlmAgent("assistant", llm))

    _, events = await run(runner, "Weather?", stream=True)

    partials = [e for e in events if e.partial]
    assert len(partials) > 1
    assert "".join(e.text for e in partials) == "Sunny with a light breeze today."
    (whole,) = final(events)
    assert whole.text == "Sunny with a light breeze today."
    assert whole.usage is not None
    assert (whole.usage.input_tokens, whole.usage.output_tokens) == (11, 3)


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("stop", ["stop", "tool_calls", "length", "content_filter"])
async def test_the_providers_stop_reason_is_mapped(
    wire: WireFake, llm: Llm, model_name: str, stop: Any, stream: bool
) -> None:
    calls = [Call("add", {"a": 1, "b": 1})] if stop == "tool_calls" else []
    wire.script(model_name, Turn(text="Partly", calls=calls, stop=stop, usage=(5, 7)))
    request = LlmRequest(contents=[Content.user("Hi")])
    request.declarations = {"add": ToolDeclaration(name="add")}

    *_, response = await collect(llm, request, stream=stream)

    assert response.finish_reason == stop
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (5, 7)
    assert response.model_version is not None


# -- provider errors -----------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
async def test_a_rate_limit_is_an_error_response_saying_when_to_retry(
    wire: WireFake, llm: Llm, model_name: str, stream: bool
) -> None:
    wire.script(model_name, Fail("rate_limit", "Rate limit reached.", retry_after=7))

    (response,) = await collect(llm, LlmRequest(contents=[Content.user("Hi")]), stream=stream)

    assert response.error_code == f"http_{wire.statuses['rate_limit']}"
    assert response.error_message == "Rate limit reached."
    assert response.retry_after == 7.0
    assert response.finish_reason == "error"
    assert response.content is None


@pytest.mark.parametrize("kind", ["overloaded", "server"])
async def test_an_overloaded_or_failing_server_ends_the_run_with_an_error_event(
    wire: WireFake, llm: Llm, model_name: str, kind: Any
) -> None:
    wire.script(model_name, Fail(kind, "Overloaded"))
    runner = Runner(LlmAgent("assistant", llm))

    _, events = await run(runner, "Hi")

    (event,) = events
    assert event.error_code == f"http_{wire.statuses[kind]}"
    assert event.error_message == "Overloaded"
    assert event.is_final_response()


async def test_an_error_event_in_the_middle_of_a_stream_is_an_error_response(
    wire: WireFake, llm: Llm, model_name: str
) -> None:
    wire.script(model_name, Fail("overloaded", "Overloaded", mid_stream=True))

    *partials, last = await collect(llm, LlmRequest(contents=[Content.user("Hi")]), stream=True)

    assert [p.content.text for p in partials if p.content] == ["Hel"]
    assert (last.error_code, last.error_message) == (wire.stream_error_code, "Overloaded")
    assert last.partial is False


async def test_the_api_key_is_sent_and_never_shown_in_reprs_or_errors(
    wire: WireFake, model_name: str
) -> None:
    echoed = f"Invalid API key: {KEY}"
    wire.script(model_name, Turn(text="ok"), Fail("unauthorized", echoed))

    async with wire.make_model(model_name, api_key=KEY) as model:
        await collect(model, LlmRequest(contents=[Content.user("Hi")]), stream=False)
        (error,) = await collect(model, LlmRequest(contents=[Content.user("Hi")]), stream=True)
        shown = repr(model) + repr(vars(model))

    assert wire.seen(model_name)[0].key == KEY
    assert error.error_code == f"http_{wire.statuses['unauthorized']}"
    assert error.error_message is not None
    assert "Invalid API key" in error.error_message
    assert KEY not in error.error_message
    assert KEY not in shown


async def test_a_refused_connection_raises_connection_error_without_the_key(
    wire: WireFake, model_name: str
) -> None:
    # A bound socket that does not listen refuses connections, and keeps its port ours.
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        root = f"http://127.0.0.1:{closed.getsockname()[1]}"
        model = wire.make_model(model_name, root=root, api_key=KEY)
        async with model:
            for stream in (False, True):
                with pytest.raises(toolsets.ConnectionError) as info:
                    await collect(model, LlmRequest(contents=[Content.user("Hi")]), stream=stream)

                assert info.value.target == root + wire.prefix
                assert isinstance(info.value.__cause__, httpx2.ConnectError)
                assert isinstance(info.value, ConnectionError)  # the builtin, too
                assert KEY not in str(info.value) + repr(info.value)
