"""The connection-level bounds of serving `McpServer` over HTTP: `ConnectionLimits` (how
long a client may take to send a request's head and body, how long an idle connection is
kept, how big a head may be, how many connections are served at once), their defaults,
and the connection limit derived from the open-file limit (`default_max_connections`).

uvicorn enforces them with `BoundedProtocol` (`_uvicorn`); the HTTP options check them
here before anything is served.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from toolsets._concurrency import check_timeout

__all__ = [
    "DEFAULT_BODY_TIMEOUT",
    "DEFAULT_HEADER_TIMEOUT",
    "DEFAULT_KEEP_ALIVE_TIMEOUT",
    "DEFAULT_MAX_CONNECTIONS",
    "DEFAULT_MAX_HEADER_BYTES",
    "DEFAULT_SHUTDOWN_TIMEOUT",
    "LIMIT_OPTIONS",
    "ConnectionLimits",
    "default_max_connections",
    "open_file_limit",
]

DEFAULT_HEADER_TIMEOUT = 10.0
"""Seconds a client has to send a request's head, from when the connection opens (or its
previous response ends); then it is closed (with 408 if part of a head came)."""
DEFAULT_BODY_TIMEOUT = 60.0
"""Seconds a client has to send a request's body, from the end of its head."""
DEFAULT_KEEP_ALIVE_TIMEOUT = 5.0
"""Seconds an idle connection is kept open after a response for a next request."""
DEFAULT_MAX_HEADER_BYTES = 16 * 1024
"""The largest request head (request line and headers); past it, 431."""
DEFAULT_SHUTDOWN_TIMEOUT = 30.0
"""Seconds the calls in flight have to finish once shutting down (a SIGTERM): no new
connection is accepted meanwhile; past it, they are cancelled and the toolset closed."""
DEFAULT_MAX_CONNECTIONS = 10_000
"""Connections served at once when the open-file limit allows as many; fewer when not
(`default_max_connections`)."""
LIMIT_OPTIONS = (
    "header_timeout",
    "body_timeout",
    "keep_alive_timeout",
    "max_connections",
    "max_header_bytes",
    "shutdown_timeout",
)
"""The serving options that are `ConnectionLimits` fields."""

_RESERVED_MIN = 64
"""File descriptors kept beyond the served connections, at the least: the listening
socket, the event loop's, log files, upstream connections and processes, tools' files."""


@dataclass(frozen=True, kw_only=True)
class ConnectionLimits:
    """How long and how many: the connection-level bounds of serving over HTTP."""

    header_timeout: float = DEFAULT_HEADER_TIMEOUT
    """Seconds to send a request's head (`DEFAULT_HEADER_TIMEOUT`)."""
    body_timeout: float = DEFAULT_BODY_TIMEOUT
    """Seconds to send a request's body after its head (`DEFAULT_BODY_TIMEOUT`)."""
    keep_alive_timeout: float = DEFAULT_KEEP_ALIVE_TIMEOUT
    """Seconds an idle connection waits for a next request (`DEFAULT_KEEP_ALIVE_TIMEOUT`)."""
    max_connections: int | None = None
    """Connections served at once; the next ones are answered 503 at once. None: as many
    as the open-file limit leaves room for (`default_max_connections`)."""
    max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES
    """The largest request head (`DEFAULT_MAX_HEADER_BYTES`); past it, 431."""
    shutdown_timeout: float = DEFAULT_SHUTDOWN_TIMEOUT
    """Seconds the calls in flight have to finish once shutting down
    (`DEFAULT_SHUTDOWN_TIMEOUT`)."""

    def __post_init__(self) -> None:
        names = ("header_timeout", "body_timeout", "keep_alive_timeout", "shutdown_timeout")
        for name in names:
            value = getattr(self, name)
            check_timeout(value, name)
        for name in ("max_connections", "max_header_bytes"):
            value = getattr(self, name)
            if value is None and name == "max_connections":
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive whole number, not {value!r}")


def open_file_limit() -> int | None:
    """This process's open-file limit (the soft one), None when unlimited or unknown."""
    if sys.platform == "win32":
        return None
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return None if soft == resource.RLIM_INFINITY else soft


def default_max_connections(file_limit: int | None = None) -> int:
    """The connections served at once by default: `DEFAULT_MAX_CONNECTIONS`, or fewer so
    that a quarter of the open-file limit (at least 64 descriptors) stays free for
    everything else the process opens, and for answering 503 past the limit.

    Args:
        file_limit: The open-file limit (default: this process's soft limit).
    """
    limit = open_file_limit() if file_limit is None else file_limit
    if limit is None:
        return DEFAULT_MAX_CONNECTIONS
    return max(1, min(DEFAULT_MAX_CONNECTIONS, limit - max(_RESERVED_MIN, limit // 4)))
