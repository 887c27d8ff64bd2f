"""What `RestApiTool.run` adds to a REST call over raw httpx2, on the same local server.

Both sides call one small API (the spec is ``SPEC`` below) on a local HTTP/1.1 keep-alive
server that answers at once, so the difference is our layer: checking the arguments
against the operation's schema, building the request as the spec says (path, query,
JSON body, the API key), reading the response and decoding it for the model.

Run: python benchmarks/openapi_call.py [--calls N] [--warmup W] [--block B]
                                        [--concurrency C] [--repeats R]
                                        [--connections K] [--instructions] [--check]
                                        [--before REF [--rounds P]]

The server is a bare HTTP/1.1 loop on anyio streams, in a process of its own (this script, run with
``--serve``), so its CPU time never shares the client's event loop. It answers
``GET /items/{item_id}?q=...`` and ``POST /items`` (a JSON body) with small JSON bodies,
and 401 to a request without the API key.

The sides, each with its own ``httpx2.AsyncClient`` made alike (timeout 30 s, no
redirects, ``trust_env=False``, and a pool of K connections, all kept alive: httpx2's
default keeps only 20, so 300 concurrent calls would measure reconnecting):
  raw   ``client.get(url, params=..., headers=...)`` / ``client.post(url, json=...,
        headers=...)`` with the URL and API key written by hand, then ``response.json()``;
  ours  ``RestApiTool.run(args, ToolContext())`` from ``OpenApiToolset(SPEC, base_url=...,
        credentials=..., client=...)``, what an agent calls.
Before measuring, both sides' answers are checked to be the same.

Rows, per operation:
  sequential ms   median latency of one call, awaited one after another: N calls per side
                  after W warm-up calls, the sides taking turns in blocks of B calls (one
                  by default, in a rotating order) so that other work on a busy machine
                  hits them alike;
  min ms          the fastest of those calls: the floor, least disturbed by other work;
  client CPU µs   this process's CPU time per sequential call (mean; the server's is not
                  counted): the client-side work, what our layer adds to;
  C concurrent ms wall time for C calls started at once and all awaited (an anyio task
                  group), median of R bursts per side, the sides taking turns burst by
                  burst (after one warm-up burst each).
  instructions k  with ``--instructions``: user-space instructions per call, in thousands,
                  counted by ``perf stat -e instructions:u`` (or, where the machine
                  has no counters, valgrind's callgrind: the table says which) around
                  a process of each side's alone making 100 and then 600 calls (the
                  difference over 500: start-up cancels out). Unlike time, it does not
                  move with other load on the machine: the steadiest figure of what our
                  layer adds to a call.
``ours/raw`` is, for the two timed rows, the median of the ratios of neighbouring
measurements (the i-th call or burst of ours over the i-th of raw, taken one right after
the other): on a shared machine, latencies jump between a fast and a slow mode as other
processes take the CPUs, and a ratio of two medians can land in different modes, while
neighbours share theirs. For the other rows it is the plain ratio. The target (≤ 1.20x
raw sequential, ≤ 1.20x concurrent) is checked on the timed rows and the instructions
(held to the sequential one); with ``--check`` a missed target
makes the exit status 1. Run the script more than once before believing a time ratio
near its target.

``--before REF`` measures in P processes (``--rounds``, default 3) importing ``src/`` of the
working tree and P importing ``src/`` of git commit REF, the two taking turns, and prints
each figure's median (``ours/raw`` ratios among them) before and after, and their ratio;
with ``--instructions``, each side's first process counts them too.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.abc
import httpx2
from _common import (
    Call,
    PerCall,
    add_before_option,
    before_after,
    concurrent,
    emit,
    instructions_per_call,
    sequential,
    server_process,
    verdict,
)

from toolsets import ToolContext
from toolsets.openapi import OpenApiToolset

SIDES = ("raw", "ours")
OPERATIONS = ("GET", "POST")
SEQUENTIAL_TARGET = 1.05
"""Ours may take at most this many times raw's time and instructions, call after call
(issue 25, item 20)."""
CONCURRENT_TARGET = 1.20
"""Ours may take at most this many times raw's time for a burst of concurrent calls."""
API_KEY = "bench-key"
ITEM_ARGS: dict[str, Any] = {"item_id": 42, "q": "blue shoes"}
NEW_ITEM: dict[str, Any] = {"name": "desk lamp", "price": 19.5, "tags": ["home", "light"]}
BENCH_TIMEOUT = 300.0
"""A bound on the timed measurement, about a minute when all is well (counts have their own)."""
TIMEOUT = 30.0
"""What `OpenApiToolset` gives its default client: both sides' clients get it too."""
ROUND_OPTIONS = (
    "calls",
    "warmup",
    "block",
    "concurrency",
    "repeats",
    "connections",
    "instructions",
)
"""The options each process of a ``--before`` run is given."""
COUNTED_CALLS = (100, 600)
"""Calls made by the two processes whose instructions are counted, per side."""

