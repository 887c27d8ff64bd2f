"""What `McpToolset` adds to a tool call over the raw `mcp` SDK, on the same server.

Both sides call the fixture server's ``echo`` tool (fixtures/mcp/server.py). The raw side
is the SDK's public API alone: ``mcp.Client(transport, **RAW_CLIENT_OPTIONS)`` over
``stdio_client`` or ``streamable_http_client`` (over HTTP with an
``httpx2.AsyncClient(**RAW_HTTP_OPTIONS)``); those options, printed with the results,
are the ones `McpToolset` uses by default (no response cache, no client-wide read
timeout, the same HTTP timeouts), so the difference is our layer:
``McpToolset.call_tool``'s session lookup, timeout and error mapping, and the client
options the toolset sets besides (client info, message and logging handlers,
``log_level``).

Run: python benchmarks/mcp_overhead.py [--calls N] [--warmup W] [--concurrency C]
                                        [--repeats R] [--block B] [--instructions]
                                        [--before REF [--rounds P]]

For each transport, in one run:
  stdio  each side starts its own server process (``python server.py stdio``): a stdio
         session owns its process;
  http   one server process (``python server.py http PORT`` on a free 127.0.0.1 port,
         started and stopped here), one session per side.

Columns (``raw`` is the SDK alone; ``ours`` is ``McpToolset.call_tool``, which returns the
same raw ``CallToolResult``; ``run`` is ``McpTool.run``, what an agent calls, which also
converts the result into JSON for the model):
  sequential ms    median latency of one call, awaited one after another: N calls per
                   side after W warm-up calls, in blocks of B calls, the sides taking
                   turns (in a rotating order) so that drift on a busy machine hits
                   them alike;
  client CPU µs    this process's CPU time per sequential call (mean; the server's is
                   not counted): the client-side work, what our layer adds to, and far
                   steadier than wall time when other processes compete for the CPUs;
  concurrent /s    calls per second when C calls are started at once and all awaited,
                   median of R bursts per side, the sides taking turns burst by burst
                   (after one warm-up burst each);
  conc. CPU µs     this process's CPU time per call in those bursts (median): what the
                   client spends on a call under concurrency, steadier than throughput
                   on a shared machine;
  instructions k   with ``--instructions``: user-space instructions per call, in
                   thousands, of a process of each side's alone making 50 and then 300
                   calls (the difference over 250), counted as ``_common`` counts them
                   (perf, else callgrind; the table says which); the server is not
                   counted. Unlike time, it does not move with other load. What the
                   process made before its calls (imports, the session) is frozen out
                   of the collector's reach first (``gc.freeze``, as ``toolsets serve``
                   does once loaded): otherwise a full collection, which walks every
                   object the imports made, falls among the counted calls or not as
                   the allocations since the start have it, and one more module
                   imported moves a side's count by a few percent.
``ours/raw`` and ``run/raw`` are the ratios of those medians, with the targets
(sequential ≤ 1.10x raw, concurrent throughput ≥ 0.95x raw) and whether ``ours`` meets
them. Timings on a small shared machine swing by a third between runs: run the script
more than once before believing a ratio near its target. If a session breaks mid-run (a
dropped HTTP connection ends the SDK's session), that transport is measured once more and
the table says so.

``--before REF`` measures in P processes (``--rounds``, default 3) importing ``src/`` of the
working tree and P importing ``src/`` of git commit REF, the two taking turns, and prints
each figure's median (``ours/raw`` ratios among them) before and after, and their ratio;
with ``--instructions``, each side's first process counts them too.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import gc
import statistics
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp.types as mt
from _common import (
    Call,
    PerCall,
    add_before_option,
    before_after,
    concurrent,
    emit,
    free_port,
    instructions_per_call,
    sequential,
    server_process,
    verdict,
)
from mcp import Client, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

import toolsets
from toolsets import ToolContext
from toolsets.mcp import McpToolset, Stdio, StreamableHttp

SERVER = Path(__file__).resolve().parent.parent / "fixtures" / "mcp" / "server.py"
SIDES = ("raw", "ours", "run")
TRANSPORTS = ("stdio", "http")
SEQUENTIAL_TARGET = 1.10
"""Ours may take at most this many times raw's median latency."""
CONCURRENT_TARGET = 0.95
"""Ours must reach at least this share of raw's throughput (issue 25, item 20)."""
BENCH_TIMEOUT = 240.0
"""A bound on the whole measurement (it takes well under a minute when all is well)."""
RAW_CLIENT_OPTIONS: dict[str, Any] = {"read_timeout_seconds": None, "cache": None}
"""The raw side's ``mcp.Client`` options (`McpToolset`'s defaults: no client-wide read
timeout, no response cache)."""
RAW_HTTP_OPTIONS: dict[str, Any] = {"timeout": httpx2.Timeout(30.0, read=300.0)}
"""The raw side's ``httpx2.AsyncClient`` options over HTTP (what `McpToolset` gives its
own client for a default `StreamableHttp`)."""
ARGS = {"text": "hello"}
COUNTED_CALLS = (50, 300)
"""Calls made by the two processes whose instructions are counted, per side."""


