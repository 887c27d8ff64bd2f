"""How `McpServer` authorizes its HTTP clients, as the operator says it: `OAuthResourceServer`
(the issuer, the audience, the scopes every request needs, the claims kept) and
`Introspection` (how opaque tokens are checked). Values, checked when made; the work is
done by `_tokens` and `_guard`."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, TypeAlias
from urllib.parse import urlsplit

import httpx2

from toolsets._concurrency import check_timeout
from toolsets._urls import is_loopback

__all__ = [
    "DEFAULT_FETCH_TIMEOUT",
    "DEFAULT_INTROSPECTION_CACHE",
    "DEFAULT_KEYS_TTL",
    "DEFAULT_LEEWAY",
    "DEFAULT_REFRESH_INTERVAL",
    "MAX_TOKEN_LENGTH",
    "NO_AUTH",
    "Introspection",
    "OAuthResourceServer",
    "ServerAuth",
    "canonical_url",
    "check_exposure",
]

DEFAULT_FETCH_TIMEOUT = 5.0
"""Seconds a request to the authorization server (metadata, keys, introspection) may take."""
DEFAULT_LEEWAY = 30.0
"""Seconds of clock difference allowed when checking a token's ``exp``, ``nbf`` and ``iat``."""
DEFAULT_KEYS_TTL = 3600.0
"""Seconds the issuer's signing keys are used before they are fetched again."""
DEFAULT_REFRESH_INTERVAL = 10.0
"""Seconds between two fetches of the keys caused by tokens naming a key not known (a key
the issuer rotated in is found at once; a flood of made-up ``kid`` values costs one fetch
per interval)."""
DEFAULT_INTROSPECTION_CACHE = 300.0
"""Seconds an introspected token's answer is kept, at most (never beyond its ``exp``)."""
MAX_TOKEN_LENGTH = 8192
"""The longest access token accepted, in characters."""

NO_AUTH: Literal["none"] = "none"
"""``McpServer(auth="none")``: serve over HTTP without authorization, beyond this machine
too (the explicit opt-out of the safe default)."""


@dataclass(frozen=True, kw_only=True)
class Introspection:
    """How opaque access tokens are checked: RFC 7662 token introspection at the
    authorization server, as the client the server is registered as there.

    A token that is not a JWT is introspected (a JWT is verified locally, against the
    issuer's keys); the answer is kept until the token expires, at most ``cache_ttl``
    seconds, so a client's requests cost one introspection, not one each.
    """

    client_id: str
    """The resource server's client id at the authorization server."""
    client_secret: str = field(repr=False)
    """Its secret (sent with HTTP Basic authentication; never logged)."""
    endpoint: str | None = None
    """The introspection endpoint (default: the issuer's metadata's
    ``introspection_endpoint``)."""
    cache_ttl: float = DEFAULT_INTROSPECTION_CACHE
    """Seconds an answer is kept at most (a token revoked meanwhile is accepted until then)."""

    def __post_init__(self) -> None:
        if not self.client_id:
            raise ValueError("Introspection needs the client_id the server introspects as")
        check_timeout(self.cache_ttl, "cache_ttl")
        if self.endpoint is not None:
            _check_url(self.endpoint, "endpoint")


