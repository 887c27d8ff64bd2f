"""The agent loop's own overhead per tool call: a no-op tool driven by a scripted model.

Everything but the loop is as cheap as it gets (the model is a script, the tool does
nothing), and what the model and the tool cost by themselves is subtracted, so what
remains is what the loop itself costs: building the request, dispatching through the
gates and callbacks, the tool call's cancel scope, recording events, applying actions.

Run: python benchmarks/agent_overhead.py [--messages N] [--calls K] [--repeats R] [--no-peer]
     [--instructions] [--before REF [--rounds P]] [--translation]

Prints microseconds per tool call for four shapes of conversation:
  sequential  K model turns of one call each, per user message (N messages)
  batched     one model turn with K concurrency-safe calls, per user message (N messages)
  long        one session growing to N/10*K calls (each message reads the session back)
  async       as sequential, but the no-op tool is an async function

The no-op tool is a plain function run on the event loop (``run_in_thread=False``), which
cannot wait, so the loop calls it without a cancel scope; an async tool (like MCP and
OpenAPI tools) may wait, so each of its calls runs in an anyio cancel scope armed with
the tool's deadline at its first wait: the ``async`` row shows that cost.

Columns, min and median over R repeats: ``total`` is the wall time per call of the loop
running with the plain model and tool (nothing wraps them, so nothing perturbs it);
``model`` and ``tool`` (medians) are what the same model calls, on the very requests the
loop sent, and the same tool calls cost when replayed by themselves right after; ``own``
is ``total`` less those two. Replayed alone, the model and the tool run with warm caches,
so they cost a little less than inside the loop: ``own`` errs on the high side. ``(gc)``
is the garbage collector's time during the loop's run (median), nearly all of it
``own``: the loop's allocations are what set it off. Sessions are made before the clock
starts. Timings on this small shared machine vary by up to half from run to run, and by
twice in its slowest spells: compare minima, and A/B by running the whole script several
times. The ``model`` column, a fixed piece of pure Python, doubles as a witness of the
host's speed at the time: compare runs whose ``model`` figures agree.

``--instructions`` adds what the machine's noise cannot move: user-space instructions
per tool call, counted by ``perf stat -e instructions:u`` or, where the machine has no
counters, by valgrind's callgrind (the table names which), around processes that each do
one thing, each less a process doing all but that (the loop: N messages, less none; the
model's replay: recording and replaying, less recording; the tool's calls: contexts and
calls, less the contexts), divided by the calls (own = loop - model - tool).

``--before REF`` measures the loop alone (no peer), in P processes (``--rounds``, default
3) importing ``src/`` of the working tree and P importing ``src/`` of git commit REF, the
two taking turns, and prints each figure's median before and after and their ratio; with
``--instructions``, each side's first process counts them too.

After the table, each HTTP model's translation per turn (no network): a conversation of K
turns of one call each, every turn's request built as the loop sends it (the whole
history, tools in the provider's dialect) and JSON-encoded, and a recorded answer with a
call parsed back, per turn, with each one's ratio to OpenAI's. ``--translation`` prints
only that.

The peer is pydantic-ai (``pydantic-ai-slim``, pinned below, its ``FunctionModel`` test
double and one no-op tool: ``peers/pydantic_ai_overhead.py``) in the same shapes, with
N/10 messages. It runs as a subprocess in its own venv, made on first use (with pip; that
takes a while once; see ``_common.peer_python``). Its ``total`` median is shown, with how
many times ours it is. If it cannot be installed or run, the table says why and the
benchmark goes on.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from _common import (
    add_before_option,
    before_after,
    emit,
    instruction_counter,
    peer_python,
    tail,
)

from toolsets import FunctionCall, FunctionTool, ToolContext
from toolsets.agent import LlmAgent, LlmRequest, Runner

try:
    from toolsets.models import ScriptedModel, Step
except ModuleNotFoundError:  # --before a ref from when the models lived in toolsets.agent
    from toolsets.agent import ScriptedModel, Step  # type: ignore[no-redef]

TARGET_US = 100.0
SHAPES = ("sequential", "batched", "long", "async")
PEER_SHAPES = {"sequential": "sequential", "batched": "batched", "long": "long"}
"""Which of the peer's shapes each of ours is compared with (its no-op tool is async)."""
PEER = "pydantic-ai-slim==2.68.0"
PEER_RUN_TIMEOUT = 300.0


