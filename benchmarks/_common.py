"""What the benchmarks share: peers' venvs, servers in processes of their own, turn-taking
measurements, instruction counts, verdicts, and measuring ``src/`` before and after a change.

Peers are installed pinned, each set of requirements in a venv of its own made on first
use under ``$TOOLSETS_BENCH_PEERS`` (default ``.bench-peers/`` in the repository, which git
ignores).

Instructions are counted by ``perf stat -e instructions:u`` where the machine's counters
allow it, else by valgrind's callgrind (about 50 times slower); every table says which
counted. Counts of the same code agree within about 2% from run to run (ids and clocks
still differ), where times on a shared machine differ by a third.

``--before REF`` (`add_before_option`) measures our side twice in one run: in processes
importing ``src/`` of the working tree ("after") and ``src/`` of the git commit REF
("before"), taking turns round by round; the table gives both medians and after/before.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import math
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.abc

REPO = Path(__file__).resolve().parent.parent
PEERS_DIR = Path(os.environ.get("TOOLSETS_BENCH_PEERS") or REPO / ".bench-peers")
"""Where the peers' venvs and npm packages are installed (git ignores the default)."""
INSTALL_TIMEOUT = 900.0
SERVER_START_TIMEOUT = 20.0
SERVER_STOP_TIMEOUT = 5.0
COUNT_TIMEOUT = 900.0
"""A bound on one counted process (callgrind runs a process about 50 times slower)."""
CONTROL_TIMEOUT = 120.0
"""A bound on one command to a process counted while it runs (`RunningCount`)."""
ROUND_TIMEOUT = 3600.0
"""A bound on one process of a before/after round."""

Call = Callable[[], Awaitable[object]]
Figures = dict[str, float]
"""Named figures of one run, as a ``--json`` run prints them."""


