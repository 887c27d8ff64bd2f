"""AnthropicModel's own translation, beyond the scenarios every model passes
(``test_scenarios.py``): the exact Messages API requests it sends, the answers it reads,
its options. The network edge is an ``httpx2.MockTransport`` answering with recorded
response shapes of the documented wire format."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import httpx2
import pytest

import toolsets
from tests.models.scenarios import collect
from toolsets import (
    Content,
    FileData,
    FunctionCall,
    FunctionResponse,
    LlmRequest,
    Part,
    ToolDeclaration,
)
from toolsets.models import INVALID_JSON_KEY, AnthropicModel

pytestmark = pytest.mark.anyio

KEY = "sk-ant-test-SECRET-0123456789"

MESSAGE: dict[str, Any] = {
    "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5-20250929",
    "content": [{"type": "text", "text": "Hello!"}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {
        "input_tokens": 12,
        "cache_creation_input_tokens": 100,
        "cache_read_input_tokens": 30,
        "output_tokens": 6,
    },
}
"""A recorded shape of a Messages API answer."""


class Api:
    """The network edge: answers each request with the next scripted response and
    keeps the requests."""

    def __init__(self, *answers: httpx2.Response | Callable[[httpx2.Request], httpx2.Response]):
        self.answers = list(answers)
        self.requests: list[httpx2.Request] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        answer = self.answers.pop(0)
        return answer(request) if callable(answer) else answer

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(r.content) for r in self.requests]

    def model(self, **options: Any) -> AnthropicModel:
        client = httpx2.AsyncClient(transport=httpx2.MockTransport(self))
        return AnthropicModel("claude-test", http_client=client, **{"api_key": KEY, **options})


def sse(*events: dict[str, Any]) -> httpx2.Response:
    text = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
    return httpx2.Response(200, headers={"content-type": "text/event-stream"}, text=text)


# -- requests ------------------------------------------------------------------------


async def test_a_request_carries_the_version_the_key_and_max_tokens() -> None:
    api = Api(httpx2.Response(200, json=MESSAGE))

    async with api.model(api_key=KEY) as model:
        (response,) = await collect(model, LlmRequest(contents=[Content.user("Hi")]))

    (request,) = api.requests
    assert str(request.url) == "https://api.anthropic.com/v1/messages"
    assert request.headers["x-api-key"] == KEY
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in request.headers
    assert api.bodies[0] == {
        "model": "claude-test",
        "max_tokens": 4096,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}],
    }
    assert response.content is not None
    assert response.content.text == "Hello!"
    assert response.finish_reason == "stop"
    assert response.usage is not None
    # Tokens read from and written to the cache are part of the input.
    assert (response.usage.input_tokens, response.usage.output_tokens) == (142, 6)
    assert response.model_version == "claude-sonnet-4-5-20250929"


async def test_the_conversation_becomes_alternating_messages_with_results_first() -> None:
    api = Api(httpx2.Response(200, json=MESSAGE))
    request = LlmRequest(system_instruction="Be brief.")
    request.contents = [
        Content.user("What is in these?"),
        Content(
            role="user",
            parts=(Part(file_data=FileData(uri="https://x/a.pdf", mime_type="application/pdf")),),
        ),
        Content(
            role="model",
            parts=(
                Part(text="Thinking it over.", thought=True),
                Part(text="Looking."),
                Part(function_call=FunctionCall(name="lookup", args={"q": "a"})),
                Part(function_call=FunctionCall(name="lookup", args={"q": "b"}, id="toolu_b")),
            ),
        ),
        Content(
            role="tool",
            parts=(
                Part(function_response=FunctionResponse(name="lookup", response={"hits": 1})),
                Part(
                    function_response=FunctionResponse(
                        name="lookup", response={"error": "no index"}, id="toolu_b"
                    )
                ),
            ),
        ),
        Content(role="system", parts=(Part(text="Answer in French."),)),
        Content(role="user", parts=(Part(text="And?"), Part.from_bytes(b"notes", "text/plain"))),
        Content(role="model", parts=(Part(text=""),)),
        Content.user("Well?"),
    ]

    async with api.model() as model:
        await collect(model, request)

    body = api.bodies[0]
    assert body["system"] == "Be brief.\n\nAnswer in French."
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is in these?"},
                {"type": "document", "source": {"type": "url", "url": "https://x/a.pdf"}},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Looking."},
                {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"q": "a"}},
                {"type": "tool_use", "id": "toolu_b", "name": "lookup", "input": {"q": "b"}},
            ],
        },
        {
            "role": "user",
            "content": [
                # A result without an id answers the first call of its name waiting.
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": '{"hits": 1}'},
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_b",
                    "content": '{"error": "no index"}',
                    "is_error": True,
                },
                {"type": "text", "text": "And?"},
                {
                    "type": "document",
                    "source": {"type": "text", "media_type": "text/plain", "data": "notes"},
                },
                # The empty model turn is left out: the user's turns are joined.
                {"type": "text", "text": "Well?"},
            ],
        },
    ]


async def test_a_text_result_goes_as_it_is_and_an_empty_one_without_content() -> None:
    api = Api(httpx2.Response(200, json=MESSAGE))
    calls = (FunctionCall(name="a", id="toolu_a"), FunctionCall(name="b", id="toolu_b"))
    request = LlmRequest(
        contents=[
            Content.user("Go"),
            Content(role="model", parts=tuple(Part(function_call=c) for c in calls)),
            Content(
                role="tool",
                parts=(
                    Part(
                        function_response=FunctionResponse(name="a", response="done", id="toolu_a")
                    ),
                    Part(function_response=FunctionResponse(name="b", response="", id="toolu_b")),
                ),
            ),
        ]
    )

    async with api.model() as model:
        await collect(model, request)

    assert api.bodies[0]["messages"][-1]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_a", "content": "done"},
        {"type": "tool_result", "tool_use_id": "toolu_b"},
    ]


async def test_inline_data_the_api_cannot_take_is_refused_before_anything_is_sent() -> None:
    api = Api()
    request = LlmRequest(
        contents=[Content(role="user", parts=(Part.from_bytes(b"RIFF", "audio/wav"),))]
    )

    async with api.model() as model:
        with pytest.raises(ValueError, match="audio/wav"):
            await collect(model, request)

    assert api.requests == []


async def test_config_passes_through_the_request_model_wins_and_a_forced_tool_is_renamed() -> None:
    api = Api(httpx2.Response(200, json=MESSAGE))
    request = LlmRequest(
        model="claude-other",
        contents=[Content.user("Hi")],
        config={
            "max_tokens": 50,
            "temperature": 0.2,
            "top_k": 5,
            "stop_sequences": ["END"],
            "tool_choice": {"type": "tool", "name": "weather/get"},
            "extra_body": {"thinking": {"type": "disabled"}},
        },
    )
    request.declarations = {"weather/get": ToolDeclaration(name="weather/get")}

    async with api.model(max_tokens=100) as model:
        await collect(model, request)

    body = api.bodies[0]
    assert body["model"] == "claude-other"
    assert (body["max_tokens"], body["temperature"], body["top_k"]) == (50, 0.2, 5)
    assert body["stop_sequences"] == ["END"]
    assert body["thinking"] == {"type": "disabled"}
    assert body["tool_choice"] == {"type": "tool", "name": body["tools"][0]["name"]}
    assert body["tools"][0]["name"] != "weather/get"


@pytest.mark.parametrize(
    "config", [{"temprature": 0.1}, {"thinking": {"type": "enabled"}}, {"extra_body": 1}]
)
async def test_an_unknown_config_key_is_refused_before_anything_is_sent(
    config: dict[str, Any],
) -> None:
    api = Api()

    async with api.model() as model:
        with pytest.raises(ValueError, match=next(iter(config))):
            await collect(model, LlmRequest(contents=[Content.user("Hi")], config=config))

    assert api.requests == []


# -- answers -------------------------------------------------------------------------


async def test_property_names_made_legal_are_mapped_back_in_the_calls_arguments() -> None:
    declaration = ToolDeclaration(
        name="search",
        parameters={"type": "object", "properties": {"$filter": {"type": "string"}}},
    )

    def call_with_the_offered_names(request: httpx2.Request) -> httpx2.Response:
        tool = json.loads(request.content)["tools"][0]
        (legal,) = tool["input_schema"]["properties"]
        block = {"type": "tool_use", "id": "toolu_1", "name": tool["name"], "input": {legal: "x"}}
        return httpx2.Response(200, json={**MESSAGE, "content": [block], "stop_reason": "tool_use"})

    api = Api(call_with_the_offered_names)
    request = LlmRequest(contents=[Content.user("Find x")])
    request.declarations = {"search": declaration}

    async with api.model() as model:
        (response,) = await collect(model, request)

    assert response.content is not None
    assert response.content.function_calls == (
        FunctionCall(name="search", args={"$filter": "x"}, id="toolu_1"),
    )
    assert response.finish_reason == "tool_calls"


async def test_thinking_comes_back_as_thought_parts_streamed_or_not() -> None:
    thinking = {"type": "thinking", "thinking": "Hmm.", "signature": "sig"}
    events: list[dict[str, Any]] = [
        {
            "type": "message_start",
            "message": {**MESSAGE, "content": [], "usage": {"input_tokens": 3}},
        },
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "thinking", "thinking": ""},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "thinking_delta", "thinking": "Hmm."},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "signature_delta", "signature": "s"},
        },
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "text_delta", "text": "Yes."},
        },
        {"type": "content_block_stop", "index": 1},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": 9},
        },
        {"type": "message_stop"},
    ]
    api = Api(
        httpx2.Response(
            200, json={**MESSAGE, "content": [thinking, {"type": "text", "text": "Yes."}]}
        ),
        sse(*events),
    )

    async with api.model() as model:
        (whole,) = await collect(model, LlmRequest(contents=[Content.user("?")]))
        *partials, streamed = await collect(
            model, LlmRequest(contents=[Content.user("?")]), stream=True
        )

    expected = (Part(text="Hmm.", thought=True), Part(text="Yes."))
    assert whole.content is not None
    assert tuple(whole.content.parts) == expected
    assert streamed.content is not None
    assert tuple(streamed.content.parts) == expected
    assert [p.content.parts[0].thought for p in partials if p.content] == [True, False]
    assert streamed.usage is not None
    assert (streamed.usage.input_tokens, streamed.usage.output_tokens) == (3, 9)


async def test_a_tool_use_streamed_with_broken_json_reaches_the_loop_as_invalid_json() -> None:
    start = {"type": "tool_use", "id": "toolu_1", "name": "ping", "input": {}}
    api = Api(
        sse(
            {"type": "message_start", "message": {**MESSAGE, "content": []}},
            {"type": "content_block_start", "index": 0, "content_block": start},
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": '{"a": '},
            },
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use"},
                "usage": {"output_tokens": 2},
            },
            {"type": "message_stop"},
        )
    )
    request = LlmRequest(contents=[Content.user("Ping")])
    request.declarations = {"ping": ToolDeclaration(name="ping")}

    async with api.model() as model:
        (response,) = await collect(model, request, stream=True)

    assert response.content is not None
    assert response.content.function_calls == (
        FunctionCall(name="ping", args={INVALID_JSON_KEY: '{"a": '}, id="toolu_1"),
    )


@pytest.mark.parametrize(
    ("answer", "code"),
    [
        (httpx2.Response(200, text="<html>"), "invalid_response"),
        (httpx2.Response(200, json={"type": "message"}), "invalid_response"),
        (
            httpx2.Response(
                200, json={"type": "error", "error": {"type": "api_error", "message": "x"}}
            ),
            "http_500",  # an api_error, coded as the same error over HTTP
        ),
        (
            httpx2.Response(
                200, json={"type": "error", "error": {"type": "new_error", "message": "x"}}
            ),
            "new_error",  # a type the model does not know: as the provider sent it
        ),
        (
            httpx2.Response(
                200, headers={"content-type": "text/event-stream"}, text="data: nope\n\n"
            ),
            "invalid_response",
        ),
    ],
)
async def test_an_answer_that_cannot_be_read_is_an_error_response(
    answer: httpx2.Response, code: str
) -> None:
    api = Api(answer)

    async with api.model() as model:
        responses = await collect(model, LlmRequest(contents=[Content.user("Hi")]), stream=True)

    assert responses[-1].error_code == code
    assert responses[-1].finish_reason == "error"


async def test_a_stream_request_answered_in_one_piece_is_read_whole() -> None:
    api = Api(httpx2.Response(200, json=MESSAGE))

    async with api.model() as model:
        (response,) = await collect(model, LlmRequest(contents=[Content.user("Hi")]), stream=True)

    assert api.bodies[0]["stream"] is True
    assert api.requests[0].headers["accept"] == "text/event-stream"
    assert response.content is not None
    assert response.content.text == "Hello!"


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after": "20"}, 20.0),
        ({"retry-after-ms": "1500", "retry-after": "2"}, 1.5),
        ({"retry-after": "soon"}, None),
        ({"retry-after": "-3"}, 0.0),
        ({}, None),
    ],
)
async def test_retry_after_is_read_in_seconds(
    headers: dict[str, str], expected: float | None
) -> None:
    error = {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}
    api = Api(httpx2.Response(429, json=error, headers=headers))

    async with api.model() as model:
        (response,) = await collect(model, LlmRequest(contents=[Content.user("Hi")]))

    assert response.retry_after == expected
    assert response.error_code == "http_429"


async def test_an_overload_has_one_code_over_http_and_in_a_stream() -> None:
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    api = Api(httpx2.Response(529, json=error), sse(error))

    async with api.model() as model:
        (over_http,) = await collect(model, LlmRequest(contents=[Content.user("Hi")]))
        (in_stream,) = await collect(model, LlmRequest(contents=[Content.user("Hi")]), stream=True)

    assert over_http.error_code == in_stream.error_code == "http_529"
    assert over_http.error_message == in_stream.error_message == "Overloaded"


async def test_retry_after_as_an_http_date_is_the_seconds_until_then() -> None:
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=120), usegmt=True)
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    api = Api(httpx2.Response(529, json=error, headers={"retry-after": when}))

    async with api.model() as model:
        (response,) = await collect(model, LlmRequest(contents=[Content.user("Hi")]))

    assert response.error_code == "http_529"
    assert response.retry_after is not None
    assert 100 < response.retry_after <= 120


# -- options -------------------------------------------------------------------------


async def test_defaults_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "https://proxy.example/anthropic/")
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_MODEL", "claude-env")
    api = Api(httpx2.Response(200, json=MESSAGE))

    async with AnthropicModel(
        http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(api))
    ) as model:
        await collect(model, LlmRequest(contents=[Content.user("Hi")]))

    assert model.model == "claude-env"
    assert model.base_url == "https://proxy.example/anthropic"
    assert str(api.requests[0].url) == "https://proxy.example/anthropic/v1/messages"
    assert api.requests[0].headers["x-api-key"] == KEY
    assert KEY not in repr(model) + repr(vars(model))


async def test_extra_headers_are_sent_and_may_set_another_version() -> None:
    api = Api(httpx2.Response(200, json=MESSAGE))
    headers = {"anthropic-beta": "tools-2025", "Anthropic-Version": "2099-01-01"}

    async with api.model(headers=headers) as model:
        await collect(model, LlmRequest(contents=[Content.user("Hi")]))

    assert api.requests[0].headers["anthropic-beta"] == "tools-2025"
    assert api.requests[0].headers.get_list("anthropic-version") == ["2099-01-01"]


async def test_an_injected_client_is_used_and_never_closed() -> None:
    api = Api(httpx2.Response(200, json=MESSAGE), httpx2.Response(200, json=MESSAGE))

    async with httpx2.AsyncClient(transport=httpx2.MockTransport(api)) as client:
        async with AnthropicModel("claude-test", http_client=client, api_key=KEY) as model:
            await collect(model, LlmRequest(contents=[Content.user("Hi")]))
        assert not client.is_closed
        await collect(model, LlmRequest(contents=[Content.user("Again")]))

    assert len(api.requests) == 2


def test_no_model_anywhere_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="ANTHROPIC_MODEL") as info:
        AnthropicModel()

    assert "AnthropicModel(model=...)" in str(info.value)


@pytest.mark.parametrize("max_tokens", [0, -1, True, 1.5])
def test_max_tokens_must_be_a_positive_integer(max_tokens: Any) -> None:
    with pytest.raises(ValueError, match="max_tokens"):
        AnthropicModel("m", max_tokens=max_tokens)


@pytest.mark.parametrize("key", [KEY + "\n", KEY.replace("test", "tëst")])
def test_an_api_key_no_header_can_carry_is_refused_without_showing_it(key: str) -> None:
    with pytest.raises(toolsets.AuthError) as caught:
        AnthropicModel("m", api_key=key)

    assert caught.value.scheme_name == "x-api-key"
    assert "SECRET" not in str(caught.value) + repr(caught.value)


async def test_files_go_as_images_and_documents_by_url_or_inline_and_others_by_name() -> None:
    redacted = {"type": "redacted_thinking", "data": "xyz"}
    api = Api(httpx2.Response(200, json={**MESSAGE, "content": [redacted, *MESSAGE["content"]]}))
    parts = (
        Part(file_data=FileData(uri="https://x/cat.jpg", mime_type="image/jpeg")),
        Part(file_data=FileData(uri="gs://bucket/data.csv")),
        Part.from_bytes(b"%PDF-1.7", "application/pdf"),
        Part.from_bytes(b"GIF89a", "image/gif"),
    )

    async with api.model() as model:
        (response,) = await collect(model, LlmRequest(contents=[Content(role="user", parts=parts)]))

    assert api.bodies[0]["messages"][0]["content"] == [
        {"type": "image", "source": {"type": "url", "url": "https://x/cat.jpg"}},
        {"type": "text", "text": "[file: gs://bucket/data.csv]"},
        {
            "type": "document",
            "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0xLjc="},
        },
        {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/gif", "data": "R0lGODlh"},
        },
    ]
    # Redacted thinking is nothing the loop can use or show.
    assert response.content is not None
    assert tuple(response.content.parts) == (Part(text="Hello!"),)
