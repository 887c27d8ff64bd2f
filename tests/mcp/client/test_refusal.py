"""An HTTP MCP server refusing the credential the toolset sends (401, or 403
``insufficient_scope``): an `AuthError` that says so, never the generic "cannot
connect", and never a secret; the session is dropped on a 401, and the next request
opens a new one. In front of a real MCP server on 127.0.0.1 (our `McpServer` over
streamable HTTP, served by uvicorn) that checks the ``Authorization`` header."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest

from tests.helpers import buffered, refuse, serve_app
from toolsets import AuthError, StaticToolset, ToolContext, tool
from toolsets.mcp import McpServer, McpToolset, StreamableHttp

pytestmark = pytest.mark.anyio

GOOD = "Bearer the-good-token-5b1f"
BAD = "Bearer the-revoked-token-93ce"


@tool
def echo(text: str) -> str:
    """Say it back."""
    return text


@tool
def purge() -> str:
    """Needs the scope ``admin``."""
    return "purged"


@dataclass
class Guard:
    """An ASGI app in front of ``app`` (the MCP server): lets through requests bearing
    an ``accepted`` token; answers the others 401, and a call of a tool in ``scoped``
    403 ``insufficient_scope`` naming the scope. Records the JSON-RPC method of each
    request let through."""

    app: Any = None
    accepted: set[str] = field(default_factory=lambda: {GOOD})
    scoped: dict[str, str] = field(default_factory=lambda: {"purge": "admin"})
    passed: list[str] = field(default_factory=list)
    refused: int = 0
    challenge: str = 'Bearer error="invalid_token"'
    """The ``WWW-Authenticate`` of a 401."""

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = dict(scope["headers"]).get(b"authorization", b"").decode()
        body, replay = await buffered(receive)
        rpc = json.loads(body) if body else {}
        challenge = None
        if given not in self.accepted:
            status, challenge = 401, self.challenge
        elif rpc.get("method") == "tools/call" and rpc["params"]["name"] in self.scoped:
            needed = self.scoped[rpc["params"]["name"]]
            status, challenge = 403, f'Bearer error="insufficient_scope", scope="{needed}"'
        if challenge is not None:
            self.refused += 1
            await refuse(send, status, challenge)
            return
        self.passed.append(rpc.get("method", scope["method"]))
        await self.app(scope, replay, send)


@dataclass
class Served:
    url: str
    guard: Guard


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    guard = Guard()

    def make() -> Any:
        guard.app = McpServer(StaticToolset([echo, purge]), name="guarded").http_app()
        return guard

    with serve_app(make, factory=True) as port:
        yield Served(f"http://127.0.0.1:{port}/mcp", guard)


@pytest.fixture
def guard(served: Served) -> Iterator[Guard]:
    served.guard.passed.clear()
    served.guard.refused = 0
    yield served.guard
    served.guard.accepted = {GOOD}
    served.guard.challenge = Guard.challenge


def toolset(served: Served, authorization: str, **options: Any) -> McpToolset:
    headers = {"Authorization": authorization}
    return McpToolset(StreamableHttp(url=served.url, headers=headers), name="guarded", **options)


async def test_a_refused_static_credential_is_an_auth_error_naming_the_status_not_cannot_connect(
    served: Served, guard: Guard
) -> None:
    with anyio.fail_after(20), pytest.raises(AuthError) as info:
        await toolset(served, BAD).list_tools()
    message = str(info.value)
    assert "MCP server guarded refused the credential" in message
    assert "HTTP 401 invalid_token" in message
    assert "cannot connect" not in message
    assert BAD.split()[1] not in message
    assert info.value.scheme_name == "guarded"
    assert guard.passed == []


async def test_entering_a_toolset_whose_credential_is_refused_raises_auth_error(
    served: Served, guard: Guard
) -> None:
    with anyio.fail_after(20), pytest.raises(AuthError) as info:
        async with toolset(served, BAD):
            pass
    assert "HTTP 401" in str(info.value)


async def test_a_credential_revoked_under_a_session_fails_the_call_and_the_next_reconnects(
    served: Served, guard: Guard
) -> None:
    with anyio.fail_after(30):
        async with toolset(served, GOOD, mode="legacy") as connected:
            (tool_,) = [t for t in await connected.list_tools() if t.name == "echo"]
            guard.accepted = set()  # revoked
            refused = await tool_.run({"text": "x"}, ToolContext())
            assert guard.passed.count("tools/call") == 0
            guard.accepted = {GOOD}  # accepted again (e.g. the operator renewed it)
            again = await connected.call_tool("echo", {"text": "back"})
    assert isinstance(refused, dict)
    assert refused["credential"] == "guarded"
    assert "refused the credential for the call to 'echo' (HTTP 401" in refused["error"]
    assert [c.text for c in again.content] == ["back"]  # type: ignore[union-attr]
    # The refused session was dropped: the next call opened a new one.
    assert guard.passed.count("initialize") == 2


async def test_a_call_lacking_a_scope_names_it_and_the_session_serves_the_next_call(
    served: Served, guard: Guard
) -> None:
    with anyio.fail_after(30):
        async with toolset(served, GOOD, mode="legacy") as connected:
            with pytest.raises(AuthError) as info:
                await connected.call_tool("purge")
            after = await connected.call_tool("echo", {"text": "still here"})
    message = str(info.value)
    assert "HTTP 403 insufficient_scope, which asks for the scope 'admin'" in message
    assert "purge" in message
    assert [c.text for c in after.content] == ["still here"]  # type: ignore[union-attr]
    assert guard.passed.count("initialize") == 1
    assert "tools/call" in guard.passed  # the echo, not the purge
    assert guard.passed.count("tools/call") == 1


async def test_a_challenge_quoting_the_credential_back_is_masked_in_the_error(
    served: Served, guard: Guard
) -> None:
    secret = BAD.split()[1]
    guard.challenge = f'Bearer error="{secret}", scope="{secret}"'
    with anyio.fail_after(20), pytest.raises(AuthError) as info:
        await toolset(served, BAD).list_tools()
    assert "HTTP 401" in str(info.value)
    assert secret not in str(info.value)
