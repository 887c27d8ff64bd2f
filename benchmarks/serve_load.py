"""Served under load: ``toolsets serve --http`` (one process, and ``--workers``) against
fastmcp's ``FastMCP.from_openapi`` over streamable HTTP, on GitHub's spec (1,100+
operations), C clients calling at once, side by side in one run.

Run: python benchmarks/serve_load.py [--quick] [--seconds S] [--concurrency 1,64,256]
     [--workers W] [--sessions N] [--only NAME[,NAME...]] [--check] [--json]

Each server runs in a process of its own (ours: ``python -m toolsets.cli serve SPEC
--base-url URL --http``, with the toolsets this process imports; fastmcp in its pinned venv,
``peers/serve_child.py``), its upstream a local REST server on 127.0.0.1 (a process of
its own) answering ``GET /repos/{owner}/{repo}`` with the spec's example repository.
The load comes from a generator in another process (this script with ``--generate``):
C clients, each on a keep-alive connection of its own, speaking raw HTTP/1.1 (so the
generator's own CPU stays small and out of the server's figures), each calling
``repos/get`` again as soon as its last call is answered, for S seconds after a warm-up:

  2026-07-28   one self-contained POST per call (envelope in ``_meta``, routing headers);
  2025-11-25   each client in a session of its own, opened by ``initialize`` first.

Rows (by server, era and C):

  calls/s      completed calls over the window's wall time;
  p50/p99 ms   latency of the window's calls;
  CPU ms/call  the server's CPU time (user and system, every process of it: a worker's
               supervisor and workers; Linux's ``/proc``) over the window, per call: what
               a call costs the server, steady where throughput and latency follow the
               load other users put on the machine;
  errors       calls that failed (a JSON-RPC error, an error result, an HTTP error);
  CPU % by process  how the window's server CPU was shared by its processes (the
               workers), largest first: N workers should each take about 1/N.

Memory per open 2025-11-25 session (ours one process against fastmcp): sessions opened in
batches of N (``--sessions``, default 1,000), each by ``initialize``,
``notifications/initialized`` and a ``ping`` (a request in the session), all left open;
then the first, a middle and the last of the last batch pinged again, to show the server
kept them (``kept 3/3``). Two figures, each over N:

  RSS KB       the server's resident memory grown by the second batch (the first fills
               what the allocator kept free after loading the spec): what the machine
               pays, though an allocator that kept much free grows little;
  traced KB    the bytes Python still holds, garbage collected, of what it allocated
               while a third batch was opened (``tracemalloc``, on for that batch only:
               ``peers/traced.py`` runs each server): what the sessions hold, whatever
               the allocator had free.

Ours serves with ``--max-sessions-per-client`` lifted (every session of the run comes
from this one address; its default bound, 100, is for clients, not for a benchmark).

``ours 1 stateless`` is one process with ``--stateless``, as each worker serves: a
worker's call should cost what it does.

``ours 1 telemetry`` is ours in one process with OpenTelemetry on, recording to memory
(the issue's measure: ``peers/in_memory_telemetry.py``, every span through the SDK's
synchronous processor to an exporter that counts and drops it, every duration to the SDK's
in-memory metric reader), ``ours 1 telemetry OTLP`` with it on as an operator turns it on,
by the standard environment (``OTEL_EXPORTER_OTLP_ENDPOINT``: spans and metrics exported
over OTLP/HTTP, batched, to a receiver in this process that counts and drops them), and
``ours 1 telemetry off`` the same without: the three run at once and their windows take
turns (5 of each at each C, 2026-07-28; the medians shown), so that the machine's load
falls on all alike. ``telemetry on/off`` is CPU per call on over off (target, with the
in-memory recording: at most 1.10, issue 28); the OTLP row shows what exporting every span
adds (encoding and sending, in the served process: the SDK's exporter's work, which
sampling, ``OTEL_TRACES_SAMPLER``, divides). benchmarks/telemetry.py measures the same in
one process, round by round; benchmarks/telemetry_served.py counts it in instructions.

``--only NAME[,NAME...]`` runs the rows of the servers whose name starts with one of them.

fastmcp is measured in its 2025-11-25 sessions only (the era its clients speak).
Ratios ours/fastmcp follow; the targets (issue 28): ours ≥ 2x fastmcp's calls/s at C = 64
with p99 no worse. Rows measured one after the other see whatever load the machine had
then, so the target is judged on ``ours 1 in turns`` and ``fastmcp in turns``: ours in
one process and fastmcp running at once, their windows at C = 64 taking turns (3 of
each; the medians).

``ours 3 replicas``: examples/deploy/run.sh as it is (Redis, three replicas of ``toolsets
serve --http --redis``, HAProxy in front, round robin), the load sent to HAProxy; its CPU
is every process of the deployment (HAProxy's and Redis' included). Without haproxy and
redis-server on PATH the row says "not run". The machine's load average is printed with
the figures: it is shared, and its CPUs are what the servers and the generator share.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
from _common import (
    REPO,
    RunningCount,
    app_in_thread,
    cpu_seconds,
    emit,
    free_port,
    outcome,
    peer_python,
    rotated,
    server_process,
    started_server,
)
from serve import ARGUMENTS, FASTMCP, OPERATION, _name, github_spec

HERE = Path(__file__).resolve().parent
DEPLOY = HERE.parent / "examples" / "deploy" / "run.sh"
"""Redis, three replicas of ``toolsets serve --http`` and HAProxy in front."""
REPLICAS = "ours 3 replicas"
CHILD = HERE / "peers" / "serve_child.py"
TRACED = HERE / "peers" / "traced.py"
"""Runs a server whose allocations are traced while its sessions are opened."""
PROBE_TIMEOUT, PROBE_POLL = 60.0, 0.1
"""Seconds a traced server may take to write its figure, and between looks for it."""
TELEMETRY, TELEMETRY_OFF = "ours 1 telemetry", "ours 1 telemetry off"
TELEMETRY_OTLP = "ours 1 telemetry OTLP"
OURS_IN_TURNS, FASTMCP_IN_TURNS = "ours 1 in turns", "fastmcp in turns"
"""Ours in one process (2026-07-28) and fastmcp (2025-11-25 sessions) running at once,
their windows at `TARGET_C` taking turns: the target's measure."""
IN_MEMORY = HERE / "peers" / "in_memory_telemetry.py"
"""Runs ours with telemetry recording to memory."""
TELEMETRY_ROUNDS, QUICK_TELEMETRY_ROUNDS = 5, 1
"""Windows of each side of telemetry on/off at each C, taking turns."""
TELEMETRY_TARGET = 1.10
"""Telemetry on costs at most this many times a call's CPU off (issue 28)."""
OPEN_TO_ONE_CLIENT = 100_000
"""``--max-sessions-per-client`` of ours: every session of the run comes from here."""
SERVE = HERE / "serve.py"
MODERN, SESSION = "2026-07-28", "2025-11-25"
CONCURRENCY = (1, 64, 256)
SECONDS, QUICK_SECONDS = 10.0, 3.0
WARMUP_CALLS = 2
"""Calls each client makes before the window (connections made, caches filled)."""
SESSIONS, QUICK_SESSIONS = 1000, 200
START_TIMEOUT = 120.0
"""Seconds a server may take to load GitHub's spec and listen (fastmcp takes long)."""
CALL_TIMEOUT = 30.0
"""Seconds one call may take under load before the generator gives up on it."""
DRAIN_TIMEOUT = 180.0
"""Seconds the calls in flight at the window's end may take to finish."""
SPEEDUP_TARGET = 2.0
SCALE_OUT_TARGET = 2.5
"""3 replicas give at least this many times one process's calls/s (issue 28)."""
"""Ours at least this many times fastmcp's calls/s at C = 64 (issue 28)."""
TARGET_C = 64

