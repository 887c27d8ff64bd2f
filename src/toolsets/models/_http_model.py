"""What every model behind an HTTP API shares, whatever its wire format: the client's
life cycle, the endpoint and the key (never shown), transport errors mapped to
`ConnectionError`, HTTP errors answered as error responses (with ``Retry-After``), the
server-sent events of a stream, and the small parsers of what a server sends."""

from __future__ import annotations

import json
import os
from collections import deque
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AbstractContextManager, asynccontextmanager
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, ClassVar, Final, Generic, Protocol, Self, TypeVar

import httpx2

from toolsets._auth import Secret, check_credential_text, redact
from toolsets._concurrency import check_timeout
from toolsets._content import FunctionCall
from toolsets._declaration import ToolDeclaration
from toolsets._errors import AuthError
from toolsets._http import essence, map_http_errors, retry_after
from toolsets._logs import guard_library_logs
from toolsets._tool import LlmRequest, Tool
from toolsets._urls import safe_url
from toolsets.models._llm import INVALID_JSON_KEY, LlmResponse, check_server_tools
from toolsets.schema import ToolNameMap

__all__ = [
    "CallIds",
    "HttpModel",
    "StreamState",
    "arguments",
    "deferred_declarations",
    "error_message",
    "invalid_response",
    "json_object",
    "retry_after",
    "same_tools",
    "searched_tools",
    "str_or_none",
    "truncate",
]

_CONNECT_TIMEOUT: Final = 10.0
_MAX_ERROR_MESSAGE: Final = 1000
"""A ``Retry-After`` further away than this is not believed (a clock or a server is off)."""


class StreamState(Protocol):
    """What the events of one stream add up to."""

    def add(self, event: dict[str, Any]) -> list[LlmResponse]:
        """Take one event in; return the partial responses it makes (text deltas)."""
        ...

    def final(self) -> LlmResponse:
        """The whole answer."""
        ...


Names = TypeVar("Names", bound=ToolNameMap)
"""What maps the tools' provider names (and arguments) back to their own."""


