"""A model behind the Gemini API (``generateContent`` and ``streamGenerateContent``),
spoken over httpx2 without Google's SDK."""

from __future__ import annotations

import base64
import binascii
import dataclasses
import os
import re
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal
from urllib.parse import quote

import httpx2

from toolsets._content import (
    Blob,
    CodeExecutionResult,
    Content,
    ExecutableCode,
    FileData,
    FunctionCall,
    Part,
)
from toolsets._http import essence
from toolsets._ids import new_id
from toolsets._json import JsonValue
from toolsets._results import INVALID_JSON_KEY
from toolsets._tool import LlmRequest
from toolsets.models._http_model import (
    HttpModel,
    invalid_response,
    json_object,
    retry_after,
    str_or_none,
    truncate,
)
from toolsets.models._llm import (
    FinishReason,
    Grounding,
    GroundingSource,
    LlmResponse,
    Usage,
    check_server_tools,
)
from toolsets.schema import ToolCallMap, to_gemini_declarations

__all__ = [
    "GENERATION_CONFIG_KEYS",
    "GEMINI_DEFAULT_BASE_URL",
    "PARAMETERS_ONLY_MODELS",
    "GeminiModel",
    "SchemaForm",
]

SchemaForm = Literal["auto", "parameters", "json_schema"]
"""How `GeminiModel` declares a tool's parameters (see its ``schema_form``)."""

PARAMETERS_ONLY_MODELS: Final = re.compile(r"gemini-(1\.\d.*|pro|pro-vision|ultra)")
"""The models (their names, whole) that ``schema_form="auto"`` declares parameters for
in the OpenAPI-subset ``parameters``: the first generation (``gemini-1.0-pro``,
``gemini-1.5-flash``, and its first names ``gemini-pro``, ``gemini-pro-vision``,
``gemini-ultra``), which came before ``parametersJsonSchema``. Every later model takes
``parametersJsonSchema``."""

GEMINI_DEFAULT_BASE_URL: Final = "https://generativelanguage.googleapis.com/v1beta"
"""Where requests go when neither ``base_url`` nor ``GEMINI_BASE_URL`` says otherwise."""

GENERATION_CONFIG_KEYS: Final = frozenset(
    {
        "temperature",
        "topP",
        "topK",
        "maxOutputTokens",
        "stopSequences",
        "seed",
        "presencePenalty",
        "frequencyPenalty",
        "responseMimeType",
        "responseSchema",
        "responseJsonSchema",
        "responseModalities",
        "responseLogprobs",
        "logprobs",
        "thinkingConfig",
        "mediaResolution",
        "speechConfig",
    }
)
"""``LlmRequest.config`` keys sent in ``generationConfig`` (also accepted in snake case,
``max_output_tokens``; ``max_tokens`` and ``stop``, as other models name them, are
``maxOutputTokens`` and ``stopSequences``). ``safetySettings``, ``toolConfig``,
``cachedContent`` and ``labels`` go at the request's top level, ``extra_body`` (a mapping)
is merged into it; any other key is an error, so a misspelt option does not go unnoticed.
(``candidateCount`` is not offered: one answer is read.)"""

_TOP_LEVEL_KEYS: Final = frozenset({"safetySettings", "toolConfig", "cachedContent", "labels"})
_ALIASES: Final[Mapping[str, str]] = {"max_tokens": "maxOutputTokens", "stop": "stopSequences"}

_PROVIDER: Final = "gemini"
_SIGNATURE: Final = "thoughtSignature"
_CALL_ID: Final = "callId"  # the id Gemini gave a call (absent: the id is ours)
_UNREAD: Final = "args"  # the arguments of a call that could not be read back

_FINISH_REASONS: Final[Mapping[str, FinishReason]] = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "IMAGE_SAFETY": "content_filter",
    "IMAGE_PROHIBITED_CONTENT": "content_filter",
}
# Finish reasons that mean the model's answer is unusable, answered as errors.
_FAILURES: Final = frozenset({"MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL"})


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


