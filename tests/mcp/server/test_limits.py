"""The connection limits of serving over HTTP, as options: checked before anything is
served, and the default connection limit derived from the open-file limit; the limits at
work are measured from outside in ``tests/cli/test_serve_limits.py``."""

from __future__ import annotations

import pytest

from tests.mcp.server_helpers import served
from toolsets.mcp.server._limits import ConnectionLimits, default_max_connections


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
