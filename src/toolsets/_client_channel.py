"""Talking back to whoever called the tool: the client channel of a `ToolContext`.

A tool served to an MCP client (by `toolsets.mcp.McpServer`) can log to that client, ask
its user (elicitation), ask its model (sampling) and ask which roots it works in; the
server gives the call's context a `ClientChannel` that does it on the protocol the
client speaks. The core only knows this protocol: no MCP type appears here.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Protocol, TypeAlias, get_args

from toolsets._content import Content
from toolsets._json import JsonValue

__all__ = [
    "LOGGING_LEVELS",
    "LOG_LEVELS",
    "RESERVED_KEY_PREFIX",
    "Answer",
    "Capability",
    "ClientChannel",
    "ClientRequest",
    "Elicit",
    "Elicitation",
    "ListRoots",
    "LogLevel",
    "Root",
    "Sample",
    "Sampled",
    "check_keys",
]

LogLevel: TypeAlias = Literal[
    "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"
]
"""How severe a log message is (the syslog levels MCP uses), least severe first."""

LOG_LEVELS: tuple[LogLevel, ...] = get_args(LogLevel)
"""The log levels, least severe first."""

LOGGING_LEVELS: Mapping[str, int] = dict(
    zip(
        LOG_LEVELS,
        (  # debug, info, notice, warning, error, critical, alert, emergency
            logging.DEBUG,
            logging.INFO,
            logging.INFO,
            logging.WARNING,
            logging.ERROR,
            logging.CRITICAL,
            logging.CRITICAL,
            logging.CRITICAL,
        ),
        strict=True,
    )
)
"""MCP's log levels as the `logging` module's (not every one has its own there)."""

Capability: TypeAlias = Literal["elicitation", "sampling", "roots"]
"""What a client may be able to do for a tool: be asked to fill in a form
(``elicitation``), to have its model answer (``sampling``), or for its ``roots``."""

RESERVED_KEY_PREFIX = "toolsets/"
"""Questions whose keys start with this are toolsets' own (the server's confirmation of a
call is ``toolsets/confirm``): a tool may not ask under such a key, so that no answer
meant for one is ever taken for the other."""


def check_keys(requests: Mapping[str, object]) -> None:
    """Refuse the keys of ``requests`` that are toolsets' own.

    Raises:
        ValueError: a key starts with `RESERVED_KEY_PREFIX`.
    """
    for key in requests:
        if key.startswith(RESERVED_KEY_PREFIX):
            raise ValueError(
                f"the question key {key!r} is reserved: keys starting with "
                f"{RESERVED_KEY_PREFIX!r} are toolsets' own; name the question otherwise"
            )


@dataclass(frozen=True)
class Elicit:
    """Ask the user for some values, through a form the client shows (MCP elicitation).

    Args:
        message: What the user is asked.
        schema: The form: a JSON Schema object with flat properties (strings, numbers,
            booleans, enums; MCP's restricted subset). ``{}`` asks for a yes or no only.
        meta: Sent as the request's ``_meta`` (over MCP 2025-11-25; 2026-07-28's input
            requests carry none).
    """

    message: str
    schema: Mapping[str, Any] = field(default_factory=dict)
    meta: Mapping[str, Any] | None = None

    capability: ClassVar[Capability] = "elicitation"
    """The client capability it needs."""


@dataclass(frozen=True)
class Sample:
    """Ask the client's model for a completion (MCP sampling).

    Args:
        messages: The conversation: one user message as a string, or `Content` turns
            (``user`` and ``model`` roles; text and inline images or audio).
        max_tokens: The most tokens the answer may have.
        system_prompt: The system prompt the client may use.
        temperature: The sampling temperature, when it matters.
    """

    messages: str | Sequence[Content]
    max_tokens: int = 1000
    system_prompt: str | None = None
    temperature: float | None = None

    capability: ClassVar[Capability] = "sampling"
    """The client capability it needs."""


@dataclass(frozen=True)
class ListRoots:
    """Ask which roots (directories, repositories: URIs) the client works in."""

    capability: ClassVar[Capability] = "roots"
    """The client capability it needs."""


ClientRequest: TypeAlias = Elicit | Sample | ListRoots
"""One thing a tool can ask the client."""


@dataclass(frozen=True)
class Elicitation:
    """The user's answer to an `Elicit`."""

    action: Literal["accept", "decline", "cancel"]
    """``accept`` (``content`` holds the values), ``decline`` (said no) or ``cancel``
    (dismissed the question)."""
    content: Mapping[str, JsonValue] = field(default_factory=dict)
    """The values the user gave, when they accepted."""

    @property
    def accepted(self) -> bool:
        """Whether the user accepted."""
        return self.action == "accept"


@dataclass(frozen=True)
class Sampled:
    """The client model's answer to a `Sample`."""

    text: str
    """The answer's text (``""`` when it is not text)."""
    model: str = ""
    """The model that answered."""
    stop_reason: str | None = None
    """Why it stopped (``endTurn``, ``maxTokens``, ...), when the client said."""


@dataclass(frozen=True)
class Root:
    """A root the client works in."""

    uri: str
    """Its URI (``file://`` for a directory)."""
    name: str | None = None
    """Its name, when the client gave one."""


Answer: TypeAlias = Elicitation | Sampled | list[Root]
"""The answer to a `ClientRequest`: an `Elicitation`, a `Sampled`, or the roots."""


class ClientChannel(Protocol):
    """What a caller that can talk to the tool's client (an MCP server) gives the call's
    context. Tools use it through `ToolContext`: ``log``, ``ask``, ``report_progress``,
    ``close_stream``."""

    def supports(self, capability: Capability) -> bool:
        """Whether the client can be asked ``capability`` now."""
        ...

    async def log(
        self, level: LogLevel, message: str, data: Mapping[str, JsonValue], logger: str
    ) -> None:
        """Send a log message to the client (dropped below the level it asked for);
        ``data`` holds no ``message`` key."""
        ...

    async def ask(self, requests: Mapping[str, ClientRequest]) -> dict[str, Answer]:
        """The client's answer to each request, by key.

        Raises:
            MissingClientCapabilityError: the client cannot answer one of them.
            ValueError: a key is reserved (see `RESERVED_KEY_PREFIX`).
        """
        ...

    async def report_progress(
        self, progress: float, total: float | None, message: str | None
    ) -> None:
        """Tell the client how far the call has got (a no-op when it did not ask)."""
        ...

    async def close_stream(self) -> bool:
        """Close the stream the call answers on, if the client can resume it (and get
        the rest, the result too, when it reconnects): whether it was closed."""
        ...