class GeminiModel(HttpModel[ToolCallMap]):
    """An `Llm` that calls ``POST {base_url}/models/{model}:generateContent`` (and
    ``:streamGenerateContent?alt=sse`` when streaming).

    One pooled ``httpx2.AsyncClient`` is opened on first use and closed by `aclose` (or
    ``async with``); a client passed in is used as it is and left open. The API key goes
    in the ``x-goog-api-key`` header, never in the URL.

    Declarations are sent in Gemini's dialect by `toolsets.schema` (names made legal,
    calls' names and arguments mapped back exactly). Calls without an id get one here,
    and only ids Gemini gave are sent back. The opaque ``thoughtSignature`` Gemini puts
    on a part is kept in the part's ``provider_data`` and sent back unchanged with it, as
    Gemini requires for function calling with thinking models. Code the model ran
    (``executableCode``, ``codeExecutionResult``) becomes parts of their own, and
    ``groundingMetadata`` the response's `Grounding`.

    Provider errors (an HTTP 4xx or 5xx, or an error in a stream, which names its HTTP
    status; a blocked prompt; a malformed call) are
    answered as an `LlmResponse` with ``error_code`` (``"http_429"``,
    ``"prompt_blocked"``, ``"malformed_function_call"``), ``error_message`` and
    ``retry_after`` (from Gemini's ``RetryInfo``, else ``Retry-After``); a server that
    cannot be reached raises `toolsets.ConnectionError`. The API key appears in neither.
    """

    _SERVER = "Gemini API at"
    _ENV = "GEMINI"
    _KEY_SCHEME = "x-goog-api-key"
    _KEY_HEADER = "x-goog-api-key"
    _KEY_ENV = ("GEMINI_API_KEY", "GOOGLE_API_KEY")

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        http_client: httpx2.AsyncClient | None = None,
        timeout: float = 120.0,
        headers: Mapping[str, str] | None = None,
        schema_form: SchemaForm = "auto",
    ) -> None:
        """Configure the model; nothing is sent until `generate`.

        Args:
            model: The model to call (``gemini-2.5-flash``; a ``models/`` prefix is
                accepted); default ``$GEMINI_MODEL``. A request's own ``model`` wins.
            base_url: The API root, up to and including the version
                (``.../v1beta``); default ``$GEMINI_BASE_URL``, else
                ``https://generativelanguage.googleapis.com/v1beta``.
            api_key: Sent as ``x-goog-api-key``; default ``$GEMINI_API_KEY``, else
                ``$GOOGLE_API_KEY``. With none, no key is sent (a local server, a proxy
                that adds it).
            http_client: A client to use instead of opening one; never closed here,
                and its own timeouts apply.
            timeout: Seconds to wait for each read, write or pool slot of the client
                opened here (connecting waits at most 10 s).
            headers: Extra headers for every request.
            schema_form: How parameters are declared: ``"json_schema"``
                (``parametersJsonSchema``: the tool's JSON Schema as it is, which every
                current model takes), ``"parameters"`` (Gemini's OpenAPI-subset
                ``Schema``, which older models and some proxies need: what it cannot
                say is carried as entries or JSON text, and mapped back), or
                ``"auto"``: ``"json_schema"``, except for the first generation's
                models (``gemini-1.0-pro``, ``gemini-1.5-*``, ``gemini-pro``...), which
                came before ``parametersJsonSchema``. Decided per request, for the
                model it names.

        Raises:
            ValueError: no model is named, the base URL is not http(s), the timeout is
                not a positive number, or the schema form is unknown.
            AuthError: the API key holds a control character or a non-ASCII
                character, which no header can carry (the key is not shown).
        """
        if schema_form not in ("auto", "parameters", "json_schema"):
            raise ValueError(
                f"schema_form must be 'auto', 'parameters' or 'json_schema', got {schema_form!r}"
            )
        root = httpx2.URL(base_url or os.environ.get("GEMINI_BASE_URL") or GEMINI_DEFAULT_BASE_URL)
        if "key" in root.params:
            raise ValueError(
                "base_url holds a 'key' query parameter: pass the API key as api_key (or "
                "$GEMINI_API_KEY); it is sent in the x-goog-api-key header, never in the URL"
            )
        super().__init__(
            model,
            base_url=base_url,
            default_base_url=GEMINI_DEFAULT_BASE_URL,
            endpoint="",  # the model and the method are in the path: see _endpoint
            api_key=api_key or os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY"),
            http_client=http_client,
            timeout=timeout,
            headers=headers,
        )
        self._model = self._model.removeprefix("models/")
        self._schema_form: SchemaForm = schema_form

    async def generate(
        self, request: LlmRequest, *, stream: bool = False
    ) -> AsyncIterator[LlmResponse]:
        """Answer ``request``: one response, or with ``stream=True`` partial text chunks
        and then the complete response.

        Raises:
            ConnectionError: the server cannot be reached, or the connection fails or
                times out (``target`` is the base URL).
            ValueError: ``request.config`` holds a key this API does not take.
            ToolDefinitionError, SpecError: a declaration cannot be offered, or a
                server-side tool is another provider's.
        """
        model = (request.model or self._model).removeprefix("models/")
        body, calls = self._translate(request)
        url = self._endpoint(model, stream=stream)
        if stream:
            async for response in self._stream(url, body, calls):
                yield response
        else:
            yield await self._complete(url, body, calls)

    def _translate(self, request: LlmRequest) -> tuple[dict[str, Any], ToolCallMap]:
        """The request's body, and the map of the tools' names (and arguments) back."""
        model = (request.model or self._model).removeprefix("models/")
        server_tools = check_server_tools(request, model=model, provider=_PROVIDER)
        form = self._schema_form
        if form == "auto":
            form = "parameters" if PARAMETERS_ONLY_MODELS.fullmatch(model) else "json_schema"
        declarations, calls = to_gemini_declarations(request.declarations.values(), form=form)
        body = _body(request, calls)
        tools: list[dict[str, Any]] = []
        if declarations:
            tools.append({"functionDeclarations": declarations})
        tools.extend(dict(tool.wire) for tool in server_tools)
        if tools:
            body["tools"] = tools
        return body, calls

    def _parse(self, content: bytes, calls: ToolCallMap) -> LlmResponse:
        """The whole answer in ``content`` (a ``generateContent`` body)."""
        return self._read_whole(content, calls)

    # -- request ---------------------------------------------------------------------

    def _endpoint(self, model: str, *, stream: bool) -> str:
        root = httpx2.URL(self._url)
        method = "streamGenerateContent" if stream else "generateContent"
        url = root.copy_with(path=f"{root.path}/models/{quote(model, safe='')}:{method}")
        return str(url.copy_merge_params({"alt": "sse"}) if stream else url)

    def _auth_headers(self) -> dict[str, str]:
        return {} if self._api_key is None else {"x-goog-api-key": str(self._api_key)}

    # -- response --------------------------------------------------------------------

    async def _complete(self, url: str, body: dict[str, Any], calls: ToolCallMap) -> LlmResponse:
        with self._mapped():
            response = await self._http().post(
                url, json=body, headers=self._request_headers(stream=False)
            )
        if response.is_error:
            return self._http_error(response, response.content)
        return self._read_whole(response.content, calls)

    def _read_whole(self, content: bytes, calls: ToolCallMap) -> LlmResponse:
        payload = json_object(content)
        if payload is None:
            shown = content[:200].decode("utf-8", "replace")
            return invalid_response(self._redact(f"the body is not a JSON object: {shown}"))
        state = _Answer()
        state.add(payload)
        return self._outcome(state, payload, calls)

    async def _stream(
        self, url: str, body: dict[str, Any], calls: ToolCallMap
    ) -> AsyncIterator[LlmResponse]:
        with self._mapped():
            async with self._http().stream(
                "POST", url, json=body, headers=self._request_headers(stream=True)
            ) as response:
                if response.is_error:
                    yield self._http_error(response, await self._read(response))
                    return
                if essence(response.headers.get("content-type", "")) != "text/event-stream":
                    # A server that cannot stream answers in one piece.
                    yield self._read_whole(await self._read(response), calls)
                    return
                state = _Answer()
                failed: LlmResponse | None = None
                last: Mapping[str, Any] = {}
                # Read to the end even after an error, so that httpx2 closes its
                # generators now rather than whenever they are collected.
                async for data in self._events(response):
                    if failed is not None or not data.strip():
                        continue
                    chunk = json_object(data)
                    if chunk is None:
                        shown = self._redact(data[:200])
                        failed = invalid_response(f"a stream event is not a JSON object: {shown}")
                        continue
                    if isinstance(chunk.get("error"), Mapping):
                        failed = self._error(chunk["error"], code=_stream_code(chunk["error"]))
                        continue
                    last = chunk
                    for piece in state.add(chunk):
                        yield LlmResponse(
                            content=Content(role="model", parts=(piece,)),
                            partial=True,
                            model_version=state.model_version,
                        )
                yield failed if failed is not None else self._outcome(state, last, calls)

    def _outcome(
        self, state: _Answer, payload: Mapping[str, Any], calls: ToolCallMap
    ) -> LlmResponse:
        feedback = payload.get("promptFeedback")
        if state.finish is None and not state.parts and isinstance(feedback, Mapping):
            reason = feedback.get("blockReason")
            if isinstance(reason, str):
                message = feedback.get("blockReasonMessage")
                return LlmResponse(
                    finish_reason="content_filter",
                    error_code="prompt_blocked",
                    error_message=f"Gemini blocked the prompt ({reason})"
                    + (f": {message}" if isinstance(message, str) and message else ""),
                    usage=state.usage,
                    model_version=state.model_version,
                )
        if state.finish in _FAILURES:
            detail = state.finish_message or "the model's function call could not be read"
            return LlmResponse(
                finish_reason="error",
                error_code=state.finish.lower(),
                error_message=truncate(self._redact(detail)),
                usage=state.usage,
                model_version=state.model_version,
            )
        content = state.content(calls)
        finish: FinishReason | None = None
        if state.finish is not None:
            finish = _FINISH_REASONS.get(state.finish, "other")
            if finish == "stop" and content.function_calls:
                finish = "tool_calls"
        return LlmResponse(
            content=content,
            finish_reason=finish,
            usage=state.usage,
            model_version=state.model_version,
            grounding=state.grounding(),
        )

    def _http_error(self, response: httpx2.Response, content: bytes) -> LlmResponse:
        payload = json_object(content)
        error = payload.get("error") if payload is not None else None
        if not isinstance(error, Mapping):
            return super()._http_error(response, content)
        answer = self._error(error, code=f"http_{response.status_code}")
        header = retry_after(response.headers)
        if header is None or answer.retry_after is not None:
            return answer
        return dataclasses.replace(answer, retry_after=header)

    def _error(self, error: Mapping[str, Any], *, code: str) -> LlmResponse:
        """Google's error object (``code``, ``message``, ``status``, ``details``) as an
        error response: its message (else its status), and ``retry_after`` from a
        ``google.rpc.RetryInfo`` detail."""
        message, status = error.get("message"), error.get("status")
        text = str_or_none(message) or str_or_none(status) or "the server answered with an error"
        wait: float | None = None
        details = error.get("details")
        for detail in details if isinstance(details, list) else ():
            if isinstance(detail, Mapping) and str(detail.get("@type", "")).endswith(
                "google.rpc.RetryInfo"
            ):
                wait = _seconds(detail.get("retryDelay"))
        return LlmResponse(
            finish_reason="error",
            error_code=code,
            error_message=truncate(self._redact(text)),
            retry_after=wait,
        )


