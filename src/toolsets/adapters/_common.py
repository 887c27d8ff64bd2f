"""What the framework adapters share: asking the user's callbacks, and finding a
credential in what the user gave."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any

import anyio.to_thread

from toolsets._auth import AuthConfig, AuthCredential

__all__ = ["ask", "given_credential"]


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
    credentials: Mapping[str, AuthCredential], config: AuthConfig
) -> AuthCredential | None:
    """The credential ``credentials`` holds for ``config``: under its `AuthConfig.key`
    (the scheme's name with the scopes it needs), else under the scheme's name."""
    found = credentials.get(config.key)
    if found is None and config.key != config.scheme_name:
        found = credentials.get(config.scheme_name)
    return found
