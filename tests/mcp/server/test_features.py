"""`McpServer` as a composition of features (`toolsets.mcp.server._server`, `_feature`): each
registers the requests it answers on the SDK's low-level server, whose advertised
capabilities follow from what is registered; the same in both protocol eras."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client

from toolsets.mcp import McpServer

pytestmark = pytest.mark.anyio

ANSWERED = {
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
    "subscriptions/listen",
}
"""Every request toolsets' server answers itself (beyond the SDK's own: ping, discovery)."""

CAPABILITIES: dict[str, Any] = {
    "completions": {},
    "logging": {},
    "prompts": {"listChanged": True},
    "resources": {"subscribe": True, "listChanged": True},
    "tools": {"listChanged": True},
}


def test_every_request_a_feature_answers_is_registered_on_the_sdks_server() -> None:
    server = McpServer([])
    missing = {method for method in ANSWERED if server.server.get_request_handler(method) is None}
    assert missing == set()


def test_two_servers_register_handlers_of_their_own() -> None:
    first, second = McpServer([], name="first"), McpServer([], name="second")
    for method in ANSWERED:
        mine = first.server.get_request_handler(method)
        theirs = second.server.get_request_handler(method)
        assert mine is not None
        assert theirs is not None
        assert mine.handler != theirs.handler, method


async def test_a_2025_client_is_told_every_capability_and_that_each_list_may_change() -> None:
    async with Client(McpServer([]).server, mode="legacy") as client:
        told = client.server_capabilities
    assert told is not None
    assert told.model_dump(exclude_none=True, by_alias=True, exclude={"extensions"}) == (
        CAPABILITIES
    )


def test_on_2026_the_lists_are_announced_through_subscriptions_listen() -> None:
    # The SDK derives listChanged and subscribe from subscriptions/listen being served.
    capabilities = McpServer([]).server.get_capabilities(protocol_version="2026-07-28")
    assert capabilities.model_dump(exclude_none=True, by_alias=True) == CAPABILITIES
