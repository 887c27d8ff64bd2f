from __future__ import annotations

import threading
import time

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
import pytest

from tests.helpers import on_a_virtual_clock
from toolsets._concurrency import FEW_ITEMS, call_soon, each_in_thread, gather, with_deadline

pytestmark = pytest.mark.anyio


async def test_gather_runs_the_calls_at_once_and_returns_results_in_call_order() -> None:
    # The first call finishes only after the second has run: run one after the other,
    # they would deadlock (and fail_after would end the test).
    second_ran = anyio.Event()
    finished: list[int] = []

    async def first() -> int:
        await second_ran.wait()
        finished.append(1)
        return 1

    async def second() -> int:
        second_ran.set()
        finished.append(2)
        return 2

    with anyio.fail_after(5):
        assert await gather([first, second]) == [1, 2]
    assert finished == [2, 1]


async def test_one_failure_is_raised_as_itself_and_cancels_the_rest() -> None:
    cancelled = False

    async def slow() -> int:
        nonlocal cancelled
        try:
            await anyio.sleep(10)
        except anyio.get_cancelled_exc_class():
            cancelled = True
            raise
        return 0

    async def fail() -> int:
        await anyio.lowlevel.checkpoint()
        raise KeyError("bad")

    with anyio.fail_after(5), pytest.raises(KeyError):
        await gather([slow, fail])
    assert cancelled


async def test_simultaneous_failures_are_raised_together() -> None:
    async def fail(message: str) -> int:
        raise ValueError(message)

    with pytest.raises(ExceptionGroup) as info:
        await gather([lambda: fail("a"), lambda: fail("b")])
    assert sorted(str(e) for e in info.value.exceptions) == ["a", "b"]


async def test_gather_of_nothing_is_empty() -> None:
    assert await gather([]) == []


# --- with_deadline -------------------------------------------------------------------------


async def hang_until_cancelled(cleaned_up: anyio.Event) -> int:
    """Never returns; sets ``cleaned_up`` on the way out."""
    try:
        await anyio.sleep_forever()
    finally:
        cleaned_up.set()
    return 0  # pragma: no cover


async def test_a_call_that_never_waits_returns_its_result_without_a_deadline() -> None:
    async def at_once() -> int:
        return 7

    assert await with_deadline(at_once(), 0.001) == (7, False)


async def test_a_call_that_waits_past_its_deadline_is_cancelled() -> None:
    cleaned_up = anyio.Event()

    with anyio.fail_after(5):
        assert await with_deadline(hang_until_cancelled(cleaned_up), 0.05) == (None, True)
    assert cleaned_up.is_set()


async def test_a_call_that_waits_and_finishes_in_time_returns_its_result() -> None:
    async def twice() -> str:
        await anyio.lowlevel.checkpoint()
        await anyio.sleep(0.01)
        return "done"

    with anyio.fail_after(5):
        assert await with_deadline(twice(), 5) == ("done", False)


async def test_scopes_the_call_opens_before_it_first_waits_nest_inside_the_deadline() -> None:
    # A task group and a cancel scope opened in the call's first step, before it waits:
    # the deadline must still cancel it, and every scope must close in order.
    children_cancelled = 0

    async def child() -> None:
        nonlocal children_cancelled
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            children_cancelled += 1
            raise

    async def busy() -> int:
        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                tg.start_soon(child)
                tg.start_soon(child)
                await anyio.sleep_forever()
        return 0  # pragma: no cover

    with anyio.fail_after(5):
        assert await with_deadline(busy(), 0.05) == (None, True)
    assert children_cancelled == 2


async def test_the_calls_own_timeout_is_its_own_error_not_the_deadline() -> None:
    async def own_timeout() -> int:
        with anyio.fail_after(0.01):
            await anyio.sleep_forever()
        return 0  # pragma: no cover

    with anyio.fail_after(5), pytest.raises(TimeoutError):
        await with_deadline(own_timeout(), 30)


async def test_time_spent_before_the_first_wait_counts_against_the_deadline() -> None:
    # What is left of the deadline once it is armed (at the first wait) is read, not how
    # long the call took: 0.2 s of the 1 s went before the first wait, so at most 0.8 s
    # are left, however slow the machine (a deadline armed in full would leave nearly 1).
    left: list[float] = []

    async def slow_start() -> int:
        time.sleep(0.2)  # noqa: ASYNC251  # on purpose: work done before the first wait
        await anyio.lowlevel.checkpoint()
        left.append(anyio.current_effective_deadline() - anyio.current_time())
        return 1

    with anyio.fail_after(5):
        assert await with_deadline(slow_start(), 1.0) == (1, False)
    assert left[0] <= 0.8


@on_a_virtual_clock()
async def test_the_deadline_ends_the_call_when_it_is_due_not_before_nor_after() -> None:
    cleaned_up = anyio.Event()
    with anyio.fail_after(5):
        started = anyio.current_time()
        assert await with_deadline(hang_until_cancelled(cleaned_up), 0.25) == (None, True)
    # Never after: virtual time jumps straight to the deadline. The real time the call
    # took before its first wait (microseconds, more on a loaded machine) is taken off.
    assert 0.15 <= anyio.current_time() - started <= 0.25


