"""benchmarks/_common.py: what the benchmarks share, on real processes, servers and git."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import anyio
import pytest

ROOT = Path(__file__).resolve().parent.parent


def _load_common() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_common", ROOT / "benchmarks/_common.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


common = _load_common()

SERVE_ON = """
import socket, sys
sock = socket.socket()
sock.bind(("127.0.0.1", int(sys.argv[1]) if len(sys.argv) > 1 else 0))
sock.listen()
print(sock.getsockname()[1], flush=True)
while True:
    sock.accept()[0].close()
"""


def test_a_peer_must_be_pinned() -> None:
    with pytest.raises(ValueError, match="pinned"):
        common.peer_python("pydantic-ai-slim==2.68.0", "fastmcp")


def test_perf_and_callgrind_reports_give_the_count() -> None:
    perf = "1418375833,,instructions:u,1234,100.00,,\n"
    callgrind = "==8707== Events    : Ir\n==8707== Collected : 1418375833\n"
    assert common._parse_count(perf, "perf") == 1418375833
    assert common._parse_count(callgrind, "callgrind") == 1418375833


def test_counters_the_machine_lacks_are_no_count() -> None:
    with pytest.raises(RuntimeError):
        common._parse_count("<not supported>,,instructions:u,0,100.00,,\n", "perf")
    with pytest.raises(RuntimeError):
        common._parse_count("", "perf")


def test_a_verdict_names_the_target_and_whether_it_is_met() -> None:
    assert common.verdict(1.05, at_most=1.10) == "≤1.10x met"
    assert common.verdict(1.2, at_most=1.10) == "≤1.10x MISSED"
    assert common.verdict(0.95, at_least=0.90) == "≥0.90x met"
    assert common.verdict(0.5, at_least=0.90) == "≥0.90x MISSED"


@pytest.mark.anyio
async def test_a_server_that_prints_its_port_serves_until_the_block_ends() -> None:
    with anyio.fail_after(30):
        async with common.server_process([sys.executable, "-c", SERVE_ON]) as port:
            stream = await anyio.connect_tcp("127.0.0.1", port)
            await stream.aclose()
        with pytest.raises(OSError, match="connection attempts failed") as refused:
            await anyio.connect_tcp("127.0.0.1", port)
        assert isinstance(refused.value.__cause__, ConnectionRefusedError)


@pytest.mark.anyio
async def test_a_server_on_a_given_port_is_ready_once_it_takes_a_connection() -> None:
    port = common.free_port()
    with anyio.fail_after(30):
        command = [sys.executable, "-c", SERVE_ON, str(port)]
        async with common.server_process(command, port=port) as served:
            assert served == port
            stream = await anyio.connect_tcp("127.0.0.1", port)
            await stream.aclose()


@pytest.mark.anyio
@pytest.mark.parametrize("port_given", [False, True], ids=["printed port", "given port"])
async def test_a_server_that_exits_first_says_what_it_wrote(port_given: bool) -> None:
    command = [sys.executable, "-c", "import sys; sys.exit('no port for you')"]
    given = common.free_port() if port_given else None
    with anyio.fail_after(30), pytest.raises(RuntimeError) as caught:
        async with common.server_process(command, port=given):
            pass
    assert "no port for you" in caught.value.args[0]


@pytest.mark.anyio
async def test_turns_measure_every_side_the_asked_number_of_times() -> None:
    made: list[str] = []

    def call(name: str) -> common.Call:
        async def one() -> object:
            made.append(name)
            return None

        return one

    calls = {"raw": call("raw"), "ours": call("ours")}
    latency, cpu = await common.sequential(calls, 7, 2, 3)
    assert {name: len(times) for name, times in latency.items()} == {"raw": 7, "ours": 7}
    assert made.count("raw") == made.count("ours") == 9
    assert set(cpu) == {"raw", "ours"}
    throughput = await common.concurrent(calls, 5, 3)
    assert {name: len(rates) for name, rates in throughput.items()} == {"raw": 3, "ours": 3}
    cpu_per_call: dict[str, list[float]] = {}
    await common.concurrent(calls, 5, 3, cpu_per_call)
    assert {name: len(times) for name, times in cpu_per_call.items()} == {"raw": 3, "ours": 3}


@pytest.mark.anyio
async def test_the_same_run_counts_the_same_instructions() -> None:
    counter = common.instruction_counter()
    if isinstance(counter, str):
        pytest.skip(f"no instruction counter here: {counter}")
    little = ["true"]
    more = ["sh", "-c", "i=0; while [ $i -lt 2000 ]; do i=$((i+1)); done"]
    with anyio.fail_after(120):
        first, again, bigger = await counter.count_all([little, little, more])
    assert 0 < first < bigger
    assert abs(first - again) <= first * 0.01


@pytest.mark.anyio
async def test_a_command_that_fails_is_no_count() -> None:
    counter = common.instruction_counter()
    if isinstance(counter, str):
        pytest.skip(f"no instruction counter here: {counter}")
    with anyio.fail_after(60), pytest.raises(RuntimeError) as caught:
        await counter.count_all([["true"], ["sh", "-c", "echo no luck >&2; exit 3"]])
    assert counter.name in caught.value.args[0]


WORKS_PER_LINE = """
while read n; do
    child=$(echo forked)
    i=0
    while [ "$i" -lt "$n" ]; do i=$((i + 1)); done
    echo "$child $n"
