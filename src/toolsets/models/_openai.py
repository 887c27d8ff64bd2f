"""A model behind the OpenAI Chat Completions API: OpenAI itself, and the local servers
that speak the same wire format (llama.cpp, vLLM, Ollama, LM Studio)."""

from __future__ import annotations

import base64
import json
import os
from collections import deque
from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractContextManager, asynccontextmanager
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Final, Self

import httpx2

from toolsets._auth import Secret, check_credential_text, redact
from toolsets._concurrency import check_timeout
from toolsets._content import Content, FunctionCall, Part
from toolsets._http import essence, map_http_errors
from toolsets._tool import LlmRequest
from toolsets._urls import safe_url
from toolsets.models._llm import (
    INVALID_JSON_KEY,
    FinishReason,
    LlmResponse,
    Usage,
    check_server_tools,
)
from toolsets.schema import ToolNameMap, to_openai_tools

__all__ = ["CONFIG_KEYS", "DEFAULT_BASE_URL", "OpenAIChatModel"]

DEFAULT_BASE_URL: Final = "https://api.openai.com/v1"
"""Where requests go when neither ``base_url`` nor ``OPENAI_BASE_URL`` says otherwise."""

CONFIG_KEYS: Final = frozenset(
    {
        "temperature",
        "top_p",
        "max_tokens",
        "max_completion_tokens",
        "stop",
        "seed",
        "presence_penalty",
        "frequency_penalty",
        "logit_bias",
        "logprobs",
        "top_logprobs",
        "response_format",
        "tool_choice",
        "parallel_tool_calls",
        "reasoning_effort",
        "user",
        "metadata",
        "store",
        "service_tier",
    }
)
"""``LlmRequest.config`` keys sent as they are. ``extra_body`` (a mapping) is merged into
the request for server-specific options (``top_k``, ``min_p``, ...); any other key is an
error, so a misspelt option does not go unnoticed. (``n`` is not offered: one answer is
read.)"""

_CONNECT_TIMEOUT: Final = 10.0
_MAX_ERROR_MESSAGE: Final = 1000

_FINISH_REASONS: Final[Mapping[str, FinishReason]] = {
    "stop": "stop",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "length": "length",
    "content_filter": "content_filter",
}


