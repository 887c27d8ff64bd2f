"""Faults: servers that die, restart, hang or answer what they should not."""

from __future__ import annotations

import logging
import os
import signal
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pydantic
import pytest
from tests.mcp_helpers import alive, eventually, raw_stdio, stdio_toolset

from toolsets import ConnectionError, ToolCallError, ToolContext
from toolsets.mcp import KILL_GRACE, McpToolset

pytestmark = pytest.mark.anyio

RAW_INVALID_PARAMS_MESSAGE = "Invalid params: 'text' must be a string"


# Each round costs a server start (~1.5 s), so this one runs on one anyio backend.
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_stdio_server_killed_mid_call_20_times_never_hangs_and_leaks_nothing() -> None:
    pids: list[int] = []
    outcomes: list[Any] = []
    async with stdio_toolset(timeout=10, connect_timeout=30) as toolset:
        for round_number in range(20):
            pid = (await toolset.call_tool("pid", {})).structured_content["result"]
            pids.append(pid)

            async def call(label: str = f"round-{round_number}") -> None:
                try:
                    outcomes.append(
                        await toolset.call_tool("sleep", {"seconds": 30, "label": label})
                    )
                except ConnectionError as error:
                    outcomes.append(error)

            with anyio.fail_after(10):  # the call's own bound, with room to spare
                async with anyio.create_task_group() as tg:
                    tg.start_soon(call)
                    await anyio.lowlevel.checkpoint()
                    os.kill(pid, signal.SIGKILL)
        # The session is still good for work afterwards.
        echoed = (await toolset.call_tool("echo", {"text": "alive"})).structured_content
    assert echoed == {"result": "alive"}
    assert len(outcomes) == 20
    assert all(isinstance(o, ConnectionError) for o in outcomes), outcomes
    assert len(set(pids)) == 20, "each round ran a new server process"
    leaked = [pid for pid in pids if alive(pid)]
    assert leaked == []


async def test_a_stdio_server_killed_while_idle_is_started_again_by_the_next_call(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="toolsets.mcp")
    async with stdio_toolset(timeout=10) as toolset:
        first = (await toolset.call_tool("pid", {})).structured_content["result"]
        os.kill(first, signal.SIGKILL)

        async def exit_noticed() -> bool:
            return any(getattr(r, "server_exited", False) for r in caplog.records)

        await eventually(exit_noticed)
        with anyio.fail_after(20):
            second = (await toolset.call_tool("pid", {})).structured_content["result"]
    assert second != first
    assert not alive(first)


async def test_an_invalid_params_answer_comes_back_to_the_model_as_an_error_result() -> None:
    async with McpToolset(raw_stdio("invalid-params"), timeout=10) as toolset:
        tool = await toolset.get_tool("echo")
        result = await tool.run({"text": "hello"}, ToolContext())
        raw = await toolset.call_tool("echo", {"text": "hello"})
    assert isinstance(result, dict)
    assert RAW_INVALID_PARAMS_MESSAGE in str(result["error"])
    assert raw.is_error


async def test_a_malformed_call_result_raises_a_tool_call_error_naming_the_tool() -> None:
    async with McpToolset(raw_stdio("malformed"), timeout=10) as toolset:
        tool = await toolset.get_tool("echo")
        with pytest.raises(ToolCallError) as info:
            await tool.run({"text": "hello"}, ToolContext())
    assert info.value.tool_name == "echo"
    assert isinstance(info.value.__cause__, pydantic.ValidationError)


@pytest.mark.parametrize("mode", ["stubborn", "garbage"])
async def test_a_server_that_does_not_connect_is_killed_at_the_connect_timeout(
    mode: str, tmp_path: Path
) -> None:
    pid_file = tmp_path / "pid"
    connect_timeout = 1.0
    toolset = McpToolset(raw_stdio(mode, pid_file), connect_timeout=connect_timeout)
    started = anyio.current_time()
    with anyio.fail_after(20), pytest.raises(ConnectionError) as info:
        async with toolset:
            raise AssertionError("not reached")
    elapsed = anyio.current_time() - started
    assert info.value.target == toolset.transport.target
    assert elapsed < connect_timeout + KILL_GRACE, elapsed
    pid = int(pid_file.read_text())
    assert not alive(pid), "the server process is killed, not left to linger"
