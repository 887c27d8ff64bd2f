"""One long-lived MCP session, owned by a task of its own (internal).

The SDK's transports hold anyio cancel scopes that must be left by the task that entered
them, so each session lives in an *owner task* that opens it, waits, and closes it; the
calls, from any task, share the session concurrently. A transport that dies surfaces in
the owner (as an exception group), which marks the connection dead: the next use opens a
new one. Where that owner task lives:

- inside ``async with toolset``: a task group the toolset holds;
- on first use without ``async with``: a background thread running its own event loop
  (`_Portal`), so that nothing is tied to the task that happened to call first.

`Host` (``_host``) picks between them; this module is the session itself.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio
import httpx2
import mcp.types as mt
from anyio.abc import TaskStatus
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import ListenNotSupportedError, SubscriptionLost

from toolsets._auth import redact
from toolsets._http import NOT_SENT
from toolsets._logs import guard_library_logs
from toolsets.mcp.client._pushback import Pushback, PushedBackError, pushback_of
from toolsets.mcp.client._refusal import CredentialRefusedError, Refusal, refusal_of
from toolsets.mcp.client._result_type import CompleteByDefault, speaks_result_types
from toolsets.mcp.client._stderr import ServerStderr
from toolsets.mcp.client._stdio import StdioTransport
from toolsets.mcp.client._transports import Sse, Stdio, StreamableHttp, Transport

__all__ = [
    "Connection",
    "ConnectionOptions",
    "SessionRefusedError",
    "StaleConnectionError",
    "call_on",
    "describe",
    "is_connection_lost",
    "is_session_expired",
]

logger = logging.getLogger("toolsets.mcp")

T = TypeVar("T")


def is_connection_lost(error: MCPError) -> bool:
    """The server went away (a crashed process, a dropped stream)."""
    return error.code == mt.CONNECTION_CLOSED


def is_session_expired(error: MCPError) -> bool:
    """An HTTP server no longer knows our session (it restarted, or expired it): the
    request was rejected before anything ran, so it may be sent again on a new session."""
    return error.code == mt.INVALID_REQUEST and error.message in (
        "Session not found",
        "Session terminated",
    )


@dataclass
class _Sent:
    """What the HTTP layer saw of one request of ours."""

    answered: bool = False
    refused: bool = False
    """Its session id was refused."""
    unauthorized: Refusal | None = None
    """Its credential was refused (401, or 403 ``insufficient_scope``)."""
    pushback: Pushback | None = None
    """It was answered 429 or 5xx (busy, unavailable)."""
    unsent: BaseException | None = None
    """httpx2's error that failed it before a byte was sent (no connection)."""


# The SDK sends each HTTP request in a task that copies the sender's context, so the
# response hook finds the request it answers here.
_SENT: contextvars.ContextVar[_Sent | None] = contextvars.ContextVar("_SENT", default=None)


async def _note_refusal(response: httpx2.Response) -> None:
    """An HTTP response hook: notes a request refused for its session id — 404 once the
    server forgot the session (the spec), or 400 naming the session, as TypeScript
    servers answer ("Bad Request: No valid session ID provided"); a refusal of the
    credential (401, or 403 ``insufficient_scope``: see `refusal_of`); and a pushback
    (429 or 5xx, with its ``Retry-After``: see `pushback_of`)."""
    sent = _SENT.get()
    if sent is None or sent.answered:
        return
    status = response.status_code
    if status < 400:
        # Accepted: a later refusal (of a follow-up) changes nothing. (Every request of
        # the call goes within the one session, if the server keeps sessions at all.)
        # A refusal an `httpx2.Auth` answered (a new token, sent again) is forgotten.
        sent.answered = True
        sent.unauthorized = None
    elif status in (401, 403):
        sent.unauthorized = refusal_of(response)
    elif status == 429 or status >= 500:
        sent.pushback = pushback_of(response)
    elif status in (400, 404) and _in_session(response.request):
        if status == 404:
            sent.refused = True
        else:
            await response.aread()
            sent.refused = b"session" in response.content.lower()


