"""The model side of the loop: the `Llm` protocol and what a model answers."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from toolsets._content import Content
from toolsets._tool import LlmRequest

__all__ = ["INVALID_JSON_KEY", "FinishReason", "Llm", "LlmResponse", "Usage"]

INVALID_JSON_KEY = "_invalid_json"
"""A model that receives a call's arguments as text it cannot read as a JSON object hands
them on as ``{INVALID_JSON_KEY: text}``; the agent loop then tells the model what was
wrong with its text (malformed, not an object, nested too deep) instead of running the
tool."""

FinishReason = Literal["stop", "tool_calls", "length", "content_filter", "error", "other"]


@dataclass(frozen=True, kw_only=True)
class Usage:
    """Tokens counted by the provider for one model call."""

    input_tokens: int = 0
    """Tokens in the request."""
    output_tokens: int = 0
    """Tokens generated."""

    @property
    def total_tokens(self) -> int:
        """Both together."""
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True, kw_only=True)
class LlmResponse:
    """One answer from a model, or, when streaming, one chunk of it.

    A stream is a run of ``partial=True`` chunks (text deltas, for display) followed by
    one ``partial=False`` response holding the whole answer; only that one is recorded.
    """

    content: Content | None = None
    """What the model said (text and/or function calls), role ``model``."""
    partial: bool = False
    """True for a streamed chunk; the final, complete response has False."""
    finish_reason: FinishReason | None = None
    """Why the model stopped, when it says."""
    usage: Usage | None = None
    """Token counts, when the provider reports them."""
    model_version: str | None = None
    """The model that answered, as the provider names it."""
    error_code: str | None = None
    """Set when the provider answered with an error instead of content."""
    error_message: str | None = None
    """The provider's explanation of the error."""
    retry_after: float | None = None
    """Seconds the provider asks to wait before trying again (its ``Retry-After``), on
    a rate-limit or overload error that says."""


@runtime_checkable
class Llm(Protocol):
    """A language model: what the agent loop calls, and what answers an MCP server's
    sampling requests.

    ``generate`` is an async generator: without streaming it yields exactly one
    complete response; with ``stream=True`` it yields partial chunks, then the complete
    response. Implementations translate the request's declarations into their
    provider's tool format and map provider-legal names back to the tools' own.

    The request's list may be changed, but the `Content` values in it are the session's
    recorded turns, shared with its store: a model reads them and builds its own (the
    arguments and results they hold are not to be changed in place).
    """

    @property
    def model(self) -> str:
        """The model's name, e.g. ``gpt-4.1-mini`` or ``scripted``."""
        ...

    def generate(self, request: LlmRequest, *, stream: bool = False) -> AsyncIterator[LlmResponse]:
        """Answer ``request``."""
        ...
