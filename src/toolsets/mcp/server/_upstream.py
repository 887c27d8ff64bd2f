"""Each user's own credential for the upstream API: `UserCredentials`, given to
`McpServer` as its ``credentials``, answers a tool that asks for a credential (its
``auth_config``: an OpenAPI operation's security scheme the toolset holds none for) with
the one of the user calling, as the server's authorization identified them
(`ToolContext.identity`): found by a resolver of the operator's, in a mapping by subject
(a file, the environment), or obtained by OAuth 2.0 token exchange (`TokenExchange`,
RFC 8693) for the caller's own access token.

What is never done: a user is never given another user's credential (everything is
looked up, and cached, by the caller's issuer and subject); a user without a credential
of their own is never given the server's, unless the operator gave that ``fallback``;
the client's access token itself is never sent upstream (token exchange sends it to the
issuer's token endpoint only). A user without a credential, a caller the server did not
identify, an exchange the issuer refused, a credential the API refused: each is an error
result naming the security scheme (``credential``) and saying what is missing, and the
call does not run.
"""

from __future__ import annotations

import inspect
import logging
import os
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

import anyio

from toolsets._auth import AuthConfig, AuthCredential, Secret, check_credential_text
from toolsets._consumers import ask, credential_answer
from toolsets._context import Identity, ToolContext
from toolsets._errors import AuthError, ConnectionError, SpecError
from toolsets._invoke import CredentialNeeded
from toolsets._results import error_result
from toolsets._urls import safe_url

if TYPE_CHECKING:
    import httpx2
    import mcp.types as mt

__all__ = [
    "DEFAULT_TOKEN_LIFETIME",
    "TOKEN_EXCHANGE_GRANT",
    "TOKEN_EXCHANGE_TIMEOUT",
    "USER_CREDENTIALS_ENV",
    "CredentialResolver",
    "TokenExchange",
    "UserCredentials",
    "user_credential_result",
]

logger = logging.getLogger("toolsets.mcp.server")

CredentialResolver: TypeAlias = Callable[[Identity, AuthConfig], Any]
"""Finds the calling user's credential for a tool's ``auth_config``: an
`AuthCredential`, the key or token as a string (as `McpServer`'s ``credentials`` takes
it), or None (the user has none); a sync function (run in a worker thread: it may
block) or an async one. It may raise `AuthError` to refuse, saying why."""
Fallback: TypeAlias = (
    "Mapping[str, AuthCredential | str] | Callable[[AuthConfig], AuthCredential | str | None]"
)
"""The credentials of users who have none of their own, by security scheme name (or a
function of the tool's `AuthConfig` finding one)."""

USER_CREDENTIALS_ENV = "TOOLSETS_USER_CREDENTIALS"
"""The environment variable `UserCredentials.from_env` reads by default."""
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