class OpenAIChatModel:
    """An `Llm` that calls ``POST {base_url}/chat/completions``.

    Works with OpenAI and with local OpenAI-compatible servers. One pooled
    ``httpx2.AsyncClient`` is opened on first use and closed by `aclose` (or ``async
    with``); a client passed in is used as it is and left open.

    Tool names are made legal for the API (``^[A-Za-z0-9_-]{1,64}$``) on the way out
    and mapped back to the declarations' names on the way in, by `toolsets.schema`.

    Provider errors (an HTTP 4xx or 5xx) are answered as an `LlmResponse` with
    ``error_code`` (``"http_429"``) and ``error_message``; a server that cannot be
    reached raises `toolsets.ConnectionError`. The API key never appears in either.
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        http_client: httpx2.AsyncClient | None = None,
        timeout: float = 120.0,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        """Configure the model; nothing is sent until `generate`.

        Args:
            model: The model to call; default ``$OPENAI_MODEL``. A request's own
                ``model`` wins over it.
            base_url: The API root, up to and including ``/v1``; default
                ``$OPENAI_BASE_URL``, else ``https://api.openai.com/v1``.
            api_key: Sent as ``Authorization: Bearer ...``; default ``$OPENAI_API_KEY``.
                With neither, no ``Authorization`` header is sent (local servers).
            http_client: A client to use instead of opening one; never closed here,
                and its own timeouts apply.
            timeout: Seconds to wait for each read, write or pool slot of the client
                opened here (connecting waits at most 10 s).
            headers: Extra headers for every request (``OpenAI-Organization``, ...).

        Raises:
            ValueError: no model is named, the base URL is not http(s), or the
                timeout is not a positive number.
            AuthError: the API key holds a control character (a trailing newline) or
                a non-ASCII character, which no header can carry (the key is not shown).
        """
        model = model or os.environ.get("OPENAI_MODEL")
        if not model:
            raise ValueError("no model given: pass OpenAIChatModel(model=...) or set OPENAI_MODEL")
        check_timeout(timeout, "timeout")
        url = httpx2.URL(base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL)
        if url.scheme not in ("http", "https") or not url.host:
            raise ValueError(f"base_url must be an http(s) URL, got {str(url)!r}")
        self._model = model
        # The endpoint under the root's path, keeping its query (``?api-version=`` and
        # the like).
        self._url = str(url.copy_with(path=url.path.rstrip("/") + "/chat/completions"))
        # The URL errors and reprs name: without user info or query, which can hold a
        # password or a key.
        self._target = safe_url(url).rstrip("/")
        key = api_key or os.environ.get("OPENAI_API_KEY") or None
        if key is not None:
            check_credential_text(key, scheme_name="bearer", in_header=True)
        self._api_key = Secret(key) if key is not None else None
        self._headers = dict(headers or {})
        self._timeout = timeout
        self._client = http_client
        self._owns_client = http_client is None

    @property
    def model(self) -> str:
        """The model requests go to unless they name another."""
        return self._model

    @property
    def base_url(self) -> str:
        """The API root requests go to (without any credentials)."""
        return self._target

    def __repr__(self) -> str:
        return f"OpenAIChatModel(model={self._model!r}, base_url={self._target!r})"

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the HTTP client if it was opened here; a later call opens a new one."""
        if self._owns_client and self._client is not None:
            client, self._client = self._client, None
            await client.aclose()

    async def generate(
        self, request: LlmRequest, *, stream: bool = False
    ) -> AsyncIterator[LlmResponse]:
        """Answer ``request``: one response, or with ``stream=True`` partial text chunks
        and then the complete response.

        Raises:
            ConnectionError: the server cannot be reached, or the connection fails or
                times out (``target`` is the base URL).
            ValueError: ``request.config`` holds a key this API does not take.
            ToolDefinitionError, SpecError: a declaration cannot be offered, or the
                request holds another provider's server-side tool.
        """
        check_server_tools(request, model=request.model or self._model, provider=None)
        tools, names = to_openai_tools(request.declarations.values())
        body = self._body(request, tools, names)
        if stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
            async for response in self._stream(body, names):
                yield response
        else:
            yield await self._complete(body, names)

    # -- request ---------------------------------------------------------------------

    def _body(
        self, request: LlmRequest, tools: list[dict[str, Any]], names: ToolNameMap
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": request.model or self._model,
            "messages": _messages(request, names),
        }
        if tools:
            body["tools"] = tools
        for key, value in request.config.items():
            if key == "extra_body":
                if not isinstance(value, Mapping):
                    raise ValueError("request.config['extra_body'] must be a mapping")
                body.update(value)
            elif key == "tool_choice":
                body[key] = _tool_choice(value, names)
            elif key in CONFIG_KEYS:
                body[key] = value
            else:
                raise ValueError(
                    f"request.config key {key!r} is not a Chat Completions option; use one "
                    f"of {sorted(CONFIG_KEYS)}, or pass server-specific options in "
                    "config['extra_body']"
                )
        return body

    def _request_headers(self, *, stream: bool) -> dict[str, str]:
        headers = dict(self._headers)
        if stream:
            headers["Accept"] = "text/event-stream"
            # Events are read as they arrive; compression would hold them back.
            headers["Accept-Encoding"] = "identity"
        else:
            headers["Accept"] = "application/json"
        if self._api_key is not None:
            headers["Authorization"] = f"Bearer {self._api_key}"
        return headers

    def _http(self) -> httpx2.AsyncClient:
        if self._client is None:
            self._client = httpx2.AsyncClient(
                timeout=httpx2.Timeout(self._timeout, connect=min(self._timeout, _CONNECT_TIMEOUT))
            )
        return self._client

    def _mapped(self) -> AbstractContextManager[None]:
        """httpx2's errors while talking to the server, as `ConnectionError`."""
        return map_http_errors(
            "OpenAI-compatible server at", self._url, target=self._target, secrets=[self._api_key]
        )

    def _redact(self, text: str) -> str:
        # A server may echo the credential it was sent (in an error message, say).
        return redact(text, [self._api_key])

    # -- response --------------------------------------------------------------------

    async def _complete(self, body: dict[str, Any], names: ToolNameMap) -> LlmResponse:
        with self._mapped():
            response = await self._http().post(
                self._url, json=body, headers=self._request_headers(stream=False)
            )
        if response.is_error:
            return self._http_error(response.status_code, response.content)
        return self._parse_completion(response.content, names)

    async def _stream(self, body: dict[str, Any], names: ToolNameMap) -> AsyncIterator[LlmResponse]:
        async with self._open_stream(body) as response:
            if response.is_error:
                yield self._http_error(response.status_code, await self._read(response))
                return
            content_type = essence(response.headers.get("content-type", ""))
            if content_type != "text/event-stream":
                # Servers that cannot stream (or ignore "stream") answer in one piece.
                yield self._parse_completion(await self._read(response), names)
                return
            state = _StreamState()
            outcome: LlmResponse | None = None
            done = False
            # The stream is read to its end even after "[DONE]" or an error: httpx2
            # cannot close a response's inner generators when its reader stops early,
            # and an abandoned generator is finalized whenever the garbage collector
            # gets to it (trio warns). Servers end the response right after "[DONE]".
            async for data in self._events(response):
                if done or outcome is not None:
                    continue
                if data == "[DONE]":
                    done = True
                    continue
                chunk = _json_object(data)
                if chunk is None:
                    shown = self._redact(data[:200])
                    outcome = _invalid_response(f"a stream event is not a JSON object: {shown}")
                elif chunk.get("error"):
                    outcome = self._provider_error(chunk, code="stream_error")
                else:
                    for delta in state.add(chunk):
                        yield delta
            yield outcome if outcome is not None else state.final(names)

    @asynccontextmanager
    async def _open_stream(self, body: dict[str, Any]) -> AsyncIterator[httpx2.Response]:
        with self._mapped():
            async with self._http().stream(
                "POST", self._url, json=body, headers=self._request_headers(stream=True)
            ) as response:
                yield response

    async def _read(self, response: httpx2.Response) -> bytes:
        with self._mapped():
            return await response.aread()

    async def _events(self, response: httpx2.Response) -> AsyncIterator[str]:
        with self._mapped():
            async for event in httpx2.EventSource(response):
                yield event.data

    def _http_error(self, status: int, content: bytes) -> LlmResponse:
        payload = _json_object(content)
        message = _error_message(payload) if payload is not None else None
        if message is None:
            message = content.decode("utf-8", "replace").strip() or f"HTTP {status}"
        return LlmResponse(
            finish_reason="error",
            error_code=f"http_{status}",
            error_message=_truncate(self._redact(message)),
        )

    def _provider_error(self, payload: Mapping[str, Any], *, code: str) -> LlmResponse:
        error = payload.get("error")
        if isinstance(error, Mapping):
            given = error.get("code") or error.get("type")
            if isinstance(given, str | int) and not isinstance(given, bool):
                code = str(given)
        message = _error_message(payload) or "the server answered with an error"
        return LlmResponse(
            finish_reason="error", error_code=code, error_message=_truncate(self._redact(message))
        )

    def _parse_completion(self, content: bytes, names: ToolNameMap) -> LlmResponse:
        payload = _json_object(content)
        if payload is None:
            shown = content[:200].decode("utf-8", "replace")
            return _invalid_response(self._redact(f"the body is not a JSON object: {shown}"))
        if payload.get("error"):
            return self._provider_error(payload, code="provider_error")
        choices = payload.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
            return _invalid_response("the body has no choices")
        choice = choices[0]
        message = choice.get("message")
        message = message if isinstance(message, Mapping) else {}
        parts: list[Part] = []
        reasoning = message.get("reasoning_content")
        if isinstance(reasoning, str) and reasoning:
            parts.append(Part(text=reasoning, thought=True))
        text = _text_of(message.get("content"))
        if text:
            parts.append(Part(text=text))
        raw_calls = message.get("tool_calls")
        if not raw_calls and isinstance(message.get("function_call"), Mapping):
            raw_calls = [{"function": message["function_call"]}]
        for raw in raw_calls if isinstance(raw_calls, list) else ():
            function = raw.get("function") if isinstance(raw, Mapping) else None
            if not isinstance(function, Mapping):
                continue
            call_id = raw.get("id")
            parts.append(
                Part(
                    function_call=FunctionCall(
                        name=names.from_provider(str(function.get("name") or "")),
                        args=_arguments(function.get("arguments")),
                        id=call_id if isinstance(call_id, str) and call_id else None,
                    )
                )
            )
        return LlmResponse(
            content=Content(role="model", parts=tuple(parts)),
            finish_reason=_finish_reason(choice.get("finish_reason")),
            usage=_usage(payload.get("usage")),
            model_version=_str_or_none(payload.get("model")),
        )


