"""What telemetry costs a call, side by side in one run: an in-process `invoke` of a
function tool, and a served ``tools/call`` (the `mcp` SDK's client in process, and over
streamable HTTP to uvicorn in a thread of the same process; 2026-07-28),
with telemetry off and on (the OpenTelemetry SDK's synchronous processor handing every
span to an exporter that counts and drops it, every duration to its in-memory metric
reader), the collector tuned as ``toolsets serve`` tunes it. The sides
take turns round by round (the machine is shared and noisy); the table gives each side's
median CPU time per call and on/off. Target: on costs at most 10% of a served call.

``--before REF`` measures the off side with ``src/`` of git REF too (processes taking
turns): what telemetry being there at all costs a call while off.

    python benchmarks/telemetry.py [--calls 2000] [--rounds 7] [--before REF]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.to_thread
import httpx2
from _common import add_before_option, app_in_thread, before_after, emit, rotated, verdict
from _otel_memory import record_in_memory
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from toolsets import FunctionTool, ToolContext
from toolsets._gc import tuned_for_serving
from toolsets._invoke import invoke
from toolsets.mcp import McpServer

Run = Callable[[], Awaitable[Any]]


async def add(a: int, b: int) -> int:
    """Add two numbers (a coroutine: a plain function would run in a worker thread,
    whose hand-offs would be most of what is measured)."""
    return a + b


async def per_call(run: Run, count: int) -> float:
    """CPU microseconds per call of ``run`` (this process's: time it was not running,
    on a shared machine, is not the call's), over ``count`` calls."""
    start = time.process_time()
    for _ in range(count):
        await run()
    return (time.process_time() - start) / count * 1e6


def switch(side: str) -> None:
    """Telemetry turned on (recorded to memory: `_otel_memory`) or off."""
    from toolsets import telemetry

    if side == "off":
        telemetry.disable()
    else:
        record_in_memory()


async def measure(
    options: argparse.Namespace, sides: list[str]
) -> dict[tuple[str, str], list[float]]:
    """Each operation's µs per call on each side, one figure per round."""
    server = McpServer([add])
    # Over HTTP: uvicorn in a thread of this process (its CPU time is the call's too).
    with app_in_thread(server.http_app, factory=True) as port:
        return await _measure(options, sides, server, f"http://127.0.0.1:{port}/mcp")


async def _measure(
    options: argparse.Namespace, sides: list[str], server: McpServer, url: str
) -> dict[tuple[str, str], list[float]]:
    """`measure`, ``server`` served at ``url`` too."""
    tool = FunctionTool(add)
    found: dict[tuple[str, str], list[float]] = {}
    async with (
        Client(server.server, mode="2026-07-28") as client,
        httpx2.AsyncClient(timeout=30) as http,
        Client(streamable_http_client(url, http_client=http), mode="2026-07-28") as remote,
    ):

        async def invoked() -> object:
            return await invoke(tool, {"a": 1, "b": 2}, ToolContext(), default_timeout=5)

        async def served() -> object:
            return await client.call_tool("add", {"a": 1, "b": 2})

        async def over_http() -> object:
            return await remote.call_tool("add", {"a": 1, "b": 2})

        operations: dict[str, tuple[Run, int]] = {
            "invoke": (invoked, options.calls * 10),
            "served tools/call": (served, options.calls),
            "served over HTTP": (over_http, max(1, options.calls // 4)),
        }
        for turn in range(options.rounds + 1):  # the first round warms up
            for side in rotated(sides, turn):
                if len(sides) > 1:
                    switch(side)
                for name, (run, count) in operations.items():
                    figure = await per_call(run, count)
                    if turn:
                        found.setdefault((name, side), []).append(figure)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    add_before_option(parser)
    parser.set_defaults(rounds=7)
    options = parser.parse_args()
    if options.json:  # one side of --before: telemetry off (REF may have none)
        found = anyio.run(measure, options, ["off"])
        emit({f"{op} µs": statistics.median(v) for (op, _), v in found.items()})
        return
    if options.before:
        title = f"telemetry off, before and after ({options.calls} served calls a round)"
        before_after(__file__, options, ["calls"], title)
        return
    tuned_for_serving()
    found = anyio.run(measure, options, ["off", "on"])
    print(
        f"In process, 2026-07-28; medians of {options.rounds} rounds; "
        "on: the SDK's synchronous processor to a counting exporter, in-memory metric reader"
    )
    print(f"{'operation (CPU)':<22}{'off µs':>10}{'on µs':>10}{'on/off':>10}  target")
    for operation in dict.fromkeys(op for op, _ in found):
        off = statistics.median(found[(operation, "off")])
        on = statistics.median(found[(operation, "on")])
        target = verdict(on / off, at_most=1.10) if operation != "invoke" else ""
        print(f"{operation:<22}{off:>10.1f}{on:>10.1f}{on / off:>9.3f}x  {target}")


if __name__ == "__main__":
    main()
