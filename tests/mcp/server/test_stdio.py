"""`McpServer.run_stdio`: a real client over a subprocess's stdin and stdout."""

from __future__ import annotations

import sys

import anyio
import pytest
from mcp import Client, StdioServerParameters

from tests.mcp.server_helpers import SERVED, SRC, texts

pytestmark = pytest.mark.anyio
MODES = pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])


async def test_the_sdk_client_over_stdio_lists_every_page_and_stdout_holds_only_the_protocol() -> (
    None
):
    params = StdioServerParameters(
        command=sys.executable, args=[SERVED, "stdio"], env={"PYTHONPATH": SRC}
    )
    with anyio.fail_after(30):
        async with Client(params) as client:
            names: list[str] = []
            cursor: str | None = None
            pages = 0
            while True:
                page = await client.list_tools(cursor=cursor)
                names += [t.name for t in page.tools]
                pages += 1
                cursor = page.next_cursor
                if not cursor:
                    break
            # A tool printing to stdout while serving does not break the protocol.
            shouted = await client.call_tool("shout", {})
            added = await client.call_tool("add", {"a": 2, "b": 3})
    assert pages == 3  # page_size=3, nine tools
    assert names == ["add", "describe", "pixel", "refuse", "shout", "pid", "count", "wait", "wipe"]
    assert texts(shouted) == ["shouted"]
    assert texts(added) == ["5"]
