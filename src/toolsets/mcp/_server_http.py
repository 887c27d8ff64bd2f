"""`McpServer` over streamable HTTP: an ASGI app, and uvicorn to run it (one process or
several).

The app is the SDK's streamable HTTP transport (both protocol eras: a 2026-07-28 request
is one POST; a 2025-11-25 client opens a session, or none in stateless mode), with DNS
rebinding protection on by default (the Host and Origin headers must name this machine
unless told otherwise), a bound on request bodies, a JSON-RPC error for a request it
cannot read, and (stateful) resumable event streams.
"""

from __future__ import annotations

import importlib
import json
import os
import secrets
from collections.abc import Sequence
from typing import Any, Literal, Protocol, runtime_checkable

import uvicorn
from mcp.server.lowlevel.server import Server
from mcp.server.streamable_http import EventStore
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE, TransportSecuritySettings
from starlette.applications import Starlette

from toolsets.mcp._events import SessionEventStore
from toolsets.mcp._server_envelope import EnvelopeChecks

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_RETRY_INTERVAL",
    "STATE_KEY_VARIABLE",
    "Servable",
    "LOCAL_HOSTS",
    "LOCAL_ORIGINS",
    "http_app",
    "run_http",
    "serve_http",
    "worker_app",
]

DEFAULT_MAX_BODY_BYTES = DEFAULT_MAX_REQUEST_BODY_SIZE
"""The largest request body accepted (bigger ones are refused with 413)."""
DEFAULT_RETRY_INTERVAL = 1.0
"""Seconds a client is told to wait before reconnecting to a closed event stream."""
LOCAL_HOSTS = ("127.0.0.1", "127.0.0.1:*", "localhost", "localhost:*", "[::1]", "[::1]:*")
"""The ``Host`` headers accepted by default: this machine's names, any port."""
LOCAL_ORIGINS = tuple(
    f"{scheme}://{host}:*"
    for scheme in ("http", "https")
    for host in ("127.0.0.1", "localhost", "[::1]")
) + tuple(
    f"{scheme}://{host}"
    for scheme in ("http", "https")
    for host in ("127.0.0.1", "localhost", "[::1]")
)
"""The ``Origin`` headers accepted by default (a request without one is accepted too:
it does not come from a browser page)."""

_WORKER = "TOOLSETS_MCP_WORKER"
"""The environment variable carrying a worker's options (JSON)."""
STATE_KEY_VARIABLE = "TOOLSETS_MCP_STATE_KEY"
"""The environment variable holding the key (at least 32 characters) that servers
sharing their clients seal a waiting call's state with (`McpServer` reads it; `run_http`
sets one for its workers)."""


@runtime_checkable
class Servable(Protocol):
    """What this module serves (an `McpServer`, which imports this module)."""

    server: Server[Any]

    def use_request_state_keys(self, keys: Sequence[bytes | str] | None) -> None: ...


def http_app(
    server: Servable,
    path: str = "/mcp",
    *,
    stateless: bool = False,
    json_response: bool = False,
    allowed_hosts: Sequence[str] | None = None,
    allowed_origins: Sequence[str] | None = None,
    max_body_bytes: int | None = None,
    event_store: EventStore | Literal["memory"] | None = "memory",
    retry_interval: float | None = DEFAULT_RETRY_INTERVAL,
) -> Starlette:
    """``server`` as an ASGI (Starlette) app serving streamable HTTP at ``path``.

    Mount it in another app, or run it with any ASGI server; its lifespan (which the
    ASGI server runs) opens the toolset and closes it.

    Args:
        server: What to serve.
        path: Where the MCP endpoint is.
        stateless: Keep no session between requests (2025-11-25 clients; 2026-07-28
            ones never have one), so that any number of processes can serve the same
            clients behind a load balancer. A 2025-11-25 client then cannot be asked
            for confirmation mid-call, nor hear of list changes.
        json_response: Answer with JSON rather than an event stream where the protocol
            allows it.
        allowed_hosts: ``Host`` headers accepted (``"name:*"`` for any port); by
            default this machine's names (`LOCAL_HOSTS`). Name the public host name
            when serving beyond this machine.
        allowed_origins: ``Origin`` headers accepted; by default this machine's
            (`LOCAL_ORIGINS`).
        max_body_bytes: The largest request body (default `DEFAULT_MAX_BODY_BYTES`).
        event_store: Where the events sent on each request's stream are kept, so that a
            client whose stream broke, or was closed by a tool (`ToolContext.close_stream`),
            reconnects with ``Last-Event-ID`` and gets the rest (2025-11-25 clients).
            ``"memory"``: a new `SessionEventStore` (bounded, in this process); one of
            your own (a `SessionEventStore` is bound to this app; any other store is
            shared by every session as is, and must keep them apart itself); None: no
            resumable streams. Stateless: none (a later request may reach another
            process, and there is no session to keep events for).
        retry_interval: Seconds a client is told to wait before reconnecting (the SSE
            ``retry`` field, sent with each stream's first event when there is an
            event store); None: the client's default.
    """
    if retry_interval is not None and retry_interval < 0:
        raise ValueError(f"retry_interval must not be negative, not {retry_interval!r}")
    if stateless and event_store not in ("memory", None):
        raise ValueError("an event store needs sessions: it cannot serve stateless=True")
    store: EventStore | None
    if stateless or event_store is None:
        store = None
    elif event_store == "memory":
        store = SessionEventStore()
    else:
        store = event_store
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=list(LOCAL_HOSTS if allowed_hosts is None else allowed_hosts),
        allowed_origins=list(LOCAL_ORIGINS if allowed_origins is None else allowed_origins),
    )
    app = server.server.streamable_http_app(
        streamable_http_path=path,
        json_response=json_response,
        stateless_http=stateless,
        transport_security=security,
        max_request_body_size=DEFAULT_MAX_BODY_BYTES if max_body_bytes is None else max_body_bytes,
        event_store=store,
        retry_interval=None if retry_interval is None else round(retry_interval * 1000),
    )
    # Added first, so it runs inside every middleware added after it (Host and Origin
    # checks, authentication): it reads the body of requests those let through.
    app.add_middleware(
        EnvelopeChecks,
        path=path,
        stateful=not stateless,
        max_body_bytes=DEFAULT_MAX_BODY_BYTES if max_body_bytes is None else max_body_bytes,
    )
    if isinstance(store, SessionEventStore):
        store.bind(server.server.session_manager)
    return app