# -- the conversation, in Chat Completions messages --------------------------------------


@dataclass
class _CallIds:
    """Ids for calls and responses that have none, so each tool message answers the
    assistant's call it belongs to (the API requires the pairing)."""

    pending: dict[str, deque[str]] = field(default_factory=dict)
    count: int = 0

    def for_call(self, call: FunctionCall) -> str:
        call_id = call.id
        if not call_id:
            self.count += 1
            call_id = f"call_{self.count}"
        self.pending.setdefault(call.name, deque()).append(call_id)
        return call_id

    def for_response(self, name: str, response_id: str | None) -> str:
        waiting = self.pending.get(name, deque())
        if response_id:
            if response_id in waiting:
                waiting.remove(response_id)
            return response_id
        if waiting:
            return waiting.popleft()
        self.count += 1
        return f"call_{self.count}"


def _messages(request: LlmRequest, names: ToolNameMap) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    if request.system_instruction:
        messages.append({"role": "system", "content": request.system_instruction})
    ids = _CallIds()
    for content in request.contents:
        parts = [p for p in content.parts if not p.thought]
        if content.role == "model":
            messages.append(_assistant_message(parts, names, ids))
            continue
        rest: list[Part] = []
        for part in parts:
            if part.function_response is not None:
                answer = part.function_response
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": ids.for_response(answer.name, answer.id),
                        "content": json.dumps(answer.response, ensure_ascii=False),
                    }
                )
            elif part.function_call is None:
                rest.append(part)
        if not rest:
            continue
        if content.role == "system":
            messages.append({"role": "system", "content": "".join(p.text or "" for p in rest)})
        else:
            # A tool turn's text or images cannot go in a tool message (text only, one
            # per call), so they follow as the user's.
            messages.append({"role": "user", "content": _user_content(rest)})
    return messages


