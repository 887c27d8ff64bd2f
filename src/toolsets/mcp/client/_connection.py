"""One long-lived MCP session, owned by a task of its own (internal).

The SDK's transports hold anyio cancel scopes that must be left by the task that entered
them, so each session lives in an *owner task* that opens it, waits, and closes it; the
calls, from any task, share the session concurrently. A transport that dies surfaces in
the owner (as an exception group), which marks the connection dead: the next use opens a
new one. Where that owner task lives:

- inside ``async with toolset``: a task group the toolset holds;
- on first use without ``async with``: a background thread running its own event loop
  (`_Portal`), so that nothing is tied to the task that happened to call first.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import contextvars
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio
import anyio.from_thread
import anyio.to_thread
import httpx2
import mcp.types as mt
import sniffio
from anyio.abc import TaskGroup, TaskStatus
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import ListenNotSupportedError, SubscriptionLost

from toolsets._auth import redact
from toolsets._errors import ConnectionError
from toolsets._logs import guard_library_logs
from toolsets.mcp.client._result_type import CompleteByDefault, speaks_result_types
from toolsets.mcp.client._stderr import ServerStderr
from toolsets.mcp.client._stdio import StdioTransport
from toolsets.mcp.client._transports import Sse, Stdio, StreamableHttp, Transport

__all__ = [
    "Connection",
    "ConnectionOptions",
    "Host",
    "SessionRefusedError",
    "StaleConnectionError",
    "is_connection_lost",
    "is_session_expired",
]

logger = logging.getLogger("toolsets.mcp")

T = TypeVar("T")

CLOSE_TIMEOUT = 10.0
"""Seconds to wait for a session to close (a stdio server gets 2 s to exit on its own,
then SIGTERM, then SIGKILL after 2 s more)."""


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


# The SDK sends each HTTP request in a task that copies the sender's context, so the
# response hook finds the request it answers here.
_SENT: contextvars.ContextVar[_Sent | None] = contextvars.ContextVar("_SENT", default=None)


async def _note_refusal(response: httpx2.Response) -> None:
    """An HTTP response hook: notes a request refused for its session id — 404 once the
    server forgot the session (the spec), or 400 naming the session, as TypeScript
    servers answer ("Bad Request: No valid session ID provided")."""
    sent = _SENT.get()
    if sent is None or sent.answered:
        return
    status = response.status_code
    if status < 400:
        # Accepted: a later refusal (of a follow-up) changes nothing. (Every request of
        # the call goes within the one session, if the server keeps sessions at all.)
        sent.answered = True
    elif status in (400, 404) and _in_session(response.request):
        if status == 404:
            sent.refused = True
        else:
            await response.aread()
            sent.refused = b"session" in response.content.lower()


def _in_session(request: httpx2.Request) -> bool:
    """Whether ``request`` went within a session (it carries the session id). Read from
    the raw header names: httpx2's ``in`` decodes every header, on every response."""
    return any(name.lower() == b"mcp-session-id" for name, _ in request.headers.raw)


