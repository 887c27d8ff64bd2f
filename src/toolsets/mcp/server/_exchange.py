"""OAuth 2.0 token exchange (RFC 8693) for each calling user's own upstream credential:
`TokenExchange`, a `CredentialResolver` for `UserCredentials`. The caller's access token
(as the server's authorization validated it) goes to the issuer's token endpoint only,
with this server's client authentication; the token obtained for the upstream API's
audience goes upstream. Tokens are kept per caller, audience and scopes until shortly
before they (or the caller's own) expire; a refusal by the issuer is remembered for a short
while (`Refusals`); every wait is bounded."""

from __future__ import annotations

import contextlib
import logging
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import TYPE_CHECKING

import anyio

from toolsets._auth import AuthConfig, AuthCredential, Secret, check_credential_text
from toolsets._context import Identity
from toolsets._errors import AuthError, ConnectionError
from toolsets._urls import safe_url
from toolsets.mcp.server._issuer import check_secure_url, token_endpoint_of
from toolsets.mcp.server._refusals import REFUSAL_PERIOD, Refusals, is_refusal, token_digest

if TYPE_CHECKING:
    import httpx2

__all__ = [
    "DEFAULT_TOKEN_LIFETIME",
    "MAX_CACHED_TOKENS",
    "REFRESH_MARGIN",
    "TOKEN_EXCHANGE_GRANT",
    "TOKEN_EXCHANGE_TIMEOUT",
    "TokenExchange",
]

logger = logging.getLogger("toolsets.mcp.server")

TOKEN_EXCHANGE_GRANT = "urn:ietf:params:oauth:grant-type:token-exchange"
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"
TOKEN_EXCHANGE_TIMEOUT = 10.0
"""Seconds a token exchange (and the discovery of the token endpoint) may take in all."""
DEFAULT_TOKEN_LIFETIME = 300.0
"""Seconds an exchanged token that says nothing of its expiry is kept."""
REFRESH_MARGIN = 30.0
"""Seconds before an exchanged token (or the caller's own) expires that it is no longer
used: a new one is obtained."""
MAX_CACHED_TOKENS = 10_000
"""Exchanged tokens kept at most (the least recently used are dropped)."""


def _callers_token() -> str | None:
    """The access token the request being served came with, as the `mcp` SDK's
    authorization validated it (None: the request came without one)."""
    from mcp.server.auth.middleware.auth_context import get_access_token

    token = get_access_token()
    return None if token is None else token.token


_Key = tuple[str, str, str, tuple[str, ...]]
"""A cached token's key: the caller's issuer and subject, the audience, the scopes."""


