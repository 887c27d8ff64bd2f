"""`Retry` against a real HTTP server on 127.0.0.1 that pushes back: 503s, 429s with
``Retry-After`` (seconds and an HTTP date), a refused connection, a connection reset
after the request arrived. Counted by what arrived at the server: a call unsafe to repeat
(a POST) is never sent twice; a POST with an ``Idempotency-Key`` is, with the same key."""

from __future__ import annotations

import email.utils
import socket
import struct
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.helpers import free_port, serve_app
from toolsets import ToolContext
from toolsets._invoke import Done, invoke
from toolsets.calls import Retry, ToolCall, wrap_calls
from toolsets.openapi import OpenApiToolset

pytestmark = pytest.mark.anyio

FAST = Retry(tries=3, backoff=0.01, max_backoff=0.05)


@dataclass
class Arrivals:
    """What reached the upstream: by path, each request's time and headers."""

    seen: dict[str, list[tuple[float, dict[str, str]]]] = field(default_factory=dict)
    plan: dict[str, list[tuple[int, dict[str, str]]]] = field(default_factory=dict)
    """By path: the answers still to give before 200 (status, headers)."""

    def count(self, path: str) -> int:
        return len(self.seen.get(path, []))


def upstream(arrivals: Arrivals) -> Any:
    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        assert scope["type"] == "http"
        path = scope["path"]
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        arrivals.seen.setdefault(path, []).append((time.monotonic(), headers))
        while (await receive()).get("more_body"):
            pass
        planned = arrivals.plan.get(path) or []
        status, extra = planned.pop(0) if planned else (200, {})
        body = b'{"ok": true}' if status == 200 else b'{"message": "later"}'
        head = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
        head += [(k.encode(), v.encode()) for k, v in extra.items()]
        await send({"type": "http.response.start", "status": status, "headers": head})
        await send({"type": "http.response.body", "body": body})

    return app


def spec() -> dict[str, Any]:
    answer = {"200": {"description": "ok"}}
    key = {"name": "Idempotency-Key", "in": "header", "schema": {"type": "string"}}
    return {
        "openapi": "3.1.0",
        "info": {"title": "flaky", "version": "1"},
        "paths": {
            "/items": {"get": {"operationId": "listItems", "responses": answer}},
            "/orders": {"post": {"operationId": "placeOrder", "responses": answer}},
            "/payments": {"post": {"operationId": "pay", "parameters": [key], "responses": answer}},
        },
    }


@pytest.fixture(scope="module")
def arrivals() -> Arrivals:
    return Arrivals()


@pytest.fixture(scope="module")
def port(arrivals: Arrivals) -> Iterator[int]:
    with serve_app(upstream(arrivals)) as port:
        yield port


@pytest.fixture(autouse=True)
def fresh(arrivals: Arrivals) -> None:
    arrivals.seen.clear()
    arrivals.plan.clear()


async def called(base_url: str, name: str, args: dict[str, Any], retry: Retry = FAST) -> Done:
    toolset = wrap_calls(OpenApiToolset(spec(), base_url=base_url, confirm="never"), retry)
    async with toolset:
        tool = next(t for t in await toolset.list_tools() if t.name == name)
        outcome = await invoke(tool, args, ToolContext(), default_timeout=10)
    assert isinstance(outcome, Done)
    return outcome


async def test_a_get_answered_503_twice_is_tried_again_until_it_succeeds(
    port: int, arrivals: Arrivals
) -> None:
    arrivals.plan["/items"] = [(503, {}), (503, {})]
    done = await called(f"http://127.0.0.1:{port}", "listItems", {})
    assert done.result == {"ok": True}
    assert arrivals.count("/items") == 3


async def test_the_last_pushback_is_the_result_saying_how_many_tries_it_took(
    port: int, arrivals: Arrivals
) -> None:
    arrivals.plan["/items"] = [(503, {})] * 5
    done = await called(f"http://127.0.0.1:{port}", "listItems", {})
    assert isinstance(done.result, dict)
    assert (done.result["status"], done.result["tries"]) == (503, 3)
    assert arrivals.count("/items") == 3


async def test_a_429_waits_what_retry_after_says_before_the_next_try(
    port: int, arrivals: Arrivals
) -> None:
    arrivals.plan["/items"] = [(429, {"retry-after": "1"})]
    done = await called(f"http://127.0.0.1:{port}", "listItems", {})
    assert done.result == {"ok": True}
    (first, _), (second, _) = arrivals.seen["/items"]
    assert second - first >= 0.95  # waited as told (and the backoff's ceiling is 0.05)


async def test_retry_after_as_an_http_date_in_the_past_is_no_wait(
    port: int, arrivals: Arrivals
) -> None:
    past = email.utils.formatdate(time.time() - 60, usegmt=True)
    arrivals.plan["/items"] = [(503, {"retry-after": past})]
    done = await called(f"http://127.0.0.1:{port}", "listItems", {})
    assert done.result == {"ok": True}
    assert arrivals.count("/items") == 2


