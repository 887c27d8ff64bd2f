"""The cache hints of `McpServer`'s lists (``ttlMs``, ``cacheScope``, 2026-07-28): public
and long-lived for what every caller is offered alike, private for what is filtered per
caller, short for a gateway (and no longer than its upstream servers say), none for a
list that may change from a request to the next."""

from __future__ import annotations

from typing import Any

import pytest

import toolsets
from tests.mcp.server.helpers import make_server
from tests.mcp.server_helpers import connected, served, uvicorn_thread
from toolsets import AccessPolicy, AccessRule, StaticToolset, ToolContext
from toolsets.mcp import (
    GATEWAY_LIST_TTL,
    LIST_TTL,
    McpServer,
    McpToolset,
    StreamableHttp,
    UserCredentials,
)
from toolsets.search import searchable

pytestmark = pytest.mark.anyio


async def hints(server: McpServer, mode: str = "2026-07-28") -> dict[str, Any]:
    """The ``(ttl_ms, cache_scope)`` of each list, as the SDK's client read them (None:
    the answer carried none)."""
    async with connected(server, mode) as client:
        answers = {
            "tools": await client.list_tools(),
            "resources": await client.list_resources(),
            "templates": await client.list_resource_templates(),
            "prompts": await client.list_prompts(),
        }
    return {
        kind: (answer.ttl_ms, answer.cache_scope) if "ttl_ms" in answer.model_fields_set else None
        for kind, answer in answers.items()
    }


async def test_a_static_server_says_its_lists_are_public_for_an_hour() -> None:
    server = make_server()
    server.toolset.push(served.add)  # type: ignore[attr-defined]
    long = (round(LIST_TTL * 1000), "public")
    assert await hints(server) == {
        kind: long for kind in ("tools", "resources", "templates", "prompts")
    }


async def test_list_ttl_sets_how_long_and_zero_keeps_nothing() -> None:
    assert (await hints(make_server(list_ttl=60)))["tools"] == (60_000, "public")
    assert (await hints(make_server(list_ttl=0)))["prompts"] == (0, "public")


async def test_a_list_filtered_by_an_access_policy_is_private() -> None:
    policy = AccessPolicy([AccessRule(tools=["add"], scopes=["math"])])
    server = McpServer(toolsets.restricted(StaticToolset([served.add]), policy))
    found = await hints(server)
    assert found["tools"] == (round(LIST_TTL * 1000), "private")
    assert found["prompts"] == (round(LIST_TTL * 1000), "public")  # not filtered


async def test_a_list_that_may_change_per_request_is_not_to_be_kept() -> None:
    def by_state(tool: Any, ctx: ToolContext) -> bool:
        return bool(ctx.state.get("on"))

    for toolset in (
        toolsets.filtered(StaticToolset([served.add]), by_state),
        searchable(StaticToolset([served.add])),
    ):
        assert (await hints(McpServer(toolset)))["tools"] == (0, "private")


async def test_a_toolset_that_claims_nothing_of_its_listing_is_not_kept() -> None:
    class Own(toolsets.BaseToolset):
        async def list_tools(self, ctx: ToolContext | None = None) -> list[Any]:
            return []

    assert (await hints(McpServer(Own())))["tools"] == (0, "private")


async def test_a_2025_11_25_client_gets_no_hints() -> None:
    assert set((await hints(make_server(), mode="legacy")).values()) == {None}


async def test_a_gateway_keeps_its_lists_short_and_no_longer_than_upstream_says() -> None:
    async with uvicorn_thread(lambda: McpServer([served.add], list_ttl=2).http_app()) as url:
        async with McpToolset(StreamableHttp(url=url)) as upstream:
            found = await hints(McpServer(upstream))
        async with McpToolset(StreamableHttp(url=url), mode="legacy") as old:
            legacy = await hints(McpServer(old))
    assert found["tools"] == (2000, "public")  # the upstream server's 2 s
    assert legacy["tools"] == (round(GATEWAY_LIST_TTL * 1000), "public")


async def test_an_upstream_private_list_stays_private_through_a_gateway() -> None:
    policy = AccessPolicy([AccessRule(tools=["add"], scopes=["math"])], default="deny")
    upstream_server = McpServer(toolsets.restricted(StaticToolset([served.add]), policy))
    async with (
        uvicorn_thread(upstream_server.http_app) as url,
        McpToolset(StreamableHttp(url=url)) as upstream,
    ):
        found = await hints(McpServer(upstream))
    assert found["tools"] == (round(GATEWAY_LIST_TTL * 1000), "private")


@pytest.mark.parametrize("ttl", [-1, float("inf"), float("nan"), "60", True])
def test_a_bad_list_ttl_is_refused(ttl: Any) -> None:
    with pytest.raises(ValueError, match="list_ttl"):
        McpServer([served.add], list_ttl=ttl)


async def test_a_server_giving_each_caller_their_own_credentials_lists_privately() -> None:
    async def nobody(identity: Any, scheme: str) -> None:
        return None

    server = McpServer(StaticToolset([served.add]), credentials=UserCredentials(nobody))
    found = await hints(server)
    assert found["tools"] == (round(LIST_TTL * 1000), "private")
    assert found["resources"] == (round(LIST_TTL * 1000), "private")
