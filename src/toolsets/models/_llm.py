"""The model side of the loop: the `Llm` protocol and what a model answers."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from toolsets._content import Content
from toolsets._errors import ToolDefinitionError
from toolsets._results import INVALID_JSON_KEY
from toolsets._tool import LlmRequest, ServerTool

__all__ = [
    "INVALID_JSON_KEY",
    "FinishReason",
    "Grounding",
    "GroundingSource",
    "Llm",
    "LlmResponse",
    "Usage",
    "check_server_tools",
]

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
class GroundingSource:
    """A web page an answer is grounded on."""

    uri: str
    """Where it is (for Google Search, a redirect URL to the page)."""
    title: str | None = None
    """Its title (for Google Search, the site's domain)."""


@dataclass(frozen=True, kw_only=True)
class Grounding:
    """What a provider-run tool found to ground an answer on (Gemini's
    ``groundingMetadata``, and ``urlContextMetadata``)."""

    queries: tuple[str, ...] = ()
    """The web searches the model ran."""
    sources: tuple[GroundingSource, ...] = ()
    """The pages the answer draws on, in the provider's order."""
    search_entry_point: str | None = None
    """HTML of the search suggestions which Google's terms require an application to
    show beside a Google-Search-grounded answer."""
    raw: Mapping[str, Any] = field(default_factory=dict)
    """The provider's metadata as sent (supports per answer segment, URL retrieval
    statuses, ...)."""


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
    grounding: Grounding | None = None
    """What the provider's own tools (web search, URL fetching) grounded the answer on."""


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


def check_server_tools(
    request: LlmRequest, *, model: str, provider: str | None
) -> list[ServerTool]:
    """The request's provider-run tools, when all are ``provider``'s.

    Raises:
        ToolDefinitionError: a tool runs on another provider's servers (``tool_name``
            names it; the message names the model too).
    """
    for tool in request.server_tools.values():
        if tool.provider != provider:
            raise ToolDefinitionError(
                f"tool {tool.name!r} runs on {tool.provider}'s servers and only a "
                f"{tool.provider} model can offer it; model {model!r} cannot",
                tool_name=tool.name,
            )
    return list(request.server_tools.values())
