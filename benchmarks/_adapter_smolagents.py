"""smolagents: one call of ``noop(x=1)`` through a smolagents tool, native and ours.

Native is smolagents' own ``@tool`` function; ours is `to_smolagents` over a toolsets
`FunctionTool` of the same function. Both are called as smolagents' agents call a tool,
``tool(x=1)`` (``Tool.__call__``, which calls ``forward``). smolagents is synchronous,
so each call is wrapped in an ``async def``. The FunctionTool is made with
``run_in_thread=False``, as smolagents runs its own function tools: in the caller's
thread (the adapter's fast path, with no hop to its event loop's thread).
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable

import anyio.to_thread
from smolagents import tool  # type: ignore[import-untyped]

from toolsets import FunctionTool
from toolsets.adapters.smolagents import to_smolagents


def noop(x: int) -> int:
    """Return x.

    Args:
        x: A number.
    """
    return x


@tool  # type: ignore[untyped-decorator]
def native_noop(x: int) -> int:
    """Return x.

    Args:
        x: A number.
    """
    return x


async def pair(
    stack: contextlib.AsyncExitStack,
) -> tuple[Callable[[], Awaitable[object]], Callable[[], Awaitable[object]]]:
    """``(native, ours)``: one call each of ``noop(x=1)`` as a smolagents tool."""
    adapter = to_smolagents([FunctionTool(noop, run_in_thread=False)])
    (ours_tool,) = await anyio.to_thread.run_sync(adapter.open)
    stack.push_async_callback(anyio.to_thread.run_sync, adapter.close)

    async def native() -> object:
        return native_noop(x=1)

    async def ours() -> object:
        return ours_tool(x=1)

    return native, ours
