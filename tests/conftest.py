from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.mcp.helpers import HttpServer
from tests.mcp.server.oidc import OpenIdProvider


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


@pytest.fixture(scope="session")
def openid_provider() -> Iterator[OpenIdProvider]:
    """A real OpenID provider (npm oidc-provider), one process per test session."""
    provider = OpenIdProvider()
    provider.start()
    try:
        yield provider
    finally:
        provider.stop()
