"""Where tools come from: `BaseToolset`'s defaults, `StaticToolset`, and the shutdown
contract every toolset of the core keeps."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import anyio
import pytest

from tests.helpers import MinimalTool
from toolsets import (
    BaseToolset,
    FunctionTool,
    Invocation,
    StaticToolset,
    Tool,
    ToolContext,
    ToolDefinitionError,
    ToolNotFoundError,
    Toolset,
    combined,
    filtered,
    prefixed,
    renamed,
    tool,
)
from toolsets.agent import LlmAgent
from toolsets.models import ScriptedModel

pytestmark = pytest.mark.anyio


@tool(read_only=True)
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


@tool
def book_flight(to: str) -> str:
    """Book a flight."""
    return f"booked to {to}"


def plain_function(x: int) -> int:
    return x * 2


class Counting(BaseToolset):
    """Counts its shutdowns and guards nothing: what the tests see is `BaseToolset`'s."""

    def __init__(self) -> None:
        self.shutdowns = 0

    async def list_tools(self, ctx: ToolContext | None = None) -> Sequence[Tool]:
        return (get_weather,)

    async def shutdown(self) -> None:
        self.shutdowns += 1


class Default(BaseToolset):
    """Only the one abstract method: every default of `BaseToolset` in use."""

    async def list_tools(self, ctx: ToolContext | None = None) -> Sequence[Tool]:
        return (get_weather,)


class PerUser(BaseToolset):
    """Answers differently per user: admins see more tools."""

    async def list_tools(self, ctx: ToolContext | None = None) -> Sequence[Tool]:
        if ctx is not None and ctx.user_id == "admin":
            return (get_weather, book_flight)
        return (get_weather,)


async def test_a_static_toolset_lists_its_tools_in_order() -> None:
    toolset = StaticToolset([get_weather, book_flight, plain_function])
    names = [t.name for t in await toolset.list_tools()]
    assert names == ["get_weather", "book_flight", "plain_function"]
    assert isinstance(toolset, Toolset)


async def test_push_adds_tools_and_rejects_a_taken_name_adding_nothing() -> None:
    toolset = StaticToolset([get_weather])
    toolset.push(book_flight)
    with pytest.raises(ToolDefinitionError) as info:
        toolset.push(plain_function, FunctionTool(get_weather.fn))
    assert info.value.tool_name == "get_weather"
    assert [t.name for t in await toolset.list_tools()] == ["get_weather", "book_flight"]


def test_two_tools_with_one_name_in_the_constructor_are_rejected() -> None:
    with pytest.raises(ToolDefinitionError):
        StaticToolset([get_weather, FunctionTool(get_weather.fn)])


def test_something_that_is_not_a_tool_is_rejected() -> None:
    with pytest.raises(ToolDefinitionError):
        StaticToolset(["not a tool"])  # type: ignore[list-item]


async def test_get_tool_finds_by_name_or_lists_what_is_available() -> None:
    toolset = StaticToolset([get_weather, book_flight])
    assert await toolset.get_tool("book_flight") is book_flight
    with pytest.raises(ToolNotFoundError) as info:
        await toolset.get_tool("get_wether")
    assert info.value.name == "get_wether"
    assert info.value.available == ("book_flight", "get_weather")
    assert "book_flight, get_weather" in str(info.value)


async def test_get_tool_looks_among_the_tools_offered_in_the_callers_context() -> None:
    toolset = PerUser()
    admin = ToolContext(Invocation(user_id="admin"))
    guest = ToolContext(Invocation(user_id="guest"))
    assert await toolset.get_tool("book_flight", admin) is book_flight
    for ctx in (guest, None):
        with pytest.raises(ToolNotFoundError) as info:
            await toolset.get_tool("book_flight", ctx)
        assert info.value.available == ("get_weather",)


async def test_async_with_enters_as_the_toolset_itself_and_shuts_it_down_once() -> None:
    toolset = Counting()
    async with toolset as entered:
        assert entered is toolset
        assert toolset.shutdowns == 0
    assert toolset.shutdowns == 1


async def test_async_with_shuts_down_on_error_and_lets_the_error_through() -> None:
    toolset = Counting()
    error = RuntimeError("boom")
    with pytest.raises(RuntimeError) as info:
        async with toolset:
            raise error
    assert info.value is error
    assert toolset.shutdowns == 1


TOOLSETS = {
    "base defaults": lambda: Default(),
    "static": lambda: StaticToolset([get_weather]),
    "filtered": lambda: filtered(StaticToolset([get_weather]), ["get_weather"]),
    "prefixed": lambda: prefixed(StaticToolset([get_weather]), "a"),
    "renamed": lambda: renamed(StaticToolset([get_weather]), {"get_weather": "weather"}),
    "combined": lambda: combined(StaticToolset([get_weather]), StaticToolset([book_flight])),
}
"""Every toolset of the core (no server needed), built fresh for each test."""


@pytest.mark.parametrize("make", TOOLSETS.values(), ids=list(TOOLSETS))
async def test_shutdown_works_twice_at_once_from_other_tasks_and_again_on_exit(
    make: Callable[[], Toolset],
) -> None:
    toolset = make()
    async with toolset:
        listed = [t.name for t in await toolset.list_tools()]
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(toolset.shutdown)
                tg.start_soon(toolset.shutdown)
    await toolset.shutdown()
    assert [t.name for t in await toolset.list_tools()] == listed


ToolWithoutTimeout: type = type(
    "ToolWithoutTimeout",
    (),
    {key: value for key, value in vars(MinimalTool).items() if key != "timeout"},
)
"""A tool written against the contract before ``timeout`` was declared on it."""


def test_a_tool_lacking_a_declared_member_is_rejected_naming_what_it_lacks() -> None:
    with pytest.raises(ToolDefinitionError) as info:
        StaticToolset([ToolWithoutTimeout()])  # type: ignore[list-item]
    assert info.value.field == "timeout"


@pytest.mark.parametrize("member", ["refusal", "call_declaration"])
def test_a_tool_written_before_a_member_was_declared_is_rejected_naming_it(member: str) -> None:
    older = type(
        "Older", (), {key: value for key, value in vars(MinimalTool).items() if key != member}
    )
    with pytest.raises(ToolDefinitionError) as info:
        StaticToolset([older()])
    assert info.value.field == member


def test_an_agent_rejects_a_tool_lacking_a_member_and_says_toolsets_are_accepted_too() -> None:
    with pytest.raises(ToolDefinitionError) as info:
        LlmAgent("a", ScriptedModel([]), tools=[ToolWithoutTimeout()])  # type: ignore[list-item]
    assert info.value.field == "timeout"
    assert "a tool, a toolset or a function" in str(info.value)
