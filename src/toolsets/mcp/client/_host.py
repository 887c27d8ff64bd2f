"""Where the owner task of a toolset's session runs, and its one live connection
(internal): `Host`.

Inside ``async with toolset`` the owner tasks run in the toolset's task group; used
without it, on a background thread running its own event loop (`_Portal`), so that
nothing is tied to the task that happened to call first. A call runs on the
connection's own loop either way.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

import anyio
import anyio.from_thread
import anyio.to_thread
import sniffio
from anyio.abc import TaskGroup

from toolsets._auth import redact
from toolsets._errors import ConnectionError
from toolsets.mcp.client._connection import (
    Connection,
    ConnectionOptions,
    StaleConnectionError,
    call_on,
    describe,
)
from toolsets.mcp.client._transports import StreamableHttp

__all__ = ["CLOSE_TIMEOUT", "Host"]

T = TypeVar("T")

CLOSE_TIMEOUT = 10.0
"""Seconds to wait for a session to close (a stdio server gets 2 s to exit on its own,
then SIGTERM, then SIGKILL after 2 s more)."""


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
            CredentialRefusedError: the server refused the session's credential.
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
                refusal = connection.connecting.unauthorized
                if refusal is not None:
                    raise connection.refused(refusal, "") from error
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
            CredentialRefusedError: the server refused the session's credential.
        """
        # Not a coroutine itself, and over stdio on our own loop nothing is added to the
        # SDK's: every call, on the way to the SDK, holds fewer frames and objects.
        if self._portal is not None and self._task_group is None:
            return self._portal.run(call_on, connection, fn, args)
        if connection.over_http:
            return call_on(connection, fn, args)
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
