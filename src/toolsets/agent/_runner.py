"""The `Runner`: runs an agent tree for a user's message, and resumes paused runs."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, Protocol, runtime_checkable

from toolsets._auth import AuthCredential
from toolsets._content import Content, FunctionResponse, Part
from toolsets._context import ToolConfirmation
from toolsets._ids import new_id
from toolsets._json import JsonValue, copy_json
from toolsets._results import error_result
from toolsets._services import ArtifactService, MemoryService
from toolsets.agent._agents import BaseAgent, LlmAgent, unfinished_event
from toolsets.agent._contents import HistoryCache
from toolsets.agent._credentials import CredentialStore, InMemoryCredentialStore
from toolsets.agent._events import (
    ConfirmationRequest,
    CredentialRequest,
    Event,
    LongRunningRequest,
)
from toolsets.agent._run import Answers, Resume, RunConfig, RunContext
from toolsets.agent._session import (
    InMemorySessionService,
    Session,
    SessionService,
    SharesEventsForRuns,
)

__all__ = ["AsyncClosable", "Runner"]


@runtime_checkable
class AsyncClosable(Protocol):
    """An agent's events that the `Runner` closes when the run ends or stops (an async
    generator is one)."""

    async def aclose(self) -> None:
        """Release what producing the events holds."""
        ...


ABANDONED = "The user sent a new message instead of answering; this call did not complete."


def pause_event(session: Session) -> Event | None:
    """The event a session's run is paused on, if it is paused."""
    for event in reversed(session.events):
        if event.partial or event.branch is not None or _is_note(event):
            continue
        return event if event.pending else None
    return None


def _is_note(event: Event) -> bool:
    """Whether ``event`` is an agent's user-side note (what background calls it cancelled
    when its run paused): recorded after the pausing event, it does not end the pause."""
    return event.author != "user" and event.content is not None and event.content.role == "user"


class Runner:
    """Runs an agent tree for users' messages, over a session service.

    Args:
        agent: The root of the agent tree.
        app_name: The application's name (scopes sessions, state and artifacts).
        session_service: Where sessions live (default: in memory).
        artifact_service: Where tools' artifacts live (default: none).
        memory_service: Long-term memory tools can search (default: none).
        credential_store: Where credentials obtained for tools are kept (default: in
            memory, never in session state).
    """

    def __init__(
        self,
        agent: BaseAgent,
        *,
        app_name: str = "toolsets",
        session_service: SessionService | None = None,
        artifact_service: ArtifactService | None = None,
        memory_service: MemoryService | None = None,
        credential_store: CredentialStore | None = None,
    ) -> None:
        if agent.parent is not None:
            raise ValueError(f"agent {agent.name!r} is not the root of its tree")
        self.agent = agent
        self._agent_names = frozenset(a.name for a in agent.walk())
        self.app_name = app_name
        self.session_service: SessionService = session_service or InMemorySessionService()
        self._read_service: SessionService | None = None
        self._read: Callable[..., Awaitable[Session]] = self.session_service.get_session
        self.artifact_service = artifact_service
        self.memory_service = memory_service
        self.credential_store: CredentialStore = credential_store or InMemoryCredentialStore()
        self._histories = HistoryCache()

    async def create_session(
        self,
        *,
        user_id: str,
        session_id: str | None = None,
        state: Mapping[str, Any] | None = None,
    ) -> Session:
        """A new session for ``user_id``."""
        return await self.session_service.create_session(
            app_name=self.app_name, user_id=user_id, session_id=session_id, state=state
        )

    async def get_session(self, *, user_id: str, session_id: str) -> Session:
        """The session, with its events and state.

        Raises:
            SessionNotFoundError: there is none.
        """
        return await self.session_service.get_session(
            app_name=self.app_name, user_id=user_id, session_id=session_id
        )

    async def _session_for_run(self, user_id: str, session_id: str) -> Session:
        # A service may offer a cheaper read for runs, which only read the events it
        # holds (the in-memory one shares them instead of copying the whole history).
        service = self.session_service
        if service is not self._read_service:
            # A runtime-checkable isinstance looks up every member the protocol declares:
            # asked once per service, not on every run.
            self._read_service = service
            self._read = (
                service.session_for_run
                if isinstance(service, SharesEventsForRuns)
                else service.get_session
            )
        return await self._read(app_name=self.app_name, user_id=user_id, session_id=session_id)

    def _context(
        self,
        session: Session,
        invocation_id: str,
        user_content: Content | None,
        run_config: RunConfig | None,
    ) -> RunContext:
        return RunContext(
            app_name=self.app_name,
            session=session,
            session_service=self.session_service,
            artifact_service=self.artifact_service,
            memory_service=self.memory_service,
            credential_store=self.credential_store,
            invocation_id=invocation_id,
            user_content=user_content,
            run_config=run_config or RunConfig(),
            agent_names=self._agent_names,
            history_cache=self._histories,
        )

    async def run(
        self,
        *,
        user_id: str,
        session_id: str,
        message: str | Content,
        run_config: RunConfig | None = None,
    ) -> AsyncIterator[Event]:
        """Run the agents for one user message, yielding their events as they happen.

        If the session was paused, its unanswered calls are closed first (the model is
        told the user moved on). The run continues with the agent the conversation was
        last handed to, if the tree allows; otherwise with the root.

        Raises:
            SessionNotFoundError: no such session.
        """
        session = await self._session_for_run(user_id, session_id)
        paused = pause_event(session)
        if paused is not None:
            await self._abandon(session, paused)
        else:
            await self._close_unanswered(session)
        content = Content.user(message) if isinstance(message, str) else message
        invocation_id = new_id("inv_")
        await self.session_service.append_event(
            session, Event(author="user", invocation_id=invocation_id, content=content)
        )
        ctx = self._context(session, invocation_id, content, run_config)
        async with _Stopping(ctx, self._agent_to_run(session).run(ctx)) as events:
            async for event in events:
                yield event

    async def resume(
        self,
        *,
        user_id: str,
        session_id: str,
        confirmations: Mapping[str, ToolConfirmation | bool] | None = None,
        credentials: Mapping[str, AuthCredential] | None = None,
        results: Mapping[str, JsonValue] | None = None,
        run_config: RunConfig | None = None,
    ) -> AsyncIterator[Event]:
        """Continue a paused run with the user's answers, by function call id.

        Args:
            confirmations: Approvals (``True`` or a `ToolConfirmation`, which may carry a
                payload) and denials (``False``) of confirmation requests.
            credentials: Credentials for credential requests.
            results: Final results of long-running calls (e.g. the user's choice).

        Calls left unanswered stay pending: the run pauses again on them.

        Raises:
            SessionNotFoundError: no such session.
            ValueError: the session is not paused, an id is not pending, or an answer
                does not fit its request (nothing is changed then).
        """
        session = await self._session_for_run(user_id, session_id)
        paused = pause_event(session)
        if paused is None:
            raise ValueError(f"session {session_id!r} is not waiting for anything")
        answers = Answers(
            confirmations={
                k: v if isinstance(v, ToolConfirmation) else ToolConfirmation(confirmed=v)
                for k, v in (confirmations or {}).items()
            },
            credentials=dict(credentials or {}),
            results=dict(results or {}),
        )
        _check_answers(paused, answers)
        path = self.agent.path_to(paused.author)
        if path is None:
            raise ValueError(f"the paused agent {paused.author!r} is not in this tree")
        user_content = next(
            (
                e.content
                for e in session.events
                if e.author == "user" and e.invocation_id == paused.invocation_id
            ),
            None,
        )
        ctx = self._context(session, paused.invocation_id, user_content, run_config)
        ctx.resume = Resume(event=paused, answers=answers, path=path)
        ctx.agent_states = copy_json(dict(paused.resume_state))  # the stored event's own
        async with _Stopping(ctx, self.agent.run(ctx)) as events:
            async for event in events:
                yield event

    async def _abandon(self, session: Session, paused: Event) -> None:
        parts = tuple(
            Part(
                function_response=FunctionResponse(
                    id=request.function_call_id,
                    name=request.tool_name,
                    response=error_result(ABANDONED),
                )
            )
            for request in paused.pending
        )
        await self.session_service.append_event(
            session,
            Event(
                author=paused.author,
                invocation_id=paused.invocation_id,
                content=Content(role="tool", parts=parts),
            ),
        )

    async def _close_unanswered(self, session: Session) -> None:
        """Answer the calls of a run that stopped between recording them and their
        results (the process died, or a custom agent failed), so the conversation stays
        one that providers accept."""
        for event in reversed(session.events):
            if event.partial or event.branch is not None:
                continue
            content = event.content
            if content is not None and content.role == "model" and content.function_calls:
                await self.session_service.append_event(
                    session,
                    unfinished_event(
                        content.function_calls,
                        None,
                        author=event.author,
                        invocation_id=event.invocation_id,
                    ),
                )
            return

    def _agent_to_run(self, session: Session) -> BaseAgent:
        """The agent the conversation was last handed to, when only LLM agents stand
        between it and the root (a workflow agent restarts from the root)."""
        for event in reversed(session.events):
            if event.author == "user" or event.branch is not None or event.partial:
                continue
            agent = self.agent.find_agent(event.author)
            if agent is None:
                continue
            chain: BaseAgent | None = agent
            while chain is not None:
                if not isinstance(chain, LlmAgent):
                    return self.agent
                chain = chain.parent
            return agent
        return self.agent