class TokenExchange:
    """Each user's credential obtained by OAuth 2.0 token exchange (RFC 8693): the
    caller's own access token (the one the server's authorization validated) is sent as
    the ``subject_token`` to the issuer's token endpoint, with this server's client
    authentication, for a token for the upstream API's ``audience``; that token goes
    upstream, never the caller's. A `CredentialResolver`: give it to `UserCredentials`
    (``UserCredentials(TokenExchange(...))``). Tokens are kept per caller (issuer and subject),
    audience and scopes until shortly before they expire (or the caller's own token
    does), and obtained once however many calls want one at the same time (which all
    get its error, if it fails). When the
    issuer refuses (``invalid_grant``, ``invalid_target``... : say the user may not have
    the audience), the refusal is the answer for that caller's token, audience and scopes
    for ``refusal_period`` seconds without asking again (one WARNING per period); an
    issuer that failed (unreachable, 5xx, no answer) is asked again by the next call.

    Args:
        audience: The upstream API's identifier at the issuer (RFC 8693 ``audience``),
            or one per security scheme name (a scheme named in none gets an error result).
        client_id: This server's client id at the issuer.
        client_secret: Its secret (kept out of ``repr``).
        token_endpoint: The issuer's token endpoint; or give ``issuer`` to discover it.
        issuer: The issuer's URL: its token endpoint is discovered from its metadata
            (OpenID Connect discovery, then RFC 8414), once.
        scopes: The scopes to ask for; by default those the tool's security requirement
            lists (none: the issuer's default for the audience).
        resource: The upstream API's URL, sent as RFC 8707 ``resource`` too, when the
            issuer wants one.
        auth_method: How this server authenticates to the token endpoint.
        timeout: Seconds an exchange (discovery included) may take in all.
        client: The HTTP client to use (yours to close); by default one made for each
            exchange (a user's token is exchanged once in its lifetime).
        subject_token: Gives the caller's access token; by default the one the `mcp`
            SDK's authorization validated for the request being served.
        refusal_period: Seconds a refusal is remembered (never past the caller's token's
            expiry; 0: the issuer is asked every time).

    Raises:
        ValueError: neither or both of ``token_endpoint`` and ``issuer``, an endpoint
            that is not https (or http to a loopback address), an empty id or secret,
            a negative ``refusal_period``.
    """

    def __init__(
        self,
        *,
        audience: str | Mapping[str, str],
        client_id: str,
        client_secret: str,
        token_endpoint: str | None = None,
        issuer: str | None = None,
        scopes: Sequence[str] | None = None,
        resource: str | None = None,
        auth_method: str = "client_secret_basic",
        timeout: float = TOKEN_EXCHANGE_TIMEOUT,
        client: httpx2.AsyncClient | None = None,
        subject_token: Callable[[], str | None] | None = None,
        refusal_period: float = REFUSAL_PERIOD,
    ) -> None:
        if (token_endpoint is None) == (issuer is None):
            raise ValueError("give one of token_endpoint and issuer")
        if not client_id or not client_secret:
            raise ValueError("token exchange needs a client_id and a client_secret")
        if auth_method not in ("client_secret_basic", "client_secret_post"):
            raise ValueError(f"unknown auth_method {auth_method!r}")
        if isinstance(audience, str) and not audience:
            raise ValueError("audience must not be empty")
        for url in (token_endpoint, issuer):
            if url is not None:
                check_secure_url(url)
        self.audience = audience
        """The upstream API's identifier (or one per security scheme name)."""
        self.client_id = client_id
        self._client_secret = Secret(client_secret)
        self._token_endpoint = token_endpoint
        self._issuer = issuer
        self._scopes = None if scopes is None else tuple(scopes)
        self._resource = resource
        self._auth_method = auth_method
        self._timeout = timeout
        self._client = client
        self._subject_token = subject_token or _callers_token
        self._tokens: OrderedDict[_Key, tuple[AuthCredential, float]] = OrderedDict()
        """By key: the token, and when it stops being used (monotonic seconds)."""
        self._locks: dict[_Key | str, anyio.Lock] = {}
        self._refusals: Refusals[_Key] = Refusals(refusal_period)
        self._failed_at: dict[_Key, tuple[float, str]] = {}
        """By key being exchanged: when its last exchange failed (monotonic) and the
        error, the answer of the calls that waited on it (a later call asks again)."""

    def __repr__(self) -> str:
        where = self._token_endpoint or self._issuer or ""
        return f"TokenExchange({safe_url(where)!r}, client_id={self.client_id!r})"

    def _audience_for(self, config: AuthConfig) -> str:
        audience = self.audience
        if isinstance(audience, str):
            return audience
        found = audience.get(config.scheme_name)
        if not found:
            raise AuthError(
                f"This call needs a credential for {config.scheme_name!r}, which this "
                "server obtains for no audience (the token exchange names none for it), "
                "so it did not run.",
                scheme_name=config.scheme_name,
            )
        return found

    def _key(self, identity: Identity, config: AuthConfig) -> _Key:
        scopes = self._scopes if self._scopes is not None else config.scopes
        audience = self._audience_for(config)
        return (identity.issuer, identity.subject, audience, tuple(sorted(set(scopes))))

    def forget(self, identity: Identity, config: AuthConfig) -> None:
        """Drop the token kept for ``identity`` and ``config`` (the API refused it), or
        the issuer's refusal remembered for them: the next call asks the issuer."""
        key = self._key(identity, config)
        self._tokens.pop(key, None)
        self._refusals.forget(key)

    def _kept(self, key: _Key) -> AuthCredential | None:
        kept = self._tokens.get(key)
        if kept is None:
            return None
        if kept[1] <= time.monotonic():
            del self._tokens[key]
            return None
        self._tokens.move_to_end(key)
        return kept[0]

    def _lock(self, key: _Key | str) -> anyio.Lock:
        lock = self._locks.get(key)
        if lock is None:
            lock = self._locks[key] = anyio.Lock()
        return lock

    async def __call__(self, identity: Identity, config: AuthConfig) -> AuthCredential:
        """The token for ``identity`` and ``config``: kept, or exchanged now.

        Raises:
            AuthError: the request came without the caller's token, no audience is
                named for the scheme, or the exchange failed (refused, no answer within
                ``timeout``, the issuer unreachable): the message says which.
        """
        key = self._key(identity, config)
        found = self._kept(key)
        if found is not None:
            return found
        subject_token = self._subject_token()
        if not subject_token:
            raise AuthError(
                f"This call needs the calling user's own credential for {config.scheme_name!r}, "
                "obtained for their access token, and the request came without one, so it "
                "did not run.",
                scheme_name=config.scheme_name,
            )
        digest = token_digest(subject_token)
        self._check_refused(key, digest, config.scheme_name)
        arrived = time.monotonic()
        lock = self._lock(key)
        try:
            async with lock:
                found = self._kept(key)
                if found is None:
                    # Refused, or failed, while this call waited for the one that asked?
                    self._check_refused(key, digest, config.scheme_name)
                    failed = self._failed_at.get(key)
                    if failed is not None and failed[0] >= arrived:
                        raise AuthError(failed[1], scheme_name=config.scheme_name)
                    found = await self._exchanged(identity, config, key, subject_token)
        finally:
            # Not while a waiter holds it: the lock is handed to the next on release.
            if not lock.locked() and not lock.statistics().tasks_waiting:
                self._locks.pop(key, None)
                self._failed_at.pop(key, None)
        return found

    def _check_refused(self, key: _Key, digest: str, name: str) -> None:
        """Raise the refusal remembered for ``key`` and this subject token, if any."""
        refused = self._refusals.get(key, digest)
        if refused is not None:
            logger.debug("token exchange for security scheme %r: refused lately", name)
            raise AuthError(refused, scheme_name=name)

    async def _exchanged(
        self, identity: Identity, config: AuthConfig, key: _Key, subject_token: str
    ) -> AuthCredential:
        name = config.scheme_name
        _, _, audience, scopes = key
        form = {
            "grant_type": TOKEN_EXCHANGE_GRANT,
            "subject_token": subject_token,
            "subject_token_type": ACCESS_TOKEN_TYPE,
            "requested_token_type": ACCESS_TOKEN_TYPE,
            "audience": audience,
        }
        if self._resource is not None:
            form["resource"] = self._resource
        if scopes:
            form["scope"] = " ".join(scopes)
        try:
            with anyio.fail_after(self._timeout):
                async with self._session() as client:
                    endpoint = await self._endpoint(client, name)
                    token = await self._request(client, endpoint, form, name, scopes)
        except (TimeoutError, ConnectionError, AuthError) as exc:
            raise self._not_obtained(exc, identity, key, subject_token, name) from exc
        now = time.time()
        until = token.expires_at if token.expires_at is not None else now + DEFAULT_TOKEN_LIFETIME
        if identity.expires_at is not None:
            until = min(until, float(identity.expires_at))
        self._tokens[key] = (token, time.monotonic() + (until - now) - REFRESH_MARGIN)
        while len(self._tokens) > MAX_CACHED_TOKENS:
            self._tokens.popitem(last=False)
        return token

    def _not_obtained(
        self, exc: Exception, identity: Identity, key: _Key, subject_token: str, name: str
    ) -> AuthError:
        """The error of an exchange that did not give a token, logged: a refusal is
        remembered; a failure is the answer of the calls that waited on this one."""
        why = f"no answer within {self._timeout:g} s" if isinstance(exc, TimeoutError) else str(exc)
        failed = AuthError(
            f"This user's credential for {name!r} could not be obtained by token exchange "
            f"({why}), so the call did not run.",
            scheme_name=name,
        )
        if isinstance(exc, AuthError) and is_refusal(exc):
            digest = token_digest(subject_token)
            period = self._refusals.remember(key, digest, str(failed), identity.expires_at)
            text = "token exchange for security scheme %r refused (the answer for %g s): %s"
            logger.warning(text, name, period, why)
        else:
            self._failed_at[key] = (time.monotonic(), str(failed))
            logger.warning("token exchange for security scheme %r failed: %s", name, why)
        return failed

    @contextlib.asynccontextmanager
    async def _session(self) -> AsyncIterator[httpx2.AsyncClient]:
        """The client given, or one for this exchange: a user's token is exchanged once
        in its lifetime (an hour, often), so no connection is kept open between."""
        if self._client is not None:
            yield self._client
            return
        import httpx2

        async with httpx2.AsyncClient(timeout=self._timeout, trust_env=False) as client:
            yield client

    async def _endpoint(self, client: httpx2.AsyncClient, scheme_name: str) -> str:
        """The token endpoint: given, or discovered from the issuer's metadata (once)."""
        if self._token_endpoint is not None:
            return self._token_endpoint
        assert self._issuer is not None
        async with self._lock("discovery"):
            if self._token_endpoint is None:
                self._token_endpoint = await token_endpoint_of(client, self._issuer, scheme_name)
        return self._token_endpoint

    async def _request(
        self,
        client: httpx2.AsyncClient,
        endpoint: str,
        form: dict[str, str],
        scheme_name: str,
        scopes: tuple[str, ...],
    ) -> AuthCredential:
        from toolsets.openapi._oauth import request_token

        token = await request_token(
            client,
            endpoint,
            form,
            scheme_name=scheme_name,
            client_id=self.client_id,
            client_secret=self._client_secret,
            auth_method=self._auth_method,  # type: ignore[arg-type]
            scopes=scopes,
        )
        check_credential_text(token.secret, scheme_name=scheme_name, in_header=True)
        return token