done
"""
"""A process that keeps running: for each line ``N`` it reads, forks a child and counts to
N, then answers."""


@pytest.mark.anyio
@pytest.mark.parametrize("instrumented", [True, False])
async def test_a_running_process_is_counted_over_the_windows_marked(instrumented: bool) -> None:
    with common.running_count(instrumented=instrumented) as count:
        if isinstance(count, str):
            pytest.skip(f"no running count here: {count}")
        command = [*count.prefix, "sh", "-c", WORKS_PER_LINE]
        with anyio.fail_after(120):
            async with await anyio.open_process(command) as process:
                stdin, stdout = process.stdin, process.stdout
                assert stdin is not None
                assert stdout is not None

                async def work(n: int) -> None:
                    await stdin.send(f"{n}\n".encode())
                    assert await stdout.receive() == f"forked {n}\n".encode()

                await work(10)
                if instrumented:
                    assert await count.counted() > 0  # from the start
                else:
                    with pytest.raises(RuntimeError, match="mark"):
                        await count.counted()
                windows = []
                for n in (200, 2000, 200):
                    await count.mark()
                    await work(n)
                    windows.append(await count.counted())
                await stdin.aclose()
    little, more, again = windows
    assert more > 5 * little
    assert abs(again - little) <= little * 0.05


def test_the_source_at_a_commit_is_its_src_folder_and_goes_away() -> None:
    shown = subprocess.run(
        ["git", "-C", str(ROOT), "show", "HEAD:src/toolsets/__init__.py"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    with common.source_at("HEAD") as (commit, src):
        assert (src / "toolsets" / "__init__.py").read_text() == shown
        assert commit
    assert not src.exists()


def test_an_unknown_commit_is_refused() -> None:
    with pytest.raises(RuntimeError), common.source_at("no-such-ref-anywhere"):
        pass


def test_before_and_after_run_in_turn_each_with_its_own_src(tmp_path: Path) -> None:
    script = tmp_path / "which_src.py"
    script.write_text(
        textwrap.dedent(
            """
            import json, sys
            import toolsets
            before = "bench-before-" in toolsets.__file__
            print(json.dumps({"figures": {"before": float(before), "argv": len(sys.argv)},
                              "notes": ["noted"]}))
            """
        )
    )
    commit, outputs = common.run_before_after(str(script), ["--once", "x"], "HEAD", 2, ["--once"])
    figures = {side: [out["figures"] for out in runs] for side, runs in outputs.items()}
    assert [f["before"] for f in figures["before"]] == [1.0, 1.0]
    assert [f["before"] for f in figures["after"]] == [0.0, 0.0]
    # the first round with --once, the second without; every round with --json
    assert [f["argv"] for f in figures["after"]] == [4, 3]
    table = common.before_after_table(commit, outputs)
    assert any(line.startswith("argv") for line in table)
    assert table[-1] == "noted"


def test_a_failing_round_says_why(tmp_path: Path) -> None:
    script = tmp_path / "fails.py"
    script.write_text("raise SystemExit('cannot measure this')\n")
    with pytest.raises(RuntimeError) as caught:
        common.run_before_after(str(script), [], "HEAD", 1)
    assert "cannot measure this" in caught.value.args[0]


def test_a_run_prints_its_figures_as_one_json_line(capsys: pytest.CaptureFixture[str]) -> None:
    common.emit({"own µs": 35.5}, ["counted by nothing"])
    assert json.loads(capsys.readouterr().out) == {
        "figures": {"own µs": 35.5},
        "notes": ["counted by nothing"],
    }


def test_the_agent_overhead_benchmark_prints_each_models_translation_per_turn() -> None:
    done = subprocess.run(
        [sys.executable, "agent_overhead.py", "--translation", "--calls", "3", "--repeats", "1"],
        cwd=ROOT / "benchmarks",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    rows = {line.split()[0]: line.split() for line in done.stdout.splitlines()[1:]}
    assert set(rows) == {"openai", "anthropic", "gemini"}
    assert rows["openai"][-2:] == ["1.00x", "openai"]
    assert float(rows["anthropic"][1]) > 0
    assert float(rows["gemini"][1]) > 0


def test_the_catalog_benchmark_plays_the_task_in_each_mode_and_checks_its_answers() -> None:
    done = subprocess.run(
        [sys.executable, "catalog.py", "--pages", "3", "--queries", "20", "--no-graph", "--json"],
        cwd=ROOT / "benchmarks",
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout.splitlines()[-1])["figures"]
    assert figures["operations"] > 1000
    # Three pages: one call a page and the answer; a search first; search, program, answer.
    assert figures["plain_turns"] == 4
    assert figures["searchable_turns"] == 5
    assert figures["code_mode_searchable_turns"] == 3
    assert figures["plain_declarations"] == figures["operations"]
    assert figures["searchable_30_searches_declarations_max"] <= 20
    assert figures["search_ms"] > 0