@dataclass
class GcClock:
    """Nanoseconds spent in the garbage collector."""

    ns: int = 0
    _start: int = 0

    def __call__(self, phase: str, info: Mapping[str, int]) -> None:
        if phase == "start":
            self._start = time.perf_counter_ns()
        else:
            self.ns += time.perf_counter_ns() - self._start


def noop() -> None:
    """Do nothing."""
    return None


async def _at_once() -> None:
    return None


async def async_noop() -> None:
    """Do nothing, asynchronously: it awaits (as MCP and OpenAPI tools do), so its call runs
    in the call's cancel scope, though what it awaits never waits for the loop. (An
    ``async def`` that never awaits runs at once, with no scope, like ``noop``.)"""
    await _at_once()


def sequential(calls: int) -> Callable[[LlmRequest], Step]:
    def respond(request: LlmRequest) -> Step:
        since_user = 0
        for content in reversed(request.contents):
            if content.role == "user":
                break
            since_user += content.role == "tool"
        return FunctionCall(name="noop") if since_user < calls else "done"

    return respond


def batched(calls: int) -> Callable[[LlmRequest], Step]:
    def respond(request: LlmRequest) -> Step:
        if request.contents[-1].role == "user":
            return [FunctionCall(name="noop") for _ in range(calls)]
        return "done"

    return respond


@dataclass(frozen=True)
class Sample:
    """One repeat, in microseconds per tool call."""

    total: float
    model: float
    tool: float
    gc: float

    @property
    def own(self) -> float:
        return self.total - self.model - self.tool


def make_runner(
    model: ScriptedModel, calls: int, shape: str
) -> tuple[Runner, FunctionTool[[], Any]]:
    tool: FunctionTool[[], Any]
    if shape == "async":
        tool = FunctionTool(async_noop, name="noop", read_only=True)
    else:
        tool = FunctionTool(noop, read_only=True, run_in_thread=False)
    agent = LlmAgent("bench", model, tools=[tool], max_iterations=calls + 2)
    return Runner(agent), tool


async def call_tool(tool: FunctionTool[[], Any], contexts: list[ToolContext]) -> None:
    """A call of ``tool`` with each context, as the loop calls it: through ``run`` (a plain
    function on the loop hands back its result ready, an async one a coroutine)."""
    for ctx in contexts:
        await tool.run({}, ctx)


async def run_messages(runner: Runner, shape: str, messages: int) -> list[str]:
    """The sessions to run ``messages`` user messages in (made now, before any clock)."""
    if shape == "long":
        return [(await runner.create_session(user_id="u")).id] * messages
    return [(await runner.create_session(user_id="u")).id for _ in range(messages)]


async def measure(shape: str, messages: int, calls: int) -> Sample:
    """One repeat of ``shape`` over ``messages`` user messages."""
    respond = batched(calls) if shape == "batched" else sequential(calls)

    # The loop, with the plain model and tool.
    model = ScriptedModel(respond=respond, record=False)
    runner, tool = make_runner(model, calls, shape)
    session_ids = await run_messages(runner, shape, messages)
    clock = GcClock()
    gc.collect()  # each repeat starts from the same heap, not the last one's garbage
    gc.callbacks.append(clock)
    start = time.perf_counter_ns()
    try:
        for session_id in session_ids:
            async for _ in runner.run(user_id="u", session_id=session_id, message="go"):
                pass
        elapsed = time.perf_counter_ns() - start
    finally:
        gc.callbacks.remove(clock)
    tool_calls = 0
    for session_id in set(session_ids):
        session = await runner.get_session(user_id="u", session_id=session_id)
        tool_calls += sum(len(event.function_responses) for event in session.events)
    assert tool_calls == messages * calls, tool_calls

    # The same model requests, recorded by a second run of the same script (the model
    # answers from the request alone, so the requests are the same), then replayed.
    recorder = ScriptedModel(respond=respond, record=True)
    again, _ = make_runner(recorder, calls, shape)
    for session_id in await run_messages(again, shape, messages):
        async for _ in again.run(user_id="u", session_id=session_id, message="go"):
            pass
    replayed = ScriptedModel(respond=respond, record=False)
    gc.collect()
    start = time.perf_counter_ns()
    for request in recorder.requests:
        async for _ in replayed.generate(request):
            pass
    model_ns = time.perf_counter_ns() - start

    # The same tool calls, each with its own context (made beforehand: the loop's own
    # work), made as the loop makes them.
    contexts = [ToolContext() for _ in range(tool_calls)]
    start = time.perf_counter_ns()
    await call_tool(tool, contexts)
    tool_ns = time.perf_counter_ns() - start

    per_call = 1e-3 / tool_calls
    return Sample(elapsed * per_call, model_ns * per_call, tool_ns * per_call, clock.ns * per_call)