class _Stopping:
    """The agent's events for the caller to pass on; on the way out, the run's flag is
    cancelled if the run ended early (cancelled, failed, or the caller stopped
    listening), and the agent's generator is closed rather than left to the collector.

    A context manager rather than a wrapping generator, which every event would have to
    pass through."""

    def __init__(self, ctx: RunContext, events: AsyncIterator[Event]) -> None:
        self._ctx = ctx
        self._events = events

    async def __aenter__(self) -> AsyncIterator[Event]:
        return self._events

    async def __aexit__(self, kind: type[BaseException] | None, *_: object) -> None:
        if kind is not None:
            self._ctx.cancellation.cancel("the run was stopped")
        # An agent's run is closed now (its cleanup runs here, not whenever it is
        # collected): usually an async generator, else any iterator with an aclose.
        events = self._events
        if isinstance(events, (AsyncGenerator, AsyncClosable)):  # generators first: cheaper
            await events.aclose()
        self._ctx.keep_histories()


def _check_answers(paused: Event, answers: Answers) -> None:
    requests = {r.function_call_id: r for r in paused.pending}
    kinds: list[tuple[Mapping[str, Any], type, str]] = [
        (answers.confirmations, ConfirmationRequest, "confirmations"),
        (answers.credentials, CredentialRequest, "credentials"),
        (answers.results, LongRunningRequest, "results"),
    ]
    pending = ", ".join(f"{i} ({type(r).__name__})" for i, r in requests.items())
    for given, kind, argument in kinds:
        for call_id in given:
            request = requests.get(call_id)
            if request is None:
                raise ValueError(f"no call {call_id!r} is pending; pending: {pending}")
            if not isinstance(request, kind):
                raise ValueError(
                    f"call {call_id!r} waits for a {type(request).__name__}, which "
                    f"{argument}= does not answer"
                )
    if not answers.ids:
        raise ValueError(f"no answers given; pending: {pending}")
