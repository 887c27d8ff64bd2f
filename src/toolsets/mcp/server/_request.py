"""What a request says about who sends it: `IncomingRequest`, made from the SDK's context
of a request, and the connection it came on (the one place that reaches into the SDK for
it)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias

import mcp.types as mt
from mcp.server.context import ServerRequestContext
from starlette.requests import Request

from toolsets._auth import AuthConfig
from toolsets._context import Identity, Invocation

if TYPE_CHECKING:
    from mcp.server.connection import Connection

__all__ = [
    "Context",
    "CredentialsFor",
    "IncomingRequest",
    "InvocationFor",
    "connection",
    "headers_of",
    "identity_of",
    "incoming",
]

Context: TypeAlias = ServerRequestContext[Any, Any]
"""The SDK's context of a request, as every handler gets it."""


@dataclass(frozen=True, kw_only=True)
class IncomingRequest:
    """What a request from an MCP client says about who sends it: given to
    ``credentials`` and ``invocation`` functions."""

    method: str
    """The MCP method, e.g. ``tools/call``."""
    protocol_version: str
    """The protocol version the client speaks."""
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    """The HTTP request's headers, names in lower case (empty over stdio). They may
    hold the client's credentials: never forward them as they are."""
    client: mt.Implementation | None = None
    """The client's name and version, when it said."""
    session_id: str | None = None
    """The MCP session, as the server made it (stateful streamable HTTP only; None
    over stdio and stateless HTTP, whatever ``Mcp-Session-Id`` header came)."""
    identity: Identity | None = None
    """Who is calling, as the server's authorization validated the request's access
    token (None: the server has none, e.g. over stdio)."""

    @property
    def bearer_token(self) -> str | None:
        """The token of an ``Authorization: Bearer`` header, if any."""
        scheme, _, token = self.headers.get("authorization", "").partition(" ")
        return token.strip() or None if scheme.lower() == "bearer" else None


CredentialsFor: TypeAlias = Callable[[IncomingRequest, AuthConfig], Any]
"""Answers which credential a tool's ``auth_config`` gets for a request: an
`AuthCredential`, the key or token as a string, or None (none: the call is refused);
a sync or async function."""
InvocationFor: TypeAlias = Callable[[IncomingRequest], "Invocation | Awaitable[Invocation]"]
"""The `Invocation` (user, scopes, services, ...) tools run in for a request; a sync or
async function (a sync one runs in a worker thread: it may block)."""


def headers_of(ctx: Context) -> Mapping[str, str] | None:
    """The HTTP request's headers (as sent), None when the request came otherwise
    (stdio, in memory)."""
    http = ctx.request
    return http.headers if isinstance(http, Request) else None


def incoming(ctx: Context) -> IncomingRequest:
    """What the request of ``ctx`` says about who sends it."""
    sent = headers_of(ctx)
    headers = {name.lower(): value for name, value in sent.items()} if sent is not None else {}
    params = ctx.session.client_params
    return IncomingRequest(
        method=ctx.method,
        protocol_version=ctx.protocol_version,
        headers=headers,
        client=params.client_info if params is not None else None,
        # The session the SDK's transport made and checked the request against; never
        # the header itself (a client sends any it likes to a stateless server).
        session_id=connection(ctx).session_id,
        identity=identity_of(ctx),
    )


def identity_of(ctx: Context) -> Identity | None:
    """Who sent the request of ``ctx``, as the server's `AuthGuard` validated its token
    (the SDK's authenticated user on the HTTP request carries it), None without one."""
    http = ctx.request
    if not isinstance(http, Request):
        return None
    identity = getattr(http.scope.get("user"), "caller", None)
    return identity if isinstance(identity, Identity) else None


def connection(ctx: Context) -> Connection:
    """The connection a request came on. The SDK hands handlers no public handle: this
    reads its session's private one, here only (an SDK that renames it fails here, at
    once, on every request)."""
    return ctx.session._connection
