"""An agent using an MCP server's tools, offline: the repository's fixture MCP server runs
over stdio, and a scripted stand-in for a model decides the calls.

Shows: connecting (one long-lived session), listing with hints, a destructive tool gated
by confirmation, the agent calling tools, and the server crashing and coming back.

Run: python examples/agent_mcp.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio

from toolsets import ConnectionError, FunctionCall, ToolContext
from toolsets.agent import LlmAgent, LlmRequest, Runner
from toolsets.mcp import McpToolset, Stdio
from toolsets.models import ScriptedModel, Step

SERVER = Path(__file__).resolve().parent.parent / "fixtures" / "mcp" / "server.py"


def model(request: LlmRequest) -> Step:
    """A stand-in for an LLM: add, then delete, then report."""
    results = [
        p.function_response for c in request.contents for p in c.parts if p.function_response
    ]
    if not results:
        return FunctionCall(name="add", args={"a": 40, "b": 2})
    if len(results) == 1:
        return FunctionCall(name="delete_file", args={"path": "/tmp/report.txt"})
    return f"The sum is {results[0].response['total']}; {results[-1].response['result']}."


async def main() -> None:
    server = Stdio(command=sys.executable, args=[str(SERVER), "stdio"])
    async with McpToolset(server, name="fixture") as toolset:
        print(f"connected over protocol {await toolset.protocol_version()}")
        tools = await toolset.list_tools()
        for name in ("add", "echo", "delete_file"):
            tool = next(t for t in tools if t.name == name)
            print(
                f"  {name}: read-only={tool.is_read_only} "
                f"needs confirmation={tool.requires_confirmation({})}"
            )

        runner = Runner(LlmAgent("assistant", ScriptedModel(respond=model), tools=[toolset]))
        session = await runner.create_session(user_id="ann")
        async for event in runner.run(user_id="ann", session_id=session.id, message="go"):
            for request in event.pending:
                print(f"asks ann: {request.hint}  yes")
                answers = {request.function_call_id: True}
                async for resumed in runner.resume(
                    user_id="ann", session_id=session.id, confirmations=answers
                ):
                    if resumed.is_final_response():
                        print(f"assistant: {resumed.text}")

        crash = await toolset.get_tool("crash")
        try:
            await crash.run({}, ToolContext())
        except ConnectionError as error:
            print(f"server crashed: {error}")
        echo = await toolset.get_tool("echo")
        print(f"next call, new server: {await echo.run({'text': 'back'}, ToolContext())}")


if __name__ == "__main__":
    anyio.run(main)
