"""What a shared service's per-call work costs, side by side in one run: the same tools
served in process (the `mcp` SDK's client on 2026-07-28) plain, and under an access
policy (`restricted`) with an audit record per call (a handler listening at INFO); and a
tool that needs a credential given by the server's mapping, then by each user's own
(`UserCredentials`). The sides take turns round by round (the machine is shared and
noisy); the table gives each side's median per operation and the ratio to its baseline.

    python benchmarks/access.py [--tools 1000] [--calls 500] [--rounds 5]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from mcp import Client

from toolsets import (
    AccessPolicy,
    AccessRule,
    AuthConfig,
    FunctionTool,
    Identity,
    Invocation,
    StaticToolset,
    ToolContext,
    restricted,
    tool,
)
from toolsets.mcp import AUDIT_LOGGER, McpServer, UserCredentials

KEY = AuthConfig(scheme_name="key", scheme={"type": "apiKey", "in": "header", "name": "X-Key"})
CALLER = Identity(
    subject="alice",
    issuer="https://id.example",
    client_id="agent",
    scopes=frozenset({"read"}),
    claims={"roles": ["viewer"]},
)


def catalogue(size: int) -> list[FunctionTool[Any, Any]]:
    def make(index: int) -> FunctionTool[Any, Any]:
        def op(value: int) -> int:
            return value + index

        op.__doc__ = f"Operation {index}."
        return tool(name=f"op_{index}", read_only=True)(op)

    return [make(index) for index in range(size)]


@tool(auth_config=KEY, read_only=True)
def keyed(ctx: ToolContext) -> int:
    """Needs a key."""
    assert ctx.auth_credential is not None
    return len(ctx.auth_credential.secret)


POLICY = AccessPolicy(
    [
        AccessRule(tools=["op_1*"], scopes=["read"]),
        AccessRule(tools=["op_2*"], roles=["viewer", "admin"]),
        AccessRule(tools=["op_9*"], scopes=["write"]),
    ]
)


class Listed(StaticToolset):
    """Lists the very same tuple each time, as an OpenAPI toolset does (a `StaticToolset`
    makes a new one, which a served call indexes anew)."""

    def __init__(self, tools: list[Any]) -> None:
        super().__init__(tools)
        self._listed = tuple(self._tools.values())

    async def list_tools(self, ctx: ToolContext | None = None) -> tuple[Any, ...]:
        return self._listed


def servers(size: int) -> dict[str, McpServer]:
    # keyed first, and every tool on one page: the SDK's client lists the tools again
    # for a tool it did not see listed (to check its structured result).
    tools = [keyed, *catalogue(size)]
    page = size + 1
    invocation = Invocation(identity=CALLER, scopes=CALLER.scopes)
    return {
        "plain": McpServer(Listed(tools), credentials={"key": "k" * 20}, page_size=page),
        "restricted + audit": McpServer(
            restricted(Listed(tools), POLICY),
            credentials={"key": "k" * 20},
            invocation=invocation,
            page_size=page,
        ),
        "each user's own credential": McpServer(
            Listed(tools),
            credentials=UserCredentials.from_mapping({"alice": {"key": "k" * 20}}),
            invocation=invocation,
            page_size=page,
        ),
    }


async def per_operation(run: Callable[[], Awaitable[Any]], count: int) -> float:
    started = time.perf_counter()
    for _ in range(count):
        await run()
    return (time.perf_counter() - started) / count * 1e6


async def measure(options: argparse.Namespace) -> dict[tuple[str, str], list[float]]:
    made = servers(options.tools)
    found: dict[tuple[str, str], list[float]] = {}
    async with (
        Client(made["plain"].server, mode="2026-07-28") as plain,
        Client(made["restricted + audit"].server, mode="2026-07-28") as guarded,
        Client(made["each user's own credential"].server, mode="2026-07-28") as own,
    ):
        sides: dict[tuple[str, str], tuple[Callable[[], Awaitable[Any]], int]] = {
            ("tools/list", "plain"): (plain.list_tools, options.lists),
            ("tools/list", "restricted + audit"): (guarded.list_tools, options.lists),
            ("tools/call", "plain"): (lambda: plain.call_tool("op_1", {"value": 1}), options.calls),
            ("tools/call", "restricted + audit"): (
                lambda: guarded.call_tool("op_1", {"value": 1}),
                options.calls,
            ),
            ("call with a credential", "plain"): (
                lambda: plain.call_tool("keyed", {}),
                options.calls,
            ),
            ("call with a credential", "each user's own credential"): (
                lambda: own.call_tool("keyed", {}),
                options.calls,
            ),
        }
        for run, count in sides.values():  # warm-up: first listings made, caches filled
            await per_operation(run, max(1, count // 10))
        for turn in range(options.rounds):
            order = list(sides)
            order = order[turn % len(order) :] + order[: turn % len(order)]
            for key in order:
                run, count = sides[key]
                found.setdefault(key, []).append(await per_operation(run, count))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", type=int, default=1000)
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--lists", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args()
    audit = logging.getLogger(AUDIT_LOGGER)
    audit.addHandler(logging.NullHandler())  # someone listens: every record is made
    audit.setLevel(logging.INFO)
    audit.propagate = False
    found = anyio.run(measure, options)
    print(f"In process, 2026-07-28, {options.tools} tools; medians of {options.rounds} rounds")
    print(f"{'operation':<24}{'side':<30}{'µs/op':>10}{'vs plain':>10}")
    for operation in dict.fromkeys(op for op, _ in found):
        baseline = statistics.median(found[(operation, "plain")])
        for (op, side), figures in found.items():
            if op == operation:
                median = statistics.median(figures)
                print(f"{op:<24}{side:<30}{median:>10.1f}{median / baseline:>9.2f}x")


if __name__ == "__main__":
    main()
