"""`McpServer` over streamable HTTP: the ASGI app (`_app` makes it, behind its checks),
and uvicorn to run it, in one process or several, with every wait bounded and a
connection limit that keeps file descriptors to answer 503 with (`_limits` says the
bounds, `_uvicorn` enforces them).
"""

from __future__ import annotations

import abc
import contextlib
import importlib
import json
import os
import secrets
import socket
import sys
from collections.abc import Sequence
from typing import Any, Literal

import uvicorn
from mcp.server.lowlevel.server import Server
from mcp.server.streamable_http import EventStore
from starlette.applications import Starlette
from starlette.routing import Route
from uvicorn.config import STARTUP_FAILURE

from toolsets.mcp.server._app import DEFAULT_RETRY_INTERVAL, AppOptions
from toolsets.mcp.server._auth import ServerAuth, check_exposure
from toolsets.mcp.server._draining import DrainingServer
from toolsets.mcp.server._keys import STATE_KEY_VARIABLE, state_keys_from
from toolsets.mcp.server._limits import LIMIT_OPTIONS, ConnectionLimits
from toolsets.mcp.server._quota import DEFAULT_MAX_SESSIONS_PER_CLIENT
from toolsets.mcp.server._uvicorn import (
    BoundedConfig,
    summarise_accept_failures,
    uvicorn_options,
    worker_environment,
)
from toolsets.mcp.server._workers import SpreadingSupervisor, listening_sockets

__all__ = ["STATE_KEY_VARIABLE", "ServesHttp", "worker_app"]

_WORKER = "TOOLSETS_MCP_WORKER"
"""The environment variable carrying a worker's options (JSON)."""


