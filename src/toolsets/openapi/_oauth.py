"""OAuth 2 and OpenID Connect for OpenAPI tools.

- `ClientCredentials`: a client's own id and secret, given as a scheme's credential; the
  toolset gets access tokens with the client credentials grant (RFC 6749 §4.4), keeps them
  until they expire and gets a new one when the API refuses one.
- OpenID Connect discovery: an ``openIdConnect`` scheme's endpoints are read from its
  ``openIdConnectUrl`` (once per toolset), and the document's ``issuer`` is checked.
- `AuthorizationCodeFlow`: the authorization code grant with PKCE (RFC 6749 §4.1,
  RFC 7636) for the credential an agent asks its user for (a ``CredentialRequest``'s
  ``auth_config``): the URL to send the user to, then the access token for the URL the
  user came back to; and refreshing that token.

Client secrets and tokens are sent only to the token endpoint, only over https (plain http
is allowed to a loopback address, for local servers and tests), and never appear in a
message, a ``repr`` or a result.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import parse_qs, quote, urlencode, urljoin, urlsplit

import anyio
import httpx2

from toolsets._auth import AuthConfig, AuthCredential, Secret, credential_problem, redact
from toolsets._errors import AuthError
from toolsets._http import map_http_errors
from toolsets._urls import is_loopback, safe_url

__all__ = [
    "OIDC_SUFFIX",
    "AuthorizationCodeFlow",
    "ClientAuthMethod",
    "ClientCredentials",
    "OAuth",
    "check_secure",
    "discover",
    "is_expired",
    "request_token",
]

ClientAuthMethod = Literal["client_secret_basic", "client_secret_post"]
"""How the client authenticates to the token endpoint (RFC 6749 §2.3.1): HTTP basic (the
recommended default) or the id and secret in the form."""

EXPIRY_MARGIN = 30.0
"""Seconds before its expiry that a token is treated as expired (clock skew, latency)."""
OIDC_SUFFIX = "/.well-known/openid-configuration"


@dataclass(frozen=True, kw_only=True)
class ClientCredentials:
    """An OAuth 2 client's own credentials, given for an ``oauth2`` (client credentials
    flow) or ``openIdConnect`` scheme: the toolset gets and renews access tokens itself.

    Args:
        client_id: The client's id.
        client_secret: The client's secret (kept out of ``repr``).
        scopes: The scopes to ask for; by default those the operation's requirement lists.
        token_url: The token endpoint, overriding the spec's (``tokenUrl``, or discovery).
        auth_method: How to present the secret to the token endpoint.
        extra: More form fields for the token request, e.g. ``{"audience": ...}``.
    """

    client_id: str
    client_secret: str = field(repr=False)
    scopes: tuple[str, ...] | None = None
    token_url: str | None = None
    auth_method: ClientAuthMethod = "client_secret_basic"
    extra: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.client_id or not self.client_secret:
            raise ValueError("client credentials need a client_id and a client_secret")
        if self.auth_method not in ("client_secret_basic", "client_secret_post"):
            raise ValueError(f"unknown auth_method {self.auth_method!r}")
        object.__setattr__(self, "client_secret", Secret(self.client_secret))


def is_expired(credential: AuthCredential, now: float | None = None) -> bool:
    """Whether ``credential`` has expired (or is about to)."""
    if credential.expires_at is None:
        return False
    return credential.expires_at - EXPIRY_MARGIN <= (time.time() if now is None else now)


def check_secure(url: str, scheme_name: str, what: str) -> None:
    """Refuse to send secrets to ``url`` unless it is https (or http to a loopback host)."""
    parts = urlsplit(url)
    if parts.scheme == "https" and parts.hostname:
        return
    if parts.scheme == "http" and parts.hostname is not None and is_loopback(parts.hostname):
        return
    raise AuthError(
        f"the {what} of scheme {scheme_name!r} must be an https URL (or http to a loopback "
        f"address): {safe_url(url)}",
        scheme_name=scheme_name,
    )


class OAuth:
    """What one toolset remembers for OAuth: discovered endpoints and access tokens.

    Args:
        http: Gets the toolset's pooled HTTP client.
    """

    def __init__(self, http: Callable[[], Awaitable[httpx2.AsyncClient]]) -> None:
        self._http = http
        self._discovered: dict[str, Mapping[str, Any]] = {}
        self._tokens: dict[tuple[str, tuple[str, ...]], AuthCredential] = {}
        self._locks: dict[object, anyio.Lock] = {}

    def _lock(self, key: object) -> anyio.Lock:
        lock = self._locks.get(key)
        if lock is None:
            lock = self._locks[key] = anyio.Lock()
        return lock

    async def discover(self, url: str, scheme_name: str) -> Mapping[str, Any]:
        """The OpenID Connect provider metadata at ``url`` (fetched once)."""
        found = self._discovered.get(url)
        if found is not None:
            return found
        async with self._lock(("discover", url)):
            found = self._discovered.get(url)
            if found is None:
                found = self._discovered[url] = await discover(await self._http(), url, scheme_name)
        return found

    async def endpoint(
        self,
        scheme_name: str,
        scheme: Mapping[str, Any],
        flow: str,
        which: Literal["authorizationUrl", "tokenUrl"],
        base_url: str,
    ) -> str:
        """The absolute ``which`` URL of ``flow`` for the scheme (OIDC: discovered)."""
        if scheme.get("type") == "openIdConnect":
            url = _absolute(str(scheme.get("openIdConnectUrl", "")), base_url)
            metadata = await self.discover(url, scheme_name)
            key = "authorization_endpoint" if which == "authorizationUrl" else "token_endpoint"
            found = metadata.get(key)
        else:
            flows = scheme.get("flows")
            found = flows.get(flow, {}).get(which) if isinstance(flows, Mapping) else None
        if not isinstance(found, str) or not found:
            raise AuthError(
                f"scheme {scheme_name!r} names no {which} for the {flow} flow",
                scheme_name=scheme_name,
            )
        return _absolute(found, base_url)

    async def token(
        self,
        scheme_name: str,
        scheme: Mapping[str, Any],
        given: ClientCredentials,
        scopes: tuple[str, ...],
        base_url: str,
    ) -> AuthCredential:
        """A valid access token for the client credentials ``given`` (cached)."""
        wanted = tuple(sorted(given.scopes if given.scopes is not None else scopes))
        key = (scheme_name, wanted)
        cached = self._tokens.get(key)
        if cached is not None and not is_expired(cached):
            return cached
        async with self._lock(key):
            cached = self._tokens.get(key)
            if cached is None or is_expired(cached):
                url = given.token_url or await self.endpoint(
                    scheme_name, scheme, "clientCredentials", "tokenUrl", base_url
                )
                form = {"grant_type": "client_credentials", **given.extra}
                if wanted:
                    form["scope"] = " ".join(wanted)
                cached = await request_token(
                    await self._http(),
                    _absolute(url, base_url),
                    form,
                    scheme_name=scheme_name,
                    client_id=given.client_id,
                    client_secret=given.client_secret,
                    auth_method=given.auth_method,
                    scopes=wanted,
                )
                # Checked once, here: the requests that carry it never check it again.
                problem = credential_problem(cached.secret, in_header=True)
                if problem is not None:
                    raise AuthError(
                        f"the token endpoint {safe_url(url)} issued a token for scheme "
                        f"{scheme_name!r} that {problem}",
                        scheme_name=scheme_name,
                    )
                self._tokens[key] = cached
        return cached

    def forget(self, scheme_name: str, token: AuthCredential) -> None:
        """Drop ``token`` (the API refused it): the next call gets a new one."""
        for key, cached in list(self._tokens.items()):
            if key[0] == scheme_name and cached is token:
                del self._tokens[key]


def _absolute(url: str, base_url: str) -> str:
    """``url`` resolved against the API's base URL (OpenAPI: relative URLs are relative
    to the server)."""
    if urlsplit(url).scheme:
        return url
    return urljoin(base_url.rstrip("/") + "/", url)


async def discover(client: httpx2.AsyncClient, url: str, scheme_name: str) -> Mapping[str, Any]:
    """Read OpenID Connect provider metadata, checking its ``issuer`` (OIDC Discovery §4.3:
    the issuer is the discovery URL without the well-known suffix)."""
    check_secure(url, scheme_name, "openIdConnectUrl")
    with map_http_errors("the OpenID Connect configuration at", url):
        response = await client.get(url, headers={"Accept": "application/json"})
    if response.status_code != 200:
        raise AuthError(
            f"the OpenID Connect configuration at {safe_url(url)} answered HTTP "
            f"{response.status_code}",
            scheme_name=scheme_name,
        )
    try:
        metadata = response.json()
    except ValueError:
        metadata = None
    if not isinstance(metadata, dict):
        raise AuthError(
            f"the OpenID Connect configuration at {safe_url(url)} is not a JSON object",
            scheme_name=scheme_name,
        )
    if url.endswith(OIDC_SUFFIX):
        expected = url[: -len(OIDC_SUFFIX)]
        if str(metadata.get("issuer", "")).rstrip("/") != expected.rstrip("/"):
            raise AuthError(
                f"the OpenID Connect configuration at {safe_url(url)} names the issuer "
                f"{metadata.get('issuer')!r}, not {expected!r}: refusing it",
                scheme_name=scheme_name,
            )
    return metadata


_SECRET_FIELDS = ("refresh_token", "code", "code_verifier", "subject_token", "actor_token")
"""The fields of a token request that hold secrets (RFC 6749, RFC 8693 token exchange)."""


async def request_token(
    client: httpx2.AsyncClient,
    url: str,
    form: dict[str, str],
    *,
    scheme_name: str,
    client_id: str,
    client_secret: str | None,
    auth_method: ClientAuthMethod,
    scopes: tuple[str, ...] = (),
) -> AuthCredential:
    """POST a token request (RFC 6749 §3.2) and read the access token response (§5)."""
    check_secure(url, scheme_name, "token endpoint")
    headers = {
        "Accept": "application/json",
        "Content-Type": "application/x-www-form-urlencoded",
    }
    form = dict(form)
    if client_secret is not None and auth_method == "client_secret_basic":
        # §2.3.1: each part form-encoded, then HTTP basic.
        pair = f"{quote(client_id, safe='')}:{quote(client_secret, safe='')}"
        headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
    else:
        form["client_id"] = client_id
        if client_secret is not None:
            form["client_secret"] = client_secret
    # A server may quote what it was sent: the secrets are masked, whole (before the
    # text is cut, so no part of one survives).
    sent = [client_secret, *(form.get(k) for k in _SECRET_FIELDS)]
    with map_http_errors("the token endpoint", url, secrets=sent):
        response = await client.post(
            url, content=urlencode(form).encode(), headers=headers, follow_redirects=False
        )
    try:
        body: Any = response.json()
    except (ValueError, json.JSONDecodeError):
        body = None
    if response.status_code != 200 or not isinstance(body, dict):
        reason = f"HTTP {response.status_code}"
        code = None
        if isinstance(body, dict) and isinstance(body.get("error"), str):
            code = redact(body["error"], sent)[:100]
            reason += f", {code}"
            if isinstance(body.get("error_description"), str):
                reason += f": {redact(body['error_description'], sent)[:200]}"
        raise AuthError(
            f"the token endpoint {safe_url(url)} refused to issue a token for scheme "
            f"{scheme_name!r} ({reason})",
            scheme_name=scheme_name,
            status_code=response.status_code,
            oauth_error=code,
        )
    token = body.get("access_token")
    kind = str(body.get("token_type", "")).lower()
    if not isinstance(token, str) or not token:
        raise AuthError(
            f"the token endpoint {safe_url(url)} answered without an access_token",
            scheme_name=scheme_name,
        )
    if kind != "bearer":
        raise AuthError(
            f"the token endpoint {safe_url(url)} issued a {kind or 'untyped'} token; only bearer "
            "tokens are supported",
            scheme_name=scheme_name,
        )
    lifetime = _seconds(body.get("expires_in"))
    granted = body.get("scope")
    refresh = body.get("refresh_token")
    return AuthCredential.oauth2(
        token,
        refresh_token=refresh if isinstance(refresh, str) and refresh else None,
        expires_at=time.time() + lifetime if lifetime is not None else None,
        scopes=tuple(granted.split()) if isinstance(granted, str) else scopes,
    )


def _seconds(value: object) -> float | None:
    """``expires_in``: a number, or (as some servers send it) a numeric string."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str) and value.strip().isdigit():
        return float(value.strip())
    return None


