"""OpenAI Agents SDK: one call of ``noop(x=1)`` through an openai-agents function tool,
native and ours.

Native is openai-agents' own ``@function_tool`` function; ours is `to_openai_agents` over
a toolsets `FunctionTool` of the same function. Both are called as openai-agents' runner
calls a function tool: ``await tool.on_invoke_tool(ToolContext(...), '{"x": 1}')``, with
the call's JSON arguments text. openai-agents runs a sync function in a worker thread
(``asyncio.to_thread``), and so does the `FunctionTool` (its default, with anyio's worker
threads): both sides hop to a thread once; ``thread_pair`` measures the two hops alone.
``waiting_pair``: an async function that waits once, unbounded natively, under the
call's deadline in ours. openai-agents needs asyncio.
"""

from __future__ import annotations

import asyncio  # noqa: TID251  # the peer's own way to a thread, measured
import contextlib
from collections.abc import Awaitable, Callable

import anyio.lowlevel
import anyio.to_thread
from agents import function_tool
from agents.tool_context import ToolContext

from toolsets import FunctionTool
from toolsets.adapters.openai_agents import to_openai_agents


def noop(x: int) -> int:
    """Return x.

    Args:
        x: A number.
    """
    return x


native_noop = function_tool(noop)


async def async_noop(x: int) -> int:
    """Return x.

    Args:
        x: A number.
    """
    return x


# openai-agents bounds only an async handler by a timeout: both sides call this one.
bounded_noop = function_tool(async_noop, timeout=60.0)
ARGUMENTS = '{"x": 1}'


async def noop_waits(x: int) -> int:
    """Return x, after letting the event loop run once.

    Args:
        x: A number.
    """
    await anyio.lowlevel.checkpoint()
    return x


native_noop_waits = function_tool(noop_waits)


def _context() -> ToolContext[None]:
    return ToolContext(
        context=None, tool_name="noop", tool_call_id="call-1", tool_arguments=ARGUMENTS
    )


async def pair(
    stack: contextlib.AsyncExitStack,
) -> tuple[Callable[[], Awaitable[object]], Callable[[], Awaitable[object]]]:
    """``(native, ours)``: one call each of ``noop(x=1)`` as an openai-agents tool call."""
    del stack  # a list of tools holds nothing to close
    (ours_tool,) = await to_openai_agents([FunctionTool(noop)])

    async def native() -> object:
        return await native_noop.on_invoke_tool(_context(), ARGUMENTS)

    async def ours() -> object:
        return await ours_tool.on_invoke_tool(_context(), ARGUMENTS)

    return native, ours


async def bounded_pair(
    stack: contextlib.AsyncExitStack,
) -> tuple[Callable[[], Awaitable[object]], Callable[[], Awaitable[object]]]:
    """As `pair`, with openai-agents' tool bounded by a timeout as ours always is
    (toolsets' default, 60 s): the like-for-like comparison of two bounded calls."""
    del stack
    (ours_tool,) = await to_openai_agents([FunctionTool(async_noop, name="noop")])

    async def native() -> object:
        return await bounded_noop.on_invoke_tool(_context(), ARGUMENTS)

    async def ours() -> object:
        return await ours_tool.on_invoke_tool(_context(), ARGUMENTS)

    return native, ours


async def waiting_pair(
    stack: contextlib.AsyncExitStack,
) -> tuple[Callable[[], Awaitable[object]], Callable[[], Awaitable[object]]]:
    """``(native, ours)``: an async function that waits once (natively unbounded)."""
    del stack
    (ours_tool,) = await to_openai_agents([FunctionTool(noop_waits)])

    async def native() -> object:
        return await native_noop_waits.on_invoke_tool(_context(), ARGUMENTS)

    async def ours() -> object:
        return await ours_tool.on_invoke_tool(_context(), ARGUMENTS)

    return native, ours


async def thread_pair(
    stack: contextlib.AsyncExitStack,
) -> tuple[Callable[[], Awaitable[object]], Callable[[], Awaitable[object]]]:
    """``(native, ours)``: the hop to a worker thread alone, as each side's sync function
    tool takes it: ``asyncio.to_thread`` (openai-agents) and anyio's worker thread (a
    `FunctionTool`: its threads serve ``anyio.from_thread`` and share anyio's capacity
    limiter, and the hop checks for cancellation first)."""
    del stack

    async def native() -> object:
        return await asyncio.to_thread(noop, 1)

    async def ours() -> object:
        return await anyio.to_thread.run_sync(noop, 1, abandon_on_cancel=True)

    return native, ours