SPEC: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "Items", "version": "1"},
    "servers": [{"url": "https://items.example/v1"}],
    "security": [{"api_key": []}],
    "paths": {
        "/items/{item_id}": {
            "get": {
                "operationId": "getItem",
                "summary": "Get an item",
                "parameters": [
                    {
                        "name": "item_id",
                        "in": "path",
                        "required": True,
                        "schema": {"type": "integer", "minimum": 1},
                    },
                    {"name": "q", "in": "query", "schema": {"type": "string"}},
                ],
                "responses": {"200": {"description": "The item."}},
            }
        },
        "/items": {
            "post": {
                "operationId": "createItem",
                "summary": "Create an item",
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/NewItem"}}
                    },
                },
                "responses": {"201": {"description": "The item as stored."}},
            }
        },
    },
    "components": {
        "securitySchemes": {"api_key": {"type": "apiKey", "in": "header", "name": "X-Api-Key"}},
        "schemas": {
            "NewItem": {
                "type": "object",
                "required": ["name", "price"],
                "properties": {
                    "name": {"type": "string", "minLength": 1},
                    "price": {"type": "number", "minimum": 0},
                    "tags": {"type": "array", "items": {"type": "string"}},
                },
            }
        },
    },
}


@dataclass(frozen=True, kw_only=True)
class Result:
    """One operation's measurements, per side."""

    operation: str
    latency_s: dict[str, list[float]]
    """Every sequential call's latency, in seconds."""
    cpu_s: dict[str, float]
    """This process's CPU time per sequential call, in seconds."""
    burst_s: dict[str, list[float]]
    """The wall time of each concurrent burst, in seconds."""


# --- the server (its own process) ------------------------------------------------------------


async def _connection(stream: anyio.abc.SocketStream) -> None:
    """HTTP/1.1 with keep-alive, just enough for the two operations."""
    buffer = b""
    async with stream:
        while True:
            while (head_end := buffer.find(b"\r\n\r\n")) < 0:
                try:
                    buffer += await stream.receive()
                except (anyio.EndOfStream, anyio.BrokenResourceError):
                    return
            head = buffer[:head_end].lower()
            length = 0
            at = head.find(b"\r\ncontent-length:")
            if at >= 0:
                length = int(head[at + 17 :].split(b"\r\n", 1)[0])
            end = head_end + 4 + length
            while len(buffer) < end:
                buffer += await stream.receive()
            body = buffer[head_end + 4 : end]
            buffer = buffer[end:]
            await stream.send(_answer(head, body))


def _answer(head: bytes, body: bytes) -> bytes:
    method, target, _ = head.split(b"\r\n", 1)[0].split(b" ", 2)
    path = target.split(b"?", 1)[0]
    if b"\r\nx-api-key: " + API_KEY.encode() + b"\r\n" not in head + b"\r\n":
        status, payload = b"401 Unauthorized", b'{"detail": "no API key"}'
    elif method == b"get" and path.startswith(b"/items/"):
        item_id = path[7:]
        status = b"200 OK"
        payload = b'{"id": %s, "name": "item %s", "price": 9.5}' % (item_id, item_id)
    elif method == b"post" and path == b"/items":
        status, payload = b"201 Created", b'{"id": 7, "item": ' + body + b"}"
    else:
        status, payload = b"404 Not Found", b'{"detail": "no such thing"}'
    head_out = b"HTTP/1.1 %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n"
    return head_out % (status, len(payload)) + payload


async def _serve() -> None:
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0, backlog=1024)
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    print(port, flush=True)  # the parent reads the port from the first line
    await listener.serve(_connection)


@contextlib.asynccontextmanager
async def items_server() -> AsyncIterator[str]:
    """The server in a process of its own; yields its base URL."""
    async with server_process([sys.executable, __file__, "--serve"]) as port:
        yield f"http://127.0.0.1:{port}"


# --- the two sides ---------------------------------------------------------------------------


def new_client(connections: int) -> httpx2.AsyncClient:
    limits = httpx2.Limits(max_connections=connections, max_keepalive_connections=connections)
    return httpx2.AsyncClient(
        timeout=TIMEOUT, follow_redirects=False, trust_env=False, limits=limits
    )