@dataclass(frozen=True, kw_only=True)
class OAuthResourceServer:
    """`McpServer` as an OAuth 2.1 resource server (the MCP authorization spec): every
    HTTP request needs a bearer access token that ``issuer`` issued for this server.

    A JWT access token is verified here, against the issuer's signing keys (found through
    its metadata, RFC 8414 or OpenID Connect discovery, and kept; fetched again when a
    token names a key not known): the signature with an algorithm the issuer's keys
    publish (never ``none``, never a shared-secret one), ``iss``, ``aud`` (this server,
    RFC 8707), ``exp`` and ``nbf``. Any other token is checked by ``introspection``
    (RFC 7662) when given, else refused. The token's subject, client, scopes and the
    ``claims`` named become the call's `Identity` (``ctx.identity``); the token itself is
    never passed on.

    Clients find out how to get a token from the server's protected resource metadata
    (RFC 9728, at ``/.well-known/oauth-protected-resource``), which a ``401`` names.

    Args:
        issuer: The authorization server's issuer identifier (its ``iss``), e.g.
            ``https://login.example.com/realms/tools``.
        resource: This server's resource identifier: the URL clients reach the MCP
            endpoint at, e.g. ``https://tools.example.com/mcp``. None: the URL each
            request came to (its scheme, its ``Host`` header, which the allowed hosts
            restrict, and the endpoint's path); set it behind a proxy that changes them.
        audience: What a token's ``aud`` must hold (one of them): by default the
            resource. Some authorization servers name an API otherwise
            (``api://tools``).
        required_scopes: Scopes every request's token must have (else ``403
            insufficient_scope``), and those the metadata advertises.
        scopes_supported: The scopes the metadata advertises, if more than those
            required (tools' own scopes, say).
        claims: The token's other claims kept on the `Identity` (``roles``,
            ``groups``, ``email``, ...); those the token lacks are left out.
        introspection: How opaque tokens are checked; None: only JWTs are accepted.
        jwks_uri: The issuer's key set, when its metadata does not name one (or it has
            none to discover).
        algorithms: The signing algorithms accepted; by default each key's own
            (its ``alg``, else the one its type implies, e.g. RS256 for an RSA key).
        leeway: Seconds of clock difference allowed on ``exp``, ``nbf`` and ``iat``.
        keys_ttl: Seconds the keys are used before they are fetched again.
        refresh_interval: Seconds at least between two fetches caused by unknown keys.
        fetch_timeout: Seconds each request to the authorization server may take.
        resource_name: The server's name in the metadata (default: the server's).
        resource_documentation: A page for people about the server, in the metadata.
        http_client: The client the authorization server is asked with (default: one of
            the server's own, opened when first needed and closed with the app).

    Raises:
        ValueError: a URL that is not absolute http(s) (or has a fragment), a timeout
            or duration out of range, ``none`` or a shared-secret algorithm.
    """

    issuer: str
    resource: str | None = None
    audience: str | Sequence[str] | None = None
    required_scopes: Sequence[str] = ()
    scopes_supported: Sequence[str] | None = None
    claims: Sequence[str] = ()
    introspection: Introspection | None = None
    jwks_uri: str | None = None
    algorithms: Sequence[str] | None = None
    leeway: float = DEFAULT_LEEWAY
    keys_ttl: float = DEFAULT_KEYS_TTL
    refresh_interval: float = DEFAULT_REFRESH_INTERVAL
    fetch_timeout: float = DEFAULT_FETCH_TIMEOUT
    resource_name: str | None = None
    resource_documentation: str | None = None
    http_client: httpx2.AsyncClient | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        _check_url(self.issuer, "issuer")
        for name in ("resource", "jwks_uri", "resource_documentation"):
            value = getattr(self, name)
            if value is not None:
                _check_url(value, name)
        # Strings are sequences too: "tools" would be the scopes t, o, o, l, s.
        for name in ("required_scopes", "scopes_supported", "claims", "algorithms"):
            value = getattr(self, name)
            if isinstance(value, str):
                raise ValueError(f"{name} must be a list of strings, not the string {value!r}")
            if value is not None:
                object.__setattr__(self, name, tuple(value))
        if self.audience is not None and not isinstance(self.audience, str):
            object.__setattr__(self, "audience", tuple(self.audience))
        for scope in (*self.required_scopes, *(self.scopes_supported or ())):
            if not scope or any(c.isspace() or c in '"\\' for c in scope):
                raise ValueError(f"{scope!r} is not a scope (no spaces, quotes or backslashes)")
        for algorithm in self.algorithms or ():
            if algorithm.lower() == "none" or algorithm.upper().startswith("HS"):
                raise ValueError(
                    f"algorithms: {algorithm!r} is refused: a token must be signed with the "
                    "issuer's private key (an asymmetric algorithm)"
                )
        if not (isinstance(self.leeway, int | float) and 0 <= self.leeway < math.inf):
            raise ValueError(f"leeway must be a finite number of seconds >= 0, not {self.leeway!r}")
        check_timeout(self.keys_ttl, "keys_ttl")
        check_timeout(self.fetch_timeout, "fetch_timeout")
        interval = self.refresh_interval
        if not (isinstance(interval, int | float) and 0 <= interval < math.inf):
            raise ValueError(f"refresh_interval must be a finite number >= 0, not {interval!r}")

    @property
    def advertised_scopes(self) -> tuple[str, ...]:
        """The scopes the metadata advertises (``scopes_supported``, else those required)."""
        given = self.scopes_supported
        return tuple(given) if given is not None else tuple(self.required_scopes)


ServerAuth: TypeAlias = OAuthResourceServer | Literal["none"] | None
"""What `McpServer`'s ``auth`` takes: an `OAuthResourceServer`; ``"none"`` (`NO_AUTH`),
no authorization, said explicitly; or None, no authorization, served on this machine
only."""


def check_exposure(auth: ServerAuth, host: str) -> None:
    """Refuse to serve beyond this machine without authorization unless told so.

    Raises:
        ValueError: ``auth`` is None and ``host`` is not a loopback name or address.
    """
    if auth is None and not is_loopback(host.strip("[]")):
        raise ValueError(
            f"not serving on {host or 'every interface'} without authorization: anyone who "
            "reaches it would call its tools with the server's own credentials. Give "
            "McpServer(auth=OAuthResourceServer(issuer=...)), or auth='none' to serve "
            "without authorization on purpose"
        )


def _check_url(url: str, name: str) -> None:
    parts = urlsplit(url) if isinstance(url, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"{name} must be an absolute http(s) URL, not {url!r}")
    if parts.fragment or url.endswith("#"):
        raise ValueError(f"{name} must not have a fragment: {url!r}")


def canonical_url(url: str) -> str:
    """``url`` as resource URLs compare: scheme and host in lower case, the scheme's
    default port left out, no trailing slash (``url`` itself when it does not parse: it
    may come from a token)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return url
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    default = {"http": 80, "https": 443}.get(parts.scheme.lower())
    netloc = host if port is None or port == default else f"{host}:{port}"
    query = f"?{parts.query}" if parts.query else ""
    return f"{parts.scheme.lower()}://{netloc}{parts.path.rstrip('/')}{query}"
