"""Running awaitables side by side with anyio, without leaking exception groups."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

import anyio

__all__ = ["gather"]

T = TypeVar("T")


async def gather(calls: Sequence[Callable[[], Awaitable[T]]]) -> list[T]:
    """Run ``calls`` concurrently; return their results in order.

    When one call fails the others are cancelled (anyio's task-group semantics), and
    that one exception is raised as itself rather than wrapped in an exception group, so
    callers can catch the library's own errors directly. Several simultaneous failures
    are raised as the group.
    """
    # A task group costs more than most calls it would run: none is needed for 0 or 1.
    if not calls:
        return []
    if len(calls) == 1:
        return [await calls[0]()]
    results: list[T | None] = [None] * len(calls)

    async def run(index: int, call: Callable[[], Awaitable[T]]) -> None:
        results[index] = await call()

    try:
        async with anyio.create_task_group() as tg:
            for index, call in enumerate(calls):
                tg.start_soon(run, index, call)
    except BaseExceptionGroup as group:
        if len(group.exceptions) == 1:
            raise group.exceptions[0] from None
        raise
    return results  # type: ignore[return-value]  # every slot was filled
