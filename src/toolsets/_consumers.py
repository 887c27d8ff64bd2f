"""What every consumer of tools shares beyond the call path itself (the framework adapters,
the MCP server, the command line): taking a toolset or a list of tools, asking the user's
callbacks, and finding a credential in what the user gave."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, TypeVar

import anyio.to_thread

from toolsets._auth import AuthConfig, AuthCredential, credential_refused
from toolsets._context import ToolConfirmation, ToolContext
from toolsets._errors import ToolDefinitionError
from toolsets._invoke import (
    Callbacks,
    ConfirmationNeeded,
    CredentialNeeded,
    Done,
    LongRunning,
    Outcome,
    invoke,
)
from toolsets._settle import caller, settle
from toolsets._tool import Tool
from toolsets._toolset import StaticToolset, Toolset

_Stop = TypeVar("_Stop")

__all__ = [
    "CallsTools",
    "ask",
    "check_credentials",
    "credential_answer",
    "given_credential",
    "lookup_credential",
    "toolset_of",
]


async def ask(callback: Callable[..., Any], *args: Any) -> Any:
    """What the user's ``callback`` answers for ``args``: an async one is awaited; a sync
    one runs in a worker thread, so one that blocks (a prompt, ``input()``) never stops
    the event loop and every other call on it."""
    if inspect.iscoroutinefunction(callback):
        return await callback(*args)
    answer = await anyio.to_thread.run_sync(functools.partial(callback, *args))
    if inspect.isawaitable(answer):  # a sync function returning a coroutine
        answer = await answer
    return answer


def given_credential(
    credentials: Mapping[str, AuthCredential | str], config: AuthConfig
) -> AuthCredential | None:
    """The credential ``credentials`` holds for ``config``: under its `AuthConfig.key`
    (the scheme's name with the scopes it needs), else under the scheme's name.

    A string is the key or token itself, made the scheme's kind of credential (as
    `OpenApiToolset`'s ``credentials=`` takes it): an API key for ``apiKey``, a bearer
    token for ``http`` bearer, an access token for ``oauth2`` / ``openIdConnect``.

    Raises:
        AuthError: the value is neither an `AuthCredential` nor a string, or a string
            for a scheme that needs more (``http`` basic needs a user name too).
    """
    found = credentials.get(config.key)
    if found is None and config.key != config.scheme_name:
        found = credentials.get(config.scheme_name)
    if found is None or isinstance(found, AuthCredential):
        return found
    if not isinstance(found, str):
        raise credential_refused(
            config.scheme_name,
            f"is a {type(found).__name__}, not an AuthCredential or the key or token as a string",
        )
    kind = str(config.scheme.get("type", "")).lower()
    if kind == "apikey":
        return AuthCredential.api_key(found)
    if kind in ("oauth2", "openidconnect"):
        return AuthCredential.oauth2(found)
    if kind == "http" and str(config.scheme.get("scheme", "")).lower() == "bearer":
        return AuthCredential.bearer(found)
    raise credential_refused(
        config.scheme_name,
        f"is a string, which cannot stand for a {kind or 'typeless'} scheme's credential "
        "(give an AuthCredential, e.g. AuthCredential.basic(username, password))",
    )


def check_credentials(credentials: object) -> None:
    """Refuse, when an adapter is built, ``credentials=`` that no call could use.

    Raises:
        ToolDefinitionError: (``field="credentials"``) neither a mapping nor a function,
            or a mapping with a value that is neither an `AuthCredential` nor a string.
    """
    if credentials is None or callable(credentials):
        return
    if not isinstance(credentials, Mapping):
        raise ToolDefinitionError(
            f"credentials must be a mapping by security scheme name or a function, not a "
            f"{type(credentials).__name__}",
            field="credentials",
        )
    for name, value in credentials.items():
        if not isinstance(value, AuthCredential | str):
            raise ToolDefinitionError(
                f"the credential for {name!r} is a {type(value).__name__}, not an "
                "AuthCredential or the key or token as a string",
                field="credentials",
            )


def credential_answer(answer: object, config: AuthConfig) -> AuthCredential | None:
    """What a user's credentials function answered for ``config``, as a credential: None
    (it has none), an `AuthCredential`, or the key or token as a string (see
    `given_credential`).

    Raises:
        AuthError: anything else, naming the scheme.
    """
    if answer is None or isinstance(answer, AuthCredential):
        return answer
    return given_credential({config.key: answer}, config)  # type: ignore[dict-item]


async def lookup_credential(
    credentials: Mapping[str, AuthCredential | str] | Callable[..., Any] | None,
    config: AuthConfig,
    *context: Any,
) -> AuthCredential | None:
    """The credential the user's ``credentials=`` gives for ``config``: from a mapping
    (`given_credential`), or the answer of a function called with the framework's
    ``context`` and then ``config`` (`ask`: a sync one in a worker thread); None when it
    has none."""
    if credentials is None:
        return None
    if isinstance(credentials, Mapping):
        return given_credential(credentials, config)
    return credential_answer(await ask(credentials, *context, config), config)


class CallsTools:
    """What an adapter's options object mixes in to call a tool through the one call
    path with its ``default_timeout`` and ``callbacks``, and the caller's scopes."""

    default_timeout: float
    callbacks: Callbacks

    def invoke(
        self,
        tool: Tool,
        args: Mapping[str, Any],
        ctx: ToolContext,
        *,
        confirmation: ToolConfirmation | None = None,
        credential: AuthCredential | None = None,
        resumed: bool = False,
        callbacks: Callbacks | None = None,
    ) -> Awaitable[Outcome]:
        """The call through the one call path (see `toolsets._invoke.invoke`), with
        ``callbacks`` for this call in place of the caller's own."""
        return invoke(
            tool,
            args,
            ctx,
            default_timeout=self.default_timeout,
            callbacks=self.callbacks if callbacks is None else callbacks,
            scopes=ctx.scopes,
            confirmation=confirmation,
            credential=credential,
            resumed=resumed,
        )

    def settle(
        self,
        tool: Tool,
        first: Outcome,
        ctx: ToolContext,
        *,
        confirm: Callable[[ConfirmationNeeded], Awaitable[ToolConfirmation | _Stop | None]] | None,
        lookup: Callable[[CredentialNeeded], Awaitable[AuthCredential | _Stop | None]] | None,
        confirmation: ToolConfirmation | None = None,
        credential: AuthCredential | None = None,
    ) -> Awaitable[Done | LongRunning | _Stop]:
        """The call whose outcome so far is ``first`` settled (see
        `toolsets._settle.settle`), each round called through `invoke` here."""

        resume = caller(
            tool,
            ctx,
            default_timeout=self.default_timeout,
            callbacks=self.callbacks,
            scopes=ctx.scopes,
        )
        return settle(
            first,
            resume=resume,
            confirm=confirm,
            lookup=lookup,
            confirmation=confirmation,
            credential=credential,
        )


def toolset_of(given: object) -> Toolset:
    """What an adapter is given, as a toolset: a `Toolset` as it is; tools and plain
    functions in a `StaticToolset`.

    Raises:
        ToolDefinitionError: neither (``.field`` is ``"toolset"``), or an item that is
            not a tool or a function (``.field`` names it).
    """
    if isinstance(given, Toolset):
        return given
    if isinstance(given, Iterable) and not isinstance(given, str | bytes | Mapping):
        return StaticToolset(given)  # each item made a tool, or refused naming why
    raise ToolDefinitionError(
        f"expected a toolset, or a list of tools and functions, not a {type(given).__name__}",
        field="toolset",
    )
