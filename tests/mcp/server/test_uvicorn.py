"""The connection limits of serving over HTTP, as options (checked before anything is
served) and asyncio's failed-accept tracebacks made one line; the limits at work are
measured from outside in ``tests/cli/test_serve_limits.py``."""

from __future__ import annotations

import logging
import sys

import pytest

from tests.mcp.server_helpers import served
from toolsets.mcp.server._uvicorn import (
    ConnectionLimits,
    _AcceptFailures,
    default_max_connections,
    summarise_accept_failures,
)


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("header_timeout", 0),
        ("body_timeout", -1),
        ("keep_alive_timeout", float("inf")),
        ("header_timeout", True),
        ("max_connections", 0),
        ("max_header_bytes", True),
    ],
)
def test_a_limit_out_of_range_is_refused_naming_it_before_serving(
    option: str, value: object
) -> None:
    with pytest.raises(ValueError, match=option):
        served.make_server().run_http(port=0, **{option: value})


def test_an_unknown_option_is_refused() -> None:
    with pytest.raises(TypeError, match="header_timout"):
        served.make_server().run_http(port=0, header_timout=1)


def test_the_default_connections_leave_a_quarter_of_the_file_limit_free() -> None:
    assert ConnectionLimits().max_connections is None  # derived when serving
    assert default_max_connections(256) == 192
    assert default_max_connections(1024) == 768
    assert default_max_connections(1_048_576) == 10_000
    assert default_max_connections(64) == 1


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
