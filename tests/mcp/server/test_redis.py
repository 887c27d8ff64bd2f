"""The request states taken, in Redis (`toolsets.mcp.server._redis`), against a real
``redis-server``: taken once between servers, refused clearly while Redis is down, and
taken again once it is back."""

from __future__ import annotations

import logging
import secrets
from collections.abc import Iterator

import pytest
import redis
from mcp import MCPError

from tests.mcp.server.redis_helpers import RedisServer
from tests.mcp.server.test_spent import accept, answered, asked, two_replicas, wiping
from tests.mcp.server_helpers import connected, texts
from toolsets import ToolsetError
from toolsets.mcp import RedisSpentStates, SpentStates

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisServer]:
    server = RedisServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def spent(redis_server: RedisServer) -> Iterator[RedisSpentStates]:
    # Keys of a prefix of their own: the tests share the server, and the two backends
    # run every test.
    store = RedisSpentStates(redis_server.url, prefix=f"test:{secrets.token_hex(4)}:")
    try:
        yield store
    finally:
        store.close()


async def test_a_state_is_taken_once_and_expires_in_redis_with_its_lifetime(
    spent: RedisSpentStates, redis_server: RedisServer
) -> None:
    assert isinstance(spent, SpentStates)
    assert await spent.spend("a", 600)
    assert not await spent.spend("a", 600)
    # Another client of the same Redis (another replica) is refused it too.
    other = RedisSpentStates(redis_server.url, prefix=spent.prefix)
    assert not await other.spend("a", 600)
    other.close()
    direct = redis.Redis.from_url(redis_server.url)
    try:
        lifetime = direct.pttl(f"{spent.prefix}a")
    finally:
        direct.close()
    assert 590_000 < lifetime <= 600_000


async def test_replicas_sharing_redis_and_a_key_run_a_confirmation_once(
    redis_server: RedisServer, spent: RedisSpentStates
) -> None:
    ran: list[str] = []
    other_store = RedisSpentStates(redis_server.url, prefix=spent.prefix)
    async with two_replicas(ran, spent, other_store) as (first, second):
        state = await asked(first, "disk")
        wiped = await answered(second, "disk", state)  # asked by one, answered by the other
        with pytest.raises(MCPError) as replayed:
            await answered(first, "disk", state)
    other_store.close()
    assert texts(wiped) == ["wiped disk"]
    assert replayed.value.data == {"reason": "request_state_used"}
    assert ran == ["disk"]


async def test_redis_down_refuses_the_answer_clearly_and_it_is_taken_once_redis_is_back(
    caplog: pytest.LogCaptureFixture,
) -> None:
    down = RedisServer()  # a Redis of its own: this test stops it
    down.start()
    store = RedisSpentStates(down.url, timeout=1)
    ran: list[str] = []
    server = wiping(ran, spent_states=store)
    try:
        async with connected(server, "2026-07-28", elicitation_callback=accept) as client:
            assert await store.spend("before", 600)  # a pooled connection, then Redis goes
            state = await asked(client, "disk")
            down.stop()
            with caplog.at_level(logging.WARNING, "toolsets.mcp.server"):
                with pytest.raises(MCPError) as refused:
                    await answered(client, "disk", state)
                with pytest.raises(ToolsetError, match=f"Redis at {down.url}"):
                    await store.ping()
                down.start()
                wiped = await answered(client, "disk", state)
    finally:
        store.close()
        down.stop()
    assert refused.value.code == -32603
    assert refused.value.data == {"reason": "request_state_store_unavailable"}
    assert "Redis at redis://127.0.0.1" in refused.value.error.message
    assert "nothing ran" in refused.value.error.message
    assert texts(wiped) == ["wiped disk"]
    assert ran == ["disk"]
    said = [record.getMessage() for record in caplog.records]
    assert sum("cannot be reached" in line for line in said) == 1  # once per outage
    assert any("answers again" in line for line in said)


def test_a_password_in_the_url_is_never_shown() -> None:
    store = RedisSpentStates("redis://:sekrit-pw@127.0.0.1:1/0")
    assert "sekrit" not in repr(store)
    assert store.where == "redis://127.0.0.1:1/0"
    store.close()
    with pytest.raises(ValueError, match="not a Redis URL") as wrong:
        RedisSpentStates("http://:sekrit-pw@127.0.0.1:1/0")
    assert "sekrit" not in str(wrong.value)
    with pytest.raises(ValueError, match="url or a client"):
        RedisSpentStates()
    with pytest.raises(ValueError, match="timeout"):
        RedisSpentStates("redis://127.0.0.1", timeout=0)
