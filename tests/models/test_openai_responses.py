"""OpenAIResponsesModel on OpenAI's Responses API: the conversation as input items (a
reasoning model's reasoning sent back, statelessly), output items read back, errors;
and OpenAI's hosted tool search: a `searchable` catalogue's tools sent with
``defer_loading`` and the ``tool_search`` tool, the search's items kept and sent back,
the tools it found called through the one call path; the local search where the model
cannot search. (Every scenario of ``test_scenarios.py`` runs on this model too.)

The provider is a fake Responses API on 127.0.0.1 that answers with response fixtures
written here from the documented wire format, and checks every request it is sent and
every answer and event it gives against the types of OpenAI's own SDK (``openai``, in
the dev extra)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from openai.types.responses import Response as ResponseObject
from openai.types.responses import ResponseStreamEvent
from openai.types.responses.response_create_params import (
    ResponseCreateParamsNonStreaming,
    ResponseCreateParamsStreaming,
)
from pydantic import TypeAdapter

from tests.models.replay import ReplayedApi, Wire, replayed
from tests.models.scenarios import collect
from tests.models.test_anthropic_tool_search import Catalogue, prepared
from tests.models.test_scenarios import run as run_agent
from toolsets import (
    Blob,
    Content,
    FileData,
    FunctionCall,
    LlmRequest,
    Part,
    StaticToolset,
    ToolDefinitionError,
    tool,
)
from toolsets.agent import Event, LlmAgent, Runner
from toolsets.models import INVALID_JSON_KEY, Llm, OpenAIResponsesModel
from toolsets.models._openai_responses import supports_tool_search
from toolsets.search import SEARCH_TOOL_NAME

pytestmark = pytest.mark.anyio

MODEL = "gpt-5.4"
"""A model the tool search guide lists."""
OLDER = "gpt-4.1"
"""One it does not."""

REASONING: dict[str, Any] = {
    "type": "reasoning",
    "id": "rs_68c1",
    "summary": [{"type": "summary_text", "text": "The user wants the weather."}],
    "encrypted_content": "gAAAAABoz-opaque",
}
"""A recorded shape of a reasoning model's reasoning item (with its encrypted content,
which a stateless conversation must send back)."""

SEARCH_CALL: dict[str, Any] = {
    "type": "tool_search_call",
    "id": "tsc_68c2",
    "call_id": None,
    "execution": "server",
    "status": "completed",
    "arguments": {"query": "current weather in a city"},
}
"""A recorded shape of the search the model runs on OpenAI's side."""


def search_output(*tools: dict[str, Any]) -> dict[str, Any]:
    """A recorded shape of what the hosted search loaded."""
    return {
        "type": "tool_search_output",
        "id": "tso_68c3",
        "call_id": None,
        "execution": "server",
        "status": "completed",
        "tools": list(tools),
    }


def function(name: str, description: str = "Current weather in a city.") -> dict[str, Any]:
    return {
        "type": "function",
        "name": name,
        "description": description,
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        "strict": False,
        "defer_loading": True,
    }


def call(
    name: str, arguments: str = '{"city": "Paris"}', call_id: str = "call_W3"
) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": "fc_68c4",
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
        "status": "completed",
    }


def said(text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": "msg_68c5",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def response(*items: dict[str, Any], status: str = "completed", **more: Any) -> dict[str, Any]:
    return {
        "id": "resp_68c0",
        "object": "response",
        "created_at": 1767225600,
        "model": "gpt-5.4-2026-03-05",
        "status": status,
        "error": None,
        "incomplete_details": None,
        "output": list(items),
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": 812,
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens": 97,
            "output_tokens_details": {"reasoning_tokens": 40},
            "total_tokens": 909,
        },
        **more,
    }


def found(name: str = "get_weather", called: str | None = None) -> dict[str, Any]:
    """The model reasons, searches on OpenAI's side, loads ``name`` and calls ``called``
    (by default what it loaded)."""
    return response(REASONING, SEARCH_CALL, search_output(function(name)), call(called or name))


