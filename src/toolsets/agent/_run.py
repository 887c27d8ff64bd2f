"""One run of an agent tree for one user message (internal)."""

from __future__ import annotations

import contextvars
import dataclasses
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass, field
from typing import Any

from toolsets._auth import AuthCredential
from toolsets._content import Content
from toolsets._context import Cancellation, Invocation, ToolConfirmation
from toolsets._json import JsonValue
from toolsets._services import ArtifactService, MemoryService
from toolsets.agent._contents import History, HistoryCache
from toolsets.agent._credentials import CredentialStore
from toolsets.agent._events import Event
from toolsets.agent._session import Session, SessionService

__all__ = ["Answers", "Resume", "RunConfig", "RunContext", "current_run"]


@dataclass(frozen=True, kw_only=True)
class RunConfig:
    """Limits and options for one run."""

    max_llm_calls: int = 100
    """Model calls allowed in the whole run, across agents; then the run ends with an
    error event (``error_code="max_llm_calls"``)."""
    streaming: bool = False
    """Ask models to stream; partial events are yielded (and not recorded)."""
    scopes: frozenset[str] = frozenset()
    """What the caller may do; a tool whose ``required_scopes`` are not all here is not
    run (the model is told why)."""

    def __post_init__(self) -> None:
        if self.max_llm_calls < 1:
            raise ValueError("max_llm_calls must be at least 1")


@dataclass(frozen=True, kw_only=True)
class Answers:
    """What the caller submits to resume a paused run, by function call id."""

    confirmations: Mapping[str, ToolConfirmation] = field(default_factory=dict)
    """Answers to confirmation requests."""
    credentials: Mapping[str, AuthCredential] = field(default_factory=dict)
    """Answers to credential requests."""
    results: Mapping[str, JsonValue] = field(default_factory=dict)
    """Final results of long-running calls."""

    @property
    def ids(self) -> set[str]:
        """Every call id answered."""
        return {*self.confirmations, *self.credentials, *self.results}


@dataclass
class _Counter:
    llm_calls: int = 0


@dataclass(kw_only=True)
class RunContext:
    """Everything one run needs; agents pass it down, sub-invocations branch it."""

    app_name: str
    session: Session
    session_service: SessionService
    artifact_service: ArtifactService | None
    memory_service: MemoryService | None
    credential_store: CredentialStore
    invocation_id: str
    user_content: Content | None
    run_config: RunConfig
    agent_names: frozenset[str]
    """Every agent name in the tree being run (the valid transfer targets)."""
    branch: str | None = None
    cancellation: Cancellation = field(default_factory=Cancellation)
    resume: Resume | None = None
    agent_states: dict[str, Any] = field(default_factory=dict)
    paused: bool = False
    """Set when an agent paused the run: every enclosing agent stops."""
    ended: bool = False
    """Set when the run must stop (an error, a limit): every enclosing agent stops."""
    escalated: bool = False
    """Set when a tool escalated; the nearest enclosing loop agent breaks and clears it."""
    counter: _Counter = field(default_factory=_Counter)
    history_cache: HistoryCache | None = None
    """Where the main branch's histories come from and go back to between runs."""
    _invocations: dict[str, Invocation] = field(default_factory=dict)
    _histories: dict[str, History] = field(default_factory=dict)

    @property
    def stopped(self) -> bool:
        """True once nothing more may run."""
        return self.paused or self.ended

    def append(self, event: Event) -> Awaitable[Event]:
        """Record ``event`` in the session (partial events are not recorded)."""
        return self.session_service.append_event(self.session, event)

    def event(self, **fields: Any) -> Event:
        """A new event of this run."""
        return Event(invocation_id=self.invocation_id, branch=self.branch, **fields)

    def invocation(self, agent_name: str) -> Invocation:
        """The read-only view tools get (one per agent: its fields do not change during
        the run, and ``state`` is the live session state)."""
        view = self._invocations.get(agent_name)
        if view is None:
            view = self._invocations[agent_name] = self._make_invocation(agent_name)
        return view

    def history(self, agent_name: str) -> History:
        """What ``agent_name``'s model sees of this branch, kept up to date."""
        found = self._histories.get(agent_name)
        if found is None:
            cache = self.history_cache
            if cache is not None and self.branch is None:
                found = cache.take(self._history_key(agent_name), self.session.events)
            if found is None:
                found = History(agent_name, self.branch)
            self._histories[agent_name] = found
        return found

    def keep_histories(self) -> None:
        """Put this run's histories of the main branch back for the session's next run."""
        if self.history_cache is not None and self.branch is None:
            for agent_name, history in self._histories.items():
                self.history_cache.keep(self._history_key(agent_name), history)

    def _history_key(self, agent_name: str) -> tuple[str, ...]:
        return (self.session.user_id, self.session.id, agent_name)

    def _make_invocation(self, agent_name: str) -> Invocation:
        return Invocation(
            app_name=self.app_name,
            user_id=self.session.user_id,
            session_id=self.session.id,
            invocation_id=self.invocation_id,
            agent_name=agent_name,
            user_content=self.user_content,
            state=self.session.state,
            scopes=self.run_config.scopes,
            artifact_service=self.artifact_service,
            memory_service=self.memory_service,
            cancellation=self.cancellation,
        )

    def branched(
        self, branch: str, user_content: Content, agent_names: frozenset[str]
    ) -> RunContext:
        """A sub-invocation of another agent tree (whose names are ``agent_names``),
        sharing session, services, the model-call budget and cancellation."""
        return dataclasses.replace(
            self,
            branch=branch,
            user_content=user_content,
            agent_names=agent_names,
            resume=None,
            history_cache=None,
            agent_states={},
            paused=False,
            ended=False,
            escalated=False,
            _invocations={},
            _histories={},
        )


@dataclass(kw_only=True)
class Resume:
    """A paused run being resumed: the pausing event, the answers, the path to the agent."""

    event: Event
    answers: Answers
    path: list[str]
    """Agent names from the root to the agent that paused."""

    def next_on_path(self, agent_name: str) -> str | None:
        """The child of ``agent_name`` on the way to the paused agent (None if it is the
        paused agent itself or not on the path)."""
        if agent_name not in self.path:
            return None
        index = self.path.index(agent_name)
        return self.path[index + 1] if index + 1 < len(self.path) else None


current_run: contextvars.ContextVar[RunContext | None] = contextvars.ContextVar(
    "toolsets_current_run", default=None
)
"""The run a tool is called from (for tools that run agents themselves: AgentTool)."""
