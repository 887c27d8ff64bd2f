"""OpenAIChatModel against a real HTTP server speaking the Chat Completions wire format.

The server is a Starlette app under uvicorn on 127.0.0.1, in a thread with its own event
loop. Each test talks to it under its own model name, which selects that test's scripted
replies and the requests recorded for it.
"""

from __future__ import annotations

import json
import re
import socket
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx2
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

import toolsets
from tests.models.scenarios import collect, serve
from toolsets import (
    Content,
    FunctionCall,
    FunctionResponse,
    LlmRequest,
    Part,
    ToolDeclaration,
)
from toolsets.models import INVALID_JSON_KEY, Llm, LlmResponse, OpenAIChatModel

pytestmark = pytest.mark.anyio

LEGAL = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
KEY = "sk-test-SECRET-0123456789"


# -- the fake provider ---------------------------------------------------------------


@dataclass(frozen=True)
class Reply:
    """One scripted answer: a JSON body, or SSE events (each a JSON-encodable chunk or a
    raw data string)."""

    status: int = 200
    body: Any = None
    events: Sequence[Any] | None = None
    raw: bytes | None = None


@dataclass(frozen=True)
class Received:
    headers: dict[str, str]
    body: dict[str, Any]
    path: str = ""
    query: str = ""


@dataclass
class FakeOpenAI:
    """A fake OpenAI API: each request answered with the next reply scripted for its
    model, at ``/v1/chat/completions`` (and at ``/v1/responses``, for the command line's
    ``--model-api responses``: its replies are Responses API bodies)."""

    base_url: str = ""
    scripts: dict[str, deque[Reply | Callable[[dict[str, Any]], Reply]]] = field(
        default_factory=dict
    )
    received: dict[str, list[Received]] = field(default_factory=dict)

    def script(self, model: str, *replies: Reply | Callable[[dict[str, Any]], Reply]) -> None:
        self.scripts[model] = deque(replies)

    def requests(self, model: str) -> list[Received]:
        return self.received.get(model, [])

    async def answer(self, request: Request) -> Response:
        body = await request.json()
        model = body["model"]
        self.received.setdefault(model, []).append(
            Received(dict(request.headers), body, request.url.path, request.url.query)
        )
        scripted = self.scripts[model].popleft()
        reply = scripted(body) if callable(scripted) else scripted
        if reply.raw is not None:
            return Response(reply.raw, status_code=reply.status, media_type="text/plain")
        if reply.events is None:
            return JSONResponse(reply.body, status_code=reply.status)
        return StreamingResponse(_sse(reply.events), media_type="text/event-stream")


BREAK = object()
"""An event that makes the server drop the connection mid-stream."""


async def _sse(events: Sequence[Any]) -> AsyncIterator[str]:
    for event in events:
        if event is BREAK:
            raise RuntimeError("scripted disconnect")
        data = event if isinstance(event, str) else json.dumps(event)
        frame = f"data: {data}\n\n"
        # Split every frame in two, so the client must reassemble events across reads.
        half = len(frame) // 2
        yield frame[:half]
        yield frame[half:]
    yield "data: [DONE]\n\n"


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI()
    app = Starlette(
        routes=[
            Route("/v1/chat/completions", fake.answer, methods=["POST"]),
            Route("/v1/responses", fake.answer, methods=["POST"]),
        ]
    )
    with serve(app) as root:
        fake.base_url = f"{root}/v1"
        yield fake


@pytest.fixture(autouse=True)
def _no_openai_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def name(request: pytest.FixtureRequest) -> str:
    """A model name unique to this test (and backend)."""
    return re.sub(r"[^A-Za-z0-9_-]", "-", request.node.name)


@pytest.fixture
async def llm(server: FakeOpenAI, name: str) -> AsyncIterator[OpenAIChatModel]:
    async with OpenAIChatModel(name, base_url=server.base_url, timeout=10) as model:
        yield model


