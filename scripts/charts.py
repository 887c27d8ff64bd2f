"""The benchmarks page's charts: run the benchmarks with ``--json`` and keep what they
measured, then draw the charts (SVG, matplotlib) the site shows.

    python scripts/charts.py run [NAME ...]   # measure: benchmarks/results/NAME.json
    python scripts/charts.py                  # draw: docs/charts/NAME.svg

Measuring needs the peers' venvs (made on first use under ``$TOOLSETS_BENCH_PEERS``, see
``benchmarks/_common.py``) and minutes of a quiet machine; drawing reads the kept results
only, so the site's build never runs a benchmark. Each result keeps the machine, the date
and the command that made it, and each chart says them under its plot. Needs the ``docs``
extra (matplotlib).
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
CHARTS = ROOT / "docs" / "charts"
RUN_TIMEOUT = 3600.0
"""A bound on one benchmark's run, peers' installs included."""


@dataclass(frozen=True, kw_only=True)
class Bench:
    args: list[str]
    """The benchmark script and its options (``--json`` added)."""
    title: str


BENCHES = {
    "load": Bench(
        args=["benchmarks/openapi_load.py", "--repeats", "2"],
        title="Loading GitHub's spec (1,223 operations) and declaring every tool",
    ),
    "openapi_call": Bench(
        args=["benchmarks/openapi_call.py", "--calls", "300", "--repeats", "5"],
        title="A REST call: RestApiTool.run over raw httpx2",
    ),
    "mcp_call": Bench(
        args=["benchmarks/mcp_overhead.py", "--calls", "200", "--repeats", "5"],
        title="An MCP tool call: McpToolset over the raw mcp SDK",
    ),
    "serve": Bench(
        args=[
            "benchmarks/serve.py",
            "--starts",
            "3",
            "--calls",
            "100",
            "--http-calls",
            "100",
            "--auth-rounds",
            "5",
        ],
        title="GitHub's spec served over stdio: toolsets serve against fastmcp",
    ),
    "adapters": Bench(
        args=["benchmarks/adapters.py", "--calls", "5000", "--mcp-calls", "300"],
        title="A tool call through each framework: our adapter over the framework's own tool",
    ),
}


def machine() -> str:
    """This machine in a few words: OS, CPU model and count, Python."""
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (
        f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs ({model}), "
        f"Python {platform.python_version()}"
    )


def measure(name: str) -> dict[str, Any]:
    """Run one benchmark with ``--json``; what it measured, and how."""
    bench = BENCHES[name]
    command = ["python", *bench.args, "--json"]
    done = subprocess.run(
        [sys.executable, *bench.args, "--json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=RUN_TIMEOUT,
        check=False,
    )
    found = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not found:
        raise RuntimeError(f"{name} failed ({done.returncode}): {done.stderr[-2000:]}")
    printed = json.loads(found[-1])
    peers = os.environ.get("TOOLSETS_BENCH_PEERS")
    return {
        "name": name,
        "title": bench.title,
        "command": " ".join(command),
        "date": datetime.date.today().isoformat(),
        "machine": machine(),
        "peers": "TOOLSETS_BENCH_PEERS" if peers else ".bench-peers",
        "figures": printed["figures"],
        "notes": printed["notes"],
        "output": "\n".join(line for line in done.stdout.splitlines() if line not in found),
    }


# --- the charts --------------------------------------------------------------------------


def _figure(result: dict[str, Any], panels: int) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update(
        {"svg.fonttype": "none", "svg.hashsalt": "toolsets", "font.size": 10, "axes.grid": True}
    )
    rows = max(3, len(result["figures"]) // 3) if panels == 1 else 3
    height = 2.4 + 0.32 * rows
    figure, axes = plt.subplots(1, panels, figsize=(9, height), squeeze=False)
    figure.suptitle(result["title"], fontsize=11)
    said = f"{result['machine']}, {result['date']}\n$ {result['command']}"
    figure.text(0.01, 0.01, said, fontsize=7, family="monospace", va="bottom", color="#555")
    left, top = (0.34, 0.55) if panels == 1 else (0.17, 0.8)
    figure.subplots_adjust(left=left, right=0.95, bottom=1.1 / height, top=1 - top / height)
    figure.subplots_adjust(wspace=0.6)
    return figure, list(axes[0])


def _bars(axis: Any, labels: list[str], values: list[float], unit: str, ours: str) -> None:
    colours = ["#4051b5" if label.startswith(ours) else "#9e9e9e" for label in labels]
    bars = axis.barh(labels, values, color=colours)
    axis.invert_yaxis()
    axis.set_xlabel(unit)
    axis.grid(axis="y", visible=False)
    for bar, value in zip(bars, values, strict=True):
        shown = f"{value:.2f}" if value < 10 else f"{value:.1f}" if value < 100 else f"{value:,.0f}"
        axis.text(bar.get_width(), bar.get_y() + bar.get_height() / 2, f" {shown}", va="center")
    axis.set_xlim(0, max(values) * 1.25)


def _ratios(axis: Any, labels: list[str], values: list[float], target: float | None) -> None:
    _bars(axis, labels, values, "ours / baseline (1.00 = as fast)", "")
    axis.axvline(1.0, color="#333", linewidth=1)
    if target is not None:
        axis.axvline(target, color="#c62828", linewidth=1, linestyle="--")
        axis.text(target, -0.7, f" target ≤{target:.2f}x", color="#c62828", fontsize=8)
    axis.set_xlim(0, max([*values, target or 0]) * 1.25)


def chart_load(result: dict[str, Any]) -> Any:
    figures = result["figures"]
    names = [n for n in ("ours", "google-adk", "fastmcp") if f"{n} seconds" in figures]
    labels = ["toolsets" if n == "ours" else n for n in names]
    figure, (time_axis, memory_axis) = _figure(result, 2)
    _bars(time_axis, labels, [figures[f"{n} seconds"] for n in names], "seconds", "toolsets")
    time_axis.set_title("load + declarations (median)")
    _bars(memory_axis, labels, [figures[f"{n} peak MB"] for n in names], "MB", "toolsets")
    memory_axis.set_title("peak memory (RSS)")
    return figure


def chart_ratio_rows(result: dict[str, Any], rows: list[tuple[str, float]], target: float) -> Any:
    figure, (axis,) = _figure(result, 1)
    _ratios(axis, [label for label, _ in rows], [value for _, value in rows], target)
    return figure


def overhead_rows(figures: dict[str, float], *, throughput: bool) -> list[tuple[str, float]]:
    """``ours/raw`` of each operation (or transport): sequential latency, concurrent time
    per call (from a throughput ratio when ``throughput``), client CPU per call."""
    names = [
        k.removesuffix(" sequential ours/raw")
        for k in figures
        if k.endswith(" sequential ours/raw")
    ]
    rows = []
    for name in names:
        concurrent = figures[f"{name} concurrent ours/raw"]
        rows += [
            (f"{name}: one call after another", figures[f"{name} sequential ours/raw"]),
            (f"{name}: calls at once", 1 / concurrent if throughput else concurrent),
            (f"{name}: client CPU per call", figures[f"{name} client CPU ours/raw"]),
        ]
    return rows


def chart_openapi_call(result: dict[str, Any]) -> Any:
    return chart_ratio_rows(result, overhead_rows(result["figures"], throughput=False), 1.20)


def chart_mcp_call(result: dict[str, Any]) -> Any:
    return chart_ratio_rows(result, overhead_rows(result["figures"], throughput=True), 1.10)


def chart_serve(result: dict[str, Any]) -> Any:
    figures = result["figures"]
    names = [n for n in ("ours", "fastmcp", "sdk") if f"{n} ready s" in figures]
    labels = {"ours": "toolsets serve", "fastmcp": "fastmcp", "sdk": "SDK alone (floor)"}
    figure, (ready_axis, call_axis) = _figure(result, 2)
    _bars(
        ready_axis,
        [labels[n] for n in names],
        [figures[f"{n} ready s"] for n in names],
        "seconds",
        "toolsets",
    )
    ready_axis.set_title("start to the whole tools/list (median)")
    calls = [n for n in ("ours", "fastmcp", "direct") if f"{n} call ms" in figures]
    call_labels = {"ours": "toolsets serve", "fastmcp": "fastmcp", "direct": "direct (no server)"}
    _bars(
        call_axis,
        [call_labels[n] for n in calls],
        [figures[f"{n} call ms"] for n in calls],
        "ms",
        "toolsets",
    )
    call_axis.set_title("one served call (median)")
    return figure


def chart_adapters(result: dict[str, Any]) -> Any:
    figures = result["figures"]
    rows = [
        (key.removesuffix(" ours/native"), value)
        for key, value in figures.items()
        if key.endswith(" ours/native") and ("function tool" in key or "MCP tool" in key)
    ]
    return chart_ratio_rows(result, rows, 1.10)


DRAW: dict[str, Callable[[dict[str, Any]], Any]] = {
    "load": chart_load,
    "openapi_call": chart_openapi_call,
    "mcp_call": chart_mcp_call,
    "serve": chart_serve,
    "adapters": chart_adapters,
}


def draw() -> list[Path]:
    """Every chart whose result is kept; the paths written."""
    import matplotlib.pyplot as plt

    CHARTS.mkdir(parents=True, exist_ok=True)
    written = []
    for name, make in DRAW.items():
        kept = RESULTS / f"{name}.json"
        if not kept.exists():
            continue
        figure = make(json.loads(kept.read_text()))
        path = CHARTS / f"{name}.svg"
        figure.savefig(path, format="svg", metadata={"Date": None})
        plt.close(figure)
        written.append(path)
    return written


def main() -> int:
    args = sys.argv[1:]
    if args[:1] == ["run"]:
        RESULTS.mkdir(parents=True, exist_ok=True)
        for name in args[1:] or list(BENCHES):
            print(f"measuring {name}: python {' '.join(BENCHES[name].args)} --json", flush=True)
            result = measure(name)
            (RESULTS / f"{name}.json").write_text(json.dumps(result, indent=2) + "\n")
    for path in draw():
        print(path.relative_to(ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
