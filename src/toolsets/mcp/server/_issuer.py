"""The issuer's token endpoint for `TokenExchange`: discovered from the issuer's metadata
(OpenID Connect discovery, else RFC 8414's), and checked to be https (or http to a
loopback address) before a secret is sent to it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from toolsets._errors import AuthError
from toolsets._urls import safe_url

if TYPE_CHECKING:
    import httpx2

__all__ = ["check_secure_url", "token_endpoint_of"]


async def token_endpoint_of(client: httpx2.AsyncClient, issuer: str, scheme_name: str) -> str:
    """The issuer's token endpoint, from its metadata (OpenID Connect discovery, then
    RFC 8414), checked to be https (or http to a loopback address).

    Raises:
        AuthError: no metadata, none naming a token endpoint, or one naming another issuer.
        ValueError: a token endpoint that is not secure.
    """
    from toolsets.openapi._oauth import OIDC_SUFFIX, discover

    base = issuer.rstrip("/")
    try:
        metadata = await discover(client, base + OIDC_SUFFIX, scheme_name)
    except AuthError:  # not an OpenID provider: RFC 8414's metadata
        metadata = await _rfc8414(client, base, scheme_name)
    endpoint = metadata.get("token_endpoint")
    if not isinstance(endpoint, str) or not endpoint:
        raise AuthError(
            f"the issuer {safe_url(issuer)} names no token_endpoint", scheme_name=scheme_name
        )
    check_secure_url(endpoint)
    return endpoint


def check_secure_url(url: str) -> None:
    """Refuse to send secrets to ``url`` unless it is https (or http to a loopback host).

    Raises:
        ValueError: naming the URL (without what may hide a secret in it).
    """
    from toolsets.openapi._oauth import check_secure

    try:
        check_secure(url, "token exchange", "URL")
    except AuthError as exc:
        raise ValueError(str(exc)) from None


async def _rfc8414(client: httpx2.AsyncClient, issuer: str, scheme_name: str) -> Mapping[str, Any]:
    """The issuer's RFC 8414 metadata (the well-known path goes between the host and
    the issuer's own path), its ``issuer`` checked."""
    from urllib.parse import urlsplit, urlunsplit

    from toolsets._http import map_http_errors

    parts = urlsplit(issuer)
    url = urlunsplit(
        (parts.scheme, parts.netloc, "/.well-known/oauth-authorization-server" + parts.path, "", "")
    )
    with map_http_errors("the authorization server metadata at", url):
        response = await client.get(url, headers={"Accept": "application/json"})
    try:
        metadata = response.json() if response.status_code == 200 else None
    except ValueError:
        metadata = None
    if not isinstance(metadata, dict):
        raise AuthError(
            f"the issuer {safe_url(issuer)} publishes no OpenID configuration nor "
            f"authorization server metadata (HTTP {response.status_code})",
            scheme_name=scheme_name,
        )
    if str(metadata.get("issuer", "")).rstrip("/") != issuer.rstrip("/"):
        raise AuthError(
            f"the metadata at {safe_url(url)} names the issuer {metadata.get('issuer')!r}, "
            f"not {issuer!r}: refusing it",
            scheme_name=scheme_name,
        )
    return metadata
