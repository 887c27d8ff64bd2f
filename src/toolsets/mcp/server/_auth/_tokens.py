"""An access token checked: a JWT verified against the issuer's keys (PyJWT does the
cryptography), any other token introspected (RFC 7662); what it says becomes an
`Identity`. `TokenValidator` is also the `mcp` SDK's ``TokenVerifier``, for an app built
on the SDK's own auth middleware.

A token that is not good raises `InvalidToken`, whose ``description`` is fixed text (never
a value from the token, which the client controls); an authorization server that cannot
be asked raises `IssuerUnavailable`. No token, nor any part of one, is ever logged.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx2
import jwt
from jwt import exceptions as jwt_errors
from mcp.server.auth.provider import AccessToken

from toolsets._context import Identity
from toolsets._errors import ConnectionError
from toolsets._http import map_http_errors
from toolsets.mcp.server._auth._config import OAuthResourceServer, canonical_url
from toolsets.mcp.server._auth._issuer import Issuer, IssuerUnavailable, parsed_json

__all__ = ["MAX_CACHED_TOKENS", "InvalidToken", "TokenValidator", "Verified"]

logger = logging.getLogger("toolsets.mcp.server.auth")

MAX_CACHED_TOKENS = 10_000
"""How many tokens found good are kept (the least recently used go first)."""
_TYPES = frozenset({"jwt", "at+jwt", "application/at+jwt"})
"""The ``typ`` headers of an access token (RFC 9068's, or the plain one many issuers use)."""
_REQUIRED = ["exp", "iss", "aud"]
_clock = time.monotonic


class InvalidToken(Exception):
    """The token is not good for this server: ``description`` says why (fixed text, fit
    for a ``WWW-Authenticate`` header)."""

    def __init__(self, description: str) -> None:
        super().__init__(description)
        self.description = description


@dataclass(frozen=True)
class Verified:
    """A token found good: who it names, and the SDK's view of it (for its session
    checks, which compare the principal of each request of a session)."""

    identity: Identity
    access_token: AccessToken


class TokenValidator:
    """Checks the access tokens of an `OAuthResourceServer`.

    Args:
        config: The server's authorization settings.
        http: Gives the client to ask the authorization server with.
    """

    def __init__(
        self,
        config: OAuthResourceServer,
        http: Callable[[], Awaitable[httpx2.AsyncClient]],
    ) -> None:
        self.config = config
        self.issuer = Issuer(config, http)
        self._http = http
        self._known: OrderedDict[bytes, tuple[float, int, Verified]] = OrderedDict()
        """Tokens found good, by digest (and resource): until when (this clock), and the
        version of the issuer's keys a JWT was verified with (-1: introspected)."""

    def audiences(self, resource: str | None) -> frozenset[str]:
        """What a token's ``aud`` must hold one of, compared as `canonical_url` makes them."""
        given = self.config.audience
        if given is None:
            given = self.config.resource or resource
        if given is None:
            raise ValueError("no audience: give the resource the request came to")
        values = [given] if isinstance(given, str) else list(given)
        return frozenset(canonical_url(value) for value in values)

    async def verify_token(self, token: str) -> AccessToken | None:
        """The `mcp` SDK's ``TokenVerifier``: the token's `AccessToken`, None when it is
        not good or cannot be checked now (the audience is the configured ``resource``
        or ``audience``)."""
        try:
            return (await self.validate(token, None)).access_token
        except (InvalidToken, IssuerUnavailable):
            return None

    async def validate(self, token: str, resource: str | None) -> Verified:
        """Who ``token`` names, if it is good for ``resource`` (this server's URL as the
        request reached it; the configured one wins).

        A token found good is kept (by its digest) until it expires, at most
        ``keys_ttl`` seconds for a JWT (and while the issuer's keys are those it was
        verified with), ``cache_ttl`` for an introspected one: a client's later
        requests with the same token cost a lookup, not a verification.

        Raises:
            InvalidToken: the token is not good for this server.
            IssuerUnavailable: the authorization server could not be asked.
        """
        key = hashlib.sha256(token.encode()).digest() + (resource or "").encode()
        kept = self._known.get(key)
        if kept is not None:
            until, version, verified = kept
            if _clock() < until and version in (-1, self.issuer.keys_version):
                self._known.move_to_end(key)
                return verified
            del self._known[key]
        audiences = self.audiences(resource)
        if token.count(".") == 2:
            payload = await self._verify_jwt(token, audiences)
            verified = self._verified(token, payload, audiences)
            lifetime, version = self.config.keys_ttl, self.issuer.keys_version
        elif self.config.introspection is not None:
            verified, lifetime = await self._introspected(token, audiences)
            version = -1
        else:
            raise InvalidToken("the access token is not a JWT (this server does not introspect)")
        expires = verified.identity.expires_at
        if expires is not None:
            lifetime = min(lifetime, expires + self.config.leeway - time.time())
        if lifetime > 0:
            self._known[key] = (_clock() + lifetime, version, verified)
            while len(self._known) > MAX_CACHED_TOKENS:
                self._known.popitem(last=False)
        return verified

    async def _verify_jwt(self, token: str, audiences: frozenset[str]) -> dict[str, Any]:
        try:
            header = jwt.get_unverified_header(token)
        except jwt_errors.InvalidTokenError as exc:
            raise InvalidToken("the access token is not a well-formed JWT") from exc
        algorithm, kid, kind = header.get("alg"), header.get("kid"), header.get("typ")
        if not isinstance(algorithm, str) or algorithm.lower() == "none":
            raise InvalidToken("the access token is not signed (alg)")
        if kid is not None and not isinstance(kid, str):
            raise InvalidToken("the access token's key id is not a string (kid)")
        if kind is not None and (not isinstance(kind, str) or kind.lower() not in _TYPES):
            raise InvalidToken("the token is not an access token (typ)")
        if "crit" in header:
            raise InvalidToken("the access token has critical header parameters not understood")
        keys = await self.issuer.keys_for(kid, algorithm)
        if not keys:
            raise InvalidToken(
                "the access token is not signed by a key and algorithm the issuer publishes"
            )
        failure: jwt_errors.InvalidTokenError | None = None
        for key in keys:
            try:
                payload: dict[str, Any] = jwt.decode(
                    token,
                    key,
                    algorithms=[algorithm],
                    issuer=self.config.issuer,
                    leeway=self.config.leeway,
                    options={"require": _REQUIRED, "verify_aud": False},
                )
            except jwt_errors.InvalidSignatureError as exc:
                failure = exc  # a token naming no key id: the next key may fit
                continue
            except jwt_errors.InvalidTokenError as exc:
                raise InvalidToken(_why(exc)) from exc
            _check_audience(payload.get("aud"), audiences)
            return payload
        raise InvalidToken("the access token's signature does not verify") from failure

    def _verified(
        self, token: str, payload: Mapping[str, Any], audiences: frozenset[str]
    ) -> Verified:
        """The `Identity` and `AccessToken` of a good token's claims."""
        client_id = _text(payload.get("client_id")) or _text(payload.get("azp"))
        subject = _text(payload.get("sub")) or client_id
        if subject is None:
            raise InvalidToken("the access token names no subject (sub)")
        scopes = _scopes(payload)
        expires = payload.get("exp")
        expires_at = int(expires) if isinstance(expires, int | float) else None
        issuer = _text(payload.get("iss")) or self.config.issuer
        kept = {name: payload[name] for name in self.config.claims if name in payload}
        identity = Identity(
            subject=subject,
            issuer=issuer,
            client_id=client_id,
            scopes=scopes,
            claims=kept,
            expires_at=expires_at,
        )
        aud = payload.get("aud")
        matched = next(
            (a for a in _as_list(aud) if canonical_url(a) in audiences),
            None,
        )
        access_token = AccessToken(
            token=token,
            client_id=client_id or subject,
            scopes=sorted(scopes),
            expires_at=expires_at,
            resource=matched,
            subject=subject,
            claims={"iss": issuer, **kept},
        )
        return Verified(identity, access_token)

    async def _introspected(self, token: str, audiences: frozenset[str]) -> tuple[Verified, float]:
        """An opaque token, as the authorization server's introspection answers; and
        how long that answer may be kept (``cache_ttl``)."""
        answer = await self._introspect(token)
        if answer.get("active") is not True:
            raise InvalidToken("the authorization server says the access token is not active")
        issuer = answer.get("iss")
        if issuer is not None and issuer != self.config.issuer:
            raise InvalidToken("the access token was not issued by this server's issuer (iss)")
        _check_audience(answer.get("aud"), audiences)
        now = time.time()
        leeway = self.config.leeway
        expires = answer.get("exp")
        if isinstance(expires, int | float) and expires <= now - leeway:
            raise InvalidToken("the access token has expired")
        not_before = answer.get("nbf")
        if isinstance(not_before, int | float) and not_before > now + leeway:
            raise InvalidToken("the access token is not valid yet (nbf)")
        verified = self._verified(token, {**answer, "iss": self.config.issuer}, audiences)
        introspection = self.config.introspection
        assert introspection is not None
        return verified, introspection.cache_ttl

    async def _introspect(self, token: str) -> dict[str, Any]:
        """The introspection endpoint's answer about ``token``.

        Raises:
            IssuerUnavailable: no answer in time, an error status, not a JSON object.
        """
        introspection = self.config.introspection
        assert introspection is not None
        endpoint = await self.issuer.introspection_endpoint()
        client = await self._http()
        secrets = (token, introspection.client_secret)
        try:
            with map_http_errors("POST", endpoint, secrets=secrets):
                response = await client.post(
                    endpoint,
                    data={"token": token, "token_type_hint": "access_token"},
                    auth=(introspection.client_id, introspection.client_secret),
                    headers={"Accept": "application/json"},
                    timeout=self.config.fetch_timeout,
                    follow_redirects=False,
                )
        except ConnectionError as exc:
            raise IssuerUnavailable(str(exc)) from exc
        answer = parsed_json(response, "the introspection endpoint")
        if not isinstance(answer, dict):
            raise IssuerUnavailable("the introspection endpoint answered no JSON object")
        return answer


def _why(error: jwt_errors.InvalidTokenError) -> str:
    """What is wrong with a token, in fixed words (PyJWT's own text may quote the token)."""
    if isinstance(error, jwt_errors.ExpiredSignatureError):
        return "the access token has expired"
    if isinstance(error, jwt_errors.ImmatureSignatureError):
        return "the access token is not valid yet (nbf or iat)"
    if isinstance(error, jwt_errors.InvalidIssuerError):
        return "the access token was not issued by this server's issuer (iss)"
    if isinstance(error, jwt_errors.MissingRequiredClaimError):
        claim = error.claim if error.claim in _REQUIRED else "a required"
        return f"the access token lacks the {claim} claim"
    if isinstance(error, jwt_errors.InvalidAlgorithmError):
        return "the access token is not signed with an algorithm the issuer publishes"
    return "the access token is not a well-formed JWT"


def _check_audience(aud: object, audiences: frozenset[str]) -> None:
    if not any(canonical_url(value) in audiences for value in _as_list(aud)):
        raise InvalidToken("the access token was not issued for this server (aud)")


def _as_list(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [each for each in value if isinstance(each, str)]
    return []


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _scopes(payload: Mapping[str, Any]) -> frozenset[str]:
    """The scopes a token grants: ``scope`` (space-separated, RFC 9068 and 7662) or
    ``scp`` (a list or a string, as some issuers write them)."""
    found: set[str] = set()
    for name in ("scope", "scp"):
        value = payload.get(name)
        if isinstance(value, str):
            found.update(value.split())
        elif isinstance(value, Sequence):
            found.update(each for each in value if isinstance(each, str))
    return frozenset(found)
