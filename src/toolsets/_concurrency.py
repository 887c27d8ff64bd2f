"""Running awaitables side by side with anyio, without leaking exception groups."""

from __future__ import annotations

import asyncio  # noqa: TID251  # only on the asyncio backend, for its timeout (see with_deadline)
import time
import types
from collections.abc import Awaitable, Callable, Generator, Sequence
from typing import Any, TypeVar

import anyio

__all__ = ["gather", "with_deadline"]

T = TypeVar("T")

try:
    import sniffio
except ImportError:  # pragma: no cover - trio depends on sniffio: without it, asyncio runs
    sniffio = None  # type: ignore[assignment]


def _on_asyncio() -> bool:
    """Whether the running backend is asyncio (sniffio's answer, as anyio's own)."""
    return sniffio is None or sniffio.current_async_library() == "asyncio"


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
            # A task per call but the first, which this task runs itself meanwhile; a
            # name given saves anyio working one out for each task.
            for index in range(1, len(calls)):
                tg.start_soon(run, index, calls[index], name="toolsets.gather")
            await run(0, calls[0])
    except BaseExceptionGroup as group:
        if len(group.exceptions) == 1:
            raise group.exceptions[0] from None
        raise
    return results  # type: ignore[return-value]  # every slot was filled


async def with_deadline(call: Awaitable[T], seconds: float) -> tuple[T | None, bool]:
    """Await ``call`` for at most ``seconds``: its result and False, or None and True when
    the time ran out (``call`` was cancelled then).

    A call that finishes without ever waiting (a plain function's tool, an answer from a
    cache) is run without arming a timer, which costs about as much as such a call: a
    deadline can only interrupt a wait. When ``call`` first waits, the deadline is set,
    less the time already spent:

    - on asyncio, with asyncio's own timeout, which works on the task rather than on a
      stack of scopes, so it can start after ``call`` has opened scopes of its own;
    - on other backends (trio), with an anyio cancel scope, entered before ``call``
      starts so that the scopes ``call`` opens nest inside it.
    """
    started = time.perf_counter()
    steps = call.__await__()
    if not _on_asyncio():
        with anyio.CancelScope() as scope:
            try:
                waiting_on = steps.send(None)
            except StopIteration as done:
                result: T = done.value
                return result, False
            scope.deadline = anyio.current_time() + seconds - (time.perf_counter() - started)
            result = await _go_on(steps, waiting_on)
        return (None, True) if scope.cancelled_caught else (result, False)

    try:
        waiting_on = steps.send(None)
    except StopIteration as done:
        result = done.value
        return result, False
    timer = asyncio.timeout(seconds - (time.perf_counter() - started))
    try:
        async with timer:
            result = await _go_on(steps, waiting_on)
    except TimeoutError:
        if timer.expired():
            return None, True
        raise  # the call's own
    return result, False


@types.coroutine
def _go_on(steps: Generator[Any, Any, T], waiting_on: Any) -> Generator[Any, Any, T]:
    """The rest of an awaitable already started and now waiting on ``waiting_on``: what
    it waits on goes up to the event loop, what the loop sends or throws comes back down
    (``yield from`` would start it again instead)."""
    while True:
        try:
            answer = yield waiting_on
        except GeneratorExit:
            steps.close()
            raise
        except BaseException as error:
            try:
                waiting_on = steps.throw(error)
            except StopIteration as done:
                result: T = done.value
                return result
        else:
            try:
                waiting_on = steps.send(answer)
            except StopIteration as done:
                result = done.value
                return result
