"""`searchable` served by `McpServer`: a client sees ``search_tools``; a search loads
tools for that client's session, which is told ``notifications/tools/list_changed``."""

from __future__ import annotations

from typing import Any

import anyio
import mcp.types as mt
import pytest

from tests.mcp.helpers import eventually
from tests.mcp.server_helpers import connected, texts, uvicorn_thread
from tests.search.test_searchable import catalogue
from toolsets import StaticToolset, ToolContext, prefixed, searchable, tool
from toolsets.mcp import McpServer, McpToolset, StreamableHttp
from toolsets.search import SEARCH_TOOL_NAME

pytestmark = pytest.mark.anyio


async def names(client: Any) -> list[str]:
    return [t.name for t in (await client.list_tools()).tools]


async def test_a_client_sees_search_tools_and_is_told_when_a_search_loads_tools() -> None:
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, mt.ToolListChangedNotification):
            changed.set()

    server = McpServer(searchable(catalogue()))
    async with connected(server, "legacy", message_handler=on_message) as client:
        before = await names(client)
        found = await client.call_tool(SEARCH_TOOL_NAME, {"query": "refund a payment"})
        with anyio.fail_after(10):
            await changed.wait()
        after = await names(client)
        refunded = await client.call_tool("refund_payment", {"payment_id": "pay_1"})
    assert before == [SEARCH_TOOL_NAME]
    assert found.is_error is False
    assert "refund_payment" in after
    assert texts(refunded) == ["refunded pay_1"]


async def test_each_client_session_loads_its_own_tools() -> None:
    server = McpServer(searchable(catalogue()))
    async with (
        connected(server, "legacy") as one,
        connected(server, "legacy") as two,
    ):
        await one.call_tool(SEARCH_TOOL_NAME, {"query": "delete a file"})
        assert "delete_file" in await names(one)
        assert await names(two) == [SEARCH_TOOL_NAME]


@pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
async def test_a_client_may_call_a_tool_it_has_not_searched_for(mode: str) -> None:
    server = McpServer(searchable(catalogue()))
    async with connected(server, mode) as client:
        result = await client.call_tool("get_weather", {"city": "Paris"})
        unknown = await client.call_tool("launch_rocket", {})
    assert texts(result) == ["sunny in Paris"]
    assert unknown.is_error is True


async def test_over_stateful_streamable_http_a_client_sees_the_tools_its_search_loaded() -> None:
    served = McpServer(searchable(catalogue()))
    async with (
        uvicorn_thread(served.http_app) as url,
        McpToolset(StreamableHttp(url=url), mode="legacy") as upstream,
    ):
        assert [t.name for t in await upstream.list_tools()] == [SEARCH_TOOL_NAME]
        search = await upstream.get_tool(SEARCH_TOOL_NAME)
        await search.run({"query": "star a repository"}, ToolContext())

        async def loaded() -> bool:  # once list_changed came, the listing is fresh
            return "star_repository" in [t.name for t in await upstream.list_tools()]

        await eventually(loaded, within=10)
        star = await upstream.get_tool("star_repository")
        result = await star.run({"owner": "octocat", "repo": "hello"}, ToolContext())
    assert result == "starred octocat/hello"


async def test_a_tool_not_loaded_is_callable_through_a_wrapper_over_the_searchable_toolset() -> (
    None
):
    server = McpServer(prefixed(searchable(catalogue()), "shop"))
    async with connected(server, "legacy") as client:
        listed = await names(client)
        result = await client.call_tool("shop_get_weather", {"city": "Oslo"})
    assert listed == [f"shop_{SEARCH_TOOL_NAME}"]
    assert texts(result) == ["sunny in Oslo"]


async def test_what_a_call_writes_to_the_state_is_kept_for_its_mcp_session_only() -> None:
    @tool
    def count(ctx: ToolContext) -> int:
        """Count the calls of this session."""
        ctx.state["calls"] = ctx.state.get("calls", 0) + 1
        return int(ctx.state["calls"])

    server = McpServer(StaticToolset([count]))
    async with (
        connected(server, "legacy") as one,
        connected(server, "legacy") as two,
    ):
        counted = [texts(await one.call_tool("count", {})) for _ in range(3)]
        other = texts(await two.call_tool("count", {}))
    assert counted == [["1"], ["2"], ["3"]]
    assert other == ["1"]
