"""pydantic-ai's side of benchmarks/adapters.py: one tool call through the entry its agent
uses, pydantic-ai's own tool against ours through `toolsets.adapters.pydantic_ai`.

``pair``: ``noop(x)`` as a pydantic-ai function tool (a ``FunctionToolset``) and as a
toolsets `FunctionTool` in `PydanticAIToolset`, each called by a ``ToolManager`` prepared
for a run step, as the agent graph calls tools (``handle_call``: validation, hooks, the
toolset's ``call_tool``). ``noop`` is a coroutine function: pydantic-ai runs a plain
function in a worker thread (ours does too, by default), whose cost (about 200 µs here)
would hide both sides' own. Ours pays toolsets' call path (`toolsets._invoke.invoke`:
the argument copy, validation against the tool's schema, the gates), as toolsets' own
agent loop does; ``noop`` never awaits, so it runs at once, with no cancel scope (none
could interrupt it). ``waiting_pair``: the same with a function that waits once, for
which ours opens the call's cancel scope (the deadline every toolsets call has).

``mcp_pair``: the fixture MCP server's ``echo`` through pydantic-ai's own MCP client
(``pydantic_ai.mcp.MCPToolset``, FastMCP's client: the ``pydantic-ai-slim[mcp]`` extra)
against `PydanticAIToolset` over our `McpToolset`, each with a stdio server process of
its own started with the same command, through the same ``ToolManager`` entry. Ours is
used as an application keeping a session for its lifetime does: the `McpToolset` opened
once in the caller's task, ``PydanticAIToolset(mcp, close=False)``. (Left to open on
first use, a session lives on the toolset's background event loop, which a call reaches
across threads: about 0.45 ms more.)

Run alone: python benchmarks/_adapter_pydantic_ai.py [--calls N]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
from pydantic_ai import FunctionToolset, RunContext
from pydantic_ai.messages import ToolCallPart
from pydantic_ai.models.test import TestModel
from pydantic_ai.tool_manager import ToolManager
from pydantic_ai.toolsets import AbstractToolset
from pydantic_ai.usage import RunUsage

from toolsets import FunctionTool
from toolsets.adapters.pydantic_ai import PydanticAIToolset
from toolsets.mcp import McpToolset, Stdio

Call = Callable[[], Awaitable[object]]

SERVER = Path(__file__).resolve().parent.parent / "fixtures" / "mcp" / "server.py"
SERVER_COMMAND = (sys.executable, str(SERVER), "stdio")
"""The fixture MCP server over stdio, as both MCP sides start it."""


async def noop(x: int) -> int:
    """Return x (a coroutine: pydantic-ai runs a plain function in a worker thread, which
    would weigh more than everything measured here)."""
    return x


async def _caller(toolset: AbstractToolset[None], call: ToolCallPart) -> Call:
    """One call of ``call`` through a ``ToolManager`` prepared for a run step, as the
    agent graph makes it."""
    ctx = RunContext[None](
        deps=None, model=TestModel(), usage=RunUsage(), max_retries=1, run_id="run"
    )
    manager = await ToolManager[None](toolset).for_run_step(ctx)

    async def one() -> object:
        return await manager.handle_call(call)

    return one


async def pair(stack: contextlib.AsyncExitStack) -> tuple[Call, Call]:
    """(pydantic-ai's function tool, ours through the adapter): one ``noop(1)`` each."""
    call = ToolCallPart("noop", {"x": 1}, tool_call_id="c")
    native: FunctionToolset[None] = FunctionToolset([noop])
    ours = PydanticAIToolset[None]([FunctionTool(noop)])
    await stack.enter_async_context(native)
    await stack.enter_async_context(ours)
    return await _caller(native, call), await _caller(ours, call)


async def bounded_pair(stack: contextlib.AsyncExitStack) -> tuple[Call, Call]:
    """As `pair`, with pydantic-ai's tool bounded by a timeout as ours always is (toolsets'
    default, 60 s): the like-for-like comparison of two bounded calls."""
    call = ToolCallPart("noop", {"x": 1}, tool_call_id="c")
    native: FunctionToolset[None] = FunctionToolset([noop], timeout=60.0)
    ours = PydanticAIToolset[None]([FunctionTool(noop)])
    await stack.enter_async_context(native)
    await stack.enter_async_context(ours)
    return await _caller(native, call), await _caller(ours, call)


async def noop_waits(x: int) -> int:
    """Return x, after letting the event loop run once."""
    await anyio.lowlevel.checkpoint()
    return x


async def waiting_pair(stack: contextlib.AsyncExitStack) -> tuple[Call, Call]:
    """As `pair`, with a function that waits once (ours: under the call's deadline)."""
    native: FunctionToolset[None] = FunctionToolset([noop_waits])
    ours = PydanticAIToolset[None]([FunctionTool(noop_waits)])
    await stack.enter_async_context(native)
    await stack.enter_async_context(ours)
    call = ToolCallPart("noop_waits", {"x": 1}, tool_call_id="c")
    return await _caller(native, call), await _caller(ours, call)


async def mcp_pair(stack: contextlib.AsyncExitStack) -> tuple[Call, Call]:
    """(pydantic-ai's own MCP client, ours: `McpToolset` through the adapter): one call of
    the fixture server's ``echo`` each, each side with its own server process."""
    from fastmcp.client.transports import StdioTransport
    from pydantic_ai.mcp import MCPToolset

    call = ToolCallPart("echo", {"text": "hi"}, tool_call_id="c")
    command, *args = SERVER_COMMAND
    native = MCPToolset[None](StdioTransport(command, args))
    # As an application keeps a session for its lifetime: the McpToolset opened once in
    # this task, the adapter told not to close it (close=False).
    mcp = await stack.enter_async_context(McpToolset(Stdio(command=command, args=args)))
    ours = PydanticAIToolset[None](mcp, close=False)
    await stack.enter_async_context(native)
    await stack.enter_async_context(ours)
    return await _caller(native, call), await _caller(ours, call)


async def _measure(calls: int, make: Any) -> tuple[float, float]:
    """µs per call, (native, ours), the sides taking turns in blocks of 100."""
    async with contextlib.AsyncExitStack() as stack:
        native, ours = await make(stack)
        times: dict[str, list[float]] = {"native": [], "ours": []}
        for side in (native, ours):  # warm up
            for _ in range(50):
                await side()
        for _ in range(calls // 100):
            for name, side in (("native", native), ("ours", ours)):
                start = time.perf_counter()
                for _ in range(100):
                    await side()
                times[name].append((time.perf_counter() - start) / 100 * 1e6)
        return statistics.median(times["native"]), statistics.median(times["ours"])


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    options = parser.parse_args()
    for label, make, calls in (
        ("function tool", pair, options.calls),
        ("MCP echo (stdio)", mcp_pair, max(options.calls // 4, 200)),
    ):
        native, ours = await _measure(calls, make)
        ratio = ours / native
        print(f"{label:18} native {native:8.1f} µs  ours {ours:8.1f} µs  ours/native {ratio:.2f}x")


if __name__ == "__main__":
    anyio.run(main)
