"""`McpServer` over streamable HTTP: both protocol eras, stateful and stateless, the
request checks (Host and Origin against DNS rebinding, body size, malformed JSON and
JSON-RPC, missing protocol headers), a 2026-07-28 call (its ``Mcp-Param-*`` headers
checked without listing every tool; its confirmation taken once), and several uvicorn
workers serving one toolset."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx2
import mcp.types as mt
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client

from tests.helpers import ROOT, serve_app
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
from toolsets import BaseTool, Invocation, JsonValue, ToolAnnotations, ToolContext, tool
from toolsets._ids import new_id
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
            # accepts first (one still starting may take a while to answer).
            async with httpx2.AsyncClient(timeout=30) as http:
                transport = streamable_http_client(two_workers, http_client=http)
                async with Client(transport) as client:  # type: ignore[arg-type]
                    pid = await client.call_tool("pid", {})
                    added = await client.call_tool("add", {"a": attempt, "b": 1})
            assert texts(added) == [str(attempt + 1)]
            pids.add(int(texts(pid)[0]))
            if len(pids) == 2:
                break
    assert len(pids) == 2


BURST = 64
"""Connections opened at once: the kernel spreads them over the workers' sockets."""


def served_by(port: int) -> set[int]:
    """The processes that served `BURST` connections, all opened (waiting to be
    accepted) before any request is sent, each making one 2026-07-28 call of ``pid``. A
    worker still starting answers its connections once it has."""
    body, headers = modern_call("pid", {})
    content = json.dumps(body).encode()
    head = {**ACCEPT, **headers, "Host": f"127.0.0.1:{port}", "Connection": "close"}
    lines = [f"{name}: {value}" for name, value in head.items()]
    request = "\r\n".join(["POST /mcp HTTP/1.1", *lines, f"Content-Length: {len(content)}"])
    raw = request.encode() + b"\r\n\r\n" + content
    connections = [socket.create_connection(("127.0.0.1", port), timeout=60) for _ in range(BURST)]
    answers = []
    try:
        for sock in connections:
            sock.sendall(raw)
        for sock in connections:
            received = b""
            while chunk := sock.recv(65536):  # to the end: the server closes it
                received += chunk
            answers.append(received)
    finally:
        for sock in connections:
            sock.close()
    # The result's text, in one event of the stream (one chunk of the body).
    return {int(re.search(rb'"text":\s*"(\d+)"', answer)[1]) for answer in answers}  # type: ignore[index]


def test_connections_are_spread_over_the_workers_and_reach_a_killed_ones_replacement() -> None:
    server = TwoWorkers()
    server.start()  # the port takes connections: the workers may still be starting
    try:
        first = served_by(server.port)
        killed = min(first)
        os.kill(killed, signal.SIGKILL)
        # Opened at once, before the supervisor has even noticed: the connections the
        # kernel hands the dead worker's socket wait there for its replacement.
        after = served_by(server.port)
    finally:
        server.stop()
    assert len(first) == 2  # a burst on starting workers: each served some
    assert killed not in after
    assert len(after) == 2  # the survivor and the replacement
    assert len(after - first) == 1


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


# --- a 2026-07-28 call, and the answers to requests the transport cannot take -----------

MODERN = "2026-07-28"
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}
"""What every 2026-07-28 request carries in ``params._meta``."""
CONFIRM = "toolsets/confirm"


@dataclass
class Seen:
    """What the servers of `seen` saw: the tools' runs and the methods handled."""

    ran: list[str] = field(default_factory=list)
    methods: list[str] = field(default_factory=list)
    urls: dict[str, str] = field(default_factory=dict)
    """The MCP endpoint of the stateful server and of the stateless one."""


class Regional(BaseTool):
    """A tool whose ``region`` argument a client mirrors in an ``Mcp-Param-Region``
    header (for a proxy to route on)."""

    def __init__(self, seen: Seen) -> None:
        region = {"type": "string", "x-mcp-header": "Region"}
        parameters = {"type": "object", "properties": {"region": region}, "required": ["region"]}
        super().__init__(
            "regional",
            "Say where.",
            parameters=parameters,
            annotations=ToolAnnotations(read_only=True),
        )
        self.seen = seen

    async def run(self, args: Mapping[str, Any], ctx: ToolContext) -> JsonValue:
        self.seen.ran.append(args["region"])
        return f"in {args['region']}"


def recording_server(seen: Seen) -> McpServer:
    @tool(requires_confirmation=True, confirmation_hint="Really wipe?")
    def wipe(target: str) -> str:
        """Wipe something (asks first).

        Args:
            target: What.
        """
        seen.ran.append(target)
        return f"wiped {target}"

    async def record(ctx: Any, call_next: Any) -> Any:
        seen.methods.append(ctx.method)
        return await call_next(ctx)

    server = McpServer([wipe, Regional(seen)])
    server.server.middleware.insert(0, record)
    return server


