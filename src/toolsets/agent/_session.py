"""Sessions: a conversation's events and state, and the service that stores them.

State keys are scoped by prefix: ``app:`` keys are shared by every session of the app,
``user:`` keys by every session of the user, ``temp:`` keys live only for the current
run (never stored), and other keys belong to the session.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from toolsets._content import Content, FunctionCall, FunctionResponse, Part
from toolsets._context import TEMP_PREFIX, EventActions
from toolsets._errors import ToolsetError
from toolsets._json import JSON_ATOMS, copy_json
from toolsets.agent._events import Event

__all__ = [
    "APP_PREFIX",
    "TEMP_PREFIX",
    "USER_PREFIX",
    "InMemorySessionService",
    "Session",
    "SessionNotFoundError",
    "SessionService",
    "SharesEventsForRuns",
]

APP_PREFIX = "app:"
USER_PREFIX = "user:"


class SessionNotFoundError(ToolsetError, LookupError):
    """No session with that id exists for that app and user."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        """The id that was asked for."""
        super().__init__(f"no session {session_id!r}; create it first (Runner.create_session)")


@dataclass(kw_only=True)
class Session:
    """One conversation: its events, in order, and its state (all scopes merged)."""

    id: str
    """The session's id."""
    app_name: str
    """The application."""
    user_id: str
    """The user."""
    state: dict[str, Any] = field(default_factory=dict)
    """The state: app, user and session keys merged (and temp keys during a run)."""
    events: list[Event] = field(default_factory=list)
    """Everything recorded, oldest first."""
    last_update_time: float = field(default_factory=time.time)
    """When the last event was appended (Unix time)."""


@runtime_checkable
class SessionService(Protocol):
    """Stores sessions; `append_event` is the one way state changes.

    A service may also implement `SharesEventsForRuns` (``session_for_run``), a cheaper
    read for runs; without it, runs read sessions with `get_session`.
    """

    async def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str | None = None,
        state: Mapping[str, Any] | None = None,
    ) -> Session:
        """A new session (with a generated id unless one is given)."""
        ...

    async def get_session(self, *, app_name: str, user_id: str, session_id: str) -> Session:
        """The session, with its events and merged state.

        Raises:
            SessionNotFoundError: there is none.
        """
        ...

    async def list_sessions(self, *, app_name: str, user_id: str) -> list[str]:
        """The ids of the user's sessions."""
        ...

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        """Remove the session (no error if there is none)."""
        ...

    async def append_event(self, session: Session, event: Event) -> Event:
        """Record ``event`` (unless partial) and apply its state delta, to the store and
        to ``session``."""
        ...