def completion(
    *,
    content: str | None = None,
    tool_calls: list[dict[str, Any]] | None = None,
    finish_reason: str = "stop",
    model: str = "gpt-test-2025",
    usage: dict[str, int] | None = None,
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1700000000,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": usage or {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14},
    }


def tool_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-2",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": "gpt-test-2025",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
        "usage": None,
    }


WEATHER = ToolDeclaration(
    name="weather.service/get:current",
    description="Current weather.",
    parameters={
        "type": "object",
        "properties": {"city": {"$ref": "#/$defs/City"}},
        "required": ["city"],
        "$defs": {"City": {"type": "string", "description": "A city name."}},
    },
)
LONG = ToolDeclaration(name="mcp/" + "very_long_server_name." * 5 + "lookup")


# -- tests ---------------------------------------------------------------------------


async def test_a_text_reply_is_one_complete_response(
    server: FakeOpenAI, llm: OpenAIChatModel, name: str
) -> None:
    server.script(name, Reply(body=completion(content="Hello there.")))

    responses = await collect(llm, LlmRequest(contents=[Content.user("Hi")]))

    assert len(responses) == 1
    (response,) = responses
    assert response.partial is False
    assert response.content is not None
    assert response.content.role == "model"
    assert response.content.text == "Hello there."
    assert response.content.function_calls == ()
    assert response.finish_reason == "stop"
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (11, 3)
    assert response.model_version == "gpt-test-2025"
    assert response.error_code is None
    (received,) = server.requests(name)
    assert received.body == {"model": name, "messages": [{"role": "user", "content": "Hi"}]}
    assert "authorization" not in received.headers


async def test_the_model_implements_the_llm_protocol(llm: OpenAIChatModel, name: str) -> None:
    assert isinstance(llm, Llm)
    assert llm.model == name


async def test_a_tool_call_round_trips_with_legal_names_on_the_wire(
    server: FakeOpenAI, llm: OpenAIChatModel, name: str
) -> None:
    def call_what_was_offered(body: dict[str, Any]) -> Reply:
        # Like a real model: call the tools by the names they were offered under.
        offered = [t["function"]["name"] for t in body["tools"]]
        calls = [
            tool_call("call_a", offered[0], '{"city": "Paris"}'),
            tool_call("call_b", offered[1], "{}"),
        ]
        return Reply(body=completion(tool_calls=calls, finish_reason="tool_calls"))

    server.script(name, call_what_was_offered, Reply(body=completion(content="Sunny.")))
    request = LlmRequest(contents=[Content.user("Weather in Paris?")])
    request.declarations = {WEATHER.name: WEATHER, LONG.name: LONG}

    (first,) = await collect(llm, request)

    tools = server.requests(name)[0].body["tools"]
    wire_names = [t["function"]["name"] for t in tools]
    assert all(LEGAL.match(n) for n in wire_names)
    assert len(set(wire_names)) == 2
    assert tools[0]["function"]["parameters"] == {
        "type": "object",
        "properties": {"city": {"type": "string", "description": "A city name."}},
        "required": ["city"],
    }
    assert first.finish_reason == "tool_calls"
    assert first.content is not None
    assert first.content.function_calls == (
        FunctionCall(name=WEATHER.name, args={"city": "Paris"}, id="call_a"),
        FunctionCall(name=LONG.name, args={}, id="call_b"),
    )

    request.contents += [
        first.content,
        Content(
            role="tool",
            parts=(
                Part(
                    function_response=FunctionResponse(
                        name=WEATHER.name, response={"temp_c": 21}, id="call_a"
                    )
                ),
                Part(
                    function_response=FunctionResponse(name=LONG.name, response="ok", id="call_b")
                ),
            ),
        ),
    ]
    (second,) = await collect(llm, request)

    assert second.content is not None
    assert second.content.text == "Sunny."
    messages = server.requests(name)[1].body["messages"]
    assert messages[1:] == [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": wire_names[0], "arguments": '{"city": "Paris"}'},
                },
                {
                    "id": "call_b",
                    "type": "function",
                    "function": {"name": wire_names[1], "arguments": "{}"},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_a", "content": '{"temp_c": 21}'},
        {"role": "tool", "tool_call_id": "call_b", "content": '"ok"'},
    ]


