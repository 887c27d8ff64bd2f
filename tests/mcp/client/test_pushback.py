"""An MCP server over streamable HTTP pushing back: a 429 or 503 (with ``Retry-After``)
from a gateway in front of it, or from the server with its own JSON-RPC error, is the
tool's error result with the ``status`` and ``retry_after`` (as an OpenAPI tool's), which
`Retry` tries again for a tool safe to repeat and never for another; the session keeps
serving. A connection refused before the call was sent is tried again whatever the tool.

The server is our `McpServer` over real uvicorn on 127.0.0.1, behind a front (an ASGI app
in the same server) that answers a tool's next calls as planned and counts what arrived."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import mcp.types as mt
import pytest

from tests.helpers import buffered, free_port, serve_app
from tests.mcp.helpers import HttpServer
from toolsets import ToolAnnotations, ToolCallError, ToolContext, tool
from toolsets._invoke import Done, invoke
from toolsets.calls import Retry, ToolCall, wrap_calls
from toolsets.mcp import McpServer, McpTool, McpToolset, StreamableHttp

pytestmark = pytest.mark.anyio

FAST = Retry(tries=3, backoff=0.01, max_backoff=0.02)
RAN: Counter[str] = Counter()
"""The runs of the served tools, by name (in the server's thread)."""


@tool(read_only=True)
def lookup(key: str) -> str:
    """Look a key up."""
    RAN["lookup"] += 1
    return f"value of {key}"


@tool(annotations=ToolAnnotations(idempotent=True, destructive=False))
def put_setting(name: str) -> str:
    """Set a setting (the same call twice sets it once)."""
    RAN["put_setting"] += 1
    return f"{name} set"


@tool(annotations=ToolAnnotations(destructive=False))
def place_order(item: str) -> str:
    """Place an order (twice is two orders)."""
    RAN["place_order"] += 1
    return f"ordered {item}"


class Front:
    """The network edge in front of the server: answers a tool's next calls as planned
    (status, headers, content type, body) instead of passing them on, and counts the
    JSON-RPC requests that arrived, by method, and the tool calls, by tool."""

    def __init__(self) -> None:
        self.plan: dict[str, list[tuple[int, dict[str, str], str, bytes]]] = {}
        self.methods: Counter[str] = Counter()
        self.calls: Counter[str] = Counter()

    def app(self) -> Any:
        inner = McpServer([lookup, put_setting, place_order]).http_app()

        async def front(scope: dict[str, Any], receive: Any, send: Any) -> None:
            if scope["type"] != "http" or scope["method"] != "POST":
                return await inner(scope, receive, send)
            body, receive = await buffered(receive)
            message = json.loads(body)
            self.methods[message.get("method")] += 1
            if message.get("method") == "tools/call":
                name = message["params"]["name"]
                self.calls[name] += 1
                planned = self.plan.get(name)
                if planned:
                    return await answer(send, *planned.pop(0))
            return await inner(scope, receive, send)

        return front


async def answer(send: Any, status: int, extra: dict[str, str], kind: str, body: bytes) -> None:
    head = [(b"content-type", kind.encode()), (b"content-length", b"%d" % len(body))]
    head += [(k.encode(), v.encode()) for k, v in extra.items()]
    await send({"type": "http.response.start", "status": status, "headers": head})
    await send({"type": "http.response.body", "body": body})


def busy(retry_after: str | None = "0") -> tuple[int, dict[str, str], str, bytes]:
    """A gateway's 429, in plain text."""
    headers = {"retry-after": retry_after} if retry_after is not None else {}
    return (429, headers, "text/plain", b"Too Many Requests")


def draining(message: str) -> tuple[int, dict[str, str], str, bytes]:
    """A server's own 503, its JSON-RPC error in the body (no ``Retry-After``)."""
    error = {"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": message}}
    return (503, {}, "application/json", json.dumps(error).encode())


@pytest.fixture(scope="module")
def front() -> Front:
    return Front()


