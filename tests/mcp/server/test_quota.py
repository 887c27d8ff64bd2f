"""Sessions bounded per client (2025-11-25 stateful HTTP), against real servers on
127.0.0.1: past ``max_sessions_per_client`` a client's new session gets 429 saying why,
its open sessions still serve, one ended frees its place, another client (another
address, or another token's subject behind the same address) is not held back, and
2026-07-28 requests (which open none) are never counted."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import httpx2
import pytest

from tests.helpers import serve_app
from tests.mcp.server.auth_helpers import protected
from tests.mcp.server.oidc import OpenIdProvider
from tests.mcp.server.test_http import modern_call
from tests.mcp.server_helpers import ACCEPT, INITIALIZE, served
from toolsets.mcp import McpServer

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    """A stateful server letting a client hold two sessions."""
    make = lambda: McpServer([served.add]).http_app(max_sessions_per_client=2)  # noqa: E731
    with serve_app(make, factory=True) as port:
        yield f"http://127.0.0.1:{port}/mcp"


async def open_session(url: str, token: str | None = None) -> httpx2.Response:
    """An ``initialize`` POST opening a session (with ``token`` as its bearer)."""
    headers = {**ACCEPT, **({"Authorization": f"Bearer {token}"} if token else {})}
    with anyio.fail_after(20):
        async with httpx2.AsyncClient() as http:
            return await http.post(url, json=INITIALIZE, headers=headers)


async def end_session(url: str, session: str) -> int:
    with anyio.fail_after(20):
        async with httpx2.AsyncClient() as http:
            headers = {"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"}
            return (await http.delete(url, headers=headers)).status_code


async def test_a_client_past_its_sessions_gets_429_and_one_ended_frees_a_place(url: str) -> None:
    opened = [await open_session(url), await open_session(url)]
    assert [each.status_code for each in opened] == [200, 200]
    refused = await open_session(url)
    assert refused.status_code == 429
    error: dict[str, Any] = refused.json()["error"]
    assert "Too many open sessions for this client: it may hold 2 at once" in error["message"]
    # 2026-07-28 requests open no session: answered whatever the client holds.
    body, headers = modern_call("add", {"a": 1, "b": 2})
    with anyio.fail_after(20):
        async with httpx2.AsyncClient() as http:
            modern = await http.post(url, json=body, headers={**ACCEPT, **headers})
    assert modern.status_code == 200
    assert await end_session(url, opened[0].headers["mcp-session-id"]) in (200, 204)
    again = await open_session(url)
    assert again.status_code == 200
    for each in (opened[1], again):
        assert await end_session(url, each.headers["mcp-session-id"]) in (200, 204)


async def test_with_tokens_each_subject_has_its_own_sessions(
    openid_provider: OpenIdProvider,
) -> None:
    server = protected(openid_provider, [])
    with serve_app(lambda: server.http_app(max_sessions_per_client=1), factory=True) as port:
        url = f"http://127.0.0.1:{port}/mcp"
        service = await openid_provider.token(url)
        other = await openid_provider.token(url, client="opaque-service")
        first = await open_session(url, service)
        second = await open_session(url, service)
        others = await open_session(url, other)
    assert first.status_code == 200
    assert second.status_code == 429
    assert others.status_code == 200  # the same address, another subject


def test_a_bad_bound_is_refused() -> None:
    with pytest.raises(ValueError, match="max_sessions_per_client must be positive"):
        McpServer([served.add]).http_app(max_sessions_per_client=0)


async def test_by_default_one_client_cannot_take_more_than_a_hundred_sessions() -> None:
    with serve_app(lambda: McpServer([served.add]).http_app(), factory=True) as port:
        url = f"http://127.0.0.1:{port}/mcp"
        with anyio.fail_after(60):
            async with httpx2.AsyncClient() as http:
                statuses = [
                    (await http.post(url, json=INITIALIZE, headers=ACCEPT)).status_code
                    for _ in range(101)
                ]
    assert statuses == [200] * 100 + [429]


async def test_a_session_whose_answer_has_gone_out_counts_once_while_its_handler_ends() -> None:
    # The client may ask for its next session as soon as it has read an answer, before
    # the server's handler of that answer has returned: the session was then counted
    # twice (held, and still being opened), and a client opening sessions one after
    # another got 429 one early, as the sessions' own SDK handler ran late under load.
    from toolsets.mcp.server._quota import SessionQuota

    answered, release = anyio.Event(), anyio.Event()
    made: list[str] = []

    async def sessions(scope: Any, receive: Any, send: Any) -> None:
        made.append(f"session-{len(made)}")
        head = [(b"mcp-session-id", made[-1].encode())]
        await send({"type": "http.response.start", "status": 200, "headers": head})
        await send({"type": "http.response.body", "body": b""})
        if len(made) == 1:
            answered.set()
            await release.wait()  # its handler still running

    quota = SessionQuota(sessions, path="/mcp", limit=2, open_sessions=lambda: made)
    statuses: list[int] = []

    async def post() -> None:
        scope = {"type": "http", "method": "POST", "path": "/mcp", "headers": []}
        scope["client"] = ("127.0.0.1", 5000)

        async def receive() -> Any:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: Any) -> None:
            if message["type"] == "http.response.start":
                statuses.append(message["status"])

        await quota(scope, receive, send)

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(post)
            await answered.wait()
            await post()
            release.set()
        await post()  # the third, past the two
    assert statuses == [200, 200, 429]