def _assistant_message(parts: list[Part], names: ToolNameMap, ids: _CallIds) -> dict[str, Any]:
    text = "".join(p.text for p in parts if p.text is not None)
    calls = [p.function_call for p in parts if p.function_call is not None]
    message: dict[str, Any] = {"role": "assistant", "content": text or (None if calls else "")}
    if calls:
        message["tool_calls"] = [
            {
                "id": ids.for_call(call),
                "type": "function",
                "function": {
                    "name": names.to_provider(call.name),
                    "arguments": json.dumps(dict(call.args), ensure_ascii=False),
                },
            }
            for call in calls
        ]
    return message


def _user_content(parts: list[Part]) -> str | list[dict[str, Any]]:
    if all(p.text is not None for p in parts):
        return "".join(p.text or "" for p in parts)
    out: list[dict[str, Any]] = []
    for part in parts:
        if part.text is not None:
            out.append({"type": "text", "text": part.text})
        elif part.inline_data is not None:
            blob = part.inline_data
            encoded = base64.b64encode(blob.data).decode("ascii")
            audio_format = _AUDIO_FORMATS.get(blob.mime_type)
            if blob.mime_type.startswith("image/"):
                url = f"data:{blob.mime_type};base64,{encoded}"
                out.append({"type": "image_url", "image_url": {"url": url}})
            elif audio_format is not None:
                out.append(
                    {
                        "type": "input_audio",
                        "input_audio": {"data": encoded, "format": audio_format},
                    }
                )
            else:
                data_url = f"data:{blob.mime_type};base64,{encoded}"
                out.append({"type": "file", "file": {"file_data": data_url, "filename": "file"}})
        elif part.file_data is not None:
            # The API fetches only images by URL; anything else is named for the model.
            file = part.file_data
            if (file.mime_type or "").startswith("image/"):
                out.append({"type": "image_url", "image_url": {"url": file.uri}})
            else:
                out.append({"type": "text", "text": f"[file: {file.uri}]"})
    return out


