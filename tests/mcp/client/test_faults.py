"""Faults: servers that die, restart, hang or answer what they should not."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import httpx2
import mcp.types as mt
import pydantic
import pytest

from tests.mcp.helpers import HttpServer, alive, eventually, raw_stdio, stdio_toolset
from toolsets import ConnectionError, ToolCallError, ToolContext
from toolsets.mcp import KILL_GRACE, McpToolset, StreamableHttp
from toolsets.mcp.client._stdio import STOP_TIMEOUT

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


@pytest.mark.parametrize("mode", ["malformed", "modern"], ids=["2025-11-25", "2026-07-28"])
async def test_a_malformed_call_result_raises_a_tool_call_error_and_the_next_call_works(
    mode: str,
) -> None:
    async with McpToolset(raw_stdio(mode), timeout=10) as toolset:
        tool = await toolset.get_tool("echo")
        with pytest.raises(ToolCallError) as info:
            await tool.run({"text": "malformed"}, ToolContext())
        after = await tool.run({"text": "hello"}, ToolContext())
    assert info.value.tool_name == "echo"
    assert "malformed result" in str(info.value)
    assert isinstance(info.value.__cause__, pydantic.ValidationError)
    assert after == "hello"


async def test_a_result_without_result_type_is_complete_on_protocol_2026_07_28() -> None:
    # The spec: a client MUST take an absent resultType as "complete" (SEP-2322); the
    # SDK's 2026-07-28 schema requires it.
    async with McpToolset(raw_stdio("modern"), timeout=10) as toolset:
        tool = await toolset.get_tool("echo")
        result = await tool.run({"text": "hello"}, ToolContext())
        raw = await toolset.call_tool("echo", {"text": "again"})
        version = await toolset.protocol_version()
    assert version == "2026-07-28"
    assert result == "hello"
    assert raw.result_type == "complete"
    assert raw.content == [mt.TextContent(type="text", text="again")]


@pytest.mark.parametrize("mode", ["stubborn", "garbage"])
@pytest.mark.parametrize("entered", [True, False], ids=["async-with", "first-use"])
async def test_a_server_that_does_not_connect_is_killed_at_the_connect_timeout(
    mode: str, entered: bool, tmp_path: Path
) -> None:
    pid_file = tmp_path / "pid"
    connect_timeout = 1.0
    toolset = McpToolset(raw_stdio(mode, pid_file), connect_timeout=connect_timeout)

    async def connect() -> None:
        if entered:
            async with toolset:
                raise AssertionError("not reached")
        try:
            await toolset.list_tools()  # on first use: the session lives on a portal
        finally:
            await toolset.shutdown()

    started = anyio.current_time()
    with anyio.fail_after(20), pytest.raises(ConnectionError) as info:
        await connect()
    elapsed = anyio.current_time() - started
    assert info.value.target == toolset.transport.target
    assert elapsed < connect_timeout + KILL_GRACE, elapsed
    pid = int(pid_file.read_text())
    assert not alive(pid), "the server process is killed, not left to linger"
    if mode == "stubborn":  # what it said explains why it never connected
        assert "waiting for a licence key" in str(info.value)


async def test_a_server_that_ignores_the_end_of_its_input_and_sigterm_is_killed_on_shutdown(
    tmp_path: Path,
) -> None:
    pid_file = tmp_path / "pid"
    toolset = McpToolset(raw_stdio("deaf", pid_file), timeout=10)
    async with toolset:
        assert (await toolset.call_tool("echo", {"text": "x"})).is_error
        pid = int(pid_file.read_text())
        started = anyio.current_time()
    elapsed = anyio.current_time() - started
    # End of input, STOP_TIMEOUT, SIGTERM, STOP_TIMEOUT, SIGKILL.
    assert 2 * STOP_TIMEOUT <= elapsed < 2 * STOP_TIMEOUT + KILL_GRACE, elapsed
    assert not alive(pid)


# --- an HTTP server refusing the session id -------------------------------------------


class Refusal:
    """The network edge in front of the real fixture server: answers the next tool call
    (which carries the session id) with a canned refusal, once; counts the tool calls
    refused and those that reach the server."""

    def __init__(self) -> None:
        self.answer: httpx2.Response | None = None
        self.refused = 0
        self.calls_sent = 0
        self._real = httpx2.AsyncHTTPTransport()

    async def handle(self, request: httpx2.Request) -> httpx2.Response:
        if request.method == "POST" and json.loads(request.content).get("method") == "tools/call":
            answer, self.answer = self.answer, None
            if answer is not None:
                assert "mcp-session-id" in request.headers
                self.refused += 1
                return answer
            self.calls_sent += 1
        return await self._real.handle_async_request(request)

    @contextlib.asynccontextmanager
    async def toolset(self, server: HttpServer) -> AsyncIterator[McpToolset]:
        async with (
            self._real,
            httpx2.AsyncClient(transport=httpx2.MockTransport(self.handle)) as client,
            # 2025-11-25: a stateful session with an id the server can refuse.
            McpToolset(StreamableHttp(url=server.url, http_client=client), mode="legacy") as ts,
        ):
            yield ts


def _refusal(status: int, message: str) -> httpx2.Response:
    # As a TypeScript server answers: a JSON-RPC error without an id.
    body = {"jsonrpc": "2.0", "error": {"code": -32000, "message": message}}
    return httpx2.Response(status, json=body)


@pytest.mark.parametrize(
    ("status", "message"),
    [(404, "Gone"), (400, "Bad Request: No valid session ID provided")],
)
async def test_a_refused_session_id_reinitializes_and_sends_the_call_once_more(
    http_server: HttpServer, status: int, message: str
) -> None:
    refusal = Refusal()
    async with refusal.toolset(http_server) as toolset:
        refusal.answer = _refusal(status, message)
        with anyio.fail_after(20):
            result = await toolset.call_tool("echo", {"text": "once"})
    assert result.structured_content == {"result": "once"}
    assert (refusal.refused, refusal.calls_sent) == (1, 1)


async def test_a_400_that_does_not_name_the_session_is_not_sent_again(
    http_server: HttpServer,
) -> None:
    refusal = Refusal()
    async with refusal.toolset(http_server) as toolset:
        refusal.answer = _refusal(400, "Bad Request: payload too large")
        with anyio.fail_after(20), pytest.raises(ToolCallError) as info:
            await toolset.call_tool("echo", {"text": "x"})
        assert info.value.tool_name == "echo"
        # The session is still good: the next call runs on it.
        after = await toolset.call_tool("echo", {"text": "next"})
    assert after.structured_content == {"result": "next"}
    assert (refusal.refused, refusal.calls_sent) == (1, 1)
