"""uvicorn serving `McpServer`'s app with every wait bounded and the file descriptors kept,
under the `ConnectionLimits` of ``_limits``.

What uvicorn offers is used: ``timeout_keep_alive`` (an idle connection between two
requests), h11's ``max_incomplete_event_size`` (the size of a request head; past it, 431)
and ``limit_concurrency`` (503 past it). What it lacks is added by `BoundedProtocol`, its
h11 protocol with three changes:

- a deadline for each request head, from when the connection starts waiting for it (a
  new connection that sends nothing, or a head sent a byte at a time, is closed), and one
  for the body from the end of its head (a body sent a byte at a time is cut off);
- a connection past ``max_connections`` answered 503 at once and closed, instead of
  held until its request arrives (uvicorn's own limit): the limit is derived from the
  open-file limit, so the process keeps descriptors to answer with, and a flood of idle
  sockets never leaves it silent;
- an error answer (400, 408, 431, 503) closed gracefully (half-closed, what the client
  still sends read and dropped for a moment): closed at once, the kernel resets the
  connection and the client may never read why.

asyncio's accept loop logs one traceback per failed ``accept()`` (thousands a second when
the process is out of file descriptors): `summarise_accept_failures` makes that one line
per interval, with a count.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import math
import os
import socket
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.server import ServerState

from toolsets.mcp.server._limits import ConnectionLimits, default_max_connections, open_file_limit

if TYPE_CHECKING:
    # uvicorn runs on asyncio only: its protocols are asyncio protocols. Types only.
    import asyncio  # noqa: TID251

__all__ = [
    "ACCEPT_FAILURE_INTERVAL",
    "CLOSE_LINGER",
    "LIMITS_VARIABLE",
    "BoundedConfig",
    "BoundedProtocol",
    "summarise_accept_failures",
    "uvicorn_options",
    "worker_environment",
]

logger = logging.getLogger("toolsets.mcp.server")

CLOSE_LINGER = 1.0
"""Seconds an error answer's connection stays half-open for the client to read it."""
ACCEPT_FAILURE_INTERVAL = 10.0
"""Seconds between two log lines about refused or failed connections."""
LIMITS_VARIABLE = "TOOLSETS_MCP_LIMITS"
"""The environment variable carrying the limits to uvicorn's worker processes (JSON)."""


class _Summary:
    """A repeated event logged at most once per interval, with how many times it happened."""

    def __init__(self, interval: float = ACCEPT_FAILURE_INTERVAL) -> None:
        self.interval = interval
        self._count = 0
        self._last = -math.inf
        self._lock = threading.Lock()  # one process may serve from several threads' loops

    def happened(self) -> int | None:
        """Count one more; the count to log now (then reset), or None for no line yet."""
        with self._lock:
            self._count += 1
            now = time.monotonic()
            if now - self._last < self.interval:
                return None
            count, self._count, self._last = self._count, 0, now
            return count