@dataclass(frozen=True, kw_only=True)
class Result:
    """One transport's measurements, per side."""

    transport: str
    protocol: str
    latency_s: dict[str, list[float]]
    """Every sequential call's latency, in seconds."""
    cpu_s: dict[str, float]
    """This process's CPU time per sequential call, in seconds."""
    throughput: dict[str, list[float]]
    """Calls per second of each concurrent burst."""
    burst_cpu_s: dict[str, list[float]]
    """This process's CPU time per call in each concurrent burst, in seconds."""
    broken: str | None = None
    """Why a first attempt was abandoned and this transport measured again, if it was."""


# --- servers and clients ---------------------------------------------------------------------


@contextlib.asynccontextmanager
async def http_server() -> AsyncIterator[str]:
    """The fixture server over streamable HTTP in a process of its own; yields its URL."""
    port = free_port()
    async with server_process([sys.executable, str(SERVER), "http", str(port)], port=port):
        yield f"http://127.0.0.1:{port}/mcp"


def text_of(result: mt.CallToolResult) -> str:
    block = result.content[0] if result.content else None
    return block.text if isinstance(block, mt.TextContent) else repr(result)


@contextlib.asynccontextmanager
async def sides(transport: str, url: str | None) -> AsyncIterator[tuple[str, dict[str, Call]]]:
    """The three ways to call ``echo`` on one transport, connected, tools listed (as an
    agent would have them); yields the negotiated protocol and the calls."""
    async with contextlib.AsyncExitStack() as stack:
        # (No deadline of its own here: a cancel scope cannot span the sessions it
        # opens. The whole run has one, and the toolset its connect timeout.)
        if transport == "stdio":
            command, args = sys.executable, [str(SERVER), "stdio"]
            raw_transport: Any = stdio_client(
                StdioServerParameters(command=command, args=args, env=None, cwd=None)
            )
            ours_transport: Stdio | StreamableHttp = Stdio(command=command, args=args)
        else:
            assert url is not None
            http = await stack.enter_async_context(httpx2.AsyncClient(**RAW_HTTP_OPTIONS))
            raw_transport = streamable_http_client(url, http_client=http)
            ours_transport = StreamableHttp(url=url)
        raw = await stack.enter_async_context(Client(raw_transport, **RAW_CLIENT_OPTIONS))
        await raw.list_tools()
        toolset = await stack.enter_async_context(McpToolset(ours_transport))
        tool = await toolset.get_tool("echo")
        protocol = raw.protocol_version
        if await toolset.protocol_version() != protocol:
            raise RuntimeError("the two sides negotiated different protocol versions")
        ctx = ToolContext()
        # The server sends the echo as text and as structured content ({"result": ...}),
        # which is what the model gets.
        answers = (
            text_of(await raw.call_tool("echo", ARGS)),
            text_of(await toolset.call_tool("echo", ARGS)),
            await tool.run(ARGS, ctx),
        )
        if answers != (ARGS["text"], ARGS["text"], {"result": ARGS["text"]}):
            raise RuntimeError(f"echo answered {answers}")
        calls: dict[str, Call] = {
            "raw": lambda: raw.call_tool("echo", ARGS),
            "ours": lambda: toolset.call_tool("echo", ARGS),
            "run": lambda: tool.run(ARGS, ctx),
        }
        yield protocol, calls


# --- measurements ----------------------------------------------------------------------------


async def measure(options: argparse.Namespace) -> tuple[list[Result], Counted]:
    with anyio.fail_after(BENCH_TIMEOUT):
        results = [await measure_transport(transport, options) for transport in TRANSPORTS]
    if not options.instructions:
        return results, None
    async with http_server() as url:  # each count has a bound of its own
        return results, await instructions(url)


Counted = PerCall | None
"""Instructions per call by transport and side (or why not); None when not asked for."""


