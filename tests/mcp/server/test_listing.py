"""How `McpServer` lists a tool and finds the one a call names: each declaration made
once, a tool that cannot be a weak key listed all the same; the tool a call names found
in the listing it answers from (in a big catalogue, when two tools share a name, when the
listing changes between calls)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from tests.mcp.server_helpers import connected, texts
from toolsets import BaseToolset, FunctionTool, StaticToolset, Tool, ToolContext, ToolDeclaration
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


class _CountedTool(FunctionTool):
    """A function tool counting how often it is asked for its declaration."""

    asked = 0

    def declaration(self) -> ToolDeclaration | None:
        type(self).asked += 1
        return super().declaration()


async def test_listing_a_tool_asks_for_its_declaration_once() -> None:
    counted = _CountedTool(shout)
    async with connected(McpServer([counted]), "2026-07-28") as client:
        _CountedTool.asked = 0
        await client.list_tools()
    assert _CountedTool.asked == 1


class Unreferenceable:
    """A tool with ``__slots__`` and no ``__weakref__`` (as a ``dataclass(slots=True)``
    is): it cannot be a weak key."""

    __slots__ = ("_tool",)

    def __init__(self, tool: Any) -> None:
        self._tool = tool

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tool, name)


def shout(text: str) -> str:
    """Say it louder."""
    return text.upper()


async def test_a_tool_that_cannot_be_weakly_referenced_is_listed_and_called() -> None:
    server = McpServer(StaticToolset([Unreferenceable(FunctionTool(shout))]))
    async with connected(server, "legacy") as client:
        for _ in range(2):
            listed = await client.list_tools()
            assert [t.name for t in listed.tools] == ["shout"]
        result = await client.call_tool("shout", {"text": "hi"})
    assert texts(result) == ["HI"]