@pytest.fixture(scope="module")
def seen() -> Iterator[Seen]:
    """A stateful and a stateless server over real HTTP on 127.0.0.1, sharing a `Seen`."""
    seen = Seen()
    with (
        serve_app(lambda: recording_server(seen).http_app(), factory=True) as stateful,
        serve_app(
            lambda: recording_server(seen).http_app(stateless=True), factory=True
        ) as stateless,
    ):
        seen.urls = {
            "stateful": f"http://127.0.0.1:{stateful}/mcp",
            "stateless": f"http://127.0.0.1:{stateless}/mcp",
        }
        yield seen


async def post(
    url: str, body: Any, headers: Mapping[str, str] | None = None
) -> tuple[int, dict[str, Any]]:
    """POST ``body`` as JSON: the status and the JSON-RPC answer (JSON or one event)."""
    with anyio.fail_after(20):
        async with httpx2.AsyncClient() as http:
            response = await http.post(url, json=body, headers={**ACCEPT, **(headers or {})})
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        data = [line[5:] for line in response.text.splitlines() if line.startswith("data:")]
        return response.status_code, json.loads([d for d in data if d.strip()][-1])
    answer: dict[str, Any] = response.json()
    return response.status_code, answer


def modern_call(
    name: str, arguments: dict[str, Any], **params: Any
) -> tuple[dict[str, Any], dict[str, str]]:
    """A 2026-07-28 ``tools/call``'s body and routing headers."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments, "_meta": ENVELOPE, **params},
    }
    headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": name}
    return body, headers


async def session_headers(url: str) -> dict[str, str]:
    """The headers of a 2025-11-25 session opened at ``url`` (none when stateless)."""
    with anyio.fail_after(20):
        async with httpx2.AsyncClient() as http:
            opened = await http.post(url, json=INITIALIZE, headers=ACCEPT)
            headers = {"MCP-Protocol-Version": "2025-11-25"}
            if "mcp-session-id" in opened.headers:
                headers["Mcp-Session-Id"] = opened.headers["mcp-session-id"]
            initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            await http.post(url, json=initialized, headers={**ACCEPT, **headers})
    return headers


@pytest.mark.parametrize("era", ["2025-11-25", MODERN])
async def test_a_call_with_arguments_lists_no_tools_in_either_era(seen: Seen, era: str) -> None:
    url = seen.urls["stateful"]
    region = new_id()
    if era == MODERN:
        body, headers = modern_call("regional", {"region": region})
        headers["Mcp-Param-Region"] = region
    else:
        headers = await session_headers(url)
        params = {"name": "regional", "arguments": {"region": region}}
        body = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params}
    before = len(seen.methods)
    status, answer = await post(url, body, headers)
    assert status == 200
    assert answer["result"]["content"] == [{"type": "text", "text": f"in {region}"}]
    handled = seen.methods[before:]
    assert handled.count("tools/call") == 1
    assert "tools/list" not in handled  # none to find the tool's schema (Mcp-Param-*)


async def test_on_2026_mcp_param_headers_must_mirror_the_arguments_the_tool_marks(
    seen: Seen,
) -> None:
    url = seen.urls["stateless"]
    region = new_id()
    body, headers = modern_call("regional", {"region": region})
    missing = await post(url, body, headers)
    other = await post(url, body, {**headers, "Mcp-Param-Region": "elsewhere"})
    mirrored = await post(url, body, {**headers, "Mcp-Param-Region": region})
    for status, answer in (missing, other):
        assert status == 400
        assert answer["error"]["code"] == -32020
        assert "Mcp-Param-Region" in answer["error"]["message"]
    assert mirrored[0] == 200
    assert mirrored[1]["result"]["content"] == [{"type": "text", "text": f"in {region}"}]
    assert seen.ran.count(region) == 1  # refused calls ran nothing


async def test_the_sdk_client_mirrors_a_marked_argument_and_its_call_is_served(
    seen: Seen,
) -> None:
    region = new_id()
    with anyio.fail_after(20):
        async with httpx2.AsyncClient() as http:
            transport = streamable_http_client(seen.urls["stateless"], http_client=http)
            async with Client(transport, mode=MODERN) as client:  # type: ignore[arg-type]
                await client.list_tools()
                said = await client.call_tool("regional", {"region": region})
    assert texts(said) == [f"in {region}"]


@pytest.mark.parametrize("mode", ["stateful", "stateless"])
async def test_on_2026_a_confirmation_is_taken_once_and_sent_again_runs_nothing(
    seen: Seen, mode: str
) -> None:
    target = new_id()
    accept = mt.ElicitResult(action="accept", content={})

    async def elicit(ctx: Any, params: mt.ElicitRequestParams) -> mt.ElicitResult:
        return accept  # the client can ask its user (the answers below are sent by hand)

    with anyio.fail_after(20):
        async with httpx2.AsyncClient() as http:
            transport = streamable_http_client(seen.urls[mode], http_client=http)
            async with Client(transport, mode=MODERN, elicitation_callback=elicit) as client:  # type: ignore[arg-type]
                asked = await client.session.call_tool(
                    "wipe", {"target": target}, allow_input_required=True
                )
                assert isinstance(asked, mt.InputRequiredResult)
                assert list(asked.input_requests or {}) == [CONFIRM]

                async def answer() -> mt.CallToolResult | mt.InputRequiredResult:
                    return await client.session.call_tool(
                        "wipe",
                        {"target": target},
                        input_responses={CONFIRM: accept},
                        request_state=asked.request_state,
                        allow_input_required=True,
                    )

                wiped = await answer()
                with pytest.raises(MCPError) as replayed:
                    await answer()
    assert isinstance(wiped, mt.CallToolResult)
    assert texts(wiped) == [f"wiped {target}"]
    assert replayed.value.code == -32602
    assert replayed.value.data == {"reason": "request_state_used"}
    assert "already used" in replayed.value.error.message
    assert seen.ran.count(target) == 1


async def test_on_2026_one_confirmation_sent_twice_at_once_runs_the_call_once(
    seen: Seen,
) -> None:
    url = seen.urls["stateless"]
    target = new_id()
    capable = {**ENVELOPE, "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}
    body, headers = modern_call("wipe", {"target": target})
    body["params"]["_meta"] = capable
    status, asked = await post(url, body, headers)
    assert status == 200
    state = asked["result"]["requestState"]
    body["params"] = {
        **body["params"],
        "inputResponses": {CONFIRM: {"action": "accept", "content": {}}},
        "requestState": state,
    }
    answers: list[tuple[int, dict[str, Any]]] = []

    async def send() -> None:
        answers.append(await post(url, body, headers))

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(send)
        tasks.start_soon(send)
    taken = [answer for status, answer in answers if status == 200]
    refused = [answer for status, answer in answers if status == 400]
    assert [answer["result"]["content"][0]["text"] for answer in taken] == [f"wiped {target}"]
    assert [answer["error"]["data"] for answer in refused] == [{"reason": "request_state_used"}]
    assert seen.ran.count(target) == 1


@pytest.mark.parametrize("mode", ["stateful", "stateless"])
async def test_a_batch_or_a_body_that_is_no_json_rpc_message_is_an_invalid_request(
    seen: Seen, mode: str
) -> None:
    url = seen.urls[mode]
    headers = await session_headers(url)
    listing = {"jsonrpc": "2.0", "id": 7, "method": "tools/list"}
    batch = await post(url, [listing, {**listing, "id": 8}], headers)
    number = await post(url, 42, headers)
    no_method = await post(url, {"jsonrpc": "2.0", "id": 9}, headers)
    bad_params = await post(url, {**listing, "params": [1]}, headers)
    for status, answer in (batch, number, no_method, bad_params):
        assert status == 400
        assert answer["error"]["code"] == -32600
        assert answer["error"]["message"].startswith("Invalid Request: ")
        assert "validation error" not in answer["error"]["message"].lower()  # not pydantic's
    assert "batch" in batch[1]["error"]["message"]
    assert [batch[1]["id"], no_method[1]["id"], bad_params[1]["id"]] == [None, 9, 7]
    status, listed = await post(url, listing, headers)  # the session still serves
    assert status == 200
    assert "tools" in listed["result"]


@pytest.mark.parametrize("mode", ["stateful", "stateless"])
async def test_a_2026_request_without_its_protocol_version_header_is_told_which_is_missing(
    seen: Seen, mode: str
) -> None:
    body, headers = modern_call("regional", {"region": "eu"})
    del headers["MCP-Protocol-Version"]
    before = len(seen.ran)
    missing = await post(seen.urls[mode], body, headers)
    other = await post(seen.urls[mode], body, {**headers, "MCP-Protocol-Version": "2025-11-25"})
    for status, answer in (missing, other):
        assert status == 400
        assert answer["error"]["code"] == -32020
        assert answer["id"] == 1
        assert "MCP-Protocol-Version" in answer["error"]["message"]
        assert "session" not in answer["error"]["message"].lower()
    assert "is missing" in missing[1]["error"]["message"]
    assert "'2025-11-25'" in other[1]["error"]["message"]
    assert len(seen.ran) == before


async def test_a_2025_request_without_a_session_is_told_which_header_is_missing(
    seen: Seen,
) -> None:
    listing = {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}
    status, answer = await post(seen.urls["stateful"], listing)
    assert status == 400
    assert answer["error"]["code"] == -32600
    assert answer["id"] == 3
    assert "Mcp-Session-Id header is missing" in answer["error"]["message"]


def test_workers_need_a_factory_and_stateless_mode() -> None:
    server = served.make_server()
    with pytest.raises(ValueError, match="factory"):
        server.run_http(port=0, workers=2, stateless=True)
    with pytest.raises(ValueError, match="stateless"):
        server.run_http(port=0, workers=2, factory="served:make_server")
    with pytest.raises(ValueError, match="module:attribute"):
        server.run_http(port=0, workers=2, factory="served", stateless=True)
    with pytest.raises(AttributeError):
        server.run_http(port=0, workers=2, factory="served:nothing", stateless=True)
    with pytest.raises(TypeError):
        server.run_http(port=0, workers=2, factory="served:PIXEL", stateless=True)
