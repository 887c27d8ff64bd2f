"""`McpServer` over streamable HTTP: both protocol eras, stateful and stateless, the
request checks (Host and Origin against DNS rebinding, body size, malformed JSON), and
several uvicorn workers serving one toolset."""

from __future__ import annotations

import json
import os
import socket
import sys
from collections.abc import Iterator
from typing import Any

import anyio
import httpx2
import mcp.types as mt
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.helpers import ROOT
from tests.mcp.helpers import HttpServer
from tests.mcp.server_helpers import (
    ACCEPT,
    BASE,
    INITIALIZE,
    SRC,
    http_client,
    served,
    texts,
    uvicorn_thread,
)
from toolsets import Invocation, ToolContext
from toolsets.mcp import IncomingRequest, McpServer

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("stateless", [False, True])
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_sdk_client_lists_and_calls_in_both_eras_stateful_or_not(
    mode: str, stateless: bool
) -> None:
    async with http_client(served.make_server(), stateless=stateless) as http:
        with anyio.fail_after(20):
            transport = streamable_http_client(f"{BASE}/mcp", http_client=http)
            async with Client(transport, mode=mode) as client:  # type: ignore[arg-type]
                listed = await client.list_tools()
                added = await client.call_tool("add", {"a": 40, "b": 2})
                version = client.protocol_version
    assert [t.name for t in listed.tools] == ["add", "describe", "pixel"]
    assert texts(added) == ["42"]
    assert version == ("2026-07-28" if mode == "auto" else "2025-11-25")


async def test_a_host_or_origin_not_of_this_machine_is_refused() -> None:
    async with http_client(served.make_server()) as http:
        wrong_host = await http.post(
            "/mcp", json=INITIALIZE, headers={**ACCEPT, "Host": "evil.example"}
        )
        wrong_origin = await http.post(
            "/mcp", json=INITIALIZE, headers={**ACCEPT, "Origin": "http://evil.example"}
        )
        local = await http.post(
            "/mcp", json=INITIALIZE, headers={**ACCEPT, "Origin": "http://localhost:3000"}
        )
    assert wrong_host.status_code == 421
    assert wrong_origin.status_code == 403
    assert local.status_code == 200


async def test_hosts_named_by_the_operator_are_accepted() -> None:
    server = served.make_server()
    async with http_client(server, allowed_hosts=["mcp.example.com"]) as http:
        named = await http.post(
            "/mcp", json=INITIALIZE, headers={**ACCEPT, "Host": "mcp.example.com"}
        )
        local = await http.post("/mcp", json=INITIALIZE, headers=ACCEPT)
    assert named.status_code == 200
    assert local.status_code == 421


async def test_a_body_over_the_limit_is_refused_before_it_is_read() -> None:
    async with http_client(served.make_server(), max_body_bytes=1000) as http:
        big = {**INITIALIZE, "params": {**INITIALIZE["params"], "padding": "x" * 2000}}  # type: ignore[dict-item]
        response = await http.post("/mcp", content=json.dumps(big), headers=ACCEPT)
    assert response.status_code == 413


@pytest.mark.parametrize("stateless", [False, True])
async def test_a_malformed_request_is_a_json_rpc_error(stateless: bool) -> None:
    async with http_client(served.make_server(), stateless=stateless) as http:
        response = await http.post("/mcp", content=b"{not json", headers=ACCEPT)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32700


class TwoWorkers(HttpServer):
    """The fixture toolset served statelessly by two uvicorn worker processes."""

    def command(self) -> tuple[list[str], dict[str, str]]:
        path = os.pathsep.join([SRC, str(ROOT / "fixtures" / "mcp")])
        args = [sys.executable, str(ROOT / "fixtures" / "mcp" / "served.py"), "http"]
        return [*args, str(self.port), "2"], {**os.environ, "PYTHONPATH": path}


@pytest.fixture(scope="module")
def two_workers() -> Iterator[str]:
    server = TwoWorkers()
    server.start()
    yield server.url
    server.stop()


