"""What each framework adapter adds to a tool call over the framework's own function tool,
and pydantic-ai running our `McpToolset` against pydantic-ai's own MCP client.

Run: python benchmarks/adapters.py [--calls N] [--warmup W] [--mcp-calls M]
                                    [--only NAME ...] [--check] [--json]

One file per framework, ``benchmarks/_adapter_<framework>.py``, gives ``pair(stack)``:
two calls of the same no-op function ``noop(x: int) -> int``, each through the entry point
the framework's own agent loop calls a tool by, ``native`` with the framework's own function
tool and ``ours`` with our adapter over a toolsets `FunctionTool`. Where the framework's
tool can be bounded by a timeout, as every toolsets call is (60 s by default),
``bounded_pair(stack)`` measures the native tool with one too ("function tool, timeout"):
the like-for-like row. Rows held to no target explain others: ``waiting_pair`` (an async
function that waits once, ``await anyio.lowlevel.checkpoint()``: ours then opens the call's
cancel scope, which a function that never waits does not need) and ``thread_pair`` (the
bare hop to a worker thread each side's sync function tool takes: anyio's, with its
checkpoints and capacity limiter, against the framework's ``asyncio.to_thread``).
pydantic-ai's file gives ``mcp_pair(stack)`` too: one call of the
fixture MCP server's tool through pydantic-ai's own MCP client, and through our adapter
over `McpToolset`, the same server command on both.

Each pair is measured in this one process, the sides taking turns call by call (in a
rotating order) so that other work on a busy machine hits them alike:
  median µs      the median latency of one call, N calls per side after W warm-up calls;
  CPU µs         this process's CPU time per call (mean);
  ours/native    the median of the ratios of neighbouring calls (the i-th of ours over the
                 i-th of native, taken one right after the other): on a shared machine,
                 latencies jump between a fast and a slow mode, and neighbours share theirs.
Targets: ≤ 1.10x native for function tools, ≤ 1.00x pydantic-ai's own MCP client.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import anyio
from _common import Call, emit, sequential, tail, verdict

HERE = Path(__file__).resolve().parent
FRAMEWORKS = ["pydantic_ai", "langchain", "openai_agents", "adk", "smolagents"]
FUNCTION_TARGET = 1.10
MCP_TARGET = 1.00

Pair = Callable[[contextlib.AsyncExitStack], Awaitable[tuple[Call, Call]]]


@dataclass(frozen=True)
class Row:
    name: str
    native: list[float]
    ours: list[float]
    cpu: dict[str, float]
    target: float | None
    """None: a row that explains another, held to no target."""

    @property
    def ratio(self) -> float:
        return statistics.median(o / n for n, o in zip(self.native, self.ours, strict=True))

    def line(self) -> str:
        native, ours = statistics.median(self.native) * 1e6, statistics.median(self.ours) * 1e6
        cpu_native, cpu_ours = self.cpu["native"] * 1e6, self.cpu["ours"] * 1e6
        return (
            f"{self.name:<38}{native:>10.1f}{ours:>10.1f}{cpu_native:>10.1f}{cpu_ours:>10.1f}"
            f"{self.ratio:>9.2f}x  "
            + ("(explains)" if self.target is None else verdict(self.ratio, at_most=self.target))
        )


async def measure(name: str, pair: Pair, count: int, warmup: int, target: float | None) -> Row:
    async with contextlib.AsyncExitStack() as stack:
        native, ours = await pair(stack)
        latency, cpu = await sequential({"native": native, "ours": ours}, count, warmup, 1)
    return Row(name, latency["native"], latency["ours"], cpu, target)


async def run(options: argparse.Namespace) -> tuple[list[Row], list[str]]:
    rows: list[Row] = []
    problems: list[str] = []
    for framework in options.only or FRAMEWORKS:
        try:
            module = importlib.import_module(f"_adapter_{framework}")
        except ImportError as exc:
            problems.append(f"{framework}: not measured ({tail(str(exc))})")
            continue
        cases: list[tuple[str, Pair, int, float | None]] = [
            (f"{framework} function tool", module.pair, options.calls, FUNCTION_TARGET)
        ]
        if hasattr(module, "bounded_pair"):
            name = f"{framework} function tool, timeout"
            cases.append((name, module.bounded_pair, options.calls, FUNCTION_TARGET))
        if hasattr(module, "waiting_pair"):
            name = f"{framework} tool that waits once"
            cases.append((name, module.waiting_pair, options.calls, None))
        if hasattr(module, "thread_pair"):
            name = f"{framework}: thread hop alone"
            cases.append((name, module.thread_pair, options.calls, None))
        if hasattr(module, "mcp_pair"):
            cases.append((f"{framework} MCP tool", module.mcp_pair, options.mcp_calls, MCP_TARGET))
        for name, pair, count, target in cases:
            rows.append(await measure(name, pair, count, options.warmup, target))
    return rows, problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000, help="function-tool calls per side")
    parser.add_argument("--mcp-calls", type=int, default=300, help="MCP-tool calls per side")
    parser.add_argument("--warmup", type=int, default=100, help="warm-up calls per side")
    parser.add_argument("--only", nargs="*", choices=FRAMEWORKS, help="measure these only")
    parser.add_argument("--check", action="store_true", help="exit 1 if a target is missed")
    parser.add_argument(
        "--json", action="store_true", help="end with the figures as one line of JSON"
    )
    options = parser.parse_args()
    started = time.perf_counter()
    rows, problems = anyio.run(run, options)
    print(
        f"Adapters: one tool call through the framework's own tool vs our adapter "
        f"({options.calls} function-tool / {options.mcp_calls} MCP-tool calls per side, "
        f"after {options.warmup} warm-up, sides taking turns)"
    )
    print(
        f"{'':<38}{'native µs':>10}{'ours µs':>10}{'CPU nat':>10}{'CPU ours':>10}"
        f"{'ours/nat':>10}  target"
    )
    for row in rows:
        print(row.line())
    for problem in problems:
        print(problem)
    print(f"whole run {time.perf_counter() - started:.0f} s")
    if options.json:
        figures = {}
        for row in rows:
            figures[f"{row.name} native µs"] = statistics.median(row.native) * 1e6
            figures[f"{row.name} ours µs"] = statistics.median(row.ours) * 1e6
            figures[f"{row.name} ours/native"] = row.ratio
        emit(figures, problems)
    missed = problems or any(row.target is not None and row.ratio > row.target for row in rows)
    if options.check and missed:
        sys.exit(1)


if __name__ == "__main__":
    main()