async def test_the_conversation_is_translated_into_chat_messages(
    server: FakeOpenAI, llm: OpenAIChatModel, name: str
) -> None:
    server.script(name, Reply(body=completion(content="Done.")))
    request = LlmRequest(system_instruction="Be brief.")
    request.contents = [
        Content(
            role="user",
            parts=(Part(text="What is this?"), Part.from_bytes(b"\x89PNG", "image/png")),
        ),
        Content(
            role="model",
            parts=(
                Part(text="Let me think.", thought=True),
                Part(text="Looking it up."),
                Part(function_call=FunctionCall(name="lookup", args={"q": "png"})),
            ),
        ),
        Content(
            role="tool",
            parts=(Part(function_response=FunctionResponse(name="lookup", response=[1, "é"])),),
        ),
        Content(role="model", parts=(Part(text="It is a PNG."),)),
        Content.user("Thanks"),
    ]

    await collect(llm, request)

    (received,) = server.requests(name)
    assert received.body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is this?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw=="}},
            ],
        },
        {
            "role": "assistant",
            "content": "Looking it up.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "lookup", "arguments": '{"q": "png"}'},
                }
            ],
        },
        # The response had no id: it answers the pending call of its name.
        {"role": "tool", "tool_call_id": "call_1", "content": '[1, "é"]'},
        {"role": "assistant", "content": "It is a PNG."},
        {"role": "user", "content": "Thanks"},
    ]
    assert "tools" not in received.body


async def test_config_passes_through_and_the_request_model_wins(
    server: FakeOpenAI, llm: OpenAIChatModel, name: str
) -> None:
    other = name + "-other"
    server.script(other, Reply(body=completion(content="ok")))
    request = LlmRequest(
        model=other,
        contents=[Content.user("Hi")],
        config={
            "temperature": 0.2,
            "max_tokens": 50,
            "stop": ["\n"],
            "seed": 7,
            "tool_choice": {"type": "function", "function": {"name": WEATHER.name}},
            "extra_body": {"top_k": 40},
        },
    )
    request.declarations = {WEATHER.name: WEATHER}

    await collect(llm, request)

    (received,) = server.requests(other)
    body = received.body
    assert body["model"] == other
    assert (body["temperature"], body["max_tokens"], body["stop"], body["seed"]) == (
        0.2,
        50,
        ["\n"],
        7,
    )
    assert body["top_k"] == 40
    assert body["tool_choice"]["function"]["name"] == body["tools"][0]["function"]["name"]
    assert LEGAL.match(body["tool_choice"]["function"]["name"])
    assert server.requests(name) == []


async def test_an_unknown_config_key_is_refused_before_anything_is_sent(
    server: FakeOpenAI, llm: OpenAIChatModel, name: str
) -> None:
    request = LlmRequest(contents=[Content.user("Hi")], config={"temprature": 0.1})

    with pytest.raises(ValueError, match="temprature"):
        await collect(llm, request)

    assert server.requests(name) == []