async def count(part: str, shape: str, messages: int, calls: int) -> None:
    """In a process whose instructions are counted: one part's work, nothing else (after a
    warm-up of two messages, which the run with no messages does too)."""
    respond = batched(calls) if shape == "batched" else sequential(calls)

    async def run(model: ScriptedModel, how_many: int) -> Runner:
        runner, _ = make_runner(model, calls, shape)
        for session_id in await run_messages(runner, shape, how_many):
            async for _ in runner.run(user_id="u", session_id=session_id, message="go"):
                pass
        return runner

    await run(ScriptedModel(respond=respond, record=False), 2)
    if part == "loop":
        await run(ScriptedModel(respond=respond, record=False), messages)
    elif part in ("record", "model"):
        recorder = ScriptedModel(respond=respond, record=True)
        await run(recorder, messages)
        if part == "model":
            replayed = ScriptedModel(respond=respond, record=False)
            for request in recorder.requests:
                async for _ in replayed.generate(request):
                    pass
    else:  # "tool", or "contexts" (the contexts alone)
        _, tool = make_runner(ScriptedModel(respond=respond, record=False), calls, shape)
        contexts = [ToolContext() for _ in range(messages * calls)]
        if part == "tool":
            await call_tool(tool, contexts)


INSTRUCTION_MESSAGES = 100
PARTS = ("loop", "model", "record", "tool", "contexts")


async def instructions(calls: int) -> tuple[str, dict[str, dict[str, float]]] | str:
    """Which counter counted, and instructions per tool call by shape: loop, model, tool
    and own; or why they could not be counted."""
    counter = instruction_counter()
    if isinstance(counter, str):
        return counter

    def command(part: str, shape: str, messages: int) -> list[str]:
        return [
            sys.executable,
            __file__,
            "--count",
            part,
            shape,
            str(messages),
            "--calls",
            str(calls),
        ]

    results: dict[str, dict[str, float]] = {}
    try:
        for shape in SHAPES:
            n = INSTRUCTION_MESSAGES if shape != "long" else max(1, INSTRUCTION_MESSAGES // 5)
            per_call = 1.0 / (n * calls)
            runs = [("loop", 0), *((part, n) for part in PARTS)]
            counted = dict(
                zip(
                    runs,
                    await counter.count_all([command(p, shape, m) for p, m in runs]),
                    strict=True,
                )
            )
            loop = counted["loop", n] - counted["loop", 0]
            model = counted["model", n] - counted["record", n]
            tool = counted["tool", n] - counted["contexts", n]
            results[shape] = {
                "loop": loop * per_call,
                "model": model * per_call,
                "tool": tool * per_call,
                "own": (loop - model - tool) * per_call,
            }
    except RuntimeError as exc:
        return str(exc)
    return counter.name, results


async def measure_all(messages: int, calls: int, repeats: int) -> dict[str, list[Sample]]:
    results: dict[str, list[Sample]] = {}
    for shape in SHAPES:
        count = messages if shape != "long" else max(1, messages // 10)
        await measure(shape, max(1, count // 10), calls)  # warm-up: imports, caches
        results[shape] = [await measure(shape, count, calls) for _ in range(repeats)]
    return results


# --- the models' translation --------------------------------------------------------------

TRANSLATED_ANSWERS: dict[str, dict[str, Any]] = {
    "openai": {
        "model": "gpt-test",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": "Calling.",
                    "tool_calls": [
                        {
                            "id": "call_9",
                            "type": "function",
                            "function": {"name": "noop", "arguments": '{"n": 9}'},
                        }
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 90, "completion_tokens": 9},
    },
    "anthropic": {
        "type": "message",
        "model": "claude-test",
        "content": [
            {"type": "text", "text": "Calling."},
            {"type": "tool_use", "id": "toolu_9", "name": "noop", "input": {"n": 9}},
        ],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 90, "output_tokens": 9},
    },
    "gemini": {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [
                        {"text": "Calling."},
                        {"functionCall": {"id": "call_9", "name": "noop", "args": {"n": 9}}},
                    ],
                },
                "finishReason": "STOP",
            }
        ],
        "usageMetadata": {"promptTokenCount": 90, "candidatesTokenCount": 9},
        "modelVersion": "gemini-test",
    },
}
"""A recorded answer with one call, per wire format."""