async def _on_connection(
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
        # The SDK makes its own error of an HTTP 400/404 (or takes the one in the body,
        # with any code): the status the hook saw is what tells.
        if sent.refused or is_session_expired(exc):
            raise SessionRefusedError(exc.message) from exc
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
        async with httpx2.AsyncClient(
            headers=dict(transport.headers),
            auth=transport.auth,
            timeout=timeout,
            event_hooks={"response": [_note_refusal]},
        ) as http_client:
            yield streamable_http_client(transport.url, http_client=http_client)

    async def own(self) -> None:
        """The owner task's body: open, serve until closed or broken, close."""
        try:
            with anyio.CancelScope() as self._scope:
                await self._serve()
        except Exception as exc:  # the boundary where transport failures arrive (as groups)
            self.error = exc
            if self.ready.is_set():
                logger.warning("MCP connection to %s lost: %s", self.target, describe(exc))
        finally:
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


async def _make_connection(options: ConnectionOptions) -> Connection:
    return Connection(options)


class _Portal:
    """A background thread with its own event loop, hosting owner tasks for toolsets used
    without ``async with`` (so no caller's task has to stay alive for them)."""

    def __init__(self) -> None:
        self._cm: Any = None
        self._portal: anyio.from_thread.BlockingPortal | None = None

    async def start(self) -> None:
        backend = sniffio.current_async_library()
        self._cm = anyio.from_thread.start_blocking_portal(backend)
        self._portal = await anyio.to_thread.run_sync(self._cm.__enter__)

    async def run(self, fn: Callable[..., Awaitable[T]], *args: Any) -> T:
        """Run ``fn(*args)`` on the portal's loop and wait for it without blocking ours.

        (The portal's methods block, and trio forbids calling them from a loop's thread:
        each goes through a worker thread.)"""
        assert self._portal is not None
        future = await anyio.to_thread.run_sync(self._portal.start_task_soon, fn, *args)
        try:
            return await anyio.to_thread.run_sync(future.result, abandon_on_cancel=True)
        except anyio.get_cancelled_exc_class():
            future.cancel()
            raise
        except concurrent.futures.CancelledError as exc:  # the portal was stopped under it
            raise ConnectionError("the MCP toolset was shut down", target=None) from exc

    async def start_task(self, fn: Callable[[], Awaitable[None]]) -> None:
        assert self._portal is not None
        await anyio.to_thread.run_sync(self._portal.start_task_soon, fn)

    async def call(self, fn: Callable[[], None]) -> None:
        assert self._portal is not None
        await anyio.to_thread.run_sync(self._portal.call, fn)

    async def stop(self) -> None:
        if self._cm is not None:
            cm, portal = self._cm, self._portal
            self._cm, self._portal = None, None
            # Owners were asked to close; anything still running there is cancelled.
            if portal is not None:
                await anyio.to_thread.run_sync(portal.call, portal.stop, True)
            await anyio.to_thread.run_sync(cm.__exit__, None, None, None)


class Host:
    """Where the owner tasks of one toolset run, and the one live connection.

    ``connect`` returns the live connection, opening one if needed (one at a time);
    ``call`` runs an SDK call on it — on our loop, or through the portal.
    """

    def __init__(
        self, options_factory: Callable[[], ConnectionOptions], secrets: Sequence[str] = ()
    ) -> None:
        self._options_factory = options_factory
        self.secrets = tuple(secrets)
        """What the session's server could quote back that is a secret (see the
        transports' ``secrets``): masked in what it sends and in errors quoting it."""
        self._task_group: TaskGroup | None = None
        self._portal: _Portal | None = None
        self._connection: Connection | None = None
        self._opened: list[Connection] = []  # every connection whose owner may still run
        self._lock = anyio.Lock()
        self._closed = False

    @property
    def connection(self) -> Connection | None:
        return self._connection

    def attach(self, task_group: TaskGroup) -> None:
        """Host owner tasks in ``task_group`` (the toolset's ``async with``)."""
        self._task_group = task_group

    async def connect(self) -> Connection:
        """The live connection, opened if there is none.

        Raises:
            ConnectionError: the server cannot be reached (or did not answer in time).
        """
        live = self._connection
        if live is not None and live.alive:
            return live
        async with self._lock:
            if self._closed:
                raise ConnectionError(
                    "this MCP toolset was shut down while connecting", target=None
                )
            live = self._connection
            if live is not None and live.alive:
                return live
            # Forget connections whose owners have finished (a long life with crashes).
            self._opened = [c for c in self._opened if not c.closed.is_set()]
            options = self._options_factory()
            if self._task_group is not None:
                connection = Connection(options)
                self._connection = connection
                self._opened.append(connection)
                self._task_group.start_soon(connection.own)
                await self._wait_ready(connection, connection.ready.wait)
            else:
                transport = options.transport
                if isinstance(transport, StreamableHttp) and transport.http_client is not None:
                    raise RuntimeError(
                        "an injected http_client belongs to your event loop: use "
                        "`async with McpToolset(...)` so the session runs on it too"
                    )
                if self._portal is None:
                    portal = _Portal()
                    await portal.start()
                    self._portal = portal
                # Made on the portal's loop: its events belong to the loop that uses them.
                connection = await self._portal.run(_make_connection, options)
                self._connection = connection
                self._opened.append(connection)
                await self._portal.start_task(connection.own)
                await self._wait_ready(connection, lambda: self._via_portal(connection.ready.wait))
            if connection.error is not None or connection.client is None:
                error = connection.error or RuntimeError("closed while connecting")
                stderr = connection.stderr.tail() if connection.stderr is not None else ""
                why = redact(describe(error) + stderr, self.secrets)
                raise ConnectionError(
                    f"cannot connect to MCP server {connection.target}: {why}",
                    target=connection.target,
                ) from error
            return connection

    async def _wait_ready(
        self, connection: Connection, wait: Callable[[], Awaitable[None]]
    ) -> None:
        timeout = connection.options.connect_timeout
        with anyio.move_on_after(timeout) as scope:
            await wait()
        if scope.cancelled_caught:
            await self._close(connection)
            stderr = connection.stderr.tail() if connection.stderr is not None else ""
            raise ConnectionError(
                f"MCP server {connection.target} did not finish connecting within "
                f"{timeout:g} s{redact(stderr, self.secrets)}",
                target=connection.target,
            )

    async def _via_portal(self, fn: Callable[[], Awaitable[T]]) -> T:
        assert self._portal is not None
        return await self._portal.run(fn)

    def call(
        self,
        connection: Connection,
        fn: Callable[..., Awaitable[T]],
        args: tuple[Any, ...] = (),
    ) -> Awaitable[T]:
        """Run ``fn(client, *args)`` on ``connection`` (from `connect`), on its own loop.

        Raises:
            StaleConnectionError: the connection was found dead first; nothing was sent.
            SessionRefusedError: the server refused the request for its session id.
        """
        # Not a coroutine itself, and over stdio on our own loop nothing is added to the
        # SDK's: every call, on the way to the SDK, holds fewer frames and objects.
        if self._portal is not None and self._task_group is None:
            return self._portal.run(_on_connection, connection, fn, args)
        if connection.over_http:
            return _on_connection(connection, fn, args)
        client = connection.client
        assert client is not None
        if not connection.alive:  # the owner task, on this loop, saw the server exit
            raise StaleConnectionError(connection.target)
        return fn(client, *args)

    async def discard(self, connection: Connection) -> None:
        """Retire a connection found broken (or expired): the next use opens a new one,
        and its owner task is told to close (without waiting here)."""
        connection.alive = False
        if self._connection is connection:
            self._connection = None
        if self._portal is not None and self._task_group is None:
            await self._portal.call(connection.close)
        else:
            connection.close()

    async def _close(self, connection: Connection) -> None:
        await self.discard(connection)
        with anyio.move_on_after(CLOSE_TIMEOUT, shield=True):
            if self._portal is not None and self._task_group is None:
                await self._portal.run(connection.closed.wait)
            else:
                await connection.closed.wait()

    async def close(self) -> None:
        """Close every connection this host opened (a stdio server's process ends) and
        stop the portal; idempotent. A connect still under way fails."""
        self._closed = True
        with anyio.CancelScope(shield=True):
            for connection in list(self._opened):
                await self._close(connection)
            self._opened.clear()
            if self._portal is not None:
                portal, self._portal = self._portal, None
                await portal.stop()
            self._task_group = None
