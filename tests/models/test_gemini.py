"""GeminiModel against a real HTTP server speaking the Gemini API wire format
(`tests.models.gemini_wire`), directly and through the agent loop; and Gemini's
server-side tools. Each test talks to the server under its own model name."""

from __future__ import annotations

import base64
import dataclasses
import json
import re
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import httpx2
import pytest

import toolsets
from tests.models.gemini_wire import FakeGemini, Reply, Turn, serve_fake_gemini
from toolsets import Content, LlmRequest, Part, ToolDeclaration
from toolsets.agent import ConfirmationRequest, Event, LlmAgent, RunConfig, Runner
from toolsets.models import (
    GeminiModel,
    Llm,
    LlmResponse,
    OpenAIChatModel,
    built_in_code_execution_tool,
    google_search_tool,
    url_context_tool,
)

pytestmark = pytest.mark.anyio

KEY = "AIza-test-SECRET-0123456789"
SIGNATURE = base64.b64encode(b"opaque signature bytes").decode()


@pytest.fixture(scope="module")
def server() -> Iterator[FakeGemini]:
    with serve_fake_gemini() as fake:
        yield fake


@pytest.fixture(autouse=True)
def _no_gemini_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GEMINI_BASE_URL", "GEMINI_MODEL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def name(request: pytest.FixtureRequest) -> str:
    """A model name unique to this test (and backend)."""
    return re.sub(r"[^A-Za-z0-9_-]", "-", request.node.name)


@pytest.fixture
async def llm(server: FakeGemini, name: str) -> AsyncIterator[GeminiModel]:
    async with GeminiModel(name, base_url=server.base_url, api_key=KEY, timeout=10) as model:
        yield model


async def collect(model: Llm, request: LlmRequest, *, stream: bool = False) -> list[LlmResponse]:
    with anyio.fail_after(10):
        return [r async for r in model.generate(request, stream=stream)]


async def run(runner: Runner, message: str, *, stream: bool = False) -> tuple[str, list[Event]]:
    session = await runner.create_session(user_id="u")
    with anyio.fail_after(10):
        events = [
            e
            async for e in runner.run(
                user_id="u",
                session_id=session.id,
                message=message,
                run_config=RunConfig(streaming=stream),
            )
        ]
    return session.id, events