async def test_streaming_yields_text_chunks_then_the_whole_answer(
    server: FakeOpenAI, llm: OpenAIChatModel, name: str
) -> None:
    def stream_calls(body: dict[str, Any]) -> Reply:
        wire = body["tools"][0]["function"]["name"]
        first_call = {"index": 0, "id": "call_s1", "type": "function"}
        return Reply(
            events=[
                chunk({"role": "assistant", "content": ""}),
                chunk({"content": "Checking "}),
                chunk({"content": "the weather."}),
                chunk(
                    {"tool_calls": [{**first_call, "function": {"name": wire, "arguments": ""}}]}
                ),
                chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"ci'}}]}),
                chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'ty": "Oslo"}'}}]}),
                chunk(
                    {
                        "tool_calls": [
                            {
                                "index": 1,
                                "id": "call_s2",
                                "type": "function",
                                "function": {"name": wire, "arguments": '{"city": "Rome"}'},
                            }
                        ]
                    }
                ),
                chunk({}, finish_reason="tool_calls"),
                {
                    "id": "chatcmpl-2",
                    "object": "chat.completion.chunk",
                    "model": "gpt-test-2025",
                    "choices": [],
                    "usage": {"prompt_tokens": 30, "completion_tokens": 12, "total_tokens": 42},
                },
            ]
        )

    server.script(name, stream_calls)
    request = LlmRequest(contents=[Content.user("Weather in Oslo and Rome?")])
    request.declarations = {WEATHER.name: WEATHER}

    responses = await collect(llm, request, stream=True)

    *partials, final = responses
    assert [r.partial for r in partials] == [True, True]
    assert [r.content.text for r in partials if r.content] == ["Checking ", "the weather."]
    assert final.partial is False
    assert final.content is not None
    assert final.content.text == "Checking the weather."
    assert final.content.function_calls == (
        FunctionCall(name=WEATHER.name, args={"city": "Oslo"}, id="call_s1"),
        FunctionCall(name=WEATHER.name, args={"city": "Rome"}, id="call_s2"),
    )
    assert final.finish_reason == "tool_calls"
    assert final.usage is not None
    assert (final.usage.input_tokens, final.usage.output_tokens) == (30, 12)
    assert final.model_version == "gpt-test-2025"
    (received,) = server.requests(name)
    assert received.body["stream"] is True
    assert received.body["stream_options"] == {"include_usage": True}
    assert received.headers["accept"] == "text/event-stream"


async def test_a_server_that_answers_a_stream_request_in_one_piece_still_works(
    server: FakeOpenAI, llm: OpenAIChatModel, name: str
) -> None:
    server.script(name, Reply(body=completion(content="Whole.")))

    responses = await collect(llm, LlmRequest(contents=[Content.user("Hi")]), stream=True)

    assert [(r.partial, r.content.text if r.content else None) for r in responses] == [
        (False, "Whole.")
    ]


@pytest.mark.parametrize("stream", [False, True])
async def test_arguments_that_are_not_json_are_handed_on_under_the_invalid_json_key(
    server: FakeOpenAI, llm: OpenAIChatModel, name: str, stream: bool
) -> None:
    raw = '{"city": "Paris"'
    if stream:
        delta = {"tool_calls": [{"index": 0, **tool_call("call_x", "ping", raw)}]}
        server.script(name, Reply(events=[chunk(delta, finish_reason="tool_calls")]))
    else:
        calls = [tool_call("call_x", "ping", raw)]
        server.script(name, Reply(body=completion(tool_calls=calls, finish_reason="tool_calls")))
    request = LlmRequest(contents=[Content.user("Ping")])
    request.declarations = {"ping": ToolDeclaration(name="ping")}

    responses = await collect(llm, request, stream=stream)

    assert responses[-1].content is not None
    assert responses[-1].content.function_calls == (
        FunctionCall(name="ping", args={INVALID_JSON_KEY: raw}, id="call_x"),
    )


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(
    ("status", "message"),
    [(400, "Invalid schema for function 'x'."), (429, "Rate limit reached for requests.")],
)
async def test_an_http_error_is_an_error_response_with_the_providers_message(
    server: FakeOpenAI, llm: OpenAIChatModel, name: str, stream: bool, status: int, message: str
) -> None:
    error = {"error": {"message": message, "type": "invalid_request_error", "code": None}}
    server.script(name, Reply(status=status, body=error))

    responses = await collect(llm, LlmRequest(contents=[Content.user("Hi")]), stream=stream)

    assert len(responses) == 1
    assert responses[0].error_code == f"http_{status}"
    assert responses[0].error_message == message
    assert responses[0].finish_reason == "error"
    assert responses[0].content is None


