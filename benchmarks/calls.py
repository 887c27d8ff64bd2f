"""Calls in production (`toolsets.calls`): what the wrappers cost a call, and what a
retried call adds, side by side in one run.

1. A function tool called through the one call path (`invoke`) with: no wrapper;
   ``wrap_calls`` given none (the very tool comes back: nothing is added); one wrapper
   that only calls the next layer; `Retry` when nothing fails; `RateLimit` never
   waiting. CPU microseconds per call (medians of rounds, the sides taking turns) and,
   where ``perf`` or valgrind can count, user-space instructions per call (a process
   making many calls less one making few). ``--before REF`` measures the plain call with
   ``src/`` of git REF too: what the call path costs a tool with no wrapper, before and
   after (target, issue 29: at most 1 µs more).
2. A retried call against a real HTTP server on 127.0.0.1 (an OpenAPI tool's GET)
   answering 503 with ``Retry-After: 1`` once, then 200: its wall time less that of a
   call answered at once, against the 1 s the API asked to wait.

    python benchmarks/calls.py [--calls 20000] [--rounds 5] [--no-instructions]
                               [--before REF]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from _common import (
    add_before_option,
    app_in_thread,
    before_after,
    emit,
    instructions_per_call,
    rotated,
)

from toolsets import FunctionTool, ToolContext
from toolsets._invoke import invoke
from toolsets.openapi import OpenApiToolset

SIDES = ("plain", "wrap_calls()", "one wrapper", "Retry", "RateLimit")
RETRY_AFTER = 1
"""Seconds the server's 503 asks to wait."""
TARGET_US = 1.0
"""A tool with no wrapper pays at most this much more a call (issue 29)."""


async def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def tool_of(side: str) -> Any:
    """The tool called on ``side``."""
    base = FunctionTool(add)
    if side == "plain":
        return base
    from toolsets.calls import RateLimit, Retry, ToolCall, wrap_calls

    async def through(call: ToolCall, call_next: Any) -> Any:
        return await call_next(call)

    wrappers: dict[str, tuple[Any, ...]] = {
        "wrap_calls()": (),
        "one wrapper": (through,),
        "Retry": (Retry(),),
        "RateLimit": (RateLimit(rate=1e9),),
    }
    return wrap_calls(base, *wrappers[side])


def caller(side: str) -> Callable[[], Awaitable[object]]:
    tool = tool_of(side)

    async def call() -> object:
        return await invoke(tool, {"a": 1, "b": 2}, ToolContext(), default_timeout=5)

    return call


async def cpu_per_call(sides: list[str], calls: int, rounds: int) -> dict[str, float]:
    """Each side's median CPU microseconds per call."""
    found: dict[str, list[float]] = {side: [] for side in sides}
    made = {side: caller(side) for side in sides}
    for turn in range(rounds + 1):  # the first warms up
        for side in rotated(sides, turn):
            call = made[side]
            start = time.process_time()
            for _ in range(calls):
                await call()
            if turn:
                found[side].append((time.process_time() - start) / calls * 1e6)
    return {side: statistics.median(values) for side, values in found.items()}


def count_command(group: str, side: str, calls: int) -> list[str]:
    return [sys.executable, __file__, "--child", side, str(calls)]


async def child(side: str, calls: int) -> None:
    call = caller(side)
    for _ in range(calls):
        await call()


def retry_spec() -> dict[str, Any]:
    answer = {"200": {"description": "ok"}}
    return {
        "openapi": "3.1.0",
        "info": {"title": "busy", "version": "1"},
        "paths": {"/item": {"get": {"operationId": "getItem", "responses": answer}}},
    }


class Busy:
    """Answers 503 with Retry-After to every other request (the first of each pair)."""

    def __init__(self) -> None:
        self.count = 0

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        self.count += 1
        busy = self.count % 2 == 1
        status = 503 if busy else 200
        extra = [(b"retry-after", str(RETRY_AFTER).encode())] if busy else []
        body = b"{}"
        head = [(b"content-type", b"application/json"), (b"content-length", b"2"), *extra]
        await send({"type": "http.response.start", "status": status, "headers": head})
        await send({"type": "http.response.body", "body": body})


async def retried_latency(rounds: int) -> tuple[float, float]:
    """Median wall seconds of a retried call and of a call answered at once."""
    from toolsets.calls import Retry, wrap_calls

    app = Busy()
    with app_in_thread(app) as port:
        spec = retry_spec()
        toolset = wrap_calls(OpenApiToolset(spec, base_url=f"http://127.0.0.1:{port}"), Retry())
        async with toolset:
            (tool,) = await toolset.list_tools()
            retried: list[float] = []
            plain: list[float] = []
            for _ in range(rounds):
                app.count = 0  # the next request is answered 503
                start = time.perf_counter()
                await invoke(tool, {}, ToolContext(), default_timeout=30)
                retried.append(time.perf_counter() - start)
                app.count = 1  # the next is answered at once
                start = time.perf_counter()
                await invoke(tool, {}, ToolContext(), default_timeout=30)
                plain.append(time.perf_counter() - start)
    return statistics.median(retried), statistics.median(plain)


async def run(options: argparse.Namespace) -> None:
    if options.json:  # one side of --before: the plain call only
        cpu = await cpu_per_call(["plain"], options.calls, options.rounds)
        emit({"plain µs/call": cpu["plain"]})
        return
    cpu = await cpu_per_call(list(SIDES), options.calls, options.rounds)
    counted: Any = "not counted (--no-instructions)"
    if options.instructions:
        counted = await instructions_per_call(
            count_command, ["function tool"], list(SIDES), (1000, 1000 + options.calls // 4)
        )
    print(f"A function tool through invoke: CPU µs per call, medians of {options.rounds} rounds")
    counter, per_call = counted if isinstance(counted, tuple) else (counted, {})
    instructions = per_call.get("function tool", {})
    print(f"{'side':<16}{'µs/call':>10}{'+µs':>8}{'instructions':>14}{'+instr':>9}")
    for side in SIDES:
        extra = cpu[side] - cpu["plain"]
        count = instructions.get(side)
        more = "" if count is None else f"{count - instructions['plain']:>9.0f}"
        shown = "" if count is None else f"{count:>14.0f}"
        print(f"{side:<16}{cpu[side]:>10.2f}{extra:>8.2f}{shown}{more}")
    print(f"  instructions: {counter}")
    print(
        "  wrap_calls() with no wrapper gives the tool itself back and the call path is "
        "unchanged for unwrapped tools; --before REF measures that against a commit"
    )
    retried, plain = await retried_latency(options.latency_rounds)
    added = retried - plain
    print(
        f"A retried call (503, Retry-After: {RETRY_AFTER}): {retried * 1e3:.1f} ms, one answered "
        f"at once {plain * 1e3:.1f} ms: {added * 1e3:.1f} ms added for a {RETRY_AFTER * 1e3:.0f} "
        f"ms wait asked ({added / RETRY_AFTER:.3f}x)"
    )


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        anyio.run(child, sys.argv[2], int(sys.argv[3]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--latency-rounds", type=int, default=3)
    parser.add_argument("--no-instructions", dest="instructions", action="store_false")
    add_before_option(parser)
    parser.set_defaults(rounds=5)
    options = parser.parse_args()
    if options.before:
        title = f"A plain call through invoke, before and after ({options.calls} calls a round)"
        before_after(__file__, options, ["calls"], title)
        print(f"  target (issue 29): after at most {TARGET_US:g} µs above before")
        return
    anyio.run(run, options)


if __name__ == "__main__":
    main()
