"""LangChain: one call of ``noop(x=1)`` through a LangChain tool, native and ours.

Native is LangChain's own ``@tool`` function; ours is `to_langchain` over a toolsets
`FunctionTool` of the same function. Both are called as LangGraph's ``ToolNode`` calls a
tool: ``await tool.ainvoke(tool_call)`` with a tool call dict, which returns a
``ToolMessage``. LangChain runs a sync function's async call in a worker thread, and so
does the `FunctionTool` (its default): both sides hop to a thread once. LangChain's async
path needs asyncio.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable

from langchain_core.tools import tool

from toolsets import FunctionTool
from toolsets.adapters.langchain import to_langchain


def noop(x: int) -> int:
    """Return x.

    Args:
        x: A number.
    """
    return x


native_noop = tool(noop)
CALL = {"type": "tool_call", "id": "call-1", "name": "noop", "args": {"x": 1}}


async def pair(
    stack: contextlib.AsyncExitStack,
) -> tuple[Callable[[], Awaitable[object]], Callable[[], Awaitable[object]]]:
    """``(native, ours)``: one call each of ``noop(x=1)`` as a LangChain tool call."""
    del stack  # a list of tools holds nothing to close
    (ours_tool,) = await to_langchain([FunctionTool(noop)])

    async def native() -> object:
        return await native_noop.ainvoke(dict(CALL))

    async def ours() -> object:
        return await ours_tool.ainvoke(dict(CALL))

    return native, ours