def _seconds(value: Any) -> float | None:
    """A protobuf Duration in JSON (``"37s"``, ``"1.5s"``) in seconds."""
    if not isinstance(value, str) or not value.endswith("s"):
        return None
    try:
        seconds = float(value[:-1])
    except ValueError:
        return None
    return seconds if 0 <= seconds < 86_400 else None


# -- the conversation, in Gemini contents ------------------------------------------------


def _body(request: LlmRequest, calls: ToolCallMap) -> dict[str, Any]:
    system: list[str] = [request.system_instruction] if request.system_instruction else []
    contents: list[dict[str, Any]] = []
    given_ids: set[str] = set()
    for content in request.contents:
        if content.role == "system":
            system.extend(p.text for p in content.parts if p.text)
            continue
        role = "model" if content.role == "model" else "user"
        parts = [_wire_part(p, calls, given_ids) for p in content.parts]
        wire = [p for p in parts if p is not None]
        if not wire:
            continue
        if contents and contents[-1]["role"] == role:
            # Gemini wants the turns to alternate; a tool turn and the user's text
            # after it are one user turn.
            contents[-1]["parts"].extend(wire)
        else:
            contents.append({"role": role, "parts": wire})
    body: dict[str, Any] = {"contents": contents}
    if system:
        body["systemInstruction"] = {"parts": [{"text": "\n\n".join(system)}]}
    generation: dict[str, Any] = {}
    for key, value in request.config.items():
        if key == "extra_body":
            if not isinstance(value, Mapping):
                raise ValueError("request.config['extra_body'] must be a mapping")
            body.update(value)
            continue
        name = _ALIASES.get(key) or _camel(key)
        if name in GENERATION_CONFIG_KEYS:
            generation[name] = value
        elif name == "toolConfig":
            body[name] = _tool_config(value, calls)
        elif name in _TOP_LEVEL_KEYS:
            body[name] = value
        else:
            raise ValueError(
                f"request.config key {key!r} is not a Gemini generation option; use one of "
                f"{sorted(GENERATION_CONFIG_KEYS | _TOP_LEVEL_KEYS)}, or pass others in "
                "config['extra_body']"
            )
    if generation:
        body["generationConfig"] = generation
    return body