class ServesHttp(abc.ABC):
    """What serves `McpServer` over streamable HTTP (its methods ``http_app``,
    ``serve_http`` and ``run_http``): the SDK's ``server``, and the keys that seal a
    waiting call's state.

    Every app answers ``GET /healthz`` with 200 while it serves, and ``GET /readyz``
    with 200 once its lifespan has started (the toolset entered) and until it is told
    to stop, else 503; neither needs a token nor an allowed Host (see `_health`)."""

    server: Server[Any]
    auth: ServerAuth

    @abc.abstractmethod
    def use_request_state_keys(self, keys: Sequence[bytes | str] | None) -> None:
        """Seal the state of a call that asks its client under ``keys``."""

    def http_app(
        self,
        path: str = "/mcp",
        *,
        stateless: bool = False,
        json_response: bool = False,
        allowed_hosts: Sequence[str] | None = None,
        allowed_origins: Sequence[str] | None = None,
        max_body_bytes: int | None = None,
        event_store: EventStore | Literal["memory"] | None = "memory",
        retry_interval: float | None = DEFAULT_RETRY_INTERVAL,
        max_sessions_per_client: int | None = DEFAULT_MAX_SESSIONS_PER_CLIENT,
    ) -> Starlette:
        """The server as an ASGI (Starlette) app speaking streamable HTTP at ``path``.

        Run it with any ASGI server, or mount it in another app; its lifespan opens the
        toolset and closes it. Starlette and FastAPI do not run a mounted app's
        lifespan: enter it from the outer app's own, ``async with
        mcp_app.router.lifespan_context(mcp_app): yield``.

        With ``auth`` an `OAuthResourceServer`, every request needs a bearer token and
        the resource metadata is at ``/.well-known/oauth-protected-resource`` (and that
        followed by ``path``; mounted: `metadata_routes`); beyond this machine, on you.

        Args:
            path: Where the MCP endpoint is.
            stateless: Keep no session between requests (2025-11-25 clients; 2026-07-28
                ones never have one), so that any number of processes can serve the
                same clients behind a load balancer. A 2025-11-25 client then cannot be
                asked for confirmation mid-call, nor hear of list changes.
            json_response: Answer with JSON, not an event stream, where the protocol allows.
            allowed_hosts: ``Host`` headers accepted (against DNS rebinding): ``name``
                (on its scheme's default port), ``name:PORT`` or ``name:*`` (any port),
                name and port compared exactly; by default this machine's names only
                (`LOCAL_HOSTS`). Name the public host name when serving beyond this
                machine.
            allowed_origins: ``Origin`` headers accepted (``scheme://name[:PORT|:*]``,
                or ``null``); by default this machine's (`LOCAL_ORIGINS`). A request
                without one (not from a browser page) is accepted.
            max_body_bytes: The largest request body (default 4 MiB; past it, 413).
            event_store: Where each request stream's events are kept (stateful mode), so
                that a client whose stream broke, or that a tool closed
                (`ToolContext.close_stream`), reconnects with ``Last-Event-ID`` and gets the
                rest: ``"memory"``, a bounded `SessionEventStore` keeping each session's
                events apart; your own store (shared by every session as it is: it must
                keep them apart itself); or None, no resumable streams. Stateless: none.
            retry_interval: Seconds a client is told to wait before reconnecting to a
                closed stream (None: the client's default).
            max_sessions_per_client: Sessions a client may hold (`SessionQuota`; 429 past).
        """
        return AppOptions(
            stateless=stateless,
            json_response=json_response,
            allowed_hosts=allowed_hosts,
            allowed_origins=allowed_origins,
            max_body_bytes=max_body_bytes,
            event_store=event_store,
            retry_interval=retry_interval,
            max_sessions_per_client=max_sessions_per_client,
        ).made(self.server, path, self.auth)

    def metadata_routes(self, mount: str, path: str = "/mcp") -> list[Route]:
        """The route to add at the root of an app that mounts `http_app` (``path`` as
        given to it) at ``mount``: the protected resource metadata where RFC 9728 puts
        it, ``/.well-known/oauth-protected-resource`` followed by ``mount`` and ``path``
        (a client that finds the server otherwise than by its ``401`` looks there).

        Mounted so, the resource is the URL under the mount (``https://host/tools/mcp``,
        unless ``auth`` names one), and a ``401`` names the metadata the mounted app
        answers itself (``/tools/.well-known/oauth-protected-resource/mcp``), so that a
        client following it needs no route added::

            mcp_app = server.http_app()
            app = Starlette(
                routes=[*server.metadata_routes("/tools"), Mount("/tools", app=mcp_app)],
                lifespan=...,  # entering mcp_app.router.lifespan_context(mcp_app)
            )

        Raises:
            ValueError: the server has no ``auth`` (`OAuthResourceServer`), or ``mount``
                or ``path`` is not a path (``/`` then no trailing ``/``).
        """
        from toolsets.mcp.server._auth import OAuthResourceServer

        if not isinstance(self.auth, OAuthResourceServer):
            raise ValueError(
                "metadata_routes: the server is not a resource server (give it "
                "auth=OAuthResourceServer(...)), so it has no metadata"
            )
        for name, value in (("mount", mount), ("path", path)):
            if not isinstance(value, str) or not value.startswith("/") or value.endswith("/"):
                raise ValueError(
                    f"metadata_routes: {name} must be a path such as '/tools' (a leading "
                    f"'/' and no trailing one), not {value!r}"
                )
        from toolsets.mcp.server._auth._guard import mounted_metadata_routes

        return mounted_metadata_routes(self.auth, mount, path, self.server.name)

    async def serve_http(self, host: str = "127.0.0.1", port: int = 8000, **options: Any) -> None:
        """Serve streamable HTTP with uvicorn in this event loop (asyncio) until
        stopped; ``options`` as for `http_app`, ``log_level``, the connection limits
        of `run_http`, and ``sock``: a socket bound already, served instead of binding
        ``host``:``port``.

        Raises:
            ValueError: serving beyond this machine (an address not loopback) without
                ``auth`` (see `McpServer`: ``auth="none"`` to do so on purpose).
        """
        sock: socket.socket | None = options.pop("sock", None)
        check_exposure(self.auth, _bound(host, sock))
        sockets = [sock] if sock is not None else None
        await DrainingServer(_config(self, host, port, options)).serve(sockets=sockets)

    def run_http(
        self,
        host: str = "127.0.0.1",
        port: int = 8000,
        *,
        workers: int = 1,
        factory: str | None = None,
        **options: Any,
    ) -> None:
        """Serve streamable HTTP with uvicorn until stopped (this call blocks; it starts
        its own event loop). Binds 127.0.0.1 unless told otherwise.

        Args:
            host: The interface to listen on.
            port: The port (0: any free one).
            workers: Processes to serve with. Each builds its own server from
                ``factory``; more than one needs ``stateless=True`` (no session lives
                in one process) and they share the key sealing confirmation state.
            factory: With ``workers``: ``"module:attribute"`` naming this server (an
                `McpServer` at module level) or a function that makes it.
            **options: As for `http_app`; ``log_level`` (uvicorn's, default
                ``"warning"``); the connection limits, each wait bounded:
                ``header_timeout`` (seconds to send a request's head, from connecting
                or the previous response; default 10), ``body_timeout`` (seconds to
                send the body after the head; 60), ``keep_alive_timeout`` (seconds an
                idle connection waits for a next request; 5), ``max_connections``
                (served at once, the next answered 503 at once; default 10,000 or
                fewer, leaving a quarter of the open-file limit free) and
                ``max_header_bytes`` (the largest request head, past it 431; 16 KiB),
                ``shutdown_timeout`` (on SIGTERM, seconds the calls in flight have to
                finish, new connections refused meanwhile, then the toolset is closed;
                30);
                and ``sock``, a socket bound already, served instead of binding
                ``host``:``port``. Several workers each listen on a socket of their own
                (bound to one address with ``SO_REUSEPORT``, so that Linux spreads new
                connections over them; a worker that dies is replaced on its socket);
                a ``sock`` bound without ``SO_REUSEPORT``, or another system than
                Linux, has them share one socket, and a burst of connections may land
                on one worker.

        Raises:
            ValueError: several workers without a ``factory``, or not stateless; or
                serving beyond this machine (an address not loopback) without ``auth``
                (see `McpServer`: ``auth="none"`` to do so on purpose).
            ImportError: ``factory`` names nothing importable.
        """
        if workers < 1:
            raise ValueError("workers must be at least 1")
        sock: socket.socket | None = options.pop("sock", None)
        check_exposure(self.auth, _bound(host, sock))
        if workers == 1:
            served = DrainingServer(_config(self, host, port, options))
            with contextlib.suppress(KeyboardInterrupt):
                served.run(sockets=[sock] if sock is not None else None)
            if not served.started:  # as uvicorn.run does: the port was taken, or start-up failed
                sys.exit(STARTUP_FAILURE)
            return
        _run_workers(host, port, workers, factory, sock, options)


