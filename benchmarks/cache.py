"""HTTP caching of OpenAPI tools (`HttpCache`): what a call costs with no cache, with a
cache that keeps nothing (the API says ``no-store``: every call pays the bookkeeping and
the request), with a stale response checked by the API (``If-None-Match``, answered
304), and with a fresh one answered from the cache (no request), side by side in one run.

An OpenAPI tool's GET through the one call path (`invoke`), against a real HTTP server on
127.0.0.1 (in a thread of this process, so its CPU is counted too): wall and CPU
microseconds per call, medians of rounds, the sides taking turns.

    python benchmarks/cache.py [--calls 300] [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import anyio
from _common import app_in_thread, rotated

from toolsets import ToolContext
from toolsets._invoke import invoke
from toolsets.openapi import HttpCache, OpenApiToolset

SIDES = ("no cache", "cache, no-store", "cache, 304", "cache, hit")
PATHS = {"no cache": "/fresh", "cache, no-store": "/nostore", "cache, 304": "/etag"}
ITEMS = b",".join(b'{"id": %d, "name": "item %d"}' % (i, i) for i in range(40))
BODY = b'{"items": [' + ITEMS + b"]}"
"""About 1.2 KB of JSON."""


async def api(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    path = scope["path"]
    conditional = any(k == b"if-none-match" for k, _ in scope["headers"])
    head = [(b"content-type", b"application/json"), (b"etag", b'"v1"')]
    if path == "/nostore":
        head.append((b"cache-control", b"no-store"))
    elif path == "/etag":
        head.append((b"cache-control", b"max-age=0"))
    else:
        head.append((b"cache-control", b"max-age=3600"))
    if path == "/etag" and conditional:
        await send({"type": "http.response.start", "status": 304, "headers": head})
        await send({"type": "http.response.body", "body": b""})
        return
    head.append((b"content-length", b"%d" % len(BODY)))
    await send({"type": "http.response.start", "status": 200, "headers": head})
    await send({"type": "http.response.body", "body": BODY})


def spec() -> dict[str, Any]:
    answer = {"200": {"description": "ok"}}
    paths = ("/fresh", "/nostore", "/etag")
    return {
        "openapi": "3.1.0",
        "info": {"title": "cached", "version": "1"},
        "paths": {p: {"get": {"operationId": p[1:], "responses": answer}} for p in paths},
    }


async def measure(base_url: str, calls: int, rounds: int) -> dict[str, tuple[float, float]]:
    """Each side's median (wall µs, CPU µs) per call."""
    plain = OpenApiToolset(spec(), base_url=base_url)
    cached = OpenApiToolset(spec(), base_url=base_url, cache=HttpCache())
    tools: dict[str, Any] = {}
    async with plain, cached:
        by_name = {t.name: t for t in await plain.list_tools()}
        cached_by_name = {t.name: t for t in await cached.list_tools()}
        for side in SIDES:
            name = PATHS.get(side, "/fresh")[1:]
            tools[side] = by_name[name] if side == "no cache" else cached_by_name[name]
        wall: dict[str, list[float]] = {side: [] for side in SIDES}
        cpu: dict[str, list[float]] = {side: [] for side in SIDES}
        for turn in range(rounds + 1):  # the first warms up (and fills the cache)
            for side in rotated(list(SIDES), turn):
                tool = tools[side]
                start, start_cpu = time.perf_counter(), time.process_time()
                for _ in range(calls):
                    await invoke(tool, {}, ToolContext(), default_timeout=10)
                if turn:
                    wall[side].append((time.perf_counter() - start) / calls * 1e6)
                    cpu[side].append((time.process_time() - start_cpu) / calls * 1e6)
    return {side: (statistics.median(wall[side]), statistics.median(cpu[side])) for side in SIDES}


async def run(options: argparse.Namespace) -> None:
    with app_in_thread(api) as port:
        found = await measure(f"http://127.0.0.1:{port}", options.calls, options.rounds)
    base_wall, base_cpu = found["no cache"]
    print(
        f"An OpenAPI tool's GET ({len(BODY)} B of JSON) through invoke, server on 127.0.0.1: "
        f"µs per call, medians of {options.rounds} rounds of {options.calls}"
    )
    print(f"{'side':<18}{'wall µs':>10}{'x':>7}{'CPU µs':>10}{'x':>7}")
    for side in SIDES:
        wall, cpu = found[side]
        print(f"{side:<18}{wall:>10.0f}{wall / base_wall:>7.2f}{cpu:>10.0f}{cpu / base_cpu:>7.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    anyio.run(run, parser.parse_args())


if __name__ == "__main__":
    main()
