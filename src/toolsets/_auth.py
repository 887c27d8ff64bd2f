"""What a tool needs to authenticate, and the credential it is given.

Secrets never appear in a ``repr`` (and so never in logs or tracebacks that print one),
nor in JSON made by pydantic (and so never in a tool result sent to a model).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar
from urllib.parse import quote

from pydantic_core import SchemaSerializer, core_schema

from toolsets._errors import AuthError

__all__ = [
    "MASK",
    "MIN_MASKED",
    "SECRET_NAME",
    "AuthConfig",
    "AuthCredential",
    "CredentialKind",
    "Secret",
    "check_headers",
    "check_credential_text",
    "credential_problem",
    "credential_refused",
    "header_problem",
    "header_secrets",
    "mask_bytes",
    "redact",
    "redact_bytes",
    "redact_json",
    "secret_forms",
]

T = TypeVar("T")

CredentialKind = Literal["api_key", "basic", "bearer", "oauth2"]

MASK = "**********"
MIN_MASKED = 6
"""Secrets shorter than this are not masked in what a server sends back: masking them
would garble whole bodies (and guards little anyway)."""


class Secret(str):
    """A string holding a secret: its ``repr`` hides it, so debuggers, error trackers and
    ``vars()`` (which print reprs) never show it. It is still the string itself wherever
    it is used (a header, a form, a comparison)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"Secret({MASK!r})"


def credential_problem(value: str, *, in_header: bool) -> str | None:
    """Why no request can carry ``value`` as a credential, or None: a control character
    (a trailing newline pasted with a token, say), or, where it goes into a header
    unencoded, a character outside ASCII. The answer never quotes the value."""
    for position, char in enumerate(value, 1):
        if char < " " or char == "\x7f":
            return (
                f"contains a control character (U+{ord(char):04X} at character {position} "
                f"of {len(value)}; a trailing newline?), which no request can carry"
            )
    if in_header and not value.isascii():
        return "contains a non-ASCII character, which an HTTP header cannot carry"
    return None


def check_credential_text(value: str, *, scheme_name: str, in_header: bool) -> None:
    """Refuse a credential no request could carry (see `credential_problem`).

    Raises:
        AuthError: naming the scheme and what is wrong, never the value.
    """
    problem = credential_problem(value, in_header=in_header)
    if problem is not None:
        raise credential_refused(scheme_name, problem)


def credential_refused(scheme_name: str, problem: str) -> AuthError:
    """The error for a credential no request can carry: it names the scheme and the
    ``problem`` (a `credential_problem`), never the value."""
    return AuthError(
        f"the credential for security scheme {scheme_name!r} {problem}: fix the credential",
        scheme_name=scheme_name,
    )


HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
"""A header name: an RFC 9110 token."""
FRAMING_HEADERS = frozenset(("content-length", "transfer-encoding", "host", "connection"))
"""Headers the HTTP client sets itself: a value given for one would contradict the request."""
SECRET_NAME = re.compile(r"token|secret|password|passwd|api[-_]?key|auth|cookie|session", re.I)
"""What the name of a header, variable or argument that carries a secret looks like."""


def header_problem(name: object, value: object) -> str | None:
    """Why no request can carry the header ``name: value`` as given, or None. The one
    rule for every header a user gives (MCP transports, an API's ``headers=``): a token
    name, not one the client sets itself, and a string value that is visible ASCII with
    no control character and no leading or trailing space. Never quotes the value
    (it is often a credential)."""
    if not isinstance(name, str) or not HEADER_NAME.fullmatch(name):
        return "a header name is letters, digits and !#$%&'*+-.^_`|~ only"
    if name.lower() in FRAMING_HEADERS:
        return "the HTTP client sets this header itself"
    if not isinstance(value, str):
        return f"the value must be a string, not {type(value).__name__}"
    problem = credential_problem(value, in_header=True)
    if problem is not None:
        return f"the value {problem}"
    if value != value.strip(" "):
        return "the value has a leading or trailing space, which HTTP would drop"
    return None


def check_headers(headers: Mapping[str, str]) -> None:
    """Refuse headers no request can carry (see `header_problem`): headers are where
    credentials go (``Authorization``, API keys), and an HTTP client's error or debug log
    would quote the whole value.

    Raises:
        AuthError: naming the header (as ``scheme_name``), never the value.
    """
    for name, value in headers.items():
        problem = header_problem(name, value)
        if problem is not None:
            raise AuthError(f"header {str(name)!r}: {problem}", scheme_name=str(name))


def header_secrets(headers: Mapping[str, str]) -> list[str]:
    """The secrets ``headers`` (or environment variables) carry, as a server could quote
    them back: the value of each one named like a credential (``Authorization``,
    ``X-Api-Key``, ``Cookie``, ``GITHUB_TOKEN``) and, for ``<scheme> <token>``, the token
    alone. Other values (a version, an ``Accept``, a region) are not secrets: masking
    them would garble results."""
    found: list[str] = []
    for name, value in headers.items():
        if SECRET_NAME.search(name):
            found.append(value)
            words = value.split()
            if len(words) > 1:
                found.append(words[-1])
    return [secret for secret in found if len(secret) >= MIN_MASKED]


def _forms(secrets: Iterable[str | None]) -> list[str]:
    """Each of ``secrets`` as a message may quote it: as is, percent-encoded (a form, a
    URL) and JSON-escaped; longest first, so a secret that holds another is masked whole.
    Made once per message, not once per string."""
    forms = {
        form
        for secret in secrets
        if secret
        for form in (secret, quote(secret, safe=""), json.dumps(secret)[1:-1])
    }
    return sorted(forms, key=len, reverse=True)


