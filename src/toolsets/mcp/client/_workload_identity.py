"""Workload identity federation: a workload's platform-issued JWT traded for an MCP access
token (SEP-1933), with the JWT bearer grant of RFC 7523 §2.1.

A workload with no user present — a Kubernetes pod, a CI job, a cloud function, a SPIFFE
workload — already holds a JWT its platform issued for it. The authorization server of
an MCP server trusts that platform, so the JWT is the credential: no client secret, no
registration, no browser. `WorkloadIdentity` is the ``httpx2.Auth`` that does it, made
of the `mcp` SDK's OAuth pieces (metadata discovery, issuer check, token parsing):

- the authorization server is configuration (``issuer``), never what the MCP server
  names: its metadata is read from the issuer's own well-known URL and checked to name
  that issuer, so the assertion goes to its token endpoint and nowhere else;
- when the MCP server refuses a request (401, or 403 ``insufficient_scope``), a fresh
  assertion is traded for a token and the request sent once more; a token about to
  expire is replaced before it is sent;
- a refusal by the token endpoint (``invalid_grant``, ``invalid_scope``,
  ``unauthorized_client``...) is an `AuthError` at once — never retried with the same
  assertion, never another grant.

The assertion and the tokens go out only over https (or http to this machine), and never
appear in a message, a log or a ``repr``.
"""

from __future__ import annotations

import os
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Generator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx2
import pydantic
from mcp.client.auth import OAuthFlowError
from mcp.client.auth.utils import (
    build_oauth_authorization_server_metadata_discovery_urls,
    create_oauth_metadata_request,
    extract_field_from_www_auth,
    extract_scope_from_www_auth,
    handle_auth_metadata_response,
    union_scopes,
    validate_metadata_issuer,
)
from mcp.shared.auth import JWT_BEARER_GRANT_TYPE, OAuthToken
from mcp.shared.auth_utils import resource_url_from_server_url

from toolsets._auth import Secret, credential_problem, redact
from toolsets._concurrency import LoopLocks
from toolsets._errors import AuthError
from toolsets._urls import is_loopback, safe_url

__all__ = ["AssertionSource", "WorkloadIdentity"]

AssertionSource = Callable[[str], Awaitable[str]]
"""An async function given the authorization server's issuer (the audience the JWT must
name) that returns a fresh workload JWT, e.g. from a metadata server or a CI's OIDC
endpoint."""

SCHEME = "workload identity"
"""The ``scheme_name`` of the `AuthError` this raises."""
EXPIRY_MARGIN = 30.0
"""Seconds before its expiry that a token is replaced (clock skew, latency)."""
MAX_ASSERTION_FILE = 64 * 1024
"""Bytes of an assertion file read at most (a JWT is a few kilobytes)."""
_SHOWN = 200
"""Characters of the token endpoint's error description quoted in an `AuthError`."""