# --- the load generator (its own process) ------------------------------------------------


class RawClient:
    """One keep-alive HTTP/1.1 connection speaking streamable HTTP in one era, reading
    answers (JSON or an event stream, chunked or not) with nothing but the bytes."""

    def __init__(self, stream: anyio.abc.ByteStream, port: int, era: str, tool: str) -> None:
        self.stream, self.port, self.era, self.tool = stream, port, era, tool
        self.buffer = b""
        self.session: str | None = None
        self.ids = 0

    async def _read(self) -> bytes:
        chunk = await self.stream.receive()
        self.buffer += chunk
        return chunk

    async def _until(self, marker: bytes) -> bytes:
        while marker not in self.buffer:
            await self._read()
        taken, self.buffer = self.buffer.split(marker, 1)
        return taken

    async def _exactly(self, size: int) -> bytes:
        while len(self.buffer) < size:
            await self._read()
        taken, self.buffer = self.buffer[:size], self.buffer[size:]
        return taken

    async def post(
        self, body: dict[str, Any], headers: dict[str, str]
    ) -> tuple[int, dict[str, str], bytes]:
        content = json.dumps(body).encode()
        head = {
            "Host": f"127.0.0.1:{self.port}",
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
            "MCP-Protocol-Version": self.era,
            "Content-Length": str(len(content)),
            **headers,
        }
        if self.session is not None:
            head["Mcp-Session-Id"] = self.session
        lines = "".join(f"{name}: {value}\r\n" for name, value in head.items())
        await self.stream.send(f"POST /mcp HTTP/1.1\r\n{lines}\r\n".encode() + content)
        status_line, *header_lines = (await self._until(b"\r\n\r\n")).decode().split("\r\n")
        got = {}
        for line in header_lines:
            name, _, value = line.partition(":")
            got[name.strip().lower()] = value.strip()
        if got.get("transfer-encoding") == "chunked":
            parts = []
            while size := int((await self._until(b"\r\n")).split(b";")[0], 16):
                parts.append(await self._exactly(size))
                await self._exactly(2)
            await self._until(b"\r\n")  # the empty trailer
            data = b"".join(parts)
        else:
            data = await self._exactly(int(got.get("content-length", "0")))
        return int(status_line.split()[1]), got, data

    async def request(self, method: str, params: dict[str, Any], **headers: str) -> dict[str, Any]:
        """The JSON-RPC result; raises RuntimeError on an HTTP or JSON-RPC error."""
        self.ids += 1
        if self.era == MODERN:
            meta = {
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "load", "version": "1"},
            }
            params = {**params, "_meta": meta}
            headers = {"Mcp-Method": method, **headers}
        body = {"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params}
        status, got, data = await self.post(body, headers)
        if status != 200:
            raise RuntimeError(f"HTTP {status}: {data[:200]!r}")
        answer = None
        if got.get("content-type", "").startswith("text/event-stream"):
            for line in data.decode().splitlines():
                if line.startswith("data:") and line[5:].strip():
                    message = json.loads(line[5:])
                    if message.get("id") == self.ids:
                        answer = message
        else:
            answer = json.loads(data)
        if not isinstance(answer, dict) or "result" not in answer:
            raise RuntimeError(f"{method}: {str(answer)[:200]}")
        if "mcp-session-id" in got:
            self.session = got["mcp-session-id"]
        result: dict[str, Any] = answer["result"]
        return result

    async def reconnect(self) -> None:
        """A new connection (the session, if any, kept)."""
        await self.stream.aclose()
        self.stream = await anyio.connect_tcp("127.0.0.1", self.port)
        self.buffer = b""

    async def open(self) -> None:
        """Open a session (2025-11-25; nothing to do on 2026-07-28)."""
        if self.era != SESSION:
            return
        info = {"name": "load", "version": "1"}
        await self.request(
            "initialize", {"protocolVersion": SESSION, "capabilities": {}, "clientInfo": info}
        )
        body = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        status, _, _ = await self.post(body, {})
        if status not in (200, 202):
            raise RuntimeError(f"notifications/initialized: HTTP {status}")

    async def call(self) -> None:
        headers = {"Mcp-Name": self.tool} if self.era == MODERN else {}
        result = await self.request(
            "tools/call", {"name": self.tool, "arguments": ARGUMENTS}, **headers
        )
        if result.get("isError"):
            raise RuntimeError(f"error result: {str(result.get('content'))[:200]}")


async def generate(port: int, era: str, tool: str, clients: int, seconds: float) -> None:
    """The generator: ``clients`` connections, each opened (and in a session on
    2025-11-25) and warmed up; then, once told ``go`` on stdin, calls for ``seconds``;
    prints its figures as one JSON line. Said on stdout: ``ready``, then the figures."""
    latencies: list[float] = []
    errors: list[str] = []
    go = anyio.Event()
    deadline = 0.0

    async def attempt(client: RawClient) -> None:
        """A call; on a connection the server closed (idle, or between requests: HTTP
        lets it), the call again once on a new one, as HTTP clients do."""
        try:
            await client.call()
        except (anyio.EndOfStream, anyio.BrokenResourceError, ConnectionError):
            reconnected.append(None)
            await client.reconnect()
            await client.call()

    async def one() -> None:
        try:
            stream = await anyio.connect_tcp("127.0.0.1", port)
        except OSError as exc:
            errors.append(f"connect: {exc}")
            return
        client = RawClient(stream, port, era, tool)
        try:
            try:
                with anyio.fail_after(CALL_TIMEOUT * (WARMUP_CALLS + 1)):
                    await client.open()
                    for _ in range(WARMUP_CALLS):
                        await attempt(client)
            except Exception as exc:  # a benchmark's client: counted, said
                errors.append(f"warm-up: {type(exc).__name__}: {exc}")
            ready.append(None)
            if len(ready) == clients:
                print("ready", flush=True)
            await go.wait()
            while time.perf_counter() < deadline:
                start = time.perf_counter()
                try:
                    with anyio.fail_after(CALL_TIMEOUT):
                        await attempt(client)
                except Exception as exc:  # counted, the first said
                    errors.append(f"{type(exc).__name__}: {exc}")
                    return  # the connection's state is unknown: this client stops
                latencies.append(time.perf_counter() - start)
        finally:
            await client.stream.aclose()

    async def told() -> None:
        nonlocal deadline
        line = await anyio.to_thread.run_sync(sys.stdin.readline)
        if line.strip() != "go":
            raise RuntimeError(f"expected go, got {line!r}")
        deadline = time.perf_counter() + seconds
        go.set()

    ready: list[None] = []
    reconnected: list[None] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(told)
        for _ in range(clients):
            tg.start_soon(one)
        await go.wait()
        started = time.perf_counter()
    wall = time.perf_counter() - started
    figures = {
        "calls": len(latencies),
        "wall": wall,
        "p50": statistics.median(latencies) if latencies else float("nan"),
        "p99": statistics.quantiles(latencies, n=100)[98] if len(latencies) > 1 else float("nan"),
        "errors": len(errors),
        "reconnects": len(reconnected),
        "first_error": errors[0][:300] if errors else "",
    }
    print(json.dumps(figures), flush=True)


# --- the servers ---------------------------------------------------------------------------


def tree(pid: int) -> list[int]:
    """``pid`` and every process descended from it (Linux's ``/proc``)."""
    found = [pid]
    for each in found:
        for task in Path(f"/proc/{each}/task").glob("*"):
            with contextlib.suppress(OSError):
                found += [int(c) for c in (task / "children").read_text().split()]
    return found


def tree_cpu(pid: int) -> dict[int, float]:
    """The CPU seconds of ``pid`` and each of its descendants (those alive)."""
    used = {}
    for each in tree(pid):
        with contextlib.suppress(OSError):
            used[each] = cpu_seconds(each)
    return used


def spread(before: dict[int, float], after: dict[int, float]) -> str:
    """How the window's CPU time was shared by the processes that used most of it (the
    workers; a supervisor's share is negligible): percentages, largest first."""
    used = sorted((after[p] - before.get(p, 0.0) for p in after), reverse=True)
    total = sum(used)
    shares = [u / total for u in used if total and u / total >= 0.02]
    return "/".join(f"{share * 100:.0f}" for share in shares) if len(shares) > 1 else "-"


def by_role(before: dict[int, float], after: dict[int, float]) -> dict[str, float]:
    """The window's CPU seconds by what each process is (its command name): ``haproxy``,
    ``redis``, ``python`` (a replica, a worker, one process) or ``other`` (a shell)."""
    found: dict[str, float] = {}
    for pid, seconds in after.items():
        try:
            name = Path(f"/proc/{pid}/comm").read_text().strip()
        except OSError:
            name = ""
        role = next((r for r in ("haproxy", "redis", "python") if name.startswith(r)), "other")
        found[role] = found.get(role, 0.0) + seconds - before.get(pid, 0.0)
    return found


def tree_rss_kb(pid: int) -> int:
    """The resident memory of ``pid`` and its descendants, in KiB."""
    total = 0
    for each in tree(pid):
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{each}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
    return total


@dataclass(frozen=True)
class Server:
    """A contender: how to start it on a port, and the eras it is measured in."""

    name: str
    command: list[str]
    port: int
    eras: tuple[str, ...]
    sessions: bool = False
    """Whether its memory per 2025-11-25 session is measured."""
    env: tuple[tuple[str, str], ...] = ()
    """Added to its environment."""
    probe: Path | None = None
    """Where its traced memory is written (its command runs under `TRACED`)."""
    paired: tuple[Server, ...] = ()
    """Measured window by window in turns with these (all running)."""
    target_only: bool = False
    """Measured at `TARGET_C` only."""


def servers(spec: Path, base_url: str, workers: int, probes: Path, sink: int) -> list[Server]:
    """Ours in one process (telemetry off, and on exporting to the OTLP receiver on port
    ``sink``) and in ``workers``, and fastmcp's, each on a port of its own; the memory
    probes' files in ``probes``."""

    def ours(port: int, *, probe: Path | None = None, recorded: bool = False) -> list[str]:
        python = [sys.executable, str(TRACED), str(probe)] if probe else [sys.executable]
        cli = [str(IN_MEMORY)] if recorded else ["-m", "toolsets.cli"]
        command = [*python, *cli, "serve", str(spec)]
        return [*command, "--base-url", base_url, "--http", f"127.0.0.1:{port}"]

    one, alone, many, peer, traced, exported, untraced, mine_2, peer_2 = (
        free_port() for _ in range(9)
    )
    mine, theirs = probes / "ours", probes / "fastmcp"
    fastmcp = [str(peer_python(FASTMCP)), str(TRACED), str(theirs), str(CHILD), "fastmcp-http"]
    spread = [*ours(many), "--stateless", "--workers", str(workers)]
    lifted = ["--max-sessions-per-client", str(OPEN_TO_ONE_CLIENT)]
    otel = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{sink}",
        "OTEL_SERVICE_NAME": "serve-load",
    }
    found = [
        Server(
            "ours 1 process",
            [*ours(one, probe=mine), *lifted],
            one,
            (MODERN, SESSION),
            sessions=True,
            probe=mine,
        ),
        Server(
            TELEMETRY,
            ours(traced, recorded=True),
            traced,
            (MODERN,),
            paired=(
                Server(TELEMETRY_OFF, ours(untraced), untraced, (MODERN,)),
                Server(
                    TELEMETRY_OTLP, ours(exported), exported, (MODERN,), env=tuple(otel.items())
                ),
            ),
        ),
        Server("ours 1 stateless", [*ours(alone), "--stateless"], alone, (MODERN,)),
        Server(f"ours {workers} workers", spread, many, (MODERN,)),
    ]
    if deployable():
        balancer, replicas, redis = free_port(), [free_port() for _ in range(3)], free_port()
        settings = {
            "MCP_LB_PORT": str(balancer),
            "MCP_REPLICA_PORTS": " ".join(map(str, replicas)),
            "REDIS_PORT": str(redis),
            "TOOLSETS": f"{sys.executable} -m toolsets.cli",
        }
        command = ["bash", str(DEPLOY), str(spec), "--base-url", base_url]
        found.append(Server(REPLICAS, command, balancer, (MODERN,), env=tuple(settings.items())))
    fastmcp += [str(spec), base_url, str(peer)]
    found.append(Server("fastmcp", fastmcp, peer, (SESSION,), sessions=True, probe=theirs))
    theirs_too = [str(peer_python(FASTMCP)), str(CHILD), "fastmcp-http", str(spec), base_url]
    found.append(
        Server(
            OURS_IN_TURNS,
            [*ours(mine_2), *lifted],
            mine_2,
            (MODERN,),
            target_only=True,
            paired=(Server(FASTMCP_IN_TURNS, [*theirs_too, str(peer_2)], peer_2, (SESSION,)),),
        )
    )
    return found


