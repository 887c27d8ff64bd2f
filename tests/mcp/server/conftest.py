from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.mcp.server.oidc import OpenIdProvider


@pytest.fixture(scope="session")
def openid_provider() -> Iterator[OpenIdProvider]:
    """The real OpenID provider (npm oidc-provider), one process per test session."""
    provider = OpenIdProvider()
    provider.start()
    try:
        yield provider
    finally:
        provider.stop()
