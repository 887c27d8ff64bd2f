"""Requests without a session that cannot open one (2025-11-25 stateful HTTP), against a
real server on 127.0.0.1: a GET or DELETE without ``Mcp-Session-Id``, another method, an
``initialize`` notification or one with bad params, an ``initialize`` the transport
refuses: each is refused, names no session in its answer, and leaves the session
manager's sessions (what `SessionQuota` counts) as they were, so a client making many
holds no place and a real client still opens a session."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import httpx2
import pytest

from tests.helpers import serve_app
from tests.mcp.helpers import eventually
from tests.mcp.server_helpers import ACCEPT, INITIALIZE, served
from toolsets.mcp import McpServer

pytestmark = pytest.mark.anyio

ROUNDS = 50
"""Each refused request below is sent this many times (500 requests in all)."""
PLACES = 6
"""Sessions a client may hold: more than the POSTs below in flight at once (each counts
while it is answered)."""


class Served:
    """A stateful server letting a client hold `PLACES` sessions, and its session manager."""

    def __init__(self) -> None:
        self.manager: Any = None
        self.url = ""

    def make(self) -> Any:
        app = McpServer([served.add]).http_app(max_sessions_per_client=PLACES)
        # The SDK's route app holds the session manager whose sessions SessionQuota reads.
        (self.manager,) = [r.app.session_manager for r in app.routes if hasattr(r, "app")]
        return app

    def sessions(self) -> int:
        return len(self.manager._server_instances)


@pytest.fixture(scope="module")
def server() -> Iterator[Served]:
    made = Served()
    with serve_app(made.make, factory=True) as port:
        made.url = f"http://127.0.0.1:{port}/mcp"
        # Served once the app is made (in uvicorn's thread, before it answers).
        assert httpx2.get(f"http://127.0.0.1:{port}/healthz", timeout=20).status_code == 200
        yield made


def refused_requests() -> list[tuple[str, dict[str, str], Any]]:
    """Ten kinds of request without a session that cannot open one."""
    params = INITIALIZE["params"]
    return [
        ("GET", {}, None),  # curl -i URL
        ("GET", {"Accept": "text/event-stream"}, None),
        ("DELETE", {}, None),
        ("PUT", ACCEPT, INITIALIZE),
        ("OPTIONS", {}, None),
        ("POST", ACCEPT, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        ("POST", ACCEPT, {"jsonrpc": "2.0", "method": "initialize", "params": params}),
        ("POST", ACCEPT, {**INITIALIZE, "params": {}}),
        ("POST", ACCEPT, {**INITIALIZE, "params": {**params, "capabilities": 3}}),
        ("POST", {**ACCEPT, "Accept": "text/html"}, INITIALIZE),
    ]


async def test_refused_requests_without_a_session_neither_make_nor_keep_one(
    server: Served,
) -> None:
    before = server.sessions()
    answers: list[httpx2.Response] = []

    async def send(method: str, headers: dict[str, str], body: Any) -> None:
        async with httpx2.AsyncClient() as http:
            for _ in range(ROUNDS):
                answers.append(await http.request(method, server.url, headers=headers, json=body))

    with anyio.fail_after(120):
        async with anyio.create_task_group() as tg:
            for each in refused_requests():
                tg.start_soon(send, *each)
    assert len(answers) == 500
    assert {each.status_code for each in answers} == {400, 405, 406}
    assert [each for each in answers if "mcp-session-id" in each.headers] == []
    codes = {each.json()["error"]["code"] for each in answers if each.content}
    assert codes == {-32600, -32602}
    # None kept: one the SDK admitted before refusing the request may take a moment to
    # be discarded (its server task ending), but not the idle timeout's half hour.

    async def none_kept() -> bool:
        return server.sessions() == before

    await eventually(none_kept)
    # A real client from the same address (whose places leaked sessions would take)
    # still opens a session, and ends it.
    with anyio.fail_after(20):
        async with httpx2.AsyncClient() as http:
            opened = await http.post(server.url, json=INITIALIZE, headers=ACCEPT)
            assert opened.status_code == 200
            assert server.sessions() == before + 1
            session = {"Mcp-Session-Id": opened.headers["mcp-session-id"]}
            session["MCP-Protocol-Version"] = "2025-11-25"
            ended = await http.delete(server.url, headers=session)
    assert ended.status_code in (200, 204)

    async def ended_now() -> bool:
        return server.sessions() == before

    await eventually(ended_now)


async def test_a_get_or_delete_without_a_session_says_what_it_needs(server: Served) -> None:
    with anyio.fail_after(20):
        async with httpx2.AsyncClient() as http:
            got = await http.get(server.url)
            other = await http.patch(server.url)
    assert got.status_code == 400
    assert "needs the Mcp-Session-Id header" in got.json()["error"]["message"]
    assert other.status_code == 405
    assert other.headers["allow"] == "GET, POST, DELETE"