def _stream_code(error: Mapping[str, Any]) -> str:
    """The code of an error in a stream: the one an HTTP error gets (``http_<status>``)
    when it names its HTTP status (Google's ``code``), else ``"stream_error"``."""
    status = error.get("code")
    if isinstance(status, int) and not isinstance(status, bool) and 400 <= status <= 599:
        return f"http_{status}"
    return "stream_error"


def _tool_config(value: Any, calls: ToolCallMap) -> Any:
    """``toolConfig`` with the tools ``allowedFunctionNames`` names by their declarations
    named as the API knows them (their provider names)."""
    if not isinstance(value, Mapping):
        return value
    calling = value.get("functionCallingConfig")
    if not isinstance(calling, Mapping):
        return value
    allowed = calling.get("allowedFunctionNames")
    if not isinstance(allowed, list | tuple):
        return value
    names = [calls.to_provider(str(name)) for name in allowed]
    return {**value, "functionCallingConfig": {**calling, "allowedFunctionNames": names}}


def _wire_part(part: Part, calls: ToolCallMap, given_ids: set[str]) -> dict[str, Any] | None:
    data = (part.provider_data or {}).get(_PROVIDER, {})
    out: dict[str, Any]
    if part.text is not None:
        out = {"text": part.text}
        if part.thought:
            out["thought"] = True
    elif part.inline_data is not None:
        encoded = base64.b64encode(part.inline_data.data).decode("ascii")
        out = {"inlineData": {"mimeType": part.inline_data.mime_type, "data": encoded}}
    elif part.file_data is not None:
        file: dict[str, Any] = {"fileUri": part.file_data.uri}
        if part.file_data.mime_type:
            file["mimeType"] = part.file_data.mime_type
        out = {"fileData": file}
    elif part.function_call is not None:
        call = part.function_call
        unread = data.get(_UNREAD)
        if INVALID_JSON_KEY in call.args and isinstance(unread, Mapping):
            # Arguments that could not be read back: as the model sent them.
            wire_name, args = calls.to_provider(call.name), dict(unread)
        else:  # as the model made the call (its dialect: names, entries, JSON text)
            wire_name, args = calls.encode(call.name, call.args)
        wire_call: dict[str, Any] = {"name": wire_name, "args": args}
        given = data.get(_CALL_ID)
        if isinstance(given, str) and given:
            wire_call["id"] = given
            given_ids.add(given)
        out = {"functionCall": wire_call}
    elif part.function_response is not None:
        answer = part.function_response
        result = answer.response
        wire_answer: dict[str, Any] = {
            "name": calls.to_provider(answer.name),
            # Gemini takes an object; any other result is wrapped.
            "response": result if isinstance(result, dict) else {"result": result},
        }
        if answer.id is not None and answer.id in given_ids:
            wire_answer["id"] = answer.id
        out = {"functionResponse": wire_answer}
    elif part.executable_code is not None:
        code = part.executable_code
        out = {"executableCode": {"language": code.language, "code": code.code}}
    elif part.code_execution_result is not None:
        done = part.code_execution_result
        out = {"codeExecutionResult": {"outcome": done.outcome, "output": done.output}}
    else:  # pragma: no cover - a Part always holds one payload
        return None
    signature = data.get(_SIGNATURE)
    if isinstance(signature, str) and signature:
        out[_SIGNATURE] = signature
    return out