_AUDIO_FORMATS: Final[Mapping[str, str]] = {
    "audio/wav": "wav",
    "audio/x-wav": "wav",
    "audio/wave": "wav",
    "audio/mpeg": "mp3",
    "audio/mp3": "mp3",
}


def _tool_choice(value: Any, names: ToolNameMap) -> Any:
    # A forced tool is named by its declaration; the API knows it by its provider name.
    if isinstance(value, Mapping) and isinstance(value.get("function"), Mapping):
        function = dict(value["function"])
        if isinstance(function.get("name"), str):
            function["name"] = names.to_provider(function["name"])
        return {**value, "function": function}
    return value


# -- streaming -----------------------------------------------------------------------


@dataclass
class _ToolCallDelta:
    id: str | None = None
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass
class _StreamState:
    """What the chunks of one stream add up to."""

    text: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    calls: dict[int, _ToolCallDelta] = field(default_factory=dict)
    finish_reason: FinishReason | None = None
    usage: Usage | None = None
    model_version: str | None = None

    def add(self, chunk: Mapping[str, Any]) -> list[LlmResponse]:
        """Take one chunk in; return the partial responses it makes (text deltas)."""
        self.model_version = _str_or_none(chunk.get("model")) or self.model_version
        self.usage = _usage(chunk.get("usage")) or self.usage
        out: list[LlmResponse] = []
        choices = chunk.get("choices")
        for choice in choices if isinstance(choices, list) else ():
            if not isinstance(choice, Mapping) or choice.get("index", 0) != 0:
                continue
            if choice.get("finish_reason") is not None:
                self.finish_reason = _finish_reason(choice["finish_reason"])
            delta = choice.get("delta")
            if not isinstance(delta, Mapping):
                continue
            for key, thought, sink in (
                ("reasoning_content", True, self.reasoning),
                ("content", False, self.text),
            ):
                piece = delta.get(key)
                if isinstance(piece, str) and piece:
                    sink.append(piece)
                    part = Part(text=piece, thought=thought)
                    out.append(
                        LlmResponse(
                            content=Content(role="model", parts=(part,)),
                            partial=True,
                            model_version=self.model_version,
                        )
                    )
            raw_calls = delta.get("tool_calls")
            if not raw_calls and isinstance(delta.get("function_call"), Mapping):
                raw_calls = [{"index": 0, "function": delta["function_call"]}]
            for position, raw in enumerate(raw_calls if isinstance(raw_calls, list) else ()):
                if isinstance(raw, Mapping):
                    self._add_call(raw, position)
        return out

    def _add_call(self, raw: Mapping[str, Any], position: int) -> None:
        # Some servers leave out "index" when they send one call per chunk.
        index = raw.get("index")
        call = self.calls.setdefault(
            index if isinstance(index, int) else position, _ToolCallDelta()
        )
        if isinstance(raw.get("id"), str) and raw["id"] and call.id is None:
            call.id = raw["id"]
        function = raw.get("function")
        if not isinstance(function, Mapping):
            return
        name = function.get("name")
        # The name comes whole in the first delta; servers that repeat it are not
        # sending a longer name.
        if isinstance(name, str) and name and name != call.name:
            call.name += name
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            call.arguments.append(arguments)
        elif isinstance(arguments, Mapping):
            call.arguments.append(json.dumps(arguments))

    def final(self, names: ToolNameMap) -> LlmResponse:
        parts: list[Part] = []
        if self.reasoning:
            parts.append(Part(text="".join(self.reasoning), thought=True))
        if self.text:
            parts.append(Part(text="".join(self.text)))
        for index in sorted(self.calls):
            call = self.calls[index]
            function_call = FunctionCall(
                name=names.from_provider(call.name),
                args=_arguments("".join(call.arguments)),
                id=call.id,
            )
            parts.append(Part(function_call=function_call))
        return LlmResponse(
            content=Content(role="model", parts=tuple(parts)),
            finish_reason=self.finish_reason,
            usage=self.usage,
            model_version=self.model_version,
        )