def _bound(host: str, sock: socket.socket | None) -> str:
    """The address served: the socket's when one is given, else ``host``."""
    if sock is None or sock.family not in (socket.AF_INET, socket.AF_INET6):
        return host
    return str(sock.getsockname()[0])


_APP_OPTIONS = (
    "path",
    "stateless",
    "json_response",
    "allowed_hosts",
    "allowed_origins",
    "max_body_bytes",
    "event_store",
    "retry_interval",
    "max_sessions_per_client",
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


def _config(server: ServesHttp, host: str, port: int, options: dict[str, Any]) -> BoundedConfig:
    """uvicorn's configuration serving ``server`` in this process."""
    app_options, limits, others = _split(options)
    app = server.http_app(**app_options)
    return BoundedConfig(app, limits=limits, host=host, port=port, lifespan="on", **others)


def _run_workers(
    host: str,
    port: int,
    workers: int,
    factory: str | None,
    sock: socket.socket | None,
    options: dict[str, Any],
) -> None:
    """Serve with several worker processes, each building its server from ``factory``."""
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
    given_key = state_keys_from(os.environ) is not None  # malformed: refused now, once
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
        # A socket of its own for each worker where the kernel spreads connections over
        # them (`_workers`); the one given is the first.
        slots, more = listening_sockets(host, port, workers, sock)
        try:
            for each in slots:
                # Listening now: a connection the kernel hands a worker still starting
                # waits for it in its socket's queue.
                each.listen(config.backlog)
            SpreadingSupervisor(config, slots, more).run()
        finally:
            for made in {id(each): each for each in slots if each is not sock}.values():
                made.close()
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
    if not isinstance(target, ServesHttp) and not callable(target):
        raise TypeError(f"{factory} is not an McpServer nor a function making one")
    return target


def _load(factory: str) -> ServesHttp:
    """The server ``factory`` names: an `McpServer`, or a function returning one."""
    target = _resolve(factory)
    if not isinstance(target, ServesHttp):
        target = target()
    if not isinstance(target, ServesHttp):
        raise TypeError(f"{factory} is not an McpServer nor a function making one")
    return target


def worker_app() -> Starlette:
    """The app of one worker process of `run_http` (uvicorn calls it in each)."""
    summarise_accept_failures()
    options = json.loads(os.environ[_WORKER])
    server = _load(options["factory"])
    server.use_request_state_keys(state_keys_from(os.environ))
    return server.http_app(**options["app"])
