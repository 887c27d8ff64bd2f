"""The authorization server, as a resource server knows it: its metadata (RFC 8414, or
OpenID Connect discovery) and its signing keys (the JWKS its metadata names), fetched
with one pooled httpx2 client, each request within `OAuthResourceServer.fetch_timeout`.

The keys are kept for ``keys_ttl`` seconds; a token naming a key not among them has them
fetched again at once, at most once per ``refresh_interval`` (a key the issuer rotated in
is found; a flood of made-up key ids costs one fetch per interval), one fetch at a time
whatever the number of requests waiting. When the issuer cannot be reached the keys
already had are used still; with none, `IssuerUnavailable` (the server answers 503).

Only asymmetric signing keys are kept (RSA, EC, OKP, for signing): a shared-secret
(``oct``) key in a public key set is left out, so a token signed with HMAC never finds a
key, and each key is used with one algorithm only: its ``alg``, else the one its type
implies (or those configured that its type allows).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import anyio
import httpx2
from jwt import PyJWK
from jwt.exceptions import PyJWKError

from toolsets._errors import ConnectionError
from toolsets._http import is_json, map_http_errors
from toolsets._urls import safe_url
from toolsets.mcp.server._auth._config import OAuthResourceServer

__all__ = [
    "FAILURE_BACKOFF",
    "Issuer",
    "IssuerUnavailable",
    "KeySet",
    "discovery_urls",
    "parsed_json",
]

logger = logging.getLogger("toolsets.mcp.server.auth")

_clock = time.monotonic

_KEY_TYPES = {
    "RSA": frozenset({"RS256", "RS384", "RS512", "PS256", "PS384", "PS512"}),
    "EC": frozenset({"ES256", "ES384", "ES512", "ES256K"}),
    "OKP": frozenset({"EdDSA", "Ed25519"}),
}
"""The signing algorithms each asymmetric key type can be used with."""
FAILURE_BACKOFF = 1.0
"""Seconds at most before keys that could not be fetched are asked for again (at most
``refresh_interval``): meanwhile requests needing them are answered 503 at once."""
MAX_DOCUMENT_BYTES = 1 << 20
"""The largest metadata document or key set read (a bigger one is a fault)."""


class IssuerUnavailable(Exception):
    """The authorization server could not be asked (or answered nonsense): whether a
    token is good cannot be told now. ``reason`` says why, without secrets."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def discovery_urls(issuer: str) -> list[str]:
    """Where an issuer's metadata may be, in the order the MCP authorization spec asks
    for: RFC 8414's well-known URL (inserted before the issuer's path), then OpenID
    Connect discovery's, inserted and appended."""
    parts = urlsplit(issuer)
    path = parts.path.rstrip("/")

    def at(new_path: str) -> str:
        return urlunsplit((parts.scheme, parts.netloc, new_path, "", ""))

    urls = [
        at(f"/.well-known/oauth-authorization-server{path}"),
        at(f"/.well-known/openid-configuration{path}"),
    ]
    if path:
        urls.append(at(f"{path}/.well-known/openid-configuration"))
    return urls


@dataclass
class _Key:
    """One signing key of the set, with the algorithms it may be used with."""

    jwk: Mapping[str, Any]
    algorithms: frozenset[str]
    loaded: dict[str, PyJWK] = field(default_factory=dict)

    def for_algorithm(self, algorithm: str) -> PyJWK | None:
        """The key, ready to verify with ``algorithm``; None if it cannot be."""
        if algorithm not in self.algorithms:
            return None
        found = self.loaded.get(algorithm)
        if found is None:
            try:
                found = PyJWK(dict(self.jwk), algorithm)
            except PyJWKError:
                return None
            self.loaded[algorithm] = found
        return found


class KeySet:
    """The issuer's signing keys, by ``kid``."""

    def __init__(self, document: object, algorithms: tuple[str, ...] | None) -> None:
        self.by_kid: dict[str | None, list[_Key]] = {}
        self.skipped = 0
        keys = document.get("keys") if isinstance(document, dict) else None
        if not isinstance(keys, list):
            raise IssuerUnavailable("the key set is not a JWKS (no 'keys' list)")
        for jwk in keys:
            key = _usable(jwk, algorithms)
            if key is None:
                self.skipped += 1
                continue
            kid = jwk.get("kid")
            self.by_kid.setdefault(kid if isinstance(kid, str) else None, []).append(key)

    def __len__(self) -> int:
        return sum(len(keys) for keys in self.by_kid.values())

    @property
    def identities(self) -> frozenset[str]:
        """What tells the keys apart: each one's id and public numbers."""
        return frozenset(
            json.dumps(key.jwk, sort_keys=True) for keys in self.by_kid.values() for key in keys
        )

    def find(self, kid: str | None, algorithm: str) -> list[PyJWK]:
        """The keys a token with this ``kid`` and ``alg`` may be verified with: the key of
        that id, or (for a token naming none) every key that takes the algorithm."""
        if kid is not None:
            candidates = self.by_kid.get(kid, [])
        else:
            candidates = [key for keys in self.by_kid.values() for key in keys]
        return [jwk for key in candidates if (jwk := key.for_algorithm(algorithm)) is not None]


