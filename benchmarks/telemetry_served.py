"""What telemetry costs a served call, counted in instructions: steady where CPU time
follows whatever else the shared machine runs.

GitHub's spec served by ``toolsets serve --http`` in a process of its own (as
benchmarks/serve_load.py serves it, its upstream the same local REST server), twice:
telemetry off, and on recording to memory (``peers/in_memory_telemetry.py``: every span
through the OpenTelemetry SDK's synchronous processor to an exporter that counts and
drops it, every duration to the in-memory metric reader). Each server runs under
valgrind's callgrind, started uninstrumented and counted over a window of load only
(`RunningCount`): C clients of serve_load's generator calling ``repos/get`` (2026-07-28)
for S seconds after their warm-up. The figure is the server's instructions over the
window per call completed (every thread of the server; nothing of the generator or the
upstream). Counted, the server runs some 50 times slower than it does: the calls of a
window are few, the figure per call is not. (At C = 256, counted calls wait longer than
the generator's timeout: serve_load.py measures that C in CPU time.)

Target (issue 28): telemetry on costs at most 1.10 times a served call's instructions
off, at each C.

    python benchmarks/telemetry_served.py [--concurrency 1,64] [--seconds 20]
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

import anyio
from _common import emit, free_port, running_count, server_process, started_server, verdict
from serve import github_spec
from serve_load import IN_MEMORY, MODERN, SERVE, START_TIMEOUT, TELEMETRY_TARGET, tool_name, window

SECONDS = 20.0
"""Seconds of each window (counted, a served call takes some 50 times its time)."""


async def count_side(
    recorded: bool, base_url: str, concurrency: list[int], seconds: float
) -> dict[int, dict[str, Any]]:
    """A server (telemetry on recording to memory, or off) counted over a window at each C:
    the window's figures by C."""
    with running_count(instrumented=False) as count:
        if isinstance(count, str):
            raise RuntimeError(count)
        port = free_port()
        cli = [str(IN_MEMORY)] if recorded else ["-m", "toolsets.cli"]
        command = [*count.prefix, sys.executable, *cli, "serve", str(github_spec())]
        command += ["--base-url", base_url, "--http", f"127.0.0.1:{port}"]
        env = {**os.environ, "PYTHONPATH": str(IN_MEMORY.parents[2] / "src")}
        found: dict[int, dict[str, Any]] = {}
        async with started_server(command, port=port, env=env, start_timeout=START_TIMEOUT) as (
            _,
            pid,
        ):
            tool = await tool_name(port)
            for clients in concurrency:
                side = "on" if recorded else "off"
                print(f"telemetry {side}: C={clients}, counted", file=sys.stderr, flush=True)
                found[clients] = await window(port, pid, MODERN, tool, clients, seconds, count)
        return found


async def run(options: argparse.Namespace) -> int:
    concurrency = [int(c) for c in options.concurrency.split(",")]
    rest_port = free_port()
    rest = [sys.executable, str(SERVE), "--rest", str(github_spec()), str(rest_port)]
    async with server_process(rest, port=rest_port):
        base_url = f"http://127.0.0.1:{rest_port}"
        sides: dict[str, dict[int, dict[str, Any]]] = {}
        async with anyio.create_task_group() as tasks:  # one counted server on each CPU

            async def side(name: str, recorded: bool) -> None:
                sides[name] = await count_side(recorded, base_url, concurrency, options.seconds)

            tasks.start_soon(side, "off", False)
            tasks.start_soon(side, "on", True)
    print(
        "Telemetry on (recorded to memory) against off, a served call's instructions "
        f"(toolsets serve --http, GitHub's spec, repos/get, 2026-07-28; windows of "
        f"{options.seconds:g} s under callgrind)"
    )
    print(f"{'C':>4} {'calls off':>10} {'calls on':>9} {'off /call':>11} {'on /call':>11}  on/off")
    figures: dict[str, float] = {}
    met = True
    for clients in concurrency:
        off, on = sides["off"][clients], sides["on"][clients]
        if not off["calls"] or not on["calls"] or off["errors"] or on["errors"]:
            print(f"{clients:>4}  no figure: {off['first_error'] or on['first_error']}")
            met = False
            continue
        per_off = off["instructions"] / off["calls"]
        per_on = on["instructions"] / on["calls"]
        ratio = per_on / per_off
        met = met and ratio <= TELEMETRY_TARGET
        figures[f"C={clients} on/off"] = ratio
        print(
            f"{clients:>4} {off['calls']:>10} {on['calls']:>9} {per_off / 1e3:>10,.0f}k "
            f"{per_on / 1e3:>10,.0f}k  {ratio:.3f}x  {verdict(ratio, at_most=TELEMETRY_TARGET)}"
        )
    if options.json:
        emit(figures)
    return 0 if met or not options.check else 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--concurrency", default="1,64", help="values of C")
    parser.add_argument("--seconds", type=float, default=SECONDS, help="seconds per window")
    parser.add_argument("--check", action="store_true", help="exit 1 if the target is missed")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON too")
    sys.exit(anyio.run(run, parser.parse_args()))


if __name__ == "__main__":
    main()