ANSWER = response(said("It is 18 °C in Paris."))

_REQUEST = TypeAdapter(ResponseCreateParamsNonStreaming)
_STREAM_REQUEST = TypeAdapter(ResponseCreateParamsStreaming)
_EVENT: TypeAdapter[Any] = TypeAdapter(ResponseStreamEvent)


def events_of(answer: dict[str, Any]) -> list[dict[str, Any]]:
    """``answer`` as the stream of events the API sends: each item added, a message's
    text and a call's arguments in deltas of two pieces (a reasoning summary in one),
    each item done, then the whole response."""
    head = {**answer, "status": "in_progress", "output": [], "usage": None}
    events: list[dict[str, Any]] = [{"type": "response.created", "response": head}]
    for index, item in enumerate(answer["output"]):
        where = {"output_index": index, "item_id": item["id"]}
        if item["type"] == "message":
            text = item["content"][0]["text"]
            opened = {**item, "content": [], "status": "in_progress"}
            deltas = [
                {
                    "type": "response.output_text.delta",
                    "delta": p,
                    "content_index": 0,
                    "logprobs": [],
                }
                for p in (text[:5], text[5:])
            ]
        elif item["type"] == "function_call":
            opened = {**item, "arguments": "", "status": "in_progress"}
            text = item["arguments"]
            deltas = [
                {"type": "response.function_call_arguments.delta", "delta": p}
                for p in (text[:7], text[7:])
            ]
        elif item["type"] == "reasoning":
            opened = {**item, "summary": []}
            deltas = [
                {
                    "type": "response.reasoning_summary_text.delta",
                    "delta": s["text"],
                    "summary_index": n,
                }
                for n, s in enumerate(item["summary"])
            ]
        else:
            opened, deltas = item, []
        events.append({"type": "response.output_item.added", "output_index": index, "item": opened})
        events += [{**d, **where} for d in deltas]
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    events.append({"type": f"response.{answer['status']}", "response": answer})
    return [{**e, "sequence_number": n} for n, e in enumerate(events)]


def refused(body: dict[str, Any]) -> str | None:
    """Why the API would refuse ``body`` (the documented rules), if it would."""
    tools = body.get("tools", [])
    searches = [t for t in tools if t["type"] == "tool_search"]
    deferred = [t["name"] for t in tools if t.get("defer_loading")]
    if deferred and not searches:
        return f"deferred tools without a tool_search tool: {deferred}"
    for item in body["input"]:
        kind = item.get("type")
        if kind in ("tool_search_call", "tool_search_output") and not searches:
            return f"a {kind} item without the tool_search tool"
        if kind == "reasoning" and not (item.get("id") and item.get("encrypted_content")):
            return "a reasoning item without its id and encrypted content"
    return None


def error(message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "code": None}}


@pytest.fixture(scope="module")
def api() -> Iterator[tuple[ReplayedApi, str]]:
    """``POST /v1/responses`` replayed. What the API refuses is refused: a body the
    SDK's types reject, a deferred tool or a search item without the search tool, a
    reasoning item without its id and encrypted content."""
    fake = ReplayedApi(
        _REQUEST, _STREAM_REQUEST, TypeAdapter(ResponseObject), _EVENT, refused, error, events_of
    )
    with replayed(fake, "/v1/responses") as root:
        yield fake, root


@pytest.fixture
def wire(api: tuple[ReplayedApi, str], request: pytest.FixtureRequest) -> Wire:
    fake, root = api

    def make(model: str, **options: Any) -> OpenAIResponsesModel:
        return OpenAIResponsesModel(model, base_url=root + "/v1", api_key="sk-test", **options)

    return Wire(fake, request.node.nodeid, make, MODEL)