WEATHER = ToolDeclaration(
    name="weather.service/get:current",
    description="Current weather.",
    parameters={
        "type": "object",
        "properties": {"city-name": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city-name"],
    },
)


# -- the request ---------------------------------------------------------------------


async def test_a_request_carries_gemini_declarations_instructions_config_and_the_key_header(
    server: FakeGemini, llm: GeminiModel, name: str
) -> None:
    server.script(name, Turn(text="Sunny."))
    request = LlmRequest(
        contents=[Content.user("Weather in Paris?")],
        system_instruction="Be brief.",
        config={"temperature": 0.2, "max_tokens": 50, "top_k": 3, "safetySettings": []},
    )
    request.declarations[WEATHER.name] = WEATHER

    (response,) = await collect(llm, request)

    assert response.content is not None
    assert response.content.text == "Sunny."
    assert response.finish_reason == "stop"
    assert response.model_version == "gemini-test-001"
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (11, 5)
    (sent,) = server.requests(name)
    assert sent.path == f"/v1beta/models/{name}:generateContent"
    assert sent.query == ""
    assert sent.headers["x-goog-api-key"] == KEY
    assert sent.body["contents"] == [{"role": "user", "parts": [{"text": "Weather in Paris?"}]}]
    assert sent.body["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    assert sent.body["generationConfig"] == {"temperature": 0.2, "maxOutputTokens": 50, "topK": 3}
    assert sent.body["safetySettings"] == []
    (tools,) = sent.body["tools"]
    (declaration,) = tools["functionDeclarations"]
    assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.:-]{0,63}", declaration["name"])
    # Current models take the tool's own JSON Schema, as it is.
    assert declaration["parametersJsonSchema"] == WEATHER.parameters
    assert "parameters" not in declaration


async def test_first_generation_models_or_any_model_asked_to_get_the_parameters_form(
    server: FakeGemini, name: str
) -> None:
    old, current = f"gemini-1.5-{name}", f"gemini-2.5-{name}"
    request = LlmRequest(contents=[Content.user("Weather?")])
    request.declarations[WEATHER.name] = WEATHER
    async with (
        GeminiModel(old, base_url=server.base_url, api_key=KEY) as auto,
        GeminiModel(current, base_url=server.base_url, schema_form="parameters") as asked,
    ):
        for model, model_name in ((auto, old), (asked, current), (auto, current)):
            server.script(model_name, Turn(text="ok"))
            await collect(model, dataclasses.replace(request, model=model_name))

    forms = [
        set(received.body["tools"][0]["functionDeclarations"][0]) - {"name", "description"}
        for received in (*server.requests(old), *server.requests(current))
    ]
    assert forms == [{"parameters"}, {"parameters"}, {"parametersJsonSchema"}]
    declared = server.requests(old)[0].body["tools"][0]["functionDeclarations"][0]
    assert declared["parameters"]["type"] == "OBJECT"
    assert "city_name" in declared["parameters"]["properties"]


async def test_a_call_is_mapped_back_to_the_tool_s_own_name_and_arguments(
    server: FakeGemini, name: str
) -> None:
    request = LlmRequest(contents=[Content.user("Weather?")])
    request.declarations[WEATHER.name] = WEATHER
    provider_name = re.sub(r"[^A-Za-z0-9_.:-]", "_", WEATHER.name)
    server.script(name, Turn(calls=[(provider_name, {"city_name": "Paris", "days": 2.0})]))

    async with GeminiModel(
        name, base_url=server.base_url, api_key=KEY, schema_form="parameters"
    ) as llm:
        (response,) = await collect(llm, request)

    assert response.content is not None
    (call,) = response.content.function_calls
    assert call.name == WEATHER.name
    assert call.args == {"city-name": "Paris", "days": 2}
    assert call.id
    assert response.finish_reason == "tool_calls"


@pytest.mark.parametrize("key", ["tool_config", "toolConfig"])
async def test_the_allowed_function_names_are_sent_as_gemini_knows_the_tools(
    server: FakeGemini, llm: GeminiModel, name: str, key: str
) -> None:
    server.script(name, Turn(text="ok"))
    calling = {"mode": "ANY", "allowedFunctionNames": [WEATHER.name]}
    request = LlmRequest(
        contents=[Content.user("Weather?")], config={key: {"functionCallingConfig": calling}}
    )
    request.declarations[WEATHER.name] = WEATHER

    await collect(llm, request)

    (sent,) = server.requests(name)
    (declaration,) = sent.body["tools"][0]["functionDeclarations"]
    assert declaration["name"] != WEATHER.name
    assert sent.body["toolConfig"] == {
        "functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": [declaration["name"]]}
    }


@pytest.mark.parametrize("key", ["max_output_tokens", "maxOutputTokens"])
async def test_generation_options_are_taken_in_either_case_and_unknown_ones_refused(
    server: FakeGemini, llm: GeminiModel, name: str, key: str
) -> None:
    server.script(name, Turn(text="ok"))
    request = LlmRequest(
        contents=[Content.user("Hi")], config={key: 5, "extra_body": {"labels": {"a": "b"}}}
    )
    await collect(llm, request)
    assert server.requests(name)[0].body["generationConfig"] == {"maxOutputTokens": 5}
    assert server.requests(name)[0].body["labels"] == {"a": "b"}

    with pytest.raises(ValueError, match="tempreature"):
        await collect(llm, LlmRequest(contents=[Content.user("Hi")], config={"tempreature": 1}))


