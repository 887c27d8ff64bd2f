"""Health and readiness for a load balancer or an orchestrator: ``GET /healthz`` answers
200 while the process serves at all (live), ``GET /readyz`` 200 only once the app's
lifespan has started (the toolset entered: a spec read, the upstream servers
connected) and until its shutdown begins (a SIGTERM: see `Readiness.drain`), 503
before and after. Both answer before every other check (Host, Origin, authorization):
they say nothing but ``ok`` or why not, and a health checker sends no token and often
no Host a browser would.
"""

from __future__ import annotations

from typing import Any

import anyio

from toolsets.mcp.server._envelope import route_path

__all__ = ["HEALTH_PATH", "READY_PATH", "Health", "Readiness"]

HEALTH_PATH = "/healthz"
"""Where liveness is answered."""
READY_PATH = "/readyz"
"""Where readiness is answered."""

_Scope = dict[str, Any]


class Readiness:
    """Whether an app is ready for requests: started (its lifespan's start-up done) and
    not shutting down."""

    def __init__(self) -> None:
        self.started = False
        self.draining = False
        self.answering = 0
        """Requests in flight but the listening streams (GETs): what stopping waits for."""
        self._answered: anyio.Event | None = None

    @property
    def ready(self) -> bool:
        return self.started and not self.draining

    async def answered(self) -> None:
        """Return once no request but the listening streams is in flight."""
        while self.answering:
            self._answered = anyio.Event()
            await self._answered.wait()

    def _done(self) -> None:
        self.answering -= 1
        if not self.answering and self._answered is not None:
            self._answered.set()

    def drain(self) -> None:
        """Say not ready from now on (shutting down: a load balancer stops sending)."""
        self.draining = True

    @property
    def state(self) -> str:
        if self.draining:
            return "shutting down"
        return "ready" if self.started else "starting"


class Health:
    """ASGI middleware answering `HEALTH_PATH` and `READY_PATH` (GET or HEAD) in front of
    ``app``, and following its lifespan into ``readiness``."""

    def __init__(self, app: Any, readiness: Readiness) -> None:
        self.app = app
        self.readiness = readiness

    async def __call__(self, scope: _Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(scope, receive, send)
        elif scope["type"] == "http" and route_path(scope) in (HEALTH_PATH, READY_PATH):
            await self._answer(scope, send)
        elif scope["type"] == "http" and scope["method"] != "GET":
            self.readiness.answering += 1
            try:
                await self.app(scope, receive, send)
            finally:
                self.readiness._done()
        else:
            await self.app(scope, receive, send)

    async def _lifespan(self, scope: _Scope, receive: Any, send: Any) -> None:
        readiness = self.readiness

        async def receiving() -> Any:
            message = await receive()
            if message["type"] == "lifespan.shutdown":
                readiness.drain()
            return message

        async def sending(message: Any) -> None:
            if message["type"] == "lifespan.startup.complete":
                readiness.started = True
            await send(message)

        await self.app(scope, receiving, sending)

    async def _answer(self, scope: _Scope, send: Any) -> None:
        if scope["method"] not in ("GET", "HEAD"):
            status, text, extra = 405, "use GET", [(b"allow", b"GET, HEAD")]
        elif route_path(scope) == HEALTH_PATH:
            status, text, extra = 200, "ok", []
        else:
            state = self.readiness.state
            status, text, extra = (200 if state == "ready" else 503), state, []
        body = f"{text}\n".encode()
        headers = [
            (b"content-type", b"text/plain; charset=utf-8"),
            (b"content-length", str(len(body)).encode()),
            (b"cache-control", b"no-store"),
            *extra,
        ]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send(
            {"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else body}
        )
