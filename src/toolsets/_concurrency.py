"""Running awaitables with anyio: side by side (without leaking exception groups), under a
deadline, and as a task of their own; work over many items in a worker thread; and the
one rule for a timeout's value."""

from __future__ import annotations

import contextvars
import math
import sys
import threading
import time
import types
import weakref
from collections.abc import Awaitable, Callable, Coroutine, Generator, Sequence
from typing import Any, Generic, TypeVar

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread

__all__ = [
    "FEW_ITEMS",
    "LoopLocks",
    "Ready",
    "call_soon",
    "check_timeout",
    "each_in_thread",
    "gather",
    "start_detached",
    "with_deadline",
]

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)
R = TypeVar("R")

FEW_ITEMS = 64
"""At most this many items, `each_in_thread` works on the event loop: a trip to a worker
thread and back costs more than a few small items (a tool's declaration made into an MCP
listing, say) take on the loop."""


class Ready(Generic[T_co]):
    """An awaitable whose value is known already: awaiting it never waits.

    What a tool's ``run`` returns for a call it finished at once (a plain function's);
    the call path hands on the value without a cancel scope, since nothing that never
    waits can be interrupted, and the scope would cost more than such a call.
    """

    __slots__ = ("value",)

    def __init__(self, value: T_co) -> None:
        self.value = value
        """The result."""

    def __await__(self) -> Generator[Any, Any, T_co]:
        yield from ()  # a generator that returns at once
        return self.value


class LoopLocks:
    """One anyio lock per running event loop, for an object that may be used from several
    (a portal thread's and the caller's, one ``anyio.run`` after another): an anyio lock
    belongs to the loop, even the backend, that first waited on it. Call it for the
    running loop's lock; the loops are held weakly."""

    def __init__(self) -> None:
        self._locks: weakref.WeakKeyDictionary[object, anyio.Lock] = weakref.WeakKeyDictionary()
        self._guard = threading.Lock()  # never held across an await

    def __call__(self) -> anyio.Lock:
        native = anyio.lowlevel.current_token().native_token
        with self._guard:
            return self._locks.setdefault(native, anyio.Lock())


def check_timeout(value: object, what: str = "timeout") -> float:
    """``value`` as seconds, if it is a finite number above zero: the one rule for every
    timeout toolsets takes (None, zero, a negative number, infinity and NaN are refused;
    an unbounded wait is never what a timeout is for).

    Raises:
        ValueError: naming ``what`` (e.g. ``"connect_timeout"``) and the value. A
            ValueError, as Python raises for an argument of the right type and a wrong
            value: the caller's bug, not a fault of a tool or server.
    """
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ValueError(f"{what} must be a positive, finite number of seconds, got {value!r}")
    return float(value)


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


async def each_in_thread(make: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """``make(item)`` for each of ``items``, in order: in one worker thread when there
    are more than `FEW_ITEMS` (building a huge catalogue's declarations on demand takes
    a while: the event loop goes on meanwhile), else here.

    The thread takes one of anyio's default worker threads (their number is bounded).
    A cancelled caller stops it before its next item and waits for that (no thread goes
    on working for no one); what it made is then lost to the caller, so ``make`` must
    leave nothing half done, and may be called from any thread (it runs in a copy of
    the caller's context).
    """
    if len(items) <= FEW_ITEMS:
        return [make(item) for item in items]

    def each() -> list[R]:
        made: list[R] = []
        for item in items:
            anyio.from_thread.check_cancelled()
            made.append(make(item))
        return made

    return await anyio.to_thread.run_sync(each)


async def with_deadline(call: Awaitable[T], seconds: float) -> tuple[T | None, bool]:
    """Await ``call`` for at most ``seconds``: its result and False, or None and True when
    the time ran out (``call`` was cancelled then, as often as it waited, as anyio does).

    The cancel scope is entered before ``call`` starts, so the scopes ``call`` opens nest
    inside it (and its shields hold); its deadline is armed only when ``call`` first
    waits, less the time already spent. A call that finishes without waiting (a plain
    function's tool, an answer from a cache) never arms it: a deadline can only interrupt
    a wait, and arming the timer costs about as much as such a call. So, until the first
    wait, ``anyio.current_effective_deadline()`` does not show this deadline yet.
    """
    started = time.perf_counter()
    steps = call.__await__()
    with anyio.CancelScope() as scope:
        try:
            waiting_on = steps.send(None)
        except StopIteration as done:
            result: T = done.value
            return result, False
        scope.deadline = anyio.current_time() + seconds - (time.perf_counter() - started)
        result = await _go_on(steps, waiting_on)
    if scope.cancelled_caught:
        return None, True
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


def start_detached(fn: Callable[[], Coroutine[Any, Any, None]], *, name: str) -> object:
    """Start ``fn()`` in the running event loop as a task that is no task's child, in a
    copy of the caller's context; return what keeps it alive, to be held until it ends.

    For a task that must outlive the scope it was started from without holding a cancel
    scope across that scope's suspensions — the host of a run's background calls, which
    an async generator drives (`toolsets.agent`). anyio starts no such task, so this asks
    the loop itself: asyncio's ``create_task`` (which holds tasks weakly: hence the
    handle) or trio's system tasks. ``fn`` must not raise: nothing waits for its outcome
    (trio ends the whole run on a system task's error); the event loop cancels it when
    it shuts down.
    """
    native = anyio.lowlevel.current_token().native_token
    context = contextvars.copy_context()
    create_task = getattr(native, "create_task", None)
    if create_task is not None:  # asyncio: the token is the running loop
        return create_task(fn(), name=name, context=context)
    # The only other loop anyio runs on; it is running, so trio is imported (and no
    # dependency of ours).
    trio = sys.modules["trio"]
    return trio.lowlevel.spawn_system_task(fn, name=name, context=context)


def call_soon(loop: anyio.lowlevel.EventLoopToken, fn: Callable[[], object]) -> bool:
    """Have the event loop of ``loop`` call ``fn`` soon, from any thread (the loop's own
    included), without waiting for it; False when that loop has ended.

    For waking a task of one event loop from another's (anyio's `from_thread.run_sync`
    would block the caller until the other loop ran ``fn``): asyncio's
    ``call_soon_threadsafe`` or trio's ``run_sync_soon``. ``fn`` runs in no task: it
    may set an `anyio.Event`, and must not raise.
    """
    native = loop.native_token
    call_soon_threadsafe = getattr(native, "call_soon_threadsafe", None)
    if call_soon_threadsafe is not None:  # asyncio: the token is the loop
        try:
            call_soon_threadsafe(fn)
        except RuntimeError:  # the loop is closed
            return False
        return True
    trio = sys.modules["trio"]  # the only other loop anyio runs on: imported
    try:
        native.run_sync_soon(fn)  # type: ignore[attr-defined]
    except trio.RunFinishedError:
        return False
    return True
