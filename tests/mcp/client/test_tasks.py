"""Task-augmented MCP tools: a server that runs no tasks (the fixture server), and every
way a task can end (fixtures/mcp/task_server.py; the reference server's task tool is
tested in test_everything.py)."""

from __future__ import annotations

import logging
import sys
from typing import Any

import anyio
import pytest

from tests.helpers import ROOT
from tests.mcp.helpers import stdio_toolset
from toolsets import ConnectionError, JsonValue, ToolCallError, ToolContext
from toolsets.mcp import McpToolset, Stdio

pytestmark = pytest.mark.anyio

TASK_SUPPORT = {"TOOLSETS_FIXTURE_TASK_SUPPORT": "echo=required,add=optional"}


async def test_a_tool_that_needs_tasks_is_not_offered_by_a_server_that_does_not_run_them(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="toolsets.mcp")
    # The 2025-11-25 handshake: tasks (and a tool's execution field) belong to it.
    async with stdio_toolset(TASK_SUPPORT, mode="legacy") as toolset:
        tools = {tool.name: tool for tool in await toolset.list_tools()}
        assert "echo" not in tools
        assert "add" in tools  # optional: called plainly
        assert await tools["add"].run({"a": 1, "b": 2}, None) == {"total": 3}  # type: ignore[arg-type]
        with pytest.raises(ToolCallError) as refused:
            await toolset.call_tool("echo", {"text": "hi"})
    assert refused.value.tool_name == "echo"
    hidden = [r for r in caplog.records if r.name == "toolsets.mcp" and "'echo'" in r.getMessage()]
    assert len(hidden) == 1
    assert hidden[0].levelno == logging.INFO


async def test_a_tool_that_needs_tasks_can_still_be_called_plainly_when_asked_to() -> None:
    async with stdio_toolset(TASK_SUPPORT, mode="legacy") as toolset:
        await toolset.list_tools()
        result = await toolset.call_tool("echo", {"text": "hi"}, task=False)
    assert not result.is_error
    assert result.content[0].text == "hi"  # type: ignore[union-attr]


TASK_SERVER = str(ROOT / "fixtures" / "mcp" / "task_server.py")


def task_toolset(**options: Any) -> McpToolset:
    return McpToolset(Stdio(command=sys.executable, args=[TASK_SERVER]), **options)


async def run(toolset: McpToolset, name: str, args: dict[str, Any]) -> JsonValue:
    tool = await toolset.get_tool(name)
    with anyio.fail_after(10):
        return await tool.run(args, ToolContext())


@pytest.mark.parametrize("poll_ms", [50, 0], ids=["suggested-interval", "no-interval"])
async def test_a_task_is_followed_until_it_completes_and_its_result_fetched(poll_ms: int) -> None:
    async with task_toolset() as toolset:
        result = await run(toolset, "finish", {"topic": "tides", "poll_ms": poll_ms})
        tasks = await toolset.list_tasks()
    assert result == "finished tides"
    assert [task.status for task in tasks] == ["completed"]


async def test_a_task_asking_for_input_no_one_can_give_is_an_error_result_and_cancelled() -> None:
    async with task_toolset() as toolset:  # no elicitation, no sampling
        result = await run(toolset, "ask", {})
        tasks = await toolset.list_tasks()
    assert isinstance(result, dict)
    assert "Which topic do you mean?" in str(result["error"])
    assert [task.status for task in tasks] == ["cancelled"]


@pytest.mark.parametrize(
    ("name", "reason"), [("fail", "it broke"), ("lose", "disk full")], ids=["result", "no-result"]
)
async def test_a_failed_task_comes_back_to_the_model_as_an_error_result(
    name: str, reason: str
) -> None:
    async with task_toolset() as toolset:
        result = await run(toolset, name, {})
    assert isinstance(result, dict)
    assert reason in str(result["error"])


async def test_a_task_the_server_cancels_is_a_tool_call_error() -> None:
    async with task_toolset() as toolset:
        with pytest.raises(ToolCallError) as caught:
            await run(toolset, "stop", {})
    assert caught.value.tool_name == "stop"


async def test_a_secret_the_server_quotes_in_a_tasks_end_is_masked_in_the_error() -> None:
    token = "tok-SECRET-1234"
    env = {"API_TOKEN": token, "TASK_STOP_REASON": f"token {token} was revoked"}
    server = Stdio(command=sys.executable, args=[TASK_SERVER], env=env)
    async with McpToolset(server) as toolset:
        with pytest.raises(ToolCallError) as caught:
            await run(toolset, "stop", {})
    assert token not in str(caught.value)
    assert "was revoked" in str(caught.value)
    assert caught.value.tool_name == "stop"


async def test_a_task_still_running_at_the_calls_timeout_is_cancelled_on_the_server() -> None:
    async with task_toolset(timeout=0.5) as toolset:
        with pytest.raises(TimeoutError):
            await run(toolset, "finish", {"seconds": 30})
        tasks = await toolset.list_tasks()
    assert [task.status for task in tasks] == ["cancelled"]


async def test_a_server_that_answers_a_task_augmented_call_plainly_gives_its_result() -> None:
    async with task_toolset() as toolset:
        result = await run(toolset, "ignore", {})
        tasks = await toolset.list_tasks()
    assert result == "ignored the task"
    assert tasks == []


async def test_a_server_that_dies_while_its_task_runs_fails_the_call_with_a_connection_error() -> (
    None
):
    async with task_toolset() as toolset:
        with pytest.raises(ConnectionError) as caught:
            await run(toolset, "die", {})
        # The next call starts the server again.
        assert await run(toolset, "finish", {"seconds": 0}) == "finished "
    assert caught.value.target == toolset.transport.target
