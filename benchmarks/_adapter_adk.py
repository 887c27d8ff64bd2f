"""The google-adk adapter's pair for `benchmarks/adapters.py`: one call of ``noop``
through ADK's tool entry point (``await tool.run_async(args=..., tool_context=...)``,
what ADK's flow calls), ADK's own ``FunctionTool`` against `toolsets.adapters.adk.AdkTool`
over a toolsets `FunctionTool`, both with one real ADK ``ToolContext`` built once."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable

from google.adk.agents import LlmAgent
from google.adk.agents.invocation_context import InvocationContext
from google.adk.sessions.in_memory_session_service import InMemorySessionService
from google.adk.sessions.session import Session
from google.adk.tools.function_tool import FunctionTool as AdkFunctionTool
from google.adk.tools.tool_context import ToolContext

from toolsets import FunctionTool
from toolsets.adapters.adk import AdkTool


def noop(x: int) -> int:
    """Return x.

    Args:
        x: Any number.
    """
    return x


async def pair(
    stack: contextlib.AsyncExitStack,
) -> tuple[Callable[[], Awaitable[object]], Callable[[], Awaitable[object]]]:
    """``(native, ours)``: one call of ``noop`` each, through ADK's ``run_async``."""
    sessions = InMemorySessionService()
    context = ToolContext(
        InvocationContext(
            session_service=sessions,
            invocation_id="bench",
            agent=LlmAgent(name="bench"),
            session=Session(id="session", app_name="bench", user_id="user"),
        ),
        function_call_id="call",
    )
    native_tool = AdkFunctionTool(noop)
    # ADK calls a sync function on the event loop: so does ours here (by default
    # toolsets runs it in a worker thread, which would measure the thread hop instead).
    our_tool = AdkTool(FunctionTool(noop, run_in_thread=False))
    args = {"x": 1}

    def native() -> Awaitable[object]:
        return native_tool.run_async(args=args, tool_context=context)

    def ours() -> Awaitable[object]:
        return our_tool.run_async(args=args, tool_context=context)

    return native, ours
