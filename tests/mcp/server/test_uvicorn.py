"""asyncio's failed-accept tracebacks made one line per interval; the limits uvicorn
enforces are measured from outside in ``tests/cli/test_serve_limits.py``."""

from __future__ import annotations

import logging
import sys

from toolsets.mcp.server._uvicorn import _AcceptFailures, summarise_accept_failures


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
