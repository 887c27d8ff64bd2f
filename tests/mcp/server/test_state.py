"""`McpServer`'s per-request state: the `Invocation` each request runs in (given, or made
per request by a function, which may block); what a client's calls keep in ``ctx.state``
is tested in tests/search/test_searchable_gateway.py, with the searches that keep it."""

from __future__ import annotations

import threading

import mcp.types as mt
import pytest

import toolsets
from tests.mcp.server_helpers import connected, texts
from toolsets import ToolContext, tool
from toolsets.mcp import IncomingRequest, McpServer

pytestmark = pytest.mark.anyio
MODES = pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])


@MODES
async def test_each_request_runs_as_the_invocation_made_for_it(mode: str) -> None:
    @tool(required_scopes={"admin"})
    def whoami(ctx: ToolContext) -> str:
        """Who is calling."""
        return ctx.user_id

    def invocation(request: IncomingRequest) -> toolsets.Invocation:
        admin = request.client is not None and request.client.name == "admin-console"
        return toolsets.Invocation(user_id="ada", scopes=frozenset({"admin"} if admin else ()))

    server = McpServer([whoami], invocation=invocation)
    admin = mt.Implementation(name="admin-console", version="1")
    async with connected(server, mode, client_info=admin) as client:
        allowed = await client.call_tool("whoami", {})
    async with connected(server, mode) as client:
        refused = await client.call_tool("whoami", {})
    assert texts(allowed) == ["ada"]
    assert refused.is_error
    assert "admin" in texts(refused)[0]


async def test_a_sync_invocation_function_runs_off_the_event_loop() -> None:
    # It may block (a database, a token introspection call): never on the loop.
    loop_thread = threading.get_ident()
    threads: list[int] = []

    def invocation(request: IncomingRequest) -> toolsets.Invocation:
        threads.append(threading.get_ident())
        return toolsets.Invocation(user_id="ada")

    def ping() -> str:
        return "pong"

    async with connected(McpServer([ping], invocation=invocation), "legacy") as client:
        result = await client.call_tool("ping", {})
    assert not result.is_error
    assert threads
    assert loop_thread not in threads