@dataclass(kw_only=True)
class _Bounds:
    """What the connections of one server (one process) share."""

    limits: ConnectionLimits
    max_connections: int
    linger_budget: int
    """How many refused connections may linger at once (beyond that, closed at once)."""
    lingering: int = 0
    refused: _Summary = field(default_factory=_Summary)

    @classmethod
    def of(cls, limits: ConnectionLimits) -> _Bounds:
        file_limit = open_file_limit()
        connections = limits.max_connections or default_max_connections(file_limit)
        spare = (file_limit if file_limit is not None else connections * 2) - connections
        return cls(limits=limits, max_connections=connections, linger_budget=max(0, spare // 4))


class BoundedConfig(uvicorn.Config):
    """A uvicorn configuration serving with `BoundedProtocol` under ``limits``."""

    def __init__(self, app: Any, *, limits: ConnectionLimits, **options: Any) -> None:
        self.bounds = _Bounds.of(limits)
        options.update(uvicorn_options(limits, self.bounds.max_connections))
        super().__init__(app, **options)

    def load(self) -> None:
        summarise_accept_failures()
        super().load()


def uvicorn_options(limits: ConnectionLimits, max_connections: int | None = None) -> dict[str, Any]:
    """uvicorn's own settings for ``limits`` (``max_connections``: as derived already)."""
    if max_connections is None:
        max_connections = limits.max_connections or default_max_connections()
    return {
        "http": BoundedProtocol,
        # uvicorn answers 503 once connections *reach* its limit, counting the one asking;
        # past max_connections, BoundedProtocol refuses a connection before that.
        "limit_concurrency": max_connections + 1,
        # uvicorn's annotation says int; the value only goes to call_later.
        "timeout_keep_alive": limits.keep_alive_timeout,
        "h11_max_incomplete_event_size": limits.max_header_bytes,
        # Once stopping: the calls in flight finish within it (new connections refused).
        "timeout_graceful_shutdown": limits.shutdown_timeout,
    }


def worker_environment(limits: ConnectionLimits) -> dict[str, str]:
    """The environment that hands ``limits`` to uvicorn's worker processes."""
    return {LIMITS_VARIABLE: json.dumps(asdict(limits))}


@functools.cache
def _worker_bounds() -> _Bounds:
    """This worker process's bounds: those `LIMITS_VARIABLE` gives, else the defaults."""
    given = os.environ.get(LIMITS_VARIABLE)
    return _Bounds.of(ConnectionLimits(**json.loads(given)) if given else ConnectionLimits())


def _plain(status: int, text: str, *extra: str) -> bytes:
    """A complete HTTP/1.1 answer that closes the connection."""
    body = text.encode()
    head = [
        f"HTTP/1.1 {status} {_PHRASES[status]}".encode(),
        b"content-type: text/plain; charset=utf-8",
        b"content-length: %d" % len(body),
        b"connection: close",
        *(line.encode() for line in extra),
    ]
    return b"\r\n".join(head) + b"\r\n\r\n" + body


_PHRASES = {
    400: "Bad Request",
    408: "Request Timeout",
    431: "Request Header Fields Too Large",
    503: "Service Unavailable",
}
_SERVICE_UNAVAILABLE = _plain(503, "Service Unavailable: too many connections", "retry-after: 1")
_REQUEST_TIMEOUT = _plain(408, "Request Timeout")

_Phase = Literal["head", "body", "busy"]


def _no_delay(transport: asyncio.BaseTransport) -> None:
    """Send small writes at once (TCP_NODELAY). asyncio sets it only on sockets made
    with ``proto=IPPROTO_TCP``; a socket bound beforehand (``toolsets serve``'s, uvicorn's
    for its workers) has proto 0, and then an answer's body, written after its head,
    waited for the client's delayed acknowledgement of the head (the kernel's delayed-ACK
    timer) on each request but a connection's first."""
    sock = transport.get_extra_info("socket")
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        with contextlib.suppress(OSError):  # the peer may be gone already
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class BoundedProtocol(H11Protocol):
    """uvicorn's h11 protocol with deadlines on the request head and body, connections
    past ``max_connections`` answered 503 at once, and error answers closed gracefully."""

    def __init__(
        self,
        config: uvicorn.Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self.bounds = config.bounds if isinstance(config, BoundedConfig) else _worker_bounds()
        self._phase: _Phase | None = None
        self._deadline: asyncio.TimerHandle | None = None
        self._closer: asyncio.TimerHandle | None = None
        self._refused = False
        self._counted = False

    # --- the connection -------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        if len(self.connections) >= self.bounds.max_connections:
            self._refuse(transport)
            return
        _no_delay(transport)
        super().connection_made(transport)  # type: ignore[arg-type]
        self._follow()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel()
        if self._closer is not None:
            self._closer.cancel()
            self._closer = None
        if self._counted:
            self.bounds.lingering -= 1
            self._counted = False
        if not self._refused:
            super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._refused or self._closer is not None:
            return  # answered and closing: what still comes is dropped
        super().data_received(data)
        self._follow()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._follow()

    def send_400_response(self, msg: str) -> None:
        # uvicorn calls this while handling h11's error, which says which status fits
        # (431 for a head over max_header_bytes).
        error = sys.exc_info()[1]
        status = error.error_status_hint if isinstance(error, h11.RemoteProtocolError) else 400
        if status not in _PHRASES:
            status = 400
        self._answer(_plain(status, _PHRASES[status]))

    # --- deadlines --------------------------------------------------------------------

    def _follow(self) -> None:
        """Arm the deadline of what the connection now waits for from the client."""
        if self._closer is not None or self.transport.is_closing():
            self._cancel()
            return
        theirs = self.conn.their_state
        phase: _Phase
        if theirs is h11.IDLE and self.conn.our_state is h11.IDLE:
            phase = "head"
        elif theirs is h11.SEND_BODY:
            phase = "body"
        else:
            phase = "busy"  # the request is in: nothing to wait for from the client
        if phase == self._phase:
            return
        self._cancel()
        self._phase = phase
        limits = self.bounds.limits
        if phase == "head":
            self._deadline = self.loop.call_later(limits.header_timeout, self._head_late)
        elif phase == "body":
            self._deadline = self.loop.call_later(limits.body_timeout, self._body_late)

    def _cancel(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        self._phase = None

    def _head_late(self) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        pending, _ = self.conn.trailing_data
        if pending:
            logger.debug("closed a connection whose request head was late (408)")
            self._answer(_REQUEST_TIMEOUT)
            return
        logger.debug("closed a connection that sent no request")
        self.conn.send(h11.ConnectionClosed())
        self.transport.close()

    def _body_late(self) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        logger.debug("closed a connection whose request body was late")
        cycle = self.cycle
        answered = cycle is None or cycle.response_started
        if cycle is not None and not cycle.response_complete:
            # The app hears http.disconnect and what it sends after is dropped.
            cycle.disconnected = True
            cycle.message_event.set()
        if answered:
            self.transport.close()
        else:
            self._answer(_REQUEST_TIMEOUT)

    # --- answering and closing ---------------------------------------------------------

    def _refuse(self, transport: asyncio.BaseTransport) -> None:
        """Answer 503 on a connection past ``max_connections`` without serving it."""
        self._refused = True
        self.transport = transport  # type: ignore[assignment]
        count = self.bounds.refused.happened()
        if count is not None:
            logger.warning(
                "refused %d connection(s) with 503: %d are open (max_connections); raise "
                "max_connections and the open-file limit (ulimit -n) if they are wanted",
                count,
                self.bounds.max_connections,
            )
        if self.bounds.lingering < self.bounds.linger_budget:
            self.bounds.lingering += 1
            self._counted = True
            self._answer(_SERVICE_UNAVAILABLE)
        else:  # enough lingering already: the descriptor is wanted back now
            self.transport.write(_SERVICE_UNAVAILABLE)
            self.transport.close()

    def _answer(self, response: bytes) -> None:
        """Send ``response`` and close gracefully: half-closed, what the client still sends
        dropped, closed when it closes or after `CLOSE_LINGER` seconds."""
        self._cancel()
        transport = self.transport
        transport.write(response)
        try:
            if not transport.can_write_eof():
                transport.close()
                return
            transport.write_eof()
        except OSError:  # the client is gone already
            transport.close()
            return
        transport.resume_reading()  # uvicorn may have paused it under a big body
        self._closer = self.loop.call_later(CLOSE_LINGER, transport.close)


def summarise_accept_failures() -> None:
    """Make asyncio's "socket.accept() out of system resource" records (one traceback per
    failed accept, thousands a second when out of file descriptors) one line per
    `ACCEPT_FAILURE_INTERVAL` with a count: a filter on the ``asyncio`` logger, installed
    once per process and left there (it touches no other record)."""
    asyncio_logger = logging.getLogger("asyncio")
    if not any(isinstance(each, _AcceptFailures) for each in asyncio_logger.filters):
        asyncio_logger.addFilter(_AcceptFailures())


class _AcceptFailures(logging.Filter):
    def __init__(self) -> None:
        super().__init__()
        self.summary = _Summary()

    def filter(self, record: logging.LogRecord) -> bool:
        if not (isinstance(record.msg, str) and record.msg.startswith(_ACCEPT_FAILURE)):
            return True
        count = self.summary.happened()
        if count is None:
            return False
        error = record.exc_info[1] if record.exc_info else None
        record.msg = (
            "not accepting connections for a moment: %s (%d failed accept(s) since the last "
            "such line); raise the open-file limit (ulimit -n) or lower max_connections"
        )
        record.args = (error or "out of system resources", count)
        record.exc_info = None
        record.exc_text = None
        return True


_ACCEPT_FAILURE = "socket.accept() out of system resource"
