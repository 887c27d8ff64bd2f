"""Change announcements: that the tools, resources or prompts changed, and to whom.

A 2025-11-25 client hears by a notification on its connection's standalone stream
(``notifications/tools/list_changed``, ...); a 2026-07-28 client by the events of its
``subscriptions/listen`` streams (the SDK's listen handler over `ClientBus`). News for
all (the toolset's tools changed, the server's own resources or prompts) reaches every
client; a client's own (what its call kept in ``ctx.state`` changed the tools it is
offered) that client only. Every client is told at once, each within
`ANNOUNCE_TIMEOUT`, so that one that stopped reading holds up no other."""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, Literal

import anyio
import anyio.lowlevel
import mcp.types as mt
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.context import CallNext, HandlerResult
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.subscriptions import (
    ListenHandler,
    PromptsListChanged,
    ResourcesListChanged,
    ServerEvent,
    ToolsListChanged,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from toolsets._toolset import Toolset
from toolsets.mcp.server._feature import Registration
from toolsets.mcp.server._gateway import AnnouncesChanges, composition
from toolsets.mcp.server._request import Context, connection
from toolsets.mcp.server._state import Requests
from toolsets.mcp.server._telemetry import trace_requests

if TYPE_CHECKING:
    from mcp.server.connection import Connection

__all__ = ["ANNOUNCE_TIMEOUT", "AnnouncingServer", "Changes", "ClientBus", "tell"]

ANNOUNCE_TIMEOUT = 5.0
"""Seconds a 2025-11-25 client has to take the news that the tools changed."""

Telling = Callable[["Connection"], Awaitable[None]]
"""How a 2025-11-25 connection is told some news."""

_LISTENING: contextvars.ContextVar[object | None] = contextvars.ContextVar(
    "toolsets_mcp_listening", default=None
)
"""The client (see `Requests.client`) whose ``subscriptions/listen`` stream is being
opened, for `ClientBus.subscribe`."""


class AnnouncingServer(Server[Any]):
    """The SDK's low-level server, announcing list changes to 2025-11-25 clients on
    every transport (the streamable HTTP manager asks for options without saying), its
    requests toolsets' telemetry spans while that is on (`trace_requests`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        trace_requests(self)

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        changes = notification_options or NotificationOptions(
            tools_changed=True, prompts_changed=True, resources_changed=True
        )
        return super().create_initialization_options(changes, experimental_capabilities, extensions)


class ClientBus:
    """The subscription bus of 2026-07-28 listen streams, knowing whose each stream is:
    news for all (the toolset's tools changed) reaches every stream, a client's own
    (its search loaded tools) that client's streams only."""

    def __init__(self) -> None:
        self._listeners: dict[object, tuple[object | None, Callable[[ServerEvent], None]]] = {}

    async def publish(self, event: ServerEvent, *, to: object | None = None) -> None:
        """Deliver ``event`` to the streams of ``to`` (None: to all)."""
        for client, deliver in list(self._listeners.values()):
            if to is None or client == to:
                deliver(event)  # the SDK's listen handler's: buffers, never raises
        await anyio.lowlevel.checkpoint()

    def listens(self, client: object) -> bool:
        """Whether ``client`` has a stream open."""
        return any(each == client for each, _ in self._listeners.values())

    def subscribe(self, listener: Callable[[ServerEvent], None]) -> Callable[[], None]:
        token = object()
        self._listeners[token] = (_LISTENING.get(), listener)
        return lambda: self._listeners.pop(token, None) and None


async def tell(connection: Connection, telling: Telling) -> None:
    """Tell a 2025-11-25 client some news, waiting at most `ANNOUNCE_TIMEOUT`."""
    with anyio.move_on_after(ANNOUNCE_TIMEOUT):
        await telling(connection)


def _tools_changed(connection: Connection) -> Awaitable[None]:
    return connection.send_tool_list_changed()


_ANNOUNCEMENTS: dict[str, tuple[ServerEvent, Telling]] = {
    "tools": (ToolsListChanged(), _tools_changed),
    "resources": (
        ResourcesListChanged(),
        lambda connection: connection.send_resource_list_changed(),
    ),
    "prompts": (PromptsListChanged(), lambda connection: connection.send_prompt_list_changed()),
}
"""What announces a change of each list: the event for 2026-07-28 listeners, and the
notification a 2025-11-25 client gets."""


class Changes:
    """Announces the changes of the lists ``toolset`` and the server offer, while
    serving (`announcing`), and to one client the changes of its own (`tell_client`)."""

    def __init__(self, toolset: Toolset, requests: Requests) -> None:
        self._toolset = toolset
        self._requests = requests
        self.bus = ClientBus()
        self._listener = ListenHandler(self.bus)
        self._changes: MemoryObjectSendStream[None] | None = None
        self._pending: dict[str, None] = {}
        """The lists that changed since the last announcement, in order."""
        self._legacy: set[Connection] = set()
        """The 2025-11-25 connections that can be told (see `track_connection`)."""

    def handlers(self) -> Iterator[Registration]:
        yield "subscriptions/listen", mt.SubscriptionsListenRequestParams, self.listen

    async def listen(
        self, ctx: Context, params: mt.SubscriptionsListenRequestParams
    ) -> mt.SubscriptionsListenResult:
        """``subscriptions/listen`` (2026-07-28): the SDK's stream of the events asked
        for, which also hears the list changes of its own client."""
        _, invocation = await self._requests.context(ctx)
        listening = _LISTENING.set(self._requests.client(ctx, invocation))
        try:
            return await self._listener(ctx, params)
        finally:
            _LISTENING.reset(listening)

    async def track_connection(self, ctx: Context, call_next: CallNext) -> HandlerResult:
        """Middleware: remember each 2025-11-25 connection that can be told of list
        changes (a 2026-07-28 client listens with ``subscriptions/listen`` instead)."""
        on = connection(ctx)
        if (
            on not in self._legacy
            and on.has_standalone_channel
            and ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS
        ):
            self._legacy.add(on)
            on.exit_stack.callback(self._legacy.discard, on)
        return await call_next(ctx)

    @contextlib.asynccontextmanager
    async def announcing(self) -> AsyncIterator[None]:
        """While serving: every change of a list is announced (soon, once for changes
        that come together), the toolset's own included."""
        async with anyio.create_task_group() as tasks:
            send, receive = anyio.create_memory_object_stream[None](1)
            self._changes = send
            watched = [e for e in composition(self._toolset) if isinstance(e, AnnouncesChanges)]
            stops = [each.on_tools_changed(self.tools_changed) for each in watched]
            tasks.start_soon(self._announce, receive)
            try:
                yield
            finally:
                for stop in stops:
                    stop()
                self._changes = None
                send.close()

    def tools_changed(self) -> None:
        self.changed("tools")

    def changed(self, kind: Literal["tools", "resources", "prompts"]) -> None:
        """Announce (soon) that the list ``kind`` changed; nothing when not serving
        (clients list when they connect)."""
        if self._changes is not None:
            self._pending[kind] = None
            with contextlib.suppress(anyio.WouldBlock):  # one already waiting covers it
                self._changes.send_nowait(None)

    async def _announce(self, changes: MemoryObjectReceiveStream[None]) -> None:
        async with changes:
            async for _ in changes:
                kinds, self._pending = list(self._pending), {}
                for kind in kinds:
                    event, telling = _ANNOUNCEMENTS[kind]
                    await self.publish(event, self._legacy, telling)

    async def publish(
        self, event: ServerEvent, connections: Iterable[Connection], telling: Telling
    ) -> None:
        """Tell 2026-07-28 listeners of ``event`` (the subscription bus), and each of
        ``connections`` (2025-11-25) by ``telling``: all at once, each bounded."""
        await self.bus.publish(event)
        async with anyio.create_task_group() as tasks:
            for each in list(connections):
                tasks.start_soon(tell, each, telling)

    def hears(self, client: object) -> bool:
        """Whether ``client`` (see `Requests.client`) would hear of a change of its own."""
        return client in self._legacy or self.bus.listens(client)

    async def tell_client(self, client: object) -> None:
        """Tell ``client`` (alone) that the tools it is offered changed."""
        await self.bus.publish(ToolsListChanged(), to=client)
        legacy = next((each for each in self._legacy if each is client), None)
        if legacy is not None:
            await tell(legacy, _tools_changed)
