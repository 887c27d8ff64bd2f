"""What the framework adapters share: asking the user's callbacks, and finding a
credential in what the user gave."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any

import anyio.to_thread

from toolsets._auth import AuthConfig, AuthCredential, credential_refused
from toolsets._errors import ToolDefinitionError

__all__ = ["ask", "check_credentials", "given_credential"]


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
