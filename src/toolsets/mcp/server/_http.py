"""`McpServer` over streamable HTTP: an ASGI app, and uvicorn to run it (one process or
several).

The app is the SDK's streamable HTTP transport (both protocol eras: a 2026-07-28 request
is one POST; a 2025-11-25 client opens a session, or none in stateless mode), behind
`RequestChecks`: DNS rebinding protection on by default (the Host and Origin headers must
name this machine unless told otherwise, compared exactly), a bound on request bodies, and
a client leaving mid-body dropped quietly; then a JSON-RPC error for a request it cannot
read, and (stateful) resumable event streams. uvicorn serves it with every wait bounded
and a connection limit that keeps file descriptors to answer 503 with
(`_uvicorn`).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import secrets
import socket
import sys
from collections.abc import Sequence
from typing import Any, Literal, Protocol, runtime_checkable

import uvicorn
from mcp.server.lowlevel.server import Server
from mcp.server.streamable_http import EventStore
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE, TransportSecuritySettings
from starlette.applications import Starlette
from uvicorn.config import STARTUP_FAILURE
from uvicorn.supervisors import Multiprocess

from toolsets.mcp.server._checks import RequestChecks
from toolsets.mcp.server._envelope import EnvelopeChecks
from toolsets.mcp.server._events import SessionEventStore
from toolsets.mcp.server._uvicorn import (
    LIMIT_OPTIONS,
    BoundedConfig,
    ConnectionLimits,
    summarise_accept_failures,
    uvicorn_options,
    worker_environment,
)

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
LOCAL_HOSTS = ("127.0.0.1:*", "localhost:*", "[::1]:*")
"""The ``Host`` headers accepted by default: this machine's names, any port (or none)."""
LOCAL_ORIGINS = tuple(
    f"{scheme}://{host}:*"
    for scheme in ("http", "https")
    for host in ("127.0.0.1", "localhost", "[::1]")
)
"""The ``Origin`` headers accepted by default: this machine's pages, any port (a request
without one is accepted too: it does not come from a browser page)."""

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
        allowed_hosts: ``Host`` headers accepted: ``name`` (its scheme's default port),
            ``name:PORT`` or ``name:*`` (any port), compared exactly (`RequestChecks`);
            by default this machine's names (`LOCAL_HOSTS`). Name the public host name
            when serving beyond this machine.
        allowed_origins: ``Origin`` headers accepted (``scheme://name[:PORT|:*]``, or
            ``null``); by default this machine's (`LOCAL_ORIGINS`).
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
    max_body = DEFAULT_MAX_BODY_BYTES if max_body_bytes is None else max_body_bytes
    if max_body < 1:
        raise ValueError(f"max_body_bytes must be positive, not {max_body!r}")
    hosts = list(LOCAL_HOSTS if allowed_hosts is None else allowed_hosts)
    origins = list(LOCAL_ORIGINS if allowed_origins is None else allowed_origins)
    # A malformed pattern fails here, not when the first request builds the middleware.
    RequestChecks(_nothing, allowed_hosts=hosts, allowed_origins=origins, max_body_bytes=max_body)
    store: EventStore | None
    if stateless or event_store is None:
        store = None
    elif event_store == "memory":
        store = SessionEventStore()
    else:
        store = event_store
    # Host and Origin are checked by RequestChecks (the SDK's check matches by prefix);
    # the SDK still checks the Content-Type.
    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    app = server.server.streamable_http_app(
        streamable_http_path=path,
        json_response=json_response,
        stateless_http=stateless,
        transport_security=security,
        max_request_body_size=max_body,
        event_store=store,
        retry_interval=None if retry_interval is None else round(retry_interval * 1000),
    )
    # Added first, so it runs inside every middleware added after it (Host and Origin
    # checks, authentication): it reads the body of requests those let through.
    app.add_middleware(EnvelopeChecks, path=path, stateful=not stateless, max_body_bytes=max_body)
    app.add_middleware(
        RequestChecks, allowed_hosts=hosts, allowed_origins=origins, max_body_bytes=max_body
    )
    if isinstance(store, SessionEventStore):
        store.bind(server.server.session_manager)
    return app


async def _nothing(scope: Any, receive: Any, send: Any) -> None:
    """An ASGI app that is never called (checking `RequestChecks`' options)."""


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


def _split(
    options: dict[str, Any],
) -> tuple[dict[str, Any], ConnectionLimits, dict[str, Any]]:
    """``options`` as the app's, the connection limits and uvicorn's."""
    unknown = set(options) - {*_APP_OPTIONS, *LIMIT_OPTIONS, "log_level"}
    if unknown:
        raise TypeError(f"unexpected options: {', '.join(sorted(unknown))}")
    app = {k: v for k, v in options.items() if k in _APP_OPTIONS}
    limits = ConnectionLimits(**{k: v for k, v in options.items() if k in LIMIT_OPTIONS})
    return app, limits, {"log_level": options.get("log_level", "warning")}


def _config(server: Servable, host: str, port: int, options: dict[str, Any]) -> BoundedConfig:
    """uvicorn's configuration serving ``server`` in this process."""
    app_options, limits, others = _split(options)
    app = http_app(server, **app_options)
    return BoundedConfig(app, limits=limits, host=host, port=port, lifespan="on", **others)


async def serve_http(
    server: Servable, host: str, port: int, *, sock: socket.socket | None = None, **options: Any
) -> None:
    """Serve ``server`` with uvicorn in the running (asyncio) event loop until stopped
    (on ``sock``, a socket bound already, instead of binding ``host``:``port``)."""
    sockets = [sock] if sock is not None else None
    await uvicorn.Server(_config(server, host, port, options)).serve(sockets=sockets)


def run_http(
    server: Servable,
    host: str,
    port: int,
    *,
    workers: int = 1,
    factory: str | None = None,
    sock: socket.socket | None = None,
    **options: Any,
) -> None:
    """Serve ``server`` with uvicorn until stopped (see `McpServer.run_http`), on
    ``sock`` (a socket bound already, inherited by the workers) if given.

    Raises:
        ValueError: several workers without a ``factory``, or not stateless.
        ImportError: ``factory`` names nothing importable.
    """
    if workers < 1:
        raise ValueError("workers must be at least 1")
    if workers == 1:
        served = uvicorn.Server(_config(server, host, port, options))
        with contextlib.suppress(KeyboardInterrupt):
            served.run(sockets=[sock] if sock is not None else None)
        if not served.started:  # as uvicorn.run does: the port was taken, or start-up failed
            sys.exit(STARTUP_FAILURE)
        return
    app_options, limits, others = _split(options)
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
    # uvicorn makes each worker's configuration anew (a plain one): the limits go by the
    # environment to BoundedProtocol, uvicorn's own settings as its options.
    os.environ.update(worker_environment(limits))
    # The workers share the key that seals a call's state while it waits for the
    # user (2026-07-28): the answer may come back to another worker.
    given_key = os.environ.get(STATE_KEY_VARIABLE)
    if not given_key:
        os.environ[STATE_KEY_VARIABLE] = secrets.token_hex(32)
    try:
        # What uvicorn.run does with several workers, on the socket given if any.
        config = uvicorn.Config(
            f"{__name__}:worker_app",
            factory=True,
            host=host,
            port=port,
            workers=workers,
            lifespan="on",
            **uvicorn_options(limits),
            **others,
        )
        Multiprocess(config, sockets=[sock if sock is not None else config.bind_socket()]).run()
    finally:
        os.environ.pop(_WORKER, None)
        for variable in worker_environment(limits):
            os.environ.pop(variable, None)
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
    summarise_accept_failures()
    options = json.loads(os.environ[_WORKER])
    server = _load(options["factory"])
    server.use_request_state_keys([os.environ[STATE_KEY_VARIABLE]])
    return http_app(server, **options["app"])
