"""examples/deploy as it is: run.sh starts Redis, three ``toolsets serve --http --redis``
replicas of a spec (the notes API, served on 127.0.0.1 here) and a module of tools, and
HAProxy with haproxy.cfg in front; the tests talk to HAProxy (and to a replica itself
where a test needs one in particular), stop Redis and start it again, and kill a replica
under load.

One stack serves the module (its start is most of the cost), so the tests run in the
order written, the one killing a replica last; and on one anyio backend: what runs on
both backends is the library's code, which runs here in the replicas' processes (uvicorn,
asyncio) — the test's own side is the SDK's client."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp.types as mt
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client

import toolsets
from tests.adapters.helpers import NOTES_SPEC, NotesApi, notes_api
from tests.cli.helpers import entry_point, environment
from tests.helpers import ROOT, free_port
from tests.mcp.helpers import alive, eventually
from tests.mcp.server.redis_helpers import RedisServer, redis_server_command, wait_for_port
from tests.mcp.server_helpers import texts
from toolsets.mcp import McpToolset, StreamableHttp

pytestmark = pytest.mark.anyio

DEPLOY = ROOT / "examples" / "deploy"
START_TIMEOUT = 90.0
"""Seconds the stack may take to start (three replicas reading their sources at once, on
a busy machine)."""
CALL_TIMEOUT = 30.0
"""Seconds a test's calls may take, together."""
CONFIRM = "toolsets/confirm"
ACCEPT = {CONFIRM: mt.ElicitResult(action="accept", content={})}

