"""How a served process stops (internal): `DrainingServer`, uvicorn's server whose app
says it is not ready as soon as it is told to stop, lets the answers in flight finish
within ``timeout_graceful_shutdown`` (``--shutdown-timeout``), and only then ends the
streams clients merely listen on.

sse-starlette, which the `mcp` SDK answers over, patches uvicorn's ``handle_exit`` to set
a process-wide flag that ends every SSE answer at once: a call answered over SSE (a
2025-11-25 session's, or any SSE-mode answer) was cut at SIGTERM with no result. Here the
flag is left alone when the signal comes, and set once no request but the listening
streams (GETs) is in flight, or the deadline has passed.

The app's `Readiness` is found on the app uvicorn loaded (under its middleware), so a
worker process, which builds its app only once started, drains the same way.
"""

from __future__ import annotations

import math
import socket
from types import FrameType
from typing import Any

import anyio
import uvicorn
from sse_starlette.sse import AppStatus

from toolsets.mcp.server._health import Readiness

__all__ = ["DrainingServer", "readiness_of"]


class DrainingServer(uvicorn.Server):
    """uvicorn's server, whose app says it is not ready (``/readyz``: 503) as soon as
    it is told to stop, before it stops accepting and lets the answers in flight finish
    (within ``timeout_graceful_shutdown``); then the listening streams end."""

    def __init__(self, config: uvicorn.Config, readiness: Readiness | None = None) -> None:
        super().__init__(config)
        self.readiness = readiness
        """The app's; when not given, found on the app loaded once told to stop."""
        self._drains: bool | None = None
        """sse-starlette's own draining, as it was before this server stopped it."""

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if self.readiness is None:
            self.readiness = readiness_of(getattr(self.config, "loaded_app", None))
        if self.readiness is not None and self._drains is None:
            self.readiness.drain()
            # Neither its patch of this method nor its watcher of this server's
            # should_exit ends the SSE answers now: `shutdown` does, once answered.
            self._drains = AppStatus.enable_automatic_graceful_drain
            AppStatus.enable_automatic_graceful_drain = False
        super().handle_exit(sig, frame)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        if self._drains is None:  # not told by a signal, or nothing counted
            await super().shutdown(sockets)
            return
        try:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(self._end_streams_once_answered)
                await super().shutdown(sockets)
                tasks.cancel_scope.cancel()
        finally:
            # Put back for whatever else serves in this process (the flag is global).
            AppStatus.should_exit = False
            AppStatus.enable_automatic_graceful_drain = self._drains

    async def _end_streams_once_answered(self) -> None:
        """End the SSE streams (sse-starlette's flag) once no answer is in flight but
        the listening streams', or once the deadline has passed."""
        assert self.readiness is not None
        deadline = self.config.timeout_graceful_shutdown
        with anyio.move_on_after(math.inf if deadline is None else deadline):
            await self.readiness.answered()
        AppStatus.should_exit = True


def readiness_of(app: Any) -> Readiness | None:
    """The `Readiness` of ``app`` (a Starlette app's ``state.readiness``), looked for
    under the ASGI middleware wrapping it (each holding the next as ``app``)."""
    seen = 0
    while app is not None and seen < _MIDDLEWARE_DEPTH:
        found = getattr(getattr(app, "state", None), "readiness", None)
        if isinstance(found, Readiness):
            return found
        app, seen = getattr(app, "app", None), seen + 1
    return None


_MIDDLEWARE_DEPTH = 8
"""How many wrappers deep the app's readiness is looked for (uvicorn adds at most three)."""
