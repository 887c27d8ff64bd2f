"""Resumable event streams of `McpServer` over streamable HTTP (2025-11-25, SEP-1699): the
priming event and ``retry``, a tool closing its call's stream and the result arriving on
a GET with ``Last-Event-ID``, each session's events kept apart (request ids repeat between
sessions), and the bounds of `SessionEventStore`."""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator
from contextlib import aclosing, asynccontextmanager
from typing import Any

import anyio
import httpx2
import mcp.types as mt
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import JSONRPCNotification, JSONRPCResponse

from tests.mcp.server_helpers import INITIALIZE, texts, uvicorn_thread
from toolsets import StaticToolset, ToolContext, tool
from toolsets.mcp import McpServer, SessionEventStore

pytestmark = pytest.mark.anyio

ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
VERSION = {"mcp-protocol-version": "2025-11-25"}

PRIMED: dict[str, threading.Event] = {}
"""Per word: set by a test once it has read its call's priming event (the server runs in
another thread), so that the tool closes the stream only after that."""


@tool
async def echo_later(word: str, ctx: ToolContext) -> str:
    """Close this call's stream, then answer.

    Args:
        word: What to answer.
    """
    primed = PRIMED.get(word)
    if primed is not None:
        await anyio.to_thread.run_sync(primed.wait, 10)
    closed = await ctx.close_stream()
    return f"{word} closed={closed}"


HEARD = threading.Event()
"""Set by the SDK client's progress callback: the call's stream reached the client."""


@tool
async def report_then_close(ctx: ToolContext) -> str:
    """Report progress, close this call's stream once the client heard it, then answer."""
    await ctx.report_progress(1, 2, "half way")
    await anyio.to_thread.run_sync(HEARD.wait, 10)
    await ctx.close_stream()
    return "done after closing"


def make_server() -> McpServer:
    return McpServer(StaticToolset([echo_later, report_then_close]), name="events")


def call(word: str, request_id: int = 1) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": "echo_later", "arguments": {"word": word}},
    }


async def sse_events(response: httpx2.Response) -> AsyncIterator[dict[str, str]]:
    """The events of an SSE response, each as its fields (``id``, ``data``, ``retry``)."""
    fields: dict[str, str] = {}
    async for line in response.aiter_lines():
        if not line:
            if fields:
                yield fields
            fields = {}
            continue
        name, _, value = line.partition(":")
        fields[name] = fields.get(name, "") + value.removeprefix(" ")
    if fields:
        yield fields


async def open_session(http: httpx2.AsyncClient, url: str) -> dict[str, str]:
    """A 2025-11-25 session opened with raw requests: the headers naming it."""
    opened = await http.post(url, json=INITIALIZE, headers=ACCEPT)
    assert opened.status_code == 200
    headers = {**ACCEPT, **VERSION, "mcp-session-id": opened.headers["mcp-session-id"]}
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert (await http.post(url, json=initialized, headers=headers)).status_code == 202
    return headers


async def call_until_closed(
    http: httpx2.AsyncClient, url: str, headers: dict[str, str], word: str
) -> list[dict[str, str]]:
    """Call ``echo_later`` and read its stream until the server closes it."""
    PRIMED[word] = threading.Event()
    events: list[dict[str, str]] = []
    async with http.stream("POST", url, json=call(word), headers=headers) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        async for event in sse_events(response):
            events.append(event)
            PRIMED[word].set()
    return events


async def resume(
    http: httpx2.AsyncClient, url: str, headers: dict[str, str], last_event_id: str
) -> tuple[int, list[dict[str, str]]]:
    """GET with ``Last-Event-ID``: the status and the events up to a call's result (or
    the end of the stream)."""
    got: list[dict[str, str]] = []
    resumed = {**headers, "Accept": "text/event-stream", "Last-Event-ID": last_event_id}
    async with (
        http.stream("GET", url, headers=resumed) as response,
        aclosing(sse_events(response)) as events,
    ):
        async for event in events:
            got.append(event)
            if "result" in json.loads(event.get("data") or "{}"):
                break  # a stream resumed stays open for what comes next
        return response.status_code, got