def translation(turns: int, repeats: int) -> dict[str, list[float]]:
    """µs per turn for each HTTP model to build and encode the requests of a
    ``turns``-turn conversation and parse an answer for each, ``repeats`` times."""
    from toolsets import Content, FunctionResponse, Part, ToolDeclaration
    from toolsets.models import AnthropicModel, GeminiModel, OpenAIChatModel

    declaration = ToolDeclaration(
        name="noop",
        description="Do nothing.",
        parameters={"type": "object", "properties": {"n": {"type": "integer"}}},
    )
    contents = [Content.user("go")]
    requests = []
    for turn in range(turns):
        request = LlmRequest(contents=list(contents), system_instruction="Be brief.")
        request.declarations = {"noop": declaration}
        requests.append(request)
        call = FunctionCall(name="noop", args={"n": turn}, id=f"call_{turn}")
        answer = FunctionResponse(name="noop", response={"n": turn}, id=f"call_{turn}")
        contents += [
            Content(role="model", parts=(Part(text="Calling."), Part(function_call=call))),
            Content(role="tool", parts=(Part(function_response=answer),)),
        ]
    models = {
        "openai": OpenAIChatModel("gpt-test", base_url="http://127.0.0.1:9/v1"),
        "anthropic": AnthropicModel("claude-test", base_url="http://127.0.0.1:9"),
        "gemini": GeminiModel("gemini-test", base_url="http://127.0.0.1:9/v1beta"),
    }
    out: dict[str, list[float]] = {}
    for name, model in models.items():
        recorded = json.dumps(TRANSLATED_ANSWERS[name]).encode()
        per_turn(model, requests, recorded)  # warm-up
        out[name] = [per_turn(model, requests, recorded) for _ in range(repeats)]
    return out


def per_turn(model: Any, requests: list[LlmRequest], recorded: bytes) -> float:
    """µs per request to translate it and encode its body, and parse ``recorded``
    (the models' own translation, the part of ``generate`` that is not the network)."""
    start = time.perf_counter()
    for request in requests:
        body, names = model._translate(request)
        json.dumps(body).encode()
        model._parse(recorded, names)
    return (time.perf_counter() - start) / len(requests) * 1e6


def print_translation(turns: int, repeats: int) -> None:
    costs = translation(turns, repeats)
    print(
        f"model translation per turn, µs ({turns} turns of one call; request built and "
        f"encoded + answer parsed; min / median of {repeats})"
    )
    base = statistics.median(costs["openai"])
    for name, samples in costs.items():
        median = statistics.median(samples)
        print(f"{name:<11}{min(samples):>10.1f}{median:>7.1f}{median / base:>8.2f}x openai")


# --- the peer ------------------------------------------------------------------------------

PEER_SCRIPT = Path(__file__).resolve().parent / "peers" / "pydantic_ai_overhead.py"


def run_peer(messages: int, calls: int, repeats: int) -> tuple[str, dict[str, list[float]]]:
    """pydantic-ai's version and µs per call by shape; raises RuntimeError saying why not."""
    python = peer_python(PEER)
    try:
        done = subprocess.run(
            [str(python), str(PEER_SCRIPT), str(messages), str(calls), str(repeats)],
            check=True,
            capture_output=True,
            text=True,
            timeout=PEER_RUN_TIMEOUT,
        )
        out = json.loads(done.stdout)
        return str(out["version"]), {k: list(v) for k, v in out["shapes"].items()}
    except subprocess.CalledProcessError as exc:
        raise RuntimeError(f"the peer failed: {tail(exc.stderr)}") from exc
    except (OSError, subprocess.TimeoutExpired, ValueError, KeyError) as exc:
        raise RuntimeError(f"{type(exc).__name__}: {exc}") from exc


