"""`McpServer` finds the tool a call names in the listing it answers from: in a big
catalogue, when two tools share a name, and when the listing changes between calls."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from tests.mcp.server_helpers import connected, texts
from toolsets import BaseToolset, FunctionTool, Tool, ToolContext
from toolsets.mcp import McpServer

pytestmark = pytest.mark.anyio


def answering(name: str, answer: str) -> FunctionTool:
    def say() -> str:
        return answer

    return FunctionTool(say, name=name)


class Listing(BaseToolset):
    """Lists whatever `tools` holds when asked (a tuple or a list, as it was given)."""

    def __init__(self, tools: Sequence[Tool]) -> None:
        self.tools = tools

    async def list_tools(self, ctx: ToolContext | None = None) -> Sequence[Tool]:
        return self.tools


async def test_a_call_reaches_its_tool_among_a_thousand_and_the_first_of_a_shared_name() -> None:
    many = tuple(answering(f"tool_{n}", f"answer {n}") for n in range(1000))
    server = McpServer(Listing((*many, answering("tool_7", "the second tool_7"))))
    async with connected(server, "legacy") as client:
        last = await client.call_tool("tool_999", {})
        shared = await client.call_tool("tool_7", {})
        again = await client.call_tool("tool_999", {})
    assert texts(last) == texts(again) == ["answer 999"]
    assert texts(shared) == ["answer 7"]


@pytest.mark.parametrize("kind", [tuple, list])
async def test_a_tool_added_to_the_listing_between_two_calls_is_found(kind: type) -> None:
    listing = Listing(kind([answering("first", "one")]))
    server = McpServer(listing)
    async with connected(server, "legacy") as client:
        before = await client.call_tool("second", {})
        if kind is list:
            listing.tools.append(answering("second", "two"))  # type: ignore[attr-defined]
        else:
            listing.tools = (*listing.tools, answering("second", "two"))
        after = await client.call_tool("second", {})
        first = await client.call_tool("first", {})
    assert before.is_error
    assert texts(after) == ["two"]
    assert texts(first) == ["one"]