def deployable() -> bool:
    """Whether the replicas' row can run: HAProxy, Redis and examples/deploy/ here."""
    return DEPLOY.is_file() and all(shutil.which(c) for c in ("haproxy", "redis-server"))


async def tool_name(port: int) -> str:
    """The name ``repos/get`` is listed under (each server names it its own way)."""
    async with await anyio.connect_tcp("127.0.0.1", port) as stream:
        client = RawClient(stream, port, SESSION, "")
        await client.open()
        cursor: str | None = None
        while True:
            listed = await client.request("tools/list", {"cursor": cursor} if cursor else {})
            for tool in listed["tools"]:
                if _name(tool["name"]) == OPERATION:
                    return str(tool["name"])
            cursor = listed.get("nextCursor")
            if not cursor:
                raise RuntimeError("repos/get is not listed")


@dataclass(frozen=True)
class SessionMemory:
    """What a server holds per open 2025-11-25 session (see the module's docstring)."""

    rss_kb: float
    traced_kb: float | None
    """None: the server could not be traced."""
    kept: int
    """Of the sessions pinged again after the batch, those the server still knew."""
    pinged: int


async def session_memory(port: int, pid: int, count: int, probe: Path | None) -> SessionMemory:
    """The memory per open 2025-11-25 session: resident memory grown by ``count`` sessions
    opened after ``count`` others (those fill what the allocator had free after
    loading), over ``count``; then (``probe``, the file `TRACED` writes) the bytes held
    of what was allocated while ``count`` more were opened, over ``count`` (traced
    apart: tracing's own records are resident memory too)."""
    await open_sessions(port, count)
    before = tree_rss_kb(pid)
    sessions = await open_sessions(port, count)
    grown = (tree_rss_kb(pid) - before) / count
    traced = None
    if probe is not None:
        os.kill(pid, signal.SIGUSR1)
        await anyio.sleep(0.2)  # a signal handler runs between two bytecodes
        sessions = await open_sessions(port, count)
        os.kill(pid, signal.SIGUSR2)
        held = int(await _written(anyio.Path(probe)))
        traced = held / 1024 / count if held >= 0 else None
    sample = [sessions[0], sessions[len(sessions) // 2], sessions[-1]]
    kept = 0
    for session in sample:
        async with await anyio.connect_tcp("127.0.0.1", port) as stream:
            client = RawClient(stream, port, SESSION, "")
            client.session = session
            with contextlib.suppress(RuntimeError):  # 404: the server forgot it
                await client.request("ping", {})
                kept += 1
    return SessionMemory(grown, traced, kept, len(sample))


async def open_sessions(port: int, count: int) -> list[str]:
    """The ids of ``count`` new 2025-11-25 sessions, each opened (``initialize`` and
    ``notifications/initialized``) and asked one ``ping``, and left open."""
    sessions: list[str] = []
    while len(sessions) < count:
        async with await anyio.connect_tcp("127.0.0.1", port) as stream:
            for _ in range(min(50, count - len(sessions))):
                client = RawClient(stream, port, SESSION, "")
                await client.open()
                await client.request("ping", {})
                if client.session is None:
                    raise RuntimeError("initialize: the server gave no Mcp-Session-Id")
                sessions.append(client.session)
    return sessions


async def _written(path: anyio.Path) -> str:
    """What a server writes to ``path`` when it gets to it (within `PROBE_TIMEOUT`)."""
    for _ in range(int(PROBE_TIMEOUT / PROBE_POLL)):
        if await path.is_file() and (text := await path.read_text()):
            return text
        await anyio.sleep(PROBE_POLL)  # the server signals nothing back but the file
    raise RuntimeError(f"the memory probe wrote nothing to {path} in {PROBE_TIMEOUT:g} s")


async def window(
    port: int,
    pid: int,
    era: str,
    tool: str,
    clients: int,
    seconds: float,
    count: RunningCount | None = None,
) -> dict[str, Any]:
    """One load window: the generator's figures and the server's CPU per call (and, with
    ``count``, the instructions the server ran over the window: ``instructions``)."""
    command = [
        sys.executable,
        __file__,
        "--generate",
        str(port),
        era,
        tool,
        str(clients),
        str(seconds),
    ]
    process = await anyio.open_process(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert process.stdin is not None
    assert process.stdout is not None
    try:
        out = b""
        with anyio.fail_after(START_TIMEOUT + CALL_TIMEOUT * WARMUP_CALLS):
            while b"ready\n" not in out:
                out += await process.stdout.receive()
        if count is not None:
            await count.mark()
        used = tree_cpu(pid)
        load = os.getloadavg()[0]
        await process.stdin.send(b"go\n")
        with anyio.fail_after(seconds + DRAIN_TIMEOUT):
            while not out.rstrip().endswith(b"}"):
                out += await process.stdout.receive()
        ended = tree_cpu(pid)
        instructions = await count.counted() if count is not None else 0
    finally:
        with anyio.CancelScope(shield=True):
            if process.returncode is None:
                process.kill()
            await process.wait()
    figures: dict[str, Any] = json.loads(out.decode().strip().splitlines()[-1])
    calls = figures["calls"]
    figures["rate"] = calls / figures["wall"] if figures["wall"] else 0.0
    cpu = sum(ended.values()) - sum(used.get(p, 0.0) for p in ended)
    figures["cpu_ms"] = cpu / calls * 1e3 if calls else float("nan")
    figures["load"] = load
    figures["instructions"] = instructions
    figures["spread"] = spread(used, ended)
    figures["roles"] = {
        role: seconds * 1e3 / calls if calls else float("nan")
        for role, seconds in by_role(used, ended).items()
    }
    return figures


async def measure(
    server: Server, concurrency: tuple[int, ...], seconds: float, sessions: int
) -> tuple[dict[str, dict[int, dict[str, Any]]], SessionMemory | None]:
    """Each era's figures by C, and the memory per session (if measured)."""
    port = server.port
    print(f"{server.name}: starting", file=sys.stderr, flush=True)
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), **dict(server.env)}
    by_era: dict[str, dict[int, dict[str, Any]]] = {}
    memory = None
    async with started_server(server.command, port=port, env=env, start_timeout=START_TIMEOUT) as (
        _,
        pid,
    ):
        with anyio.fail_after(START_TIMEOUT):
            while True:  # a load balancer listens before its replicas are ready
                try:
                    tool = await tool_name(port)
                    break
                except (RuntimeError, OSError, anyio.EndOfStream):
                    await anyio.sleep(0.5)  # nothing to wait on but the health checks
        if server.sessions:
            memory = await session_memory(port, pid, sessions, server.probe)
        for era in server.eras:
            for clients in concurrency:
                print(f"{server.name}: {era} C={clients}", file=sys.stderr, flush=True)
                by_era.setdefault(era, {})[clients] = await window(
                    port, pid, era, tool, clients, seconds
                )
    return by_era, memory


ByEra = dict[str, dict[int, dict[str, Any]]]
"""A server's window figures by era and C."""


async def in_turns(
    sides: tuple[Server, ...], concurrency: tuple[int, ...], seconds: float, rounds: int
) -> dict[str, ByEra]:
    """The figures of servers running at once, by name, measured window by window in
    turns (the machine's load falls on all alike): at each C, ``rounds`` windows of each
    (in its first era), the median of each figure."""
    names = [server.name for server in sides]
    eras = {server.name: server.eras[0] for server in sides}
    found: dict[str, dict[int, list[dict[str, Any]]]] = {name: {} for name in names}
    async with contextlib.AsyncExitStack() as stack:
        running: dict[str, tuple[int, int, str]] = {}
        for server in sides:
            print(f"{server.name}: starting", file=sys.stderr, flush=True)
            env = {**os.environ, "PYTHONPATH": str(REPO / "src"), **dict(server.env)}
            started = started_server(
                server.command, port=server.port, env=env, start_timeout=START_TIMEOUT
            )
            _, pid = await stack.enter_async_context(started)
            running[server.name] = (server.port, pid, await tool_name(server.port))
        for clients in concurrency:
            for turn in range(rounds):
                for name in rotated(names, turn):
                    era = eras[name]
                    print(f"{name}: {era} C={clients} ({turn + 1}/{rounds})", file=sys.stderr)
                    port, pid, tool = running[name]
                    figures = await window(port, pid, era, tool, clients, seconds)
                    found[name].setdefault(clients, []).append(figures)
    return {name: {eras[name]: {c: _median(w) for c, w in found[name].items()}} for name in names}


def _median(windows: list[dict[str, Any]]) -> dict[str, Any]:
    """One window's figures standing for several: the median of each measure, the sum
    of each count."""
    taken = dict(windows[0])
    for measure in ("rate", "p50", "p99", "cpu_ms", "load", "wall"):
        taken[measure] = statistics.median(w[measure] for w in windows)
    for count in ("calls", "errors", "reconnects"):
        taken[count] = sum(w[count] for w in windows)
    taken["first_error"] = next((w["first_error"] for w in windows if w["first_error"]), "")
    return taken


def _ms(value: float) -> str:
    return "-" if value != value else f"{value * 1e3:.1f}"


async def run(options: argparse.Namespace) -> int:
    spec = github_spec()
    concurrency = tuple(int(c) for c in options.concurrency.split(","))
    seconds = options.seconds or (QUICK_SECONDS if options.quick else SECONDS)
    sessions = options.sessions or (QUICK_SESSIONS if options.quick else SESSIONS)
    rest_port = free_port()
    rest = [sys.executable, str(SERVE), "--rest", str(spec), str(rest_port)]
    results: dict[str, dict[str, dict[int, dict[str, Any]]]] = {}
    memory: dict[str, SessionMemory | None] = {}
    failed: dict[str, str] = {}
    loads = [os.getloadavg()[0]]
    receiver = Receiver()
    with (
        tempfile.TemporaryDirectory() as probes,
        app_in_thread(receiver) as sink,
    ):
        async with server_process(rest, port=rest_port):
            base_url = f"http://127.0.0.1:{rest_port}"
            for server in servers(spec, base_url, options.workers, Path(probes), sink):
                if options.only and not server.name.startswith(tuple(options.only.split(","))):
                    continue
                try:
                    if server.paired:
                        rounds = QUICK_TELEMETRY_ROUNDS if options.quick else TELEMETRY_ROUNDS
                        sides = (server, *server.paired)
                        at = (TARGET_C,) if server.target_only else concurrency
                        results.update(await in_turns(sides, at, seconds, rounds))
                        continue
                    results[server.name], memory[server.name] = await measure(
                        server, concurrency, seconds, sessions
                    )
                except (RuntimeError, OSError, TimeoutError) as exc:
                    failed[server.name] = f"{type(exc).__name__}: {exc}"[:300]
                loads.append(os.getloadavg()[0])
    print(f"OTLP receiver: {receiver.describe()}", file=sys.stderr)
    return report(results, memory, failed, options, concurrency, seconds, sessions, loads, {})


class Receiver:
    """An OTLP/HTTP receiver (an ASGI app): counts what it is sent, by path, and drops it
    (what a collector does with it is not the served process's cost)."""

    def __init__(self) -> None:
        self.posts: dict[str, list[int]] = {}

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        size, more = 0, True
        while more:
            message = await receive()
            size += len(message.get("body", b""))
            more = message.get("more_body", False)
        self.posts.setdefault(scope["path"], []).append(size)
        headers = [(b"content-type", b"application/x-protobuf"), (b"content-length", b"0")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b""})

    def describe(self) -> str:
        """What it was sent: exports and bytes by path."""
        said = [f"{p} {len(s)} exports, {sum(s)} bytes" for p, s in sorted(self.posts.items())]
        return "; ".join(said) or "nothing"