async def test_images_go_out_and_come_back_as_inline_data(
    server: FakeGemini, llm: GeminiModel, name: str
) -> None:
    png = b"\x89PNG\r\n\x1a\nfake"
    encoded = base64.b64encode(png).decode()
    server.script(
        name,
        Turn(text="A drawing:", parts=[{"inlineData": {"mimeType": "image/png", "data": encoded}}]),
    )
    question = Content(
        role="user", parts=(Part.from_text("And this?"), Part.from_bytes(png, "image/png"))
    )

    (response,) = await collect(llm, LlmRequest(contents=[question]))

    (sent,) = server.requests(name)
    assert sent.body["contents"][0]["parts"][1] == {
        "inlineData": {"mimeType": "image/png", "data": encoded}
    }
    assert response.content is not None
    blob = response.content.parts[1].inline_data
    assert blob is not None
    assert (blob.mime_type, blob.data) == ("image/png", png)


async def test_a_stream_yields_text_pieces_then_the_whole_answer_with_its_signature(
    server: FakeGemini, llm: GeminiModel, name: str
) -> None:
    server.script(name, Turn(thought="Thinking it over.", text="Hello there!", signature=SIGNATURE))

    responses = await collect(llm, LlmRequest(contents=[Content.user("Hi")]), stream=True)

    (sent,) = server.requests(name)
    assert sent.stream
    assert sent.query == "alt=sse"
    assert sent.path == f"/v1beta/models/{name}:streamGenerateContent"
    partial = [r for r in responses if r.partial]
    assert len(partial) == 4  # two pieces of the thought, two of the text
    assert "".join(r.content.text for r in partial if r.content) == "Hello there!"
    final = responses[-1]
    assert not final.partial
    assert final.finish_reason == "stop"
    assert final.content is not None
    thought, text, signed = final.content.parts
    assert (thought.text, thought.thought) == ("Thinking it over.", True)
    assert text.text == "Hello there!"
    assert (signed.text, signed.provider_data) == ("", {"gemini": {"thoughtSignature": SIGNATURE}})
    assert final.usage is not None
    assert final.usage.output_tokens == 5


# -- errors --------------------------------------------------------------------------


def rate_limited() -> Reply:
    return Reply(
        status=429,
        body={
            "error": {
                "code": 429,
                "message": f"Quota exceeded for key {KEY}.",
                "status": "RESOURCE_EXHAUSTED",
                "details": [
                    {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "37s"}
                ],
            }
        },
    )


@pytest.mark.parametrize("stream", [False, True])
async def test_a_rate_limit_is_an_error_response_with_the_retry_delay_and_no_key(
    server: FakeGemini, llm: GeminiModel, name: str, stream: bool
) -> None:
    server.script(name, rate_limited())

    (response,) = await collect(llm, LlmRequest(contents=[Content.user("Hi")]), stream=stream)

    assert response.error_code == "http_429"
    assert response.finish_reason == "error"
    assert response.error_message == "Quota exceeded for key **********."
    assert response.retry_after == 37


