"""Each user's own credential for the upstream API: `UserCredentials`, given to
`McpServer` as its ``credentials``, answers a tool that asks for a credential (its
``auth_config``: an OpenAPI operation's security scheme the toolset holds none for) with
the one of the user calling, as the server's authorization identified them
(`ToolContext.identity`): found by a resolver of the operator's, in a mapping by subject
(a file, the environment), or obtained by OAuth 2.0 token exchange for the caller's own
access token (`TokenExchange`, in ``_exchange``).

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
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from toolsets._auth import AuthConfig, AuthCredential, Secret, check_credential_text
from toolsets._consumers import ask, credential_answer
from toolsets._context import Identity, ToolContext
from toolsets._errors import AuthError, SpecError
from toolsets._invoke import CredentialNeeded
from toolsets._results import error_result
from toolsets.mcp.server._request import CredentialsFor

if TYPE_CHECKING:
    import mcp.types as mt

__all__ = [
    "USER_CREDENTIALS_ENV",
    "CredentialResolver",
    "ServerCredentials",
    "UserCredentials",
    "user_credential_result",
]

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

    def __repr__(self) -> str:
        fallback = ", with a fallback" if self._fallback is not None else ""
        return f"UserCredentials({self._resolve_with!r}{fallback})"


ServerCredentials: TypeAlias = (
    Mapping[str, AuthCredential | str] | CredentialsFor | UserCredentials | None
)
"""What `McpServer` takes as ``credentials``: one credential for each security scheme
(by name), a function of the request finding one (`CredentialsFor`), or each calling
user's own (`UserCredentials`); None: none."""


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
