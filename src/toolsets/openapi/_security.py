"""Credentials on requests, as each operation's security requirements say.

Credentials are given per security scheme name. A requirement object is a set of schemes
that must all be satisfied (AND); an operation lists alternatives (OR): the first one we
hold every credential for is used. Supported: apiKey (header, query, cookie), HTTP basic
and bearer (any other HTTP scheme sends its token as is), and OAuth 2 / OpenID Connect
with a token given as the credential.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

import httpx2

from toolsets._auth import AuthCredential
from toolsets.openapi._model import Operation
from toolsets.openapi._operations import Spec

__all__ = ["Credentials", "apply_security", "strip_credentials"]

Credentials = Mapping[str, "AuthCredential | str"]
"""Security scheme name → its credential (a plain string is the key or token; for HTTP
basic, ``"user:password"``)."""


def requirements(op: Operation, spec: Spec) -> tuple[Mapping[str, tuple[str, ...]], ...]:
    """The security alternatives that apply to ``op``."""
    return op.security if op.security is not None else spec.security


def apply_security(
    op: Operation,
    spec: Spec,
    credentials: Credentials,
    headers: dict[str, str],
    cookies: list[tuple[str, str]],
) -> list[tuple[str, str]]:
    """Add the credentials of the first satisfiable alternative to ``headers`` and
    ``cookies``; return the query pairs to add (percent-encoded)."""
    query: list[tuple[str, str]] = []
    for requirement in requirements(op, spec):
        if not all(name in credentials for name in requirement):
            continue
        for name in requirement:
            scheme = spec.security_schemes.get(name)
            if scheme is None:
                continue
            _apply(scheme, credentials[name], headers, cookies, query)
        break
    return query


def _secret(credential: AuthCredential | str) -> str:
    return credential if isinstance(credential, str) else credential.secret


def _apply(
    scheme: Mapping[str, Any],
    credential: AuthCredential | str,
    headers: dict[str, str],
    cookies: list[tuple[str, str]],
    query: list[tuple[str, str]],
) -> None:
    kind = scheme.get("type")
    secret = _secret(credential)
    if kind == "apiKey":
        name = str(scheme.get("name", ""))
        where = scheme.get("in")
        if where == "query":
            query.append((quote(name, safe=""), quote(secret, safe="")))
        elif where == "cookie":
            cookies.append((name, quote(secret, safe="")))
        else:
            headers[name] = secret
    elif kind == "http":
        http_scheme = str(scheme.get("scheme", "")).lower()
        if http_scheme == "basic":
            if isinstance(credential, AuthCredential) and credential.username is not None:
                pair = f"{credential.username}:{credential.secret}"
            else:
                pair = secret
            headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
        elif http_scheme == "bearer":
            headers["Authorization"] = f"Bearer {secret}"
        else:
            headers["Authorization"] = f"{scheme.get('scheme')} {secret}"
    elif kind in ("oauth2", "openIdConnect"):
        headers["Authorization"] = f"Bearer {secret}"


def strip_credentials(
    url: httpx2.URL, op: Operation, spec: Spec, headers: dict[str, str]
) -> httpx2.URL:
    """Remove every credential the spec could have put on a request: for a redirect to
    another origin, which must not receive them."""
    names = {"authorization", "cookie", "proxy-authorization"}
    query_names: set[str] = set()
    for scheme in spec.security_schemes.values():
        if scheme.get("type") == "apiKey":
            if scheme.get("in") == "query":
                query_names.add(str(scheme.get("name")))
            else:
                names.add(str(scheme.get("name", "")).lower())
    for key in [k for k in headers if k.lower() in names]:
        del headers[key]
    if query_names and url.query:
        kept = [
            (k, v)
            for k, v in parse_qsl(url.query.decode(), keep_blank_values=True)
            if k not in query_names
        ]
        url = url.copy_with(query=urlencode(kept).encode() or None)
    return url
