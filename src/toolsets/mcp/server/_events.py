"""Resumable event streams for `McpServer` over streamable HTTP (protocol 2025-11-25,
SEP-1699): the events a server sent on a request's stream are kept for a while, so that a
client whose stream broke (or that a tool closed on purpose, see `ToolContext.close_stream`)
reconnects with ``Last-Event-ID`` and gets the rest.

The SDK hands one event store to every session, and names each stream by its JSON-RPC
request id, which repeats from one session to the next. `SessionEventStore` therefore
keeps each session's events apart: every session's transport gets its own view of the
store (`SessionEventStore.bind`), event ids are unguessable and name their session's
stream, and a view never replays an event of another session. Memory is bounded: events
per stream, events and bytes in all, an age, and a session's events go with it.
"""

from __future__ import annotations

import secrets
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mcp.server.streamable_http import EventCallback, EventMessage, EventStore
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp_types import JSONRPCError, JSONRPCMessage, JSONRPCResponse, jsonrpc_message_adapter

__all__ = [
    "DEFAULT_MAX_EVENTS",
    "DEFAULT_MAX_EVENTS_PER_STREAM",
    "DEFAULT_MAX_EVENT_BYTES",
    "DEFAULT_EVENT_TTL",
    "SessionEventStore",
]

DEFAULT_MAX_EVENTS_PER_STREAM = 1_000
"""Events kept per stream (one request's, or a session's GET stream); the oldest go first."""
DEFAULT_MAX_EVENTS = 10_000
"""Events kept in all, every session together; the oldest go first."""
DEFAULT_MAX_EVENT_BYTES = 64 * 1024 * 1024
"""Bytes of events (their JSON) kept in all; the oldest go first."""
DEFAULT_EVENT_TTL = 300.0
"""Seconds an event is kept."""

_OVERHEAD = 64
"""What an event costs besides its JSON (roughly), counted against the bytes."""
_SWEEP_EVERY = 1.0
"""Seconds between looks for ended sessions (whose events are then dropped)."""


# Slots, and a list rather than a deque (760 bytes empty) per stream: a session's
# initialize and each of its requests is a stream of a priming event and an answer, kept
# for `DEFAULT_EVENT_TTL` (benchmarks/serve_load.py measures the memory per session).


@dataclass(frozen=True, slots=True)
class _Event:
    serial: int
    """Its place among every event of the store (the oldest has the smallest)."""
    seq: int
    """Its place in its stream (in its id)."""
    text: str | None
    """The message's JSON; None for a priming event (which carries none)."""
    size: int
    at: float


@dataclass(eq=False, slots=True)
class _Stream:
    session: str
    stream_id: str
    token: str
    """The unguessable part of its events' ids."""
    events: list[_Event] = field(default_factory=list)
    """Oldest first (at most ``max_events_per_stream``)."""
    next_seq: int = 0
    finished: bool = False
    """Its request was answered: a new request of the same id (or a client resuming it)
    starts a new stream; this one stays for whoever resumes from its events."""


