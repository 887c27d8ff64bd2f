"""Credentials on requests, as each operation's security requirements say.

Credentials are given per security scheme name. A requirement object is a set of schemes
that must all be satisfied (AND); an operation lists alternatives (OR): the first one we
hold every credential for is used. Supported: apiKey (header, query, cookie), HTTP basic
and bearer (any other HTTP scheme sends its token as is), and OAuth 2 / OpenID Connect
access tokens (given, obtained with `ClientCredentials`, or asked of the user through the
agent's auth flow when no alternative can be met otherwise).
"""

from __future__ import annotations

import base64
from collections.abc import Container, Mapping
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

import httpx2

from toolsets._auth import (
    MIN_MASKED,
    AuthConfig,
    AuthCredential,
    credential_problem,
    credential_refused,
)
from toolsets._logs import hide_in_logs
from toolsets.openapi._model import Operation
from toolsets.openapi._oauth import ClientCredentials
from toolsets.openapi._operations import Spec

__all__ = [
    "Credentials",
    "Requirement",
    "apply_security",
    "check_credential",
    "choose",
    "credential_problem_for",
    "missing_credential",
    "origin",
    "sent_secrets",
    "strip_credentials",
]

Credentials = Mapping[str, "AuthCredential | ClientCredentials | str"]
"""Security scheme name → its credential: a plain string is the key or token (for HTTP
basic, ``"user:password"``); `ClientCredentials` make the toolset get OAuth 2 tokens."""

Requirement = Mapping[str, tuple[str, ...]]
"""One security requirement: scheme name → the scopes it needs (all must be met)."""


def requirements(op: Operation, spec: Spec) -> tuple[Requirement, ...]:
    """The security alternatives that apply to ``op``."""
    return op.security if op.security is not None else spec.security


def choose(op: Operation, spec: Spec, available: Container[str]) -> Requirement | None:
    """The first alternative whose every scheme has a credential in ``available`` (an
    empty one means "no credentials needed"); None when none can be met."""
    alternatives = requirements(op, spec)
    if not alternatives:
        return {}
    for requirement in alternatives:
        if all(name in available and name in spec.security_schemes for name in requirement):
            return requirement
    return None


def missing_credential(op: Operation, spec: Spec, available: Container[str]) -> AuthConfig | None:
    """What to ask the user for when no alternative can be met with the credentials the
    toolset holds: the first alternative that lacks exactly one credential."""
    if choose(op, spec, available) is not None:
        return None
    for requirement in requirements(op, spec):
        missing = [name for name in requirement if name not in available]
        if len(missing) == 1 and missing[0] in spec.security_schemes:
            name = missing[0]
            return AuthConfig(
                scheme_name=name, scheme=spec.security_schemes[name], scopes=requirement[name]
            )
    return None


def apply_security(
    requirement: Requirement,
    spec: Spec,
    credentials: Mapping[str, AuthCredential | str],
    headers: dict[str, str],
    cookies: list[tuple[str, str]],
) -> list[tuple[str, str]]:
    """Add the credentials ``requirement`` names to ``headers`` and ``cookies``; return the
    query pairs to add (percent-encoded). Each credential was checked once, where it came
    from (`check_credential`): given to the toolset, given by the user, or fetched."""
    query: list[tuple[str, str]] = []
    for name in requirement:
        scheme = spec.security_schemes.get(name)
        credential = credentials.get(name)
        if scheme is not None and credential is not None:
            _apply(scheme, credential, headers, cookies, query)
    return query


def _secret(credential: AuthCredential | str) -> str:
    return credential if isinstance(credential, str) else credential.secret


def sent_secrets(credentials: Mapping[str, AuthCredential | str]) -> list[str]:
    """The secrets a request carries with ``credentials``, as a server could quote them
    back (for HTTP basic, the password and the encoded pair too), each of at least
    six characters."""
    found: list[str] = []
    for credential in credentials.values():
        secret = _secret(credential)
        found.append(secret)
        if isinstance(credential, AuthCredential) and credential.username is not None:
            pair = f"{credential.username}:{secret}"
        else:
            pair = secret
        if ":" in pair:
            found.append(pair.partition(":")[2])
            found.append(base64.b64encode(pair.encode()).decode())
    # A very short one is left: masking it would garble whole bodies (and it guards
    # little anyway).
    return [s for s in found if len(s) >= MIN_MASKED]


def check_credential(
    name: str, scheme: Mapping[str, Any], credential: AuthCredential | ClientCredentials | str
) -> None:
    """Refuse a credential the request could not carry: checked before anything is sent,
    so no HTTP layer error or log line ever quotes it.

    Raises:
        AuthError: naming the scheme and what is wrong, never the value.
    """
    problem = credential_problem_for(scheme, credential)
    if problem is not None:
        raise credential_refused(name, problem)


def credential_problem_for(
    scheme: Mapping[str, Any], credential: AuthCredential | ClientCredentials | str
) -> str | None:
    """Why no request can carry ``credential`` for ``scheme`` (see `credential_problem`),
    or None."""
    if isinstance(credential, ClientCredentials):
        # Form-encoded (or basic) to the token endpoint: any text travels.
        texts = [(credential.client_id, False), (credential.client_secret, False)]
    else:
        kind = scheme.get("type")
        http_scheme = str(scheme.get("scheme", "")).lower()
        # Percent-encoded (query, cookie) or base64'd UTF-8 (basic): only controls are
        # wrong; anything else goes into a header as it is.
        encoded = (kind == "apiKey" and scheme.get("in") in ("query", "cookie")) or (
            kind == "http" and http_scheme == "basic"
        )
        texts = [(_secret(credential), not encoded)]
        if isinstance(credential, AuthCredential) and credential.username is not None:
            texts.append((credential.username, False))
    for text, in_header in texts:
        problem = credential_problem(text, in_header=in_header)
        if problem is not None:
            return problem
    return None


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
            encoded = quote(secret, safe="")
            hide_in_logs(secret)
            query.append((quote(name, safe=""), encoded))
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


def origin(url: httpx2.URL | str) -> str:
    """``scheme://host[:port]`` of ``url``, without user info: what credentials belong to."""
    parts = urlsplit(str(url))
    return f"{parts.scheme}://{parts.netloc.rsplit('@', 1)[-1]}"


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