async def test_an_error_body_that_is_not_json_is_shown_truncated(
    server: FakeOpenAI, llm: OpenAIChatModel, name: str
) -> None:
    server.script(name, Reply(status=502, raw=b"Bad gateway " + b"x" * 5000))

    (response,) = await collect(llm, LlmRequest(contents=[Content.user("Hi")]))

    assert response.error_code == "http_502"
    assert response.error_message is not None
    assert response.error_message.startswith("Bad gateway x")
    assert len(response.error_message) <= 1000


async def test_an_error_event_in_the_stream_is_an_error_response(
    server: FakeOpenAI, llm: OpenAIChatModel, name: str
) -> None:
    error = {"error": {"message": "The server is overloaded.", "code": "server_error"}}
    server.script(name, Reply(events=[chunk({"content": "Hel"}), error, chunk({"content": "x"})]))

    *partials, final = await collect(llm, LlmRequest(contents=[Content.user("Hi")]), stream=True)

    assert [r.partial for r in partials] == [True]
    assert (final.error_code, final.error_message) == ("server_error", "The server is overloaded.")
    assert final.partial is False


async def test_a_connection_dropped_mid_stream_raises_connection_error(
    server: FakeOpenAI, llm: OpenAIChatModel, name: str
) -> None:
    server.script(name, Reply(events=[chunk({"content": "Hel"}), BREAK]))
    seen: list[LlmResponse] = []

    async def read_all() -> None:
        with anyio.fail_after(10):
            request = LlmRequest(contents=[Content.user("Hi")])
            async for response in llm.generate(request, stream=True):
                seen.append(response)

    with pytest.raises(toolsets.ConnectionError) as info:
        await read_all()

    assert info.value.target == server.base_url
    assert isinstance(info.value.__cause__, httpx2.RemoteProtocolError)
    assert [r.content.text for r in seen if r.content] == ["Hel"]


async def test_a_base_url_with_a_query_keeps_it_on_the_wire_and_out_of_reprs_and_errors(
    server: FakeOpenAI, name: str
) -> None:
    # Azure-style roots carry the API version as a query; a key there must not be shown.
    server.script(name, Reply(body=completion(content="ok")))
    root = f"{server.base_url}?api-version=2024-06-01&api_key={KEY}"
    async with OpenAIChatModel(name, base_url=root, api_key=KEY) as model:
        await collect(model, LlmRequest(contents=[Content.user("Hi")]))

    (received,) = server.requests(name)
    assert received.path.endswith("/v1/chat/completions")
    assert received.query == f"api-version=2024-06-01&api_key={KEY}"
    assert model.base_url == server.base_url
    assert KEY not in repr(model)


async def test_a_server_that_never_answers_times_out_as_connection_error(name: str) -> None:
    # Listening but never accepting: the connection is made, the answer never comes.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)
        base_url = f"http://127.0.0.1:{silent.getsockname()[1]}/v1"
        async with OpenAIChatModel(name, base_url=base_url, timeout=0.3) as model:
            with pytest.raises(toolsets.ConnectionError) as info:
                await collect(model, LlmRequest(contents=[Content.user("Hi")]))

    assert info.value.target == base_url
    assert isinstance(info.value.__cause__, httpx2.TimeoutException)


async def test_defaults_come_from_the_environment(
    server: FakeOpenAI, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url + "/")
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_MODEL", name)
    server.script(name, Reply(body=completion(content="from env")))

    async with OpenAIChatModel() as model:
        (response,) = await collect(model, LlmRequest(contents=[Content.user("Hi")]))

    assert model.model == name
    assert model.base_url == server.base_url
    assert response.content is not None
    assert response.content.text == "from env"
    assert server.requests(name)[0].headers["authorization"] == f"Bearer {KEY}"


