"""Logging (`toolsets.mcp.server._logging`): a tool's ``ctx.log`` reaches its client at
or above the level it asked for: with ``logging/setLevel`` on 2025-11-25 (info and above
when it sets none), in the request's ``_meta`` on 2026-07-28 (nothing when it asks for
none)."""

from __future__ import annotations

from typing import Any

import mcp.types as mt
import pytest

from tests.mcp.server_helpers import connected, texts
from toolsets import (
    ToolContext,
)
from toolsets.mcp import McpServer

pytestmark = pytest.mark.anyio
MODES = pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])


async def chatty(ctx: ToolContext) -> str:
    """Logs at four levels."""
    await ctx.log("debug", "looking")
    await ctx.log("info", "found", count=2)
    await ctx.log("warning", "odd")
    await ctx.log("error", "broken", where="disk")
    return "done"


async def set_level(client: Any, level: mt.LoggingLevel) -> None:
    """``logging/setLevel``, sent raw (the client's own method warns that logging is
    deprecated, on 2026-07-28)."""
    request = mt.SetLevelRequest(params=mt.SetLevelRequestParams(level=level))
    await client.session.send_request(request, mt.EmptyResult)


@MODES
async def test_a_tool_logs_to_the_client_at_or_above_the_level_it_asked_for(mode: str) -> None:
    heard: list[mt.LoggingMessageNotificationParams] = []

    async def on_log(params: mt.LoggingMessageNotificationParams) -> None:
        heard.append(params)

    options: dict[str, Any] = {"log_level": "info"} if mode != "legacy" else {}
    async with connected(McpServer([chatty]), mode, logging_callback=on_log, **options) as client:
        if mode == "legacy":
            await set_level(client, "info")
        result = await client.call_tool("chatty", {})
    assert texts(result) == ["done"]
    assert [(p.level, p.data) for p in heard] == [
        ("info", {"count": 2, "message": "found"}),
        ("warning", "odd"),
        ("error", {"where": "disk", "message": "broken"}),
    ]
    assert {p.logger for p in heard} == {"toolsets.tool.chatty"}


async def test_a_2025_client_that_sets_no_level_hears_info_and_above() -> None:
    heard: list[str] = []

    async def on_log(params: mt.LoggingMessageNotificationParams) -> None:
        heard.append(params.level)

    async with connected(McpServer([chatty]), "legacy", logging_callback=on_log) as client:
        await client.call_tool("chatty", {})
        await set_level(client, "error")
        await client.call_tool("chatty", {})
    assert heard == ["info", "warning", "error", "error"]


async def test_a_2026_client_that_asks_for_no_log_level_hears_no_log_message() -> None:
    heard: list[str] = []

    async def on_log(params: mt.LoggingMessageNotificationParams) -> None:
        heard.append(params.level)

    async with connected(McpServer([chatty]), "2026-07-28", logging_callback=on_log) as client:
        result = await client.call_tool("chatty", {})
    assert texts(result) == ["done"]
    assert heard == []
