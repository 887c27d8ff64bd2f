"""The agent loop's own overhead per tool call: a no-op tool driven by a scripted model.

Everything but the loop is as cheap as it gets (the model is a script, the tool does
nothing), so the time per call is what the loop itself costs: building the request,
dispatching through the gates and callbacks, recording events, applying actions.

Run: python benchmarks/agent_overhead.py [--messages N] [--calls K]

Prints microseconds per tool call for three shapes of conversation:
  sequential  K model turns of one call each, per user message
  batched     one model turn with K concurrency-safe calls, per user message
  long        one session growing to N*K calls (the history is rebuilt each turn)
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import anyio

from toolsets import FunctionCall, tool
from toolsets.agent import LlmAgent, LlmRequest, Runner, ScriptedModel, Step

TARGET_US = 100.0


@tool(read_only=True, run_in_thread=False)
def noop() -> None:
    """Do nothing."""
    return None


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


async def measure(
    respond: Callable[[LlmRequest], Step], messages: int, calls: int, one_session: bool
) -> float:
    """Microseconds per tool call over ``messages`` user messages."""
    runner = Runner(
        LlmAgent(
            "bench",
            ScriptedModel(respond=respond, record=False),
            tools=[noop],
            max_iterations=calls + 2,
        )
    )
    session = await runner.create_session(user_id="u")
    total_calls = 0
    start = time.perf_counter()
    for _ in range(messages):
        if not one_session:
            session = await runner.create_session(user_id="u")
        async for event in runner.run(user_id="u", session_id=session.id, message="go"):
            total_calls += len(event.function_responses)
    elapsed = time.perf_counter() - start
    assert total_calls == messages * calls, total_calls
    return elapsed / total_calls * 1e6


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=200)
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=5)
    options = parser.parse_args()

    shapes = {
        "sequential": (sequential(options.calls), False),
        "batched": (batched(options.calls), False),
        "long": (sequential(options.calls), True),
    }
    print(
        f"agent loop overhead per tool call ({options.messages} messages x {options.calls} calls,"
        f" median of {options.repeats}); target < {TARGET_US:.0f} µs"
    )
    print(f"{'shape':<12}{'µs/call':>10}{'vs target':>12}")
    for name, (respond, one_session) in shapes.items():
        messages = options.messages if not one_session else max(1, options.messages // 10)
        runs = [
            await measure(respond, messages, options.calls, one_session)
            for _ in range(options.repeats)
        ]
        median = statistics.median(runs)
        print(f"{name:<12}{median:>10.1f}{median / TARGET_US:>11.2f}x")


if __name__ == "__main__":
    anyio.run(main)
