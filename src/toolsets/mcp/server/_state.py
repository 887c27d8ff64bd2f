"""Per-request state: the `Invocation` each request runs in, and what the calls of each
client wrote to ``ctx.state``, kept for its later requests.

Who the client is: over stdio (either protocol) the stream, over stateful HTTP on
2025-11-25 the MCP session; otherwise (2026-07-28 over HTTP, which has no session, or
stateless HTTP) the ``session_id`` of the `Invocation` the server's ``invocation`` gives
(None: nothing is kept)."""

from __future__ import annotations

import time
import weakref
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from toolsets._concurrency import check_timeout
from toolsets._consumers import ask
from toolsets._context import Invocation
from toolsets.mcp.server._kept import KeptResults, Owner, owner_of
from toolsets.mcp.server._request import (
    Context,
    IncomingRequest,
    InvocationFor,
    connection,
    incoming,
)

__all__ = ["MAX_SESSION_STATES", "SESSION_STATE_TTL", "Requests"]

MAX_SESSION_STATES = 10_000
"""How many clients known by an `Invocation.session_id` only (2026-07-28 and stateless
HTTP) a server keeps the state of, unless told otherwise; past it the least recently
used is forgotten."""
SESSION_STATE_TTL = 24 * 3600.0
"""Seconds the state kept for an `Invocation.session_id` outlives its client's last
request, unless told otherwise."""

_clock = time.monotonic
"""The clock a kept state's age is read on."""


class Requests:
    """The `Invocation` of each request (``invocation``: given, made per request by a
    function, or by default a new one in the MCP session's id), over which the state its
    client's calls kept is laid; and the keeping.

    Args:
        app_name: The server's name (the `Invocation`'s ``app_name`` by default).
        invocation: As `McpServer` takes it.
        max_session_states: How many clients known by an ``session_id`` only the state
            is kept of.
        session_state_ttl: Seconds such a state is kept after its client's last request.
    """

    def __init__(
        self,
        app_name: str,
        invocation: Invocation | InvocationFor | None,
        max_session_states: int,
        session_state_ttl: float,
    ) -> None:
        self._app_name = app_name
        self._invocation = invocation
        self._states: weakref.WeakKeyDictionary[object, dict[str, Any]] = (
            weakref.WeakKeyDictionary()
        )
        """Each client's state, by its connection or stream (see `client`)."""
        if max_session_states < 0:
            raise ValueError("max_session_states must not be negative")
        ttl = check_timeout(session_state_ttl, "session_state_ttl")
        self._session_states = _SessionStates(max_session_states, ttl)
        """The state of each client known by an `Invocation.session_id` only."""
        self.kept = KeptResults()
        """The whole results of cut calls, kept for their callers (`_kept`)."""

    async def context(self, ctx: Context) -> tuple[IncomingRequest, Invocation]:
        """What the request of ``ctx`` says, and the `Invocation` it runs in, its
        client's kept state over the invocation's own."""
        request = incoming(ctx)
        given, identity = self._invocation, request.identity
        made: Invocation
        if given is None:  # each request its own run, in the client's session if any
            caller: dict[str, Any] = {}
            if identity is not None:  # the token says who calls, and what they may do
                caller = {"user_id": identity.subject, "scopes": identity.scopes}
            session = request.session_id
            if session is None:
                made = Invocation(app_name=self._app_name, **caller)
            else:
                made = Invocation(app_name=self._app_name, session_id=session, **caller)
        elif isinstance(given, Invocation):
            made = given
        else:
            # A sync function may block (a database, a token lookup): in a worker thread.
            made = await ask(given, request)
        if identity is not None and not (
            made.identity == identity and identity.scopes <= made.scopes
        ):
            # Who calls is the token's to say, and it grants its scopes whatever
            # invocation the server was given (its own scopes are added to them).
            made = replace(made, identity=identity, scopes=made.scopes | identity.scopes)
        kept = self._kept(self.client(ctx, made))
        if kept:  # what the client's calls wrote, over the invocation's own state
            made = replace(made, state={**made.state, **kept})
        return request, made

    def client(self, ctx: Context, invocation: Invocation) -> object | None:
        """Whom a request comes from, for the state its calls keep and the list changes
        it hears: its MCP session (stateful HTTP on 2025-11-25), or its stream (stdio,
        and any stream serving one client: on 2026-07-28 each request has a connection
        of its own, the stream is theirs); else (2026-07-28 and stateless HTTP) the
        ``session_id`` the server's `Invocation` gives, None when it gives none."""
        on = connection(ctx)
        if on.session_id is not None or (ctx.request is None and on.has_standalone_channel):
            if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
                return on.outbound
            return on
        return invocation.session_id

    def owner(self, ctx: Context, invocation: Invocation) -> Owner:
        """Who may read what a request in ``invocation`` keeps (`_kept`): the caller its
        token names, in its session as far as the server knows it — its MCP session
        (stateful HTTP on 2025-11-25), else the ``session_id`` of the `Invocation` the
        server's ``invocation`` gives; no session when there is neither (stdio, whose
        one client is the stream's; the default `Invocation`, made anew per request)."""
        session = connection(ctx).session_id
        if session is None and self._invocation is not None:
            session = invocation.session_id
        return owner_of(invocation, session)

    def keep(self, client: object, writes: Mapping[str, Any]) -> None:
        """Keep ``writes`` (to ``ctx.state``) for the later requests of ``client``."""
        if isinstance(client, str):
            self._session_states.update(client, writes)
        else:
            self._states.setdefault(client, {}).update(writes)

    def _kept(self, client: object | None) -> dict[str, Any] | None:
        """What the calls of ``client`` (see `client`) wrote to their state."""
        if client is None:
            return None
        if isinstance(client, str):
            return self._session_states.get(client)
        return self._states.get(client)


class _SessionStates:
    """The state of each client known by an `Invocation.session_id` only: at most
    ``limit`` (the least recently used are forgotten), each forgotten ``ttl`` seconds
    after its client's last request. Kept in this process's memory."""

    def __init__(self, limit: int, ttl: float) -> None:
        self.limit = limit
        self.ttl = ttl
        self._states: OrderedDict[str, tuple[float, dict[str, Any]]] = OrderedDict()

    def get(self, session_id: str) -> dict[str, Any] | None:
        self._expire()
        kept = self._states.get(session_id)
        if kept is None:
            return None
        self._states[session_id] = (_clock(), kept[1])
        self._states.move_to_end(session_id)
        return kept[1]

    def update(self, session_id: str, delta: Mapping[str, Any]) -> None:
        state = self.get(session_id) or {}
        state.update(delta)
        self._states[session_id] = (_clock(), state)
        self._states.move_to_end(session_id)
        while len(self._states) > self.limit:
            self._states.popitem(last=False)

    def _expire(self) -> None:
        oldest = _clock() - self.ttl
        while self._states:
            used, _ = next(iter(self._states.values()))
            if used >= oldest:
                break
            self._states.popitem(last=False)
