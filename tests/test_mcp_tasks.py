"""Task-augmented MCP tools against servers that do not run tasks (the fixture server;
the reference server, which does, is in test_mcp_everything.py)."""

from __future__ import annotations

import logging

import pytest
from tests.mcp_helpers import stdio_toolset

from toolsets import ToolCallError

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