@contextlib.asynccontextmanager
async def sides(url: str, connections: int) -> AsyncIterator[dict[str, dict[str, Call]]]:
    """Both sides' calls, by operation, each side's answers checked against the other's."""
    async with new_client(connections) as raw_client, new_client(connections) as ours_client:
        headers = {"X-Api-Key": API_KEY}

        async def raw_get() -> object:
            item_id, q = ITEM_ARGS["item_id"], ITEM_ARGS["q"]
            response = await raw_client.get(
                f"{url}/items/{item_id}", params={"q": q}, headers=headers
            )
            return response.json()

        async def raw_post() -> object:
            response = await raw_client.post(f"{url}/items", json=NEW_ITEM, headers=headers)
            return response.json()

        toolset = OpenApiToolset(
            SPEC, base_url=url, credentials={"api_key": API_KEY}, client=ours_client
        )
        async with toolset:
            get_item = await toolset.get_tool("getItem")
            create_item = await toolset.get_tool("createItem")
            ctx = ToolContext()
            calls: dict[str, dict[str, Call]] = {
                "GET": {"raw": raw_get, "ours": lambda: get_item.run(ITEM_ARGS, ctx)},
                "POST": {"raw": raw_post, "ours": lambda: create_item.run(NEW_ITEM, ctx)},
            }
            expected = {
                "GET": {"id": 42, "name": "item 42", "price": 9.5},
                "POST": {"id": 7, "item": NEW_ITEM},
            }
            for operation, by_side in calls.items():
                for side, call in by_side.items():
                    answer = await call()
                    if answer != expected[operation]:
                        raise RuntimeError(f"{side} {operation} answered {answer!r}")
            yield calls


# --- measurements ----------------------------------------------------------------------------


async def measure(options: argparse.Namespace) -> tuple[list[Result], Counted]:
    async with items_server() as url:
        results = []
        with anyio.fail_after(BENCH_TIMEOUT):
            async with sides(url, options.connections) as calls:
                for operation in OPERATIONS:
                    latency, cpu = await sequential(
                        calls[operation], options.calls, options.warmup, options.block
                    )
                    rates = await concurrent(calls[operation], options.concurrency, options.repeats)
                    bursts = {
                        side: [options.concurrency / r for r in rates[side]] for side in SIDES
                    }
                    results.append(
                        Result(operation=operation, latency_s=latency, cpu_s=cpu, burst_s=bursts)
                    )
        # Each count has a bound of its own: under callgrind they take minutes.
        counted = await instructions(url, options) if options.instructions else None
        return results, counted


Counted = PerCall | None
"""Instructions per call by operation and side (or why not); None when not asked for."""


async def instructions(url: str, options: argparse.Namespace) -> Counted:
    """User-space instructions per call of each side, each in a process of its own."""
    pool = ["--connections", str(options.connections)]

    def command(operation: str, side: str, calls: int) -> list[str]:
        return [
            sys.executable,
            __file__,
            "--count",
            side,
            operation,
            str(calls),
            "--url",
            url,
            *pool,
        ]

    return await instructions_per_call(command, OPERATIONS, SIDES, COUNTED_CALLS)


async def count_calls(options: argparse.Namespace) -> None:
    """In a process whose instructions are counted: one side's calls, nothing else."""
    side, operation, count = options.count
    async with sides(options.url, options.connections) as calls:
        call = calls[operation][side]
        for _ in range(int(count)):
            await call()


# --- the table -------------------------------------------------------------------------------


def paired(raw: list[float], ours: list[float]) -> float:
    """The median ratio of neighbouring measurements."""
    return statistics.median(o / r for r, o in zip(raw, ours, strict=True))


def row(
    operation: str,
    figure: str,
    raw: float,
    ours: float,
    ratio: float,
    target: float | None,
    digits: int,
) -> str:
    held = verdict(ratio, at_most=target) if target is not None else ""
    return f"{operation:<6}{figure:<19}{raw:>9.{digits}f}{ours:>9.{digits}f}{ratio:>9.2f}x  {held}"


