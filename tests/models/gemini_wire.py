"""A local server speaking the Gemini API wire format, for tests.

`FakeGemini` is a Starlette app (served by `serve_fake_gemini` under uvicorn on
127.0.0.1, in a thread) answering ``POST /v1beta/models/{model}:generateContent`` and
``:streamGenerateContent?alt=sse``. Its interface is small, so a model-agnostic scenario
suite can drive it:

- ``script(model, *replies)``: what the next requests for ``model`` are answered with.
  A reply is a model-neutral `Turn` (text, calls, a thought signature...) that the fake
  writes as a Gemini response, whole or as SSE chunks as the request asks; a raw
  `Reply` (any status, body, headers, events); or a function of the request's body
  returning either.
- ``requests(model)``: the requests received for ``model`` (`Received`: headers, body,
  path, query), for assertions.

The response shapes follow the documented wire format (``candidates[0].content.parts``,
``finishReason``, ``usageMetadata``, ``modelVersion``, ``promptFeedback``, the error
object with ``google.rpc.RetryInfo``).
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.helpers import serve_app

MODEL_VERSION = "gemini-test-001"


@dataclass(frozen=True)
class Turn:
    """One model turn, said neutrally: what the fake's Gemini answers."""

    text: str = ""
    calls: Sequence[tuple[str, Mapping[str, Any]]] = ()
    """Function calls (provider name, arguments), in order."""
    call_ids: Sequence[str] | None = None
    """Ids for the calls, when Gemini gives them (by default it does not)."""
    thought: str = ""
    """A thought summary before the answer."""
    signature: str | None = None
    """A thought signature: on the first call, or (without calls) on an empty last part."""
    parts: Sequence[Mapping[str, Any]] = ()
    """Wire parts after the text (``executableCode``, ``inlineData``...)."""
    finish: str = "STOP"
    grounding: Mapping[str, Any] | None = None
    usage: Mapping[str, int] = field(
        default_factory=lambda: {
            "promptTokenCount": 11,
            "candidatesTokenCount": 3,
            "thoughtsTokenCount": 2,
            "totalTokenCount": 16,
        }
    )


@dataclass(frozen=True)
class Reply:
    """A raw answer: a JSON body, SSE events (each a JSON-encodable chunk or a raw data
    string), or raw bytes."""

    status: int = 200
    body: Any = None
    events: Sequence[Any] | None = None
    raw: bytes | None = None
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Received:
    headers: dict[str, str]
    body: dict[str, Any]
    path: str
    query: str
    stream: bool


Scripted = Turn | Reply | Callable[[dict[str, Any]], "Turn | Reply"]


def _parts(turn: Turn) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    if turn.thought:
        parts.append({"text": turn.thought, "thought": True})
    if turn.text:
        parts.append({"text": turn.text})
    parts.extend(dict(p) for p in turn.parts)
    for index, (name, args) in enumerate(turn.calls):
        call: dict[str, Any] = {"name": name, "args": dict(args)}
        if turn.call_ids is not None:
            call["id"] = turn.call_ids[index]
        part: dict[str, Any] = {"functionCall": call}
        if index == 0 and turn.signature:
            part["thoughtSignature"] = turn.signature
        parts.append(part)
    if turn.signature and not turn.calls:
        parts.append({"text": "", "thoughtSignature": turn.signature})
    return parts


def response_body(turn: Turn) -> dict[str, Any]:
    """``turn`` as one ``GenerateContentResponse``."""
    candidate: dict[str, Any] = {
        "content": {"role": "model", "parts": _parts(turn)},
        "finishReason": turn.finish,
        "index": 0,
    }
    if turn.grounding is not None:
        candidate["groundingMetadata"] = dict(turn.grounding)
    return {
        "candidates": [candidate],
        "usageMetadata": dict(turn.usage),
        "modelVersion": MODEL_VERSION,
        "responseId": "resp-1",
    }


def stream_chunks(turn: Turn) -> list[dict[str, Any]]:
    """``turn`` as the chunks of a stream: text in two pieces, each other part in a chunk
    of its own, the finish reason, usage and grounding on the last."""
    pieces: list[dict[str, Any]] = []
    for part in _parts(turn):
        text = part.get("text")
        if isinstance(text, str) and len(text) > 1 and "thoughtSignature" not in part:
            half = len(text) // 2
            pieces.append({**part, "text": text[:half]})
            pieces.append({**part, "text": text[half:]})
        else:
            pieces.append(part)
    chunks = [
        {"candidates": [{"content": {"role": "model", "parts": [p]}, "index": 0}]} for p in pieces
    ] or [{"candidates": [{"content": {"role": "model", "parts": []}, "index": 0}]}]
    for chunk in chunks:
        chunk["modelVersion"] = MODEL_VERSION
    last = chunks[-1]["candidates"][0]
    last["finishReason"] = turn.finish
    if turn.grounding is not None:
        last["groundingMetadata"] = dict(turn.grounding)
    chunks[-1]["usageMetadata"] = dict(turn.usage)
    return chunks


@dataclass
class FakeGemini:
    base_url: str = ""
    scripts: dict[str, deque[Scripted]] = field(default_factory=dict)
    received: dict[str, list[Received]] = field(default_factory=dict)

    def script(self, model: str, *replies: Scripted) -> None:
        self.scripts[model] = deque(replies)

    def requests(self, model: str) -> list[Received]:
        return self.received.get(model, [])

    async def generate(self, request: Request) -> Response:
        model, _, method = request.path_params["target"].partition(":")
        stream = method == "streamGenerateContent"
        body = await request.json()
        self.received.setdefault(model, []).append(
            Received(dict(request.headers), body, request.url.path, request.url.query, stream)
        )
        scripted = self.scripts[model].popleft()
        reply = scripted(body) if callable(scripted) else scripted
        if isinstance(reply, Turn):
            if stream:
                return StreamingResponse(_sse(stream_chunks(reply)), media_type="text/event-stream")
            return JSONResponse(response_body(reply))
        if reply.raw is not None:
            return Response(
                reply.raw, status_code=reply.status, media_type="text/plain", headers=reply.headers
            )
        if reply.events is not None:
            return StreamingResponse(_sse(reply.events), media_type="text/event-stream")
        return JSONResponse(reply.body, status_code=reply.status, headers=dict(reply.headers))


async def _sse(events: Sequence[Any]) -> AsyncIterator[str]:
    for event in events:
        data = event if isinstance(event, str) else json.dumps(event)
        frame = f"data: {data}\r\n\r\n"  # Gemini ends its SSE lines with CRLF
        half = len(frame) // 2
        yield frame[:half]
        yield frame[half:]


@contextmanager
def serve_fake_gemini() -> Iterator[FakeGemini]:
    """A `FakeGemini` listening on 127.0.0.1 (its ``base_url`` ends in ``/v1beta``)."""
    fake = FakeGemini()
    app = Starlette(routes=[Route("/v1beta/models/{target}", fake.generate, methods=["POST"])])
    with serve_app(app) as port:
        fake.base_url = f"http://127.0.0.1:{port}/v1beta"
        yield fake
