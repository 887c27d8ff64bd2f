"""Sessions bounded per client (2025-11-25 stateful HTTP): one client may hold at most
``max_sessions_per_client`` of the server's sessions at once, so that it cannot take all
of them (the SDK bounds only the total, and past it every new client gets 503). A
client is its token's subject (issuer and subject) when the server checks tokens, else
its address (behind a proxy on this machine, the one the proxy's ``X-Forwarded-For``
names, as uvicorn reads it). A new session past the bound is refused with 429 and a
JSON-RPC error saying why; the client's open sessions are unaffected, and one ended
(``DELETE``, idle timeout) frees its place.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Container
from typing import Any

from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp_types.jsonrpc import INVALID_REQUEST
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from toolsets.mcp.server._envelope import header, route_path

__all__ = ["DEFAULT_MAX_SESSIONS_PER_CLIENT", "SessionQuota", "client_of"]

logger = logging.getLogger("toolsets.mcp.server")

DEFAULT_MAX_SESSIONS_PER_CLIENT = 100
"""Sessions one client (a token's subject, else an address) may hold at once."""

_SESSION_HEADER = MCP_SESSION_ID_HEADER.encode("ascii")
_VERSION_HEADER = MCP_PROTOCOL_VERSION_HEADER.encode("ascii")
_Scope = dict[str, Any]


def client_of(scope: _Scope) -> str:
    """Who opens a session: the subject of its verified token, else its address."""
    caller = getattr(scope.get("user"), "caller", None)  # set by the AuthGuard
    if caller is not None:
        return f"subject {caller.issuer} {caller.subject}"
    client = scope.get("client")
    return f"address {client[0] if client else 'unknown'}"


class SessionQuota:
    """ASGI middleware refusing a client a new session past ``limit`` open ones.

    Args:
        app: What serves the MCP endpoint (stateful).
        path: The MCP endpoint.
        limit: Sessions one client may hold at once.
        open_sessions: The ids of the sessions open now (the SDK's session manager's:
            a session ended, however it ended, is not among them).
    """

    def __init__(
        self,
        app: Any,
        *,
        path: str,
        limit: int,
        open_sessions: Callable[[], Container[str]],
    ) -> None:
        self.app = app
        self.path = path
        self.limit = limit
        self._open = open_sessions
        self._held: dict[str, set[str]] = {}
        """The sessions each client opened (some may have ended since)."""
        self._opening: dict[str, int] = {}
        """The sessions each client is opening now (answers not sent yet)."""

    async def __call__(self, scope: _Scope, receive: Any, send: Any) -> None:
        if not self._opens_a_session(scope):
            await self.app(scope, receive, send)
            return
        client = client_of(scope)
        if self._count(client) >= self.limit:
            logger.warning("refused a new session: the client holds %d already", self.limit)
            await _refuse(send, self.limit)
            return
        self._opening[client] = self._opening.get(client, 0) + 1
        held = self._held.setdefault(client, set())
        opening = True

        def opened() -> None:
            # Counted once: held from its answer's head on, no longer being opened (the
            # client may ask for the next before this request's handler has returned).
            nonlocal opening
            if opening:
                opening = False
                self._opening[client] -= 1
                if not self._opening[client]:
                    del self._opening[client]

        async def sending(message: Any) -> None:
            if message["type"] == "http.response.start" and message["status"] < 400:
                for key, value in message.get("headers", ()):
                    if key.lower() == _SESSION_HEADER:
                        held.add(value.decode("latin-1"))
                        opened()
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            opened()
            if not held and client not in self._opening:
                self._held.pop(client, None)

    def _opens_a_session(self, scope: _Scope) -> bool:
        """Whether the request may open a session: a POST to the endpoint without a
        session, and not of protocol 2026-07-28 (which has none)."""
        return (
            scope["type"] == "http"
            and scope["method"] == "POST"
            and route_path(scope) == self.path
            and header(scope, _SESSION_HEADER) is None
            and header(scope, _VERSION_HEADER) not in MODERN_PROTOCOL_VERSIONS
        )

    def _count(self, client: str) -> int:
        """The sessions ``client`` holds or is opening (those ended forgotten)."""
        held = self._held.get(client)
        if held:
            open_now = self._open()
            held.intersection_update([each for each in held if each in open_now])
        return len(held or ()) + self._opening.get(client, 0)


async def _refuse(send: Any, limit: int) -> None:
    """429, with a JSON-RPC error saying why (no request id: the request is not read)."""
    message = (
        f"Too many open sessions for this client: it may hold {limit} at once. End one "
        "(DELETE with its Mcp-Session-Id) or reuse it, or wait for an idle one to expire."
    )
    error = {"jsonrpc": "2.0", "id": None, "error": {"code": INVALID_REQUEST, "message": message}}
    body = json.dumps(error).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]
    await send({"type": "http.response.start", "status": 429, "headers": headers})
    await send({"type": "http.response.body", "body": body})