class WorkloadIdentity(httpx2.Auth):
    """Authenticate to an MCP server as a workload: trade its platform-issued JWT for an
    access token with the JWT bearer grant (RFC 7523; MCP's workload identity
    federation, SEP-1933), for ``StreamableHttp(auth=...)`` or ``Sse(auth=...)``::

        auth = WorkloadIdentity(
            issuer="https://auth.example.com",
            assertion=Path("/var/run/secrets/tokens/mcp"),  # Kubernetes projects it here
            client_id="my-workload",
        )
        toolset = McpToolset(StreamableHttp(url="https://mcp.example.com/mcp", auth=auth))

    The first request the server refuses (401) brings the exchange: the authorization
    server's metadata is read from ``issuer``'s well-known URL (RFC 8414) and must name
    ``issuer``; the assertion goes to its token endpoint with ``grant_type`` JWT bearer,
    the MCP server's URL as ``resource`` (RFC 8707), ``scope`` and ``client_id`` when
    given; the token comes back as ``Authorization: Bearer``, presented to that
    resource only (one instance serving several MCP servers gets a token for each,
    never one server's token sent to another). Each exchange takes a fresh
    assertion (a file is read again: platforms rotate them). A scope the server asks for
    (``WWW-Authenticate: ... scope=``, on a 401 or a 403 ``insufficient_scope``) is added to
    ``scope``.

    Args:
        issuer: The authorization server's issuer identifier, exactly as its metadata
            states it (the audience your platform put in the JWT).
        assertion: The workload's JWT: the token itself, a ``Path`` to a file holding it
            (read for each exchange), or an async function given ``issuer`` that returns
            one (`AssertionSource`).
        client_id: The client id to name in the token request, if the authorization
            server wants one (the JWT alone identifies the workload otherwise).
        scope: Space-separated scopes to ask for.
        resource: The resource indicator to ask a token for; by default the URL of the
            MCP server being called.

    Raises:
        ValueError: an argument that cannot work (an issuer that is no http(s) URL, an
            empty assertion).

    A refused exchange raises `AuthError` (``scheme_name`` ``"workload identity"``)
    naming the token endpoint and its ``error``; the connection or call that needed the
    token fails with it. For a client that also has a secret (SEP-990's identity
    assertion grant), use the SDK's ``IdentityAssertionOAuthProvider``.
    """

    def __init__(
        self,
        *,
        issuer: str,
        assertion: str | os.PathLike[str] | AssertionSource,
        client_id: str | None = None,
        scope: str | None = None,
        resource: str | None = None,
    ) -> None:
        parts = urlsplit(issuer)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"issuer must be an http(s) URL, got {safe_url(issuer)!r}")
        if isinstance(assertion, str):
            if not assertion:
                raise ValueError("assertion is empty")
            assertion = Secret(assertion)
        self.issuer = issuer
        """The authorization server the assertion is for."""
        self.client_id = client_id
        """The client id named in the token request, if any."""
        self.scope = scope
        """The scopes asked for (more are added when the MCP server asks for them)."""
        self.resource = resource
        """The resource indicator asked for; None: the URL of the MCP server called."""
        self._assertion = assertion
        self._token_endpoint: str | None = None
        self._tokens: dict[str, _Token] = {}
        """The token got for each resource: presented to that resource only (one
        instance may serve several MCP servers of one authorization server)."""
        self._lock = LoopLocks()

    def __repr__(self) -> str:
        return f"WorkloadIdentity(issuer={self.issuer!r}, client_id={self.client_id!r})"

    def sync_auth_flow(self, request: httpx2.Request) -> Generator[httpx2.Request, Any, None]:
        raise TypeError("WorkloadIdentity works with httpx2.AsyncClient only")

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        resource = self.resource or resource_url_from_server_url(_without_query(request))
        # A new token keeps the scope the last one was granted (e.g. after a step-up).
        last = self._tokens.get(resource)
        prior = last.scope if last is not None else None
        token = last if _fresh(last) else None
        if token is not None:
            _present(request, token)
        if token is None and self._token_endpoint is not None:
            # Expired (the server is known): replaced before the server refuses it.
            challenged, more_scope = None, False
        else:
            response = yield request
            challenged = extract_scope_from_www_auth(response)
            more_scope = (
                response.status_code == 403
                and extract_field_from_www_auth(response, "error") == "insufficient_scope"
            )
            if response.status_code != 401 and not more_scope:
                return
        wanted = union_scopes(union_scopes(self.scope, prior), challenged)
        async with self._lock():
            # Unless a concurrent request replaced the token meanwhile.
            latest = self._tokens.get(resource)
            if more_scope or latest is token or not _fresh(latest):
                self._tokens.pop(resource, None)  # refused or expired: never presented again
                exchange = self._exchange(resource, wanted)
                try:
                    step = await exchange.__anext__()
                    while True:
                        answer = yield step
                        step = await exchange.asend(answer)
                except StopAsyncIteration:
                    pass
                finally:
                    await exchange.aclose()
            _present(request, self._tokens[resource])
        yield request

    async def _exchange(
        self, resource: str, scope: str | None
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        """Find the token endpoint if not yet known, then trade a fresh assertion for a
        token for ``resource``: each HTTP request yielded, its response sent back in."""
        if self._token_endpoint is None:
            # RFC 8414 §3 (OpenID Connect discovery as the fallback), at the issuer's own
            # URL; the metadata must name that issuer (§3.3).
            _check_secure(self.issuer, "issuer")
            urls = build_oauth_authorization_server_metadata_discovery_urls(
                self.issuer, self.issuer
            )
            for url in urls:
                response = yield create_oauth_metadata_request(url)
                found, metadata = await handle_auth_metadata_response(response)
                if not found:
                    break
                if metadata is not None:
                    try:
                        validate_metadata_issuer(metadata, self.issuer)
                    except OAuthFlowError as exc:
                        raise AuthError(str(exc), scheme_name=SCHEME) from exc
                    self._token_endpoint = str(metadata.token_endpoint)
                    break
            if self._token_endpoint is None:
                raise AuthError(
                    f"no authorization server metadata found for the issuer "
                    f"{safe_url(self.issuer)}",
                    scheme_name=SCHEME,
                )
        endpoint = self._token_endpoint
        _check_secure(endpoint, "token endpoint")
        assertion = await self._fresh_assertion()
        form = {
            "grant_type": JWT_BEARER_GRANT_TYPE,
            "assertion": assertion,
            "resource": resource,
        }
        if self.client_id is not None:
            form["client_id"] = self.client_id
        if scope:
            form["scope"] = scope
        headers = {"Accept": "application/json"}
        response = yield httpx2.Request("POST", endpoint, data=form, headers=headers)
        self._tokens[resource] = await _token_from(response, endpoint, assertion, scope)

    async def _fresh_assertion(self) -> str:
        source = self._assertion
        text: str
        if isinstance(source, str):
            text = source
        elif isinstance(source, os.PathLike):
            try:
                async with await anyio.open_file(source, "rb") as file:
                    raw = await file.read(MAX_ASSERTION_FILE + 1)
            except OSError as exc:
                raise AuthError(
                    f"cannot read the workload's assertion from {os.fspath(source)!r}: "
                    f"{exc.strerror or exc}",
                    scheme_name=SCHEME,
                ) from exc
            if len(raw) > MAX_ASSERTION_FILE:
                raise AuthError(
                    f"the assertion file {os.fspath(source)!r} holds more than "
                    f"{MAX_ASSERTION_FILE} bytes: no JWT is that long",
                    scheme_name=SCHEME,
                )
            text = raw.decode("utf-8", "replace").strip()
        else:
            text = await source(self.issuer)
        if not isinstance(text, str) or not text:
            raise AuthError("the workload's assertion is empty", scheme_name=SCHEME)
        problem = credential_problem(text, in_header=False)
        if problem is not None:
            raise AuthError(f"the workload's assertion {problem}", scheme_name=SCHEME)
        return Secret(text)


@dataclass(frozen=True, kw_only=True)
class _Token:
    """An access token the exchange got (the token itself hidden from ``repr``)."""

    access: Secret
    scope: str | None
    expires_at: float | None
    """When it expires (``time.time()``), or None if the server did not say."""


def _fresh(token: _Token | None) -> bool:
    """Whether ``token`` is there and not about to expire."""
    return token is not None and (
        token.expires_at is None or time.time() < token.expires_at - EXPIRY_MARGIN
    )


def _present(request: httpx2.Request, token: _Token) -> None:
    request.headers["Authorization"] = f"Bearer {token.access}"


def _without_query(request: httpx2.Request) -> str:
    return str(request.url.copy_with(query=None, fragment=None))


def _refusal(status: int, body: str, assertion: str) -> str:
    """What a token endpoint's refusal says (RFC 6749 §5.2): the status, its ``error``
    and description, with the assertion masked should it be quoted."""
    reason = f"HTTP {status}"
    try:
        error = pydantic.TypeAdapter(dict[str, Any]).validate_json(body)
    except pydantic.ValidationError:
        return reason
    if isinstance(error.get("error"), str):
        reason += f", {redact(error['error'], [assertion])[:100]}"
        if isinstance(error.get("error_description"), str):
            reason += f": {redact(error['error_description'], [assertion])[:_SHOWN]}"
    return reason


def _check_secure(url: str, what: str) -> None:
    """Send the assertion only over https, or http to this machine."""
    parts = urlsplit(url)
    if parts.scheme == "https" or (
        parts.scheme == "http" and parts.hostname is not None and is_loopback(parts.hostname)
    ):
        return
    raise AuthError(
        f"the {what} {safe_url(url)} is not https (http only to this machine): the "
        "workload's assertion is not sent there",
        scheme_name=SCHEME,
    )


async def _token_from(
    response: httpx2.Response, endpoint: str, assertion: str, scope: str | None
) -> _Token:
    """The token a token endpoint's ``response`` issues for the workload's
    ``assertion`` (asked with ``scope``).

    Raises:
        AuthError: the endpoint refused, or answered with no usable bearer token.
    """
    body = (await response.aread()).decode("utf-8", "replace")
    if response.status_code != 200:
        raise AuthError(
            f"the token endpoint {safe_url(endpoint)} refused the workload's assertion "
            f"({_refusal(response.status_code, body, assertion)})",
            scheme_name=SCHEME,
        )
    try:
        token = OAuthToken.model_validate_json(body)
    except pydantic.ValidationError as exc:
        where = ".".join(map(str, exc.errors()[0]["loc"])) or "the top"
        raise AuthError(
            f"the token endpoint {safe_url(endpoint)} answered with no usable bearer "
            f"token ({exc.error_count()} problems, the first at {where})",
            scheme_name=SCHEME,
        ) from None  # pydantic's text would quote the token
    problem = credential_problem(token.access_token, in_header=True)
    if problem is not None:
        raise AuthError(
            f"the token endpoint {safe_url(endpoint)} issued a token that {problem}",
            scheme_name=SCHEME,
        )
    lifetime = token.expires_in
    return _Token(
        access=Secret(token.access_token),
        scope=token.scope if token.scope is not None else scope,
        expires_at=time.time() + lifetime if lifetime is not None else None,
    )