class _NotingClient(httpx2.AsyncClient):
    """An HTTP client noting a request of ours that failed before a byte was sent (the
    SDK makes a lost connection of it, as if the request may have run)."""

    async def send(self, request: httpx2.Request, **options: Any) -> httpx2.Response:
        try:
            return await super().send(request, **options)
        except NOT_SENT as exc:
            sent = _SENT.get()
            if sent is not None and not sent.answered:
                sent.unsent = exc
            raise


def _in_session(request: httpx2.Request) -> bool:
    """Whether ``request`` went within a session (it carries the session id). Read from
    the raw header names: httpx2's ``in`` decodes every header, on every response."""
    return any(name.lower() == b"mcp-session-id" for name, _ in request.headers.raw)


async def call_on(
    connection: Connection, fn: Callable[..., Awaitable[T]], args: tuple[Any, ...]
) -> T:
    """``fn(connection.client, *args)``, on the connection's own loop (where a server's
    exit is noticed, and checked first), a refusal of the session told apart."""
    client = connection.client
    assert client is not None
    if not connection.alive:
        raise StaleConnectionError(connection.target)
    if not connection.over_http:  # (through a portal) no session to be refused
        return await fn(client, *args)
    sent = _Sent()
    token = _SENT.set(sent)
    try:
        return await fn(client, *args)
    except MCPError as exc:
        # The SDK makes its own error of an HTTP 400/401/404 (or takes the one in the
        # body, with any code): the status the hook saw is what tells.
        if sent.unauthorized is not None:
            raise connection.refused(sent.unauthorized, "") from exc
        if sent.refused or is_session_expired(exc):
            raise SessionRefusedError(exc.message) from exc
        if sent.pushback is not None:
            raise PushedBackError.of(sent.pushback, exc.message) from exc
        if sent.unsent is not None:  # the connection broke on it: nothing was sent
            raise StaleConnectionError(connection.target) from sent.unsent
        raise
    finally:
        _SENT.reset(token)


class SessionRefusedError(Exception):
    """The HTTP server refused a request for its session id (it restarted, or expired the
    session): the request never ran, and may be sent again on a new session (internal)."""


class StaleConnectionError(Exception):
    """The connection died (e.g. its stdio server exited) before a request was sent on
    it: nothing was sent, so the request may go out on a new connection (internal)."""


def _root_cause(error: BaseException) -> BaseException:
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    return error


def describe(error: BaseException) -> str:
    """A one-line account of why a connection failed (exception groups unwrapped)."""
    cause = _root_cause(error)
    if isinstance(cause, BaseExceptionGroup):
        return "; ".join(describe(e) for e in cause.exceptions)
    text = str(cause) or type(cause).__name__
    return f"{type(cause).__name__}: {text}" if str(cause) else text


@dataclass(frozen=True, kw_only=True)
class ConnectionOptions:
    """How to open a session (the toolset fills this in)."""

    transport: Transport
    connect_timeout: float
    name: str = ""
    """The server's name in logs (default: the command or URL)."""
    client_kwargs: dict[str, Any] = field(default_factory=dict)
    on_list_changed: Callable[[], None] = lambda: None


