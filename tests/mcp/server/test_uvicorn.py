"""asyncio's failed-accept tracebacks made one line per interval, and small writes sent
at once; the limits uvicorn enforces are measured from outside in
``tests/cli/test_serve_limits.py``."""

from __future__ import annotations

import logging
import os
import socket
import sys
import threading
import time
from typing import Any

import uvicorn

from toolsets.mcp.server._limits import ConnectionLimits
from toolsets.mcp.server._uvicorn import (
    BoundedConfig,
    _AcceptFailures,
    summarise_accept_failures,
)


def _accept_failure() -> logging.LogRecord:
    error = OSError(24, "Too many open files")
    return logging.LogRecord(
        "asyncio",
        logging.ERROR,
        __file__,
        1,
        "socket.accept() out of system resource\nsocket: <asyncio.TransportSocket fd=6>",
        None,
        (OSError, error, None),
    )


def test_failed_accepts_are_one_line_per_interval_with_no_traceback() -> None:
    summary = _AcceptFailures()
    records = [_accept_failure() for _ in range(1000)]
    passed = [record for record in records if summary.filter(record)]
    assert len(passed) == 1
    (line,) = passed
    assert line.exc_info is None
    assert "\n" not in line.getMessage()
    assert "Too many open files" in line.getMessage()
    other = logging.LogRecord("asyncio", logging.ERROR, __file__, 1, "other", None, sys.exc_info())
    assert summary.filter(other)


def test_the_filter_is_installed_once_on_the_asyncio_logger() -> None:
    summarise_accept_failures()
    summarise_accept_failures()
    installed = logging.getLogger("asyncio").filters
    assert sum(isinstance(each, _AcceptFailures) for each in installed) == 1


# --- small writes go at once ---------------------------------------------------------------


async def _hello(scope: Any, receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"hello"})


def _server_side_of(client: socket.socket) -> socket.socket:
    """This process's socket at the other end of ``client`` (a copy of its descriptor)."""
    for fd in os.listdir("/proc/self/fd"):
        try:
            candidate = socket.socket(fileno=os.dup(int(fd)))
        except OSError:
            continue
        try:
            if candidate.getpeername() == client.getsockname():
                return candidate
        except OSError:
            pass
        candidate.close()
    raise AssertionError("no socket of this process is connected to the client")


def test_a_connection_on_a_socket_bound_beforehand_sends_small_writes_at_once() -> None:
    # `toolsets serve` binds its socket itself, as uvicorn does for its workers: made
    # with proto 0, which asyncio does not take for TCP, so it left Nagle's algorithm on;
    # an answer's body, written after its head, then waited ~40 ms for the client's
    # delayed acknowledgement on every request but a connection's first.
    listening = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listening.bind(("127.0.0.1", 0))
    config = BoundedConfig(_hello, limits=ConnectionLimits(), lifespan="off", log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listening]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while not server.started:
            assert time.monotonic() < deadline, "uvicorn did not start within 10 s"
            time.sleep(0.01)
        with socket.create_connection(listening.getsockname(), timeout=10) as client:
            client.sendall(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
            assert client.recv(4096).startswith(b"HTTP/1.1 200")
            with _server_side_of(client) as accepted:
                assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
    finally:
        server.should_exit = True
        thread.join(10)
        listening.close()
    assert not thread.is_alive()
