"""`ScriptedModel`: a model that replays a script, for tests and offline examples."""

from __future__ import annotations

import inspect
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from typing import TypeAlias

from toolsets._content import Content, FunctionCall, Part
from toolsets._errors import ToolsetError
from toolsets._json import copy_json
from toolsets._tool import LlmRequest
from toolsets.models._llm import FinishReason, LlmResponse

__all__ = ["ScriptExhaustedError", "ScriptedModel", "Step"]

Step: TypeAlias = str | FunctionCall | Sequence[FunctionCall] | Content | LlmResponse
"""One model turn: a text answer, one or several calls, a whole content, or a response."""


class ScriptExhaustedError(ToolsetError):
    """The scripted model was called more often than its script has steps."""


def _response(step: Step) -> LlmResponse:
    if isinstance(step, LlmResponse):
        return step
    if isinstance(step, str):
        return LlmResponse(
            content=Content(role="model", parts=(Part(text=step),)), finish_reason="stop"
        )
    if isinstance(step, FunctionCall):
        step = [step]
    if isinstance(step, Content):
        content = step
    else:
        content = Content(role="model", parts=tuple([Part(function_call=c) for c in step]))
    reason: FinishReason = "tool_calls" if content.function_calls else "stop"
    return LlmResponse(content=content, finish_reason=reason)


def _chunks(text: str) -> list[str]:
    return re.findall(r"\S+\s*|\s+", text) or [text]


class ScriptedModel:
    """A model whose answers are given in advance, or computed by a function.

    Args:
        steps: The answers, in order: text, a `FunctionCall`, a list of them, a
            `Content`, or an `LlmResponse` (e.g. with an ``error_code``).
        respond: Instead of steps, a function of the request returning a step (sync or
            async), for answers that depend on what the model is sent.
        name: The model's name.
        record: Keep a copy of every request in ``requests`` (turn off to measure the
            loop without the copying).

    Every request is kept in ``requests`` (a copy), for tests to inspect. Streaming
    yields the text word by word as partial responses, then the whole response.
    """

    def __init__(
        self,
        steps: Iterable[Step] = (),
        *,
        respond: Callable[[LlmRequest], Step | Awaitable[Step]] | None = None,
        name: str = "scripted",
        record: bool = True,
    ) -> None:
        self._steps = list(steps)
        if respond is not None and self._steps:
            raise ValueError("give steps or respond, not both")
        self._respond = respond
        self._name = name
        self._record = record
        self._calls = 0
        self.requests: list[LlmRequest] = []
        """Every request received, oldest first."""

    @property
    def model(self) -> str:
        return self._name

    @property
    def remaining(self) -> int:
        """Steps not yet played."""
        return len(self._steps)

    async def generate(
        self, request: LlmRequest, *, stream: bool = False
    ) -> AsyncIterator[LlmResponse]:
        self._calls += 1
        if self._record:
            self.requests.append(
                LlmRequest(
                    model=request.model,
                    contents=list(request.contents),
                    system_instruction=request.system_instruction,
                    config=copy_json(request.config),
                    tools=dict(request.tools),
                    declarations=dict(request.declarations),
                )
            )
        if self._respond is not None:
            step = self._respond(request)
            if inspect.isawaitable(step):
                step = await step
        elif self._steps:
            step = self._steps.pop(0)
        else:
            raise ScriptExhaustedError(
                f"the scripted model was called {self._calls} times but had only "
                f"{self._calls - 1} steps"
            )
        response = _response(step)
        if stream and response.content is not None and response.content.text:
            for chunk in _chunks(response.content.text):
                yield LlmResponse(
                    content=Content(role="model", parts=(Part(text=chunk),)), partial=True
                )
        yield response
