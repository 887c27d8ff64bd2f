"""pydantic-ai in the shapes of benchmarks/agent_overhead.py, run by it in the peer's venv.

Run: python pydantic_ai_overhead.py MESSAGES CALLS REPEATS
Prints one JSON line: pydantic-ai-slim's version and µs per tool call by shape.
"""

from __future__ import annotations

import gc
import json
import sys
import time
from importlib.metadata import version
from typing import Any

import anyio
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

SHAPES = ("sequential", "batched", "long")


def returns(message: ModelMessage) -> int:
    if not isinstance(message, ModelRequest):
        return 0
    return sum(isinstance(p, ToolReturnPart) for p in message.parts)


def sequential(calls: int) -> Any:
    def respond(history: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        since_user = 0
        for message in reversed(history):
            if isinstance(message, ModelRequest) and any(
                isinstance(p, UserPromptPart) for p in message.parts
            ):
                break
            since_user += returns(message)
        if since_user < calls:
            return ModelResponse(parts=[ToolCallPart("noop", {})])
        return ModelResponse(parts=[TextPart("done")])

    return respond


def batched(calls: int) -> Any:
    def respond(history: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if any(isinstance(p, UserPromptPart) for p in history[-1].parts):
            return ModelResponse(parts=[ToolCallPart("noop", {}) for _ in range(calls)])
        return ModelResponse(parts=[TextPart("done")])

    return respond


async def noop() -> None:
    """Do nothing."""
    return None


async def measure(shape: str, count: int, calls: int) -> float:
    """µs per tool call of ``count`` user messages in ``shape``."""
    agent = Agent(FunctionModel(batched(calls) if shape == "batched" else sequential(calls)))
    agent.tool_plain(sequential=False)(noop)

    history = None
    total_calls = 0
    gc.collect()
    start = time.perf_counter_ns()
    for _ in range(count):
        result = await agent.run("go", message_history=history)
        total_calls += sum(returns(m) for m in result.new_messages())
        if shape == "long":
            history = result.all_messages()
    elapsed = time.perf_counter_ns() - start
    assert total_calls == count * calls, total_calls
    return elapsed / total_calls / 1e3


async def main() -> None:
    messages, calls, repeats = (int(a) for a in sys.argv[1:4])
    shapes: dict[str, list[float]] = {}
    for shape in SHAPES:
        await measure(shape, 1, calls)
        shapes[shape] = [await measure(shape, messages, calls) for _ in range(repeats)]
    print(json.dumps({"version": version("pydantic-ai-slim"), "shapes": shapes}))


if __name__ == "__main__":
    anyio.run(main)