async def run(model: Llm, toolset: Any, *, stream: bool = False) -> list[Event]:
    """The final events of an agent run of ``toolset`` on ``model``."""
    runner = Runner(LlmAgent("assistant", model, tools=[toolset], instruction="Be brief."))
    _, events = await run_agent(runner, "Weather in Paris?", stream=stream)
    return [e for e in events if not e.partial]


@tool(read_only=True)
def get_weather(city: str) -> dict[str, Any]:
    """Current weather in a city."""
    return {"city": city, "temp_c": 18}


# -- the wire format -------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
async def test_a_reasoning_models_call_round_trips_with_its_reasoning_sent_back(
    wire: Wire, stream: bool
) -> None:
    wire.script(response(REASONING, call("get_weather")), ANSWER)

    async with wire.model() as model:
        events = await run(model, get_weather, stream=stream)

    model_turn, tool_turn, answer = events
    assert model_turn.content is not None
    assert [p.text for p in model_turn.content.parts if p.thought] == [
        "The user wants the weather."
    ]
    assert model_turn.content.function_calls == (
        FunctionCall(name="get_weather", args={"city": "Paris"}, id="call_W3"),
    )
    assert tool_turn.function_responses[0].response == {"city": "Paris", "temp_c": 18}
    assert answer.text == "It is 18 °C in Paris."
    assert answer.usage is not None
    assert answer.usage.input_tokens == 812

    first, second = wire.bodies
    assert first["instructions"].startswith("Be brief.")
    assert first["tools"] == [
        {
            "type": "function",
            "name": "get_weather",
            "description": "Current weather in a city.",
            "parameters": first["tools"][0]["parameters"],
            "strict": False,
        }
    ]
    assert first["input"] == [{"role": "user", "content": "Weather in Paris?"}]
    # Stateless: the reasoning goes back as it came, before the call it led to (the
    # call with its item id, which names the reasoning before it).
    assert second["input"][1:] == [
        REASONING,
        {
            "type": "function_call",
            "call_id": "call_W3",
            "name": "get_weather",
            "arguments": '{"city": "Paris"}',
            "id": "fc_68c4",
        },
        {
            "type": "function_call_output",
            "call_id": "call_W3",
            "output": json.dumps({"city": "Paris", "temp_c": 18}),
        },
    ]


async def test_an_assistant_message_goes_back_as_it_came(wire: Wire) -> None:
    wire.script(response(REASONING, said("Which city?")), ANSWER)
    request = LlmRequest(contents=[Content.user("Weather?")])

    async with wire.model() as model:
        (turn,) = await collect(model, request)
        assert turn.content is not None
        assert turn.content.text == "Which city?"
        assert turn.finish_reason == "stop"
        assert turn.model_version == "gpt-5.4-2026-03-05"
        request.contents += [turn.content, Content.user("Paris.")]
        await collect(model, request)

    _, second = wire.bodies
    assert second["input"] == [
        {"role": "user", "content": "Weather?"},
        REASONING,
        said("Which city?"),
        {"role": "user", "content": "Paris."},
    ]


async def test_an_answer_cut_short_says_why(wire: Wire) -> None:
    wire.script(
        response(
            said("It is"), status="incomplete", incomplete_details={"reason": "max_output_tokens"}
        )
    )

    async with wire.model() as model:
        (turn,) = await collect(model, LlmRequest(contents=[Content.user("Weather?")]))

    assert turn.finish_reason == "length"
    assert turn.content is not None
    assert turn.content.text == "It is"