def table(
    results: list[Result], counted: Counted, options: argparse.Namespace
) -> tuple[list[str], bool]:
    """The table's lines, and whether every target was met."""
    lines = [
        f"{'':<6}{'figure':<19}{'raw':>9}{'ours':>9}{'ours/raw':>10}  target",
    ]
    met = True
    for result in results:
        op = result.operation
        latency, bursts = result.latency_s, result.burst_s
        seq = {side: statistics.median(latency[side]) * 1e3 for side in SIDES}
        low = {side: min(latency[side]) * 1e3 for side in SIDES}
        cpu = {side: result.cpu_s[side] * 1e6 for side in SIDES}
        wall = {side: statistics.median(bursts[side]) * 1e3 for side in SIDES}
        seq_ratio = paired(latency["raw"], latency["ours"])
        wall_ratio = paired(bursts["raw"], bursts["ours"])
        met &= seq_ratio <= SEQUENTIAL_TARGET and wall_ratio <= CONCURRENT_TARGET
        concurrent = f"{options.concurrency} concurrent ms"
        lines += [
            row(op, "sequential ms", seq["raw"], seq["ours"], seq_ratio, SEQUENTIAL_TARGET, 3),
            row("", "min ms", low["raw"], low["ours"], low["ours"] / low["raw"], None, 3),
            row("", "client CPU µs", cpu["raw"], cpu["ours"], cpu["ours"] / cpu["raw"], None, 0),
            row("", concurrent, wall["raw"], wall["ours"], wall_ratio, CONCURRENT_TARGET, 1),
        ]
        if isinstance(counted, tuple):
            count = {side: counted[1][op][side] / 1e3 for side in SIDES}
            ratio = count["ours"] / count["raw"]
            met &= ratio <= SEQUENTIAL_TARGET
            lines.append(
                row("", "instructions k", count["raw"], count["ours"], ratio, SEQUENTIAL_TARGET, 0)
            )
    if isinstance(counted, str):
        lines.append(f"instructions not counted: {counted}")
    elif counted is not None:
        lines.append(f"instructions counted by {counted[0]}")
    return lines, met


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=600, help="sequential calls per side")
    parser.add_argument("--warmup", type=int, default=50, help="warm-up calls per side")
    parser.add_argument("--block", type=int, default=1, help="sequential calls per turn")
    parser.add_argument("--concurrency", type=int, default=300, help="calls per burst")
    parser.add_argument("--repeats", type=int, default=9, help="bursts per side")
    parser.add_argument("--connections", type=int, default=100, help="each client's pool")
    parser.add_argument(
        "--instructions", action="store_true", help="count instructions per call (perf/valgrind)"
    )
    parser.add_argument("--check", action="store_true", help="exit 1 if a target is missed")
    add_before_option(parser)
    # What the benchmark runs itself as: the server, and a side whose instructions count.
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--count", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.serve:
        anyio.run(_serve)
        return
    if options.count:
        anyio.run(count_calls, options)
        return
    if options.before and not options.json:
        title = (
            f"REST call, raw httpx2 vs RestApiTool.run ({options.calls} sequential calls a side)"
        )
        before_after(__file__, options, ROUND_OPTIONS, title)
        return

    started = time.perf_counter()
    results, counted = anyio.run(measure, options)
    elapsed = time.perf_counter() - started
    if options.json:
        emit(*figures(results, counted))
        return

    print(
        f"REST call, raw httpx2 vs RestApiTool.run (sequential: {options.calls} calls per side "
        f"after {options.warmup} warm-up; concurrent: {options.repeats} bursts per side; "
        f"pools of {options.connections} connections)"
    )
    lines, met = table(results, counted, options)
    print("\n".join(lines))
    print(f"whole run {elapsed:.0f} s")
    if options.check and not met:
        sys.exit(1)


def figures(results: list[Result], counted: Counted) -> tuple[dict[str, float], list[str]]:
    """One run's figures for a before/after table, and how they were made."""
    out: dict[str, float] = {}
    for result in results:
        op = result.operation
        out[f"{op} sequential ms ours"] = statistics.median(result.latency_s["ours"]) * 1e3
        out[f"{op} sequential ours/raw"] = paired(result.latency_s["raw"], result.latency_s["ours"])
        out[f"{op} min ms ours"] = min(result.latency_s["ours"]) * 1e3
        out[f"{op} client CPU µs ours"] = result.cpu_s["ours"] * 1e6
        out[f"{op} client CPU ours/raw"] = result.cpu_s["ours"] / result.cpu_s["raw"]
        out[f"{op} concurrent ours/raw"] = paired(result.burst_s["raw"], result.burst_s["ours"])
    notes = []
    if isinstance(counted, tuple):
        counter, by_operation = counted
        for op, sides in by_operation.items():
            out[f"{op} k instructions ours"] = sides["ours"] / 1e3
            out[f"{op} instructions ours/raw"] = sides["ours"] / sides["raw"]
        notes.append(f"instructions counted by {counter}")
    elif isinstance(counted, str):
        notes.append(f"instructions not counted: {counted}")
    return out, notes


if __name__ == "__main__":
    main()