# --- the table -----------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=200)
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--no-peer", action="store_true", help="skip pydantic-ai")
    parser.add_argument(
        "--instructions", action="store_true", help="count instructions per call (perf/valgrind)"
    )
    add_before_option(parser)
    parser.add_argument(
        "--translation", action="store_true", help="only the models' translation per turn"
    )
    parser.add_argument("--count", nargs=3, help=argparse.SUPPRESS)  # PART SHAPE MESSAGES
    options = parser.parse_args()
    if options.translation:
        print_translation(options.calls, options.repeats)
        return
    if options.count:
        part, shape, messages = options.count
        anyio.run(count, part, shape, int(messages), options.calls)
        return
    if options.before and not options.json:
        passed = ("messages", "calls", "repeats", "instructions")
        title = (
            f"agent loop per tool call ({options.messages} messages x {options.calls} calls; "
            f"{options.repeats} repeats a process; no peer)"
        )
        before_after(__file__, options, passed, title)
        return

    results = anyio.run(measure_all, options.messages, options.calls, options.repeats)
    counted = anyio.run(instructions, options.calls) if options.instructions else None
    if options.json:
        emit(*figures(results, counted))
        return

    peer: dict[str, list[float]] = {}
    peer_note = "peer: skipped (--no-peer)"
    if not options.no_peer:
        try:
            peer_messages = max(1, options.messages // 10)
            peer_version, peer = run_peer(peer_messages, options.calls, 3)
            peer_note = (
                f"peer: pydantic-ai-slim {peer_version}, {peer_messages} messages "
                "(long: the same session size as ours), median of 3"
            )
        except RuntimeError as exc:
            peer_note = f"peer unavailable: {exc}"

    print(
        f"agent loop per tool call, µs ({options.messages} messages x {options.calls} calls;"
        f" min / median of {options.repeats}); target < {TARGET_US:.0f} µs"
    )
    print(
        f"{'shape':<11}{'total min':>10}{'med':>7}{'own min':>9}{'med':>7}{'(gc)':>6}"
        f"{'model':>7}{'tool':>6}{'own/target':>11}{'peer':>8}{'peer/ours':>10}"
    )
    for shape in SHAPES:
        samples = results[shape]
        totals = [s.total for s in samples]
        owns = [s.own for s in samples]
        own = statistics.median(owns)
        total = statistics.median(totals)
        row = (
            f"{shape:<11}{min(totals):>10.1f}{total:>7.1f}{min(owns):>9.1f}{own:>7.1f}"
            f"{statistics.median(s.gc for s in samples):>6.1f}"
            f"{statistics.median(s.model for s in samples):>7.1f}"
            f"{statistics.median(s.tool for s in samples):>6.1f}"
            f"{own / TARGET_US:>10.2f}x"
        )
        if PEER_SHAPES.get(shape) in peer:
            theirs = statistics.median(peer[PEER_SHAPES[shape]])
            row += f"{theirs:>8.0f}{theirs / total:>9.1f}x"
        print(row)
    print(peer_note)
    print_translation(options.calls, options.repeats)

    if counted is None:
        return
    if isinstance(counted, str):
        print(f"instructions: not counted ({counted})")
        return
    counter, by_shape = counted
    print(
        f"instructions per tool call, thousands ({counter}; {INSTRUCTION_MESSAGES} messages,"
        f" long {max(1, INSTRUCTION_MESSAGES // 5)}, less a run with none)"
    )
    print(f"{'shape':<11}{'loop':>8}{'model':>8}{'tool':>8}{'own':>8}")
    for shape, parts in by_shape.items():
        print(
            f"{shape:<11}"
            + "".join(f"{parts[k] / 1000:>8.1f}" for k in ("loop", "model", "tool", "own"))
        )


Counted = tuple[str, dict[str, dict[str, float]]] | str | None
"""The counter and instructions per call by shape and part; or why not counted; or None
when not asked for."""


def figures(
    results: dict[str, list[Sample]], counted: Counted
) -> tuple[dict[str, float], list[str]]:
    """One run's figures for a before/after table, and how they were made."""
    out: dict[str, float] = {}
    for shape in SHAPES:
        owns = [s.own for s in results[shape]]
        out[f"{shape} total µs (median)"] = statistics.median(s.total for s in results[shape])
        out[f"{shape} own µs (min)"] = min(owns)
        out[f"{shape} own µs (median)"] = statistics.median(owns)
    notes = []
    if isinstance(counted, tuple):
        counter, by_shape = counted
        for shape, parts in by_shape.items():
            out[f"{shape} loop k instructions"] = parts["loop"] / 1000
            out[f"{shape} own k instructions"] = parts["own"] / 1000
        notes.append(f"instructions counted by {counter}")
    elif isinstance(counted, str):
        notes.append(f"instructions: not counted ({counted})")
    return out, notes


if __name__ == "__main__":
    main()