class UserCredentials:
    """Each calling user's own credential (see the module's docstring): given as
    `McpServer`'s ``credentials``, a tool asking for a credential gets the one of the
    user calling.

    Args:
        resolve: Finds a user's credential (see `CredentialResolver`).
        fallback: The credential of a user who has none of their own (or a caller the
            server did not identify), by security scheme name, or a function of the
            tool's `AuthConfig`. None (the default): such a user gets an error result,
            never a credential of the server's.

    Example::

        async def api_key(identity: Identity, config: AuthConfig) -> str | None:
            return await vault.read(f"{identity.subject}/{config.scheme_name}")

        McpServer(OpenApiToolset(spec), credentials=UserCredentials(api_key), ...)
    """

    def __init__(self, resolve: CredentialResolver, *, fallback: Fallback | None = None) -> None:
        if not callable(resolve):
            raise TypeError(f"resolve must be a function, not a {type(resolve).__name__}")
        self._resolve_with = resolve
        self._fallback = fallback

    @classmethod
    def from_mapping(
        cls,
        by_subject: Mapping[str, Mapping[str, AuthCredential | str]],
        *,
        fallback: Fallback | None = None,
    ) -> UserCredentials:
        """The credentials of each user by subject (the token's ``sub``), each by security
        scheme name: an `AuthCredential`, or the key or token as a string (for HTTP
        basic, ``"user:password"``).

        Raises:
            SpecError: not a mapping of mappings of strings (``pointer`` names where;
                no value is ever quoted).
        """
        checked = _checked(by_subject, None)
        return cls(_by_subject(checked), fallback=fallback)

    @classmethod
    def from_file(cls, path: str | Path, *, fallback: Fallback | None = None) -> UserCredentials:
        """The credentials of each user by subject, read from a YAML or JSON file (or TOML,
        for a ``.toml`` one) holding `from_mapping`'s mapping::

            alice@example.com:
              petstore_key: 3f9a...
            bob@example.com:
              petstore_key: 77c1...

        Keep it readable by the server's user only: it holds every user's secrets.

        Raises:
            SpecError: the file cannot be read or parsed, or is not such a mapping.
        """
        where = str(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise SpecError(f"cannot read the user credentials: {exc}", source=where) from exc
        return cls(
            _by_subject(_parsed(text, where, toml=where.endswith(".toml"))), fallback=fallback
        )

    @classmethod
    def from_env(
        cls, variable: str = USER_CREDENTIALS_ENV, *, fallback: Fallback | None = None
    ) -> UserCredentials:
        """The credentials of each user by subject, read from the environment variable
        ``variable``, which holds `from_mapping`'s mapping as JSON (or YAML).

        Raises:
            SpecError: the variable is not set, or does not hold such a mapping.
        """
        text = os.environ.get(variable)
        if text is None:
            raise SpecError("the variable is not set", source=f"${variable}")
        return cls(_by_subject(_parsed(text, f"${variable}", toml=False)), fallback=fallback)

    async def credential(
        self,
        identity: Identity | None,
        config: AuthConfig,
        *,
        refused: AuthCredential | None = None,
    ) -> AuthCredential:
        """The credential of the user ``identity`` for ``config`` (the fallback's when
        they have none and one was given).

        Args:
            identity: The caller, as the server's authorization identified them (None:
                not identified).
            config: What the tool asks for.
            refused: The credential the API just refused for this call: it is found (or
                obtained) again, and when that gives the same one, that is an error.

        Raises:
            AuthError: the user has none (and there is no fallback), or it could not be
                obtained, or the API refused it; the message says which, for the model,
                and names no secret.
        """
        name = config.scheme_name
        if identity is None or not identity.subject:
            found = self._fallback_for(config)
            if found is None:
                raise AuthError(
                    f"This call needs the calling user's own credential for {name!r}, and "
                    "the caller is not identified (the server authorizes no clients here), "
                    "so it did not run.",
                    scheme_name=name,
                )
            return found
        if refused is not None:
            self.forget(identity, config)
        found = await self._resolve(identity, config)
        if found is None:
            found = self._fallback_for(config)
            if found is None:
                raise AuthError(
                    f"This call needs the calling user's own credential for {name!r}, and "
                    "there is none for this user, so it did not run.",
                    scheme_name=name,
                )
        if refused is not None and found.secret == refused.secret:
            raise AuthError(
                f"The API refused this user's credential for {name!r}, and there is no "
                "other, so the call was not made again.",
                scheme_name=name,
            )
        return found

    async def _resolve(self, identity: Identity, config: AuthConfig) -> AuthCredential | None:
        """The user's own credential for ``config``, or None: the resolver's answer."""
        resolve = self._resolve_with
        if _is_async(resolve):  # awaited here: a worker thread is for what may block
            answer = await resolve(identity, config)
        else:
            answer = await ask(resolve, identity, config)
        found = credential_answer(_basic(answer, config), config)
        if found is not None:
            _check(found, config)
        return found

    def forget(self, identity: Identity, config: AuthConfig) -> None:
        """Drop what the resolver keeps of ``identity``'s credential for ``config`` (the
        API refused it: a `TokenExchange` drops the token), so the next call finds or
        obtains it again."""
        forget = getattr(self._resolve_with, "forget", None)
        if callable(forget):
            forget(identity, config)

    def _fallback_for(self, config: AuthConfig) -> AuthCredential | None:
        given = self._fallback
        if given is None:
            return None
        answer = given(config) if callable(given) else _given(given, config)
        found = credential_answer(_basic(answer, config), config)
        if found is not None:
            _check(found, config)
        return found

    async def aclose(self) -> None:
        """Release what the resolver holds (a `TokenExchange`'s HTTP client): the server
        does it when it stops."""
        close = getattr(self._resolve_with, "aclose", None)
        if callable(close):
            await close()

    def __repr__(self) -> str:
        fallback = ", with a fallback" if self._fallback is not None else ""
        return f"UserCredentials({self._resolve_with!r}{fallback})"


def _is_async(fn: object) -> bool:
    """Whether ``fn`` is an async function, or an object whose ``__call__`` is one."""
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004 - a callable object's own method
    )


