"""`searchable` served by `McpServer`: a client sees ``search_tools``; a search loads
tools for that client's session, which is told ``notifications/tools/list_changed``."""

from __future__ import annotations

import json
from typing import Any

import anyio
import mcp.types as mt
import pytest

from tests.mcp.helpers import eventually
from tests.mcp.server_helpers import connected, texts, uvicorn_thread
from tests.search.test_searchable import catalogue
from toolsets import StaticToolset, ToolContext, prefixed, searchable, tool
from toolsets._errors import ToolsetError
from toolsets.mcp import McpServer, McpToolset, StreamableHttp
from toolsets.mcp._relay import TOOLS_CHANGED_META
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


async def test_temp_state_keys_live_for_the_call_only() -> None:
    @tool
    def remember(ctx: ToolContext, token: str) -> str:
        """Remember a value for this call and one for the session."""
        ctx.state["temp:token"] = token
        ctx.state["kept"] = token
        return "ok"

    @tool
    def recall(ctx: ToolContext) -> list[str | None]:
        """What the session remembers."""
        return [ctx.state.get("temp:token"), ctx.state.get("kept")]

    server = McpServer(StaticToolset([remember, recall]))
    async with connected(server, "legacy") as client:
        await client.call_tool("remember", {"token": "secret"})
        recalled = await client.call_tool("recall", {})
    assert [json.loads(text) for text in texts(recalled)] == [[None, "secret"]]


class FlakyListing(StaticToolset):
    """A toolset whose second listing fails (an upstream server reconnecting)."""

    listings = 0

    async def list_tools(self, ctx: ToolContext | None = None) -> Any:
        self.listings += 1
        if self.listings == 2:
            raise ToolsetError("the upstream server is reconnecting")
        return await super().list_tools(ctx)


async def test_a_call_that_ran_is_answered_even_when_listing_the_tools_again_fails(
    caplog: pytest.LogCaptureFixture,
) -> None:
    sent: list[int] = []

    @tool
    def send_payment(ctx: ToolContext, amount: int) -> str:
        """Send money."""
        sent.append(amount)
        ctx.state["last_payment"] = amount
        return "sent"

    server = McpServer(FlakyListing([send_payment]))
    async with connected(server, "legacy") as client:
        result = await client.call_tool("send_payment", {"amount": 100})
    assert result.is_error is False
    assert texts(result) == ["sent"]
    assert sent == [100]
    assert any(r.name == "toolsets.mcp.server" for r in caplog.records)


class Moods(StaticToolset):
    """One tool, ``speak``, whose description follows the session's ``mood``."""

    async def list_tools(self, ctx: ToolContext | None = None) -> Any:
        tools = list(await super().list_tools(ctx))
        mood = ctx.state.get("mood", "calm") if ctx is not None else "calm"

        @tool(name="speak", description=f"Speak, {mood}ly.")
        def speak() -> str:
            return mood

        return (*tools, speak)


async def test_a_client_is_told_when_a_call_changes_a_declaration_not_the_names() -> None:
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, mt.ToolListChangedNotification):
            changed.set()

    @tool
    def set_mood(ctx: ToolContext, mood: str) -> str:
        """Set the mood."""
        ctx.state["mood"] = mood
        return mood

    server = McpServer(Moods([set_mood]))
    async with connected(server, "legacy", message_handler=on_message) as client:
        before = {t.name: t.description for t in (await client.list_tools()).tools}
        answer = await client.call_tool("set_mood", {"mood": "loud"})
        with anyio.fail_after(10):
            await changed.wait()
        after = {t.name: t.description for t in (await client.list_tools()).tools}
    assert before["speak"] == "Speak, calmly."
    assert after["speak"] == "Speak, loudly."
    assert (answer.meta or {}).get(TOOLS_CHANGED_META) is True
