"""The sandbox holds: every escape attempt and every exceeded limit ends the program
with a clear error result, within its limits (never a hang), and errors name the line."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anyio
import pytest

from tests.code.helpers import RUN_TIMEOUT, run_code
from toolsets import StaticToolset, Toolset, code_mode, tool

pytestmark = pytest.mark.anyio

LIMITS: dict[str, Any] = {
    "timeout": 3.0,
    "max_memory": 20 * 1024 * 1024,
    "max_tool_calls": 5,
    "max_output": 1000,
}


@tool
def echo(text: str) -> str:
    """Say it back."""
    return text


@tool
async def slow() -> str:
    """Takes a minute."""
    await anyio.sleep(60)
    return "late"


async def _run(code: str) -> dict[str, Any]:
    async with code_mode(StaticToolset([echo, slow]), **LIMITS) as toolset:
        started = time.monotonic()
        result = await run_code(toolset, code)
        # Within the time limit, and the grace of the sandbox's own watchdog.
        assert time.monotonic() - started < LIMITS["timeout"] + 3
    assert isinstance(result, dict)
    assert "error" in result, result
    return result


ESCAPES = {
    "open a file": ("open('/etc/passwd').read()", "PermissionError"),
    "read the environment": ("import os\nos.environ['HOME']", "RuntimeError"),
    "run a command": ("import os\nos.system('id')", "AttributeError"),
    "import subprocess": ("import subprocess", "ModuleNotFoundError"),
    "import socket": ("import socket", "ModuleNotFoundError"),
    "walk to the host's classes": ("().__class__.__base__.__subclasses__()", "AttributeError"),
    "call __import__": ("__import__('os')", "NameError"),
    "read globals()": ("globals()", "NameError"),
    "read a frame": ("import sys\nsys._getframe()", "AttributeError"),
    "reach a function's globals": ("(lambda: 0).__globals__", "AttributeError"),
    "reach the namespace's class": ("tools.__class__.__subclasses__()", "AttributeError"),
    "make the namespace's class": ("type(tools)()", "TypeError"),
    "reach the namespace's dict": ("tools.__dict__", "AttributeError"),
    "import by eval": ("eval(\"__import__('os')\")", "NameError"),
}


@pytest.mark.parametrize(("code", "exception"), ESCAPES.values(), ids=ESCAPES.keys())
async def test_an_escape_attempt_is_refused_with_the_exception_and_line(
    code: str, exception: str
) -> None:
    result = await _run(code)
    assert result["exception"] == exception
    assert result["line"] == code.count("\n") + 1


async def test_an_endless_loop_is_stopped_by_the_sandbox_at_the_time_limit() -> None:
    result = await _run("n = 0\nwhile True:\n    n += 1")
    assert (result["limit"], result["exception"]) == ("timeout", "TimeoutError")
    assert "of its 3 s" in result["error"]


async def test_a_huge_allocation_is_refused_at_the_memory_limit() -> None:
    result = await _run("x = 'a' * 10**10")
    assert (result["limit"], result["line"]) == ("max_memory", 1)


async def test_memory_grown_in_a_loop_is_stopped_at_the_limit() -> None:
    result = await _run("x = []\nwhile True:\n    x.append('abcdefgh' * 100)")
    assert result["limit"] == "max_memory"


async def test_a_deep_recursion_is_an_error_with_a_short_traceback() -> None:
    result = await _run("def f(n):\n    return f(n + 1)\nf(0)")
    assert result["exception"] == "RecursionError"
    assert len(result["traceback"]) <= 8


async def test_too_many_tool_calls_stop_the_program_even_when_it_catches_errors() -> None:
    result = await _run(
        "while True:\n    try:\n        await tools.echo(text='x')\n"
        "    except Exception:\n        pass"
    )
    assert result["limit"] == "max_tool_calls"


async def test_a_tool_call_that_takes_too_long_ends_at_the_time_limit() -> None:
    result = await _run("await tools.slow()")
    assert result["limit"] == "timeout"


async def test_a_huge_result_is_refused_at_the_output_limit() -> None:
    result = await _run("['x' * 100] * 100")
    assert result["limit"] == "max_output"


async def test_huge_printed_output_is_cut_and_says_how_much_was_left_out() -> None:
    async with code_mode(StaticToolset([echo]), **LIMITS) as toolset:
        result = await run_code(toolset, "for i in range(1000):\n    print('line', i)\n'done'")
    assert isinstance(result, dict)
    assert result["result"] == "done"
    printed = str(result["printed"])
    assert printed.startswith("line 0\n")
    assert "more characters of output not shown" in printed
    assert len(printed) < 1100


async def test_a_syntax_error_names_its_line() -> None:
    result = await _run("x = 1\ny = (\nz = 2")
    assert result["exception"] == "SyntaxError"
    assert result["line"] >= 2
    assert "syntax error" in result["error"]


async def test_a_runtime_error_names_its_line_and_the_frames() -> None:
    result = await _run("def half(n):\n    return n / 0\nx = 1\nhalf(x)")
    assert (result["exception"], result["line"]) == ("ZeroDivisionError", 2)
    assert result["traceback"] == ["line 4, in <module>: half(x)", "line 2, in half: return n / 0"]


async def test_positional_arguments_are_refused_naming_keywords() -> None:
    result = await _run("await tools.echo('x')")
    assert result["exception"] == "TypeError"
    assert "by keyword" in result["error"]


async def test_the_sandbox_serves_the_next_program_after_one_was_stopped() -> None:
    async with code_mode(StaticToolset([echo]), **LIMITS) as toolset:
        stopped = await run_code(toolset, "while True:\n    pass")
        after = await run_code(toolset, "await tools.echo(text='still here')")
    assert isinstance(stopped, dict)
    assert stopped["limit"] == "timeout"
    assert after == {"result": "still here"}


async def test_a_program_sleeping_is_served_within_the_time_limit() -> None:
    async with code_mode(StaticToolset([echo]), **LIMITS) as toolset:
        quick = await run_code(toolset, "import asyncio\nawait asyncio.sleep(0.01)\n'awake'")
        stopped = await run_code(toolset, "import asyncio\nawait asyncio.sleep(600)")
    assert quick == {"result": "awake"}
    assert isinstance(stopped, dict)
    assert stopped["limit"] == "timeout"


async def test_a_cancelled_program_returns_at_once_and_the_sandbox_serves_the_next() -> None:
    async with code_mode(StaticToolset([echo]), **LIMITS) as toolset:
        started = time.monotonic()
        with anyio.move_on_after(0.3):
            await run_code(toolset, "while True:\n    pass")
        assert time.monotonic() - started < 1.5
        after = await run_code(toolset, "await tools.echo(text='next')")
    assert after == {"result": "next"}


async def test_programs_run_side_by_side() -> None:
    results: list[Any] = []

    async def one(text: str) -> None:
        results.append(await run_code(toolset, f"await tools.echo(text={text!r})"))

    toolset = code_mode(StaticToolset([echo]), **LIMITS)
    async with toolset, anyio.create_task_group() as group:
        for text in ("a", "b", "c"):
            group.start_soon(one, text)
    assert sorted(r["result"] for r in results) == ["a", "b", "c"]


async def test_awaited_sleeps_gathered_run_together() -> None:
    # One after another they would take 3.6 s, past the 3 s limit.
    async with code_mode(StaticToolset([echo]), **LIMITS) as toolset:
        result = await run_code(
            toolset,
            "import asyncio\nasync def nap(n):\n    await asyncio.sleep(1.2)\n    return n\n"
            "await asyncio.gather(nap(1), nap(2), nap(3))",
        )
    assert result == {"result": [1, 2, 3]}


async def test_an_endless_loop_of_awaits_is_stopped_naming_the_limit() -> None:
    result = await _run("import asyncio\nwhile True:\n    await asyncio.sleep(0)")
    assert (result["limit"], result["line"]) == ("max_suspensions", 3)


async def test_a_program_waiting_for_a_sandbox_worker_is_not_charged_for_the_wait() -> None:
    # One worker: the second program starts when the first ends (after 1.2 s), and ends
    # 2.4 s after it was sent, past its 2 s limit, which counts from its start.
    results: list[Any] = []

    async def one(n: int) -> None:
        code = f"import asyncio\nawait asyncio.sleep(1.2)\nawait tools.echo(text='{n}')"
        results.append(await run_code(toolset, code))

    toolset = code_mode(StaticToolset([echo]), timeout=2, max_workers=1)
    async with toolset, anyio.create_task_group() as group:
        for n in range(2):
            group.start_soon(one, n)
    assert sorted(r["result"] for r in results) == ["0", "1"]


async def test_a_program_finding_no_free_worker_in_time_is_not_run_and_told_so() -> None:
    ran: list[int] = []

    @tool
    def mark(n: int) -> int:
        """Note that a program ran."""
        ran.append(n)
        return n

    results: list[dict[str, Any]] = []

    async def one(n: int) -> None:
        code = f"await tools.mark(n={n})\nimport asyncio\nawait asyncio.sleep(60)"
        result = await run_code(toolset, code)
        assert isinstance(result, dict)
        results.append(result)

    # One worker, held 1 s by each program that gets it: of three sent at once, the
    # last finds none free within 1 s.
    toolset = code_mode(StaticToolset([mark]), timeout=1, max_workers=1)
    async with toolset, anyio.create_task_group() as group:
        for n in range(3):
            group.start_soon(one, n)
    refused = [r for r in results if r.get("limit") == "max_workers"]
    assert refused
    assert all("did not start" in r["error"] for r in refused)
    assert len(ran) == len(results) - len(refused)
    assert all(r["limit"] in {"timeout", "max_workers"} for r in results)


async def test_the_next_program_is_not_charged_for_a_cancelled_ones_worker_still_stopping() -> None:
    # The cancelled program's step computes on until the sandbox stops it (1.8 s in);
    # the next one waits for that worker off its own 2 s, then naps 1 s.
    async with code_mode(StaticToolset([echo]), timeout=2, max_workers=1) as toolset:
        with anyio.move_on_after(0.3):
            await run_code(toolset, "while True:\n    pass")
        after = await run_code(toolset, "import asyncio\nawait asyncio.sleep(1)\n'next'")
    assert after == {"result": "next"}


async def test_a_program_that_stops_waiting_for_a_worker_neither_takes_nor_frees_one() -> None:
    marks: list[int] = []
    holding = anyio.Event()

    @tool
    async def mark(n: int) -> int:
        """Note where a program is."""
        marks.append(n)
        if n == 0:
            holding.set()
        return n

    # The first program holds the one worker 1.5 s; the second waits for it and gives
    # up; the third, sent then, still waits for the first to end, off its own time.
    async with code_mode(StaticToolset([mark]), timeout=2, max_workers=1) as toolset:
        async with anyio.create_task_group() as group:
            holder = (
                "import asyncio\nawait tools.mark(n=0)\nawait asyncio.sleep(1.5)\n"
                + "await tools.mark(n=1)"
            )
            group.start_soon(run_code, toolset, holder)
            with anyio.fail_after(RUN_TIMEOUT):
                await holding.wait()
            with anyio.move_on_after(0.5):
                await run_code(toolset, "await tools.mark(n=9)")
            third = "import asyncio\nawait asyncio.sleep(1.5)\nawait tools.mark(n=2)"
            after = await run_code(toolset, third)
        with anyio.fail_after(1):  # and none was lost
            last = await run_code(toolset, "await tools.mark(n=3)")
    # The third waited ~1 s for the worker, off its 2 s.
    assert (after, last) == ({"result": 2}, {"result": 3})
    assert marks == [0, 1, 2, 3]


def _in_threads(toolset: Toolset, codes: Sequence[str], backends: Sequence[str]) -> list[Any]:
    """What ``run_code`` answers for each of ``codes``, all sent at once, each from a
    thread of its own running an event loop of its own (as sync adapters do)."""

    def one(code: str, backend: str) -> Callable[[], Any]:
        return lambda: anyio.run(run_code, toolset, code, backend=backend)

    with ThreadPoolExecutor(len(codes)) as threads:
        running = [threads.submit(one(c, b)) for c, b in zip(codes, backends, strict=True)]
        return [each.result(timeout=RUN_TIMEOUT) for each in running]


LOOPS = [["asyncio", "asyncio"], ["trio", "trio"], ["asyncio", "trio"]]


@pytest.mark.parametrize("backends", LOOPS, ids="+".join)
def test_programs_in_several_event_loops_share_the_workers_and_wait_off_their_time(
    backends: list[str],
) -> None:
    # One worker for two threads: the second program starts when the first ends (after
    # 1.2 s), and ends 2.4 s after it was sent, past its 2 s limit, which counts from its
    # start, not from when it was sent.
    toolset = code_mode(StaticToolset([echo]), timeout=2, max_workers=1)
    codes = [f"import time\ntime.sleep(1.2)\n'{n}'" for n in range(2)]
    try:
        started = time.monotonic()
        results = _in_threads(toolset, codes, backends)
        took = time.monotonic() - started
    finally:
        anyio.run(toolset.shutdown)
    assert results == [{"result": "0"}, {"result": "1"}]
    assert took >= 2.4  # one after the other: one worker for the whole process


@pytest.mark.parametrize("backends", LOOPS, ids="+".join)
def test_a_program_finding_no_worker_free_in_any_event_loop_is_not_run(
    backends: list[str],
) -> None:
    ran: list[int] = []

    @tool
    def mark(n: int) -> int:
        """Note that a program ran."""
        ran.append(n)
        return n

    # One worker, held 1 s by each program that gets it: of three sent at once from
    # three threads, the last finds none free within 1 s.
    toolset = code_mode(StaticToolset([mark]), timeout=1, max_workers=1)
    codes = [f"await tools.mark(n={n})\nimport asyncio\nawait asyncio.sleep(60)" for n in range(3)]
    try:
        results = _in_threads(toolset, codes, [*backends, backends[0]])
    finally:
        anyio.run(toolset.shutdown)
    refused = [n for n, r in enumerate(results) if r.get("limit") == "max_workers"]
    assert refused
    assert all("did not start" in results[n]["error"] for n in refused)
    assert sorted(ran) == [n for n in range(3) if n not in refused]
    assert all(r["limit"] in {"timeout", "max_workers"} for r in results)