class HttpModel(Generic[Names]):
    """The HTTP side of a model: one pooled ``httpx2.AsyncClient`` opened on first use
    and closed by `aclose` (or ``async with``); a client passed in is used as it is and
    left open. Subclasses name their wire format and how the key is sent."""

    _SERVER: ClassVar[str]
    """What errors call the server, e.g. ``"Anthropic API at"``."""
    _ENV: ClassVar[str]
    """The prefix of the environment variables read: ``{_ENV}_MODEL``, ``_BASE_URL``,
    ``_API_KEY``."""
    _KEY_SCHEME: ClassVar[str]
    """How the key is sent, named in an `AuthError` about it."""
    _KEY_HEADER: ClassVar[str]
    """The header the key is sent in (lower case)."""
    _KEY_ENV: ClassVar[tuple[str, ...]]
    """The environment variables the key is read from, in order."""
    _API: ClassVar[str]
    """The API, as errors about a request's config name it (``"a Messages API"``)."""
    _CONFIG_KEYS: ClassVar[frozenset[str]]
    """The ``LlmRequest.config`` keys sent as they are."""
    _ERROR_STATUSES: ClassVar[Mapping[str, int]] = {}
    """The HTTP status each of the provider's error types goes with: an error sent as
    data (in a stream) of such a type gets the code an HTTP error of that status gets."""

    def __init__(
        self,
        model: str | None,
        *,
        base_url: str | None,
        default_base_url: str,
        endpoint: str,
        api_key: str | None,
        http_client: httpx2.AsyncClient | None,
        timeout: float,
        headers: Mapping[str, str] | None,
    ) -> None:
        model = model or os.environ.get(f"{self._ENV}_MODEL")
        name = type(self).__name__
        if not model:
            raise ValueError(f"no model given: pass {name}(model=...) or set {self._ENV}_MODEL")
        check_timeout(timeout, "timeout")
        url = httpx2.URL(base_url or os.environ.get(f"{self._ENV}_BASE_URL") or default_base_url)
        if url.scheme not in ("http", "https") or not url.host:
            raise ValueError(f"base_url must be an http(s) URL, got {str(url)!r}")
        self._model = model
        # The endpoint under the root's path, keeping its query (``?api-version=`` and
        # the like).
        self._url = str(url.copy_with(path=url.path.rstrip("/") + endpoint))
        # The URL errors and reprs name: without user info or query, which can hold a
        # password or a key.
        self._target = safe_url(url).rstrip("/")
        key = api_key or os.environ.get(f"{self._ENV}_API_KEY") or None
        if key is not None:
            check_credential_text(key, scheme_name=self._KEY_SCHEME, in_header=True)
        self._api_key = Secret(key) if key is not None else None
        # The provider's own API always wants a key; a server elsewhere (a local
        # OpenAI-compatible one, a proxy that adds the key) may not.
        self._own_api = url.host == httpx2.URL(default_base_url).host
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
        return f"{type(self).__name__}(model={self._model!r}, base_url={self._target!r})"

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

    # -- sending ---------------------------------------------------------------------

    def _auth_headers(self) -> dict[str, str]:
        raise NotImplementedError

    def _check_key(self) -> None:
        """Refuse to send a request the provider's own API would refuse for want of a
        key: its answer may not mention a key at all ("Method doesn't allow
        unregistered callers.")."""
        if self._api_key is not None or not self._own_api:
            return
        given = {name.lower() for name in self._headers}
        if self._client is not None:
            given.update(name.lower() for name in self._client.headers)
            if self._client.auth is not None:
                return  # the client authenticates each request itself
        if given & {self._KEY_HEADER, "authorization"}:
            return
        name = type(self).__name__
        variables = " or ".join(f"${variable}" for variable in self._KEY_ENV)
        raise AuthError(
            f"{name} has no API key for {self._target}: pass {name}(api_key=...) or set "
            f"{variables}; nothing was sent",
            scheme_name=self._KEY_SCHEME,
        )

    def _request_headers(self, *, stream: bool) -> dict[str, str]:
        self._check_key()
        headers = dict(self._headers)
        if stream:
            headers["Accept"] = "text/event-stream"
            # Events are read as they arrive; compression would hold them back.
            headers["Accept-Encoding"] = "identity"
        else:
            headers["Accept"] = "application/json"
        headers.update(self._auth_headers())
        return headers

    def _http(self) -> httpx2.AsyncClient:
        if self._client is None:
            guard_library_logs()
            self._client = httpx2.AsyncClient(
                timeout=httpx2.Timeout(self._timeout, connect=min(self._timeout, _CONNECT_TIMEOUT))
            )
        return self._client

    def _mapped(self) -> AbstractContextManager[None]:
        """httpx2's errors while talking to the server, as `ConnectionError`."""
        return map_http_errors(
            self._SERVER, self._url, target=self._target, secrets=[self._api_key]
        )

    def _redact(self, text: str) -> str:
        # A server may echo the credential it was sent (in an error message, say).
        return redact(text, [self._api_key])

    async def _post(self, body: dict[str, Any]) -> httpx2.Response:
        with self._mapped():
            return await self._http().post(
                self._url, json=body, headers=self._request_headers(stream=False)
            )

    @asynccontextmanager
    async def _open_stream(self, body: dict[str, Any]) -> AsyncIterator[httpx2.Response]:
        with self._mapped():
            async with self._http().stream(
                "POST", self._url, json=body, headers=self._request_headers(stream=True)
            ) as response:
                yield response

    async def generate(
        self, request: LlmRequest, *, stream: bool = False
    ) -> AsyncIterator[LlmResponse]:
        """Answer ``request``: one response, or with ``stream=True`` partial text chunks
        and then the complete response.

        Raises:
            ConnectionError: the server cannot be reached, or the connection fails or
                times out (``target`` is the base URL).
            ValueError: ``request.config`` holds a key this API does not take, or the
                conversation holds what the API cannot carry.
            ToolDefinitionError, SpecError: a declaration cannot be offered, or the
                request holds another provider's server-side tool.
        """
        # No provider-run tools of this wire format's own yet: any is another's.
        check_server_tools(request, model=request.model or self._model, provider=None)
        await self._prepare(request)
        body, names = self._translate(request)
        if not stream:
            response = await self._post(body)
            if response.is_error:
                yield self._http_error(response, response.content)
            else:
                yield self._parse(response.content, names)
            return
        self._ask_to_stream(body)
        async for answer in self._streamed(body, names):
            yield answer

    # What each wire format says in its own words.

    async def _prepare(self, request: LlmRequest) -> None:
        """Work `_translate` needs that may take a while (a big catalogue's first
        translation), done before it off the event loop; by default none."""

    def _translate(self, request: LlmRequest) -> tuple[dict[str, Any], Names]:
        """The request's body, and the map of the tools' names (and arguments) back."""
        raise NotImplementedError

    def _parse(self, content: bytes, names: Names) -> LlmResponse:
        """A whole answer's body (`_payload` reads its JSON)."""
        raise NotImplementedError

    def _payload(self, content: bytes) -> dict[str, Any] | LlmResponse:
        """A whole answer's JSON object, or the error response it makes: a body that
        is not a JSON object, or an error the server sent with a success status."""
        payload = json_object(content)
        if payload is None:
            shown = content[:200].decode("utf-8", "replace")
            return invalid_response(self._redact(f"the body is not a JSON object: {shown}"))
        if self._stream_error(payload):
            return self._provider_error(payload, code="provider_error")
        return payload

    def _tool_choice(self, value: Any, names: Names) -> Any:
        """``config["tool_choice"]`` as the API takes it (a forced tool by its
        provider name)."""
        raise NotImplementedError

    def _configured(
        self, body: dict[str, Any], tools: list[dict[str, Any]], request: LlmRequest, names: Names
    ) -> dict[str, Any]:
        """``body`` with the ``tools`` (if any) and the request's config: the keys the
        API takes (`_CONFIG_KEYS`) as they are, ``tool_choice`` translated,
        ``extra_body`` (a mapping) merged in.

        Raises:
            ValueError: any other key (a misspelt option must not go unnoticed).
        """
        if tools:
            body["tools"] = tools
        for key, value in request.config.items():
            if key == "extra_body":
                if not isinstance(value, Mapping):
                    raise ValueError("request.config['extra_body'] must be a mapping")
                body.update(value)
            elif key == "tool_choice":
                body[key] = self._tool_choice(value, names)
            elif key in self._CONFIG_KEYS:
                body[key] = value
            else:
                raise ValueError(
                    f"request.config key {key!r} is not {self._API} option; use one of "
                    f"{sorted(self._CONFIG_KEYS)}, or pass other options in "
                    "config['extra_body']"
                )
        return body

    def _ask_to_stream(self, body: dict[str, Any]) -> None:
        body["stream"] = True

    def _stream_state(self, names: Names) -> StreamState:
        raise NotImplementedError

    def _stream_error(self, event: dict[str, Any]) -> bool:
        """Whether a stream event (or a body) is the server's error."""
        raise NotImplementedError

    async def _streamed(self, body: dict[str, Any], names: Names) -> AsyncIterator[LlmResponse]:
        """Send ``body`` and read the answer as server-sent events, each event's JSON
        object added to a `StreamState` until the end or an error event. A server that
        answers in one piece (it cannot stream, or ignored the request to) is read
        whole; an HTTP error is an error response."""
        async with self._open_stream(body) as response:
            if response.is_error:
                yield self._http_error(response, await self._read(response))
                return
            if essence(response.headers.get("content-type", "")) != "text/event-stream":
                yield self._parse(await self._read(response), names)
                return
            state = self._stream_state(names)
            outcome: LlmResponse | None = None
            done = False
            # The stream is read to its end even after "[DONE]" or an error: httpx2
            # cannot close a response's inner generators when its reader stops early,
            # and an abandoned generator is finalized whenever the garbage collector
            # gets to it (trio warns). Servers end the response right after "[DONE]".
            async for data in self._events(response):
                if done or outcome is not None:
                    continue
                if data == "[DONE]":  # OpenAI's end of stream
                    done = True
                    continue
                event = json_object(data)
                if event is None:
                    shown = self._redact(data[:200])
                    outcome = invalid_response(f"a stream event is not a JSON object: {shown}")
                elif self._stream_error(event):
                    outcome = self._provider_error(event, code="stream_error")
                else:
                    for partial in state.add(event):
                        yield partial
            yield outcome if outcome is not None else state.final()

    async def _read(self, response: httpx2.Response) -> bytes:
        with self._mapped():
            return await response.aread()

    async def _events(self, response: httpx2.Response) -> AsyncIterator[str]:
        """The data of each server-sent event (the event's name is not needed: both
        wire formats repeat it in the data)."""
        with self._mapped():
            async for event in httpx2.EventSource(response):
                yield event.data

    # -- errors ----------------------------------------------------------------------

    def _http_error(self, response: httpx2.Response, content: bytes) -> LlmResponse:
        """An HTTP 4xx or 5xx as an error response: ``http_<status>``, the provider's
        message, and how long the server asks to wait before trying again."""
        payload = json_object(content)
        message = error_message(payload) if payload is not None else None
        if message is None:
            message = content.decode("utf-8", "replace").strip() or f"HTTP {response.status_code}"
        return LlmResponse(
            finish_reason="error",
            error_code=f"http_{response.status_code}",
            error_message=truncate(self._redact(message)),
            retry_after=retry_after(response.headers),
        )

    def _provider_error(self, payload: Mapping[str, Any], *, code: str) -> LlmResponse:
        """An error the server sent as data (in a body or a stream event), its code the
        one an HTTP error gets (``http_<status>``) when its type goes with a status
        (`_ERROR_STATUSES`), else the error's own ``code`` or ``type`` when it has one."""
        error = payload.get("error")
        if isinstance(error, Mapping):
            given = error.get("code") or error.get("type")
            if isinstance(given, str | int) and not isinstance(given, bool):
                status = self._ERROR_STATUSES.get(str(given))
                code = str(given) if status is None else f"http_{status}"
        message = error_message(payload) or "the server answered with an error"
        return LlmResponse(
            finish_reason="error", error_code=code, error_message=truncate(self._redact(message))
        )


