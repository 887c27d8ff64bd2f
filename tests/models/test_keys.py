"""A model with no API key for its provider's own API refuses before anything is sent,
saying which parameter and environment variable give the key; a server elsewhere (a local
OpenAI-compatible one, a proxy that adds the key) and a key given another way (a header,
a client that authenticates) are sent to as before. The network edge is a MockTransport
that records what would have gone out."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest

from toolsets import AuthError, Content, LlmRequest
from toolsets.models import AnthropicModel, GeminiModel, OpenAIChatModel, OpenAIResponsesModel

pytestmark = pytest.mark.anyio

MODELS: dict[str, tuple[type[Any], str, tuple[str, ...]]] = {
    "openai": (OpenAIChatModel, "authorization", ("OPENAI_API_KEY",)),
    "openai-responses": (OpenAIResponsesModel, "authorization", ("OPENAI_API_KEY",)),
    "anthropic": (AnthropicModel, "x-api-key", ("ANTHROPIC_API_KEY",)),
    "gemini": (GeminiModel, "x-goog-api-key", ("GEMINI_API_KEY", "GOOGLE_API_KEY")),
}


class Recorder:
    def __init__(self) -> None:
        self.requests: list[httpx2.Request] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        return httpx2.Response(401, json={"error": {"message": "no key"}})

    def client(self, **options: Any) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(transport=httpx2.MockTransport(self), **options)


async def ask(model: Any, *, stream: bool = False) -> None:
    async for _ in model.generate(LlmRequest(contents=[Content.user("Hi")]), stream=stream):
        pass


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("provider", list(MODELS))
async def test_no_key_for_the_providers_own_api_is_refused_before_sending(
    provider: str, stream: bool
) -> None:
    cls, _, variables = MODELS[provider]
    recorder = Recorder()

    async with cls("m", http_client=recorder.client()) as model:
        with pytest.raises(AuthError) as caught:
            await ask(model, stream=stream)

    message = str(caught.value)
    assert f"{cls.__name__}(api_key=...)" in message
    for variable in variables:
        assert f"${variable}" in message
    assert "nothing was sent" in message
    assert recorder.requests == []


@pytest.mark.parametrize("provider", list(MODELS))
async def test_a_key_from_the_environment_is_enough(
    provider: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    cls, header, variables = MODELS[provider]
    monkeypatch.setenv(variables[-1], "k-env")
    recorder = Recorder()

    async with cls("m", http_client=recorder.client()) as model:
        await ask(model)

    assert "k-env" in recorder.requests[0].headers[header]


@pytest.mark.parametrize("provider", list(MODELS))
async def test_a_server_elsewhere_is_sent_to_without_a_key(provider: str) -> None:
    cls, header, _ = MODELS[provider]
    recorder = Recorder()

    async with cls("m", base_url="http://127.0.0.1:8080/v1", http_client=recorder.client()) as m:
        await ask(m)

    assert len(recorder.requests) == 1
    assert header not in recorder.requests[0].headers


@pytest.mark.parametrize("where", ["headers", "client headers", "client auth"])
@pytest.mark.parametrize("provider", list(MODELS))
async def test_a_key_given_another_way_is_sent_as_given(provider: str, where: str) -> None:
    cls, header, _ = MODELS[provider]
    recorder = Recorder()
    given = {header: "Bearer k-given" if header == "authorization" else "k-given"}
    options: dict[str, Any] = {}
    client_options: dict[str, Any] = {}
    if where == "headers":
        options["headers"] = given
    elif where == "client headers":
        client_options["headers"] = given
    else:
        client_options["auth"] = lambda request: request

    async with cls("m", http_client=recorder.client(**client_options), **options) as model:
        await ask(model)

    assert len(recorder.requests) == 1
    if where != "client auth":
        assert "k-given" in recorder.requests[0].headers[header]
