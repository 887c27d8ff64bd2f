"""How `McpServer`'s HTTP app is made: the SDK's streamable HTTP transport behind the
checks, in the order they run — `RequestChecks` (Host and Origin: DNS rebinding), for a
resource server the bearer token, stateful, `SessionQuota` (sessions per client) and
`SessionlessChecks` (no session made for a request that cannot open one), `WholeBody` (a
bound on request bodies, a client leaving mid-body dropped quietly), `EnvelopeChecks` (a
JSON-RPC error for a request the transport cannot read) — and, stateful, resumable event streams.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from mcp.server.lowlevel.server import Server
from mcp.server.streamable_http import EventStore
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE, TransportSecuritySettings
from starlette.applications import Starlette

from toolsets.mcp.server._auth import OAuthResourceServer, ServerAuth
from toolsets.mcp.server._checks import RequestChecks, WholeBody
from toolsets.mcp.server._envelope import EnvelopeChecks
from toolsets.mcp.server._events import SessionEventStore
from toolsets.mcp.server._health import Health, Readiness
from toolsets.mcp.server._quota import DEFAULT_MAX_SESSIONS_PER_CLIENT, SessionQuota
from toolsets.mcp.server._sessionless import SessionlessChecks

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_RETRY_INTERVAL",
    "LOCAL_HOSTS",
    "LOCAL_ORIGINS",
    "AppOptions",
]

DEFAULT_MAX_BODY_BYTES = DEFAULT_MAX_REQUEST_BODY_SIZE
"""The largest request body accepted (bigger ones are refused with 413)."""
DEFAULT_RETRY_INTERVAL = 1.0
"""Seconds a client is told to wait before reconnecting to a closed event stream."""
LOCAL_HOSTS = ("127.0.0.1:*", "localhost:*", "[::1]:*")
"""The ``Host`` headers accepted by default: this machine's names, any port (or none)."""
LOCAL_ORIGINS = tuple(
    f"{scheme}://{host}:*"
    for scheme in ("http", "https")
    for host in ("127.0.0.1", "localhost", "[::1]")
)
"""The ``Origin`` headers accepted by default: this machine's pages, any port (a request
without one is accepted too: it does not come from a browser page)."""


@dataclass(frozen=True, kw_only=True)
class AppOptions:
    """The options of an app, as `ServesHttp.http_app` takes them (checked when made)."""

    stateless: bool
    json_response: bool
    allowed_hosts: Sequence[str] | None
    allowed_origins: Sequence[str] | None
    max_body_bytes: int | None
    event_store: EventStore | Literal["memory"] | None
    retry_interval: float | None
    max_sessions_per_client: int | None = DEFAULT_MAX_SESSIONS_PER_CLIENT

    def __post_init__(self) -> None:
        """Raises:
        ValueError: an option out of its range, a malformed host or origin pattern,
            an event store for a stateless app."""
        if self.retry_interval is not None and self.retry_interval < 0:
            raise ValueError(f"retry_interval must not be negative, not {self.retry_interval!r}")
        if self.stateless and self.event_store not in ("memory", None):
            raise ValueError("an event store needs sessions: it cannot serve stateless=True")
        per_client = self.max_sessions_per_client
        if per_client is not None and (isinstance(per_client, bool) or per_client < 1):
            raise ValueError(f"max_sessions_per_client must be positive, not {per_client!r}")
        if self.max_body < 1:
            raise ValueError(f"max_body_bytes must be positive, not {self.max_body!r}")
        # A malformed pattern fails here, not when the first request builds the middleware.
        RequestChecks(_nothing, **self._checks())

    @property
    def max_body(self) -> int:
        given = self.max_body_bytes
        return DEFAULT_MAX_BODY_BYTES if given is None else given

    def _checks(self) -> dict[str, Any]:
        """`RequestChecks`' options."""
        hosts, origins = self.allowed_hosts, self.allowed_origins
        return {
            "allowed_hosts": list(LOCAL_HOSTS if hosts is None else hosts),
            "allowed_origins": list(LOCAL_ORIGINS if origins is None else origins),
            "max_body_bytes": self.max_body,
        }

    def made(self, server: Server[Any], path: str, auth: ServerAuth = None) -> Starlette:
        """The app serving ``server`` at ``path`` (a resource server when ``auth`` is
        `OAuthResourceServer`)."""
        store: EventStore | None = None
        if not self.stateless and self.event_store is not None:
            store = SessionEventStore() if self.event_store == "memory" else self.event_store
        retry = self.retry_interval
        app = server.streamable_http_app(
            streamable_http_path=path,
            json_response=self.json_response,
            stateless_http=self.stateless,
            # Host and Origin are checked by RequestChecks (the SDK's check matches by
            # prefix); the SDK still checks the Content-Type.
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
            max_request_body_size=self.max_body,
            event_store=store,
            retry_interval=None if retry is None else round(retry * 1000),
        )
        # Each middleware added runs before those added earlier: Host and Origin first,
        # then authorization (headers only: a client without a token is refused before
        # it can make the server take a body), then the body read whole, then the
        # envelope checks that read it; and before all, health and readiness (`_health`).
        stateful = not self.stateless
        app.add_middleware(
            EnvelopeChecks, path=path, stateful=stateful, max_body_bytes=self.max_body
        )
        app.add_middleware(WholeBody, max_body_bytes=self.max_body)
        if stateful:
            app.add_middleware(SessionlessChecks, path=path)
        if stateful and self.max_sessions_per_client is not None:
            app.add_middleware(
                SessionQuota,
                path=path,
                limit=self.max_sessions_per_client,
                open_sessions=_open_sessions(server),
            )
        if isinstance(auth, OAuthResourceServer):
            # Imported here: serving without authorization never loads PyJWT.
            from toolsets.mcp.server._auth._app import protect

            protect(app, auth, path, server.name)
        app.add_middleware(RequestChecks, **self._checks())
        # Health and readiness first of all: a load balancer's checks carry no token.
        app.state.readiness = Readiness()
        app.add_middleware(Health, readiness=app.state.readiness)
        if isinstance(store, SessionEventStore):
            store.bind(server.session_manager)
        return app


def _open_sessions(server: Server[Any]) -> Callable[[], Container[str]]:
    """The ids of the sessions ``server``'s session manager has open now.

    Raises:
        RuntimeError: this version of the mcp SDK does not say (serve with
            ``max_sessions_per_client=None``).
    """
    manager = server.session_manager
    if not isinstance(getattr(manager, "_server_instances", None), dict):
        raise RuntimeError(
            "this version of the mcp SDK does not say which sessions are open; serve "
            "with max_sessions_per_client=None"
        )
    return lambda: manager._server_instances  # read only


async def _nothing(scope: Any, receive: Any, send: Any) -> None:
    """An ASGI app that is never called (checking `RequestChecks`' options)."""
