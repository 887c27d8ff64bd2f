"""Faults: a stdio server killed mid-call, again and again. Each round costs a server
start (~1.5 s), so this runs on one anyio backend."""

from __future__ import annotations

import os
import signal
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from tests.mcp_helpers import alive, stdio_toolset

from toolsets import ConnectionError

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


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