def _usable(jwk: object, configured: tuple[str, ...] | None) -> _Key | None:
    """``jwk`` as a key tokens may be verified with, or None: not an asymmetric key, not
    for signing, or no algorithm both it and the configuration allow."""
    if not isinstance(jwk, dict):
        return None
    allowed = _KEY_TYPES.get(jwk.get("kty", ""))
    if allowed is None or jwk.get("use", "sig") != "sig" or "d" in jwk:
        return None
    operations = jwk.get("key_ops")
    if isinstance(operations, list) and "verify" not in operations:
        return None
    own = jwk.get("alg")
    if isinstance(own, str):
        algorithms = {own} & allowed
    elif configured is not None:
        algorithms = set(configured) & allowed
    else:
        try:
            algorithms = {PyJWK(dict(jwk)).algorithm_name} & allowed
        except PyJWKError:
            return None
    if configured is not None:
        algorithms &= set(configured)
    return _Key(jwk, frozenset(algorithms)) if algorithms else None


class Issuer:
    """The authorization server of an `OAuthResourceServer`: its metadata and keys.

    Args:
        config: The server's authorization settings.
        http: Gives the client to fetch with (opened when first needed).
    """

    def __init__(
        self,
        config: OAuthResourceServer,
        http: Callable[[], Awaitable[httpx2.AsyncClient]],
    ) -> None:
        self.config = config
        self._http = http
        self._metadata: Mapping[str, Any] | None = None
        self._keys: KeySet | None = None
        self._fetched_at = -float("inf")
        """When the keys were last fetched."""
        self._attempted_at = -float("inf")
        """When a fetch was last tried."""
        self._failed_at = -float("inf")
        self._generation = 0
        """How many times the keys were fetched: a request that waited for a fetch under
        way uses its keys rather than fetching again."""
        self._lock: anyio.Lock | None = None
        self._failure: str | None = None
        """Why the last fetch failed (None: it did not)."""
        self.keys_version = 0
        """Changes when a fetch brings keys other than those had (tokens verified with
        the old ones are verified again)."""

    @property
    def lock(self) -> anyio.Lock:
        # Made in the event loop that serves (the app may be built before it runs).
        if self._lock is None:
            self._lock = anyio.Lock()
        return self._lock

    @property
    def retry_after(self) -> float:
        """Seconds before the keys are asked for again after a failed fetch."""
        return min(FAILURE_BACKOFF, self.config.refresh_interval)

    async def keys_for(self, kid: str | None, algorithm: str) -> list[PyJWK]:
        """The keys to verify a token with this ``kid`` and ``alg``: from the keys kept,
        fetched when they are too old, or again (at most once per interval) when none
        fits. Empty: no key of the issuer fits.

        Raises:
            IssuerUnavailable: the keys could not be fetched, and those kept (if any) do
                not fit the token.
        """
        keys, generation, now = self._keys, self._generation, _clock()
        failing = self._failure is not None and now - self._failed_at < self.retry_after
        if keys is None:
            if failing:
                raise IssuerUnavailable(self._failure or "")
            return (await self._refresh(generation, stale_ok=False)).find(kid, algorithm)
        if now - self._fetched_at >= self.config.keys_ttl and not failing:
            found = (await self._refresh(generation, stale_ok=True)).find(kid, algorithm)
            if found or self._failure is None:  # fetched just now: no other key to find
                return found
            raise IssuerUnavailable(self._failure)  # the old keys do not fit; cannot ask
        found = keys.find(kid, algorithm)
        if found:
            return found
        if failing:
            raise IssuerUnavailable(self._failure or "")
        if now - self._attempted_at < self.config.refresh_interval:
            return found
        logger.debug("a token names a key not known (kid %r): fetching the keys again", kid)
        return (await self._refresh(generation, stale_ok=False)).find(kid, algorithm)

    async def _refresh(self, seen: int, *, stale_ok: bool) -> KeySet:
        """The keys, fetched unless another request fetched them (or tried) since
        generation ``seen``. When the fetch fails: the keys kept, if ``stale_ok`` and
        there are some.

        Raises:
            IssuerUnavailable: the fetch failed (and the keys kept are not to be used).
        """
        async with self.lock:
            if self._generation != seen:
                if self._keys is None or (self._failure is not None and not stale_ok):
                    raise IssuerUnavailable(self._failure or "the keys could not be fetched")
                return self._keys
            self._generation += 1
            self._attempted_at = _clock()
            try:
                keys = await self._fetch_keys()
            except IssuerUnavailable as exc:
                self._fail(exc.reason)
                if self._keys is None or not stale_ok:
                    raise
                return self._keys
            self._fetched_at = _clock()
            if self._keys is None or keys.identities != self._keys.identities:
                self.keys_version += 1
            if self._failure is not None:
                logger.warning("the authorization server's keys can be fetched again")
                self._failure = None
            self._keys = keys
            return keys

    def _fail(self, reason: str) -> None:
        """A fetch failed: logged (a warning when it starts failing); asked again after
        `retry_after` seconds (meanwhile the keys kept serve the tokens they fit, the
        others are answered 503 at once)."""
        kept = "using the keys fetched before" if self._keys is not None else "no keys yet"
        level = logging.DEBUG if self._failure is not None else logging.WARNING
        logger.log(level, "cannot fetch the authorization server's keys: %s (%s)", reason, kept)
        self._failure = reason
        self._failed_at = _clock()

    async def _fetch_keys(self) -> KeySet:
        uri = self.config.jwks_uri or await self._metadata_value("jwks_uri")
        document = await self.get_json(uri, "the key set")
        keys = KeySet(document, _tuple(self.config.algorithms))
        if not len(keys):
            raise IssuerUnavailable(f"the key set at {safe_url(uri)} has no key to verify with")
        logger.debug("fetched %d signing key(s) from %s", len(keys), safe_url(uri))
        return keys

    async def introspection_endpoint(self) -> str:
        """Where tokens are introspected: as configured, else from the metadata.

        Raises:
            IssuerUnavailable: the metadata could not be had, or names none.
        """
        given = self.config.introspection
        if given is not None and given.endpoint is not None:
            return given.endpoint
        return await self._metadata_value("introspection_endpoint")

    async def _metadata_value(self, name: str) -> str:
        metadata = await self.metadata()
        value = metadata.get(name)
        if not isinstance(value, str) or urlsplit(value).scheme not in ("http", "https"):
            raise IssuerUnavailable(f"the authorization server's metadata has no {name}")
        return value

    async def metadata(self) -> Mapping[str, Any]:
        """The issuer's metadata (found once, then kept).

        Raises:
            IssuerUnavailable: no metadata could be had, or it names another issuer.
        """
        if self._metadata is not None:
            return self._metadata
        issuer = self.config.issuer
        for url in discovery_urls(issuer):
            found = await self.get_json(url, "the metadata", missing_ok=True)
            if found is None:
                continue
            if not isinstance(found, dict):
                raise IssuerUnavailable(f"the metadata at {safe_url(url)} is not a JSON object")
            if found.get("issuer") != issuer:
                raise IssuerUnavailable(
                    f"the metadata at {safe_url(url)} names another issuer, "
                    f"{str(found.get('issuer'))[:200]!r}, not {issuer!r}"
                )
            self._metadata = found
            return found
        raise IssuerUnavailable(f"{issuer} publishes no authorization server metadata")

    async def get_json(self, url: str, what: str, *, missing_ok: bool = False) -> Any:
        """The JSON document at ``url`` (None when ``missing_ok`` and it is not there).

        Raises:
            IssuerUnavailable: no answer in time, an error status, not JSON.
        """
        client = await self._http()
        try:
            with map_http_errors("GET", url):
                response = await client.get(
                    url,
                    headers={"Accept": "application/json"},
                    timeout=self.config.fetch_timeout,
                    follow_redirects=False,
                )
        except ConnectionError as exc:
            raise IssuerUnavailable(str(exc)) from exc
        if missing_ok and response.status_code in (404, 410):
            return None
        return parsed_json(response, f"{what} at {safe_url(url)}")


def parsed_json(response: httpx2.Response, what: str) -> Any:
    """The JSON body of a 200 answer.

    Raises:
        IssuerUnavailable: another status, a body too big, or not JSON.
    """
    if response.status_code != 200:
        raise IssuerUnavailable(f"{what} answered {response.status_code}")
    if len(response.content) > MAX_DOCUMENT_BYTES:
        raise IssuerUnavailable(f"{what} is bigger than {MAX_DOCUMENT_BYTES} bytes")
    if not is_json(response.headers.get("content-type", "application/json")):
        raise IssuerUnavailable(f"{what} is not JSON")
    try:
        return response.json()
    except ValueError as exc:
        raise IssuerUnavailable(f"{what} is not JSON") from exc


def _tuple(value: object) -> tuple[str, ...] | None:
    return tuple(value) if isinstance(value, tuple | list) else None