class AuthorizationCodeFlow:
    """The authorization code grant with PKCE, for a credential an agent asks its user for.

    When a tool needs an OAuth 2 (authorization code) or OpenID Connect credential, the run
    pauses with a ``CredentialRequest``. Answer it with this flow::

        flow = AuthorizationCodeFlow(request.auth_config, client_id=..., redirect_uri=...)
        url = await flow.start()          # send the user there
        credential = await flow.finish(url_the_user_came_back_to)
        # resume the run with the credential; later: await flow.refresh(credential)

    Args:
        config: The ``auth_config`` of the request (its scheme says where to go).
        client_id: Your client's id at the authorization server.
        redirect_uri: Where the server sends the user back (registered for the client).
        client_secret: The client's secret, for a confidential client (PKCE is used either
            way).
        base_url: The API's base URL, against which relative endpoint URLs resolve.
        client: The HTTP client to use (yours to close); by default one of the flow's own,
            closed by `aclose`.
        auth_method: How to present the secret to the token endpoint.
    """

    def __init__(
        self,
        config: AuthConfig,
        *,
        client_id: str,
        redirect_uri: str,
        client_secret: str | None = None,
        base_url: str = "",
        client: httpx2.AsyncClient | None = None,
        auth_method: ClientAuthMethod = "client_secret_basic",
    ) -> None:
        kind = config.scheme.get("type")
        flows = config.scheme.get("flows")
        if kind != "openIdConnect" and not (
            kind == "oauth2" and isinstance(flows, Mapping) and "authorizationCode" in flows
        ):
            raise AuthError(
                f"scheme {config.scheme_name!r} has no authorization code flow",
                scheme_name=config.scheme_name,
            )
        self.config = config
        """What the credential is for."""
        self._client_id = client_id
        self._client_secret = Secret(client_secret) if client_secret is not None else None
        self._redirect_uri = redirect_uri
        self._base_url = base_url
        self._auth_method: ClientAuthMethod = auth_method
        self._own_client = client is None
        self._client = client or httpx2.AsyncClient(timeout=30, trust_env=False)
        self._oauth = OAuth(self._get_client)
        self._pending: dict[str, str] = {}  # state → PKCE code verifier

    async def _get_client(self) -> httpx2.AsyncClient:
        return self._client

    def __repr__(self) -> str:
        return f"AuthorizationCodeFlow({self.config.scheme_name!r}, client_id={self._client_id!r})"

    async def _endpoint(self, which: Literal["authorizationUrl", "tokenUrl"]) -> str:
        return await self._oauth.endpoint(
            self.config.scheme_name, self.config.scheme, "authorizationCode", which, self._base_url
        )

    async def start(self) -> str:
        """The URL to send the user to. Each call starts a new attempt (its own ``state``
        and PKCE verifier)."""
        url = await self._endpoint("authorizationUrl")
        check_secure(url, self.config.scheme_name, "authorization URL")
        state = secrets.token_urlsafe(24)
        verifier = secrets.token_urlsafe(48)
        challenge = (
            base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
            .rstrip(b"=")
            .decode()
        )
        scopes = list(self.config.scopes)
        if self.config.scheme.get("type") == "openIdConnect" and "openid" not in scopes:
            scopes.insert(0, "openid")
        query = {
            "response_type": "code",
            "client_id": self._client_id,
            "redirect_uri": self._redirect_uri,
            "state": state,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
        }
        if scopes:
            query["scope"] = " ".join(scopes)
        self._pending[state] = verifier
        return url + ("&" if urlsplit(url).query else "?") + urlencode(query)

    async def finish(self, redirected_to: str) -> AuthCredential:
        """The access token for the URL the user was sent back to (its ``code`` and
        ``state``; an ``error`` there raises `AuthError`)."""
        name = self.config.scheme_name
        query = parse_qs(urlsplit(redirected_to).query)
        state = query.get("state", [""])[0]
        verifier = self._pending.pop(state, None)
        if verifier is None:
            raise AuthError(
                "the redirect's state does not match an attempt of this flow", scheme_name=name
            )
        if "error" in query:
            reason = redact(query["error"][0], [self._client_secret])[:100]
            detail = redact(query.get("error_description", [""])[0], [self._client_secret])[:200]
            raise AuthError(
                f"authorization was refused: {reason}" + (f": {detail}" if detail else ""),
                scheme_name=name,
            )
        code = query.get("code", [""])[0]
        if not code:
            raise AuthError("the redirect carries no authorization code", scheme_name=name)
        return await request_token(
            self._client,
            await self._endpoint("tokenUrl"),
            {
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": self._redirect_uri,
                "code_verifier": verifier,
            },
            scheme_name=name,
            client_id=self._client_id,
            client_secret=self._client_secret,
            auth_method=self._auth_method,
            scopes=self.config.scopes,
        )

    async def refresh(self, credential: AuthCredential) -> AuthCredential:
        """A new access token for ``credential``'s refresh token (RFC 6749 §6); the
        refresh token is kept when the server does not issue a new one."""
        name = self.config.scheme_name
        if credential.refresh_token is None:
            raise AuthError("the credential has no refresh token", scheme_name=name)
        form = {"grant_type": "refresh_token", "refresh_token": credential.refresh_token}
        if credential.scopes:
            form["scope"] = " ".join(credential.scopes)
        fresh = await request_token(
            self._client,
            await self._endpoint("tokenUrl"),
            form,
            scheme_name=name,
            client_id=self._client_id,
            client_secret=self._client_secret,
            auth_method=self._auth_method,
            scopes=credential.scopes,
        )
        if fresh.refresh_token is None:
            fresh = AuthCredential.oauth2(
                fresh.secret,
                refresh_token=credential.refresh_token,
                expires_at=fresh.expires_at,
                scopes=fresh.scopes,
            )
        return fresh

    async def aclose(self) -> None:
        """Close the flow's own HTTP client (a given one is left open)."""
        if self._own_client:
            await self._client.aclose()