def _mask_forms(text: str, forms: Sequence[str]) -> str:
    for form in forms:
        if form in text:
            text = text.replace(form, MASK)
    return text


def redact(text: str, secrets: Iterable[str | None]) -> str:
    """``text`` with each of ``secrets`` (as is, percent-encoded or JSON-escaped) masked:
    for messages that quote what a server answered."""
    return _mask_forms(text, _forms(secrets))


def redact_bytes(data: bytes, secrets: Iterable[str]) -> bytes:
    """`redact` for a body as it came (UTF-8)."""
    return mask_bytes(data, secret_forms(secrets))


def secret_forms(secrets: Iterable[str | None]) -> tuple[bytes, ...]:
    """What `redact_bytes` masks for ``secrets``, UTF-8 encoded: made once where the same
    secrets guard every response (`mask_bytes`)."""
    return tuple(form.encode() for form in _forms(secrets))


def mask_bytes(data: bytes, forms: Sequence[bytes]) -> bytes:
    """``data`` with each of ``forms`` (`secret_forms`) masked."""
    mask = MASK.encode()
    for form in forms:
        if form in data:
            data = data.replace(form, mask)
    return data


def redact_json(value: T, secrets: Sequence[str]) -> T:
    """``value`` (JSON: objects, arrays, atoms) with `redact` applied to every string in
    it, object keys included: for a result a server sent. A new value (``value`` itself
    when there are no secrets); the walk keeps its own stack, so no depth of nesting
    exhausts Python's recursion."""
    if not secrets:
        return value
    forms = _forms(secrets)
    pending: list[tuple[Any, Any]] = []  # (a container, its copy still to fill)

    def masked(item: Any) -> Any:
        if isinstance(item, str):
            return _mask_forms(item, forms)
        if isinstance(item, dict):
            pending.append((item, {}))
            return pending[-1][1]
        if isinstance(item, list | tuple):
            pending.append((item, []))
            return pending[-1][1]
        return item

    root: T = masked(value)
    while pending:
        original, copy = pending.pop()
        if isinstance(copy, dict):
            for key, item in original.items():
                copy[masked(key)] = masked(item)
        else:
            copy.extend(masked(item) for item in original)
    return root


@dataclass(frozen=True, kw_only=True)
class AuthCredential:
    """A credential, as the user (or an auth flow) supplies it.

    Build one with the class methods; the secret fields are kept out of ``repr``.
    """

    kind: CredentialKind
    """Which kind of credential this is."""
    secret: str = field(repr=False)
    """The API key, the password (basic), or the (access) token (kept as a `Secret`: the
    string itself, hidden from any repr)."""
    username: str | None = None
    """The user name, for ``basic``."""
    refresh_token: str | None = field(default=None, repr=False)
    """An OAuth2 refresh token, when one was issued."""
    expires_at: float | None = None
    """When an OAuth2 access token expires (Unix time), when known."""
    scopes: tuple[str, ...] = ()
    """The OAuth2 scopes granted."""

    def __post_init__(self) -> None:
        if not self.secret:
            raise ValueError(f"an {self.kind} credential needs a non-empty secret")
        object.__setattr__(self, "secret", Secret(self.secret))
        if self.refresh_token is not None:
            object.__setattr__(self, "refresh_token", Secret(self.refresh_token))
        if self.kind == "basic" and self.username is None:
            raise ValueError("a basic credential needs a username")

    @classmethod
    def api_key(cls, key: str) -> AuthCredential:
        """An API key."""
        return cls(kind="api_key", secret=key)

    @classmethod
    def basic(cls, username: str, password: str) -> AuthCredential:
        """HTTP basic credentials."""
        return cls(kind="basic", secret=password, username=username)

    @classmethod
    def bearer(cls, token: str) -> AuthCredential:
        """A bearer token."""
        return cls(kind="bearer", secret=token)

    @classmethod
    def oauth2(
        cls,
        access_token: str,
        *,
        refresh_token: str | None = None,
        expires_at: float | None = None,
        scopes: tuple[str, ...] = (),
    ) -> AuthCredential:
        """An OAuth2 access token, with what came with it."""
        return cls(
            kind="oauth2",
            secret=access_token,
            refresh_token=refresh_token,
            expires_at=expires_at,
            scopes=scopes,
        )


def _masked(credential: AuthCredential) -> dict[str, Any]:
    return {
        "kind": credential.kind,
        "secret": MASK,
        "username": credential.username,
        "refresh_token": None if credential.refresh_token is None else MASK,
        "expires_at": credential.expires_at,
        "scopes": list(credential.scopes),
    }


# pydantic-core consults this when it serializes an object of the class, e.g. a tool
# result that (by mistake) holds a credential: the secrets come out masked.
AuthCredential.__pydantic_serializer__ = SchemaSerializer(  # type: ignore[attr-defined]
    core_schema.any_schema(serialization=core_schema.plain_serializer_function_ser_schema(_masked))
)


@dataclass(frozen=True, kw_only=True)
class AuthConfig:
    """What a tool needs to authenticate: one security scheme and the scopes it asks for.

    ``scheme`` uses the OpenAPI Security Scheme Object's vocabulary (``type``: ``apiKey``,
    ``http``, ``oauth2``, ``openIdConnect``, ...), the lingua franca of API auth.
    """

    scheme_name: str
    """The scheme's name, e.g. the key under ``components.securitySchemes``."""
    scheme: Mapping[str, Any] = field(default_factory=dict)
    """The security scheme object."""
    scopes: tuple[str, ...] = ()
    """The OAuth2 / OpenID Connect scopes needed."""

    @property
    def key(self) -> str:
        """A stable key for storing the credential obtained for this config."""
        return self.scheme_name + ("|" + " ".join(sorted(self.scopes)) if self.scopes else "")