async def test_a_refusal_is_the_answers_text_and_a_content_filter_stop(wire: Wire) -> None:
    refusal = {"type": "refusal", "refusal": "I can't help with that."}
    wire.script(response({**said(""), "content": [refusal]}))

    async with wire.model() as model:
        (turn,) = await collect(model, LlmRequest(contents=[Content.user("Hi")]))

    assert turn.finish_reason == "content_filter"
    assert turn.content is not None
    assert turn.content.text == "I can't help with that."


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize(
    ("code", "error_code"),
    [("server_error", "server_error"), ("rate_limit_exceeded", "http_429")],
)
async def test_a_failed_response_is_an_error_response_with_its_code(
    wire: Wire, stream: bool, code: str, error_code: str
) -> None:
    wire.script(response(status="failed", error={"code": code, "message": "It failed."}))

    async with wire.model() as model:
        (turn,) = await collect(model, LlmRequest(contents=[Content.user("Hi")]), stream=stream)

    assert turn.finish_reason == "error"
    assert turn.error_code == error_code  # a rate limit reads as the HTTP one does
    assert turn.error_message == "It failed."


async def test_images_files_and_system_turns_go_as_the_api_types_them(wire: Wire) -> None:
    wire.script(ANSWER)
    png = b"\x89PNG\r\n"
    parts = (
        Part(text="What is in these?"),
        Part(inline_data=Blob(mime_type="image/png", data=png)),
        Part(inline_data=Blob(mime_type="audio/wav", data=b"RIFF")),
        Part(file_data=FileData(uri="https://example.com/a.pdf", mime_type="application/pdf")),
        Part(file_data=FileData(uri="https://example.com/b.jpg", mime_type="image/jpeg")),
        Part(file_data=FileData(uri="https://example.com/c.zip")),
    )
    request = LlmRequest(
        contents=[Content(role="system", parts=(Part(text="Answer in French."),))],
        system_instruction="Be brief.",
    )
    request.contents.append(Content(role="user", parts=parts))

    async with wire.model() as model:
        await collect(model, request)

    (body,) = wire.bodies  # the SDK's types took it
    assert body["instructions"] == "Be brief."
    system, user = body["input"]
    assert system == {"role": "system", "content": "Answer in French."}
    assert user["content"] == [
        {"type": "input_text", "text": "What is in these?"},
        {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0K", "detail": "auto"},
        {"type": "input_file", "file_data": "data:audio/wav;base64,UklGRg==", "filename": "file"},
        {"type": "input_file", "file_url": "https://example.com/a.pdf"},
        {"type": "input_image", "image_url": "https://example.com/b.jpg", "detail": "auto"},
        {"type": "input_text", "text": "[file: https://example.com/c.zip]"},
    ]


async def test_a_forced_tool_is_named_as_the_api_knows_it(wire: Wire) -> None:
    wire.script(ANSWER)

    @tool(name="weather.now")
    def weather_now(city: str) -> str:
        """The weather right now."""
        return "sunny"

    request = await prepared(StaticToolset([weather_now]))
    request.config["tool_choice"] = {"type": "function", "name": "weather.now"}

    async with wire.model() as model:
        await collect(model, request)

    (body,) = wire.bodies
    (sent,) = body["tools"]
    assert sent["name"] != "weather.now"
    assert body["tool_choice"] == {"type": "function", "name": sent["name"]}


async def test_arguments_that_are_not_json_go_back_as_the_model_sent_them(wire: Wire) -> None:
    wire.script(response(REASONING, call("get_weather", '{"city": "Par')), ANSWER)

    async with wire.model() as model:
        events = await run(model, get_weather)

    model_turn, tool_turn, _ = events
    assert model_turn.content is not None
    assert model_turn.content.function_calls[0].args == {INVALID_JSON_KEY: '{"city": "Par'}
    assert "error" in str(tool_turn.function_responses[0].response)
    _, second = wire.bodies
    assert second["input"][2]["arguments"] == '{"city": "Par'


async def test_an_unknown_config_key_is_refused_before_anything_is_sent(wire: Wire) -> None:
    request = LlmRequest(contents=[Content.user("Hi")], config={"max_tokens": 5})

    async with wire.model() as model:
        with pytest.raises(ValueError, match="'max_tokens'") as caught:
            await collect(model, request)

    assert "max_output_tokens" in str(caught.value)
    assert wire.bodies == []


def test_an_unknown_tool_search_option_is_refused() -> None:
    with pytest.raises(ValueError, match="tool_search"):
        OpenAIResponsesModel(MODEL, tool_search="client")  # type: ignore[arg-type]


# -- the hosted tool search --------------------------------------------------------------


async def test_the_catalogues_tools_go_deferred_with_the_search_tool_in_place_of_the_local_one(
    wire: Wire,
) -> None:
    wire.script(ANSWER)
    request = await prepared(Catalogue().toolset())

    async with wire.model() as model:
        await collect(model, request)

    (body,) = wire.bodies
    tools = body["tools"]
    assert tools[0] == {"type": "tool_search", "execution": "server"}
    named = {t["name"]: t for t in tools[1:]}
    assert list(named) == ["send_email", "get_weather", "refund_payment"]
    assert "defer_loading" not in named["send_email"]
    assert named["get_weather"]["defer_loading"] is True
    assert named["refund_payment"]["defer_loading"] is True
    assert SEARCH_TOOL_NAME not in named


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
async def test_a_tool_openai_found_is_called_through_the_one_call_path_and_the_search_goes_back(
    wire: Wire, stream: bool
) -> None:
    wire.script(found(), ANSWER)
    catalogue = Catalogue()

    async with wire.model() as model:
        events = await run(model, catalogue.toolset(), stream=stream)

    assert catalogue.ran == [("get_weather", {"city": "Paris"})]
    model_turn, tool_turn, answer = events
    assert model_turn.content is not None
    assert [p.text for p in model_turn.content.parts if p.thought] == [
        "The user wants the weather.",
        'Searching the tools: {"query": "current weather in a city"}',
        "Found tools: get_weather",
    ]
    assert model_turn.content.function_calls == (
        FunctionCall(name="get_weather", args={"city": "Paris"}, id="call_W3"),
    )
    assert tool_turn.function_responses[0].response == {"city": "Paris", "temp_c": 18}
    assert answer.text == "It is 18 °C in Paris."

    first, second = wire.bodies
    # The search goes back exactly as it came, in its place among the items.
    assert second["input"][1:4] == found()["output"][:3]
    assert second["input"][4]["call_id"] == "call_W3"
    assert second["input"][5]["type"] == "function_call_output"
    # The tools are the same: the one found is still deferred.
    assert second["tools"] == first["tools"]


async def test_a_tool_named_as_openai_refuses_is_found_by_a_legal_name_and_called_by_its_own(
    wire: Wire,
) -> None:
    catalogue = Catalogue()

    @tool(name="weather.now")
    def weather_now(city: str) -> str:
        """The weather right now, in a city."""
        catalogue.ran.append(("weather.now", {"city": city}))
        return "sunny"

    def finding(body: dict[str, Any]) -> dict[str, Any]:
        (sent,) = [
            t["name"]
            for t in body["tools"]
            if t.get("description", "").startswith("The weather right")
        ]
        return found(sent)

    wire.script(finding, ANSWER)

    async with wire.model() as model:
        events = await run(model, catalogue.toolset(weather_now))

    assert catalogue.ran == [("weather.now", {"city": "Paris"})]
    model_turn = events[0]
    assert model_turn.content is not None
    assert model_turn.content.function_calls[0].name == "weather.now"
    assert [p.text for p in model_turn.content.parts if p.thought][2] == "Found tools: weather.now"


@pytest.mark.parametrize(
    ("model_name", "option"), [(OLDER, "auto"), (MODEL, None)], ids=["older-model", "off"]
)
async def test_without_openais_search_the_local_search_tool_is_offered_as_for_any_model(
    wire: Wire, model_name: str, option: Any
) -> None:
    wire.script(
        response(call(SEARCH_TOOL_NAME, '{"query": "weather"}', "call_S")),
        response(call("get_weather")),
        ANSWER,
    )
    catalogue = Catalogue()

    async with wire.model(model_name, tool_search=option) as model:
        events = await run(model, catalogue.toolset())

    assert catalogue.ran == [("get_weather", {"city": "Paris"})]
    assert events[-1].text == "It is 18 °C in Paris."
    first, _, third = wire.bodies
    assert [t["name"] for t in first["tools"]] == [SEARCH_TOOL_NAME, "send_email"]
    assert [t["name"] for t in third["tools"]] == [SEARCH_TOOL_NAME, "get_weather", "send_email"]
    assert not any(t.get("defer_loading") for b in wire.bodies for t in b["tools"])


async def test_an_earlier_search_on_openais_side_is_left_out_when_the_local_search_is_used(
    wire: Wire,
) -> None:
    wire.script(found(), ANSWER)
    catalogue = Catalogue()

    async with wire.model() as searching:
        events = await run(searching, catalogue.toolset())
    request = await prepared(catalogue.toolset())
    request.contents += [e.content for e in events if e.content is not None]

    wire.script(ANSWER)
    async with wire.model(tool_search=None) as model:
        await collect(model, request)

    body = wire.bodies[-1]
    kinds = [item.get("type", "message") for item in body["input"]]
    assert "tool_search_call" not in kinds
    assert "tool_search_output" not in kinds
    assert "reasoning" in kinds


async def test_a_tool_named_as_the_search_tool_is_refused_before_anything_is_sent(
    wire: Wire,
) -> None:
    @tool
    def tool_search(query: str) -> str:
        """Mine."""
        return query

    request = await prepared(Catalogue().toolset(tool_search))

    async with wire.model() as model:
        with pytest.raises(ToolDefinitionError) as caught:
            await collect(model, request)

    assert caught.value.tool_name == "tool_search"
    assert wire.bodies == []


@pytest.mark.parametrize(
    ("model", "supported"),
    [
        ("gpt-5.4", True),
        ("gpt-5.4-mini", True),
        ("gpt-5.4-2026-03-05", True),
        ("gpt-5.4-pro", True),
        ("gpt-5.5", True),
        ("gpt-5.10", True),
        ("gpt-6", True),
        ("openai/gpt-5.4", True),
        ("gpt-5.3-codex", False),
        ("gpt-5", False),
        ("gpt-5-mini", False),
        ("gpt-4.1", False),
        ("gpt-4o", False),
        ("o3", False),
        ("claude-sonnet-4-5", False),
    ],
)
def test_auto_searches_on_openais_side_for_the_documented_models(
    model: str, supported: bool
) -> None:
    assert supports_tool_search(model) is supported


async def test_a_stream_shows_the_reasoning_summary_and_the_text_as_they_come(
    wire: Wire,
) -> None:
    wire.script(response(REASONING, said("It is 18 °C in Paris.")))

    async with wire.model() as model:
        *partials, whole = await collect(
            model, LlmRequest(contents=[Content.user("Weather?")]), stream=True
        )

    shown = [(p.content.parts[0].text, p.content.parts[0].thought) for p in partials if p.content]
    assert shown == [
        ("The user wants the weather.", True),
        ("It is", False),
        (" 18 °C in Paris.", False),
    ]
    assert whole.content is not None
    assert whole.content.text == "It is 18 °C in Paris."
    assert whole.usage is not None
    assert whole.usage.output_tokens == 97


async def test_reasoning_without_a_summary_still_goes_back_before_its_call(wire: Wire) -> None:
    silent = {**REASONING, "summary": []}
    wire.script(response(silent, call("get_weather")), ANSWER)

    async with wire.model() as model:
        await run(model, get_weather, stream=True)

    _, second = wire.bodies
    assert [item.get("type") for item in second["input"][1:3]] == ["reasoning", "function_call"]
    assert second["input"][1] == silent