async def test_a_retry_after_beyond_the_ceiling_is_not_waited_and_the_model_is_told_it(
    port: int, arrivals: Arrivals
) -> None:
    arrivals.plan["/items"] = [(429, {"retry-after": "3600"})]
    done = await called(f"http://127.0.0.1:{port}", "listItems", {})
    assert isinstance(done.result, dict)
    assert (done.result["status"], done.result["retry_after"]) == (429, 3600)
    assert "tries" not in done.result
    assert arrivals.count("/items") == 1


async def test_a_wait_past_the_calls_deadline_is_not_waited(port: int, arrivals: Arrivals) -> None:
    arrivals.plan["/items"] = [(503, {"retry-after": "30"})]
    toolset = wrap_calls(OpenApiToolset(spec(), base_url=f"http://127.0.0.1:{port}"), FAST)
    async with toolset:
        tool = next(t for t in await toolset.list_tools() if t.name == "listItems")
        started = time.monotonic()
        outcome = await invoke(tool, {}, ToolContext(), default_timeout=2)
    assert time.monotonic() - started < 2  # answered at once, not cut at the deadline
    assert isinstance(outcome, Done)
    assert isinstance(outcome.result, dict)
    assert outcome.result["status"] == 503
    assert arrivals.count("/items") == 1


async def test_a_post_answered_503_is_never_sent_twice(port: int, arrivals: Arrivals) -> None:
    arrivals.plan["/orders"] = [(503, {})]
    done = await called(f"http://127.0.0.1:{port}", "placeOrder", {})
    assert isinstance(done.result, dict)
    assert done.result["status"] == 503
    assert arrivals.count("/orders") == 1


async def test_a_post_with_an_idempotency_key_is_tried_again_with_the_same_key(
    port: int, arrivals: Arrivals
) -> None:
    arrivals.plan["/payments"] = [(503, {}), (429, {"retry-after": "0"})]
    done = await called(f"http://127.0.0.1:{port}", "pay", {})
    assert done.result == {"ok": True}
    keys = [headers.get("idempotency-key") for _, headers in arrivals.seen["/payments"]]
    assert len(keys) == 3
    assert keys[0]
    assert len(set(keys)) == 1


async def test_the_models_own_idempotency_key_is_the_one_sent_on_every_try(
    port: int, arrivals: Arrivals
) -> None:
    arrivals.plan["/payments"] = [(503, {})]
    await called(f"http://127.0.0.1:{port}", "pay", {"Idempotency-Key": "order-7"})
    keys = [headers.get("idempotency-key") for _, headers in arrivals.seen["/payments"]]
    assert keys == ["order-7", "order-7"]


async def test_a_refused_connection_is_tried_again_even_for_a_post_nothing_was_sent() -> None:
    tries: list[ToolCall] = []

    async def watch(call: ToolCall, call_next: Any) -> Any:
        tries.append(call)
        return await call_next(call)

    closed = free_port()  # nothing listens there
    toolset = wrap_calls(
        OpenApiToolset(spec(), base_url=f"http://127.0.0.1:{closed}", confirm="never"),
        watch,
        FAST,
    )
    async with toolset:
        tool = next(t for t in await toolset.list_tools() if t.name == "placeOrder")
        outcome = await invoke(tool, {}, ToolContext(), default_timeout=10)
    assert isinstance(outcome, Done)
    assert isinstance(outcome.result, dict)
    assert "cannot connect" in outcome.result["error"] or "refused" in outcome.result["error"]
    (call,) = tries
    assert [t.error for t in call.tries] == ["ConnectionError"] * 3


@pytest.fixture(scope="module")
def resetting() -> Iterator[tuple[int, list[bytes]]]:
    """A server that reads a request and resets the connection (no answer)."""
    received: list[bytes] = []
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(5)
                received.append(conn.recv(65536))
                # SO_LINGER 0: the close resets the connection.
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1], received
    finally:
        stop.set()
        thread.join(timeout=5)
        listener.close()


async def test_a_get_whose_connection_was_reset_after_sending_is_not_tried_again(
    resetting: tuple[int, list[bytes]],
) -> None:
    # The request arrived: a reset says nothing of whether it ran.
    port, received = resetting
    received.clear()
    done = await called(f"http://127.0.0.1:{port}", "listItems", {})
    assert isinstance(done.result, dict)
    assert "error" in done.result
    assert len(received) == 1
    assert received[0].startswith(b"GET /items")


def test_retry_refuses_settings_that_make_no_sense() -> None:
    with pytest.raises(ValueError, match="tries must be at least 1"):
        Retry(tries=0)
    with pytest.raises(ValueError, match="backoff"):
        Retry(backoff=-1)