NOT_RUN = "not run: needs haproxy and redis-server on PATH (examples/deploy/run.sh)"


def ratios(
    results: dict[str, dict[str, dict[int, dict[str, Any]]]],
    memory: dict[str, SessionMemory | None],
    concurrency: tuple[int, ...],
) -> bool:
    """Print ours/fastmcp (fastmcp in its 2025-11-25 sessions) by row and C; whether the
    target at C = `TARGET_C` was met (ours in one process, 2026-07-28: measured in turns
    with fastmcp when that pair ran, else from the rows measured one after the other)."""
    paired = OURS_IN_TURNS in results and FASTMCP_IN_TURNS in results
    judged = OURS_IN_TURNS if paired else "ours 1 process"
    met = True
    print("ours/fastmcp (fastmcp in 2025-11-25 sessions):")
    for name, by_era in results.items():
        if not name.startswith("ours"):
            continue
        if name == OURS_IN_TURNS:
            peer = results[FASTMCP_IN_TURNS][SESSION]
        else:
            peer = results.get("fastmcp", {}).get(SESSION, {})
        for era, by_c in by_era.items():
            for clients in concurrency:
                mine, theirs = by_c.get(clients), peer.get(clients)
                if mine is None or theirs is None or not theirs["calls"] or not mine["calls"]:
                    continue
                speed = mine["rate"] / theirs["rate"]
                cpu = mine["cpu_ms"] / theirs["cpu_ms"]
                p99 = mine["p99"] / theirs["p99"]
                said = ""
                if clients == TARGET_C and name == judged and era == MODERN:
                    ok = speed >= SPEEDUP_TARGET and p99 <= 1.0
                    met = ok
                    said = f"  (target ≥{SPEEDUP_TARGET:g}x calls/s, p99 ≤1x: {outcome(ok)})"
                print(
                    f"  {name:<22}{era:<12}C={clients:<5}calls/s {speed:5.2f}x  "
                    f"CPU/call {cpu:5.2f}x  p99 {p99:5.2f}x{said}"
                )
    held, peer_held = memory.get("ours 1 process"), memory.get("fastmcp")
    if held is not None and peer_held is not None:
        told = [f"RSS {_over(held.rss_kb, peer_held.rss_kb)}"]
        if held.traced_kb is not None and peer_held.traced_kb is not None:
            told.append(f"traced {_over(held.traced_kb, peer_held.traced_kb)}")
        print(f"  memory per open 2025-11-25 session: {', '.join(told)}")
    return met