async def test_an_overload_with_retry_after_says_when_to_try_again(
    server: FakeGemini, llm: GeminiModel, name: str
) -> None:
    error = {"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}
    server.script(name, Reply(status=503, body=error, headers={"Retry-After": "12"}))

    (response,) = await collect(llm, LlmRequest(contents=[Content.user("Hi")]))

    assert (response.error_code, response.retry_after) == ("http_503", 12)
    assert response.error_message == "The model is overloaded."


@pytest.mark.parametrize(
    ("reply", "code"),
    [
        (
            Reply(
                status=503,
                body={"error": {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}},
            ),
            "http_503",
        ),
        (Reply(status=500, raw=b"upstream broke"), "http_500"),
        (Reply(body={"promptFeedback": {"blockReason": "SAFETY"}}), "prompt_blocked"),
        (Turn(finish="MALFORMED_FUNCTION_CALL"), "malformed_function_call"),
        (Reply(raw=b"not json"), "invalid_response"),
    ],
)
async def test_provider_failures_are_error_responses(
    server: FakeGemini, llm: GeminiModel, name: str, reply: Turn | Reply, code: str
) -> None:
    server.script(name, reply)

    (response,) = await collect(llm, LlmRequest(contents=[Content.user("Hi")]))

    assert response.error_code == code
    assert response.error_message


async def test_a_blocked_answer_is_a_content_filter_finish(
    server: FakeGemini, llm: GeminiModel, name: str
) -> None:
    server.script(name, Turn(finish="SAFETY"))
    (response,) = await collect(llm, LlmRequest(contents=[Content.user("Hi")]))
    assert (response.finish_reason, response.error_code) == ("content_filter", None)


async def test_an_error_event_in_a_stream_ends_it_as_an_error(
    server: FakeGemini, llm: GeminiModel, name: str
) -> None:
    server.script(
        name, Reply(events=[{"error": {"code": 500, "message": "internal", "status": "INTERNAL"}}])
    )
    responses = await collect(llm, LlmRequest(contents=[Content.user("Hi")]), stream=True)
    assert responses[-1].error_code == "http_500"  # as the same error over HTTP


async def test_an_unreachable_server_raises_connection_error_without_the_key() -> None:
    async with GeminiModel("m", base_url="http://127.0.0.1:9/v1beta", api_key=KEY) as model:
        with pytest.raises(toolsets.ConnectionError) as caught:
            await collect(model, LlmRequest(contents=[Content.user("Hi")]))
    assert "SECRET" not in str(caught.value)


# -- construction --------------------------------------------------------------------


def test_the_key_and_base_url_come_from_the_environment_and_are_never_shown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", KEY)
    monkeypatch.setenv("GEMINI_BASE_URL", "http://user:SECRET@127.0.0.1:9/v1beta")
    monkeypatch.setenv("GEMINI_MODEL", "models/gemini-2.5-flash")
    model = GeminiModel()
    assert model.model == "gemini-2.5-flash"
    assert model.base_url == "http://127.0.0.1:9/v1beta"
    assert "SECRET" not in repr(model)
    assert "AIza" not in repr(vars(model))
    assert model._request_headers(stream=False)["x-goog-api-key"] == KEY


def test_a_model_without_a_name_or_with_a_bad_option_is_refused() -> None:
    with pytest.raises(ValueError, match="GEMINI_MODEL"):
        GeminiModel()
    with pytest.raises(ValueError, match="http"):
        GeminiModel("m", base_url="ftp://example.com")
    with pytest.raises(ValueError, match="x-goog-api-key") as caught_url:
        GeminiModel("m", base_url="https://example.com/v1beta?key=SECRET")
    assert "SECRET" not in str(caught_url.value)
    with pytest.raises(ValueError, match="schema_form"):
        GeminiModel("m", schema_form="xml")  # type: ignore[arg-type]
    with pytest.raises(toolsets.AuthError) as caught:
        GeminiModel("m", api_key=KEY + "\n")
    assert "SECRET" not in str(caught.value)


async def test_a_client_passed_in_is_used_and_left_open(server: FakeGemini, name: str) -> None:
    server.script(name, Turn(text="ok"))
    async with httpx2.AsyncClient(timeout=10) as client:
        async with GeminiModel(name, base_url=server.base_url, http_client=client) as model:
            await collect(model, LlmRequest(contents=[Content.user("Hi")]))
        assert not client.is_closed
    assert "x-goog-api-key" not in server.requests(name)[0].headers


# -- through the agent loop ----------------------------------------------------------


def weather_tools(seen: list[str]) -> list[Any]:
    @toolsets.tool
    def get_weather(city: str) -> dict[str, Any]:
        """The weather in a city."""
        seen.append(city)
        if city == "Atlantis":
            raise toolsets.ToolCallError("no such city", tool_name="get_weather")
        return {"city": city, "sky": "sunny"}

    @toolsets.tool(requires_confirmation=True)
    def book_trip(city: str) -> str:
        """Book a trip."""
        seen.append(f"booked {city}")
        return "booked"

    return [get_weather, book_trip]


@pytest.mark.parametrize("stream", [False, True])
async def test_the_agent_calls_a_tool_and_sends_its_thought_signature_back(
    server: FakeGemini, llm: GeminiModel, name: str, stream: bool
) -> None:
    seen: list[str] = []
    server.script(
        name,
        Turn(
            thought="Need the weather.",
            calls=[("get_weather", {"city": "Paris"})],
            signature=SIGNATURE,
        ),
        Turn(text="It is sunny in Paris."),
    )
    runner = Runner(LlmAgent("assistant", llm, tools=weather_tools(seen)))

    session_id, events = await run(runner, "Weather in Paris?", stream=stream)

    assert seen == ["Paris"]
    assert events[-1].text == "It is sunny in Paris."
    stored = await runner.session_service.get_session(
        app_name=runner.app_name, user_id="u", session_id=session_id
    )
    assert stored is not None
    (signed,) = [p for e in stored.events if e.content for p in e.content.parts if p.function_call]
    assert signed.provider_data == {"gemini": {"thoughtSignature": SIGNATURE}}
    second = server.requests(name)[1].body["contents"]
    assert [c["role"] for c in second] == ["user", "model", "user"]
    thought, call = second[1]["parts"]
    assert thought == {"text": "Need the weather.", "thought": True}
    assert call["thoughtSignature"] == SIGNATURE
    assert call["functionCall"] == {"name": "get_weather", "args": {"city": "Paris"}}
    (answer,) = second[2]["parts"]
    assert answer["functionResponse"] == {
        "name": "get_weather",
        "response": {"city": "Paris", "sky": "sunny"},
    }


async def test_in_the_parameters_form_entries_and_json_text_come_back_as_the_objects_they_hold(
    server: FakeGemini, name: str
) -> None:
    seen: list[tuple[dict[str, str], dict[str, Any]]] = []

    @toolsets.tool
    def tag(labels: dict[str, str], payload: dict[str, Any]) -> str:
        """Tag a resource."""
        seen.append((labels, payload))
        return "tagged"

    entries = [{"key": "env", "value": "prod"}, {"key": "team", "value": "web"}]
    server.script(
        name,
        Turn(calls=[("tag", {"labels": entries, "payload": '{"size": 3, "tags": ["a"}'})]),
        Turn(calls=[("tag", {"labels": entries, "payload": '{"size": 3, "tags": ["a"]}'})]),
        Turn(text="Tagged."),
    )
    async with GeminiModel(
        name, base_url=server.base_url, api_key=KEY, schema_form="parameters"
    ) as llm:
        runner = Runner(LlmAgent("assistant", llm, tools=[tag]))
        _, events = await run(runner, "Tag it.")

    assert events[-1].text == "Tagged."
    assert seen == [({"env": "prod", "team": "web"}, {"size": 3, "tags": ["a"]})]
    first, second, third = server.requests(name)
    declared = first.body["tools"][0]["functionDeclarations"][0]["parameters"]["properties"]
    assert declared["labels"]["type"] == "ARRAY"
    assert declared["payload"]["type"] == "STRING"
    # The unreadable text was refused, naming the field; the tool did not run.
    (refused,) = second.body["contents"][2]["parts"]
    error = refused["functionResponse"]["response"]["error"]
    assert error.startswith("Invalid arguments, not sent: payload: not valid JSON")
    # The model's earlier calls go back as it made them: entries and JSON text.
    (unread,) = third.body["contents"][1]["parts"]
    assert unread["functionCall"]["args"]["payload"] == '{"size": 3, "tags": ["a"}'
    (call,) = third.body["contents"][3]["parts"]
    assert call["functionCall"]["args"]["labels"] == entries
    assert json.loads(call["functionCall"]["args"]["payload"]) == {"size": 3, "tags": ["a"]}


async def test_a_parallel_pair_runs_and_both_answers_go_back_with_gemini_s_ids(
    server: FakeGemini, llm: GeminiModel, name: str
) -> None:
    seen: list[str] = []
    server.script(
        name,
        Turn(
            calls=[("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Rome"})],
            call_ids=["g-1", "g-2"],
            signature=SIGNATURE,
        ),
        Turn(text="Both sunny."),
    )
    runner = Runner(LlmAgent("assistant", llm, tools=weather_tools(seen)))

    _, events = await run(runner, "Paris and Rome?")

    assert sorted(seen) == ["Paris", "Rome"]
    calls = next(e for e in events if e.function_calls).function_calls
    assert [c.id for c in calls] == ["g-1", "g-2"]
    second = server.requests(name)[1].body["contents"]
    assert [p["functionCall"]["id"] for p in second[1]["parts"]] == ["g-1", "g-2"]
    assert "thoughtSignature" in second[1]["parts"][0]
    assert "thoughtSignature" not in second[1]["parts"][1]
    answers = [p["functionResponse"] for p in second[2]["parts"]]
    assert [(a["id"], a["response"]["city"]) for a in answers] == [
        ("g-1", "Paris"),
        ("g-2", "Rome"),
    ]