# -- the pairing of calls and results ------------------------------------------------------


@dataclass
class CallIds:
    """Ids for calls and responses that have none, so each result answers the call it
    belongs to (the APIs require the pairing)."""

    prefix: str = "call_"
    pending: dict[str, deque[str]] = field(default_factory=dict)
    count: int = 0

    def for_call(self, call: FunctionCall) -> str:
        call_id = call.id
        if not call_id:
            self.count += 1
            call_id = f"{self.prefix}{self.count}"
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
        return f"{self.prefix}{self.count}"


# -- the provider's own tool search ---------------------------------------------------


def searched_tools(request: LlmRequest) -> tuple[tuple[ToolDeclaration, ...], tuple[Tool, ...]]:
    """What a request sent with its provider's tool search offers: the declarations
    sent as they are (all but the local search tool and the deferred tools), and the
    deferred tools."""
    offered = tuple(
        d
        for name, d in request.declarations.items()
        if name != request.local_search and name not in request.deferred
    )
    return offered, tuple(request.deferred.values())


def deferred_declarations(request: LlmRequest, deferred: Sequence[Tool]) -> list[ToolDeclaration]:
    """The declarations the deferred tools are sent under: a declared one's declaration,
    another's call declaration; one that has neither is left out."""
    declarations: list[ToolDeclaration] = []
    for tool in deferred:
        declaration = request.declarations.get(tool.name) or tool.call_declaration()
        if declaration is not None:
            declarations.append(declaration)
    return declarations


