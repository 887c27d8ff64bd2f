"""`RateLimit` against a real HTTP server on 127.0.0.1 that allows a rate per client and
answers 429 past it: kept under the limit, calls wait their turn and none is refused; a
turn that would come after the call's deadline is not sent, and the model is told when
to try again. Buckets by upstream host, by tool, by caller."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from tests.helpers import serve_app
from tests.mcp.helpers import stdio_toolset
from toolsets import FunctionTool, ToolContext
from toolsets._context import Identity, Invocation
from toolsets._invoke import Done, invoke
from toolsets.calls import RateLimit, ToolCall, upstream_of, wrap_calls
from toolsets.openapi import OpenApiToolset

pytestmark = pytest.mark.anyio

RATE = 5.0
"""Calls a second the upstream allows each client (its bucket holds as many)."""


class Upstream:
    """An ASGI app allowing `RATE` requests a second (a burst of as many), by client
    address, 429 with ``Retry-After`` past it; it counts what it answered."""

    def __init__(self) -> None:
        self.allowed = 0
        self.refused = 0
        self._buckets: dict[str, tuple[float, float]] = {}

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        assert scope["type"] == "http"
        client = scope["client"][0]
        now = time.monotonic()
        tokens, stamp = self._buckets.get(client, (RATE, now))
        tokens = min(RATE, tokens + (now - stamp) * RATE)
        if tokens >= 1 - 1e-6:  # a little slack for the clocks' rounding
            self._buckets[client] = (tokens - 1, now)
            self.allowed += 1
            status, body, extra = 200, b'{"ok": true}', []
        else:
            self._buckets[client] = (tokens, now)
            self.refused += 1
            status, body, extra = 429, b"{}", [(b"retry-after", b"1")]
        head = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
        await send({"type": "http.response.start", "status": status, "headers": head + extra})
        await send({"type": "http.response.body", "body": body})


def spec() -> dict[str, Any]:
    answer = {"200": {"description": "ok"}}
    return {
        "openapi": "3.1.0",
        "info": {"title": "limited", "version": "1"},
        "paths": {
            "/a": {"get": {"operationId": "getA", "responses": answer}},
            "/b": {"get": {"operationId": "getB", "responses": answer}},
        },
    }


@pytest.fixture
def upstream() -> Iterator[tuple[Upstream, str]]:
    app = Upstream()
    with serve_app(app) as port:
        yield app, f"http://127.0.0.1:{port}"


async def calls(toolset: Any, names: list[str], deadline: float = 10) -> list[Any]:
    """Each of ``names`` called at once through ``toolset``: the results."""
    results: dict[int, Any] = {}
    async with toolset:
        tools = {t.name: t for t in await toolset.list_tools()}

        async def one(index: int, name: str) -> None:
            outcome = await invoke(tools[name], {}, ToolContext(), default_timeout=deadline)
            assert isinstance(outcome, Done)
            results[index] = outcome.result

        async with anyio.create_task_group() as group:
            for index, name in enumerate(names):
                group.start_soon(one, index, name)
    return [results[i] for i in range(len(names))]


async def test_calls_over_the_rate_wait_their_turn_and_the_upstream_refuses_none(
    upstream: tuple[Upstream, str],
) -> None:
    app, url = upstream
    # Just under the upstream's rate: 9 calls at once, the first 4 now, then one each
    # 0.25 s.
    limited = wrap_calls(OpenApiToolset(spec(), base_url=url), RateLimit(rate=4, burst=4))
    started = time.monotonic()
    results = await calls(limited, ["getA", "getB"] * 4 + ["getA"])
    assert results == [{"ok": True}] * 9
    assert (app.allowed, app.refused) == (9, 0)
    assert time.monotonic() - started >= 1.2  # 5 waited their turn: 0.25 s apart


async def test_without_the_limit_a_burst_is_refused_by_the_upstream(
    upstream: tuple[Upstream, str],
) -> None:
    # What the limit is for: twenty calls at once, unlimited, outrun the upstream's five
    # a second (unless the machine took four seconds to send them).
    app, url = upstream
    results = await calls(OpenApiToolset(spec(), base_url=url), ["getA"] * 20)
    refused = [r for r in results if isinstance(r, dict) and r.get("status") == 429]
    assert app.refused >= 1
    assert len(refused) == app.refused
    assert all(r["retry_after"] == 1 for r in refused)


async def test_a_turn_after_the_calls_deadline_is_not_sent_and_says_when_to_try_again(
    upstream: tuple[Upstream, str],
) -> None:
    app, url = upstream
    limited = wrap_calls(OpenApiToolset(spec(), base_url=url), RateLimit(rate=1, per=10))
    first, second = await calls(limited, ["getA", "getA"], deadline=2)
    refused = second if first == {"ok": True} else first
    assert isinstance(refused, dict)
    assert "rate limit of 1 calls per 10 s to 127.0.0.1" in refused["error"]
    assert 9 <= refused["retry_after"] <= 10
    assert app.allowed == 1  # the refused call was never sent


def test_the_upstream_of_a_rest_tool_is_its_host_of_a_function_its_name() -> None:
    async def main() -> None:
        toolset = OpenApiToolset(spec(), base_url="https://api.example.com/v1")
        async with toolset:
            tool = (await toolset.list_tools())[0]
            assert upstream_of(tool) == "api.example.com"
            assert upstream_of(wrap_calls(tool, RateLimit(rate=1))) == "api.example.com"

    anyio.run(main)

    def add(a: int) -> int:
        """Add."""
        return a

    assert upstream_of(FunctionTool(add)) == "add"


async def test_each_caller_has_a_bucket_of_its_own_when_asked() -> None:
    def ping() -> str:
        """Ping."""
        return "pong"

    limit = RateLimit(rate=1, per=60, per_caller=True)
    tool = wrap_calls(FunctionTool(ping), limit)

    async def as_caller(subject: str) -> Any:
        who = Identity(subject=subject, issuer="https://login.example.com")
        ctx = ToolContext(Invocation(identity=who))
        outcome = await invoke(tool, {}, ctx, default_timeout=1)
        assert isinstance(outcome, Done)
        return outcome.result

    assert await as_caller("alice") == "pong"
    assert await as_caller("bob") == "pong"  # her bucket is empty, his is not
    refused = await as_caller("alice")
    assert isinstance(refused, dict)
    assert "rate limit" in refused["error"]


async def test_a_key_of_its_own_puts_tools_in_one_bucket() -> None:
    def one() -> str:
        """One."""
        return "1"

    def two() -> str:
        """Two."""
        return "2"

    def everyone(call: ToolCall) -> str:
        return "all"

    limit = RateLimit(rate=1, per=60, by=everyone)
    ctx = ToolContext
    first = await invoke(wrap_calls(FunctionTool(one), limit), {}, ctx(), default_timeout=1)
    second = await invoke(wrap_calls(FunctionTool(two), limit), {}, ctx(), default_timeout=1)
    assert isinstance(first, Done)
    assert first.result == "1"
    assert isinstance(second, Done)
    assert isinstance(second.result, dict)
    assert "to all" in second.result["error"]


def test_rate_limit_refuses_settings_that_make_no_sense() -> None:
    with pytest.raises(ValueError, match="rate must be a positive number"):
        RateLimit(rate=0)
    with pytest.raises(ValueError, match="per must be"):
        RateLimit(rate=1, per=float("inf"))
    with pytest.raises(ValueError, match="burst must be at least 1"):
        RateLimit(rate=1, burst=0.5)
    with pytest.raises(ValueError, match="by must be 'upstream', 'tool' or a function"):
        RateLimit(rate=1, by="host")  # type: ignore[arg-type]


async def test_the_upstream_of_an_mcp_tool_is_its_server() -> None:
    async with stdio_toolset(name="fixture") as toolset:
        tool = (await toolset.list_tools())[0]
        assert upstream_of(tool) == "mcp:fixture"