async def test_a_tool_error_is_a_result_the_model_reads(
    server: FakeGemini, llm: GeminiModel, name: str
) -> None:
    server.script(name, Turn(calls=[("get_weather", {"city": "Atlantis"})]), Turn(text="Sorry."))
    runner = Runner(LlmAgent("assistant", llm, tools=weather_tools([])))

    _, events = await run(runner, "Atlantis?")

    assert events[-1].text == "Sorry."
    (answer,) = server.requests(name)[1].body["contents"][2]["parts"]
    assert "no such city" in answer["functionResponse"]["response"]["error"]
    assert "id" not in answer["functionResponse"]  # Gemini gave the call no id


async def test_a_confirmation_pauses_the_run_and_resuming_sends_the_answer(
    server: FakeGemini, llm: GeminiModel, name: str
) -> None:
    seen: list[str] = []
    server.script(
        name,
        Turn(calls=[("book_trip", {"city": "Oslo"})], signature=SIGNATURE),
        Turn(text="Booked."),
    )
    runner = Runner(LlmAgent("assistant", llm, tools=weather_tools(seen)))

    session_id, events = await run(runner, "Book Oslo")
    (request,) = events[-1].pending
    assert isinstance(request, ConfirmationRequest)
    assert request.tool_name == "book_trip"
    assert seen == []
    assert len(server.requests(name)) == 1
    with anyio.fail_after(10):
        resumed = [
            e
            async for e in runner.resume(
                user_id="u", session_id=session_id, confirmations={request.function_call_id: True}
            )
        ]

    assert seen == ["booked Oslo"]
    assert resumed[-1].text == "Booked."
    contents = server.requests(name)[1].body["contents"]
    assert contents[1]["parts"][0]["thoughtSignature"] == SIGNATURE
    assert contents[-1]["parts"][-1]["functionResponse"]["response"] == {"result": "booked"}