def split_delta(delta: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """A state delta split into its app, user and session parts (temp keys dropped)."""
    app: dict[str, Any] = {}
    user: dict[str, Any] = {}
    own: dict[str, Any] = {}
    for key, value in delta.items():
        if key.startswith(TEMP_PREFIX):
            continue
        if key.startswith(APP_PREFIX):
            app[key] = value
        elif key.startswith(USER_PREFIX):
            user[key] = value
        else:
            own[key] = value
    return app, user, own


def without_temp(event: Event) -> Event:
    """The event as stored: ``temp:`` keys removed from its state delta."""
    delta = event.actions.state_delta
    if not delta or not any(key.startswith(TEMP_PREFIX) for key in delta):
        return event
    kept = {k: v for k, v in delta.items() if not k.startswith(TEMP_PREFIX)}
    actions = dataclasses.replace(event.actions, state_delta=kept)
    return dataclasses.replace(event, actions=actions)


def _copy_part(part: Part) -> Part:
    call = part.function_call
    if call is not None:
        return Part(
            function_call=FunctionCall(name=call.name, args=copy_json(dict(call.args)), id=call.id),
            provider_data=part.provider_data,  # a model's opaque data, sent back as it is
        )
    answer = part.function_response
    if answer is not None and not isinstance(answer.response, JSON_ATOMS):
        return Part(
            function_response=FunctionResponse(
                name=answer.name,
                response=copy_json(answer.response),
                id=answer.id,
                will_continue=answer.will_continue,
            )
        )
    return part  # text, data and atom results hold only immutable values


def _copy_content(content: Content) -> Content:
    parts: list[Part] = []
    copied = False
    for part in content.parts:
        new = _copy_part(part)
        copied = copied or new is not part
        parts.append(new)
    return Content(role=content.role, parts=tuple(parts)) if copied else content


def copy_event(event: Event) -> Event:
    """A copy sharing nothing mutable with ``event`` (actions, arguments, results), so
    what a caller does to one never reaches the other."""
    actions = event.actions
    fields = dict(vars(event))
    if event.content is not None:
        fields["content"] = _copy_content(event.content)
    fields["actions"] = EventActions(
        state_delta=copy_json(actions.state_delta) if actions.state_delta else {},
        artifact_delta=dict(actions.artifact_delta),
        skip_summarization=actions.skip_summarization,
        transfer_to_agent=actions.transfer_to_agent,
        escalate=actions.escalate,
        long_running=actions.long_running,
        requested_auth_configs=dict(actions.requested_auth_configs),
        requested_tool_confirmations=dict(actions.requested_tool_confirmations),
    )
    if event.pending:
        fields["pending"] = tuple(
            dataclasses.replace(request, args=copy_json(dict(request.args)))
            for request in event.pending
        )
    fields["resume_state"] = copy_json(dict(event.resume_state)) if event.resume_state else {}
    return Event(**fields)


@dataclass
class _Stored:
    session: Session  # its state holds the session's own keys only


@runtime_checkable
class SharesEventsForRuns(Protocol):
    """What a `SessionService` may also offer: the session as a `Runner` reads it for a
    run, whose events it may share rather than copy (a run only reads them; new ones go
    through ``append_event``). A `Runner` uses it when its service has it (as
    `InMemorySessionService` does), else `SessionService.get_session`."""

    async def session_for_run(self, *, app_name: str, user_id: str, session_id: str) -> Session:
        """The session for one run, as `SessionService.get_session` but sharing its events.

        Raises:
            SessionNotFoundError: there is none.
        """
        ...


class InMemorySessionService:
    """A `SessionService` in this process's memory."""

    def __init__(self) -> None:
        self._sessions: dict[tuple[str, str, str], _Stored] = {}
        self._app_state: dict[str, dict[str, Any]] = {}
        self._user_state: dict[tuple[str, str], dict[str, Any]] = {}

    def _merged(self, stored: Session, *, copy_events: bool = True) -> Session:
        state = {
            **self._app_state.get(stored.app_name, {}),
            **self._user_state.get((stored.app_name, stored.user_id), {}),
            **stored.state,
        }
        return Session(
            id=stored.id,
            app_name=stored.app_name,
            user_id=stored.user_id,
            state=copy_json(state),
            events=[copy_event(e) for e in stored.events] if copy_events else [*stored.events],
            last_update_time=stored.last_update_time,
        )

    def _apply(
        self, app_name: str, user_id: str, own: dict[str, Any], delta: Mapping[str, Any]
    ) -> None:
        if not delta:
            return
        app, user, session = split_delta(delta)
        if app:
            self._app_state.setdefault(app_name, {}).update(copy_json(app))
        if user:
            self._user_state.setdefault((app_name, user_id), {}).update(copy_json(user))
        if session:
            own.update(copy_json(session))

    async def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str | None = None,
        state: Mapping[str, Any] | None = None,
    ) -> Session:
        sid = session_id if session_id is not None else uuid.uuid4().hex
        key = (app_name, user_id, sid)
        if key in self._sessions:
            raise ValueError(f"session {sid!r} already exists")
        stored = Session(id=sid, app_name=app_name, user_id=user_id)
        self._apply(app_name, user_id, stored.state, state or {})
        self._sessions[key] = _Stored(stored)
        return self._merged(stored)

    async def get_session(self, *, app_name: str, user_id: str, session_id: str) -> Session:
        stored = self._sessions.get((app_name, user_id, session_id))
        if stored is None:
            raise SessionNotFoundError(session_id)
        return self._merged(stored.session)

    async def session_for_run(self, *, app_name: str, user_id: str, session_id: str) -> Session:
        """The session as a `Runner` reads it for one run: its state copied, but its events
        the stored ones themselves, which a run only reads (new ones go through
        `append_event`). Copying them all, as `get_session` does, would cost each message
        the length of the whole conversation.

        Raises:
            SessionNotFoundError: there is none.
        """
        stored = self._sessions.get((app_name, user_id, session_id))
        if stored is None:
            raise SessionNotFoundError(session_id)
        return self._merged(stored.session, copy_events=False)

    async def list_sessions(self, *, app_name: str, user_id: str) -> list[str]:
        return [sid for (app, user, sid) in self._sessions if app == app_name and user == user_id]

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        self._sessions.pop((app_name, user_id, session_id), None)

    async def append_event(self, session: Session, event: Event) -> Event:
        if event.partial:
            return event
        # The live session sees every key, temp ones included, for the rest of the run.
        delta = event.actions.state_delta
        if delta:
            session.state.update(delta)
        session.events.append(event)
        session.last_update_time = event.timestamp
        stored = self._sessions.get((session.app_name, session.user_id, session.id))
        if stored is None:
            raise SessionNotFoundError(session.id)
        # Stored as is: readers get copies (get_session), so nothing they do reaches it.
        kept = event
        if delta:
            kept = without_temp(event)
            self._apply(
                session.app_name, session.user_id, stored.session.state, kept.actions.state_delta
            )
        stored.session.events.append(kept)
        stored.session.last_update_time = event.timestamp
        return event