def results(events: list[dict[str, str]]) -> list[str]:
    texts_seen = []
    for event in events:
        message = json.loads(event.get("data") or "{}")
        if "result" in message:
            texts_seen.extend(block["text"] for block in message["result"]["content"])
    return texts_seen


@asynccontextmanager
async def served(**options: Any) -> AsyncIterator[tuple[str, httpx2.AsyncClient]]:
    async with (
        uvicorn_thread(lambda: make_server().http_app(**options)) as url,
        httpx2.AsyncClient(timeout=10) as http,
    ):
        yield url, http


async def test_a_call_whose_stream_a_tool_closed_resumes_on_a_get_with_the_last_event_id() -> None:
    async with served(retry_interval=0.05) as (url, http):
        with anyio.fail_after(20):
            headers = await open_session(http, url)
            posted = await call_until_closed(http, url, headers, "alpha")
            status, resumed = await resume(http, url, headers, posted[-1]["id"])
    priming = posted[0]
    assert priming["id"]
    assert priming.get("data", "") == ""
    assert priming["retry"] == "50"
    assert results(posted) == []  # the stream closed before the answer
    assert status == 200
    assert results(resumed) == ["alpha closed=True"]


async def test_a_session_replays_none_of_another_sessions_events_with_the_same_request_ids() -> (
    None
):
    async with served() as (url, http):
        with anyio.fail_after(30):
            a = await open_session(http, url)
            b = await open_session(http, url)
            a_id = (await call_until_closed(http, url, a, "from-a"))[-1]["id"]
            b_id = (await call_until_closed(http, url, b, "from-b"))[-1]["id"]
            # B presents the id A was given (say, forged or overheard): nothing.
            stolen_status, stolen = await resume(http, url, b, a_id)
            forged_status, forged = await resume(http, url, b, f"{b_id.split('.')[0]}x.0")
            _, a_resumed = await resume(http, url, a, a_id)
            _, b_resumed = await resume(http, url, b, b_id)
    assert a_id != b_id
    assert (stolen_status, stolen) == (200, [])
    assert (forged_status, forged) == (200, [])
    assert results(a_resumed) == ["from-a closed=True"]
    assert results(b_resumed) == ["from-b closed=True"]


async def test_the_sdk_client_gets_the_result_of_a_call_whose_stream_was_closed() -> None:
    HEARD.clear()

    async def heard(progress: float, total: float | None, message: str | None) -> None:
        HEARD.set()

    async with served(retry_interval=0.01) as (url, http):
        with anyio.fail_after(20):
            transport = streamable_http_client(url, http_client=http)
            async with Client(transport, mode="legacy") as client:  # type: ignore[arg-type]
                result = await client.call_tool("report_then_close", {}, progress_callback=heard)
    assert isinstance(result, mt.CallToolResult)
    assert texts(result) == ["done after closing"]


async def test_without_an_event_store_there_is_no_priming_event_and_no_stream_to_close() -> None:
    async with served(event_store=None) as (url, http):
        with anyio.fail_after(20):
            headers = await open_session(http, url)
            async with http.stream("POST", url, json=call("plain"), headers=headers) as response:
                events = [event async for event in sse_events(response)]
    assert [event.get("id") for event in events] == [None]
    assert results(events) == ["plain closed=False"]


async def test_a_deleted_sessions_events_are_dropped() -> None:
    now = [0.0]
    store = SessionEventStore(clock=lambda: now[0])
    async with served(event_store=store) as (url, http):
        with anyio.fail_after(20):
            headers = await open_session(http, url)
            posted = await call_until_closed(http, url, headers, "gone")
            _, resumed = await resume(http, url, headers, posted[-1]["id"])  # answered
            kept = store.event_count
            deleted = await http.delete(url, headers=headers)
            now[0] += 2  # past the next look for ended sessions, well within the age
            left = store.event_count
    assert results(resumed) == ["gone closed=True"]
    assert kept >= 2  # the priming event and the answer at least
    assert deleted.status_code == 200
    assert left == 0


def test_an_event_store_needs_sessions() -> None:
    with pytest.raises(ValueError, match="stateless"):
        make_server().http_app(stateless=True, event_store=SessionEventStore())


def test_one_event_store_serves_one_app() -> None:
    store = SessionEventStore()
    make_server().http_app(event_store=store)
    with pytest.raises(RuntimeError):
        make_server().http_app(event_store=store)


