"""Wire fakes: local servers on 127.0.0.1 that speak a model provider's wire format,
scripted with model turns written once for every provider.

A scenario (``tests/models/test_scenarios.py``) scripts what the model says in neutral
terms: `Turn` (text, and `Call` s of tools by their own names, with a stop reason and
token counts) or `Fail` (a rate limit with ``Retry-After``, an overload, a server error,
before or in the middle of a stream), or a function of the request body that returns
one. Each `WireFake` renders those in its provider's format, as a JSON body or as
server-sent events (the text in several deltas, each frame split across two writes),
and reads what its model sent back into the neutral `Seen`: the system text, the
tools offered, the results sent (with the provider's error flag, where it has one),
images, and the key. Every scenario runs for every fake in `WIRES`, on asyncio and trio.

One uvicorn server (a thread, its own event loop; see ``conftest.py``) serves every
fake under its own path prefix. A test talks to it under a model name of its own,
which selects its script and the requests recorded for it.

**Adding a model.** Write one `WireFake` subclass: its ``name``, ``prefix``,
``endpoint`` and ``model_class`` (constructed with the model name, ``base_url``,
``api_key`` and ``timeout``); ``render`` and ``render_stream`` of a `Turn`,
``render_error`` and ``render_stream_failure`` of a `Fail`; ``read`` of a request body
into `Seen`; and ``statuses``, ``stream_error_code`` and ``tool_names`` where its
provider's differ (or ``make_model`` where its constructor does). Then
add an instance to `WIRES` (and its environment variables to ``_no_provider_env`` in
``conftest.py``): every scenario runs for it. A wire that names the model or the
streaming elsewhere than in the body overrides ``model_name`` / ``is_stream`` (Gemini:
``POST /v1beta/models/{model}:streamGenerateContent?alt=sse``), and ``routes`` when its
path holds the model.
"""

from __future__ import annotations

import base64
import json
import re
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Protocol, Self

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.helpers import serve_app
from tests.models.gemini_wire import Turn as GeminiTurn
from tests.models.gemini_wire import response_body, stream_chunks
from toolsets import LlmRequest
from toolsets._names import PROVIDER_TOOL_NAMES, NameRule
from toolsets.models import (
    AnthropicModel,
    GeminiModel,
    Llm,
    LlmResponse,
    OpenAIChatModel,
    OpenAIResponsesModel,
)
from toolsets.schema._gemini import GEMINI_TOOL_NAMES

Stop = Literal["stop", "tool_calls", "length", "content_filter"]
FailKind = Literal["rate_limit", "overloaded", "server", "unauthorized"]


# -- what the model says, in neutral terms -------------------------------------------


@dataclass(frozen=True)
class Call:
    """A call of the tool named ``tool`` (its own name: the fake calls it by the name
    it was offered under)."""

    tool: str
    args: Mapping[str, Any] = field(default_factory=dict)
    id: str = "call_1"


@dataclass(frozen=True)
class Turn:
    """One answer of the model."""

    text: str = ""
    calls: Sequence[Call] = ()
    stop: Stop | None = None
    """Why the model stopped; by default ``tool_calls`` with calls, else ``stop``."""
    usage: tuple[int, int] = (11, 3)
    """Input and output tokens."""

    @property
    def stop_reason(self) -> Stop:
        return self.stop or ("tool_calls" if self.calls else "stop")


@dataclass(frozen=True)
class Fail:
    """The provider fails: an HTTP error, or an error event in the middle of a stream
    (``mid_stream``, after some text)."""

    kind: FailKind
    message: str
    retry_after: int | None = None
    mid_stream: bool = False


Reply = Turn | Fail | Callable[[dict[str, Any]], Turn | Fail]


class WireModel(Llm, Protocol):
    """A model under test: an `Llm` that closes its client with ``async with``."""

    async def __aenter__(self) -> Self: ...

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> None: ...


# -- what the model sent, in neutral terms ---------------------------------------------


@dataclass(frozen=True)
class Result:
    """A tool result the model was sent."""

    call_id: str
    content: str
    """The result as text (JSON unless it was a string)."""
    is_error: bool | None
    """The provider's error flag; None where the wire format has none."""


