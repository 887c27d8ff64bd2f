"""smolagents: one call of ``noop(x=1)`` through a smolagents tool, native and ours.

Native is smolagents' own ``@tool`` function; ours is `to_smolagents` over a toolsets
`FunctionTool` of the same function. Both are called as a ``ToolCallingAgent`` calls a
tool the model asked for: ``agent.execute_tool_call(name, {"x": 1})``, which checks the
arguments against the tool's ``inputs`` and calls ``tool(x=1, sanitize_inputs_outputs=True)``
(``Tool.__call__``, then ``forward``). smolagents is synchronous, so each call is wrapped
in an ``async def``. The FunctionTool is made with
``run_in_thread=False``, as smolagents runs its own function tools: in the caller's
thread (the adapter's fast path, with no hop to its event loop's thread).
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable

import anyio.to_thread
from smolagents import ToolCallingAgent, tool  # type: ignore[import-untyped]
from smolagents.models import Model  # type: ignore[import-untyped]

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

    # The model is never asked: only the agent's tool-call entry point is measured.
    agent = ToolCallingAgent(tools=[native_noop, ours_tool], model=Model(model_id="none"))
    native_name, ours_name = native_noop.name, ours_tool.name

    async def native() -> object:
        return agent.execute_tool_call(native_name, {"x": 1})

    async def ours() -> object:
        return agent.execute_tool_call(ours_name, {"x": 1})

    return native, ours
