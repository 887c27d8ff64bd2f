"""An HTTP MCP server (or a gateway in front of it) pushing back on a request (internal):
a ``429 Too Many Requests`` or a ``5xx`` (``503 Service Unavailable`` above all, often
with ``Retry-After``), noted by the response hook of the session's HTTP client
(`Pushback`) where the SDK keeps only a JSON-RPC error, and raised as `ServerStatusError`,
a `ToolCallError` carrying the status and the wait asked for.

A tool's call that meets one is an error result in the shape an OpenAPI tool's HTTP
error has, ``{"error": ..., "status": 429, "retry_after": 2.0}``, which
`toolsets.calls.Retry` tries again when the tool is safe to repeat. The session is left
as it is: the server answered, so the next request goes over it."""

from __future__ import annotations

from dataclasses import dataclass

import httpx2

from toolsets._errors import ToolCallError
from toolsets._http import retry_after
from toolsets._json import JsonValue
from toolsets._results import clip, error_result

__all__ = ["PushedBackError", "Pushback", "ServerStatusError", "pushback_of"]

_SHOWN = 200
"""Characters of the server's own message quoted."""
_STAND_IN = "Server returned an error response"
"""The SDK's message for an error status whose body is no JSON-RPC error: it says nothing
the status does not."""


@dataclass(frozen=True, kw_only=True)
class Pushback:
    """What an HTTP server said pushing back on a request."""

    status: int
    """429, or a 5xx."""
    reason: str = ""
    """The status's reason phrase."""
    retry_after: float | None = None
    """Seconds it asked to wait (``Retry-After``), if it said."""

    def __str__(self) -> str:
        said = f"HTTP {self.status} {self.reason}".strip()
        if self.status == 429:
            return f"is busy ({said})"
        if self.status == 503:
            return f"is unavailable ({said})"
        return f"failed ({said})"


def pushback_of(response: httpx2.Response) -> Pushback | None:
    """The pushback ``response`` (to one of our requests) is, if it is one: a 429 or a
    5xx."""
    status = response.status_code
    if status != 429 and status < 500:
        return None
    return Pushback(
        status=status, reason=response.reason_phrase, retry_after=retry_after(response.headers)
    )


class PushedBackError(Exception):
    """A request met a `Pushback` (internal; `Sessions` raises it as `ServerStatusError`)."""

    def __init__(self, pushback: Pushback, said: str) -> None:
        super().__init__(said)
        self.pushback = pushback
        self.said = said
        """The server's own message (the JSON-RPC error's), if any, else ""."""

    @classmethod
    def of(cls, pushback: Pushback, message: str) -> PushedBackError:
        """The error of ``pushback``, with ``message`` the JSON-RPC error's."""
        return cls(pushback, "" if message == _STAND_IN else clip(message, _SHOWN))


class ServerStatusError(ToolCallError):
    """An MCP server over HTTP, or a gateway in front of it, answered a request with
    ``status``: 429 (busy), 503 (unavailable) or another 5xx. The server (or gateway)
    says ``retry_after`` seconds to wait, when it does."""

    def __init__(
        self, message: str, *, tool_name: str, status: int, retry_after: float | None
    ) -> None:
        super().__init__(message, tool_name=tool_name)
        self.status = status
        self.retry_after = retry_after

    def result(self) -> dict[str, JsonValue]:
        """The error result the model is given: the message, ``status`` and (when the
        server said) ``retry_after``, as an OpenAPI tool's HTTP error has them."""
        if self.retry_after is None:
            return error_result(str(self), status=self.status)
        return error_result(str(self), status=self.status, retry_after=self.retry_after)