@dataclass(frozen=True)
class Seen:
    """One request, as a scenario asserts on it."""

    system: str | None
    tools: list[str]
    """The names the tools were offered under."""
    calls: list[tuple[str, dict[str, Any], str]]
    """The model's earlier calls, sent back: wire name, arguments, id."""
    results: list[Result]
    images: list[bytes]
    user_texts: list[str]
    key: str | None
    """The API key the request carried."""


@dataclass(frozen=True)
class Received:
    headers: dict[str, str]
    body: dict[str, Any]
    seen: Seen


# -- the fakes -------------------------------------------------------------------------

STATUSES: Mapping[FailKind, int] = {
    "rate_limit": 429,
    "overloaded": 503,
    "server": 500,
    "unauthorized": 401,
}
"""The HTTP status of each kind of failure, unless a provider says otherwise."""


class WireFake(ABC):
    """A provider's wire format, served under ``prefix`` of the shared server."""

    name: ClassVar[str]
    """The id of the parametrization."""
    prefix: ClassVar[str]
    statuses: ClassVar[Mapping[FailKind, int]] = STATUSES
    """The HTTP status the provider answers each kind of failure with."""
    stream_error_code: ClassVar[str]
    """The ``error_code`` the model gives an error event in a stream."""

    def __init__(self) -> None:
        self.root = ""
        self.scripts: dict[str, deque[Reply]] = {}
        self.received: dict[str, list[Received]] = {}

    # The scripting and recording every fake shares.

    def script(self, model: str, *replies: Reply) -> None:
        self.scripts[model] = deque(replies)

    def requests(self, model: str) -> list[Received]:
        return self.received.get(model, [])

    def seen(self, model: str) -> list[Seen]:
        return [r.seen for r in self.requests(model)]

    async def handle(self, request: Request) -> Response:
        body = await request.json()
        model = self.model_name(request, body)
        headers = dict(request.headers)
        self.received.setdefault(model, []).append(
            Received(headers, body, self.read(body, headers))
        )
        scripted = self.scripts[model].popleft()
        reply = scripted(body) if callable(scripted) else scripted
        stream = self.is_stream(request, body)
        if isinstance(reply, Fail):
            if reply.mid_stream:
                assert stream, "a failure in the middle of a stream needs a stream"
                return sse_response(self.render_stream_failure(reply))
            status = self.statuses[reply.kind]
            headers_out = {}
            if reply.retry_after is not None:
                headers_out["retry-after"] = str(reply.retry_after)
            return JSONResponse(self.render_error(reply), status_code=status, headers=headers_out)
        if stream:
            return sse_response(self.render_stream(reply, body))
        return JSONResponse(self.render(reply, body))

    # What each fake says in its own words.

    endpoint: ClassVar[str]
    """The path the fake answers on, under ``prefix``."""

    def routes(self) -> list[Route]:
        return [Route(self.prefix + self.endpoint, self.handle, methods=["POST"])]

    def model_name(self, request: Request, body: dict[str, Any]) -> str:
        """The model a request is for (from the body, by default)."""
        return str(body["model"])

    def is_stream(self, request: Request, body: dict[str, Any]) -> bool:
        """Whether a request asks for a stream (``"stream": true``, by default)."""
        return bool(body.get("stream"))

    @abstractmethod
    def render(self, turn: Turn, body: dict[str, Any]) -> dict[str, Any]: ...

    @abstractmethod
    def render_stream(self, turn: Turn, body: dict[str, Any]) -> list[tuple[str | None, Any]]:
        """The events of a streamed turn: (event name or None, data)."""

    @abstractmethod
    def render_error(self, fail: Fail) -> dict[str, Any]: ...

    @abstractmethod
    def render_stream_failure(self, fail: Fail) -> list[tuple[str | None, Any]]: ...

    @abstractmethod
    def read(self, body: dict[str, Any], headers: Mapping[str, str]) -> Seen: ...

    tool_names: ClassVar[NameRule] = PROVIDER_TOOL_NAMES
    """The tool names the provider takes (a name outside them is offered made legal)."""

    def offered(self, tools: Sequence[str], own: str) -> str:
        """The name the tool ``own`` was offered under, as a model reads it off the
        request's ``tools``."""
        wire = self.tool_names.legal(own)
        assert wire in tools, f"{own!r} was not offered (offered: {tools})"
        return wire

    model_class: ClassVar[Callable[..., WireModel]]
    """The model under test; it is given the model name, ``base_url``, ``api_key``
    and ``timeout``."""

    def make_model(
        self, model: str, *, root: str | None = None, api_key: str | None = None
    ) -> WireModel:
        """The model under test, talking to this fake (or to ``root``)."""
        base_url = (root if root is not None else self.root) + self.prefix
        return self.model_class(model, base_url=base_url, api_key=api_key, timeout=10)


