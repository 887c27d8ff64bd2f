"""`McpServer`'s HTTP app made a resource server: `protect` adds the metadata routes and
`AuthGuard` to it, and the one pooled httpx2 client the authorization server is asked
with (opened when first needed, closed with the app)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx2
from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from starlette.applications import Starlette

from toolsets.mcp.server._auth._config import OAuthResourceServer
from toolsets.mcp.server._auth._guard import AuthGuard, metadata_routes
from toolsets.mcp.server._auth._tokens import TokenValidator

__all__ = ["protect"]


class _Client:
    """The httpx2 client given, or one of our own made when first asked for (in the
    event loop that serves) and closed by `close`."""

    def __init__(self, given: httpx2.AsyncClient | None) -> None:
        self.given = given
        self.own: httpx2.AsyncClient | None = None

    async def __call__(self) -> httpx2.AsyncClient:
        if self.given is not None:
            return self.given
        if self.own is None:
            self.own = httpx2.AsyncClient(trust_env=False)
        return self.own

    async def close(self) -> None:
        own, self.own = self.own, None
        if own is not None:
            await own.aclose()


def protect(app: Starlette, config: OAuthResourceServer, path: str, name: str) -> TokenValidator:
    """Make ``app`` (serving MCP at ``path``) a resource server as ``config`` says: add
    the metadata routes, and `AuthGuard` as the next middleware (inside those added
    after it), with the SDK's ``AuthContextMiddleware`` inside it; its lifespan closes
    the client it opened. The `TokenValidator` it uses."""
    client = _Client(config.http_client)
    validator = TokenValidator(config, client)
    app.router.routes.extend(metadata_routes(config, path, name))
    # Inside the guard: the SDK's get_access_token() gives a request's validated token
    # (token exchange reads it there, and nowhere else).
    app.add_middleware(AuthContextMiddleware)
    app.add_middleware(AuthGuard, config=config, validator=validator, path=path)
    inner = app.router.lifespan_context

    @contextlib.asynccontextmanager
    async def lifespan(served: Any) -> AsyncIterator[Any]:
        try:
            async with inner(served) as state:
                yield state
        finally:
            await client.close()

    app.router.lifespan_context = lifespan
    return validator