async def test_two_stateless_workers_share_the_calls_and_both_answer_right(
    two_workers: str,
) -> None:
    pids: set[int] = set()
    with anyio.fail_after(60):
        for attempt in range(40):
            # A new connection each time: the kernel hands it to whichever worker
            # accepts first.
            async with httpx2.AsyncClient() as http:
                transport = streamable_http_client(two_workers, http_client=http)
                async with Client(transport) as client:  # type: ignore[arg-type]
                    pid = await client.call_tool("pid", {})
                    added = await client.call_tool("add", {"a": attempt, "b": 1})
            assert texts(added) == [str(attempt + 1)]
            pids.add(int(texts(pid)[0]))
            if len(pids) == 2:
                break
    assert len(pids) == 2


def test_every_worker_closes_a_connection_that_sends_nothing(two_workers: str) -> None:
    # The limits reach uvicorn's worker processes (by the environment) too: each closes
    # an idle connection at the fixture's header timeout (1 s), well before the default
    # (10 s) would. The kernel hands each connection to either worker.
    port = int(two_workers.split(":")[2].split("/")[0])
    idle = [socket.create_connection(("127.0.0.1", port), timeout=6) for _ in range(4)]
    try:
        assert [sock.recv(1) for sock in idle] == [b""] * 4  # closed, not a timeout
    finally:
        for sock in idle:
            sock.close()


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_confirmation_is_asked_over_http_in_both_eras(mode: str) -> None:
    asked: list[str] = []

    async def elicit(ctx: Any, params: mt.ElicitRequestParams) -> mt.ElicitResult:
        asked.append(params.message)
        return mt.ElicitResult(action="accept")

    async with uvicorn_thread(served.make_server().http_app) as url:
        with anyio.fail_after(20):
            async with httpx2.AsyncClient() as http:
                transport = streamable_http_client(url, http_client=http)
                async with Client(transport, mode=mode, elicitation_callback=elicit) as client:  # type: ignore[arg-type]
                    wiped = await client.call_tool("wipe", {"target": "disk"})
    assert asked == ["Really wipe?"]
    assert texts(wiped) == ["wiped disk"]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_session_id_the_client_chose_is_not_taken_without_a_session(mode: str) -> None:
    incoming: list[str | None] = []
    seen: list[str | None] = []

    def session(ctx: ToolContext) -> str:
        """The session the call runs in."""
        seen.append(ctx.invocation.session_id)
        return "ok"

    def invocation(request: IncomingRequest) -> Invocation:
        incoming.append(request.session_id)
        return Invocation()

    async with (
        http_client(McpServer([session]), stateless=True) as http,
        http_client(McpServer([session], invocation=invocation), stateless=True) as asking,
    ):
        for client_of in (http, asking):
            client_of.headers["Mcp-Session-Id"] = "chosen-by-the-client"
            with anyio.fail_after(20):
                transport = streamable_http_client(f"{BASE}/mcp", http_client=client_of)
                async with Client(transport, mode=mode) as client:  # type: ignore[arg-type]
                    await client.call_tool("session", {})
    assert incoming[-1] is None  # the request's session, as the IncomingRequest says
    assert "chosen-by-the-client" not in seen  # nor the default invocation's


async def test_a_stateful_session_is_the_invocations_session() -> None:
    seen: list[str | None] = []

    def session(ctx: ToolContext) -> str:
        """The session the call runs in."""
        seen.append(ctx.invocation.session_id)
        return "ok"

    async with http_client(McpServer([session])) as http:
        with anyio.fail_after(20):
            transport = streamable_http_client(f"{BASE}/mcp", http_client=http)
            async with Client(transport, mode="legacy") as client:  # type: ignore[arg-type]
                await client.call_tool("session", {})
                await client.call_tool("session", {})
    assert seen[0] is not None
    assert seen == [seen[0]] * 2