async def test_streaming_text_reaches_the_caller_as_partial_events(
    server: FakeGemini, llm: GeminiModel, name: str
) -> None:
    server.script(name, Turn(text="Hello from Gemini."))
    runner = Runner(LlmAgent("assistant", llm))

    _, events = await run(runner, "Hi", stream=True)

    partial = [e.text for e in events if e.partial]
    assert len(partial) == 2
    assert "".join(partial) == "Hello from Gemini."
    assert events[-1].text == "Hello from Gemini."
    assert not events[-1].partial


async def test_a_model_error_ends_the_run_with_its_code(
    server: FakeGemini, llm: GeminiModel, name: str
) -> None:
    server.script(name, rate_limited())
    runner = Runner(LlmAgent("assistant", llm))

    _, events = await run(runner, "Hi")

    assert events[-1].error_code == "http_429"
    assert "SECRET" not in (events[-1].error_message or "")


# -- Gemini's server-side tools --------------------------------------------------------

GROUNDING = {
    "webSearchQueries": ["weather paris today"],
    "groundingChunks": [
        {
            "web": {
                "uri": "https://vertexaisearch.cloud.google.com/grounding-api-redirect/abc",
                "title": "meteo.fr",
            }
        }
    ],
    "groundingSupports": [
        {
            "segment": {"startIndex": 0, "endIndex": 12, "text": "It is sunny"},
            "groundingChunkIndices": [0],
        }
    ],
    "searchEntryPoint": {"renderedContent": "<div>weather paris today</div>"},
}