# -- small parsers -------------------------------------------------------------------


def _json_object(data: bytes | str) -> dict[str, Any] | None:
    try:
        value = json.loads(data)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _arguments(raw: Any) -> dict[str, Any]:
    """The call's arguments; text that is not a JSON object (malformed, another JSON
    value, or nested too deep to read) is handed on under `INVALID_JSON_KEY`, for the
    agent loop to tell the model what was wrong."""
    if isinstance(raw, Mapping):
        return dict(raw)
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}
    text = str(raw)
    try:
        value = json.loads(text)
        if isinstance(value, str):
            # Some models encode the arguments twice.
            value = json.loads(value)
    except (ValueError, RecursionError):  # json gives up on deep nesting with the latter
        return {INVALID_JSON_KEY: text}
    return value if isinstance(value, dict) else {INVALID_JSON_KEY: text}


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # a few servers answer in content parts
        return "".join(
            str(p.get("text", "")) for p in content if isinstance(p, Mapping) and "text" in p
        )
    return ""


def _finish_reason(value: Any) -> FinishReason | None:
    if value is None:
        return None
    return _FINISH_REASONS.get(str(value), "other")


def _usage(value: Any) -> Usage | None:
    if not isinstance(value, Mapping):
        return None
    prompt, completion = value.get("prompt_tokens"), value.get("completion_tokens")
    return Usage(
        input_tokens=prompt if isinstance(prompt, int) else 0,
        output_tokens=completion if isinstance(completion, int) else 0,
    )


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _error_message(payload: Mapping[str, Any]) -> str | None:
    # {"error": {"message": ...}} is OpenAI's shape; {"error": "..."} (Ollama) and
    # {"detail": ...} / {"message": ...} (FastAPI-based servers) are common too.
    error = payload.get("error")
    if isinstance(error, Mapping) and isinstance(error.get("message"), str):
        return str(error["message"])
    for value in (error, payload.get("detail"), payload.get("message")):
        if isinstance(value, str) and value:
            return value
    return None


def _truncate(text: str) -> str:
    if len(text) <= _MAX_ERROR_MESSAGE:
        return text
    return text[: _MAX_ERROR_MESSAGE - 1] + "\u2026"


def _invalid_response(message: str) -> LlmResponse:
    return LlmResponse(finish_reason="error", error_code="invalid_response", error_message=message)