@pytest.fixture(scope="module")
def url(front: Front) -> Iterator[str]:
    with serve_app(front.app, factory=True) as port:
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.fixture(autouse=True)
def fresh(front: Front) -> None:
    front.plan.clear()
    front.methods.clear()
    front.calls.clear()
    RAN.clear()


@asynccontextmanager
async def tools(url: str, mode: str = "auto", *wrappers: Any) -> AsyncIterator[dict[str, Any]]:
    """The server's tools by name, over one session (``mode``'s era), wrapped."""
    toolset = McpToolset(StreamableHttp(url=url), confirm="never", mode=mode)
    async with wrap_calls(toolset, *wrappers) if wrappers else toolset as opened:
        yield {each.name: each for each in await opened.list_tools()}


async def called(tool_: Any, args: dict[str, Any]) -> Any:
    outcome = await invoke(tool_, args, ToolContext(), default_timeout=20)
    assert isinstance(outcome, Done)
    return outcome.result


class Watch:
    """A wrapper outside `Retry`: the calls it saw (each with its tries)."""

    def __init__(self) -> None:
        self.calls: list[ToolCall] = []

    async def __call__(self, call: ToolCall, call_next: Any) -> Any:
        self.calls.append(call)
        return await call_next(call)


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_a_gateways_429_is_an_error_result_with_its_status_and_the_session_serves_on(
    url: str, front: Front, mode: str
) -> None:
    front.plan["lookup"] = [busy("2")]
    async with tools(url, mode) as found:
        refused = await called(found["lookup"], {"key": "a"})
        after = await called(found["lookup"], {"key": "b"})
    assert isinstance(refused, dict)
    assert (refused["status"], refused["retry_after"]) == (429, 2.0)
    assert "is busy (HTTP 429 Too Many Requests)" in refused["error"]
    assert "try again in 2 s" in refused["error"]
    assert after == "value of b"
    assert RAN["lookup"] == 1
    # The same session throughout: no second handshake, no reconnection.
    # One session throughout: one handshake (2025-11-25) or one listener (2026-07-28).
    assert front.methods["initialize"] + front.methods["subscriptions/listen"] == 1


async def test_a_servers_own_503_says_its_message_and_no_wait_it_did_not_ask_for(
    url: str, front: Front
) -> None:
    front.plan["lookup"] = [draining("Draining for a deploy")]
    async with tools(url) as found:
        result = await called(found["lookup"], {"key": "a"})
    assert isinstance(result, dict)
    assert result["status"] == 503
    assert "retry_after" not in result
    assert "is unavailable (HTTP 503 Service Unavailable)" in result["error"]
    assert "Draining for a deploy" in result["error"]


async def test_a_502_is_an_error_result_with_its_status_that_retry_leaves_by_default(
    url: str, front: Front
) -> None:
    front.plan["lookup"] = [(502, {}, "text/plain", b"Bad Gateway")]
    async with tools(url, "auto", FAST) as found:
        result = await called(found["lookup"], {"key": "a"})
    assert isinstance(result, dict)
    assert result["status"] == 502
    assert "Server returned an error response" not in result["error"]  # the SDK's stand-in
    assert front.calls["lookup"] == 1


async def test_the_raw_call_raises_a_tool_call_error_carrying_status_and_retry_after(
    url: str, front: Front
) -> None:
    front.plan["lookup"] = [busy("1")]
    async with McpToolset(StreamableHttp(url=url)) as toolset:
        with pytest.raises(ToolCallError) as info:
            await toolset.call_tool("lookup", {"key": "a"})
    assert info.value.tool_name == "lookup"
    assert (getattr(info.value, "status", None), getattr(info.value, "retry_after", None)) == (
        429,
        1.0,
    )


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
@pytest.mark.parametrize("name", ["lookup", "put_setting"])
async def test_a_tool_safe_to_repeat_answered_429_is_tried_again_until_it_succeeds(
    url: str, front: Front, mode: str, name: str
) -> None:
    front.plan[name] = [busy("0"), draining("Draining")]
    watch = Watch()
    async with tools(url, mode, watch, FAST) as found:
        result = await called(found[name], {"key": "a"} if name == "lookup" else {"name": "a"})
        again = await called(found[name], {"key": "b"} if name == "lookup" else {"name": "b"})
    assert result in ("value of a", "a set")
    assert again in ("value of b", "b set")
    assert [t.status for t in watch.calls[0].tries] == [429, 503, None]
    assert (front.calls[name], RAN[name]) == (4, 2)