async def instructions(url: str) -> Counted:
    """User-space instructions per call of each side, each in a process of its own (a stdio
    server is the counted process's child, and not counted)."""

    def command(transport: str, side: str, calls: int) -> list[str]:
        return [sys.executable, __file__, "--count", side, transport, str(calls), "--url", url]

    return await instructions_per_call(command, TRANSPORTS, SIDES, COUNTED_CALLS)


async def count_calls(options: argparse.Namespace) -> None:
    """In a process whose instructions are counted: one side's calls, nothing else."""
    side, transport, count = options.count
    async with sides(transport, options.url if transport == "http" else None) as (_, calls):
        call = calls[side]
        gc.collect()
        gc.freeze()  # see "instructions k" in the module's docstring
        for _ in range(int(count)):
            await call()


async def measure_transport(transport: str, options: argparse.Namespace) -> Result:
    """One transport, measured once more if a session broke under load.

    The SDK's streamable HTTP session does not survive a transport error: an
    ``httpx2.ReadError`` (seen about once in six runs on a busy machine) tears the raw
    side's session down; ours raises `toolsets.ConnectionError` for the call it lost.
    """
    broken: list[str] = []
    while True:
        try:
            if transport == "http":
                async with http_server() as url:
                    result = await measure_one(transport, url, options)
            else:
                result = await measure_one(transport, None, options)
        except* (httpx2.TransportError, toolsets.ConnectionError) as group:
            if broken:
                raise
            broken.append(leaf(group))
        else:
            return dataclasses.replace(result, broken=broken[0] if broken else None)


def leaf(error: BaseException) -> str:
    while isinstance(error, BaseExceptionGroup):
        error = error.exceptions[0]
    return f"{type(error).__module__}.{type(error).__name__}: {error}".rstrip(": ")


async def measure_one(transport: str, url: str | None, options: argparse.Namespace) -> Result:
    async with sides(transport, url) as (protocol, calls):
        latency, cpu = await sequential(calls, options.calls, options.warmup, options.block)
        burst_cpu: dict[str, list[float]] = {}
        throughput = await concurrent(calls, options.concurrency, options.repeats, burst_cpu)
        return Result(
            transport=transport,
            protocol=protocol,
            latency_s=latency,
            cpu_s=cpu,
            throughput=throughput,
            burst_cpu_s=burst_cpu,
        )