# -- the answer, from one response or the chunks of a stream -----------------------------


@dataclass
class _Answer:
    """What one response, or the chunks of a stream, add up to: the candidate's parts
    (consecutive text merged), its finish reason, usage and grounding."""

    parts: list[dict[str, Any]] = field(default_factory=list)
    finish: str | None = None
    finish_message: str | None = None
    usage: Usage | None = None
    model_version: str | None = None
    grounding_metadata: dict[str, Any] = field(default_factory=dict)

    def add(self, chunk: Mapping[str, Any]) -> list[Part]:
        """Take a response (or a chunk) in; return the text it adds, as parts."""
        self.model_version = str_or_none(chunk.get("modelVersion")) or self.model_version
        self.usage = _usage(chunk.get("usageMetadata")) or self.usage
        candidates = chunk.get("candidates")
        if not isinstance(candidates, list) or not candidates:
            return []
        candidate = candidates[0]
        if not isinstance(candidate, Mapping):
            return []
        reason = candidate.get("finishReason")
        if isinstance(reason, str) and reason != "FINISH_REASON_UNSPECIFIED":
            self.finish = reason
            self.finish_message = str_or_none(candidate.get("finishMessage"))
        for key in ("groundingMetadata", "urlContextMetadata"):
            if isinstance(candidate.get(key), Mapping):
                self.grounding_metadata[key] = dict(candidate[key])
        content = candidate.get("content")
        raw_parts = content.get("parts") if isinstance(content, Mapping) else None
        deltas: list[Part] = []
        for raw in raw_parts if isinstance(raw_parts, list) else ():
            if not isinstance(raw, Mapping):
                continue
            text = raw.get("text")
            if isinstance(text, str):
                thought = raw.get("thought") is True
                if text:
                    deltas.append(Part(text=text, thought=thought))
                last = self.parts[-1] if self.parts else None
                # A signed piece stays a part of its own, to go back as it came.
                if (
                    last is not None
                    and isinstance(last.get("text"), str)
                    and (last.get("thought") is True) == thought
                    and _SIGNATURE not in last
                    and _SIGNATURE not in raw
                ):
                    last["text"] += text
                    continue
            self.parts.append(dict(raw))
        return deltas

    def content(self, calls: ToolCallMap) -> Content:
        parts = [p for p in (_part(raw, calls) for raw in self.parts) if p is not None]
        return Content(role="model", parts=tuple(parts))

    def grounding(self) -> Grounding | None:
        if not self.grounding_metadata:
            return None
        search = self.grounding_metadata.get("groundingMetadata", {})
        queries = search.get("webSearchQueries")
        sources: list[GroundingSource] = []
        chunks = search.get("groundingChunks")
        for chunk in chunks if isinstance(chunks, list) else ():
            web = chunk.get("web") if isinstance(chunk, Mapping) else None
            if isinstance(web, Mapping) and isinstance(web.get("uri"), str):
                sources.append(GroundingSource(uri=web["uri"], title=str_or_none(web.get("title"))))
        entry = search.get("searchEntryPoint")
        rendered = entry.get("renderedContent") if isinstance(entry, Mapping) else None
        return Grounding(
            queries=tuple(q for q in queries if isinstance(q, str))
            if isinstance(queries, list)
            else (),
            sources=tuple(sources),
            search_entry_point=rendered if isinstance(rendered, str) else None,
            raw=self.grounding_metadata,
        )