def _given(given: Mapping[str, AuthCredential | str], config: AuthConfig) -> object:
    found = given.get(config.key)
    return given.get(config.scheme_name) if found is None else found


def _basic(answer: object, config: AuthConfig) -> object:
    """``"user:password"`` as an HTTP basic credential, for a basic scheme."""
    scheme = config.scheme
    if (
        isinstance(answer, str)
        and str(scheme.get("type", "")).lower() == "http"
        and str(scheme.get("scheme", "")).lower() == "basic"
    ):
        user, _, password = answer.partition(":")
        return AuthCredential.basic(user, password)
    return answer


def _check(found: AuthCredential, config: AuthConfig) -> None:
    """Refuse a credential no request could carry (a pasted newline), naming the scheme."""
    check_credential_text(found.secret, scheme_name=config.scheme_name, in_header=False)


def _by_subject(by_subject: Mapping[str, Mapping[str, AuthCredential | str]]) -> CredentialResolver:
    """A resolver finding a user's credential in a mapping by subject, then by scheme
    name."""

    async def by_subject_then_scheme(identity: Identity, config: AuthConfig) -> object:
        mine = by_subject.get(identity.subject)
        return None if mine is None else _given(mine, config)

    return by_subject_then_scheme


def _checked(given: object, source: str | None) -> dict[str, dict[str, AuthCredential | str]]:
    """``given`` as a mapping by subject of mappings by scheme name, each value a string
    or an `AuthCredential` (checked, never quoted)."""
    if not isinstance(given, Mapping):
        raise SpecError("must be a mapping of subjects to their credentials", source=source)
    made: dict[str, dict[str, AuthCredential | str]] = {}
    for subject, schemes in given.items():
        at = f"/{_escaped(str(subject))}"
        if not isinstance(subject, str) or not subject:
            raise SpecError("a subject must be a non-empty string", pointer=at, source=source)
        if not isinstance(schemes, Mapping):
            raise SpecError(
                "must be a mapping of security scheme names to credentials",
                pointer=at,
                source=source,
            )
        mine: dict[str, AuthCredential | str] = {}
        for scheme, value in schemes.items():
            where = f"{at}/{_escaped(str(scheme))}"
            if not isinstance(value, AuthCredential | str) or not value:
                kind = type(value).__name__ if value != "" else "an empty string"
                raise SpecError(
                    f"a credential must be a non-empty string, not {kind}",
                    pointer=where,
                    source=source,
                )
            mine[str(scheme)] = Secret(value) if isinstance(value, str) else value
        made[subject] = mine
    return made


