"""The context a tool runs in: who is calling, the session state, and the actions it sets.

An `Invocation` is the read-only view of one agent run (app, user, session, agent, the
user's message, state, the caller's scopes, services). A `ToolContext` is one tool call
inside it: the invocation plus the call's id, its cancellation flag and the
`EventActions` the tool sets. Outside any agent, ``ToolContext()`` gives a standalone context.
A call served to an MCP client also has a `ClientChannel` to it: ``log``, ``ask`` (and
``elicit``, ``sample``, ``list_roots``), ``report_progress``, ``close_stream``.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import anyio

from toolsets._auth import AuthConfig, AuthCredential
from toolsets._client_channel import (
    LOGGING_LEVELS,
    Answer,
    Capability,
    ClientChannel,
    ClientRequest,
    Elicit,
    Elicitation,
    ListRoots,
    LogLevel,
    Root,
    Sample,
    Sampled,
    check_keys,
)
from toolsets._content import Content, Part
from toolsets._errors import MissingClientCapabilityError, ServiceNotConfiguredError
from toolsets._ids import new_id
from toolsets._json import JsonValue
from toolsets._services import ArtifactService, MemoryEntry, MemoryService

__all__ = [
    "TEMP_PREFIX",
    "Cancellation",
    "EventActions",
    "Identity",
    "Invocation",
    "ProgressReporter",
    "State",
    "ToolConfirmation",
    "ToolContext",
    "state_writes",
]

TEMP_PREFIX = "temp:"
"""State keys that live only for the current run: never kept beyond it (an agent
loop's session does not store them, nor does a server or an adapter keep them)."""


class Cancellation:
    """A flag that tells a tool its call (or its whole run) was cancelled.

    Async tools are cancelled by anyio directly; this is for work anyio cannot interrupt,
    such as a sync function running in a worker thread, which can poll ``cancelled``.
    A call's flag is the child of its run's: cancelling the run cancels every call.
    Call ``cancel`` from the event loop's thread.
    """

    def __init__(self, parent: Cancellation | None = None) -> None:
        # The link to the parent is read lazily: most calls never look at their flag, so
        # nothing is registered with the parent unless someone waits.
        self._parent = parent
        self._cancelled = False
        self._reason: str | None = None
        self._event: anyio.Event | None = None
        self._waiting_children: set[Cancellation] = set()

    @property
    def cancelled(self) -> bool:
        """True once this flag or an ancestor was cancelled. Safe to read from any
        thread."""
        return self._cancelled or (self._parent is not None and self._parent.cancelled)

    @property
    def reason(self) -> str | None:
        """Why it was cancelled (its own reason first, else its ancestor's)."""
        if self._cancelled:
            return self._reason
        return self._parent.reason if self._parent is not None else None

    def cancel(self, reason: str | None = None) -> None:
        """Mark as cancelled, with its descendants (idempotent; the first reason wins)."""
        if self._cancelled:
            return
        self._cancelled = True
        self._reason = reason
        self._wake()

    def _wake(self) -> None:
        if self._event is not None:
            self._event.set()
        for child in list(self._waiting_children):
            child._wake()

    async def wait(self) -> None:
        """Return once cancelled (by this flag or an ancestor)."""
        if self.cancelled:
            return
        if self._event is None:
            self._event = anyio.Event()
        chain: list[tuple[Cancellation, Cancellation]] = []
        node = self
        while node._parent is not None:
            chain.append((node._parent, node))
            node._parent._waiting_children.add(node)
            node = node._parent
        try:
            await self._event.wait()
        finally:
            for parent, child in chain:
                parent._waiting_children.discard(child)


@dataclass(frozen=True, kw_only=True)
class ToolConfirmation:
    """A request for the user's consent to a call, or the user's answer to one."""

    hint: str = ""
    """What the user is asked, e.g. ``"Delete 3 files?"``."""
    confirmed: bool = False
    """The user's decision."""
    payload: JsonValue = None
    """Extra data the user sent with the answer (e.g. edited arguments)."""


@dataclass(kw_only=True)
class EventActions:
    """What a tool asks the agent loop to do once the call returns."""

    state_delta: dict[str, Any] = field(default_factory=dict)
    """Session state keys to set."""
    artifact_delta: dict[str, int] = field(default_factory=dict)
    """Artifacts saved during the call: file name → new version."""
    skip_summarization: bool = False
    """End the turn with the tool's response as the answer, without another model call."""
    transfer_to_agent: str | None = None
    """Hand the rest of the invocation to the agent of this name."""
    escalate: bool = False
    """Stop, and break out of an enclosing loop agent."""
    long_running: bool = False
    """The call is not finished: its result will be submitted later."""
    requested_auth_configs: dict[str, AuthConfig] = field(default_factory=dict)
    """Credentials requested from the user: function call id → what is needed."""
    requested_tool_confirmations: dict[str, ToolConfirmation] = field(default_factory=dict)
    """Confirmations requested from the user: function call id → the request."""


_MUTABLE = (dict, list, set, bytearray)


class State(Mapping[str, Any]):
    """The session state as a tool sees it: reads see the tool's own writes first; writes
    go to the state delta only, so nothing is persisted until the agent loop applies it.

    Reading a mutable value (a dict, list, set) copies it into the delta first, so that
    changing it in place (``ctx.state["items"].append(x)``) is recorded as a write and
    never alters the session's state behind the agent loop's back. Keys cannot be
    deleted; set them to None.
    """

    def __init__(self, base: Mapping[str, Any], delta: dict[str, Any]) -> None:
        self._base = base
        self._delta = delta

    def __getitem__(self, key: str) -> Any:
        if key in self._delta:
            return self._delta[key]
        value = self._base[key]
        if isinstance(value, _MUTABLE):
            value = self._delta[key] = copy.deepcopy(value)
        return value

    def __setitem__(self, key: str, value: Any) -> None:
        self._delta[key] = value

    def __delitem__(self, key: str) -> None:
        raise TypeError(f"state keys cannot be deleted; set ctx.state[{key!r}] = None instead")

    def __contains__(self, key: object) -> bool:
        return key in self._delta or key in self._base

    def __iter__(self) -> Iterator[str]:
        yield from self._delta
        yield from (k for k in self._base if k not in self._delta)

    def __len__(self) -> int:
        return len(self._delta) + sum(1 for k in self._base if k not in self._delta)

    def update(self, values: Mapping[str, Any]) -> None:
        """Set several keys at once."""
        self._delta.update(values)

    @property
    def has_delta(self) -> bool:
        """True when the tool has written (or read a mutable value, see above)."""
        return bool(self._delta)

    def to_dict(self) -> dict[str, Any]:
        """A deep copy of the merged state, as a plain dict."""
        merged = {**self._base, **self._delta}
        return copy.deepcopy(merged)


@dataclass(frozen=True, kw_only=True)
class Identity:
    """Who is calling a served tool, as the server's authorization validated it from the
    client's access token (the token itself is not kept here, and is never sent upstream).
    """

    subject: str
    """The token's ``sub``: the user (or, for a client-credentials token, the client)."""
    issuer: str
    """The authorization server that issued the token (its ``iss``)."""
    client_id: str | None = None
    """The OAuth client the user called through (``client_id`` or ``azp``), if said."""
    scopes: frozenset[str] = frozenset()
    """The scopes the token grants."""
    claims: Mapping[str, Any] = field(default_factory=dict)
    """The token's other claims the server was told to keep (roles, groups, email...)."""
    expires_at: int | None = None
    """When the token expires (seconds since the epoch), if it says."""


@dataclass(frozen=True, kw_only=True)
class Invocation:
    """One run of an agent for one user message, as tools may see it (read-only)."""

    app_name: str = "toolsets"
    """The application's name."""
    user_id: str = "user"
    """The user on whose behalf tools run."""
    session_id: str = field(default_factory=new_id)
    """The conversation."""
    invocation_id: str = field(default_factory=new_id)
    """This run."""
    agent_name: str | None = None
    """The agent currently running, if any."""
    user_content: Content | None = None
    """The user's message that started this run."""
    state: Mapping[str, Any] = field(default_factory=dict)
    """The session state before this call's own writes."""
    scopes: frozenset[str] = frozenset()
    """What the caller is allowed to do; checked against tools' ``required_scopes``."""
    identity: Identity | None = None
    """Who is calling, when a served tool's client was authorized by an access token
    (None: no authorization, e.g. over stdio or in a local agent)."""
    artifact_service: ArtifactService | None = None
    """Where artifacts are stored, if configured."""
    memory_service: MemoryService | None = None
    """Long-term memory, if configured."""
    cancellation: Cancellation = field(default_factory=Cancellation)
    """Set when the run is cancelled; every call's own flag follows it."""


ProgressReporter: TypeAlias = Callable[[float, "float | None", "str | None"], Awaitable[None]]
"""Receives a running call's progress: (progress, total or None, message or None)."""


class ToolContext:
    """The context of one tool call (or of listing tools, with no call id).

    ``ToolContext()`` works standalone, outside any agent; pass an `Invocation` to say who
    is calling and which services exist.
    """

    def __init__(
        self,
        invocation: Invocation | None = None,
        *,
        function_call_id: str | None = None,
        auth_credential: AuthCredential | None = None,
        tool_confirmation: ToolConfirmation | None = None,
    ) -> None:
        self.invocation = invocation if invocation is not None else Invocation()
        """The run this call belongs to."""
        self.function_call_id = function_call_id
        """The id of the call being run; None while tools are being listed."""
        self.auth_credential = auth_credential
        """The credential obtained for the tool's ``auth_config``, once there is one."""
        self.tool_confirmation = tool_confirmation
        """The user's answer, when the call is resumed after asking for confirmation."""
        # Made on first use: a context is made for every call (and every model turn's
        # tool listing), and most never touch these.
        self._actions: EventActions | None = None
        self._state: State | None = None
        self._cancellation: Cancellation | None = None
        self.progress: ProgressReporter | None = None
        """Where `report_progress` sends the call's progress (set by a caller that
        listens; None: the client channel's, if any)."""
        self.client: ClientChannel | None = None
        """The channel to the client the call is served to (set by the MCP server; None:
        no client, ``log`` goes to the `logging` module and asking raises)."""
        self.tool_name: str | None = None
        """The tool being called (set by the call path; names ``log``'s logger)."""
        self.call_path: object = None
        """How the call path was asked to call this tool (a `toolsets._invoke.CallPath`:
        its default timeout, callbacks and scopes; set by it): a tool that calls other
        tools from inside (`code_mode`) calls them the same way. Typed ``object`` here:
        the call path imports this module, not the other way round; its readers narrow
        it with ``isinstance``."""
        self._keys: dict[str, int] | None = None

    @property
    def actions(self) -> EventActions:
        """What the tool asks the agent loop to do afterwards."""
        if self._actions is None:
            self._actions = EventActions()
        return self._actions

    @property
    def actions_set(self) -> EventActions | None:
        """The actions, if anything asked for them (None: the call set none)."""
        return self._actions

    @property
    def state(self) -> State:
        """The session state; writes are recorded in ``actions.state_delta``."""
        if self._state is None:
            self._state = State(self.invocation.state, self.actions.state_delta)
        return self._state

    @property
    def cancellation(self) -> Cancellation:
        """Set when this call is cancelled: its own timeout, or the whole run."""
        if self._cancellation is None:
            self._cancellation = Cancellation(self.invocation.cancellation)
        return self._cancellation

    def for_call(
        self,
        function_call_id: str,
        *,
        auth_credential: AuthCredential | None = None,
        tool_confirmation: ToolConfirmation | None = None,
    ) -> ToolContext:
        """A context for one call in the same invocation, with its own fresh actions."""
        return ToolContext(
            self.invocation,
            function_call_id=function_call_id,
            auth_credential=auth_credential,
            tool_confirmation=tool_confirmation,
        )

    # The read-only view, flattened for convenience.
    @property
    def app_name(self) -> str:
        """The application's name."""
        return self.invocation.app_name

    @property
    def user_id(self) -> str:
        """The user on whose behalf the tool runs."""
        return self.invocation.user_id

    @property
    def session_id(self) -> str:
        """The conversation."""
        return self.invocation.session_id

    @property
    def invocation_id(self) -> str:
        """The run."""
        return self.invocation.invocation_id

    @property
    def agent_name(self) -> str | None:
        """The agent running the tool, if any."""
        return self.invocation.agent_name

    @property
    def user_content(self) -> Content | None:
        """The user's message that started the run."""
        return self.invocation.user_content

    @property
    def scopes(self) -> frozenset[str]:
        """What the caller is allowed to do."""
        return self.invocation.scopes

    @property
    def identity(self) -> Identity | None:
        """Who is calling, as the server's authorization validated it (None: no
        authorization)."""
        return self.invocation.identity

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Tell the caller how far the call has got (an MCP server sends it to its client
        as ``notifications/progress``); nothing happens when the caller does not listen.

        Args:
            progress: How much is done; it should grow with each report.
            total: How much there is to do, when known.
            message: What is being done now.
        """
        if self.progress is not None:
            await self.progress(progress, total, message)
        elif self.client is not None:
            await self.client.report_progress(progress, total, message)

    # Talking to the client (an MCP server's; see toolsets.mcp.McpServer).
    async def log(self, level: LogLevel, message: str, /, **data: JsonValue) -> None:
        """Log ``message`` (with ``data``) to the client the call is served to, as MCP
        ``notifications/message`` (only at or above the level the client asked for);
        with no client, to the `logging` logger ``toolsets.tool.<tool name>``.

        Args:
            level: ``debug``, ``info``, ``notice``, ``warning``, ``error``,
                ``critical``, ``alert`` or ``emergency``.
            message: What happened.
            **data: Details, sent beside the message (JSON values).

        Raises:
            ValueError: ``data`` has a ``message`` (it would hide the message).
        """
        if "message" in data:
            raise ValueError(
                "log() got a detail named 'message', which would hide the message itself; "
                "name it otherwise"
            )
        name = f"toolsets.tool.{self.tool_name}" if self.tool_name else "toolsets.tool"
        if self.client is not None:
            await self.client.log(level, message, data, name)
            return
        logger = logging.getLogger(name)
        number = LOGGING_LEVELS.get(level, logging.INFO)
        if logger.isEnabledFor(number):
            logger.log(number, "%s", message, extra={"data": data} if data else None)

    async def close_stream(self) -> bool:
        """Close the stream the call answers on, and go on: the client reconnects (after
        the ``retry_interval`` the server gave it) with ``Last-Event-ID`` and gets what
        was sent meanwhile, the result too. A long call can so free the connection
        rather than hold it (a proxy may cut it anyway).

        Returns:
            True if the stream was closed; False if there is none that can be: no client
            (the call is not served by an MCP server), not over streamable HTTP, a
            stateless server or one without an event store (the client could not
            resume), or a client older than protocol 2025-11-25.
        """
        return self.client is not None and await self.client.close_stream()

    def client_supports(self, capability: Capability) -> bool:
        """Whether the call's client can be asked ``capability``: ``"elicitation"``
        (`elicit`), ``"sampling"`` (`sample`) or ``"roots"`` (`list_roots`). False with
        no client."""
        return self.client is not None and self.client.supports(capability)

    async def ask(self, **requests: ClientRequest) -> dict[str, Answer]:
        """Ask the client several things at once, by key: `Elicit` (the user fills in a
        form), `Sample` (the client's model answers) or `ListRoots`; the answers under
        the same keys (`Elicitation`, `Sampled`, a list of `Root`).

        On MCP 2025-11-25 each is sent to the client while the call waits (the wait
        counts toward the call's timeout: give a tool that asks the user a long
        ``timeout``). On 2026-07-28 the call ends with the questions
        (``input_required``) and the client calls again with the answers: **the tool
        runs again from the top**, and this ``ask`` then returns them. So a tool that
        asks should do nothing it must not repeat before asking, and ask the same keys
        in the same order each time.

        Raises:
            MissingClientCapabilityError: the client cannot be asked one of them, or the
                call has no client (it reaches the model as an error result).
            ValueError: nothing asked, or a key starting with ``toolsets/`` (toolsets'
                own, as the server's confirmation of the call).
        """
        if not requests:
            raise ValueError("ask() needs at least one request, e.g. ask(name=Elicit(...))")
        check_keys(requests)
        if self.client is None:
            raise MissingClientCapabilityError(
                next(iter(requests.values())).capability, client=False
            )
        return await self.client.ask(requests)

    def _key(self, kind: str, key: str | None) -> str:
        """``key``, or the next default one of ``kind`` (``elicit-1``, ``elicit-2``,
        ...: stable when the tool runs again from the top)."""
        if key is not None:
            return key
        if self._keys is None:
            self._keys = {}
        count = self._keys[kind] = self._keys.get(kind, 0) + 1
        return f"{kind}-{count}"

    async def elicit(
        self, message: str, schema: Mapping[str, Any] | None = None, *, key: str | None = None
    ) -> Elicitation:
        """Ask the user to fill in ``schema`` (a flat JSON Schema object; None: a yes or
        no only); see `ask` for how, and `Elicit`. ``key`` names the question (default
        ``elicit-1``, ``elicit-2``, ...)."""
        asked = self._key("elicit", key)
        answer = (await self.ask(**{asked: Elicit(message, schema or {})}))[asked]
        assert isinstance(answer, Elicitation)
        return answer

    async def sample(
        self,
        messages: str | Sequence[Content],
        *,
        max_tokens: int = 1000,
        system_prompt: str | None = None,
        temperature: float | None = None,
        key: str | None = None,
    ) -> Sampled:
        """The client's model's answer to ``messages`` (``.text``, and the ``.model``
        that answered); see `ask` for how, and `Sample`. ``key`` names the question
        (default ``sample-1``, ...)."""
        asked = self._key("sample", key)
        request = Sample(
            messages, max_tokens=max_tokens, system_prompt=system_prompt, temperature=temperature
        )
        answer = (await self.ask(**{asked: request}))[asked]
        assert isinstance(answer, Sampled)
        return answer

    async def list_roots(self, *, key: str | None = None) -> list[Root]:
        """The roots the client works in; see `ask` for how. ``key`` names the question
        (default ``roots-1``, ...)."""
        asked = self._key("roots", key)
        answer = (await self.ask(**{asked: ListRoots()}))[asked]
        assert isinstance(answer, list)
        return answer

    # Asking the user.
    def _call_id(self, what: str) -> str:
        if self.function_call_id is None:
            raise ValueError(f"{what} needs a function call id; use ctx.for_call(id)")
        return self.function_call_id

    def request_credential(self, auth_config: AuthConfig) -> None:
        """Ask the user for a credential; the call pauses until one is submitted."""
        self.actions.requested_auth_configs[self._call_id("request_credential")] = auth_config

    def request_confirmation(self, *, hint: str = "", payload: JsonValue = None) -> None:
        """Ask the user to confirm this call; it pauses until they answer."""
        call_id = self._call_id("request_confirmation")
        self.actions.requested_tool_confirmations[call_id] = ToolConfirmation(
            hint=hint, payload=payload
        )

    # Services.
    def _artifacts(self) -> ArtifactService:
        service = self.invocation.artifact_service
        if service is None:
            raise ServiceNotConfiguredError("artifact_service")
        return service

    async def save_artifact(self, filename: str, artifact: Part) -> int:
        """Store a new version of ``filename`` and record it in ``actions.artifact_delta``.

        Names starting with ``user:`` are shared by all the user's sessions.

        Returns:
            The new version number (0 for the first).

        Raises:
            ServiceNotConfiguredError: no artifact service is configured.
        """
        version = await self._artifacts().save_artifact(
            app_name=self.app_name,
            user_id=self.user_id,
            session_id=self.session_id,
            filename=filename,
            artifact=artifact,
        )
        self.actions.artifact_delta[filename] = version
        return version

    async def load_artifact(self, filename: str, version: int | None = None) -> Part | None:
        """The given version of ``filename`` (default: the latest), or None.

        Raises:
            ServiceNotConfiguredError: no artifact service is configured.
        """
        return await self._artifacts().load_artifact(
            app_name=self.app_name,
            user_id=self.user_id,
            session_id=self.session_id,
            filename=filename,
            version=version,
        )

    async def list_artifacts(self) -> list[str]:
        """The artifact names visible from this session.

        Raises:
            ServiceNotConfiguredError: no artifact service is configured.
        """
        return await self._artifacts().list_artifact_keys(
            app_name=self.app_name, user_id=self.user_id, session_id=self.session_id
        )

    async def search_memory(self, query: str) -> Sequence[MemoryEntry]:
        """The user's remembered entries relevant to ``query``, most relevant first.

        Raises:
            ServiceNotConfiguredError: no memory service is configured.
        """
        service = self.invocation.memory_service
        if service is None:
            raise ServiceNotConfiguredError("memory_service")
        return await service.search_memory(
            app_name=self.app_name, user_id=self.user_id, query=query
        )

    def __repr__(self) -> str:
        return (
            f"ToolContext(user_id={self.user_id!r}, session_id={self.session_id!r}, "
            f"function_call_id={self.function_call_id!r})"
        )


def state_writes(actions: EventActions | None, *, lasting: bool = False) -> dict[str, Any]:
    """The state keys a call set (its ``actions.state_delta``), for whoever keeps the
    state it read to apply; empty when it set none. ``lasting``: only the keys that
    outlive the run, not the `TEMP_PREFIX` ones (what a caller keeps across runs: the
    MCP server for its clients, a framework adapter in its invocation's state)."""
    if actions is None or not actions.state_delta:
        return {}
    delta = actions.state_delta
    if not lasting:
        return dict(delta)
    return {key: value for key, value in delta.items() if not key.startswith(TEMP_PREFIX)}