def _part(raw: Mapping[str, Any], calls: ToolCallMap) -> Part | None:
    data: dict[str, JsonValue] = {}
    signature = raw.get(_SIGNATURE)
    if isinstance(signature, str) and signature:
        data[_SIGNATURE] = signature
    payload = _payload(raw, calls, data)
    if payload is None:
        return None
    # A signature (and Gemini's own call id) goes back with the part it came with.
    return Part(**payload, provider_data={_PROVIDER: data} if data else None)


def _payload(
    raw: Mapping[str, Any], calls: ToolCallMap, data: dict[str, JsonValue]
) -> dict[str, Any] | None:
    if isinstance(raw.get("text"), str):
        return {"text": raw["text"], "thought": raw.get("thought") is True}
    if isinstance(raw.get("functionCall"), Mapping):
        call = raw["functionCall"]
        args = call.get("args")
        sent = args if isinstance(args, Mapping) else {}
        name, arguments = calls.restore(str(call.get("name") or ""), sent)
        if INVALID_JSON_KEY in arguments:
            data[_UNREAD] = dict(sent)  # to show the model its call as it made it
        given = call.get("id")
        if isinstance(given, str) and given:
            data[_CALL_ID] = given
        call_id = given if isinstance(given, str) and given else new_id("call_")
        return {"function_call": FunctionCall(name=name, args=arguments, id=call_id)}
    if isinstance(raw.get("inlineData"), Mapping):
        blob = raw["inlineData"]
        try:
            decoded = base64.b64decode(str(blob.get("data") or ""), validate=True)
        except (binascii.Error, ValueError):
            return None
        mime = str(blob.get("mimeType") or "application/octet-stream")
        return {"inline_data": Blob(mime_type=mime, data=decoded)}
    if isinstance(raw.get("fileData"), Mapping):
        file = raw["fileData"]
        if not isinstance(file.get("fileUri"), str):
            return None
        mime_type = str_or_none(file.get("mimeType"))
        return {"file_data": FileData(uri=file["fileUri"], mime_type=mime_type)}
    if isinstance(raw.get("executableCode"), Mapping):
        code = raw["executableCode"]
        language = str(code.get("language") or "PYTHON")
        return {
            "executable_code": ExecutableCode(code=str(code.get("code") or ""), language=language)
        }
    if isinstance(raw.get("codeExecutionResult"), Mapping):
        done = raw["codeExecutionResult"]
        result = CodeExecutionResult(
            outcome=str(done.get("outcome") or "OUTCOME_UNSPECIFIED"),
            output=str(done.get("output") or ""),
        )
        return {"code_execution_result": result}
    return None


def _usage(value: Any) -> Usage | None:
    if not isinstance(value, Mapping):
        return None
    prompt = value.get("promptTokenCount")
    answer = value.get("candidatesTokenCount")
    thoughts = value.get("thoughtsTokenCount")
    return Usage(
        input_tokens=prompt if isinstance(prompt, int) else 0,
        output_tokens=(answer if isinstance(answer, int) else 0)
        + (thoughts if isinstance(thoughts, int) else 0),
    )
