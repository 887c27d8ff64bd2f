"""Served under load: ``toolsets serve --http`` (one process, and ``--workers``) against
fastmcp's ``FastMCP.from_openapi`` over streamable HTTP, on GitHub's spec (1,100+
operations), C clients calling at once, side by side in one run.

Run: python benchmarks/serve_load.py [--quick] [--seconds S] [--concurrency 1,64,256]
     [--workers W] [--sessions N] [--only NAME] [--check] [--json]

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

``mem KB/session``: the server's resident memory grown by opening N (``--sessions``,
default 1,000) 2025-11-25 sessions, over N (ours one process against fastmcp), after N
others were opened (which fill what the allocator kept free after loading the spec).

``ours 1 stateless`` is one process with ``--stateless``, as each worker serves: a
worker's call should cost what it does.

``--only NAME`` runs the rows of the servers whose name starts so.

fastmcp is measured in its 2025-11-25 sessions only (the era its clients speak).
Ratios ours/fastmcp follow; the targets (issue 28): ours ≥ 2x fastmcp's calls/s at C = 64
with p99 no worse.

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
import os
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
from _common import (
    REPO,
    cpu_seconds,
    emit,
    free_port,
    outcome,
    peer_python,
    server_process,
    started_server,
)
from serve import ARGUMENTS, FASTMCP, OPERATION, _name, github_spec

HERE = Path(__file__).resolve().parent
DEPLOY = HERE.parent / "examples" / "deploy" / "run.sh"
"""Redis, three replicas of ``toolsets serve --http`` and HAProxy in front."""
REPLICAS = "ours 3 replicas"
CHILD = HERE / "peers" / "serve_child.py"
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


def servers(spec: Path, base_url: str, workers: int) -> list[Server]:
    """Ours in one process and in ``workers``, and fastmcp's, each on a port of its own."""

    def ours(port: int) -> list[str]:
        command = [sys.executable, "-m", "toolsets.cli", "serve", str(spec)]
        return [*command, "--base-url", base_url, "--http", f"127.0.0.1:{port}"]

    one, alone, many, peer = free_port(), free_port(), free_port(), free_port()
    fastmcp = [str(peer_python(FASTMCP)), str(CHILD), "fastmcp-http", str(spec), base_url]
    spread = [*ours(many), "--stateless", "--workers", str(workers)]
    found = [
        Server("ours 1 process", ours(one), one, (MODERN, SESSION), sessions=True),
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
    found.append(Server("fastmcp", [*fastmcp, str(peer)], peer, (SESSION,), sessions=True))
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


async def session_memory(port: int, pid: int, count: int) -> float:
    """KiB of the server's resident memory per open 2025-11-25 session: grown by ``count``
    sessions opened after ``count`` others (those fill what the allocator had free
    after loading), over ``count``."""
    before = 0
    for batch in range(2):
        if batch == 1:
            before = tree_rss_kb(pid)
        opened = 0
        while opened < count:
            async with await anyio.connect_tcp("127.0.0.1", port) as stream:
                for _ in range(min(50, count - opened)):  # the sessions stay open
                    await RawClient(stream, port, SESSION, "").open()
                    opened += 1
    return (tree_rss_kb(pid) - before) / count


async def window(
    port: int, pid: int, era: str, tool: str, clients: int, seconds: float
) -> dict[str, Any]:
    """One load window: the generator's figures and the server's CPU per call."""
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
        used = tree_cpu(pid)
        load = os.getloadavg()[0]
        await process.stdin.send(b"go\n")
        with anyio.fail_after(seconds + DRAIN_TIMEOUT):
            while not out.rstrip().endswith(b"}"):
                out += await process.stdout.receive()
        ended = tree_cpu(pid)
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
    figures["spread"] = spread(used, ended)
    return figures


async def measure(
    server: Server, concurrency: tuple[int, ...], seconds: float, sessions: int
) -> tuple[dict[str, dict[int, dict[str, Any]]], float | None]:
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
            memory = await session_memory(port, pid, sessions)
        for era in server.eras:
            for clients in concurrency:
                print(f"{server.name}: {era} C={clients}", file=sys.stderr, flush=True)
                by_era.setdefault(era, {})[clients] = await window(
                    port, pid, era, tool, clients, seconds
                )
    return by_era, memory


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
    memory: dict[str, float | None] = {}
    failed: dict[str, str] = {}
    loads = [os.getloadavg()[0]]
    async with server_process(rest, port=rest_port):
        base_url = f"http://127.0.0.1:{rest_port}"
        for server in servers(spec, base_url, options.workers):
            if options.only and not server.name.startswith(options.only):
                continue
            try:
                results[server.name], memory[server.name] = await measure(
                    server, concurrency, seconds, sessions
                )
            except (RuntimeError, OSError, TimeoutError) as exc:
                failed[server.name] = f"{type(exc).__name__}: {exc}"[:300]
            loads.append(os.getloadavg()[0])
    return report(results, memory, failed, options, concurrency, seconds, sessions, loads, {})


NOT_RUN = "not run: needs haproxy and redis-server on PATH (examples/deploy/run.sh)"


def ratios(
    results: dict[str, dict[str, dict[int, dict[str, Any]]]],
    memory: dict[str, float | None],
    concurrency: tuple[int, ...],
) -> bool:
    """Print ours/fastmcp (fastmcp in its 2025-11-25 sessions) by row and C; whether the
    target at C = `TARGET_C` was met (ours in one process, 2026-07-28)."""
    peer = results.get("fastmcp", {}).get(SESSION, {})
    met = True
    print("ours/fastmcp (fastmcp in 2025-11-25 sessions):")
    for name, by_era in results.items():
        if not name.startswith("ours"):
            continue
        for era, by_c in by_era.items():
            for clients in concurrency:
                mine, theirs = by_c.get(clients), peer.get(clients)
                if mine is None or theirs is None or not theirs["calls"] or not mine["calls"]:
                    continue
                speed = mine["rate"] / theirs["rate"]
                cpu = mine["cpu_ms"] / theirs["cpu_ms"]
                p99 = mine["p99"] / theirs["p99"]
                said = ""
                if clients == TARGET_C and name == "ours 1 process" and era == MODERN:
                    ok = speed >= SPEEDUP_TARGET and p99 <= 1.0
                    met = ok
                    said = f"  (target ≥{SPEEDUP_TARGET:g}x calls/s, p99 ≤1x: {outcome(ok)})"
                print(
                    f"  {name:<16}{era:<12}C={clients:<5}calls/s {speed:5.2f}x  "
                    f"CPU/call {cpu:5.2f}x  p99 {p99:5.2f}x{said}"
                )
    mine_kb, theirs_kb = memory.get("ours 1 process"), memory.get("fastmcp")
    if mine_kb is not None and theirs_kb:
        print(f"  memory per open 2025-11-25 session: {mine_kb / theirs_kb:.2f}x")
    return met


def report(
    results: dict[str, dict[str, dict[int, dict[str, Any]]]],
    memory: dict[str, float | None],
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
    for name, kb in memory.items():
        if kb is not None:
            print(f"{name}: {kb:.1f} KB per open 2025-11-25 session ({sessions} sessions)")
            figures[f"{name} KB/session"] = kb
    met = ratios(results, memory, concurrency)
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
    parser.add_argument("--only", help="the servers whose name starts so (e.g. 'ours 2')")
    parser.add_argument("--check", action="store_true", help="exit 1 if a target is missed")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON too")
    sys.exit(anyio.run(run, parser.parse_args()))


if __name__ == "__main__":
    main()