def same_tools(a: Sequence[Tool], b: Sequence[Tool]) -> bool:
    """Whether two lists hold the same tool objects (which make the same declarations:
    a tool's declaration does not change, and `searchable` wraps a loaded tool in
    another object)."""
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


# -- small parsers -------------------------------------------------------------------


def json_object(data: bytes | str) -> dict[str, Any] | None:
    """``data`` read as a JSON object, or None (not JSON, another value, or nested too
    deep to read)."""
    try:
        value = json.loads(data)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def arguments(raw: Any) -> dict[str, Any]:
    """A call's arguments; text that is not a JSON object (malformed, another JSON
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


def str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def error_message(payload: Mapping[str, Any]) -> str | None:
    """The message of an error body: ``{"error": {"message": ...}}`` (OpenAI, and
    Anthropic inside its ``{"type": "error"}``), ``{"error": "..."}`` (Ollama), or
    ``{"detail": ...}`` / ``{"message": ...}`` (FastAPI-based servers)."""
    error = payload.get("error")
    if isinstance(error, Mapping) and isinstance(error.get("message"), str):
        return str(error["message"])
    for value in (error, payload.get("detail"), payload.get("message")):
        if isinstance(value, str) and value:
            return value
    return None


def truncate(text: str) -> str:
    if len(text) <= _MAX_ERROR_MESSAGE:
        return text
    return text[: _MAX_ERROR_MESSAGE - 1] + "\u2026"


def invalid_response(message: str) -> LlmResponse:
    return LlmResponse(finish_reason="error", error_code="invalid_response", error_message=message)
