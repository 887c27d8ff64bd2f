"""`McpServer` as a gateway: the upstream MCP servers' resources and prompts served, each
request routed to the server that holds what it names (or asked of each when none is
known), their tool changes announced, their progress relayed, their error results passed
on exactly, and an upstream server that dies reported."""

from __future__ import annotations

from typing import Any

import anyio
import mcp.types as mt
import pytest
from mcp import MCPError

import toolsets
import toolsets.mcp.server._gateway
from tests.helpers import NODE, PEERS
from tests.mcp.helpers import fixture_stdio
from tests.mcp.server_helpers import connected, served, texts, uvicorn_thread
from tests.openapi.helpers import ONE_GET, recording_server
from toolsets import StaticToolset, ToolContext
from toolsets.mcp import McpServer, McpToolset
from toolsets.mcp._convert import convert_result
from toolsets.openapi import OpenApiToolset

pytestmark = pytest.mark.anyio
MODES = pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])


async def test_a_gateway_serves_the_upstream_servers_resources_and_prompts() -> None:
    everything = PEERS / "@modelcontextprotocol" / "server-everything"
    upstream = toolsets.mcp.Stdio(
        command=str(NODE), args=[str(everything / "dist" / "index.js"), "stdio"]
    )
    fixture = toolsets.prefixed(McpToolset(fixture_stdio(), confirm="never"), "fx")
    server = McpServer(
        toolsets.combined(McpToolset(upstream), fixture, StaticToolset([served.add]))
    )
    async with connected(server, "legacy") as client:
        resources = (await client.list_resources()).resources
        templates = (await client.list_resource_templates()).resource_templates
        # A URI no listing named goes to the server whose template it fits.
        templated = await client.read_resource("demo://resource/dynamic/text/5")
        with pytest.raises(MCPError) as unknown:
            await client.read_resource("nowhere://at/all")
        first = resources[0]
        read = await client.read_resource(str(first.uri))
        prompts = (await client.list_prompts()).prompts
        simple = next(p for p in prompts if not p.arguments)
        prompt = await client.get_prompt(simple.name)
        completed = await client.complete(
            mt.PromptReference(type="ref/prompt", name="completable-prompt"),
            {"name": "department", "value": "Eng"},
        )
        tools = [t.name for t in (await client.list_tools()).tools]
    assert read.contents
    assert str(read.contents[0].uri) == str(first.uri)
    assert prompt.messages
    assert completed.completion.values == ["Engineering"]
    assert "demo://resource/dynamic/text/{resourceId}" in [t.uri_template for t in templates]
    assert str(templated.contents[0].uri) == "demo://resource/dynamic/text/5"
    assert unknown.value.code == -32602
    assert unknown.value.data == {"uri": "nowhere://at/all"}
    assert "echo" in tools
    assert "add" in tools
    assert "fx_echo" in tools


@MODES
async def test_a_gateway_tells_its_clients_when_the_upstream_tools_change(mode: str) -> None:
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, mt.ToolListChangedNotification):
            changed.set()

    server = McpServer(McpToolset(fixture_stdio(), confirm="never"))
    async with connected(server, mode, message_handler=on_message) as client:
        await client.list_tools()
        if mode == "legacy":
            await client.call_tool("add_tool", {"name": "fresh"})
            with anyio.fail_after(10):
                await changed.wait()
        else:
            async with client.listen(tools_list_changed=True) as events:
                await client.call_tool("add_tool", {"name": "fresh"})
                with anyio.fail_after(10):
                    await events.__anext__()
        names = [t.name for t in (await client.list_tools()).tools]
    assert "fresh" in names


@MODES
async def test_a_gateway_relays_the_progress_an_upstream_tool_reports(mode: str) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        seen.append((done, total, message))

    server = McpServer(McpToolset(fixture_stdio(), confirm="never"))
    async with connected(server, mode) as client:
        result = await client.call_tool("slow", {"seconds": 0}, progress_callback=progress)
    assert result.structured_content == {"result": "done"}  # as the upstream server gave it
    assert seen == [(step, 4, f"step {step}") for step in range(1, 5)]


async def test_a_gateway_whose_upstream_server_dies_reports_it_and_serves_on() -> None:
    server = McpServer(McpToolset(fixture_stdio(), confirm="never"))
    async with connected(server, "legacy") as client:
        before = await client.call_tool("pid", {})
        crashed = await client.call_tool("crash", {})
        after = await client.call_tool("pid", {})
    assert crashed.is_error
    assert "ConnectionError" in texts(crashed)[0]
    assert not after.is_error
    assert texts(after) != texts(before)  # a new upstream process


async def test_a_gateway_finds_a_resource_or_prompt_no_listing_named_among_its_upstreams(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Another worker, a restart, a client's cached URI: a read before any list.
    monkeypatch.setattr(toolsets.mcp.server._gateway, "MAX_ROUTES", 2)
    everything = PEERS / "@modelcontextprotocol" / "server-everything"
    first = toolsets.mcp.Stdio(
        command=str(NODE), args=[str(everything / "dist" / "index.js"), "stdio"]
    )
    server = McpServer(
        toolsets.combined(McpToolset(first), McpToolset(fixture_stdio(), confirm="never"))
    )
    async with connected(server, "2026-07-28") as client:
        read = await client.read_resource("mem://greeting")  # the second upstream's
        prompt = await client.get_prompt("review", {"code": "x = 1"})
        with pytest.raises(MCPError) as unknown:
            await client.read_resource("nowhere://at/all")
        with pytest.raises(MCPError) as no_prompt:
            await client.get_prompt("no-such-prompt")
        listed = (await client.list_resources()).resources
        again = await client.read_resource("mem://greeting")  # forgotten: asked again
    assert len(listed) > 2
    assert len(list(server._resources.gateway.resources)) == 2  # the most recently used only
    assert again.contents == read.contents
    assert [c.text for c in read.contents if isinstance(c, mt.TextResourceContents)] == [
        "hello resource"
    ]
    assert isinstance(prompt.messages[0].content, mt.TextContent)
    assert "x = 1" in prompt.messages[0].content.text
    assert unknown.value.code == -32602
    assert unknown.value.data == {"uri": "nowhere://at/all"}
    assert no_prompt.value.code == -32602


async def test_an_error_result_with_details_round_trips_through_two_servers_exactly() -> None:
    async with recording_server() as api:
        api.status = 404
        api.content_type = "text/html"
        api.body = b"<html>\n<h1>Not Found</h1>\n</html>"
        rest = OpenApiToolset(ONE_GET, base_url=api.url)
        async with rest:
            direct = await (await rest.get_tool("get_thing")).run({"id": "7"}, ToolContext())
        async with uvicorn_thread(
            McpServer(OpenApiToolset(ONE_GET, base_url=api.url)).http_app
        ) as url:
            upstream = McpToolset(toolsets.mcp.StreamableHttp(url=url))
            async with upstream:
                relayed = await (await upstream.get_tool("get_thing")).run(
                    {"id": "7"}, ToolContext()
                )
            gateway = McpServer(McpToolset(toolsets.mcp.StreamableHttp(url=url)))
            async with connected(gateway, "2026-07-28") as client:
                called = await client.call_tool("get_thing", {"id": "7"})
    assert direct == {
        "error": "HTTP 404 X",
        "status": 404,
        "body": "<html>\n<h1>Not Found</h1>\n</html>",
    }
    assert relayed == direct
    assert called.is_error
    assert convert_result(called) == direct