REPLICA_TOOLS = '''
import os

import anyio


def pid() -> int:
    """This replica's process id."""
    return os.getpid()


async def pause(seconds: float, tag: str) -> dict[str, object]:
    """Wait, then say which call this was and which replica answered it."""
    await anyio.sleep(seconds)
    return {"tag": tag, "pid": os.getpid()}


tools = [pid, pause]
'''


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class Stack:
    """What run.sh started, and where."""

    process: subprocess.Popen[bytes]
    run_dir: Path
    lb_port: int
    replica_ports: list[int]
    redis_port: int
    api: NotesApi

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.lb_port}/mcp"

    def replica_url(self, i: int) -> str:
        return f"http://127.0.0.1:{self.replica_ports[i]}/mcp"

    def pid(self, name: str) -> int:
        return int((self.run_dir / f"{name}.pid").read_text())

    def replica_pids(self) -> list[int]:
        return [self.pid(f"replica{i}") for i in (1, 2, 3)]

    def server_states(self) -> dict[str, str]:
        """HAProxy's view of each replica (``UP``, ``DOWN``...), from its stats socket."""
        with socket.socket(socket.AF_UNIX) as sock:
            sock.settimeout(5)
            sock.connect(str(self.run_dir / "haproxy.sock"))
            sock.sendall(b"show stat\n")
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
        states = {}
        for line in answer.decode().splitlines():
            fields = line.split(",")
            if len(fields) > 17 and fields[0] == "replicas" and fields[1].startswith("replica"):
                states[fields[1]] = fields[17]
        return states


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """examples/deploy/run.sh serving the notes spec and `REPLICA_TOOLS`."""
    redis_server_command()  # skipped without Redis or HAProxy (scripts/test.sh installs both)
    if shutil.which("haproxy") is None:
        pytest.skip("haproxy is not installed (scripts/test.sh installs it)")
    folder = tmp_path_factory.mktemp("deploy")
    (folder / "notes.json").write_text(json.dumps(NOTES_SPEC))
    (folder / "replicatools.py").write_text(REPLICA_TOOLS)
    ports = [free_port() for _ in range(5)]
    run_dir = folder / "run"
    with notes_api() as api:
        env = environment(
            {
                "MCP_LB_PORT": str(ports[0]),
                "MCP_REPLICA_PORTS": " ".join(map(str, ports[1:4])),
                "REDIS_PORT": str(ports[4]),
                "TOOLSETS": " ".join(entry_point()),
                "DEPLOY_RUN_DIR": str(run_dir),
            }
        )
        env.pop("TOOLSETS_MCP_STATE_KEY", None)
        command = [str(DEPLOY / "run.sh"), "notes.json", "replicatools:tools"]
        process = subprocess.Popen(
            [*command, "--base-url", api.url],
            cwd=folder,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        made = Stack(process, run_dir, ports[0], ports[1:4], ports[4], api)
        try:
            for port in ports:
                wait_for_port(port, process, within=START_TIMEOUT)
            # HAProxy checked the replicas while they read their sources: they are in
            # once two checks found them serving.
            _wait_until(lambda: set(made.server_states().values()) == {"UP"}, within=10)
            yield made
        finally:
            _stop(process)


def _wait_until(check: Callable[[], bool], within: float) -> None:
    deadline = time.monotonic() + within
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not true within {within} s")
        time.sleep(0.05)


def _stop(process: subprocess.Popen[bytes]) -> None:
    """run.sh stopped (it stops what it started), and its whole group if it lingers."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(15)


@asynccontextmanager
async def client(url: str, mode: str = "2026-07-28", **options: Any) -> AsyncIterator[Client]:
    """The SDK's client of ``url`` (which can be asked for confirmation): one
    connection, kept alive between requests."""
    async with httpx2.AsyncClient(timeout=CALL_TIMEOUT) as http:
        transport = streamable_http_client(url, http_client=http)
        async with Client(
            transport,  # type: ignore[arg-type]
            mode=mode,
            elicitation_callback=_accept,
            **options,
        ) as made:
            yield made


async def _accept(ctx: Any, params: mt.ElicitRequestParams) -> mt.ElicitResult:
    return mt.ElicitResult(action="accept", content={})


def answer(result: mt.CallToolResult) -> Any:
    assert not result.is_error, texts(result)
    return json.loads(texts(result)[0])


# --- any replica answers --------------------------------------------------------------


async def test_calls_through_haproxy_are_spread_over_all_three_replicas(stack: Stack) -> None:
    with anyio.fail_after(CALL_TIMEOUT):
        async with client(stack.url) as one:  # one client, one connection
            pids = [answer(await one.call_tool("pid", {})) for _ in range(9)]
    assert set(pids) == set(stack.replica_pids())


async def test_a_confirmation_asked_by_one_replica_is_answered_through_another_once(
    stack: Stack,
) -> None:
    before = len(stack.api.requests)
    with anyio.fail_after(CALL_TIMEOUT):
        async with client(stack.url) as through:
            note = answer(await through.call_tool("create_note", {"title": "shared"}))
        args = {"note_id": note["id"]}
        async with (
            client(stack.replica_url(0)) as first,
            client(stack.replica_url(1)) as second,
            client(stack.replica_url(2)) as third,
        ):
            asked = await first.session.call_tool("delete_note", args, allow_input_required=True)
            assert isinstance(asked, mt.InputRequiredResult)
            state = asked.request_state
            deleted = await _answered(second, args, state)
            with pytest.raises(MCPError) as replayed:  # sent again, to a third replica
                await _answered(third, args, state)
    assert not deleted.is_error, texts(deleted)
    assert replayed.value.data == {"reason": "request_state_used"}
    assert stack.api.requests[before:] == ["POST /notes", f"DELETE /notes/{note['id']}"]


async def _answered(to: Client, args: dict[str, Any], state: str | None) -> mt.CallToolResult:
    result = await to.session.call_tool(
        "delete_note",
        args,
        input_responses=ACCEPT,  # type: ignore[arg-type]
        request_state=state,
        allow_input_required=True,
    )
    assert isinstance(result, mt.CallToolResult)
    return result


# --- Redis down, and back -------------------------------------------------------------


async def test_redis_down_refuses_only_what_needs_it_and_the_stack_recovers_when_it_is_back(
    stack: Stack,
) -> None:
    before = len(stack.api.requests)
    with anyio.fail_after(CALL_TIMEOUT):
        async with client(stack.url) as through:
            note = answer(await through.call_tool("create_note", {"title": "later"}))
            args = {"note_id": note["id"]}
            asked = await through.session.call_tool("delete_note", args, allow_input_required=True)
            assert isinstance(asked, mt.InputRequiredResult)
            os.kill(stack.pid("redis"), signal.SIGTERM)
            await eventually(lambda: _gone(stack.pid("redis")), within=10)
            served = [answer(await through.call_tool("pid", {})) for _ in range(3)]
            with pytest.raises(MCPError) as refused:
                await _answered(through, args, asked.request_state)
            again = RedisServer(stack.redis_port)
            again.start()
            try:
                deleted = await _answered(through, args, asked.request_state)
            finally:
                again.stop()
    # Calls that need no shared state: on every replica, as before.
    assert set(served) == set(stack.replica_pids())
    assert refused.value.code == -32603
    assert refused.value.data == {"reason": "request_state_store_unavailable"}
    assert f"Redis at redis://127.0.0.1:{stack.redis_port}/0" in refused.value.error.message
    assert "nothing ran" in refused.value.error.message
    assert not deleted.is_error, texts(deleted)
    assert stack.api.requests[before:] == ["POST /notes", f"DELETE /notes/{note['id']}"]


async def _gone(pid: int) -> bool:
    return not alive(pid)


# --- a replica killed under load ------------------------------------------------------


CLIENTS = 8
"""Clients calling at once, each a call at a time, in a loop."""
PAUSE = 0.3
"""Seconds each call takes: a replica has calls in flight whenever it is killed."""


@dataclass(frozen=True)
class Outcome:
    tag: str
    started: float
    answer: Any = None
    error: BaseException | None = None


async def test_a_replica_killed_under_load_is_taken_out_and_only_its_calls_in_flight_fail(
    stack: Stack,
) -> None:
    outcomes: list[Outcome] = []
    with anyio.fail_after(CALL_TIMEOUT):
        async with (
            client(stack.url, mode="legacy") as legacy,
            McpToolset(StreamableHttp(url=stack.url), mode="legacy") as ours,
        ):
            # A 2025-11-25 session stays on the replica that made it; that one is killed.
            sticky = {answer(await legacy.call_tool("pid", {})) for _ in range(4)}
            assert len(sticky) == 1
            victim = sticky.pop()
            ours_before = json.loads(texts(await ours.call_tool("pid", {}))[0])
            killed = await _killed_under_load(stack, victim, outcomes)
            with pytest.raises(MCPError) as unknown:
                await legacy.call_tool("pid", {})
            ours_after = json.loads(texts(await ours.call_tool("pid", {}))[0])
    survivors = set(stack.replica_pids()) - {victim}
    done = [each for each in outcomes if each.error is None]
    failed = [each for each in outcomes if each.error is not None]
    # Every completed call answered its own call, from a replica.
    assert all(each.answer["tag"] == each.tag for each in done)
    assert {each.answer["pid"] for each in done} == {victim, *survivors}
    # The calls in flight on the killed one failed, with the error saying so; every call
    # started after it was killed was answered by the others.
    said = [(round(each.started - killed, 3), repr(each.error)) for each in failed]
    assert 1 <= len(failed) <= CLIENTS, said
    for each in failed:
        assert each.started < killed
        assert isinstance(each.error, toolsets.ConnectionError), repr(each.error)
    after = [each for each in outcomes if each.started > killed]
    assert len(after) >= 2 * CLIENTS
    assert all(each.error is None and each.answer["pid"] in survivors for each in after)
    # The session on the killed replica is unknown to the others: the SDK's client is
    # told so; ours starts a new session, on a replica that serves.
    assert "Session not found" in str(unknown.value)
    assert ours_after in survivors
    assert ours_before in stack.replica_pids()


async def _killed_under_load(stack: Stack, victim: int, outcomes: list[Outcome]) -> float:
    """Kill ``victim`` while `CLIENTS` clients call through HAProxy in a loop (what
    each call came to in ``outcomes``); wait until HAProxy took it out, and let the
    clients call on a while: when it was killed."""
    victim_name = f"replica{stack.replica_pids().index(victim) + 1}"
    stop = anyio.Event()
    killed = 0.0

    async def load(n: int) -> None:
        async with McpToolset(StreamableHttp(url=stack.url), mode="2026-07-28") as tools:
            for i in range(1000):
                if stop.is_set():
                    return
                tag = f"{n}.{i}"
                started = time.monotonic()
                try:
                    result = await tools.call_tool("pause", {"seconds": PAUSE, "tag": tag})
                except toolsets.ToolsetError as exc:
                    outcomes.append(Outcome(tag, started, error=exc))
                else:
                    outcomes.append(Outcome(tag, started, answer=json.loads(texts(result)[0])))

    async with anyio.create_task_group() as group:
        for n in range(CLIENTS):
            group.start_soon(load, n)
        await eventually(_count(outcomes, CLIENTS * 2), within=CALL_TIMEOUT)
        killed = time.monotonic()
        os.kill(victim, signal.SIGKILL)
        await eventually(_is_down(stack, victim_name), within=10)
        await eventually(_count(outcomes, len(outcomes) + CLIENTS * 3), within=CALL_TIMEOUT)
        stop.set()
    return killed


def _count(outcomes: list[Outcome], at_least: int) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        return len(outcomes) >= at_least

    return check


def _is_down(stack: Stack, name: str) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        return stack.server_states().get(name) == "DOWN"

    return check
