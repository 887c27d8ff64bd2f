"""Events: what happens in a session, in order, and the requests a paused run makes."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from toolsets._auth import AuthConfig
from toolsets._content import Content, FunctionCall, FunctionResponse, Part, fast_init
from toolsets._context import EventActions
from toolsets._ids import new_id
from toolsets._json import JsonValue
from toolsets.models import Grounding, Usage

__all__ = [
    "ConfirmationRequest",
    "CredentialRequest",
    "Event",
    "LongRunningRequest",
    "PendingRequest",
]


@dataclass(frozen=True, kw_only=True)
class ConfirmationRequest:
    """A call waits for the user's approval."""

    function_call_id: str
    """The call waiting."""
    tool_name: str
    """The tool it calls."""
    args: Mapping[str, Any]
    """The arguments it would run with."""
    hint: str
    """What to ask the user."""
    payload: JsonValue = None
    """Extra data the tool attached to the request."""


@dataclass(frozen=True, kw_only=True)
class CredentialRequest:
    """A call waits for a credential."""

    function_call_id: str
    """The call waiting."""
    tool_name: str
    """The tool it calls."""
    args: Mapping[str, Any]
    """The arguments it would run with."""
    auth_config: AuthConfig
    """What is needed."""


@dataclass(frozen=True, kw_only=True)
class LongRunningRequest:
    """A long-running call has started; its final result is to be submitted."""

    function_call_id: str
    """The call waiting."""
    tool_name: str
    """The tool it called."""
    args: Mapping[str, Any]
    """The arguments it ran with."""
    interim: JsonValue
    """What the tool returned so far (e.g. a ticket id)."""


PendingRequest = ConfirmationRequest | CredentialRequest | LongRunningRequest
"""Something a paused run waits for."""


@fast_init
@dataclass(frozen=True, kw_only=True)
class Event:
    """One thing that happened in a session: a user message, a model turn, tool results.

    The actions of a tool-response event (state and artifact deltas, transfer, escalate)
    take effect when the event is appended to the session.
    """

    author: str
    """``"user"``, or the name of the agent that produced it."""
    invocation_id: str
    """The run it belongs to."""
    content: Content | None = None
    """What was said."""
    actions: EventActions = field(default_factory=EventActions)
    """What the event does to the session and the run."""
    partial: bool = False
    """A streamed chunk, shown but not recorded."""
    pending: tuple[PendingRequest, ...] = ()
    """What the run waits for; non-empty on the event that pauses it."""
    branch: str | None = None
    """The sub-invocation it belongs to (an agent run as a tool); None for the main one."""
    resume_state: Mapping[str, JsonValue] = field(default_factory=dict)
    """On a pausing event: where enclosing workflow agents were (e.g. a loop's
    iteration), so that resuming continues there."""
    usage: Usage | None = None
    """Tokens of the model call behind a model event."""
    grounding: Grounding | None = None
    """On a model event: what the provider's own tools (Google Search, URL context)
    grounded the answer on."""
    error_code: str | None = None
    """Set when the run ended with an error (a model error, a limit reached)."""
    error_message: str | None = None
    """The explanation of ``error_code``."""
    id: str = field(default_factory=new_id)
    """Unique id."""
    timestamp: float = field(default_factory=time.time)
    """When it happened (Unix time)."""

    @property
    def function_calls(self) -> tuple[FunctionCall, ...]:
        """The calls the model asks for in this event."""
        return () if self.content is None else self.content.function_calls

    @property
    def function_responses(self) -> tuple[FunctionResponse, ...]:
        """The tool results carried by this event."""
        if self.content is None:
            return ()
        return tuple(
            [p.function_response for p in self.content.parts if p.function_response is not None]
        )

    @property
    def code_executions(self) -> tuple[Part, ...]:
        """The code the model ran on its provider's servers in this event, and the
        results, in order (parts holding `ExecutableCode` or `CodeExecutionResult`)."""
        if self.content is None:
            return ()
        return tuple(
            [
                p
                for p in self.content.parts
                if p.executable_code is not None or p.code_execution_result is not None
            ]
        )

    @property
    def text(self) -> str:
        """The event's text (``""`` if none)."""
        return "" if self.content is None else self.content.text

    def is_final_response(self) -> bool:
        """True when this event ends the run's turn: a final answer, a tool result the
        agent was told to return as is, a pause, or an error."""
        if self.partial:
            return False
        if self.author != "user" and self.content is not None and self.content.role == "user":
            return False  # an agent's note to its model (a background call's news)
        if self.pending or self.error_code is not None:
            return True
        if self.actions.skip_summarization:
            return True
        return not self.function_calls and not self.function_responses