def test_no_model_anywhere_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="OPENAI_MODEL") as info:
        OpenAIChatModel(base_url="http://127.0.0.1:1/v1")

    assert "model=" in str(info.value)


@pytest.mark.parametrize("base_url", ["ftp://example.com/v1", "not a url"])
def test_a_base_url_that_is_not_http_is_refused(base_url: str) -> None:
    with pytest.raises(ValueError, match="base_url"):
        OpenAIChatModel("m", base_url=base_url)


async def test_an_injected_client_is_used_and_never_closed(server: FakeOpenAI, name: str) -> None:
    server.script(name, Reply(body=completion(content="one")), Reply(body=completion(content="2")))

    async with httpx2.AsyncClient(headers={"X-Injected": "yes"}) as client:
        async with OpenAIChatModel(name, base_url=server.base_url, http_client=client) as model:
            await collect(model, LlmRequest(contents=[Content.user("Hi")]))
        await model.aclose()

        assert not client.is_closed
        (response,) = await collect(model, LlmRequest(contents=[Content.user("Again")]))

    assert response.content is not None
    assert response.content.text == "2"
    assert [r.headers["x-injected"] for r in server.requests(name)] == ["yes", "yes"]


async def test_a_closed_model_opens_a_new_client_when_used_again(
    server: FakeOpenAI, name: str
) -> None:
    server.script(name, Reply(body=completion(content="a")), Reply(body=completion(content="b")))
    model = OpenAIChatModel(name, base_url=server.base_url, headers={"X-Team": "tools"})

    texts = []
    for _ in range(2):
        (response,) = await collect(model, LlmRequest(contents=[Content.user("Hi")]))
        assert response.content is not None
        texts.append(response.content.text)
        await model.aclose()

    assert texts == ["a", "b"]
    assert [r.headers["x-team"] for r in server.requests(name)] == ["tools", "tools"]


# -- the agent loop over the wire: bad arguments, and a turn that fails ------------------


def answered_like_openai(body: dict[str, Any]) -> Reply:
    """What OpenAI does with a conversation: refuse it (HTTP 400) when a tool call has
    no tool message answering it; otherwise answer with text."""
    called = [c["id"] for m in body["messages"] for c in m.get("tool_calls") or ()]
    answered = {m["tool_call_id"] for m in body["messages"] if m["role"] == "tool"}
    missing = [i for i in called if i not in answered]
    if missing:
        message = (
            "An assistant message with 'tool_calls' must be followed by tool messages "
            f"responding to each 'tool_call_id'. The following tool_call_ids did not have "
            f"response messages: {', '.join(missing)}"
        )
        return Reply(status=400, body={"error": {"message": message, "type": "invalid"}})
    return Reply(body=completion(content="All answered."))


def ping_tool(seen: list[Any]) -> Any:
    @toolsets.tool
    def ping(city: str = "") -> str:
        """Ping."""
        seen.append(city)
        return "pong"

    return ping


