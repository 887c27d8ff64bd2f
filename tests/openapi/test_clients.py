"""OpenApiToolset used from one event loop after another, and from several threads: what
synchronous frameworks (``anyio.run`` per call) and loop-per-test runners do.

The API is a real HTTP/1.1 server on 127.0.0.1 that keeps connections open (as real APIs
do: a pooled connection is what used to break the next loop's call), in a thread of its
own, so it outlives the event loops of the test.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import anyio
import anyio.abc
import anyio.from_thread
import httpx2
import pytest

from tests.openapi.helpers import FIXTURES, serving
from toolsets import ToolCallError, ToolContext
from toolsets.openapi import OpenApiToolset

SPEC = FIXTURES / "shapes.yaml"
BACKENDS = ["asyncio", "trio"]


@dataclass
class KeepAliveServer:
    """Answers every request with 200 ``{"ok": true}`` on a persistent connection."""

    port: int = 0
    requests: list[str] = field(default_factory=list)
    """Each request line, in order."""
    connections: int = 0
    """Connections accepted so far."""
    open: int = 0
    """Connections not yet closed by the client."""
    changed: threading.Condition = field(default_factory=threading.Condition)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def wait_until_all_closed(self, timeout: float = 10) -> bool:
        """True once the client has closed every connection it opened."""
        with self.changed:
            return self.changed.wait_for(lambda: self.open == 0, timeout)

    async def _handle(self, stream: anyio.abc.SocketStream) -> None:
        with self.changed:
            self.connections += 1
            self.open += 1
        buffer = b""
        try:
            async with stream:
                while True:
                    while b"\r\n\r\n" not in buffer:
                        buffer += await stream.receive()
                    head, _, buffer = buffer.partition(b"\r\n\r\n")
                    self.requests.append(head.split(b"\r\n", 1)[0].decode())
                    payload = b'{"ok": true}'
                    await stream.send(
                        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                        b"Content-Length: %d\r\n\r\n%s" % (len(payload), payload)
                    )
        except (anyio.EndOfStream, anyio.BrokenResourceError):
            pass  # the client closed the connection
        finally:
            with self.changed:
                self.open -= 1
                self.changed.notify_all()


@contextmanager
def keep_alive_server() -> Iterator[KeepAliveServer]:
    """A `KeepAliveServer` running in a thread (and event loop) of its own."""
    with (
        anyio.from_thread.start_blocking_portal() as portal,
        portal.wrap_async_context_manager(serving(KeepAliveServer())) as server,
    ):
        yield server


async def _call(toolset: OpenApiToolset, times: int = 1) -> list[object]:
    with anyio.fail_after(10):
        tool = await toolset.get_tool("trees_get_tree")
        return [await tool.run({"id": f"t{n}"}, ToolContext()) for n in range(times)]


@pytest.mark.parametrize("backend", BACKENDS)
def test_calls_from_one_event_loop_after_another_all_succeed(backend: str) -> None:
    with keep_alive_server() as server:
        toolset = OpenApiToolset(SPEC, base_url=server.url)
        for _ in range(3):
            assert anyio.run(_call, toolset, 2, backend=backend) == [{"ok": True}] * 2
            # Each loop's connection is closed as its loop ends, not left to leak.
            assert server.wait_until_all_closed()
        anyio.run(toolset.shutdown, backend=backend)
    assert len(server.requests) == 6
    assert server.connections == 3  # within a loop, the connection is reused


@pytest.mark.parametrize("backend", BACKENDS)
def test_shutdown_from_a_loop_that_made_no_call_succeeds(backend: str) -> None:
    with keep_alive_server() as server:
        toolset = OpenApiToolset(SPEC, base_url=server.url)
        anyio.run(_call, toolset, backend=backend)
        anyio.run(toolset.shutdown, backend=backend)
        anyio.run(toolset.shutdown, backend=backend)  # idempotent
        assert anyio.run(_call, toolset, backend=backend) == [{"ok": True}]  # starts again
    assert len(server.requests) == 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_shutdown_from_another_thread_closes_a_live_loops_client(backend: str) -> None:
    with (
        keep_alive_server() as server,
        anyio.from_thread.start_blocking_portal(backend) as portal,
    ):
        toolset = OpenApiToolset(SPEC, base_url=server.url)
        assert portal.call(_call, toolset) == [{"ok": True}]
        kept = portal.call(toolset.get_tool, "trees_get_tree")
        assert server.open == 1  # the portal's loop keeps its connection

        failures: list[BaseException] = []

        def shut_down() -> None:
            try:
                anyio.run(toolset.shutdown, backend=backend)
            except BaseException as error:  # handed to the test's thread
                failures.append(error)

        thread = threading.Thread(target=shut_down)
        thread.start()
        thread.join(timeout=20)
        assert not thread.is_alive()
        assert failures == []
        assert server.wait_until_all_closed()  # closed in the loop that opened it
        with pytest.raises(ToolCallError) as caught:
            portal.call(kept.run, {"id": "x"}, ToolContext())
        assert caught.value.tool_name == "trees_get_tree"
        assert portal.call(_call, toolset) == [{"ok": True}]  # and it starts again there
        portal.call(toolset.shutdown)
    assert len(server.requests) == 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_loops_in_several_threads_at_once_each_get_a_working_client(backend: str) -> None:
    with keep_alive_server() as server:
        toolset = OpenApiToolset(SPEC, base_url=server.url)  # loaded by the threads at once
        results: list[object] = []

        def work() -> None:
            results.extend(anyio.run(_call, toolset, 3, backend=backend))

        threads = [threading.Thread(target=work) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=20)
        assert results == [{"ok": True}] * 12
        assert server.wait_until_all_closed()
        anyio.run(toolset.shutdown, backend=backend)
    assert server.connections == 4


@pytest.mark.parametrize("backend", BACKENDS)
def test_shutdown_leaves_idle_asyncio_loops_their_clients_without_waiting_on_them(
    backend: str,
) -> None:
    # A synchronous caller running each call with loop.run_until_complete: between calls
    # the loop is alive but runs nothing, so nothing sent to it can finish.
    import asyncio  # noqa: TID251 - the loops such callers make by hand

    with keep_alive_server() as server:
        toolset = OpenApiToolset(SPEC, base_url=server.url)
        loops = [asyncio.new_event_loop() for _ in range(2)]
        try:
            for loop in loops:
                assert loop.run_until_complete(_call(toolset)) == [{"ok": True}]
            threads_before = set(threading.enumerate())
            started = time.perf_counter()
            anyio.run(toolset.shutdown, backend=backend)
            took = time.perf_counter() - started
            threads_left = set(threading.enumerate()) - threads_before
        finally:
            for loop in loops:  # each loop closes its own client as it ends
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.close()
        assert took < 1, took
        assert threads_left == set()
        assert server.wait_until_all_closed()
    assert server.connections == 2


def test_a_client_you_give_is_yours_the_toolset_never_closes_it() -> None:
    async def main(url: str) -> None:
        async with httpx2.AsyncClient() as client:
            toolset = OpenApiToolset(SPEC, base_url=url, client=client)
            assert await _call(toolset) == [{"ok": True}]
            await toolset.shutdown()
            assert not client.is_closed

    with keep_alive_server() as server:
        anyio.run(main, server.url)