def _over(mine: float, theirs: float) -> str:
    """``mine`` over ``theirs`` as a ratio, or said why not (a figure at or below zero:
    the allocator's free memory took the growth)."""
    return f"{mine / theirs:.2f}x" if theirs > 0 else f"- (fastmcp {theirs:.1f} KB)"


def telemetry_cost(results: dict[str, dict[str, dict[int, dict[str, Any]]]]) -> None:
    """Print telemetry on over off, CPU per call, by C (2026-07-28): recorded to memory
    (the target's measure) and exported over OTLP."""
    off = results.get(TELEMETRY_OFF, {}).get(MODERN, {})
    if not off:
        return
    print(
        "telemetry on/off (ours in one process, 2026-07-28; medians of windows taken in "
        "turns; on: recorded to memory, and exported over OTLP/HTTP, batched):"
    )
    for name, how in ((TELEMETRY, "in memory"), (TELEMETRY_OTLP, "OTLP")):
        for clients, with_it in results.get(name, {}).get(MODERN, {}).items():
            without = off.get(clients)
            if without is None or not with_it["calls"] or not without["calls"]:
                continue
            cost = with_it["cpu_ms"] / without["cpu_ms"]
            target = (
                f"  (target ≤{TELEMETRY_TARGET:.2f}x: {outcome(cost <= TELEMETRY_TARGET)})"
                if name == TELEMETRY
                else ""
            )
            print(
                f"  {how:<10}C={clients:<5}CPU/call {with_it['cpu_ms']:.2f} ms on, "
                f"{without['cpu_ms']:.2f} ms off: {cost:.3f}x  p99 "
                f"{with_it['p99'] / without['p99']:.2f}x{target}"
            )