class Connection:
    """One session. ``client`` is usable once ``ready`` is set and ``error`` is None."""

    def __init__(self, options: ConnectionOptions) -> None:
        self.options = options
        self.client: Client | None = None
        self.error: BaseException | None = None
        self.ready = anyio.Event()
        self.closed = anyio.Event()
        self._closing = anyio.Event()
        self._scope: anyio.CancelScope | None = None
        self._stdio: StdioTransport | None = None
        self.alive = True
        self.over_http = not isinstance(options.transport, Stdio)
        """Its requests go over HTTP, where a session can be refused (and, for streamable
        HTTP, a response hook notes refusals)."""
        self.stderr: ServerStderr | None = None
        """A stdio server's stderr (its last lines explain a failed start)."""
        self.connecting = _Sent()
        """What the HTTP layer saw of the requests opening the session (the handshake):
        a refusal of the credential there fails the connect with `refused`'s error."""

    def refused(self, refusal: Refusal, what: str) -> CredentialRefusedError:
        """The error of the server's ``refusal`` of the session's credential for
        ``what`` (a request; "" for opening the session); a secret of the session that
        the server quoted in its challenge is masked."""
        name = self.options.name or self.target
        said = f"MCP server {name} refused the credential{f' for {what}' if what else ''}"
        return CredentialRefusedError(
            redact(f"{said} ({refusal})", self.options.transport.secrets),
            scheme_name=name,
            refusal=refusal,
        )

    @property
    def target(self) -> str:
        return self.options.transport.target

    def close(self) -> None:
        """Ask the owner task to close the session (from the owner's event loop); one
        still connecting is cancelled, since it waits on the server, not on us (and a
        stdio server that has not finished connecting is killed, not asked to stop)."""
        self._closing.set()
        if not self.ready.is_set():
            if self._stdio is not None:
                self._stdio.kill()
            if self._scope is not None:
                self._scope.cancel()

    @contextlib.asynccontextmanager
    async def _transport(self) -> AsyncIterator[Any]:
        guard_library_logs()  # the SDK logs the URL it connects to, user info and all
        transport = self.options.transport
        if isinstance(transport, Stdio):
            params = StdioServerParameters(
                command=transport.command,
                args=list(transport.args),
                env=dict(transport.env) if transport.env is not None else None,
                cwd=transport.cwd,
            )
            self.stderr = ServerStderr(transport.stderr, self.options.name or transport.target)

            def start(errlog: Any) -> StdioTransport:
                self._stdio = StdioTransport(params, errlog=errlog, on_exit=self._server_exited)
                return self._stdio

            yield self.stderr.client(start)
            return
        if isinstance(transport, Sse):
            yield sse_client(
                transport.url,
                headers=dict(transport.headers),
                timeout=transport.timeout,
                sse_read_timeout=transport.read_timeout,
                auth=transport.auth,
            )
            return
        assert isinstance(transport, StreamableHttp)
        if transport.http_client is not None:
            # The caller's client: our hook is added for this session's life only.
            hooks = transport.http_client.event_hooks["response"]
            hooks.append(_note_refusal)
            try:
                yield streamable_http_client(transport.url, http_client=transport.http_client)
            finally:
                hooks.remove(_note_refusal)
            return
        timeout = httpx2.Timeout(transport.timeout, read=max(transport.timeout, 300.0))
        async with _NotingClient(
            headers=dict(transport.headers),
            auth=transport.auth,
            timeout=timeout,
            event_hooks={"response": [_note_refusal]},
        ) as http_client:
            yield streamable_http_client(transport.url, http_client=http_client)

    async def own(self) -> None:
        """The owner task's body: open, serve until closed or broken, close."""
        # The SDK sends the handshake's requests in tasks copying this task's context.
        token = _SENT.set(self.connecting)
        try:
            with anyio.CancelScope() as self._scope:
                await self._serve()
        except Exception as exc:  # the boundary where transport failures arrive (as groups)
            self.error = exc
            if self.ready.is_set():
                logger.warning("MCP connection to %s lost: %s", self.target, describe(exc))
        finally:
            _SENT.reset(token)
            self.alive = False
            self.ready.set()
            self.closed.set()

    async def _serve(self) -> None:
        async with self._transport() as transport:
            results = CompleteByDefault(transport)
            async with (
                Client(results.streams(), **self.options.client_kwargs) as client,
                anyio.create_task_group() as tg,
            ):
                results.active = speaks_result_types(client.protocol_version)
                self.client = client
                # Ready only once subscribed: a change announced before that is lost.
                await tg.start(self._listen, client)
                self.ready.set()
                await self._closing.wait()
                tg.cancel_scope.cancel()

    def _server_exited(self) -> None:
        # A stdio server that exits (while idle, or under calls, which fail on their own)
        # is retired at once: the next call starts a new one instead of failing here.
        if self._closing.is_set():
            return  # we stopped it
        self.alive = False
        if self.ready.is_set():  # else connecting fails and says why
            logger.warning(
                "MCP server %s exited; the next call starts it again",
                self.target,
                extra={"server_exited": True},
            )
        self._closing.set()

    async def _listen(
        self, client: Client, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        # Protocol 2026-07-28 announces list changes only to listeners; 2025-11-25
        # announces them as notifications (handled by the message handler instead).
        started = False
        try:
            async with client.listen(tools_list_changed=True) as events:
                task_status.started()
                started = True
                async for _ in events:
                    self.options.on_list_changed()
        except (ListenNotSupportedError, SubscriptionLost, MCPError):
            if not started:
                task_status.started()