@pytest.mark.parametrize("stream", [False, True])
async def test_google_search_is_asked_for_once_per_request_and_grounding_reaches_the_event(
    server: FakeGemini, llm: GeminiModel, name: str, stream: bool
) -> None:
    server.script(
        name,
        Turn(calls=[("get_weather", {"city": "Paris"})]),
        Turn(text="It is sunny.", grounding=GROUNDING),
    )
    tools = [google_search_tool(), url_context_tool(), google_search_tool(), *weather_tools([])]
    runner = Runner(LlmAgent("assistant", llm, tools=tools))

    _, events = await run(runner, "Weather in Paris?", stream=stream)

    for sent in server.requests(name):
        declared, *built_in = sent.body["tools"]
        assert [d["name"] for d in declared["functionDeclarations"]] == ["get_weather", "book_trip"]
        assert built_in == [{"google_search": {}}, {"url_context": {}}]
    final = events[-1]
    assert final.text == "It is sunny."
    assert final.grounding is not None
    assert final.grounding.queries == ("weather paris today",)
    assert [(s.uri.split("/")[2], s.title) for s in final.grounding.sources] == [
        ("vertexaisearch.cloud.google.com", "meteo.fr")
    ]
    assert final.grounding.search_entry_point == "<div>weather paris today</div>"
    assert final.grounding.raw["groundingMetadata"]["groundingSupports"]


async def test_code_execution_parts_reach_the_event_and_go_back_to_gemini(
    server: FakeGemini, llm: GeminiModel, name: str
) -> None:
    ran = [
        {"executableCode": {"language": "PYTHON", "code": "print(2 ** 10)"}},
        {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1024\n"}},
    ]
    server.script(name, Turn(text="Computing.", parts=ran), Turn(text="Still 1024."))
    runner = Runner(LlmAgent("assistant", llm, tools=[built_in_code_execution_tool()]))

    session_id, events = await run(runner, "2 to the 10th?")
    with anyio.fail_after(10):
        later = [e async for e in runner.run(user_id="u", session_id=session_id, message="Again?")]

    code, result = events[-1].code_executions
    assert code.executable_code == toolsets.ExecutableCode(code="print(2 ** 10)", language="PYTHON")
    assert result.code_execution_result == toolsets.CodeExecutionResult(
        outcome="OUTCOME_OK", output="1024\n"
    )
    assert events[-1].text == "Computing."
    assert later[-1].text == "Still 1024."
    second = server.requests(name)[1].body
    assert second["tools"] == [{"code_execution": {}}]
    assert second["contents"][1]["parts"][1:] == ran


async def test_a_server_side_tool_with_another_model_is_refused_naming_the_tool_and_model() -> None:
    model = OpenAIChatModel("gpt-test", base_url="http://127.0.0.1:9/v1")
    runner = Runner(LlmAgent("assistant", model, tools=[google_search_tool()]))
    session = await runner.create_session(user_id="u")

    with anyio.fail_after(10), pytest.raises(toolsets.ToolDefinitionError) as caught:
        async for _ in runner.run(user_id="u", session_id=session.id, message="Hi"):
            pass

    assert caught.value.tool_name == "google_search"
    assert "gpt-test" in str(caught.value)


async def test_a_server_side_tool_is_passive_and_not_callable() -> None:
    search = google_search_tool()
    assert search.declaration() is None
    result = await search.run({}, toolsets.ToolContext())
    assert isinstance(result, dict)
    assert "error" in result