def _escaped(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _parsed(text: str, source: str, *, toml: bool) -> dict[str, dict[str, AuthCredential | str]]:
    """The mapping in ``text`` (YAML or JSON; TOML when ``toml``), checked. A parser's
    message may quote the text, which holds secrets: it is never shown, only where."""
    if toml:
        import tomllib

        try:
            data: object = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:  # its message says where, never what
            raise SpecError(f"not TOML: {exc}", source=source) from None
    else:
        import yaml

        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" (line {mark.line + 1})" if mark is not None else ""
            raise SpecError(f"not YAML or JSON{where}", source=source) from None
    return _checked(data, source)


# --- token exchange --------------------------------------------------------------------


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
    does), and obtained once however many calls want one at the same time.

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
        client: The HTTP client to use (yours to close); by default one of its own,
            closed by `aclose` (the server does it when it stops).
        subject_token: Gives the caller's access token; by default the one the `mcp`
            SDK's authorization validated for the request being served.

    Raises:
        ValueError: neither or both of ``token_endpoint`` and ``issuer``, an endpoint
            that is not https (or http to a loopback address), an empty id or secret.
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
                _check_secure(url)
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
        self._own_client: httpx2.AsyncClient | None = None
        self._subject_token = subject_token or _callers_token
        self._tokens: OrderedDict[_Key, tuple[AuthCredential, float]] = OrderedDict()
        """By key: the token, and when it stops being used (monotonic seconds)."""
        self._locks: dict[_Key | str, anyio.Lock] = {}

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
        """Drop the token kept for ``identity`` and ``config`` (the API refused it)."""
        self._tokens.pop(self._key(identity, config), None)

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
        lock = self._lock(key)
        try:
            async with lock:
                found = self._kept(key)
                if found is None:
                    found = await self._exchanged(identity, config, key)
        finally:
            if not lock.statistics().tasks_waiting:
                self._locks.pop(key, None)
        return found

    async def _exchanged(self, identity: Identity, config: AuthConfig, key: _Key) -> AuthCredential:
        name = config.scheme_name
        subject_token = self._subject_token()
        if not subject_token:
            raise AuthError(
                f"This call needs the calling user's own credential for {name!r}, obtained "
                "for their access token, and the request came without one, so it did not run.",
                scheme_name=name,
            )
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
                endpoint = await self._endpoint(name)
                token = await self._request(endpoint, form, name, scopes)
        except TimeoutError:
            raise self._failed(name, f"no answer within {self._timeout:g} s") from None
        except ConnectionError as exc:
            raise self._failed(name, str(exc)) from exc
        except AuthError as exc:
            raise self._failed(name, str(exc)) from exc
        now = time.time()
        until = token.expires_at if token.expires_at is not None else now + DEFAULT_TOKEN_LIFETIME
        if identity.expires_at is not None:
            until = min(until, float(identity.expires_at))
        self._tokens[key] = (token, time.monotonic() + (until - now) - REFRESH_MARGIN)
        while len(self._tokens) > MAX_CACHED_TOKENS:
            self._tokens.popitem(last=False)
        return token

    @staticmethod
    def _failed(name: str, why: str) -> AuthError:
        logger.warning("token exchange for security scheme %r failed: %s", name, why)
        return AuthError(
            f"This user's credential for {name!r} could not be obtained by token exchange "
            f"({why}), so the call did not run.",
            scheme_name=name,
        )

    async def _http(self) -> httpx2.AsyncClient:
        if self._client is not None:
            return self._client
        if self._own_client is None:
            import httpx2

            self._own_client = httpx2.AsyncClient(timeout=self._timeout, trust_env=False)
        return self._own_client

    async def _endpoint(self, scheme_name: str) -> str:
        """The token endpoint: given, or discovered from the issuer's metadata (once)."""
        if self._token_endpoint is not None:
            return self._token_endpoint
        assert self._issuer is not None
        async with self._lock("discovery"):
            if self._token_endpoint is None:
                self._token_endpoint = await self._discover(self._issuer, scheme_name)
        return self._token_endpoint

    async def _discover(self, issuer: str, scheme_name: str) -> str:
        from toolsets.openapi._oauth import OIDC_SUFFIX, discover

        client = await self._http()
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
        _check_secure(endpoint)
        return endpoint

    async def _request(
        self, endpoint: str, form: dict[str, str], scheme_name: str, scopes: tuple[str, ...]
    ) -> AuthCredential:
        from toolsets.openapi._oauth import request_token

        token = await request_token(
            await self._http(),
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

    async def aclose(self) -> None:
        """Close the HTTP client of its own (a given one is left open); the tokens kept
        are dropped."""
        self._tokens.clear()
        client, self._own_client = self._own_client, None
        if client is not None:
            await client.aclose()


def _check_secure(url: str) -> None:
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


# --- what the server does with them ----------------------------------------------------


async def user_credential_result(
    credentials: UserCredentials, needed: CredentialNeeded, call: ToolContext
) -> AuthCredential | mt.CallToolResult:
    """The credential of the user calling (``call.identity``) for what the call needs, or
    the error result saying why there is none (``credential``: the scheme's name). A
    credential asked for while the call ran (``needed.actions``: the API refused the one
    given) is found again, and the same one again is an error."""
    from toolsets.mcp._convert import result_to_mcp

    config = needed.auth_config
    refused = call.auth_credential if needed.actions is not None else None
    try:
        return await credentials.credential(call.identity, config, refused=refused)
    except AuthError as exc:
        return result_to_mcp(error_result(str(exc), credential=config.scheme_name))
