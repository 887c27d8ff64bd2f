from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest

from toolsets._concurrency import gather

pytestmark = pytest.mark.anyio


async def test_gather_returns_results_in_call_order() -> None:
    async def after(delay: float, value: int) -> int:
        await anyio.sleep(delay)
        return value

    with anyio.fail_after(5):
        assert await gather([lambda: after(0.02, 1), lambda: after(0, 2)]) == [1, 2]


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