def scale_out(results: dict[str, dict[str, dict[int, dict[str, Any]]]]) -> None:
    """Print what 3 replicas give over one process, projected from CPU per call: on this
    machine they share its CPUs, so calls/s cannot show it. Each replica on a core of its
    own serves 1/(its CPU per call); HAProxy and Redis, on cores of their own, cap the
    whole at 1/(theirs)."""
    replicas = results.get(REPLICAS, {}).get(MODERN, {})
    one = results.get("ours 1 process", {}).get(MODERN, {})
    if not replicas or not one:
        return
    print(
        "3 replicas over one process, projected from CPU per call (2026-07-28; a core for "
        "each replica, HAProxy and Redis on cores of their own):"
    )
    for clients, figures in replicas.items():
        alone = one.get(clients)
        roles = figures.get("roles", {})
        replica_ms = roles.get("python", float("nan")) + roles.get("other", 0.0)
        if alone is None or not figures["calls"] or not alone["calls"] or replica_ms <= 0:
            continue
        gain = 3 * alone["cpu_ms"] / replica_ms
        cap = min(
            (alone["cpu_ms"] / roles[r] for r in ("haproxy", "redis") if roles.get(r, 0) > 0),
            default=math.inf,
        )
        projected = min(gain, cap)
        parts = ", ".join(f"{role} {ms:.2f}" for role, ms in sorted(roles.items()))
        print(
            f"  C={clients:<5}CPU ms/call one process {alone['cpu_ms']:.2f}; deployment "
            f"{figures['cpu_ms']:.2f} ({parts}): 3 replicas {gain:.2f}x, HAProxy/Redis cap "
            f"{cap:.1f}x -> {projected:.2f}x (target ≥{SCALE_OUT_TARGET:g}x: "
            f"{outcome(projected >= SCALE_OUT_TARGET)})"
        )


