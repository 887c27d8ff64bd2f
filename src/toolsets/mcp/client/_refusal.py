"""An HTTP MCP server refusing the credential a session carries (internal): a ``401``,
or a ``403`` with ``error="insufficient_scope"`` (RFC 6750 §3), noted by the response
hook of the session's HTTP client (`Refusal`, from the status and the
``WWW-Authenticate`` challenge, never the credential) and raised as
`CredentialRefusedError`, an `AuthError`.

A header provider that keeps credentials (`UserBearer`) is told of the refusal when it
has a ``refused(ctx)`` method (`HearsRefusals`): it drops what it cached for the caller,
so that the caller's next request obtains a new one. Nothing is sent again: the request
that met the refusal is an error (the model's ``{"error": ..., "credential": ...}``)."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import httpx2
from mcp.client.auth.utils import extract_field_from_www_auth

from toolsets._context import ToolContext
from toolsets._errors import AuthError
from toolsets._results import clip

__all__ = ["CredentialRefusedError", "HearsRefusals", "Refusal", "refusal_of", "tell_refused"]

_SHOWN = 200
"""Characters of a challenge's ``error`` or ``scope`` quoted (the server's text)."""


@dataclass(frozen=True, kw_only=True)
class Refusal:
    """What an HTTP server said refusing a request's credential."""

    status: int
    """401 (the credential is not accepted) or 403 (it lacks a scope)."""
    error: str | None = None
    """The challenge's ``error`` (``invalid_token``, ``insufficient_scope``), if any."""
    scope: str | None = None
    """The scope the challenge says is needed, if any."""

    def __str__(self) -> str:
        said = f"HTTP {self.status}"
        if self.error:
            said += f" {clip(self.error, _SHOWN)}"
        if self.scope:
            said += f", which asks for the scope {clip(self.scope, _SHOWN)!r}"
        return said


def refusal_of(response: httpx2.Response) -> Refusal | None:
    """The refusal of the credential ``response`` (to one of our requests) says, if it
    is one: a 401, or a 403 whose challenge says ``insufficient_scope`` (another 403 is
    a server's own refusal of the request, not of the credential)."""
    status = response.status_code
    if status not in (401, 403):
        return None
    error = extract_field_from_www_auth(response, "error")
    if status == 403 and error != "insufficient_scope":
        return None
    return Refusal(status=status, error=error, scope=extract_field_from_www_auth(response, "scope"))


class CredentialRefusedError(AuthError):
    """The server refused the credential a session carries (`Refusal`): nothing was
    run, and the session is of no more use. ``scheme_name`` names the credential (the
    server's name, when no header provider names it)."""

    def __init__(self, message: str, *, scheme_name: str, refusal: Refusal) -> None:
        super().__init__(message, scheme_name=scheme_name)
        self.refusal = refusal
        """What the server said."""


@runtime_checkable
class HearsRefusals(Protocol):
    """A ``header_provider`` told when the server refuses the credential it gave a
    caller (`UserBearer`): it drops what it cached for them."""

    @property
    def name(self) -> str:
        """The credential's name, in the error a refusal is (its ``scheme_name``)."""
        ...

    def refused(self, ctx: ToolContext | None) -> Awaitable[None] | None:
        """The credential given for ``ctx``'s caller was refused: drop it (a plain
        function, or an async one)."""
        ...


async def tell_refused(provider: object, ctx: ToolContext | None) -> str | None:
    """Tell ``provider`` (a header provider) of a refusal, if it hears them: the name of
    its credential, or None."""
    if not isinstance(provider, HearsRefusals):
        return None
    told = provider.refused(ctx)
    if inspect.isawaitable(told):
        await told
    return provider.name