# --- the store's bounds -----------------------------------------------------------------


def note(n: int, text: str = "") -> JSONRPCNotification:
    return JSONRPCNotification(
        jsonrpc="2.0",
        method="notifications/message",
        params={"level": "info", "data": f"{n} {text}"},
    )


class Sent:
    def __init__(self) -> None:
        self.messages: list[Any] = []

    async def __call__(self, event: Any) -> None:
        self.messages.append(event.message)

    @property
    def numbers(self) -> list[int]:
        return [int(m.params["data"].split()[0]) for m in self.messages]


async def test_a_stream_keeps_its_newest_events_only() -> None:
    store = SessionEventStore(max_events_per_stream=3)
    view = store.for_session("s")
    first = await view.store_event("1", None)
    for n in range(5):
        await view.store_event("1", note(n))
    sent = Sent()
    stream = await view.replay_events_after(first, sent)
    assert stream == "1"
    assert sent.numbers == [2, 3, 4]
    assert store.event_count == 3


async def test_all_sessions_together_keep_at_most_the_events_and_bytes_allowed() -> None:
    by_count = SessionEventStore(max_events=4)
    for session in ("a", "b", "c"):
        view = by_count.for_session(session)
        for n in range(3):
            await view.store_event("1", note(n))
    by_bytes = SessionEventStore(max_bytes=1_000)
    view = by_bytes.for_session("a")
    for n in range(20):
        await view.store_event("1", note(n, "x" * 100))
    assert by_count.event_count == 4
    assert by_bytes.byte_count <= 1_000
    assert 0 < by_bytes.event_count < 20


async def test_events_older_than_their_age_are_dropped() -> None:
    now = [0.0]
    store = SessionEventStore(ttl=10, clock=lambda: now[0])
    view = store.for_session("s")
    old = await view.store_event("1", note(0))
    now[0] = 5
    await view.store_event("1", note(1))
    now[0] = 12
    await view.store_event("1", note(2))
    sent = Sent()
    await view.replay_events_after(old, sent)
    assert store.event_count == 2
    assert sent.numbers == [1, 2]


async def test_a_view_replays_nothing_of_another_session_nor_a_malformed_id() -> None:
    store = SessionEventStore()
    a, b = store.for_session("a"), store.for_session("b")
    a_first = await a.store_event("1", None)
    await a.store_event("1", note(0))
    b_first = await b.store_event("1", None)
    await b.store_event("1", note(1))
    sent = Sent()
    replayed = [
        await b.replay_events_after(a_first, sent),
        await b.replay_events_after("not-an-id", sent),
        await b.replay_events_after(f"{b_first.split('.')[0]}.99", sent),
        await store.replay_events_after(b_first, sent),  # the store itself: nothing
    ]
    assert replayed == [None, None, None, None]
    assert sent.messages == []
    assert await b.replay_events_after(b_first, sent) == "1"
    assert sent.numbers == [1]


async def test_a_request_id_used_again_after_its_answer_starts_a_new_stream() -> None:
    store = SessionEventStore()
    view = store.for_session("s")
    before = await view.store_event("7", None)
    answer = JSONRPCResponse(jsonrpc="2.0", id=7, result={})
    await view.store_event("7", answer)
    again = await view.store_event("7", None)
    await view.store_event("7", note(3))
    old, new = Sent(), Sent()
    assert await view.replay_events_after(before, old) == "7"
    assert await view.replay_events_after(again, new) == "7"
    assert old.messages == [answer]  # the first request's stream is still there
    assert new.numbers == [3]


async def test_a_forgotten_sessions_events_are_dropped_and_it_keeps_no_more() -> None:
    store = SessionEventStore()
    view = store.for_session("s")
    await view.store_event("1", note(0))
    store.forget_session("s")
    later = await view.store_event("1", note(1))
    assert store.event_count == 0
    assert await view.replay_events_after(later, Sent()) is None


def test_the_bounds_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_events"):
        SessionEventStore(max_events=0)


def test_a_negative_retry_interval_is_refused() -> None:
    with pytest.raises(ValueError, match="retry_interval"):
        make_server().http_app(retry_interval=-1)