def report(
    results: dict[str, dict[str, dict[int, dict[str, Any]]]],
    memory: dict[str, SessionMemory | None],
    failed: dict[str, str],
    options: argparse.Namespace,
    concurrency: tuple[int, ...],
    seconds: float,
    sessions: int,
    loads: list[float],
    figures: dict[str, float],
) -> int:
    print(
        f"served under load: GitHub's spec, repos/get to a local REST server; {seconds:g} s per "
        f"window after {WARMUP_CALLS} warm-up calls per client; {os.cpu_count()} CPUs, "
        f"load average {min(loads):.1f}-{max(loads):.1f} (1 min) during the run"
    )
    columns = ("calls/s", "p50 ms", "p99 ms", "CPU ms/call", "errors", "load", "CPU % by process")
    widths = (10, 10, 10, 13, 8, 6, 18)
    heads = "".join(f"{c:>{w}}" for c, w in zip(columns, widths, strict=True))
    print(f"{'server':<22}{'era':<12}{'C':>5}{heads}")
    for name, by_era in results.items():
        for era, by_c in by_era.items():
            for clients, f in by_c.items():
                print(
                    f"{name:<22}{era:<12}{clients:>5}{f['rate']:>10.1f}{_ms(f['p50']):>10}"
                    f"{_ms(f['p99']):>10}{f['cpu_ms']:>13.2f}{f['errors']:>8}{f['load']:>6.1f}{f['spread']:>18}"
                )
                key = f"{name} {era} C={clients}"
                figures[f"{key} calls/s"] = f["rate"]
                figures[f"{key} p99 ms"] = f["p99"] * 1e3
                figures[f"{key} cpu ms"] = f["cpu_ms"]
                if f["first_error"]:
                    print(f"    first error: {f['first_error']}")
                if f["reconnects"]:
                    again = f["reconnects"]
                    print(f"    {again} call(s) sent again on a new connection (one closed idle)")
    if not deployable():
        print(f"{REPLICAS:<22}{NOT_RUN}")
    for name, why in failed.items():
        print(f"{name:<22}failed: {why}")
    for name, held in memory.items():
        if held is None:
            continue
        traced = "-" if held.traced_kb is None else f"{held.traced_kb:.1f}"
        print(
            f"{name}: per open 2025-11-25 session ({sessions} sessions): RSS "
            f"{held.rss_kb:.1f} KB, traced {traced} KB; kept {held.kept}/{held.pinged}"
        )
        figures[f"{name} KB/session"] = held.rss_kb
        if held.traced_kb is not None:
            figures[f"{name} traced KB/session"] = held.traced_kb
    met = ratios(results, memory, concurrency)
    scale_out(results)
    telemetry_cost(results)
    if options.json:
        emit(figures, [f"load average {min(loads):.1f}-{max(loads):.1f}"])
    return 0 if met or not options.check else 1


def main() -> None:
    if sys.argv[1:2] == ["--generate"]:
        port, era, tool, clients, seconds = sys.argv[2:7]
        anyio.run(generate, int(port), era, tool, int(clients), float(seconds))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="short windows, fewer sessions")
    parser.add_argument(
        "--seconds", type=float, help=f"seconds per window ({SECONDS:g}; quick {QUICK_SECONDS:g})"
    )
    parser.add_argument(
        "--concurrency", default=",".join(map(str, CONCURRENCY)), help="values of C"
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=os.cpu_count() or 2,
        help="workers of the --workers row (default: the CPUs)",
    )
    parser.add_argument(
        "--sessions", type=int, help=f"sessions opened for the memory figure ({SESSIONS})"
    )
    parser.add_argument(
        "--only",
        help="the servers whose name starts with one of these, comma-separated "
        "(e.g. 'ours 1 process,ours 1 telemetry,fastmcp')",
    )
    parser.add_argument("--check", action="store_true", help="exit 1 if a target is missed")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON too")
    sys.exit(anyio.run(run, parser.parse_args()))


if __name__ == "__main__":
    main()
