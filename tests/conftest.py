from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.mcp.helpers import HttpServer


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Every async test runs on both anyio backends: the library must not assume one."""
    return str(request.param)


@pytest.fixture(scope="module")
def http_server() -> Iterator[HttpServer]:
    """The MCP fixture server over streamable HTTP, one process per test module."""
    server = HttpServer()
    server.start()
    yield server
    server.stop()
