"""Small readers shared by the models that speak a provider's HTTP wire format."""

from __future__ import annotations

import json
from collections.abc import Mapping
from types import TracebackType
from typing import Any, Final, Self

import httpx2

from toolsets._concurrency import check_timeout
from toolsets._urls import safe_url
from toolsets.models._llm import LlmResponse

__all__ = [
    "MAX_ERROR_MESSAGE",
    "HttpModel",
    "invalid_response",
    "json_object",
    "str_or_none",
    "truncate",
]

_CONNECT_TIMEOUT: Final = 10.0

MAX_ERROR_MESSAGE: Final = 1000
"""The longest provider error message handed on (longer ones are cut, with an ellipsis)."""


def json_object(data: bytes | str) -> dict[str, Any] | None:
    """``data`` read as a JSON object; None when it is not one (or nests too deep)."""
    try:
        value = json.loads(data)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def str_or_none(value: Any) -> str | None:
    """``value`` when it is a non-empty string."""
    return value if isinstance(value, str) and value else None


def truncate(text: str) -> str:
    """``text`` cut to `MAX_ERROR_MESSAGE` characters."""
    if len(text) <= MAX_ERROR_MESSAGE:
        return text
    return text[: MAX_ERROR_MESSAGE - 1] + "\u2026"


def invalid_response(message: str) -> LlmResponse:
    """The answer to a response that cannot be read."""
    return LlmResponse(finish_reason="error", error_code="invalid_response", error_message=message)


class HttpModel:
    """What every model behind an HTTP API has: its name and API root, one pooled
    ``httpx2.AsyncClient`` opened on first use and closed by `aclose` (or ``async
    with``), or a client passed in, used as it is and left open."""

    def __init__(
        self,
        *,
        model: str,
        base_url: httpx2.URL,
        http_client: httpx2.AsyncClient | None,
        timeout: float,
        headers: Mapping[str, str] | None,
    ) -> None:
        """Raises:
        ValueError: the base URL is not http(s), or the timeout is not a positive
            number."""
        check_timeout(timeout, "timeout")
        if base_url.scheme not in ("http", "https") or not base_url.host:
            raise ValueError(f"base_url must be an http(s) URL, got {safe_url(base_url)!r}")
        self._model = model
        # The URL errors and reprs name: without user info or query, which can hold a
        # password or a key.
        self._target = safe_url(base_url).rstrip("/")
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

    def _http(self) -> httpx2.AsyncClient:
        if self._client is None:
            self._client = httpx2.AsyncClient(
                timeout=httpx2.Timeout(self._timeout, connect=min(self._timeout, _CONNECT_TIMEOUT))
            )
        return self._client

    def _base_headers(self, *, stream: bool) -> dict[str, str]:
        """The configured headers, and what a JSON or an SSE answer needs."""
        headers = dict(self._headers)
        if stream:
            headers["Accept"] = "text/event-stream"
            # Events are read as they arrive; compression would hold them back.
            headers["Accept-Encoding"] = "identity"
        else:
            headers["Accept"] = "application/json"
        return headers
