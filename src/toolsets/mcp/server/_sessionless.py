"""Requests without a session that cannot open one, answered before the SDK's session
manager sees them (2025-11-25 stateful HTTP).

The SDK's session manager admits a session for every request that comes without an
``Mcp-Session-Id`` (a transport, a server task, a place among ``max_sessions``) before
its transport looks at the request, and discards it again when the answer is an error,
but the answer still names the discarded session in its ``Mcp-Session-Id`` header (so a
client may take it for a session it holds). `SessionlessChecks` answers a GET or DELETE
without a session (400) and any other method but POST (405) itself, so no session is
made for them, and drops that header from every error answer to a request that came
without a session. (A POST's envelope, and an ``initialize`` that could not succeed, are
`EnvelopeChecks`'.)
"""

from __future__ import annotations

from typing import Any

from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp_types import INVALID_REQUEST
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from toolsets.mcp.server._envelope import header, route_path

__all__ = ["SessionlessChecks"]

_SESSION_HEADER = MCP_SESSION_ID_HEADER.encode("ascii")
_VERSION_HEADER = MCP_PROTOCOL_VERSION_HEADER.encode("ascii")
_MISSING = (
    "Bad Request: Missing session ID: a {method} needs the Mcp-Session-Id header of a "
    "session the client opened with 'initialize'"
)


class SessionlessChecks:
    """ASGI middleware refusing, before a session is made for them, the requests to
    ``path`` that come without a session and cannot open one (see the module's
    docstring).

    Args:
        app: What serves the MCP endpoint (stateful).
        path: The MCP endpoint.
    """

    def __init__(self, app: ASGIApp, *, path: str) -> None:
        self.app = app
        self.path = path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or route_path(scope) != self.path
            or header(scope, _SESSION_HEADER) is not None
            or header(scope, _VERSION_HEADER) in MODERN_PROTOCOL_VERSIONS
        ):
            await self.app(scope, receive, send)
            return
        method = scope["method"]
        if method in ("GET", "DELETE"):
            await _error(400, _MISSING.format(method=method))(scope, receive, send)
            return
        if method != "POST":
            answer = _error(405, "Method Not Allowed")
            answer.headers["Allow"] = "GET, POST, DELETE"
            await answer(scope, receive, send)
            return

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] >= 400:
                kept = [
                    (k, v) for k, v in message.get("headers", ()) if k.lower() != _SESSION_HEADER
                ]
                message = {**message, "headers": kept}
            await send(message)

        await self.app(scope, receive, sending)


def _error(status: int, message: str) -> JSONResponse:
    """A JSON-RPC error (no request id: the request is not read) with ``status``."""
    error: dict[str, Any] = {"code": INVALID_REQUEST, "message": message}
    return JSONResponse({"jsonrpc": "2.0", "id": None, "error": error}, status_code=status)
