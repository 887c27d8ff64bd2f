"""Request states taken once (`toolsets.mcp.server._spent`): the store of the states taken,
and servers that share it."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import mcp.types as mt
import pytest
from mcp import Client, MCPError

from tests.mcp.server_helpers import connected, texts
from toolsets import ToolsetError, tool
from toolsets.mcp import McpServer, MemorySpentStates, SpentStates

pytestmark = pytest.mark.anyio

CONFIRM = "toolsets/confirm"
ACCEPT = {CONFIRM: mt.ElicitResult(action="accept", content={})}


async def test_a_state_is_taken_once_and_forgotten_when_its_lifetime_is_over() -> None:
    spent = MemorySpentStates()
    assert isinstance(spent, SpentStates)
    assert await spent.spend("a", 600)
    assert not await spent.spend("a", 600)
    assert await spent.spend("b", 0)  # a lifetime over at once: nothing left to refuse
    assert await spent.spend("b", 0)
    assert len(spent) == 1


async def test_a_full_store_refuses_to_take_more_rather_than_forget_one() -> None:
    spent = MemorySpentStates(limit=1)
    assert await spent.spend("a", 600)
    with pytest.raises(ToolsetError, match="at most 1 request states"):
        await spent.spend("b", 600)
    assert not await spent.spend("a", 600)  # still remembered
    with pytest.raises(ValueError, match="limit"):
        MemorySpentStates(limit=0)


def wiping(ran: list[str], **options: Any) -> McpServer:
    @tool(requires_confirmation=True)
    def wipe(target: str) -> str:
        """Wipe something.

        Args:
            target: What.
        """
        ran.append(target)
        return f"wiped {target}"

    return McpServer([wipe], **options)


async def accept(ctx: Any, params: mt.ElicitRequestParams) -> mt.ElicitResult:
    return mt.ElicitResult(action="accept", content={})


async def asked(client: Client, target: str) -> str:
    """The request state of a first call to ``wipe``, which asks for confirmation."""
    first = await client.session.call_tool("wipe", {"target": target}, allow_input_required=True)
    assert isinstance(first, mt.InputRequiredResult)
    assert first.request_state is not None
    return first.request_state


async def answered(client: Client, target: str, state: str) -> mt.CallToolResult:
    result = await client.session.call_tool(
        "wipe",
        {"target": target},
        input_responses=ACCEPT,  # type: ignore[arg-type]
        request_state=state,
        allow_input_required=True,
    )
    assert isinstance(result, mt.CallToolResult)
    return result


@asynccontextmanager
async def two_replicas(
    ran: list[str], one: SpentStates, other: SpentStates
) -> AsyncIterator[tuple[Client, Client]]:
    """Two `wiping` servers sharing a state key, taking states in ``one`` and
    ``other``, and a 2026-07-28 client of each."""
    key = secrets.token_hex(32)
    servers = wiping(ran, spent_states=one), wiping(ran, spent_states=other)
    for server in servers:
        server.use_request_state_keys([key])
    async with (
        connected(servers[0], "2026-07-28", elicitation_callback=accept) as first,
        connected(servers[1], "2026-07-28", elicitation_callback=accept) as second,
    ):
        yield first, second


async def test_servers_sharing_a_store_and_a_key_take_a_confirmation_once_between_them() -> None:
    ran: list[str] = []
    spent = MemorySpentStates()  # what a store on Redis would be to two processes
    async with two_replicas(ran, spent, spent) as (first, second):
        state = await asked(first, "disk")
        wiped = await answered(first, "disk", state)
        with pytest.raises(MCPError) as replayed:
            await answered(second, "disk", state)
    assert texts(wiped) == ["wiped disk"]
    assert replayed.value.data == {"reason": "request_state_used"}
    assert ran == ["disk"]


async def test_a_state_the_store_cannot_take_refuses_the_call_and_nothing_runs() -> None:
    ran: list[str] = []
    server = wiping(ran, spent_states=MemorySpentStates(limit=1))
    async with connected(server, "2026-07-28", elicitation_callback=accept) as client:
        await answered(client, "disk", await asked(client, "disk"))
        state = await asked(client, "tape")
        with pytest.raises(MCPError) as refused:
            await answered(client, "tape", state)
    assert refused.value.code == -32603
    assert refused.value.data == {"reason": "request_state_store_unavailable"}
    assert "could not be taken now" in refused.value.error.message
    assert ran == ["disk"]