_APP_OPTIONS = (
    "path",
    "stateless",
    "json_response",
    "allowed_hosts",
    "allowed_origins",
    "max_body_bytes",
    "event_store",
    "retry_interval",
)


def _split(options: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``options`` as the app's and uvicorn's."""
    unknown = set(options) - {*_APP_OPTIONS, "log_level"}
    if unknown:
        raise TypeError(f"unexpected options: {', '.join(sorted(unknown))}")
    app = {k: v for k, v in options.items() if k in _APP_OPTIONS}
    return app, {"log_level": options.get("log_level", "warning")}


async def serve_http(server: Servable, host: str, port: int, **options: Any) -> None:
    """Serve ``server`` with uvicorn in the running (asyncio) event loop until stopped."""
    app_options, uvicorn_options = _split(options)
    config = uvicorn.Config(
        http_app(server, **app_options), host=host, port=port, lifespan="on", **uvicorn_options
    )
    await uvicorn.Server(config).serve()


def run_http(
    server: Servable,
    host: str,
    port: int,
    *,
    workers: int = 1,
    factory: str | None = None,
    **options: Any,
) -> None:
    """Serve ``server`` with uvicorn until stopped (see `McpServer.run_http`).

    Raises:
        ValueError: several workers without a ``factory``, or not stateless.
        ImportError: ``factory`` names nothing importable.
    """
    app_options, uvicorn_options = _split(options)
    if workers < 1:
        raise ValueError("workers must be at least 1")
    if workers == 1:
        app = http_app(server, **app_options)
        uvicorn.run(app, host=host, port=port, lifespan="on", **uvicorn_options)
        return
    if factory is None:
        raise ValueError(
            "serving with several workers needs factory='module:attribute' naming the "
            "server (or a function making it): each worker process builds its own"
        )
    if not app_options.get("stateless"):
        raise ValueError(
            "several workers need stateless=True: a session would live in one worker, "
            "and its client's next request may reach another"
        )
    _resolve(factory)  # a wrong name fails here, once, rather than in every worker
    os.environ[_WORKER] = json.dumps({"factory": factory, "app": app_options})
    # The workers share the key that seals a call's state while it waits for the
    # user (2026-07-28): the answer may come back to another worker.
    given_key = os.environ.get(STATE_KEY_VARIABLE)
    if not given_key:
        os.environ[STATE_KEY_VARIABLE] = secrets.token_hex(32)
    try:
        uvicorn.run(
            f"{__name__}:worker_app",
            factory=True,
            host=host,
            port=port,
            workers=workers,
            lifespan="on",
            **uvicorn_options,
        )
    finally:
        os.environ.pop(_WORKER, None)
        if not given_key:
            os.environ.pop(STATE_KEY_VARIABLE, None)


def _resolve(factory: str) -> Any:
    """What ``factory`` (``"module:attribute"``) names, imported but not called (the
    parent of the workers checks the name without building a server it will not use).
    """
    module_name, _, attribute = factory.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"factory must be 'module:attribute', not {factory!r}")
    target: Any = importlib.import_module(module_name)
    for part in attribute.split("."):
        target = getattr(target, part)
    if not isinstance(target, Servable) and not callable(target):
        raise TypeError(f"{factory} is not an McpServer nor a function making one")
    return target


def _load(factory: str) -> Servable:
    """The server ``factory`` names: an `McpServer`, or a function returning one."""
    target = _resolve(factory)
    if not isinstance(target, Servable):
        target = target()
    if not isinstance(target, Servable):
        raise TypeError(f"{factory} is not an McpServer nor a function making one")
    return target


def worker_app() -> Starlette:
    """The app of one worker process of `run_http` (uvicorn calls it in each)."""
    options = json.loads(os.environ[_WORKER])
    server = _load(options["factory"])
    server.use_request_state_keys([os.environ[STATE_KEY_VARIABLE]])
    return http_app(server, **options["app"])