def words(text: str) -> list[str]:
    return re.findall(r"\S+\s*|\s+", text) or [text]


def sse_response(events: list[tuple[str | None, Any]]) -> StreamingResponse:
    async def frames() -> AsyncIterator[str]:
        for name, data in events:
            head = f"event: {name}\n" if name else ""
            frame = f"{head}data: {data if isinstance(data, str) else json.dumps(data)}\n\n"
            # Split every frame in two, so the client must reassemble events across reads.
            half = len(frame) // 2
            yield frame[:half]
            yield frame[half:]

    return StreamingResponse(frames(), media_type="text/event-stream")


class OpenAIWire(WireFake):
    """Chat Completions: ``POST /openai/v1/chat/completions``."""

    name = "openai"
    prefix = "/openai/v1"
    endpoint = "/chat/completions"
    model_class = OpenAIChatModel
    stream_error_code = "server_error"
    _STOPS: ClassVar[Mapping[Stop, str]] = {
        s: s for s in ("stop", "tool_calls", "length", "content_filter")
    }

    def _calls(self, turn: Turn, body: dict[str, Any]) -> list[dict[str, Any]]:
        tools = [t["function"]["name"] for t in body.get("tools", [])]
        return [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": self.offered(tools, c.tool), "arguments": json.dumps(c.args)},
            }
            for c in turn.calls
        ]

    def render(self, turn: Turn, body: dict[str, Any]) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": turn.text or None}
        if turn.calls:
            message["tool_calls"] = self._calls(turn, body)
        return {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": "gpt-test-2025",
            "choices": [
                {"index": 0, "message": message, "finish_reason": self._STOPS[turn.stop_reason]}
            ],
            "usage": {"prompt_tokens": turn.usage[0], "completion_tokens": turn.usage[1]},
        }

    def render_stream(self, turn: Turn, body: dict[str, Any]) -> list[tuple[str | None, Any]]:
        def chunk(delta: dict[str, Any], finish: str | None = None, usage: Any = None) -> Any:
            choice = {"index": 0, "delta": delta, "finish_reason": finish}
            return (None, {"model": "gpt-test-2025", "choices": [choice], "usage": usage})

        events = [chunk({"role": "assistant", "content": ""})]
        events += [chunk({"content": piece}) for piece in words(turn.text)] if turn.text else []
        for index, call in enumerate(self._calls(turn, body)):
            arguments = call["function"]["arguments"]
            head = {**call, "index": index, "function": {**call["function"], "arguments": ""}}
            events.append(chunk({"tool_calls": [head]}))
            for piece in (arguments[: len(arguments) // 2], arguments[len(arguments) // 2 :]):
                events.append(
                    chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
                )
        events.append(chunk({}, finish=self._STOPS[turn.stop_reason]))
        usage = {"prompt_tokens": turn.usage[0], "completion_tokens": turn.usage[1]}
        events.append((None, {"model": "gpt-test-2025", "choices": [], "usage": usage}))
        events.append((None, "[DONE]"))
        return events

    def render_error(self, fail: Fail) -> dict[str, Any]:
        return {"error": {"message": fail.message, "type": fail.kind, "code": None}}

    def render_stream_failure(self, fail: Fail) -> list[tuple[str | None, Any]]:
        choice = {"index": 0, "delta": {"content": "Hel"}, "finish_reason": None}
        error = {"error": {"message": fail.message, "code": self.stream_error_code}}
        return [(None, {"choices": [choice]}), (None, error)]

    def read(self, body: dict[str, Any], headers: Mapping[str, str]) -> Seen:
        system = [m["content"] for m in body["messages"] if m["role"] == "system"]
        calls = [
            (c["function"]["name"], json.loads(c["function"]["arguments"]), c["id"])
            for m in body["messages"]
            for c in m.get("tool_calls") or ()
        ]
        results = [
            Result(m["tool_call_id"], m["content"], None)
            for m in body["messages"]
            if m["role"] == "tool"
        ]
        images: list[bytes] = []
        texts: list[str] = []
        for m in body["messages"]:
            if m["role"] != "user":
                continue
            content = m["content"]
            items: list[Any] = (
                [{"type": "text", "text": content}] if isinstance(content, str) else content
            )
            for item in items:
                if item["type"] == "text":
                    texts.append(item["text"])
                elif item["type"] == "image_url":
                    images.append(_data_url_bytes(item["image_url"]["url"]))
        auth = headers.get("authorization")
        return Seen(
            system="\n\n".join(system) or None,
            tools=[t["function"]["name"] for t in body.get("tools", [])],
            calls=calls,
            results=results,
            images=images,
            user_texts=texts,
            key=auth.removeprefix("Bearer ") if auth else None,
        )


class ResponsesWire(WireFake):
    """OpenAI's Responses API: ``POST /responses/v1/responses``."""

    name = "openai-responses"
    prefix = "/responses/v1"
    endpoint = "/responses"
    model_class = OpenAIResponsesModel
    stream_error_code = "server_error"
    _INCOMPLETE: ClassVar[Mapping[Stop, str]] = {
        "length": "max_output_tokens",
        "content_filter": "content_filter",
    }

    def _items(self, turn: Turn, body: dict[str, Any]) -> list[dict[str, Any]]:
        tools = [t["name"] for t in body.get("tools", []) if t["type"] == "function"]
        items: list[dict[str, Any]] = []
        if turn.text:
            text = {"type": "output_text", "text": turn.text, "annotations": []}
            items.append(
                {
                    "type": "message",
                    "id": "msg_1",
                    "role": "assistant",
                    "status": "completed",
                    "content": [text],
                }
            )
        items += [
            {
                "type": "function_call",
                "id": f"fc_{c.id}",
                "call_id": c.id,
                "name": self.offered(tools, c.tool),
                "arguments": json.dumps(c.args),
                "status": "completed",
            }
            for c in turn.calls
        ]
        return items

    def render(self, turn: Turn, body: dict[str, Any]) -> dict[str, Any]:
        reason = self._INCOMPLETE.get(turn.stop_reason)
        return {
            "id": "resp_1",
            "object": "response",
            "created_at": 1767225600,
            "model": "gpt-test-2025",
            "status": "completed" if reason is None else "incomplete",
            "incomplete_details": None if reason is None else {"reason": reason},
            "error": None,
            "output": self._items(turn, body),
            "usage": {
                "input_tokens": turn.usage[0],
                "output_tokens": turn.usage[1],
                "total_tokens": sum(turn.usage),
            },
        }

    def render_stream(self, turn: Turn, body: dict[str, Any]) -> list[tuple[str | None, Any]]:
        whole = self.render(turn, body)
        head = {**whole, "status": "in_progress", "output": [], "usage": None}
        events: list[dict[str, Any]] = [{"type": "response.created", "response": head}]
        for index, item in enumerate(whole["output"]):
            if item["type"] == "message":
                opened = {**item, "content": [], "status": "in_progress"}
                deltas = [
                    {"type": "response.output_text.delta", "delta": piece}
                    for piece in words(turn.text)
                ]
            else:
                opened = {**item, "arguments": "", "status": "in_progress"}
                raw = item["arguments"]
                deltas = [
                    {"type": "response.function_call_arguments.delta", "delta": piece}
                    for piece in (raw[: len(raw) // 2], raw[len(raw) // 2 :])
                ]
            events.append(
                {"type": "response.output_item.added", "output_index": index, "item": opened}
            )
            events += [{**d, "output_index": index, "item_id": item["id"]} for d in deltas]
            events.append(
                {"type": "response.output_item.done", "output_index": index, "item": item}
            )
        done = "response.completed" if whole["status"] == "completed" else "response.incomplete"
        events.append({"type": done, "response": whole})
        return [(e["type"], {**e, "sequence_number": n}) for n, e in enumerate(events)]

    def render_error(self, fail: Fail) -> dict[str, Any]:
        return {"error": {"message": fail.message, "type": fail.kind, "param": None, "code": None}}

    def render_stream_failure(self, fail: Fail) -> list[tuple[str | None, Any]]:
        events = self.render_stream(Turn(text="Hel"), {})[:3]  # up to the first delta
        error = {
            "type": "error",
            "code": self.stream_error_code,
            "message": fail.message,
            "param": None,
            "sequence_number": 3,
        }
        return [*events, ("error", error)]

    def read(self, body: dict[str, Any], headers: Mapping[str, str]) -> Seen:
        system = [body["instructions"]] if body.get("instructions") else []
        calls, results, images, texts = [], [], [], []
        for item in body["input"]:
            kind = item.get("type", "message")
            if kind == "function_call":
                calls.append((item["name"], json.loads(item["arguments"]), item["call_id"]))
            elif kind == "function_call_output":
                results.append(Result(item["call_id"], item["output"], None))
            elif kind == "message" and item["role"] == "system":
                system.append(item["content"])
            elif kind == "message" and item["role"] == "user":
                content = item["content"]
                for piece in (
                    [{"type": "input_text", "text": content}]
                    if isinstance(content, str)
                    else content
                ):
                    if piece["type"] == "input_text":
                        texts.append(piece["text"])
                    elif piece["type"] == "input_image":
                        images.append(_data_url_bytes(piece["image_url"]))
        auth = headers.get("authorization")
        return Seen(
            system="\n\n".join(system) or None,
            tools=[t["name"] for t in body.get("tools", []) if t["type"] == "function"],
            calls=calls,
            results=results,
            images=images,
            user_texts=texts,
            key=auth.removeprefix("Bearer ") if auth else None,
        )


class AnthropicWire(WireFake):
    """The Messages API: ``POST /anthropic/v1/messages``."""

    name = "anthropic"
    prefix = "/anthropic"
    endpoint = "/v1/messages"
    model_class = AnthropicModel
    statuses: ClassVar[Mapping[FailKind, int]] = {**STATUSES, "overloaded": 529}
    stream_error_code = "http_529"  # an overloaded_error event: the code of its status
    _STOPS: ClassVar[Mapping[Stop, str]] = {
        "stop": "end_turn",
        "tool_calls": "tool_use",
        "length": "max_tokens",
        "content_filter": "refusal",
    }
    _ERRORS: ClassVar[Mapping[FailKind, str]] = {
        "rate_limit": "rate_limit_error",
        "overloaded": "overloaded_error",
        "server": "api_error",
        "unauthorized": "authentication_error",
    }

    def _blocks(self, turn: Turn, body: dict[str, Any]) -> list[dict[str, Any]]:
        tools = [t["name"] for t in body.get("tools", [])]
        blocks: list[dict[str, Any]] = [{"type": "text", "text": turn.text}] if turn.text else []
        blocks += [
            {
                "type": "tool_use",
                "id": c.id,
                "name": self.offered(tools, c.tool),
                "input": dict(c.args),
            }
            for c in turn.calls
        ]
        return blocks

    def render(self, turn: Turn, body: dict[str, Any]) -> dict[str, Any]:
        return {
            "id": "msg_01",
            "type": "message",
            "role": "assistant",
            "model": "claude-test-2025",
            "content": self._blocks(turn, body),
            "stop_reason": self._STOPS[turn.stop_reason],
            "stop_sequence": None,
            "usage": {"input_tokens": turn.usage[0], "output_tokens": turn.usage[1]},
        }

    def render_stream(self, turn: Turn, body: dict[str, Any]) -> list[tuple[str | None, Any]]:
        start = {k: v for k, v in self.render(turn, body).items()}
        start.update(
            content=[], stop_reason=None, usage={"input_tokens": turn.usage[0], "output_tokens": 1}
        )
        events: list[tuple[str | None, Any]] = [
            ("message_start", {"type": "message_start", "message": start})
        ]
        events.append(("ping", {"type": "ping"}))
        for index, block in enumerate(self._blocks(turn, body)):
            opened = {**block, "text": ""} if block["type"] == "text" else {**block, "input": {}}
            events.append(
                (
                    "content_block_start",
                    {"type": "content_block_start", "index": index, "content_block": opened},
                )
            )
            if block["type"] == "text":
                deltas = [{"type": "text_delta", "text": piece} for piece in words(block["text"])]
            else:
                raw = json.dumps(block["input"])
                deltas = [
                    {"type": "input_json_delta", "partial_json": piece}
                    for piece in ("", raw[: len(raw) // 2], raw[len(raw) // 2 :])
                ]
            for delta in deltas:
                events.append(
                    (
                        "content_block_delta",
                        {"type": "content_block_delta", "index": index, "delta": delta},
                    )
                )
            events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        stop = {"stop_reason": self._STOPS[turn.stop_reason], "stop_sequence": None}
        events.append(
            (
                "message_delta",
                {"type": "message_delta", "delta": stop, "usage": {"output_tokens": turn.usage[1]}},
            )
        )
        events.append(("message_stop", {"type": "message_stop"}))
        return events

    def render_error(self, fail: Fail) -> dict[str, Any]:
        return {
            "type": "error",
            "error": {"type": self._ERRORS[fail.kind], "message": fail.message},
        }

    def render_stream_failure(self, fail: Fail) -> list[tuple[str | None, Any]]:
        events = self.render_stream(Turn(text="Hel"), {})[:4]  # up to the first delta
        error = {
            "type": "error",
            "error": {"type": self._ERRORS[fail.kind], "message": fail.message},
        }
        return [*events, ("error", error)]

    def read(self, body: dict[str, Any], headers: Mapping[str, str]) -> Seen:
        calls, results, images, texts = [], [], [], []
        for message in body["messages"]:
            for block in message["content"]:
                kind = block["type"]
                if kind == "tool_use":
                    calls.append((block["name"], block["input"], block["id"]))
                elif kind == "tool_result":
                    is_error = bool(block.get("is_error", False))
                    results.append(Result(block["tool_use_id"], block["content"], is_error))
                elif kind == "image":
                    images.append(base64.b64decode(block["source"]["data"]))
                elif kind == "text" and message["role"] == "user":
                    texts.append(block["text"])
        return Seen(
            system=body.get("system"),
            tools=[t["name"] for t in body.get("tools", [])],
            calls=calls,
            results=results,
            images=images,
            user_texts=texts,
            key=headers.get("x-api-key"),
        )


def _data_url_bytes(url: str) -> bytes:
    return base64.b64decode(url.partition(";base64,")[2])


async def collect(model: Llm, request: LlmRequest, *, stream: bool = False) -> list[LlmResponse]:
    """Every response ``model`` gives ``request`` (in 10 s at most)."""
    with anyio.fail_after(10):
        return [r async for r in model.generate(request, stream=stream)]


@contextmanager
def serve(app: Starlette) -> Iterator[str]:
    """Serve ``app`` on 127.0.0.1 (see `tests.helpers.serve_app`); gives its root URL."""
    with serve_app(app) as port:
        yield f"http://127.0.0.1:{port}"


_GEMINI_FINISH = {
    "stop": "STOP",
    "tool_calls": "STOP",
    "length": "MAX_TOKENS",
    "content_filter": "SAFETY",
}
_GEMINI_STATUS = {
    "rate_limit": "RESOURCE_EXHAUSTED",
    "overloaded": "UNAVAILABLE",
    "server": "INTERNAL",
    "unauthorized": "UNAUTHENTICATED",
}


def _offered(body: dict[str, Any]) -> list[str]:
    return [
        d["name"] for tool in body.get("tools", []) for d in tool.get("functionDeclarations", [])
    ]


class GeminiWire(WireFake):
    """generateContent: ``POST /gemini/v1beta/models/{model}:generateContent``."""

    name = "gemini"
    prefix = "/gemini/v1beta"
    endpoint = "/models/{target}"
    model_class = GeminiModel
    stream_error_code = "http_500"  # Google's error names its HTTP status
    tool_names = GEMINI_TOOL_NAMES  # keeps ``.`` and ``:``

    def model_name(self, request: Request, body: dict[str, Any]) -> str:
        return str(request.path_params["target"]).partition(":")[0]

    def is_stream(self, request: Request, body: dict[str, Any]) -> bool:
        return str(request.path_params["target"]).endswith(":streamGenerateContent")

    def _turn(self, turn: Turn, body: dict[str, Any]) -> GeminiTurn:
        offered = _offered(body)
        calls = [(self.offered(offered, call.tool), dict(call.args)) for call in turn.calls]
        return GeminiTurn(
            text=turn.text,
            calls=calls,
            call_ids=[c.id for c in turn.calls],
            finish=_GEMINI_FINISH[turn.stop_reason],
            usage={
                "promptTokenCount": turn.usage[0],
                "candidatesTokenCount": turn.usage[1],
                "totalTokenCount": sum(turn.usage),
            },
        )

    def render(self, turn: Turn, body: dict[str, Any]) -> dict[str, Any]:
        return response_body(self._turn(turn, body))

    def render_stream(self, turn: Turn, body: dict[str, Any]) -> list[tuple[str | None, Any]]:
        return [(None, chunk) for chunk in stream_chunks(self._turn(turn, body))]

    def render_error(self, fail: Fail) -> dict[str, Any]:
        status = self.statuses[fail.kind]
        error: dict[str, Any] = {
            "code": status,
            "message": fail.message,
            "status": _GEMINI_STATUS[fail.kind],
        }
        if fail.retry_after is not None:
            error["details"] = [
                {
                    "@type": "type.googleapis.com/google.rpc.RetryInfo",
                    "retryDelay": f"{fail.retry_after}s",
                }
            ]
        return {"error": error}

    def render_stream_failure(self, fail: Fail) -> list[tuple[str | None, Any]]:
        first = {"candidates": [{"content": {"role": "model", "parts": [{"text": "Hel"}]}}]}
        error = {"error": {"code": 500, "message": fail.message, "status": "INTERNAL"}}
        return [(None, first), (None, error)]

    def read(self, body: dict[str, Any], headers: Mapping[str, str]) -> Seen:
        calls: list[tuple[str, dict[str, Any], str]] = []
        results: list[Result] = []
        images: list[bytes] = []
        texts: list[str] = []
        for content in body["contents"]:
            for part in content["parts"]:
                if "functionCall" in part:
                    call = part["functionCall"]
                    calls.append((call["name"], call.get("args", {}), call.get("id", "")))
                elif "functionResponse" in part:
                    answer = part["functionResponse"]
                    response = answer["response"]
                    if set(response) == {"result"} and isinstance(response["result"], str):
                        text = response["result"]
                    else:
                        shown = response["result"] if set(response) == {"result"} else response
                        text = json.dumps(shown)
                    results.append(Result(answer.get("id", ""), text, None))
                elif "inlineData" in part:
                    images.append(base64.b64decode(part["inlineData"]["data"]))
                elif "text" in part and content["role"] == "user":
                    texts.append(part["text"])
        system = body.get("systemInstruction")
        return Seen(
            system="".join(p["text"] for p in system["parts"]) if system else None,
            tools=_offered(body),
            calls=calls,
            results=results,
            images=images,
            user_texts=texts,
            key=headers.get("x-goog-api-key"),
        )


WIRES: list[WireFake] = [OpenAIWire(), ResponsesWire(), AnthropicWire(), GeminiWire()]
"""Every wire fake; each scenario runs once per entry (add a provider's fake here)."""
