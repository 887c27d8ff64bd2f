"""A `searchable` catalogue served by `McpServer` to clients of protocol 2026-07-28 (the
one `McpToolset` speaks by default): over stdio the stream is the client's, over HTTP
the `Invocation.session_id` the server's ``invocation`` function gives; a search loads
tools for that client alone, which hears of it through ``subscriptions/listen``. An
agent behind `McpToolset` finds a tool, sees it in its next request, and calls it."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

import toolsets.mcp.server._state
from tests.agent.helpers import agent_with, response_of, start
from tests.helpers import ROOT
from tests.mcp.server_helpers import SRC, connected, load_fixture, texts, uvicorn_thread
from toolsets import FunctionCall, Invocation, ToolContext
from toolsets.mcp import IncomingRequest, McpServer, McpToolset, Stdio, StreamableHttp
from toolsets.search import SEARCH_TOOL_NAME

pytestmark = pytest.mark.anyio

CATALOGUE = str(ROOT / "fixtures" / "mcp" / "searchable_server.py")
searchable_server = load_fixture("searchable_server")


def catalogue_stdio() -> Stdio:
    return Stdio(command=sys.executable, args=[CATALOGUE, "stdio"], env={"PYTHONPATH": SRC})


def by_token(request: IncomingRequest) -> Invocation:
    """Each caller is the client its bearer token names (none: nobody in particular)."""
    token = request.bearer_token
    return Invocation(app_name="catalogue", session_id=f"user:{token}" if token else None)


def serve_by_token() -> Any:
    return searchable_server.make_server(invocation=by_token).http_app()


@contextlib.asynccontextmanager
async def modern_http(url: str, token: str | None) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    with anyio.fail_after(20):
        async with (
            httpx2.AsyncClient(headers=headers, timeout=10) as http,
            Client(streamable_http_client(url, http_client=http), mode="2026-07-28") as client,
        ):
            yield client


async def names(client: Client) -> list[str]:
    return [t.name for t in (await client.list_tools()).tools]


def search_then_refund() -> list[Any]:
    return [
        FunctionCall(id="s", name=SEARCH_TOOL_NAME, args={"query": "refund a payment"}),
        FunctionCall(id="r", name="refund_payment", args={"payment_id": "pay_1"}),
        "done",
    ]


async def test_an_agent_behind_mcp_toolset_over_stdio_finds_a_tool_then_sees_and_calls_it() -> None:
    upstream = McpToolset(catalogue_stdio(), confirm="never")
    runner, model = agent_with(search_then_refund(), [upstream])
    with anyio.fail_after(60):
        async with upstream:
            _, events = await start(runner, "give the customer their money back")
    assert list(model.requests[0].declarations) == [SEARCH_TOOL_NAME]
    assert "refund_payment" in model.requests[1].declarations
    assert response_of(events, "refund_payment") == "refunded pay_1"


async def test_an_agent_behind_mcp_toolset_over_http_finds_a_tool_then_sees_and_calls_it() -> None:
    async with uvicorn_thread(serve_by_token) as url:
        upstream = McpToolset(
            StreamableHttp(url=url, headers={"Authorization": "Bearer ann"}), confirm="never"
        )
        runner, model = agent_with(search_then_refund(), [upstream])
        with anyio.fail_after(30):
            async with upstream:
                _, events = await start(runner, "give the customer their money back")
    assert list(model.requests[0].declarations) == [SEARCH_TOOL_NAME]
    assert "refund_payment" in model.requests[1].declarations
    assert response_of(events, "refund_payment") == "refunded pay_1"


async def test_a_2026_client_over_stdio_hears_through_its_listen_stream_that_a_search_loaded_tools() -> (  # noqa: E501
    None
):
    with anyio.fail_after(60):
        async with (
            Client(
                StdioServerParameters(
                    command=sys.executable, args=[CATALOGUE, "stdio"], env={"PYTHONPATH": SRC}
                ),
                mode="2026-07-28",
            ) as client,
            client.listen(tools_list_changed=True) as events,
        ):
            before = await names(client)
            found = await client.call_tool(SEARCH_TOOL_NAME, {"query": "star a repository"})
            await anext(aiter(events))
            after = await names(client)
            starred = await client.call_tool("star_repository", {"owner": "o", "repo": "r"})
    assert before == [SEARCH_TOOL_NAME]
    assert found.is_error is False
    assert after == [SEARCH_TOOL_NAME, "star_repository"]
    assert texts(starred) == ["starred o/r"]


async def test_over_http_each_2026_client_named_by_the_invocation_loads_its_own_tools_and_hears_of_them() -> (  # noqa: E501
    None
):
    async with (
        uvicorn_thread(serve_by_token) as url,
        modern_http(url, "ann") as ann,
        modern_http(url, "bob") as bob,
        modern_http(url, "ann") as ann_again,  # another connection, the same caller
    ):
        async with ann_again.listen(tools_list_changed=True) as events:
            with anyio.fail_after(20):
                await ann.call_tool(SEARCH_TOOL_NAME, {"query": "weather forecast"})
                await anext(aiter(events))
        listed = {"ann": await names(ann), "ann again": await names(ann_again)}
        bob_listed = await names(bob)
    assert listed == {
        "ann": [SEARCH_TOOL_NAME, "get_weather"],
        "ann again": [SEARCH_TOOL_NAME, "get_weather"],
    }
    assert bob_listed == [SEARCH_TOOL_NAME]


async def test_over_http_a_2026_client_the_invocation_does_not_name_keeps_search_only_yet_calls_what_it_found() -> (  # noqa: E501
    None
):
    async with uvicorn_thread(serve_by_token) as url, modern_http(url, None) as client:
        found = await client.call_tool(SEARCH_TOOL_NAME, {"query": "delete a file"})
        listed = await names(client)
        deleted = await client.call_tool("delete_file", {"path": "/tmp/x"})
    assert "delete_file" in str(found.structured_content or found.content)
    assert listed == [SEARCH_TOOL_NAME]
    assert found.meta is None or "io.toolsets/toolsChanged" not in found.meta
    assert texts(deleted) == ["deleted /tmp/x"]


async def test_the_server_keeps_the_state_of_at_most_max_session_states_callers() -> None:
    caller = {"id": ""}
    server = searchable_server.make_server(
        invocation=lambda _: Invocation(session_id=caller["id"]), max_session_states=2
    )
    listed: dict[str, list[str]] = {}
    async with connected(server, "2026-07-28") as client:
        for name in ["ann", "bob", "cy"]:
            caller["id"] = name
            await client.call_tool(SEARCH_TOOL_NAME, {"query": "send an email"})
        for name in ["cy", "bob", "ann"]:
            caller["id"] = name
            listed[name] = await names(client)
    assert listed == {
        "cy": [SEARCH_TOOL_NAME, "send_email"],
        "bob": [SEARCH_TOOL_NAME, "send_email"],
        "ann": [SEARCH_TOOL_NAME],  # the least recently used: forgotten
    }


async def test_the_server_forgets_the_state_of_a_caller_idle_for_session_state_ttl(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = [1000.0]
    monkeypatch.setattr(toolsets.mcp.server._state, "_clock", lambda: now[0])
    server = searchable_server.make_server(
        invocation=Invocation(session_id="ann"), session_state_ttl=60
    )
    async with connected(server, "2026-07-28") as client:
        await client.call_tool(SEARCH_TOOL_NAME, {"query": "send an email"})
        now[0] += 59
        kept = await names(client)  # a request: its minute starts again
        now[0] += 59
        still = await names(client)
        now[0] += 61
        forgotten = await names(client)
    assert kept == still == [SEARCH_TOOL_NAME, "send_email"]
    assert forgotten == [SEARCH_TOOL_NAME]


def test_the_bounds_of_kept_states_are_checked() -> None:
    with pytest.raises(ValueError, match="session_state_ttl"):
        McpServer([], session_state_ttl=0)
    with pytest.raises(ValueError, match="max_session_states"):
        McpServer([], max_session_states=-1)


async def test_the_result_of_a_call_that_loaded_tools_says_so_to_a_toolsets_client() -> None:
    server = McpServer(searchable_server.make_server().toolset)
    async with connected(server, "legacy") as client:
        found = await client.call_tool(SEARCH_TOOL_NAME, {"query": "refund a payment"})
        again = await client.call_tool(SEARCH_TOOL_NAME, {"query": "refund a payment"})
    assert found.meta == {"io.toolsets/toolsChanged": True}
    assert again.meta is None  # nothing new loaded


async def test_mcp_toolset_hears_through_its_listen_stream_that_its_caller_loaded_tools_elsewhere() -> (  # noqa: E501
    None
):
    changed = anyio.Event()
    async with uvicorn_thread(serve_by_token) as url:
        upstream = McpToolset(StreamableHttp(url=url, headers={"Authorization": "Bearer ann"}))
        async with upstream, modern_http(url, "ann") as elsewhere:
            stop = upstream.on_tools_changed(changed.set)
            before = [t.name for t in await upstream.list_tools()]
            await elsewhere.call_tool(SEARCH_TOOL_NAME, {"query": "weather forecast"})
            with anyio.fail_after(20):
                await changed.wait()
            after = [t.name for t in await upstream.list_tools()]
            stop()
    assert before == [SEARCH_TOOL_NAME]
    assert after == [SEARCH_TOOL_NAME, "get_weather"]


async def test_over_stateless_http_a_2025_client_named_by_the_invocation_sees_what_it_loaded() -> (
    None
):
    def serve() -> Any:
        return searchable_server.make_server(invocation=by_token).http_app(stateless=True)

    async with uvicorn_thread(serve) as url:
        upstream = McpToolset(
            StreamableHttp(url=url, headers={"Authorization": "Bearer ann"}), mode="legacy"
        )
        async with upstream:
            search = await upstream.get_tool(SEARCH_TOOL_NAME)
            await search.run({"query": "translate or refund a payment"}, ToolContext())
            listed = [t.name for t in await upstream.list_tools()]
            refund = await upstream.get_tool("refund_payment")
            refunded = await refund.run({"payment_id": "pay_2"}, ToolContext())
    assert listed == [SEARCH_TOOL_NAME, "refund_payment"]
    assert refunded == "refunded pay_2"