class SessionEventStore(EventStore):
    """Keeps the events `McpServer` sends over streamable HTTP for a while, each session's
    apart, so that a client reconnecting with ``Last-Event-ID`` gets what it missed.

    `McpServer.http_app` makes one by default (stateful mode); make one yourself to
    change its bounds and pass it as ``event_store``. One store serves one app: it is
    bound to the app's session manager, which gives each new session a view of its own.
    Used directly (not through a view) it keeps nothing and replays nothing.

    Event ids are ``<token>.<n>``, the token random (128 bits) for each stream; a view
    replays only its own session's streams, so an id seen by one client (or forged) gives
    another client nothing. Everything is kept in this process's memory: a client must
    reconnect to the process that served it.

    Args:
        max_events_per_stream: Events kept per stream; the oldest go first.
        max_events: Events kept in all.
        max_bytes: Bytes (of the events' JSON) kept in all.
        ttl: Seconds an event is kept.
        clock: The time in seconds (monotonic; for tests).
    """

    def __init__(
        self,
        *,
        max_events_per_stream: int = DEFAULT_MAX_EVENTS_PER_STREAM,
        max_events: int = DEFAULT_MAX_EVENTS,
        max_bytes: int = DEFAULT_MAX_EVENT_BYTES,
        ttl: float = DEFAULT_EVENT_TTL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        for name, value in (
            ("max_events_per_stream", max_events_per_stream),
            ("max_events", max_events),
            ("max_bytes", max_bytes),
            ("ttl", ttl),
        ):
            if not value > 0:
                raise ValueError(f"{name} must be positive, not {value!r}")
        self.max_events_per_stream = max_events_per_stream
        self.max_events = max_events
        self.max_bytes = max_bytes
        self.ttl = ttl
        self._clock = clock
        self._serial = 0
        self._events: OrderedDict[int, _Stream] = OrderedDict()
        """Every event kept, oldest first: its serial → its stream."""
        self._bytes = 0
        self._streams: dict[tuple[str, str], _Stream] = {}
        """(session, stream id) → its current stream."""
        self._tokens: dict[str, _Stream] = {}
        self._sessions: dict[str, set[_Stream]] = {}
        """Session → its streams."""
        self._alive: dict[str, Callable[[], bool]] = {}
        self._next_sweep = 0.0
        self._bound: StreamableHTTPSessionManager | None = None

    # --- what the SDK sees ------------------------------------------------------------

    async def store_event(self, stream_id: str, message: JSONRPCMessage | None) -> str:
        """Not for use: a session's events go through its view (see the class). Gives an
        id that replays nothing."""
        return secrets.token_urlsafe(16)

    async def replay_events_after(
        self, last_event_id: str, send_callback: EventCallback
    ) -> str | None:
        """Not for use: replays nothing (see the class)."""
        return None

    # --- sessions ---------------------------------------------------------------------

    def for_session(self, session_id: str, alive: Callable[[], bool] | None = None) -> EventStore:
        """The view of this store that the session ``session_id`` stores its events in and
        replays them from; ``alive`` says whether the session still is (its events are
        dropped once it says no)."""
        self._sessions.setdefault(session_id, set())
        if alive is not None:
            self._alive[session_id] = alive
        return _SessionEvents(self, session_id)

    def forget_session(self, session_id: str) -> None:
        """Drop the events of the session ``session_id`` (it ended)."""
        self._alive.pop(session_id, None)
        for stream in list(self._sessions.pop(session_id, ())):
            self._drop_stream(stream)

    def bind(self, manager: StreamableHTTPSessionManager) -> None:
        """Give every session ``manager`` opens from now on a view of its own of this
        store (the manager must have been made with this store as its event store).

        Raises:
            RuntimeError: The store serves another app already, or this version of the
                ``mcp`` SDK does not let it (pass ``event_store=None`` to serve without
                resumable streams).
        """
        if self._bound is manager:
            return
        if self._bound is not None:
            raise RuntimeError("this event store serves another app already: make one per app")
        # The SDK gives every session's transport the manager's one store and has no
        # hook to give each its own: wrap the method admitting a session (the manager is
        # the app's own) and give the new transport a view.
        admit = getattr(manager, "_admit_session", None)
        if manager.event_store is not self or not callable(admit):
            raise RuntimeError(
                "this version of the mcp SDK cannot keep sessions' events apart; "
                "serve with event_store=None"
            )

        def admit_with_own_events(*args: Any, **kwargs: Any) -> Any:
            transport = admit(*args, **kwargs)
            session_id = getattr(transport, "mcp_session_id", None)
            # Without the attribute the transport keeps the manager's store, which
            # keeps nothing: safe, only not resumable.
            if session_id is not None and "_event_store" in vars(transport):
                ended = weakref.ref(transport)

                def alive() -> bool:
                    current = ended()
                    return current is not None and not current.is_terminated

                transport._event_store = self.for_session(session_id, alive)
                weakref.finalize(transport, self.forget_session, session_id)
            return transport

        manager._admit_session = admit_with_own_events  # type: ignore[method-assign]
        self._bound = manager

    # --- the events -------------------------------------------------------------------

    @property
    def event_count(self) -> int:
        """Events kept now (every session together)."""
        self._expire(self._clock())
        return len(self._events)

    @property
    def byte_count(self) -> int:
        """Bytes kept now (every session together, as counted against ``max_bytes``)."""
        self._expire(self._clock())
        return self._bytes

    def _store(self, session: str, stream_id: str, message: JSONRPCMessage | None) -> str:
        now = self._clock()
        self._expire(now)
        if session not in self._sessions:  # ended, or forgotten: keep nothing more
            return secrets.token_urlsafe(16)
        stream = self._streams.get((session, stream_id))
        if stream is None or (message is None and stream.finished):
            stream = _Stream(session, stream_id, secrets.token_urlsafe(16))
            self._streams[session, stream_id] = stream
            self._tokens[stream.token] = stream
            self._sessions[session].add(stream)
        text = (
            None if message is None else message.model_dump_json(by_alias=True, exclude_unset=True)
        )
        self._serial += 1
        event = _Event(self._serial, stream.next_seq, text, _OVERHEAD + len(text or ""), now)
        stream.next_seq += 1
        stream.events.append(event)
        self._events[event.serial] = stream
        self._bytes += event.size
        if isinstance(message, JSONRPCResponse | JSONRPCError):
            stream.finished = True
        event_id = f"{stream.token}.{event.seq}"
        while len(stream.events) > self.max_events_per_stream:
            self._drop_oldest_of(stream)
        while self._events and (
            len(self._events) > self.max_events or self._bytes > self.max_bytes
        ):
            self._drop_oldest()
        return event_id

    async def _replay(self, session: str, last_event_id: str, send: EventCallback) -> str | None:
        self._expire(self._clock())
        token, _, seq = last_event_id.partition(".")
        stream = self._tokens.get(token)
        if stream is None or stream.session != session or not seq.isdigit():
            return None
        after = int(seq)
        if after >= stream.next_seq:  # never given out
            return None
        # Taken now: more may arrive (and old ones go) while the client is sent these.
        missed = [e for e in stream.events if e.seq > after and e.text is not None]
        for event in missed:
            assert event.text is not None
            message = jsonrpc_message_adapter.validate_json(event.text)
            await send(EventMessage(message, f"{token}.{event.seq}"))
        return stream.stream_id

    def _expire(self, now: float) -> None:
        while self._events:
            stream = next(iter(self._events.values()))
            if now - stream.events[0].at < self.ttl:
                break
            self._drop_oldest()
        if now >= self._next_sweep:
            self._next_sweep = now + _SWEEP_EVERY
            for session, alive in list(self._alive.items()):
                if not alive():
                    self.forget_session(session)

    def _drop_oldest(self) -> None:
        _, stream = self._events.popitem(last=False)
        self._drop_oldest_of(stream, listed=False)

    def _drop_oldest_of(self, stream: _Stream, *, listed: bool = True) -> None:
        event = stream.events.pop(0)
        if listed:
            del self._events[event.serial]
        self._bytes -= event.size
        if not stream.events:
            self._forget_stream(stream)

    def _drop_stream(self, stream: _Stream) -> None:
        while stream.events:
            self._drop_oldest_of(stream)
        self._forget_stream(stream)

    def _forget_stream(self, stream: _Stream) -> None:
        self._tokens.pop(stream.token, None)
        if self._streams.get((stream.session, stream.stream_id)) is stream:
            del self._streams[stream.session, stream.stream_id]
        streams = self._sessions.get(stream.session)
        if streams is not None:
            streams.discard(stream)


class _SessionEvents(EventStore):
    """One session's view of a `SessionEventStore`."""

    def __init__(self, store: SessionEventStore, session_id: str) -> None:
        self._store = store
        self._session_id = session_id

    async def store_event(self, stream_id: str, message: JSONRPCMessage | None) -> str:
        return self._store._store(self._session_id, stream_id, message)

    async def replay_events_after(
        self, last_event_id: str, send_callback: EventCallback
    ) -> str | None:
        return await self._store._replay(self._session_id, last_event_id, send_callback)
