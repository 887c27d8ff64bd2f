"""A caller an MCP server's ``header_provider`` finds no credential for (it raises
`AuthError`, as `UserBearer` does for a user without a token of their own for the
server): that server offers them nothing. Its tools, resources, templates and prompts
are left out of their listings (the other servers of a gateway are listed as ever), and
this is logged once per caller and server at INFO, naming the credential (never a
secret); a call, a read or a prompt of that server is refused, naming the credential,
and nothing is sent (see `McpTool.run`)."""

from __future__ import annotations

import inspect
import logging
from collections import OrderedDict

from toolsets._context import ToolContext
from toolsets._errors import AuthError
from toolsets.mcp.client._transports import StreamableHttp, Transport

__all__ = ["MAX_TOLD", "Withheld", "header_refusal"]

logger = logging.getLogger("toolsets.mcp")

MAX_TOLD = 10_000
"""Callers (and credentials) a server remembers having logged about; one forgotten is
logged about again."""

_Told = tuple[str | None, str | None, str]
"""Whom a server told about: the caller's issuer and subject (None: not identified),
the credential's name."""


class Withheld:
    """Logs, once per caller and credential, that the server ``server`` offers a caller
    nothing for want of their credential."""

    def __init__(self, server: str) -> None:
        self.server = server
        self._told: OrderedDict[_Told, None] = OrderedDict()

    def tell(self, ctx: ToolContext | None, exc: AuthError) -> None:
        identity = ctx.identity if ctx is not None else None
        issuer, subject = (identity.issuer, identity.subject) if identity else (None, None)
        key = (issuer, subject, exc.scheme_name)
        if key in self._told:
            self._told.move_to_end(key)
            return
        self._told[key] = None
        if len(self._told) > MAX_TOLD:
            self._told.popitem(last=False)
        who = f"the caller {subject!r} (of {issuer})" if subject else "an unidentified caller"
        logger.info(
            "MCP server %s offers %s nothing: they have no credential %r for it, so its "
            "tools, resources and prompts are left out of what they are offered (a call "
            "of one is refused naming the credential, and nothing is sent)",
            self.server,
            who,
            exc.scheme_name,
        )


async def header_refusal(transport: Transport, ctx: ToolContext | None) -> AuthError | None:
    """The `AuthError` with which ``transport``'s header provider refuses the caller of
    ``ctx`` (None: it finds them a credential, or there is no header provider).
    Nothing is sent to the server."""
    if not isinstance(transport, StreamableHttp) or transport.header_provider is None:
        return None
    try:
        headers = transport.header_provider(ctx)
        if inspect.isawaitable(headers):
            await headers
    except AuthError as exc:
        return exc
    return None
