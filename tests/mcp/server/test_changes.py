"""Change announcements (`toolsets.mcp.server._changes`): clients hear when a served
`StaticToolset`'s tools, the server's own prompts or resources change, in both eras."""

from __future__ import annotations

from typing import Any

import anyio
import mcp.types as mt
import pytest

from tests.mcp.server.helpers import TRIP, review
from tests.mcp.server_helpers import connected
from toolsets import (
    StaticToolset,
    ToolNotFoundError,
    combined,
    tool,
)
from toolsets.mcp import (
    McpServer,
)

pytestmark = pytest.mark.anyio
MODES = pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])


@MODES
async def test_clients_hear_when_a_served_static_toolset_or_the_prompts_change(
    mode: str,
) -> None:
    @tool
    def fresh() -> str:
        """A new tool."""
        return "fresh"

    tools = StaticToolset([])
    server = McpServer(combined(tools), prompts=[review])
    changes: list[str] = []
    tools_changed, prompts_changed = anyio.Event(), anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, mt.ToolListChangedNotification):
            changes.append("tools")
            tools_changed.set()
        elif isinstance(message, mt.PromptListChangedNotification):
            changes.append("prompts")
            prompts_changed.set()

    async with connected(server, mode, message_handler=on_message) as client:
        await client.list_tools()
        if mode == "legacy":  # notifications on the session's own stream
            tools.push(fresh)
            with anyio.fail_after(10):
                await tools_changed.wait()
            server.add_prompts(TRIP)
            with anyio.fail_after(10):
                await prompts_changed.wait()
        else:  # the same notifications, on a subscriptions/listen stream
            async with client.listen(tools_list_changed=True, prompts_list_changed=True):
                tools.push(fresh)
                with anyio.fail_after(10):
                    await tools_changed.wait()
                server.add_prompts(TRIP)
                with anyio.fail_after(10):
                    await prompts_changed.wait()
        names = [t.name for t in (await client.list_tools()).tools]
        prompts = [p.name for p in (await client.list_prompts()).prompts]
        tools.remove("fresh")
        server.remove_prompt("trip")
        # Not listening now, a 2026-07-28 client may keep the lists for their ttlMs (an
        # hour for these): asked afresh.
        after = [t.name for t in (await client.list_tools(cache_mode="bypass")).tools]
        listed = await client.list_prompts(cache_mode="bypass")
        prompts_after = [p.name for p in listed.prompts]
    assert changes[:2] == ["tools", "prompts"]
    assert (names, prompts) == (["fresh"], ["review", "trip"])
    assert (after, prompts_after) == ([], ["review"])


def test_a_static_toolset_tells_its_listeners_of_pushes_and_removals() -> None:
    @tool
    def one() -> int:
        """One."""
        return 1

    tools = StaticToolset()
    heard: list[str] = []
    stop = tools.on_tools_changed(lambda: heard.append("changed"))
    tools.push(one)
    with pytest.raises(ToolNotFoundError) as unknown:
        tools.remove("one", "two")
    tools.remove("one")
    stop()
    stop()
    tools.push(one)
    assert heard == ["changed", "changed"]
    assert unknown.value.name == "two"