def tail(text: str) -> str:
    """The last non-empty line of a process's output, cut to 200 characters."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:200] if lines else "no output"


# --- peers -----------------------------------------------------------------------------------


def _run(command: Sequence[str], what: str) -> None:
    """Run a set-up command; raises RuntimeError with what it said if it fails."""
    try:
        subprocess.run(command, check=True, capture_output=True, text=True, timeout=INSTALL_TIMEOUT)
    except subprocess.CalledProcessError as exc:
        raise RuntimeError(f"{what} failed: {tail(exc.stderr)}") from exc
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise RuntimeError(f"{what} failed: {type(exc).__name__}: {exc}") from exc


def peer_python(*requirements: str) -> Path:
    """The interpreter of a venv holding ``requirements`` (each ``name==version``), made
    with pip on first use; raises RuntimeError saying why not."""
    unpinned = [r for r in requirements if "==" not in r]
    if unpinned:
        raise ValueError(f"peers must be pinned (name==version): {unpinned}")
    venv = PEERS_DIR / "+".join(r.replace("==", "-") for r in requirements)
    python = venv / "bin" / "python"
    done = venv / ".installed"  # written last: an interrupted install is made again
    if done.exists():
        return python
    print(f"installing {' '.join(requirements)} in {venv} ...", file=sys.stderr, flush=True)
    _run([sys.executable, "-m", "venv", "--clear", str(venv)], "venv")
    pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    _run([*pip, *requirements], "pip install")
    done.touch()
    return python


def npm_package(spec: str, name: str) -> Path:
    """The folder of npm package ``name``, installed as ``spec`` (``name@version``) on first
    use; raises RuntimeError saying why not."""
    prefix = PEERS_DIR / spec.replace("@", "-")
    folder = prefix / "node_modules" / name
    if not (folder / "package.json").is_file():
        print(f"installing {spec} in {prefix} ...", file=sys.stderr, flush=True)
        options = ["--no-audit", "--no-fund", "--ignore-scripts"]
        _run(["npm", "install", "--prefix", str(prefix), *options, spec], "npm install")
    return folder


# --- servers ---------------------------------------------------------------------------------


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def stop(process: anyio.abc.Process) -> None:
    """End a process we started: SIGTERM, then SIGKILL if it lingers."""
    with anyio.CancelScope(shield=True):
        if process.returncode is None:
            process.terminate()
            with anyio.move_on_after(SERVER_STOP_TIMEOUT):
                await process.wait()
        if process.returncode is None:
            process.kill()
            await process.wait()
        await process.aclose()


@contextlib.asynccontextmanager
async def server_process(command: Sequence[str], *, port: int | None = None) -> AsyncIterator[int]:
    """A server in a process of its own, ready to serve; yields its port on 127.0.0.1.

    With ``port``, the server is ready once the port takes a connection; without, the
    server chooses its port and prints it as its first line. Raises RuntimeError with the
    end of the server's stderr if it exits first.
    """
    async with started_server(command, port=port, env=None) as (port, _):
        yield port


@contextlib.asynccontextmanager
async def started_server(
    command: Sequence[str],
    *,
    port: int | None,
    env: dict[str, str] | None,
    start_timeout: float = SERVER_START_TIMEOUT,
) -> AsyncIterator[tuple[int, int]]:
    """As `server_process` (with the environment ``env``, None: this one's; ready within
    ``start_timeout`` seconds), yielding the port and the process id (to read the
    server's own CPU time, `cpu_seconds`)."""
    with tempfile.TemporaryFile() as errors:

        def exited() -> RuntimeError:
            errors.seek(0)
            text = errors.read().decode(errors="replace").strip()[-500:]
            return RuntimeError(f"the server exited: {text}")

        process = await anyio.open_process(
            command,
            stdout=subprocess.PIPE if port is None else subprocess.DEVNULL,
            stderr=errors,
            env=env,
        )
        try:
            with anyio.fail_after(start_timeout):
                if port is None:
                    assert process.stdout is not None
                    line = b""
                    while not line.endswith(b"\n"):
                        try:
                            line += await process.stdout.receive()
                        except anyio.EndOfStream:
                            await process.wait()
                            raise exited() from None
                    port = int(line)
                else:
                    while True:
                        if process.returncode is not None:
                            raise exited()
                        try:
                            stream = await anyio.connect_tcp("127.0.0.1", port)
                        except OSError:
                            await anyio.sleep(0.05)  # nothing to wait on but the port
                        else:
                            await stream.aclose()
                            break
            yield port, process.pid
        finally:
            await stop(process)


def cpu_seconds(pid: int) -> float:
    """The CPU time (user and system) the process ``pid`` has used so far, in seconds
    (Linux's ``/proc``; counted in clock ticks, 10 ms: measure many calls)."""
    stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii")
    fields = stat.rpartition(")")[2].split()  # after the command's name, which may hold spaces
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def app_in_thread(app: Any, *, factory: bool = False) -> Iterator[int]:
    """An ASGI ``app`` served by uvicorn on 127.0.0.1 in a thread of this process (its
    own event loop): its port. ``factory``: ``app`` makes the app, in that thread (an app
    whose locks belong to the loop serving it), its lifespan run."""
    import threading

    import uvicorn

    # proto named, so that asyncio sends small writes at once (TCP_NODELAY): with proto
    # 0 an answer's body waited for the client's delayed acknowledgement of its head.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    config = uvicorn.Config(
        app,
        factory=factory,
        lifespan="on" if factory else "off",
        ws="none",
        http="h11",
        log_level="warning",
        access_log=False,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        yield int(sock.getsockname()[1])
    finally:
        server.should_exit = True
        thread.join(timeout=SERVER_STOP_TIMEOUT * 2)
        sock.close()


# --- turn-taking measurements ----------------------------------------------------------------


def rotated(names: list[str], turn: int) -> list[str]:
    turn %= len(names)
    return names[turn:] + names[:turn]


async def sequential(
    calls: dict[str, Call], count: int, warmup: int, block: int
) -> tuple[dict[str, list[float]], dict[str, float]]:
    """Each call's latency, and this process's CPU time per call, the sides taking turns
    block by block."""
    names = list(calls)
    for name in names:
        for _ in range(warmup):
            await calls[name]()
    latency: dict[str, list[float]] = {name: [] for name in names}
    cpu = dict.fromkeys(names, 0.0)
    for turn in range(math.ceil(count / block)):
        size = min(block, count - turn * block)
        for name in rotated(names, turn):
            call, out = calls[name], latency[name]
            cpu_start = time.process_time()
            for _ in range(size):
                start = time.perf_counter()
                await call()
                out.append(time.perf_counter() - start)
            cpu[name] += time.process_time() - cpu_start
    return latency, {name: cpu[name] / count for name in names}


async def burst(call: Call, concurrency: int) -> float:
    """Calls per second with ``concurrency`` calls in flight at once."""

    async def one() -> None:  # any awaitable, not only a coroutine, may be measured
        await call()

    start = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(concurrency):
            tg.start_soon(one)
    return concurrency / (time.perf_counter() - start)


async def concurrent(
    calls: dict[str, Call],
    concurrency: int,
    repeats: int,
    cpu: dict[str, list[float]] | None = None,
) -> dict[str, list[float]]:
    """The throughput of each burst, the sides taking turns burst by burst; with ``cpu``,
    this process's CPU time per call in each burst is added to it, by side (far steadier
    than throughput when other processes compete for the CPUs)."""
    names = list(calls)
    for name in names:
        await burst(calls[name], concurrency)
    throughput: dict[str, list[float]] = {name: [] for name in names}
    for turn in range(repeats):
        for name in rotated(names, turn):
            started = time.process_time()
            throughput[name].append(await burst(calls[name], concurrency))
            if cpu is not None:
                cpu.setdefault(name, []).append((time.process_time() - started) / concurrency)
    return throughput


# --- instruction counts ----------------------------------------------------------------------


@dataclass(frozen=True)
class InstructionCounter:
    """A way to count the user-space instructions of one process."""

    name: str
    """What counts, as the tables print it."""
    prefix: tuple[str, ...]
    """The command that runs the counted one."""
    log_option: str | None = None
    """The option that sends the count to a file, if it does not go to stderr."""

    async def count(self, command: Sequence[str]) -> int:
        """The user-space instructions ``command`` ran; raises RuntimeError if it failed.

        The process gets ``PYTHONHASHSEED=0``: the same run, the same count.
        """
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        with tempfile.TemporaryDirectory(prefix="bench-count-") as tmp:
            log = Path(tmp) / "count.log"
            prefix = list(self.prefix)
            if self.log_option is not None:
                prefix.append(f"{self.log_option}{log}")
            try:
                with anyio.fail_after(COUNT_TIMEOUT):
                    done = await anyio.run_process([*prefix, "--", *command], check=False, env=env)
            except TimeoutError:
                raise RuntimeError(f"{self.name} timed out after {COUNT_TIMEOUT:g} s") from None
            report = done.stderr.decode(errors="replace")
            if log.exists():
                report = log.read_text(errors="replace")
        if done.returncode != 0:
            raise RuntimeError(f"{self.name} failed: {tail(done.stderr.decode(errors='replace'))}")
        return _parse_count(report, self.name)

    async def count_all(self, commands: Sequence[Sequence[str]]) -> list[int]:
        """Each command's count, as many at a time as there are CPUs (a count does not
        depend on what else runs); raises the first failure's RuntimeError."""
        limit = anyio.CapacityLimiter(os.cpu_count() or 1)
        counts = [0] * len(commands)
        failures: list[RuntimeError] = []

        async def one(index: int) -> None:
            async with limit:
                try:
                    counts[index] = await self.count(commands[index])
                except RuntimeError as exc:
                    failures.append(exc)
                    tg.cancel_scope.cancel()

        async with anyio.create_task_group() as tg:
            for index in range(len(commands)):
                tg.start_soon(one, index)
        if failures:
            raise failures[0]
        return counts


def _parse_count(report: str, name: str) -> int:
    for line in report.splitlines():
        if "Collected :" in line:  # callgrind: "==123== Collected : 1418375833"
            value = line.rsplit(":", 1)[1].strip()
        elif "instructions" in line:  # perf stat -x,: "1418375833,,instructions:u,..."
            value = line.split(",")[0]
        else:
            continue
        if value.isdigit():
            return int(value)
        raise RuntimeError(f"{name} gave no count: {line.strip()[:200]}")
    raise RuntimeError(f"{name} gave no count: {tail(report)}")


PerCall = tuple[str, dict[str, dict[str, float]]] | str
"""The counter and instructions per call by group (transport, operation) and side; or why
they could not be counted."""


async def instructions_per_call(
    command: Callable[[str, str, int], list[str]],
    groups: Sequence[str],
    sides: Sequence[str],
    calls: tuple[int, int],
) -> PerCall:
    """Each side's instructions per call in each group: a process making ``calls[1]`` calls
    (``command(group, side, calls)``) less one making ``calls[0]``, over the difference, so
    that start-up cancels out."""
    counter = instruction_counter()
    if isinstance(counter, str):
        return counter
    runs = [(group, side, n) for group in groups for side in sides for n in calls]
    try:
        counts = await counter.count_all([command(*run) for run in runs])
    except RuntimeError as exc:
        return str(exc)
    totals = dict(zip(runs, counts, strict=True))
    low, high = calls
    per_call: dict[str, dict[str, float]] = {}
    for group in groups:
        for side in sides:
            made = totals[group, side, high] - totals[group, side, low]
            per_call.setdefault(group, {})[side] = made / (high - low)
    return counter.name, per_call


@functools.cache
def instruction_counter() -> InstructionCounter | str:
    """perf if it can count here, else callgrind; or why neither can."""
    why = []
    perf = shutil.which("perf")
    if perf is not None:
        prefix = (perf, "stat", "-x,", "-e", "instructions:u", "--no-inherit")
        probe = subprocess.run(
            [*prefix, "--", "true"], capture_output=True, text=True, timeout=60, check=False
        )
        try:
            _parse_count(probe.stderr, "perf stat")
        except RuntimeError as exc:
            why.append(str(exc))  # e.g. "<not supported>" on a VM without counters
        else:
            return InstructionCounter("perf stat -e instructions:u", prefix)
    else:
        why.append("perf is not installed")
    valgrind = shutil.which("valgrind")
    if valgrind is not None:
        callgrind = (valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null")
        return InstructionCounter("valgrind --tool=callgrind", callgrind, "--log-file=")
    why.append("valgrind is not installed")
    return "; ".join(why)


class RunningCount:
    """The instructions of a process that keeps running (a server), counted over windows
    of its life by valgrind's callgrind: run the process as ``[*prefix, *command]``, then
    `mark` the start of a window and read what the process ran since with `counted`
    (from its start if nothing was marked). Every thread of the process is counted;
    nothing outside it (its clients, its children). Made by `running_count`.

    With ``instrumented=False`` the process starts uninstrumented (about ten times faster
    than counted) and counts from the first `mark` on.
    """

    def __init__(self, folder: Path, valgrind: str, *, instrumented: bool) -> None:
        self._folder = folder
        self._instrumented = instrumented
        self._dumps = 0
        self.prefix: list[str] = [
            valgrind,
            "--tool=callgrind",
            f"--log-file={folder / 'log.%p'}",
            f"--callgrind-out-file={folder / 'out.%p'}",
            f"--instr-atstart={'yes' if instrumented else 'no'}",
        ]

    def pid(self) -> int:
        """The counted process's id: of the logs valgrind opened (one per process, a
        child it forks included), the one whose parent is none of the others."""
        parents = {}
        for log in self._folder.glob("log.*"):
            said = re.search(r"Parent PID: (\d+)", log.read_text(errors="replace"))
            parents[int(log.suffix.removeprefix("."))] = int(said[1]) if said else None
        first = [pid for pid, parent in parents.items() if parent not in parents]
        if len(first) != 1:
            raise RuntimeError(f"no one process counted: callgrind's logs {sorted(parents)}")
        return first[0]

    async def _control(self, *options: str) -> None:
        command = ["callgrind_control", *options, str(self.pid())]
        with anyio.fail_after(CONTROL_TIMEOUT):
            done = await anyio.run_process(command, check=False)
        if done.returncode != 0:
            said = tail(done.stdout.decode(errors="replace") + done.stderr.decode(errors="replace"))
            raise RuntimeError(f"callgrind_control {' '.join(options)} failed: {said}")

    async def mark(self) -> None:
        """Count from now on (the counters zeroed)."""
        if not self._instrumented:
            await self._control("--instr=on")
            self._instrumented = True
        await self._control("--zero")

    async def counted(self) -> int:
        """The instructions run since the last `mark` or `counted` (since the start if
        neither); the counters are zeroed."""
        if not self._instrumented:
            raise RuntimeError("nothing counted yet: mark() starts the count")
        await self._control("--dump")
        self._dumps += 1
        dump = self._folder / f"out.{self.pid()}.{self._dumps}"
        try:
            report = dump.read_text(errors="replace")
        except OSError as exc:
            raise RuntimeError(f"callgrind wrote no dump: {exc}") from exc
        for line in report.splitlines():
            if line.startswith("totals:"):  # "summary:" leaves some out; "totals:" is all
                return int(line.split()[1])
        raise RuntimeError(f"callgrind's dump has no totals: {dump}")


@contextlib.contextmanager
def running_count(*, instrumented: bool = True) -> Iterator[RunningCount | str]:
    """A `RunningCount` for one process (its files removed afterwards); or why the
    instructions of a running process cannot be counted here."""
    valgrind = shutil.which("valgrind")
    if valgrind is None or shutil.which("callgrind_control") is None:
        yield "valgrind (with callgrind_control) is not installed"
        return
    with tempfile.TemporaryDirectory(prefix="bench-running-") as folder:
        yield RunningCount(Path(folder), valgrind, instrumented=instrumented)


# --- verdicts --------------------------------------------------------------------------------


def outcome(met: bool) -> str:
    return "met" if met else "MISSED"


def verdict(ratio: float, *, at_most: float | None = None, at_least: float | None = None) -> str:
    """The target a ratio is held to and whether it meets it: ``≤1.10x met``."""
    if at_most is not None:
        return f"≤{at_most:.2f}x {outcome(ratio <= at_most)}"
    assert at_least is not None
    return f"≥{at_least:.2f}x {outcome(ratio >= at_least)}"


# --- before and after ------------------------------------------------------------------------


def add_before_option(parser: argparse.ArgumentParser) -> None:
    """``--before REF`` and ``--rounds N``; and ``--json``, what each round runs."""
    parser.add_argument(
        "--before",
        metavar="REF",
        help="measure our side with src/ of git REF too, turn about with the working tree",
    )
    parser.add_argument(
        "--rounds", type=int, default=3, help="with --before: processes per side (default 3)"
    )
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)


def emit(figures: Figures, notes: Sequence[str] = ()) -> None:
    """What a ``--json`` run prints: its figures, and notes on how they were made."""
    print(json.dumps({"figures": figures, "notes": list(notes)}))


@contextlib.contextmanager
def source_at(ref: str) -> Iterator[tuple[str, Path]]:
    """``src/`` of git commit ``ref``, in a temporary folder removed afterwards; yields the
    commit's short hash and the folder."""
    git = ["git", "-C", str(REPO)]
    found = subprocess.run(
        [*git, "rev-parse", "--short", "--verify", f"{ref}^{{commit}}"],
        capture_output=True,
        text=True,
        check=False,
    )
    if found.returncode != 0:
        raise RuntimeError(f"no commit {ref!r}: {tail(found.stderr)}")
    commit = found.stdout.strip()
    with tempfile.TemporaryDirectory(prefix="bench-before-") as tmp:
        archive = Path(tmp) / "src.tar"
        _run([*git, "archive", "--output", str(archive), commit, "src"], "git archive")
        with tarfile.open(archive) as tar:
            tar.extractall(tmp, filter="data")
        yield commit, Path(tmp) / "src"


def run_before_after(
    script: str, argv: Sequence[str], ref: str, rounds: int, once: Sequence[str] = ()
) -> tuple[str, dict[str, list[dict[str, Any]]]]:
    """``script argv --json`` in processes importing ``src/`` of the working tree ("after")
    and of ``ref`` ("before"), ``rounds`` each, the sides taking turns and the first of a
    round alternating; options in ``once`` only in each side's first round. Returns the
    commit and each side's outputs; raises RuntimeError if a round fails."""
    with source_at(ref) as (commit, before_src):
        sources = {"after": REPO / "src", "before": before_src}
        outputs: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
        for turn in range(rounds):
            for side in rotated(["after", "before"], turn):
                args = [a for a in argv if turn == 0 or a not in once]
                print(f"round {turn + 1}/{rounds}: {side}", file=sys.stderr, flush=True)
                env = {**os.environ, "PYTHONPATH": str(sources[side])}
                try:
                    done = subprocess.run(
                        [sys.executable, script, *args, "--json"],
                        capture_output=True,
                        text=True,
                        env=env,
                        timeout=ROUND_TIMEOUT,
                        check=True,
                    )
                    outputs[side].append(json.loads(done.stdout.splitlines()[-1]))
                except subprocess.CalledProcessError as exc:
                    raise RuntimeError(f"{side} failed: {tail(exc.stderr)}") from exc
                except (subprocess.TimeoutExpired, ValueError, IndexError) as exc:
                    raise RuntimeError(f"{side} failed: {type(exc).__name__}: {exc}") from exc
    return commit, outputs


def before_after(
    script: str, options: argparse.Namespace, passed: Sequence[str], title: str
) -> None:
    """``--before``: ``script`` run in turns (`run_before_after`) with the options named in
    ``passed`` (``instructions`` counted in each side's first round only), then the table
    under ``title``; exits saying why if a round fails."""
    argv = []
    for name in passed:
        flag, value = "--" + name.replace("_", "-"), getattr(options, name)
        if value is True:
            argv.append(flag)
        elif value is not False and value is not None:
            argv.append(f"{flag}={value}")
    try:
        commit, outputs = run_before_after(
            script, argv, options.before, options.rounds, once=["--instructions"]
        )
    except RuntimeError as exc:
        sys.exit(f"before/after: {exc}")
    print(title)
    print("\n".join(before_after_table(commit, outputs)))


def _number(value: float) -> str:
    size = abs(value)
    return f"{value:.0f}" if size >= 1000 else f"{value:.1f}" if size >= 10 else f"{value:.3f}"


def before_after_table(commit: str, outputs: dict[str, list[dict[str, Any]]]) -> list[str]:
    """Each figure's median over the rounds, before and after, and after/before."""
    before = [out["figures"] for out in outputs["before"]]
    after = [out["figures"] for out in outputs["after"]]
    names = list(dict.fromkeys(name for figures in after + before for name in figures))
    lines = [
        f"before: src/ of {commit}; after: src/ of the working tree "
        f"({len(after)} processes each, medians)",
        f"{'figure':<36}{'before':>10}{'after':>10}{'after/before':>14}",
    ]
    for name in names:
        old = [f[name] for f in before if name in f]
        new = [f[name] for f in after if name in f]
        if not old or not new:
            continue
        b, a = statistics.median(old), statistics.median(new)
        ratio = f"{a / b:>13.3f}x" if b else f"{'':>14}"
        lines.append(f"{name:<36}{_number(b):>10}{_number(a):>10}{ratio}")
    notes = dict.fromkeys(n for out in outputs["after"] + outputs["before"] for n in out["notes"])
    lines += list(notes)
    return lines