def calls_reply(*calls: tuple[str, str]) -> Reply:
    raw = [tool_call(f"call_{i}", tool, arguments) for i, (tool, arguments) in enumerate(calls)]
    return Reply(body=completion(tool_calls=raw, finish_reason="tool_calls"))


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        ('{"a":' * 500 + "1" + "}" * 500, "nested deeper than"),
        ("[" * 100_000, "nested deeper than"),
        ('{"city": "Paris"', "not valid JSON"),
        ("[1, 2]", "JSON object, not an array"),
        ('"just a string"', "JSON object, not a string"),
        ("42", "JSON object, not a number"),
        ('"\\"twice\\""', "JSON object, not a string"),
    ],
)
async def test_arguments_from_the_wire_no_tool_can_take_are_an_error_result_for_the_model(
    server: FakeOpenAI,
    llm: OpenAIChatModel,
    name: str,
    arguments: str,
    says: str,
    stream: bool,
) -> None:
    from toolsets.agent import LlmAgent, RunConfig, Runner

    seen: list[Any] = []
    if stream:
        delta = {"tool_calls": [{"index": 0, **tool_call("call_0", "ping", arguments)}]}
        first = Reply(events=[chunk(delta, finish_reason="tool_calls")])
    else:
        first = calls_reply(("ping", arguments))
    server.script(name, first, answered_like_openai)
    runner = Runner(LlmAgent("assistant", llm, tools=[ping_tool(seen)]))
    session = await runner.create_session(user_id="u")

    with anyio.fail_after(10):
        events = [
            e
            async for e in runner.run(
                user_id="u",
                session_id=session.id,
                message="Hi",
                run_config=RunConfig(streaming=stream),
            )
            if not e.partial
        ]

    assert seen == []
    (answer,) = [r for e in events for r in e.function_responses]
    assert isinstance(answer.response, dict)
    assert says in answer.response["error"]
    assert "Extra inputs" not in answer.response["error"]
    assert events[-1].text == "All answered."
    (tool_message,) = [m for m in server.requests(name)[1].body["messages"] if m["role"] == "tool"]
    assert len(tool_message["content"]) < 1_000


async def test_after_a_turn_that_failed_the_next_run_answers_every_call_on_the_wire(
    server: FakeOpenAI, llm: OpenAIChatModel, name: str
) -> None:
    from toolsets.agent import LlmAgent, Runner

    def broken(tool: Any, args: Any, ctx: Any) -> None:
        raise LookupError("a bug in a callback")

    seen: list[Any] = []
    server.script(
        name,
        calls_reply(("ping", '{"city": "Paris"}'), ("ping", '{"city": "Rome"}')),
        answered_like_openai,
    )
    runner = Runner(LlmAgent("assistant", llm, tools=[ping_tool(seen)], before_tool=broken))
    session = await runner.create_session(user_id="u")

    with anyio.fail_after(10), pytest.raises(LookupError):
        async for _ in runner.run(user_id="u", session_id=session.id, message="Hi"):
            pass
    with anyio.fail_after(10):
        events = [e async for e in runner.run(user_id="u", session_id=session.id, message="Go")]

    assert events[-1].text == "All answered."
    messages = server.requests(name)[1].body["messages"]
    answered = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
    assert answered == ["call_0", "call_1"]


@pytest.mark.parametrize("key", [KEY + "\n", "\t" + KEY, KEY.replace("test", "tëst")])
def test_an_api_key_no_header_can_carry_is_refused_without_showing_it(
    key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for given in ({"api_key": key}, {}):
        monkeypatch.setenv("OPENAI_API_KEY", key)
        with pytest.raises(toolsets.AuthError) as caught:
            OpenAIChatModel("m", base_url="http://127.0.0.1:9/v1", **given)
        assert caught.value.scheme_name == "bearer"
        assert "SECRET" not in str(caught.value) + repr(caught.value)
        assert caught.value.__cause__ is None


def test_the_api_key_is_in_no_repr_or_vars() -> None:
    model = OpenAIChatModel("m", api_key=KEY, base_url="http://127.0.0.1:9/v1")
    assert "SECRET" not in repr(model) + repr(vars(model))


@pytest.mark.parametrize("stream", [False, True])
async def test_a_body_nested_too_deep_to_read_is_an_invalid_response_not_a_crash(
    server: FakeOpenAI, llm: OpenAIChatModel, name: str, stream: bool
) -> None:
    deep = '{"x": ' + "[" * 100_000 + "]" * 100_000 + "}"
    if stream:
        server.script(name, Reply(events=[deep]))
    else:
        server.script(name, Reply(raw=deep.encode()))

    responses = await collect(llm, LlmRequest(contents=[Content.user("Hi")]), stream=stream)

    assert responses[-1].error_code == "invalid_response"