# --- the table -------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300, help="sequential calls per side")
    parser.add_argument("--warmup", type=int, default=20, help="warm-up calls per side")
    parser.add_argument("--block", type=int, default=10, help="sequential calls per turn")
    parser.add_argument("--concurrency", type=int, default=100, help="calls per burst")
    parser.add_argument("--repeats", type=int, default=9, help="bursts per side")
    parser.add_argument(
        "--instructions", action="store_true", help="count instructions per call (perf/valgrind)"
    )
    add_before_option(parser)
    # What the benchmark runs itself as: a side whose instructions are counted.
    parser.add_argument("--count", nargs=3, help=argparse.SUPPRESS)  # SIDE TRANSPORT CALLS
    parser.add_argument("--url", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.count:
        anyio.run(count_calls, options)
        return
    if options.before and not options.json:
        passed = ("calls", "warmup", "block", "concurrency", "repeats", "instructions")
        title = f"MCP echo call, raw SDK vs McpToolset ({options.calls} sequential calls a side)"
        before_after(__file__, options, passed, title)
        return

    started = time.perf_counter()
    results, counted = anyio.run(measure, options)
    elapsed = time.perf_counter() - started
    if options.json:
        emit(*figures(results, counted))
        return

    print(
        f"MCP echo call, raw SDK vs McpToolset (sequential: median of {options.calls} calls "
        f"after {options.warmup} warm-up; concurrent: median of {options.repeats} bursts of "
        f"{options.concurrency})"
    )
    print(
        f"{'transport':<10}{'figure':<16}{'raw':>8}{'ours':>8}{'ours/raw':>10}  "
        f"{'target':<14}{'run':>8}{'run/raw':>9}"
    )
    for result in results:
        seq = {side: statistics.median(result.latency_s[side]) * 1e3 for side in SIDES}
        ratio = seq["ours"] / seq["raw"]
        print(
            f"{result.transport:<10}{'sequential ms':<16}{seq['raw']:>8.3f}{seq['ours']:>8.3f}"
            f"{ratio:>9.2f}x  {verdict(ratio, at_most=SEQUENTIAL_TARGET):<14}"
            f"{seq['run']:>8.3f}{seq['run'] / seq['raw']:>8.2f}x"
        )
        cpu = {side: result.cpu_s[side] * 1e6 for side in SIDES}
        print(
            f"{'':<10}{'client CPU µs':<16}{cpu['raw']:>8.0f}{cpu['ours']:>8.0f}"
            f"{cpu['ours'] / cpu['raw']:>9.2f}x  {'':<14}"
            f"{cpu['run']:>8.0f}{cpu['run'] / cpu['raw']:>8.2f}x"
        )
        rate = {side: statistics.median(result.throughput[side]) for side in SIDES}
        ratio = rate["ours"] / rate["raw"]
        print(
            f"{'':<10}{'concurrent /s':<16}{rate['raw']:>8.0f}{rate['ours']:>8.0f}"
            f"{ratio:>9.2f}x  {verdict(ratio, at_least=CONCURRENT_TARGET):<14}"
            f"{rate['run']:>8.0f}{rate['run'] / rate['raw']:>8.2f}x"
        )
        busy = {side: statistics.median(result.burst_cpu_s[side]) * 1e6 for side in SIDES}
        print(
            f"{'':<10}{'conc. CPU µs':<16}{busy['raw']:>8.0f}{busy['ours']:>8.0f}"
            f"{busy['ours'] / busy['raw']:>9.2f}x  {'':<14}"
            f"{busy['run']:>8.0f}{busy['run'] / busy['raw']:>8.2f}x"
        )
        if isinstance(counted, tuple):
            count = {side: counted[1][result.transport][side] / 1e3 for side in SIDES}
            print(
                f"{'':<10}{'instructions k':<16}{count['raw']:>8.0f}{count['ours']:>8.0f}"
                f"{count['ours'] / count['raw']:>9.2f}x  {'':<14}"
                f"{count['run']:>8.0f}{count['run'] / count['raw']:>8.2f}x"
            )
    if isinstance(counted, str):
        print(f"instructions not counted: {counted}")
    elif counted is not None:
        low, high = COUNTED_CALLS
        print(f"instructions counted by {counted[0]} ({high} calls less {low})")
    for result in results:
        if result.broken is not None:
            print(f"{result.transport}: measured again after a session broke ({result.broken})")
    protocols = ", ".join(f"{r.transport} {r.protocol}" for r in results)
    print(f"protocol: {protocols}; whole run {elapsed:.0f} s")
    print(raw_options())


def raw_options() -> str:
    """The raw side's options, as the results state them."""
    client = ", ".join(f"{k}={v!r}" for k, v in RAW_CLIENT_OPTIONS.items())
    http = ", ".join(f"{k}={v!r}" for k, v in RAW_HTTP_OPTIONS.items())
    return f"raw: mcp.Client(transport, {client}); over HTTP httpx2.AsyncClient({http})"


def figures(results: list[Result], counted: Counted) -> tuple[dict[str, float], list[str]]:
    """One run's figures for a before/after table, and how they were made."""
    out: dict[str, float] = {}
    for result in results:
        seq = {side: statistics.median(result.latency_s[side]) * 1e3 for side in SIDES}
        rate = {side: statistics.median(result.throughput[side]) for side in SIDES}
        name = result.transport
        out[f"{name} sequential ms ours"] = seq["ours"]
        out[f"{name} sequential ours/raw"] = seq["ours"] / seq["raw"]
        out[f"{name} sequential run/raw"] = seq["run"] / seq["raw"]
        out[f"{name} client CPU µs ours"] = result.cpu_s["ours"] * 1e6
        out[f"{name} client CPU ours/raw"] = result.cpu_s["ours"] / result.cpu_s["raw"]
        out[f"{name} client CPU run/raw"] = result.cpu_s["run"] / result.cpu_s["raw"]
        out[f"{name} concurrent ours/raw"] = rate["ours"] / rate["raw"]
        busy = {side: statistics.median(result.burst_cpu_s[side]) for side in SIDES}
        out[f"{name} concurrent CPU ours/raw"] = busy["ours"] / busy["raw"]
    notes = [raw_options()]
    if isinstance(counted, tuple):
        counter, by_transport = counted
        for name, by_side in by_transport.items():
            out[f"{name} k instructions ours"] = by_side["ours"] / 1e3
            out[f"{name} instructions ours/raw"] = by_side["ours"] / by_side["raw"]
            out[f"{name} instructions run/raw"] = by_side["run"] / by_side["raw"]
        notes.append(f"instructions counted by {counter}")
    elif isinstance(counted, str):
        notes.append(f"instructions not counted: {counted}")
    return out, notes


if __name__ == "__main__":
    main()
