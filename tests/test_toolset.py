from __future__ import annotations

from collections.abc import Sequence

import anyio
import pytest

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
    tool,
)

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


class Lifecycle(BaseToolset):
    """A toolset that records opening and closing, like one holding a connection."""

    def __init__(self, tools: Sequence[Tool] = ()) -> None:
        self.tools = tuple(tools)
        self.opened = 0
        self.closed = 0
        self._open = False

    async def __aenter__(self) -> Lifecycle:
        self.opened += 1
        self._open = True
        return self

    async def list_tools(self, ctx: ToolContext | None = None) -> Sequence[Tool]:
        return self.tools

    async def shutdown(self) -> None:
        if self._open:  # idempotent: release once
            self._open = False
            self.closed += 1


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


async def test_a_toolset_may_answer_differently_per_context() -> None:
    toolset = PerUser()
    admin = ToolContext(Invocation(user_id="admin"))
    guest = ToolContext(Invocation(user_id="guest"))
    assert [t.name for t in await toolset.list_tools(admin)] == ["get_weather", "book_flight"]
    assert [t.name for t in await toolset.list_tools(guest)] == ["get_weather"]
    assert [t.name for t in await toolset.list_tools()] == ["get_weather"]


async def test_async_with_opens_and_shuts_down() -> None:
    toolset = Lifecycle()
    async with toolset as entered:
        assert entered is toolset
        assert toolset.opened == 1
    assert toolset.closed == 1


async def test_shutdown_is_idempotent_and_async_with_shuts_down_on_error() -> None:
    toolset = Lifecycle()
    with pytest.raises(RuntimeError):
        async with toolset:
            raise RuntimeError("boom")
    await toolset.shutdown()
    await toolset.shutdown()
    assert toolset.closed == 1


async def test_shutdown_may_be_called_from_another_task() -> None:
    toolset = Lifecycle()
    await toolset.__aenter__()
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(toolset.shutdown)
            tg.start_soon(toolset.shutdown)
    assert toolset.closed == 1


async def test_a_static_toolset_shuts_down_without_error_any_number_of_times() -> None:
    toolset = StaticToolset([get_weather])
    async with toolset:
        pass
    await toolset.shutdown()
    assert [t.name for t in await toolset.list_tools()] == ["get_weather"]
