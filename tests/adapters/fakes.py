"""The frameworks' own scripted models, for the adapters' tests and the consumers'
contract (``tests/consumers``): an openai-agents ``Model`` playing scripted turns, and a
pydantic-ai ``FunctionModel`` doing the same."""

from __future__ import annotations

import copy
import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
from agents import Agent, RunConfig, Runner, RunResult
from agents.items import ModelResponse, TResponseInputItem
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.messages import ModelResponse as PaiModelResponse
from pydantic_ai.models.function import AgentInfo, FunctionModel

NO_TRACING = RunConfig(tracing_disabled=True)
TIMEOUT = 30.0
"""Seconds a framework's run may take in a test before it counts as hung."""

# -- openai-agents ------------------------------------------------------------------------


@dataclass
class Call:
    """A function call the scripted model makes: ``args`` is an object, or raw text."""

    name: str
    args: dict[str, Any] | str
    id: str


@dataclass
class Scripted(Model):
    """An openai-agents ``Model`` playing ``steps`` in order: a list of `Call` (one model
    turn calling tools) or a final text. It keeps what it was sent in ``inputs``."""

    steps: list[list[Call] | str]
    inputs: list[list[TResponseInputItem]] = field(default_factory=list)

    async def get_response(
        self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
    ) -> ModelResponse:
        self.inputs.append(copy.deepcopy(input if isinstance(input, list) else []))
        step = self.steps.pop(0)
        if isinstance(step, str):
            text = ResponseOutputText(text=step, type="output_text", annotations=[])
            message = ResponseOutputMessage(
                id="msg", type="message", role="assistant", status="completed", content=[text]
            )
            return ModelResponse(output=[message], usage=Usage(), response_id=None)
        calls = [
            ResponseFunctionToolCall(
                type="function_call",
                id=c.id,
                call_id=c.id,
                name=c.name,
                arguments=c.args if isinstance(c.args, str) else json.dumps(c.args),
            )
            for c in step
        ]
        return ModelResponse(output=list(calls), usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("the tests do not stream")

    def output(self, call_id: str) -> Any:
        """What the model was last sent as the output of the call ``call_id``."""
        for items in reversed(self.inputs):
            for item in items:
                if item.get("type") == "function_call_output" and item.get("call_id") == call_id:
                    output = item["output"]
                    try:
                        return json.loads(output) if isinstance(output, str) else output
                    except ValueError:
                        return output
        raise AssertionError(f"the model never saw an output for {call_id}")


async def run(agent: Agent[Any], given: Any, **options: Any) -> RunResult:
    with anyio.fail_after(TIMEOUT):
        return await Runner.run(
            agent, given, run_config=options.pop("config", NO_TRACING), **options
        )


# -- pydantic-ai --------------------------------------------------------------------------

Turn = list[ToolCallPart] | str


def scripted(*turns: Turn) -> tuple[FunctionModel, list[list[ModelMessage]]]:
    """A FunctionModel answering each request with the next turn (tool calls or text),
    and the message histories it was sent."""
    script = list(turns)
    seen: list[list[ModelMessage]] = []

    def respond(messages: list[ModelMessage], info: AgentInfo) -> PaiModelResponse:
        seen.append(list(messages))
        turn = script.pop(0)
        if isinstance(turn, str):
            return PaiModelResponse(parts=[TextPart(turn)])
        return PaiModelResponse(parts=list(turn))

    return FunctionModel(respond), seen


def calling(name: str, call_id: str = "c1", **args: Any) -> list[ToolCallPart]:
    return [ToolCallPart(name, args, tool_call_id=call_id)]


def returned(messages: Sequence[ModelMessage]) -> dict[str, Any]:
    """What each tool call returned, by call id."""
    return {
        part.tool_call_id: part.content
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart) and part.outcome != "retried"
    }
