"""Each calling user's own bearer token for an upstream MCP server behind a served
gateway: `UserBearer`, a `StreamableHttp` ``header_provider`` finding it with the
server's `UserCredentials` (token exchange for the upstream's audience, or a resolver).

The upstream `McpToolset` keeps one session per distinct set of headers, so each user's
requests (calls, listings, resources, prompts) go over a session of their own carrying
their own token; the least recently used sessions beyond its ``max_sessions`` are closed.
A caller without a credential of their own (and no ``fallback``) gets an error result
naming the credential that is missing, and nothing is sent upstream: no session is even
opened. A credential the upstream refuses (HTTP 401, or 403 ``insufficient_scope``: revoked
early, or the upstream's audience check fails) is an error result too: it is dropped from
the cache (`refused`), so the user's next request obtains a new one; other users' sessions
are untouched. The client's own access token is never sent upstream."""

from __future__ import annotations

from collections.abc import Sequence

from toolsets._auth import AuthConfig
from toolsets._context import ToolContext
from toolsets.mcp.server._upstream import UserCredentials

__all__ = ["UserBearer"]


class UserBearer:
    """Each calling user's own bearer token for one upstream MCP server: give it as the
    upstream's `StreamableHttp` ``header_provider``, and serve the gateway with
    authorization (`McpServer`'s ``auth``), so that every request has a caller.

    The credential is the one ``credentials`` gives the caller (their `Identity`) for a
    bearer scheme named ``name``: with `TokenExchange`, a token the issuer exchanges the
    caller's for the upstream's audience (``audience={name: ...}`` names it for this
    upstream alone); with `UserCredentials.from_mapping` / ``from_file``, the user's
    token under ``name``. A caller without one gets an error result naming ``name``
    (``{"error": ..., "credential": name}`` for a call; an error answer for a listing)
    and nothing is sent; the ``fallback`` of ``credentials``, if the operator gave one,
    serves such callers instead. A credential the upstream refuses is such an error as
    well, and is dropped (`refused`): the caller's next request obtains a new one.

    Args:
        credentials: Each user's own credentials (the same object may serve
            `McpServer`'s ``credentials`` for its other tools).
        name: The credential's name: the security scheme ``credentials`` looks up (and
            the one an error result names).
        scopes: The scopes to ask for (a `TokenExchange` without scopes of its own asks
            for these).

    Example::

        users = UserCredentials(TokenExchange(issuer=ISSUER, audience={"github": GITHUB_MCP},
                                              client_id="gateway", client_secret=SECRET))
        github = McpToolset(StreamableHttp(url=GITHUB_MCP,
                                           header_provider=UserBearer(users, name="github")))
        McpServer(github, auth=OAuthResourceServer(issuer=ISSUER), credentials=users)
    """

    def __init__(
        self, credentials: UserCredentials, *, name: str, scopes: Sequence[str] = ()
    ) -> None:
        if not isinstance(credentials, UserCredentials):
            raise TypeError(
                f"credentials must be UserCredentials, not {type(credentials).__name__}"
            )
        if not name:
            raise ValueError("UserBearer needs the credential's name")
        self.credentials = credentials
        """Where each user's credential is found."""
        self.auth_config = AuthConfig(
            scheme_name=name, scheme={"type": "http", "scheme": "bearer"}, scopes=tuple(scopes)
        )
        """What is asked of ``credentials``: a bearer token under ``name``."""

    async def __call__(self, ctx: ToolContext | None) -> dict[str, str]:
        """The ``Authorization`` header of the caller of ``ctx`` (None: no caller).

        Raises:
            AuthError: the caller has no credential (and there is no fallback), or it
                could not be obtained; ``scheme_name`` is ``name``, and the message
                names no secret.
        """
        identity = ctx.identity if ctx is not None else None
        found = await self.credentials.credential(identity, self.auth_config)
        return {"Authorization": f"Bearer {found.secret}"}

    @property
    def name(self) -> str:
        """The credential's name (``scheme_name`` of the errors about it)."""
        return self.auth_config.scheme_name

    def refused(self, ctx: ToolContext | None) -> None:
        """The upstream refused the credential given for ``ctx``'s caller: it is dropped
        from ``credentials``' cache (`UserCredentials.forget`: a `TokenExchange` exchanges
        again), so that their next request obtains a new one. Called by the upstream's
        `McpToolset`; nothing is sent again now."""
        identity = ctx.identity if ctx is not None else None
        if identity is not None and identity.subject:
            self.credentials.forget(identity, self.auth_config)

    def __repr__(self) -> str:
        return f"UserBearer({self.credentials!r}, name={self.auth_config.scheme_name!r})"