async def test_errors_from_either_side_of_the_first_wait_propagate() -> None:
    async def early() -> int:
        raise KeyError("early")

    async def late() -> int:
        await anyio.lowlevel.checkpoint()
        raise KeyError("late")

    with pytest.raises(KeyError, match="early"):
        await with_deadline(early(), 5)
    with anyio.fail_after(5), pytest.raises(KeyError, match="late"):
        await with_deadline(late(), 5)


async def test_cancelling_the_caller_cancels_the_call_and_is_not_a_timeout() -> None:
    cleaned_up = anyio.Event()
    outcome: list[object] = []

    async def caller() -> None:
        result = await with_deadline(hang_until_cancelled(cleaned_up), 30)
        outcome.append(result)  # pragma: no cover

    with anyio.fail_after(5):
        with anyio.move_on_after(0.05) as scope:
            await caller()
    assert scope.cancelled_caught
    assert cleaned_up.is_set()
    assert outcome == []


async def test_values_sent_and_errors_thrown_reach_the_waiting_call() -> None:
    # The call waits on an event set by another task (the loop sends it the wake-up),
    # then is cancelled at its next wait by the caller (the loop throws the cancellation
    # in): events order it all, no deadline has to fall in between.
    ready, asleep = anyio.Event(), anyio.Event()
    seen: list[str] = []

    async def waiter() -> int:
        await ready.wait()
        seen.append("woken")
        asleep.set()
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            seen.append("cancelled")
            raise
        return 0  # pragma: no cover

    async def caller(scope: anyio.CancelScope) -> None:
        with scope:
            await with_deadline(waiter(), 30)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            scope = anyio.CancelScope()
            tg.start_soon(caller, scope)
            ready.set()
            await asleep.wait()
            scope.cancel()
    assert seen == ["woken", "cancelled"]
    assert scope.cancelled_caught


async def test_a_shielded_section_of_the_call_finishes_despite_the_deadline() -> None:
    committed: list[str] = []

    async def commit() -> str:
        with anyio.CancelScope(shield=True):
            await anyio.sleep(0.2)
            committed.append("shielded")
        await anyio.sleep_forever()
        return "never"  # pragma: no cover

    with anyio.fail_after(5):
        assert await with_deadline(commit(), 0.05) == (None, True)
    assert committed == ["shielded"]


async def test_a_worker_thread_is_waited_for_even_past_the_deadline() -> None:
    # The thread ends only once the deadline has passed (a task that sleeps until it says
    # so): its result is still what the call returns.
    armed = anyio.Event()
    deadlines: list[float] = []
    past_deadline = threading.Event()

    def blocking() -> str:
        assert past_deadline.wait(5)
        return "rows"

    async def query() -> str:
        await anyio.lowlevel.checkpoint()  # the first wait: the deadline is armed now
        deadlines.append(anyio.current_effective_deadline())
        armed.set()
        return await anyio.to_thread.run_sync(blocking)  # anyio shields this wait

    async def announce_the_deadline() -> None:
        await armed.wait()
        await anyio.sleep_until(deadlines[0])
        past_deadline.set()

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(announce_the_deadline)
            assert await with_deadline(query(), 0.05) == ("rows", False)
    assert anyio.current_time() >= deadlines[0]


async def test_a_call_that_swallows_its_cancellation_is_cancelled_again_at_its_next_wait() -> None:
    waits: list[str] = []

    async def stubborn() -> str:
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            waits.append("swallowed")
        await anyio.sleep(5)
        return "late"  # pragma: no cover

    with anyio.fail_after(3):
        assert await with_deadline(stubborn(), 0.05) == (None, True)
    assert waits == ["swallowed"]


async def test_call_soon_from_another_thread_wakes_a_task_without_waiting_for_it() -> None:
    woken = anyio.Event()
    loop = anyio.lowlevel.current_token()
    # The thread returns without the loop having run anything: it only queued the call.
    assert await anyio.to_thread.run_sync(call_soon, loop, woken.set)
    with anyio.fail_after(5):
        await woken.wait()


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_call_soon_in_an_event_loop_that_has_ended_says_so(backend: str) -> None:
    async def token() -> anyio.lowlevel.EventLoopToken:
        return anyio.lowlevel.current_token()

    ended = anyio.run(token, backend=backend)
    assert call_soon(ended, lambda: None) is False


# --- each_in_thread ----------------------------------------------------------------------


async def test_a_few_items_are_made_on_the_event_loop_and_many_in_one_worker_thread() -> None:
    loop = threading.get_ident()
    threads: list[int] = []

    def make(item: int) -> int:
        threads.append(threading.get_ident())
        return item * 2

    few = await each_in_thread(make, range(FEW_ITEMS))
    assert few == [item * 2 for item in range(FEW_ITEMS)]
    assert set(threads) == {loop}

    threads.clear()
    many = await each_in_thread(make, range(FEW_ITEMS + 1))
    assert many == [item * 2 for item in range(FEW_ITEMS + 1)]
    assert len(set(threads)) == 1
    assert threads[0] != loop


async def test_a_cancelled_caller_stops_the_worker_thread_before_its_next_item() -> None:
    made: list[int] = []
    with anyio.CancelScope() as scope:

        def make(item: int) -> int:
            made.append(item)
            if item == 10:  # the caller is cancelled while this item is made
                anyio.from_thread.run_sync(scope.cancel)
            return item

        with anyio.fail_after(10):
            await each_in_thread(make, range(FEW_ITEMS * 4))
    assert scope.cancelled_caught
    assert made == list(range(11))  # and the thread has ended: nothing is made later
