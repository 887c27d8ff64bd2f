"""A model behind the OpenAI Chat Completions API: OpenAI itself, and the local servers
that speak the same wire format (llama.cpp, vLLM, Ollama, LM Studio)."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import httpx2

from toolsets._content import Content, FunctionCall, Part
from toolsets._tool import LlmRequest
from toolsets.models._http_model import (
    CallIds,
    HttpModel,
    arguments,
    invalid_response,
    str_or_none,
)
from toolsets.models._llm import FinishReason, LlmResponse, Usage
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

_FINISH_REASONS: Final[Mapping[str, FinishReason]] = {
    "stop": "stop",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "length": "length",
    "content_filter": "content_filter",
}


class OpenAIChatModel(HttpModel[ToolNameMap]):
    """An `Llm` that calls ``POST {base_url}/chat/completions``.

    Works with OpenAI and with local OpenAI-compatible servers. One pooled
    ``httpx2.AsyncClient`` is opened on first use and closed by `aclose` (or ``async
    with``); a client passed in is used as it is and left open.

    Tool names are made legal for the API (``^[A-Za-z0-9_-]{1,64}$``) on the way out
    and mapped back to the declarations' names on the way in, by `toolsets.schema`.

    Provider errors (an HTTP 4xx or 5xx) are answered as an `LlmResponse` with
    ``error_code`` (``"http_429"``), ``error_message`` and, when the server says how
    long to wait, ``retry_after``; a server that cannot be reached raises
    `toolsets.ConnectionError`. The API key never appears in either.
    """

    _SERVER = "OpenAI-compatible server at"
    _ENV = "OPENAI"
    _API = "a Chat Completions"
    _CONFIG_KEYS = CONFIG_KEYS
    _KEY_SCHEME = "bearer"
    _KEY_HEADER = "authorization"
    _KEY_ENV = ("OPENAI_API_KEY",)

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
        super().__init__(
            model,
            base_url=base_url,
            default_base_url=DEFAULT_BASE_URL,
            endpoint="/chat/completions",
            api_key=api_key,
            http_client=http_client,
            timeout=timeout,
            headers=headers,
        )

    def _auth_headers(self) -> dict[str, str]:
        if self._api_key is None:
            return {}
        return {"Authorization": f"Bearer {self._api_key}"}

    def _translate(self, request: LlmRequest) -> tuple[dict[str, Any], ToolNameMap]:
        tools, names = to_openai_tools(request.declarations.values())
        return self._body(request, tools, names), names

    def _ask_to_stream(self, body: dict[str, Any]) -> None:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}

    def _stream_state(self, names: ToolNameMap) -> _StreamState:
        return _StreamState(names=names)

    def _tool_choice(self, value: Any, names: ToolNameMap) -> Any:
        # A forced tool is named by its declaration; the API knows it by its provider name.
        if isinstance(value, Mapping) and isinstance(value.get("function"), Mapping):
            function = dict(value["function"])
            if isinstance(function.get("name"), str):
                function["name"] = names.to_provider(function["name"])
            return {**value, "function": function}
        return value

    def _stream_error(self, event: dict[str, Any]) -> bool:
        return bool(event.get("error"))

    # -- request ---------------------------------------------------------------------

    def _body(
        self, request: LlmRequest, tools: list[dict[str, Any]], names: ToolNameMap
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": request.model or self._model,
            "messages": _messages(request, names),
        }
        return self._configured(body, tools, request, names)

    # -- response --------------------------------------------------------------------

    def _parse(self, content: bytes, names: ToolNameMap) -> LlmResponse:
        payload = self._payload(content)
        if isinstance(payload, LlmResponse):
            return payload
        choices = payload.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
            return invalid_response("the body has no choices")
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
                        args=arguments(function.get("arguments")),
                        id=call_id if isinstance(call_id, str) and call_id else None,
                    )
                )
            )
        return LlmResponse(
            content=Content(role="model", parts=tuple(parts)),
            finish_reason=_finish_reason(choice.get("finish_reason")),
            usage=_usage(payload.get("usage")),
            model_version=str_or_none(payload.get("model")),
        )


# -- the conversation, in Chat Completions messages --------------------------------------


def _messages(request: LlmRequest, names: ToolNameMap) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    if request.system_instruction:
        messages.append({"role": "system", "content": request.system_instruction})
    ids = CallIds()
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


def _assistant_message(parts: list[Part], names: ToolNameMap, ids: CallIds) -> dict[str, Any]:
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


# -- streaming -----------------------------------------------------------------------


@dataclass
class _ToolCallDelta:
    id: str | None = None
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass
class _StreamState:
    """What the chunks of one stream add up to."""

    names: ToolNameMap
    text: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    calls: dict[int, _ToolCallDelta] = field(default_factory=dict)
    finish_reason: FinishReason | None = None
    usage: Usage | None = None
    model_version: str | None = None

    def add(self, chunk: dict[str, Any]) -> list[LlmResponse]:
        """Take one chunk in; return the partial responses it makes (text deltas)."""
        self.model_version = str_or_none(chunk.get("model")) or self.model_version
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

    def final(self) -> LlmResponse:
        names = self.names
        parts: list[Part] = []
        if self.reasoning:
            parts.append(Part(text="".join(self.reasoning), thought=True))
        if self.text:
            parts.append(Part(text="".join(self.text)))
        for index in sorted(self.calls):
            call = self.calls[index]
            function_call = FunctionCall(
                name=names.from_provider(call.name),
                args=arguments("".join(call.arguments)),
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
