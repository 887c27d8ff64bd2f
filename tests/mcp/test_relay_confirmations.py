"""``McpToolset(relay_confirmations=True)``: a gateway's upstream layer answers the
upstream server's own confirmation of a call the user confirmed already (asked once,
not once per server), in both protocol eras; an unconfirmed call's is declined."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from tests.mcp.server_helpers import uvicorn_thread
from toolsets import StaticToolset, ToolConfirmation, ToolContext, tool
from toolsets.mcp import McpServer, McpToolset, StreamableHttp

pytestmark = pytest.mark.anyio

MODES = ["legacy", "2026-07-28"]


def _upstream(wiped: list[str]) -> McpServer:
    """A server whose one tool asks for confirmation (by elicitation) itself."""

    @tool(requires_confirmation=True)
    def wipe(disk: str) -> str:
        """Erase a disk."""
        wiped.append(disk)
        return f"{disk} wiped"

    return McpServer(StaticToolset([wipe]), name="upstream")


async def _call(url: str, mode: str, *, confirmed: bool | None, relay: bool = True) -> Any:
    ctx = ToolContext()
    if confirmed is not None:
        ctx.tool_confirmation = ToolConfirmation(confirmed=confirmed)
    with anyio.fail_after(30):
        async with McpToolset(
            StreamableHttp(url=url),
            mode=mode,
            relay_confirmations=relay,  # type: ignore[arg-type]
        ) as gateway:
            wipe = await gateway.get_tool("wipe")
            return await wipe.run({"disk": "sda"}, ctx)


@pytest.mark.parametrize("mode", MODES)
async def test_a_confirmed_call_answers_the_servers_own_confirmation(mode: str) -> None:
    wiped: list[str] = []
    async with uvicorn_thread(_upstream(wiped).http_app) as url:
        assert await _call(url, mode, confirmed=True) == "sda wiped"
    assert wiped == ["sda"]


@pytest.mark.parametrize("mode", MODES)
async def test_an_unconfirmed_call_leaves_the_servers_confirmation_unanswered(mode: str) -> None:
    wiped: list[str] = []
    async with uvicorn_thread(_upstream(wiped).http_app) as url:
        for confirmed in (None, False):
            refused = await _call(url, mode, confirmed=confirmed)
            assert isinstance(refused, dict)
            assert "error" in refused
        # Without relaying: the client cannot be asked at all.
        without = await _call(url, mode, confirmed=True, relay=False)
        assert isinstance(without, dict)
        assert without.get("confirmation_needed") is True, without
    assert wiped == []