async def test_a_tool_safe_to_repeat_still_busy_after_its_tries_says_how_many_it_took(
    url: str, front: Front
) -> None:
    front.plan["lookup"] = [busy("0")] * 3
    async with tools(url, "auto", FAST) as found:
        result = await called(found["lookup"], {"key": "a"})
    assert isinstance(result, dict)
    assert (result["status"], result["retry_after"], result["tries"]) == (429, 0.0, 3)
    assert (front.calls["lookup"], RAN["lookup"]) == (3, 0)


async def test_a_tool_not_safe_to_repeat_answered_429_arrives_once_and_the_model_is_told(
    url: str, front: Front
) -> None:
    front.plan["place_order"] = [busy("0"), busy("0")]
    watch = Watch()
    async with tools(url, "auto", watch, FAST) as found:
        result = await called(found["place_order"], {"item": "tea"})
        assert (front.calls["place_order"], RAN["place_order"]) == (1, 0)
        # The next call (once the server takes calls again) runs on the same session.
        front.plan.clear()
        after = await called(found["place_order"], {"item": "cake"})
    assert isinstance(result, dict)
    assert (result["status"], result["retry_after"]) == (429, 0.0)
    assert "tries" not in result
    assert [t.status for t in watch.calls[0].tries] == [429]
    assert after == "ordered cake"
    assert (front.calls["place_order"], RAN["place_order"]) == (2, 1)


# --- no connection: nothing was sent -----------------------------------------------------


async def test_a_session_that_cannot_be_opened_is_tried_again_whatever_the_tool() -> None:
    closed = free_port()  # nothing listens there
    toolset = McpToolset(StreamableHttp(url=f"http://127.0.0.1:{closed}/mcp"), confirm="never")
    declared = mt.Tool(name="place_order", input_schema={"type": "object"})
    watch = Watch()
    try:  # (not entered: it would connect at once)
        result = await called(wrap_calls(McpTool(toolset, declared), watch, FAST), {})
    finally:
        await toolset.shutdown()
    assert isinstance(result, dict)
    assert "cannot connect" in result["error"]
    assert [t.error for t in watch.calls[0].tries] == ["ConnectionError"] * 3


async def test_a_call_whose_connection_is_refused_mid_session_was_not_sent_and_is_tried_again(
    http_server: HttpServer,
) -> None:
    # The fixture server of this module, in a process of its own: killed and started again.
    restartable = http_server
    watch = Watch()
    toolset = McpToolset(StreamableHttp(url=restartable.url), confirm="never")
    async with wrap_calls(toolset, watch, FAST) as wrapped:
        found = {each.name: each for each in await wrapped.list_tools()}
        killed = restartable.process
        assert killed is not None
        killed.kill()  # (gone at once: terminated, it waits for our open stream)
        killed.wait(10)
        try:
            refused = await called(found["append_line"], {"line": "x"})
        finally:
            restartable.start()
        after = await called(found["append_line"], {"line": "y"})
        received = await called(found["calls_received"], {})
    assert isinstance(refused, dict)
    assert "cannot connect" in refused["error"]
    assert [t.error for t in watch.calls[0].tries] == ["ConnectionError"] * 3
    assert after == {"result": "appended y"}
    assert received == {"result": ["append_line", "calls_received"]}  # in the new process
