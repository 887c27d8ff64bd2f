"""`McpServer`: any toolset served as an MCP server, on the official SDK's low-level
`Server` (both protocol eras: the 2026-07-28 per-request one and the 2025-11-25
handshake).

Every call goes through the one call path (`toolsets._invoke.invoke`): arguments checked,
scopes, confirmation (asked through elicitation), credentials (from the server's
configuration, never the client's own token), the deadline, the callbacks, errors as
results. The transports are in `_server_http` (streamable HTTP) and here (stdio).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import logging
import os
import sys
import time
import weakref
from collections import OrderedDict
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, TypeVar

import anyio
import anyio.lowlevel
import mcp.types as mt
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp import MCPError
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http import EventStore
from mcp.server.subscriptions import (
    ListenHandler,
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ServerEvent,
    ToolsListChanged,
)
from mcp.shared.inbound import (
    find_invalid_x_mcp_header,
    validate_mcp_param_headers,
    x_mcp_header_map,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from toolsets._auth import AuthConfig, AuthCredential
from toolsets._client_channel import LogLevel
from toolsets._concurrency import check_timeout
from toolsets._consumers import (
    CallsTools,
    ask,
    check_credentials,
    lookup_credential,
    toolset_of,
)
from toolsets._context import Invocation, ToolConfirmation, ToolContext, state_writes
from toolsets._declaration import ToolDeclaration
from toolsets._errors import MissingClientCapabilityError, ToolCallError, ToolsetError
from toolsets._ids import new_id
from toolsets._invoke import (
    DEFAULT_TOOL_TIMEOUT,
    NO_CALLBACKS,
    Callbacks,
    Done,
    Outcome,
)
from toolsets._json import JsonValue
from toolsets._results import clip, error_result, is_error_result
from toolsets._tool import FirstTime, Tool, call_declaration
from toolsets._toolset import Toolset
from toolsets._validation import ArgumentChecker
from toolsets.mcp import _server_http
from toolsets.mcp._channel import ASK_TIMEOUT, InputRequired, McpChannel
from toolsets.mcp._convert import result_to_mcp, tool_to_mcp
from toolsets.mcp._relay import TOOLS_CHANGED_META, confirmation_meta
from toolsets.mcp._resources import Catalog, Prompt, Resource, ResourceTemplate
from toolsets.mcp._server_spent import MemorySpentStates, SpentStates
from toolsets.mcp._toolset import McpToolset

if TYPE_CHECKING:
    from mcp.server.connection import Connection
    from starlette.applications import Starlette

__all__ = [
    "CONFIRMATION_TIMEOUT",
    "DEFAULT_PAGE_SIZE",
    "MAX_SESSION_STATES",
    "SESSION_STATE_TTL",
    "CredentialsFor",
    "IncomingRequest",
    "InvocationFor",
    "McpServer",
]

logger = logging.getLogger("toolsets.mcp.server")

_T = TypeVar("_T")

DEFAULT_PAGE_SIZE = 1000
"""Tools (resources, prompts) per page of a list answer."""
CONFIRMATION_TIMEOUT = ASK_TIMEOUT
"""Seconds the user has to answer a confirmation asked mid-request (2025-11-25)."""
DEFAULT_LOG_LEVEL: LogLevel = "info"
"""The lowest level of the log messages a tool sends a 2025-11-25 client that did not
say (with ``logging/setLevel``)."""
MAX_PAUSES = 8
"""How many times one call may pause for confirmation or a credential."""

ANNOUNCE_TIMEOUT = 5.0
"""Seconds a 2025-11-25 client has to take the news that the tools changed."""
MAX_ROUTES = 10_000
"""Resource URIs, templates and prompt names a gateway remembers the upstream server of
(the least recently used are forgotten; a name not remembered is asked of each)."""
MAX_COMPLETIONS = 100
"""Values one ``completion/complete`` answer may hold (MCP's limit)."""
MAX_SESSION_STATES = 10_000
"""How many clients known by an `Invocation.session_id` only (2026-07-28 and stateless
HTTP) a server keeps the state of, unless told otherwise; past it the least recently
used is forgotten."""
SESSION_STATE_TTL = 24 * 3600.0
"""Seconds the state kept for an `Invocation.session_id` outlives its client's last
request, unless told otherwise."""

INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
REQUEST_TIMEOUT = -32001


@dataclass(frozen=True, kw_only=True)
class IncomingRequest:
    """What a request from an MCP client says about who sends it: given to
    ``credentials`` and ``invocation`` functions."""

    method: str
    """The MCP method, e.g. ``tools/call``."""
    protocol_version: str
    """The protocol version the client speaks."""
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    """The HTTP request's headers, names in lower case (empty over stdio). They may
    hold the client's credentials: never forward them as they are."""
    client: mt.Implementation | None = None
    """The client's name and version, when it said."""
    session_id: str | None = None
    """The MCP session, as the server made it (stateful streamable HTTP only; None
    over stdio and stateless HTTP, whatever ``Mcp-Session-Id`` header came)."""

    @property
    def bearer_token(self) -> str | None:
        """The token of an ``Authorization: Bearer`` header, if any."""
        scheme, _, token = self.headers.get("authorization", "").partition(" ")
        return token.strip() or None if scheme.lower() == "bearer" else None


CredentialsFor: TypeAlias = Callable[[IncomingRequest, AuthConfig], Any]
"""Answers which credential a tool's ``auth_config`` gets for a request: an
`AuthCredential`, the key or token as a string, or None (none: the call is refused);
a sync or async function."""
InvocationFor: TypeAlias = Callable[[IncomingRequest], "Invocation | Awaitable[Invocation]"]
"""The `Invocation` (user, scopes, services, ...) tools run in for a request; a sync or
async function (a sync one runs in a worker thread: it may block)."""


class _Server(Server[Any]):
    """The SDK's low-level server, announcing list changes to 2025-11-25 clients on
    every transport (the streamable HTTP manager asks for options without saying)."""

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


class McpServer(CallsTools):
    """Serve a toolset (or tools and functions) to MCP clients.

    ``tools/list`` asks the toolset for the requesting client's tools, page by page;
    ``tools/call`` calls one through the same path as toolsets' agent loop. A tool that
    requires confirmation asks the user through elicitation (when the client can ask:
    otherwise the call is refused, saying why); a tool that needs a credential gets the
    one ``credentials`` gives. A tool can log to its client and ask it (``ctx.log``,
    ``ctx.elicit``, ``ctx.sample``, ``ctx.list_roots``, ``ctx.ask``): on 2026-07-28 a
    call that asks ends with ``input_required`` and runs again from the top when the
    client calls again with the answers (see `ToolContext.ask`). When the toolset is, or
    combines, an `McpToolset` (a gateway), the upstream servers' resources and prompts
    are served too, and a change of their tools is announced to the clients.

    Resources, resource templates and prompts of your own (`Resource`,
    `ResourceTemplate`, `Prompt`, or functions decorated with `resource`,
    `resource_template`, `prompt`) are served beside any upstream server's, and come
    first: an upstream resource at the same URI, or prompt of the same name, is hidden.
    Clients may subscribe to a resource; `resource_updated` tells them it changed. A
    change of the tools (a `StaticToolset` pushed to or removed from, an upstream
    server's announcement) or of the resources and prompts (`add_resources`,
    `add_prompts`, ...) is announced to the clients.

    What a call writes to ``ctx.state`` is kept for the later requests of the same
    client (``temp:`` keys live for the call only, as for an agent loop's run; ``app:``
    and ``user:`` keys, which the agent loop shares between sessions, are kept with the
    client like the others: the server keeps no state beyond its clients'), and when
    that changes the tools the client is offered or their declarations (a `searchable`
    search loaded some; `code_mode`'s ``run_code`` describes them) that client alone
    is told: on 2025-11-25 by
    ``notifications/tools/list_changed``, on 2026-07-28 through its
    ``subscriptions/listen`` streams (and the call's result says so under ``_meta``
    ``io.toolsets/toolsChanged``, for `McpToolset` to list again at once). Who the
    client is: over stdio (either protocol) the stream, over stateful HTTP on
    2025-11-25 the MCP session; otherwise (2026-07-28 over HTTP, which has no
    session, or ``stateless=True``) the ``session_id`` of the `Invocation` that
    ``invocation`` gives, e.g. a digest of ``request.bearer_token`` (an id is no
    secret: never the token itself). Those are kept in this process's memory, for the
    ``max_session_states`` ids most recently used, each for ``session_state_ttl``
    seconds after its last request. Without an id nothing is kept: a `searchable` catalogue
    lists ``search_tools`` and the pinned tools only, and a client calls a tool it
    found by its name.

    Args:
        toolset: What to serve: a toolset, or a list of tools and functions.
        name: The server's name, as clients see it.
        version: The server's version (default: toolsets' own).
        instructions: How to use the server, for the client's model.
        tool_timeout: Seconds a call may take, unless the tool says otherwise.
        callbacks: ``before_tool`` / ``after_tool`` / ``on_tool_error`` callbacks.
        credentials: The credential for each security scheme (by name; an
            `AuthCredential`, or the key or token as a string), or a function of the
            `IncomingRequest` and the tool's `AuthConfig` answering one per request
            (e.g. the API key of the user whose bearer token came in). The client's own
            ``Authorization`` header is never passed on.
        invocation: The `Invocation` tools run in (user, scopes, services), or a
            function of the `IncomingRequest` making one per request (by default, a
            new one per request, in the MCP session's id when there is one). Its
            ``session_id`` names the client whose state is kept where the transport
            has no session (see above).
        page_size: Items per page of ``tools/list`` (and resources, prompts).
        resources: Resources and resource templates of the server's own.
        prompts: Prompts of the server's own.
        max_session_states: How many clients known by an `Invocation.session_id`
            only the state is kept of (the least recently used are forgotten).
        session_state_ttl: Seconds such a state is kept after its client's last
            request.
        spent_states: Where the request states taken are remembered (a 2026-07-28
            call that asked its client, a confirmation above all, comes back with
            one; each is taken once, so answers sent twice run nothing twice): by
            default this process's memory (`MemorySpentStates`). Processes that
            serve the same clients should share one, as they share the state key.

    Raises:
        ToolDefinitionError: two resources at one URI (or two templates alike), two
            prompts of one name, or an item of the wrong kind (``field`` says which).
    """

    def __init__(
        self,
        toolset: Toolset | Iterable[Tool | Callable[..., Any]],
        *,
        name: str = "toolsets",
        version: str | None = None,
        instructions: str | None = None,
        tool_timeout: float = DEFAULT_TOOL_TIMEOUT,
        callbacks: Callbacks | None = None,
        credentials: Mapping[str, AuthCredential | str] | CredentialsFor | None = None,
        invocation: Invocation | InvocationFor | None = None,
        page_size: int = DEFAULT_PAGE_SIZE,
        resources: Iterable[Resource | ResourceTemplate] = (),
        prompts: Iterable[Prompt] = (),
        max_session_states: int = MAX_SESSION_STATES,
        session_state_ttl: float = SESSION_STATE_TTL,
        spent_states: SpentStates | None = None,
    ) -> None:
        self.toolset = toolset_of(toolset)
        """What is served."""
        self.name = name
        self.default_timeout = check_timeout(tool_timeout, "tool_timeout")
        """Seconds a call may take, unless the tool says otherwise."""
        self.callbacks = callbacks if callbacks is not None else NO_CALLBACKS
        check_credentials(credentials)
        self._credentials = credentials
        self._invocation = invocation
        if page_size < 1:
            raise ValueError("page_size must be at least 1")
        self.page_size = page_size
        self._sources = _mcp_sources(self.toolset)
        self._bus = _ClientBus()
        self._listener = ListenHandler(self._bus)
        self._changes: MemoryObjectSendStream[None] | None = None
        self._pending: dict[str, None] = {}
        """The lists that changed since the last announcement, in order."""
        self._legacy: set[Connection] = set()
        self._subscribers: dict[str, set[Connection]] = {}
        """The 2025-11-25 connections subscribed to each resource URI."""
        self._catalog = Catalog(self._changed)
        self._catalog.add_resources(resources)
        self._catalog.add_prompts(prompts)
        self._listings: weakref.WeakKeyDictionary[Tool, _Listing] = weakref.WeakKeyDictionary()
        self._listed = FirstTime()
        """The tools listed before (see `_make_listings`)."""
        self._by_name = _ByName()
        self._resource_owner = _Owners()
        self._template_owner = _Owners()  # by the URI before its first {
        self._prompt_owner = _Owners()
        self.server: Server[Any] = _Server(
            name,
            version=version or _version(),
            instructions=instructions,
            lifespan=self._lifespan,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_subscriptions_listen=self._listen,
            on_list_resources=self._list_resources,
            on_list_resource_templates=self._list_resource_templates,
            on_read_resource=self._read_resource,
            on_subscribe_resource=self._subscribe,
            on_unsubscribe_resource=self._unsubscribe,
            on_list_prompts=self._list_prompts,
            on_get_prompt=self._get_prompt,
            on_completion=self._complete,
            get_tool_input_schema=_checked_when_called,
        )
        """The SDK's low-level server (for what this class does not offer)."""
        self.server.middleware.append(self._track_connection)
        # Registered here: passing it to the constructor warns that logging is deprecated
        # (it is, on 2026-07-28, where the SDK answers logging/setLevel as unknown).
        self.server.add_request_handler(
            "logging/setLevel", mt.SetLevelRequestParams, self._set_log_level
        )
        self._log_levels: weakref.WeakKeyDictionary[Connection, LogLevel] = (
            weakref.WeakKeyDictionary()
        )
        self._states: weakref.WeakKeyDictionary[object, dict[str, Any]] = (
            weakref.WeakKeyDictionary()
        )
        """Each client's state (what its calls wrote to ``ctx.state``), by its
        connection or stream (see `_client`)."""
        if max_session_states < 0:
            raise ValueError("max_session_states must not be negative")
        self._session_states = _SessionStates(
            max_session_states, check_timeout(session_state_ttl, "session_state_ttl")
        )
        """The state of each client known by an `Invocation.session_id` only."""
        self.spent_states: SpentStates = (
            spent_states if spent_states is not None else MemorySpentStates()
        )
        """Where the request states taken are remembered (see ``spent_states``)."""
        self._state_ttl = 0.0
        """Seconds a request state this server seals lives (its security's)."""
        shared = os.environ.get(_server_http.STATE_KEY_VARIABLE)
        self.use_request_state_keys([shared] if shared else None)

    @property
    def tool_timeout(self) -> float:
        """Seconds a call may take, unless the tool says otherwise."""
        return self.default_timeout

    def use_request_state_keys(self, keys: Sequence[bytes | str] | None) -> None:
        """Seal the state of a call that asks for confirmation (protocol 2026-07-28)
        under ``keys`` (each at least 32 bytes; the first seals, all unseal): processes
        that serve the same clients must share them, since the answer may reach another
        one. None: a key of this process only. By default the key is the environment
        variable ``TOOLSETS_MCP_STATE_KEY`` when it is set (`run_http` sets it for its
        workers)."""
        security = (
            RequestStateSecurity.ephemeral()
            if keys is None
            else RequestStateSecurity(keys=list(keys))
        )
        self._state_ttl = security.ttl
        boundary = RequestStateBoundary(security, default_audience=self.name)
        middleware = self.server.middleware
        middleware[:] = [m for m in middleware if not isinstance(m, RequestStateBoundary)]
        middleware.append(boundary)

    # --- transports -------------------------------------------------------------------

    async def run_stdio(self) -> None:
        """Serve one client over this process's stdin and stdout until it closes them.
        While serving, anything else written to stdout goes to stderr: only the
        protocol is on stdout."""
        sys.stdout.flush()
        # The SDK points file descriptor 1 elsewhere while serving; Python's own stdout
        # buffers and would write what a tool prints once serving ends, on the wire.
        async with stdio_server() as (read, write):
            with contextlib.redirect_stdout(sys.stderr):
                await self.server.run(read, write, self.server.create_initialization_options())

    def http_app(
        self,
        path: str = "/mcp",
        *,
        stateless: bool = False,
        json_response: bool = False,
        allowed_hosts: Sequence[str] | None = None,
        allowed_origins: Sequence[str] | None = None,
        max_body_bytes: int | None = None,
        event_store: EventStore | Literal["memory"] | None = "memory",
        retry_interval: float | None = _server_http.DEFAULT_RETRY_INTERVAL,
    ) -> Starlette:
        """The server as an ASGI (Starlette) app speaking streamable HTTP at ``path``.

        Run it with any ASGI server, or mount it in another app; its lifespan opens the
        toolset and closes it. Starlette and FastAPI do not run a mounted app's
        lifespan: enter it from the outer app's own, ``async with
        mcp_app.router.lifespan_context(mcp_app): yield``.

        Args:
            path: Where the MCP endpoint is.
            stateless: Keep no session between requests (2025-11-25 clients; 2026-07-28
                ones never have one), so that any number of processes can serve the
                same clients behind a load balancer. A 2025-11-25 client then cannot be
                asked for confirmation mid-call, nor hear of list changes.
            json_response: Answer with JSON rather than an event stream where the
                protocol allows it.
            allowed_hosts: ``Host`` headers accepted (against DNS rebinding): ``name``
                (on its scheme's default port), ``name:PORT`` or ``name:*`` (any port),
                name and port compared exactly; by default this machine's names only.
                Name the public host name when serving beyond this machine.
            allowed_origins: ``Origin`` headers accepted (``scheme://name[:PORT|:*]``,
                or ``null``); by default this machine's. A request without one (not
                from a browser page) is accepted.
            max_body_bytes: The largest request body (default 4 MiB); a bigger one is
                refused with 413.
            event_store: Where each request stream's events are kept (stateful mode), so
                that a client whose stream broke, or that a tool closed
                (`ToolContext.close_stream`), reconnects with ``Last-Event-ID`` and gets the
                rest: ``"memory"``, a bounded `SessionEventStore` keeping each session's
                events apart; your own store; or None, no resumable streams.
            retry_interval: Seconds a client is told to wait before reconnecting to a
                closed stream (None: the client's default).
        """
        return _server_http.http_app(
            self,
            path,
            stateless=stateless,
            json_response=json_response,
            allowed_hosts=allowed_hosts,
            allowed_origins=allowed_origins,
            max_body_bytes=max_body_bytes,
            event_store=event_store,
            retry_interval=retry_interval,
        )

    async def serve_http(self, host: str = "127.0.0.1", port: int = 8000, **options: Any) -> None:
        """Serve streamable HTTP with uvicorn in this event loop (asyncio) until
        stopped; ``options`` as for `http_app`, ``log_level``, the connection limits
        of `run_http`, and ``sock``: a socket bound already, served instead of binding
        ``host``:``port``."""
        await _server_http.serve_http(self, host, port, **options)

    def run_http(
        self,
        host: str = "127.0.0.1",
        port: int = 8000,
        *,
        workers: int = 1,
        factory: str | None = None,
        **options: Any,
    ) -> None:
        """Serve streamable HTTP with uvicorn until stopped (this call blocks; it starts
        its own event loop). Binds 127.0.0.1 unless told otherwise.

        Args:
            host: The interface to listen on.
            port: The port (0: any free one).
            workers: Processes to serve with. Each builds its own server from
                ``factory``; more than one needs ``stateless=True`` (no session lives
                in one process) and they share the key sealing confirmation state.
            factory: With ``workers``: ``"module:attribute"`` naming this server (an
                `McpServer` at module level) or a function that makes it.
            **options: As for `http_app`; ``log_level`` (uvicorn's, default
                ``"warning"``); the connection limits, each wait bounded:
                ``header_timeout`` (seconds to send a request's head, from connecting
                or the previous response; default 10), ``body_timeout`` (seconds to
                send the body after the head; 60), ``keep_alive_timeout`` (seconds an
                idle connection waits for a next request; 5), ``max_connections``
                (served at once, the next answered 503 at once; default 10,000 or
                fewer, leaving a quarter of the open-file limit free) and
                ``max_header_bytes`` (the largest request head, past it 431; 16 KiB);
                and ``sock``, a socket bound already, served instead of binding
                ``host``:``port`` (inherited by the workers).
        """
        _server_http.run_http(self, host, port, workers=workers, factory=factory, **options)

    # --- lifecycle --------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def _lifespan(self, _: Server[Any]) -> AsyncIterator[dict[str, Any]]:
        """While serving: the toolset is entered (its sessions open), and changes of
        its tools (and of the resources and prompts) are announced."""
        async with self.toolset, anyio.create_task_group() as tasks:
            send, receive = anyio.create_memory_object_stream[None](1)
            self._changes = send
            stops = [each.on_tools_changed(self._tools_changed) for each in _watched(self.toolset)]
            tasks.start_soon(self._announce, receive)
            try:
                yield {}
            finally:
                for stop in stops:
                    stop()
                self._changes = None
                send.close()

    def _tools_changed(self) -> None:
        self._changed("tools")

    def _changed(self, kind: str) -> None:
        """Announce (soon) that the list ``kind`` changed: ``tools``, ``resources`` or
        ``prompts``; nothing when not serving (clients list when they connect)."""
        if self._changes is not None:
            self._pending[kind] = None
            with contextlib.suppress(anyio.WouldBlock):  # one already waiting covers it
                self._changes.send_nowait(None)

    async def _announce(self, changes: MemoryObjectReceiveStream[None]) -> None:
        async with changes:
            async for _ in changes:
                kinds, self._pending = list(self._pending), {}
                for kind in kinds:
                    event, tell = _ANNOUNCEMENTS[kind]
                    await self._publish(event, self._legacy, tell)

    async def _publish(
        self,
        event: ServerEvent,
        connections: Iterable[Connection],
        tell: Callable[[Connection], Awaitable[None]],
    ) -> None:
        """Tell 2026-07-28 listeners of ``event`` (the subscription bus), and each of
        ``connections`` (2025-11-25) by ``tell``: all at once, each bounded, so that a
        client that stopped reading holds up neither the others nor the next news."""
        await self._bus.publish(event)
        async with anyio.create_task_group() as tasks:
            for connection in list(connections):
                tasks.start_soon(_tell, connection, tell)

    # --- resources and prompts of the server's own ------------------------------------

    def add_resources(self, *items: Resource | ResourceTemplate) -> None:
        """Serve more resources and templates; clients hear that the list changed.

        Raises:
            ToolDefinitionError: one is at a URI (template) already served, or is not a
                resource (nothing is added then).
        """
        self._catalog.add_resources(items)

    def remove_resource(self, uri: str) -> None:
        """Stop serving the resource at ``uri`` (or the template ``uri``); clients
        hear that the list changed.

        Raises:
            KeyError: no resource of the server's own is there.
        """
        self._catalog.remove_resource(uri)

    def add_prompts(self, *prompts: Prompt) -> None:
        """Serve more prompts; clients hear that the list changed.

        Raises:
            ToolDefinitionError: a name is already taken, or one is not a `Prompt`
                (nothing is added then).
        """
        self._catalog.add_prompts(prompts)

    def remove_prompt(self, name: str) -> None:
        """Stop serving the prompt ``name``; clients hear that the list changed.

        Raises:
            KeyError: the server has no prompt of its own of that name.
        """
        self._catalog.remove_prompt(name)

    async def resource_updated(self, uri: str) -> None:
        """Tell the clients subscribed to the resource at ``uri`` that it changed
        (``notifications/resources/updated``), so they read it again: 2025-11-25
        clients that sent ``resources/subscribe``, and 2026-07-28 clients listening
        for it (``subscriptions/listen``). Waits at most `ANNOUNCE_TIMEOUT` for each."""

        def tell(connection: Connection) -> Awaitable[None]:
            return connection.send_resource_updated(uri)

        await self._publish(ResourceUpdated(uri=uri), self._subscribers.get(uri, ()), tell)

    async def _subscribe(
        self, ctx: ServerRequestContext[Any, Any], params: mt.SubscribeRequestParams
    ) -> mt.EmptyResult:
        connection = _connection(ctx)
        if connection is not None and connection.has_standalone_channel:
            uri = str(params.uri)
            subscribers = self._subscribers.setdefault(uri, set())
            if connection not in subscribers:
                subscribers.add(connection)
                connection.exit_stack.callback(self._forget, uri, connection)
        return mt.EmptyResult()

    async def _unsubscribe(
        self, ctx: ServerRequestContext[Any, Any], params: mt.UnsubscribeRequestParams
    ) -> mt.EmptyResult:
        connection = _connection(ctx)
        if connection is not None:
            self._forget(str(params.uri), connection)
        return mt.EmptyResult()

    def _forget(self, uri: str, connection: Connection) -> None:
        subscribers = self._subscribers.get(uri)
        if subscribers is not None:
            subscribers.discard(connection)
            if not subscribers:
                del self._subscribers[uri]

    async def _track_connection(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        """Remember each 2025-11-25 connection that can be told of list changes (a
        2026-07-28 client listens with ``subscriptions/listen`` instead)."""
        connection = _connection(ctx)
        if (
            connection is not None
            and connection not in self._legacy
            and connection.has_standalone_channel
            and ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS
        ):
            self._legacy.add(connection)
            connection.exit_stack.callback(self._legacy.discard, connection)
        return await call_next(ctx)

    # --- tools ------------------------------------------------------------------------

    async def _context(
        self, ctx: ServerRequestContext[Any, Any]
    ) -> tuple[IncomingRequest, Invocation]:
        request = _incoming(ctx)
        given = self._invocation
        made: Invocation
        if given is None:  # each request its own run, in the client's session if any
            session = request.session_id
            if session is None:
                made = Invocation(app_name=self.name)
            else:
                made = Invocation(app_name=self.name, session_id=session)
        elif isinstance(given, Invocation):
            made = given
        else:
            # A sync function may block (a database, a token lookup): in a worker thread.
            made = await ask(given, request)
        kept = self._kept(self._client(ctx, made))
        if kept:  # what the client's calls wrote, over the invocation's own state
            made = replace(made, state={**made.state, **kept})
        return request, made

    def _client(self, ctx: ServerRequestContext[Any, Any], invocation: Invocation) -> object | None:
        """Whom a request comes from, for the state its calls keep (`_keep_state`) and
        the list changes it hears: its MCP session (stateful HTTP on 2025-11-25), or its
        stream (stdio, and any stream serving one client: on 2026-07-28 each request
        has a connection of its own, the stream is theirs); else (2026-07-28 and
        stateless HTTP) the ``session_id`` the server's `Invocation` gives, None when
        it gives none."""
        connection = _connection(ctx)
        if connection is not None and (
            connection.session_id is not None
            or (ctx.request is None and connection.has_standalone_channel)
        ):
            if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
                return connection.outbound
            return connection
        return invocation.session_id

    def _kept(self, client: object | None) -> dict[str, Any] | None:
        """What the calls of ``client`` (see `_client`) wrote to their state."""
        if client is None:
            return None
        if isinstance(client, str):
            return self._session_states.get(client)
        return self._states.get(client)

    async def _listen(
        self, ctx: ServerRequestContext[Any, Any], params: mt.SubscriptionsListenRequestParams
    ) -> mt.SubscriptionsListenResult:
        """``subscriptions/listen`` (2026-07-28): the SDK's stream of the events asked
        for, which also hears the list changes of its own client (see `_client`)."""
        _, invocation = await self._context(ctx)
        listening = _LISTENING.set(self._client(ctx, invocation))
        try:
            return await self._listener(ctx, params)
        finally:
            _LISTENING.reset(listening)

    async def _tools(self, ctx: ToolContext) -> Sequence[Tool]:
        try:
            return await self.toolset.list_tools(ctx)
        except (ToolsetError, TimeoutError) as exc:
            raise _protocol_error("listing the tools", exc) from exc

    async def _list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: mt.PaginatedRequestParams | None
    ) -> mt.ListToolsResult:
        _, invocation = await self._context(ctx)
        tools = await self._tools(ToolContext(invocation))
        made = await self._make_listings(tools)
        listings = (
            map(self._listing, tools)
            if not made
            else (made[id(t)] if id(t) in made else self._listing(t) for t in tools)
        )
        offered = [listing.tool for listing in listings if listing is not None]
        page, next_cursor = self._page(offered, params)
        return mt.ListToolsResult(tools=page, next_cursor=next_cursor)

    async def _make_listings(self, tools: Sequence[Tool]) -> dict[int, _Listing | None]:
        """Make the listings of the tools not listed before, in a worker thread when
        they are many (`FirstTime`): the declarations of a huge OpenAPI spec are
        built on demand, Graph's in seconds, which the event loop does not wait on.
        Returns them by the tool's ``id`` (None: passive); `_listing` finds them made."""
        made: dict[int, _Listing | None] = {}
        for tool, listing in await self._listed.make(tools, _listed):
            made[id(tool)] = listing
            if listing is not None:
                with contextlib.suppress(TypeError):  # no weak key: made every time
                    self._listings[tool] = listing
        return made

    def _listing(self, tool: Tool, *, called: bool = False) -> _Listing | None:
        """``tool`` as this server lists it (None: a passive tool), made once per
        declaration: a big catalog is converted once, not on every ``tools/list``.
        ``called``: as it is called, which a tool listed hidden (`HiddenTool`, one a
        `searchable` search has not loaded) is too."""
        declaration = tool.declaration()
        if declaration is None and called:
            declaration = call_declaration(tool)
        if declaration is None:
            return None
        try:
            made = self._listings.get(tool)
        except TypeError:  # a tool that cannot be a weak key: made every time
            made = None
        if made is not None and (
            made.declaration is declaration or made.declaration == declaration
        ):
            return made
        made = _made_listing(tool, declaration)
        with contextlib.suppress(TypeError):
            self._listings[tool] = made
        return made

    def _page(
        self, items: list[Any], params: mt.PaginatedRequestParams | None
    ) -> tuple[list[Any], str | None]:
        cursor = params.cursor if params is not None else None
        start = 0
        if cursor:
            if not cursor.isdigit() or int(cursor) > len(items):
                raise MCPError(INVALID_PARAMS, f"Invalid cursor {clip(cursor, 40)!r}")
            start = int(cursor)
        end = start + self.page_size
        return items[start:end], (str(end) if end < len(items) else None)

    async def _call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: mt.CallToolRequestParams
    ) -> mt.CallToolResult | mt.InputRequiredResult:
        request, invocation = await self._context(ctx)
        tools = await self._tools(ToolContext(invocation))
        tool = self._by_name.find(tools, params.name)
        listing = self._listing(tool, called=True) if tool is not None else None
        if tool is None or listing is None:
            await self._make_listings(tools)  # the names offered: each declaration made
            return result_to_mcp(_unknown(params.name, tools))
        _check_param_headers(ctx, params, listing)
        call = ToolContext(invocation, function_call_id=new_id())
        channel = await self._channel(ctx, params, tool.name)
        call.client = channel
        answer = await _answering(
            channel, self._run_call(request, params, tool, listing, call, channel)
        )
        if await self._keep_state(ctx, invocation, call, tools, answer):
            assert isinstance(answer, mt.CallToolResult)
            answer.meta = {**(answer.meta or {}), TOOLS_CHANGED_META: True}
        return answer

    async def _keep_state(
        self,
        ctx: ServerRequestContext[Any, Any],
        invocation: Invocation,
        call: ToolContext,
        tools: Sequence[Tool],
        answer: mt.CallToolResult | mt.InputRequiredResult,
    ) -> bool:
        """Keep what a call wrote to ``ctx.state`` for the later requests of its client
        (see `_client`; ``temp:`` keys live for the call only, as in an agent loop's
        run); when that changes the tools the client is offered (a `searchable`
        toolset's search loads some), tell it: a 2025-11-25 client by
        ``notifications/tools/list_changed``, a 2026-07-28 one through its
        ``subscriptions/listen`` streams, and the caller in ``answer``'s ``_meta``.
        Whether it should be told there (a `CallToolResult` whose tools changed).

        The call ran whatever happens here: the state is kept first, and a failure to
        list the tools again (an upstream server reconnecting) is logged and skipped,
        never the call's answer (a client told a payment failed would send it twice)."""
        client = self._client(ctx, invocation)
        writes = state_writes(call.actions_set, lasting=True)
        if not writes or client is None:
            return False
        if isinstance(client, str):
            self._session_states.update(client, writes)
        else:
            self._states.setdefault(client, {}).update(writes)
        answered = isinstance(answer, mt.CallToolResult)
        if not (answered or client in self._legacy or self._bus.listens(client)):
            return False  # nobody would be told: the tools are not listed again
        now = replace(invocation, state={**invocation.state, **writes})
        try:
            after = await self._tools(ToolContext(now))
        except MCPError as exc:
            logger.warning(
                "after a call to %r, listing the tools again to see whether they changed "
                "failed (error %s); the client was not told of a change",
                call.tool_name,
                exc.error.code,
            )
            return False
        if _same_offer(tools, after):
            return False
        await self._bus.publish(ToolsListChanged(), to=client)
        if client in self._legacy:
            await _tell(client, lambda c: c.send_tool_list_changed())
        return answered

    async def _run_call(
        self,
        request: IncomingRequest,
        params: mt.CallToolRequestParams,
        tool: Tool,
        listing: _Listing,
        call: ToolContext,
        channel: McpChannel,
    ) -> mt.CallToolResult:
        outcome: Outcome
        if channel.args is None:
            outcome = await self._first_round(tool, params.arguments or {}, call, channel)
        else:  # a later round of a call that asked (2026-07-28): before_tool ran in the first
            outcome = await self.invoke(tool, channel.args, call, resumed=True)
        if type(outcome) is Done:  # most calls: nothing to settle
            result = outcome.result
        else:
            settled = await self.settle(
                tool,
                outcome,
                call,
                confirm=lambda needed: self._confirm(channel, tool.name, needed.hint, needed.args),
                lookup=lambda needed: lookup_credential(
                    self._credentials, needed.auth_config, request
                ),
            )
            if isinstance(settled, mt.CallToolResult):
                return settled
            result = settled.result if isinstance(settled, Done) else settled.interim
        if channel.missing is not None and is_error_result(result) and channel.modern:
            # The tool asked what the client did not declare it can answer: the
            # client's to know (2026-07-28), and the tool did not get round to an answer.
            raise channel.missing_capability()
        if listing.output is None or is_error_result(result):
            return result_to_mcp(result)
        # MCP: a structured result must match the outputSchema (the SDK's client raises
        # on one that does not); one that does not is an error, with the whole result.
        problem = listing.output.first_problem(result)
        if problem is not None:
            return result_to_mcp(_not_as_listed(tool.name, problem, result))
        return result_to_mcp(result, output_schema=True)

    def _first_round(
        self, tool: Tool, args: Mapping[str, Any], call: ToolContext, channel: McpChannel
    ) -> Awaitable[Outcome]:
        """The call, ``before_tool`` and all; on 2026-07-28 ``channel`` keeps the
        arguments as ``before_tool`` left them, so that when the call ends asking
        (``input_required``) the next round resumes with them, without running
        ``before_tool`` again (as a 2025-11-25 call, which waits for its answers)."""
        callbacks = self.callbacks
        if not channel.modern or not callbacks.before_tool:
            return self.invoke(tool, args, call)
        kept = replace(callbacks, before_tool=(*callbacks.before_tool, channel.keep_args))
        return self.invoke(tool, args, call, callbacks=kept)

    async def _confirm(
        self, channel: McpChannel, tool_name: str, hint: str, args: Mapping[str, Any]
    ) -> ToolConfirmation | mt.CallToolResult:
        """The user's answer to ``hint``, asked through elicitation (on 2026-07-28 the
        call ends with the question, see `McpChannel`; the next round carries ``args``
        as ``before_tool`` left them); or an error result saying why the call did not
        run."""
        message = hint or f"Allow the call to {tool_name!r}?"
        channel.args = dict(args)
        try:
            meta = confirmation_meta(tool_name, args)  # what a gateway relays: see _relay
            answer = await channel.confirm(message, meta=meta)
        except MissingClientCapabilityError:
            channel.missing = None  # the user's to answer, not the client's to declare
            return result_to_mcp(
                error_result(
                    f"This call needs the user's confirmation ({message}), and this client "
                    "cannot be asked (it does not support elicitation, or the connection "
                    "is stateless); it did not run.",
                    confirmation_needed=True,
                )
            )
        except ToolCallError as exc:
            return result_to_mcp(
                error_result(f"The user was asked to confirm this call but {exc}; it did not run.")
            )
        return ToolConfirmation(confirmed=getattr(answer, "accepted", False))

    # --- logging ----------------------------------------------------------------------

    async def _set_log_level(
        self, ctx: ServerRequestContext[Any, Any], params: mt.SetLevelRequestParams
    ) -> mt.EmptyResult:
        """``logging/setLevel`` (2025-11-25): the lowest level of the log messages the
        session's calls send (``ctx.log``)."""
        connection = _connection(ctx)
        if connection is not None:
            self._log_levels[connection] = params.level
        return mt.EmptyResult()

    async def _channel(
        self,
        ctx: ServerRequestContext[Any, Any],
        params: mt.CallToolRequestParams | mt.GetPromptRequestParams | mt.ReadResourceRequestParams,
        name: str,
    ) -> McpChannel:
        """The channel to the client of a request that may ask it (``ctx.client`` of
        what serves it: a tool, a prompt); ``name`` is what is served. Catch
        `InputRequired` around what runs with it: ``channel.input_required(pending)`` is
        the answer then. The request state it brings is taken (`_take_state`)."""
        channel = McpChannel(
            ctx,
            input_responses=params.input_responses,
            request_state=params.request_state,
            tool_name=name,
            level=self._log_level(ctx),
        )
        await self._take_state(channel, name)
        return channel

    async def _take_state(self, channel: McpChannel, name: str) -> None:
        """Take the request state a request brings, once (see `toolsets.mcp._server_spent`):
        answers sent again with a state already taken (a confirmation replayed) are
        refused, and nothing runs.

        Raises:
            MCPError: -32602 when the state was taken before (or is one without an
                id, which this server never issues); -32603 when the store of taken
                states cannot take it.
        """
        if not channel.has_state:
            return
        if channel.state_id is None:
            raise MCPError(
                INVALID_PARAMS,
                "Invalid or expired requestState",
                {"reason": "invalid_request_state"},
            )
        try:
            fresh = await self.spent_states.spend(channel.state_id, self._state_ttl)
        except ToolsetError as exc:
            raise MCPError(
                INTERNAL_ERROR,
                f"The answers to {clip(name, 100)!r} could not be taken now ({exc}); nothing ran.",
            ) from exc
        if not fresh:
            raise MCPError(
                INVALID_PARAMS,
                f"This requestState was already used: the answers it carries (a "
                f"confirmation above all) count once, and {clip(name, 100)!r} did not run "
                "again. To run it again, send the request without requestState and "
                "answer anew.",
                {"reason": "request_state_used"},
            )

    def _log_level(self, ctx: ServerRequestContext[Any, Any]) -> LogLevel:
        connection = _connection(ctx)
        level = self._log_levels.get(connection) if connection is not None else None
        return level if level is not None else DEFAULT_LOG_LEVEL

    # --- resources and prompts (gateway) ----------------------------------------------

    async def _each_source(
        self, ctx: ServerRequestContext[Any, Any], what: str, kind: str
    ) -> list[tuple[McpToolset, Any]]:
        _, invocation = await self._context(ctx)
        listing = ToolContext(invocation)
        found: list[tuple[McpToolset, Any]] = []
        for source in self._sources:
            try:
                items = await getattr(source, f"list_{kind}")(listing)
            except (ToolsetError, TimeoutError) as exc:
                raise _protocol_error(what, exc) from exc
            found.extend((source, item) for item in items)
        return found

    async def _list_resources(
        self, ctx: ServerRequestContext[Any, Any], params: mt.PaginatedRequestParams | None
    ) -> mt.ListResourcesResult:
        ours = self._catalog.resources
        resources = [resource.to_mcp() for resource in ours.values()]
        for source, resource in await self._each_source(ctx, "listing the resources", "resources"):
            uri = str(resource.uri)
            if uri not in ours and self._resource_owner.claim(uri, source):
                resources.append(resource)
        page, next_cursor = self._page(resources, params)
        return mt.ListResourcesResult(resources=page, next_cursor=next_cursor)

    async def _list_resource_templates(
        self, ctx: ServerRequestContext[Any, Any], params: mt.PaginatedRequestParams | None
    ) -> mt.ListResourceTemplatesResult:
        ours = self._catalog.templates
        templates = [template.to_mcp() for template in ours.values()]
        found = await self._each_source(ctx, "listing the resource templates", "resource_templates")
        for source, template in found:
            if template.uri_template in ours:
                continue
            prefix = template.uri_template.split("{", 1)[0]
            self._template_owner.claim(prefix, source)
            templates.append(template)
        page, next_cursor = self._page(templates, params)
        return mt.ListResourceTemplatesResult(resource_templates=page, next_cursor=next_cursor)

    def _owner(self, uri: str) -> McpToolset | None:
        """The upstream server a resource's URI belongs to: the one that listed it, or
        whose template it fits (the longest match), or the only one."""
        source = self._resource_owner.get(uri)
        if source is not None:
            return source
        fits = [prefix for prefix in self._template_owner if prefix and uri.startswith(prefix)]
        if fits:
            return self._template_owner.get(max(fits, key=len))
        return self._sources[0] if len(self._sources) == 1 else None

    async def _routed(
        self,
        what: str,
        known: McpToolset | None,
        ask: Callable[[McpToolset], Awaitable[_T]],
        answers: Callable[[_T], bool] = lambda _: True,
    ) -> tuple[McpToolset, _T] | None:
        """What ``ask`` gets from ``known`` (the upstream server known to hold the
        item), or when none is known (a request before any listing: another worker's
        client, a restart, a URI a client kept), from each server in turn: the first
        whose answer ``answers``. A server answering with an error is taken to say "not
        mine"; one that cannot be reached is the error when no other answers. None:
        every server said no."""
        failure: ToolsetError | TimeoutError | None = None
        for source in [known] if known is not None else self._sources:
            try:
                answer = await ask(source)
            except (ToolsetError, TimeoutError) as exc:
                if known is not None:
                    raise _protocol_error(what, exc) from exc
                if failure is None and not _refused(exc):
                    failure = exc
                continue
            if known is not None or answers(answer):
                return source, answer
        if failure is not None:
            raise _protocol_error(what, failure) from failure
        return None

    async def _read_resource(
        self, ctx: ServerRequestContext[Any, Any], params: mt.ReadResourceRequestParams
    ) -> mt.ReadResourceResult | mt.InputRequiredResult:
        uri = str(params.uri)
        _, invocation = await self._context(ctx)
        reading = ToolContext(invocation)
        channel = reading.client = await self._channel(ctx, params, uri)
        own = await _answering(
            channel, self._bounded(f"reading {uri!r}", self._catalog.read(uri, reading))
        )
        if isinstance(own, mt.InputRequiredResult):
            return own
        if own is not None:
            return mt.ReadResourceResult(contents=own)

        def read(
            source: McpToolset,
        ) -> Awaitable[list[mt.TextResourceContents | mt.BlobResourceContents]]:
            return source.read_resource(uri, reading)

        found = await self._routed(f"reading {uri!r}", self._owner(uri), read)
        if found is None:
            raise MCPError(INVALID_PARAMS, f"Resource not found: {clip(uri, 200)}", {"uri": uri})
        source, contents = found
        self._resource_owner.claim(uri, source)
        return mt.ReadResourceResult(contents=contents)

    async def _list_prompts(
        self, ctx: ServerRequestContext[Any, Any], params: mt.PaginatedRequestParams | None
    ) -> mt.ListPromptsResult:
        ours = self._catalog.prompts
        prompts = [prompt.to_mcp() for prompt in ours.values()]
        for source, prompt in await self._each_source(ctx, "listing the prompts", "prompts"):
            if prompt.name not in ours and self._prompt_owner.claim(prompt.name, source):
                prompts.append(prompt)
        page, next_cursor = self._page(prompts, params)
        return mt.ListPromptsResult(prompts=page, next_cursor=next_cursor)

    def _prompt_source(self, name: str) -> McpToolset | None:
        source = self._prompt_owner.get(name)
        return source if source is not None or len(self._sources) != 1 else self._sources[0]

    async def _get_prompt(
        self, ctx: ServerRequestContext[Any, Any], params: mt.GetPromptRequestParams
    ) -> mt.GetPromptResult | mt.InputRequiredResult:
        name = params.name
        _, invocation = await self._context(ctx)
        asking = ToolContext(invocation)
        own = self._catalog.prompts.get(name)
        if own is not None:
            asking.client = channel = await self._channel(ctx, params, name)
            rendering = own.get(params.arguments, asking)
            return await _answering(channel, self._bounded(f"the prompt {name!r}", rendering))

        def get(source: McpToolset) -> Awaitable[mt.GetPromptResult]:
            return source.get_prompt(name, params.arguments, asking)

        found = await self._routed(f"the prompt {name!r}", self._prompt_source(name), get)
        if found is None:
            raise MCPError(INVALID_PARAMS, f"Unknown prompt {clip(name, 100)!r}")
        self._prompt_owner.claim(name, found[0])
        return found[1]

    async def _complete(
        self, ctx: ServerRequestContext[Any, Any], params: mt.CompleteRequestParams
    ) -> mt.CompleteResult:
        ref = params.ref
        known = params.context.arguments if params.context is not None else None
        own = (
            self._catalog.prompts.get(ref.name)
            if isinstance(ref, mt.PromptReference)
            else self._catalog.templates.get(ref.uri)
        )
        if own is not None:
            completing = own.completions(params.argument.name, params.argument.value, known or {})
            values = await self._bounded("completion", completing)
            return mt.CompleteResult(completion=_completion(values))
        if isinstance(ref, mt.PromptReference):
            source = self._prompt_source(ref.name)
        else:
            source = self._owner(ref.uri)
        _, invocation = await self._context(ctx)
        asking = ToolContext(invocation)
        argument = {"name": params.argument.name, "value": params.argument.value}

        def complete(source: McpToolset) -> Awaitable[mt.CompleteResult]:
            return source.complete(ref, argument, known, asking)

        found = await self._routed(
            "completion", source, complete, lambda result: bool(result.completion.values)
        )
        if found is None:  # nothing known of it: no suggestions
            return mt.CompleteResult(completion=mt.Completion(values=[]))
        return found[1]

    async def _bounded(self, what: str, work: Awaitable[_T]) -> _T:
        """What ``work`` (a resource, prompt or completer of the server's own) gives
        within the server's `tool_timeout`; past it, the JSON-RPC error -32001 (request
        timeout, as for an upstream server that does not answer in time)."""
        with anyio.move_on_after(self.default_timeout):
            return await work
        raise MCPError(
            REQUEST_TIMEOUT, f"{clip(what, 200)} timed out after {self.default_timeout:g} s"
        )

    def __repr__(self) -> str:
        return f"McpServer({self.toolset!r}, name={self.name!r})"


class _Owners:
    """Which upstream server each name (a resource's URI, a prompt's) belongs to, for
    the `MAX_ROUTES` names most recently used."""

    def __init__(self) -> None:
        self._owners: OrderedDict[str, McpToolset] = OrderedDict()

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._owners))

    def get(self, name: str) -> McpToolset | None:
        source = self._owners.get(name)
        if source is not None:
            self._owners.move_to_end(name)
        return source

    def claim(self, name: str, source: McpToolset) -> bool:
        """Whether ``name`` is ``source``'s: it is, unless another server has it."""
        owner = self.get(name)
        if owner is not None:
            return owner is source
        self._owners[name] = source
        if len(self._owners) > MAX_ROUTES:
            self._owners.popitem(last=False)
        return True


_LISTENING: contextvars.ContextVar[object | None] = contextvars.ContextVar(
    "toolsets_mcp_listening", default=None
)
"""The client (see `McpServer._client`) whose ``subscriptions/listen`` stream is being
opened, for `_ClientBus.subscribe`."""


class _ClientBus:
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


_clock = time.monotonic
"""The clock a kept state's age is read on."""


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


async def _tell(connection: Connection, tell: Callable[[Connection], Awaitable[None]]) -> None:
    """Tell a 2025-11-25 client some news, waiting at most `ANNOUNCE_TIMEOUT`."""
    with anyio.move_on_after(ANNOUNCE_TIMEOUT):
        await tell(connection)


_ANNOUNCEMENTS: dict[str, tuple[ServerEvent, Callable[[Connection], Awaitable[None]]]] = {
    "tools": (ToolsListChanged(), lambda connection: connection.send_tool_list_changed()),
    "resources": (
        ResourcesListChanged(),
        lambda connection: connection.send_resource_list_changed(),
    ),
    "prompts": (PromptsListChanged(), lambda connection: connection.send_prompt_list_changed()),
}
"""What announces a change of each list: the event for 2026-07-28 listeners, and the
notification a 2025-11-25 client gets."""


def _completion(values: Sequence[str]) -> mt.Completion:
    """The first `MAX_COMPLETIONS` of ``values``, saying whether there are more."""
    return mt.Completion(
        values=list(values[:MAX_COMPLETIONS]),
        total=len(values),
        has_more=len(values) > MAX_COMPLETIONS,
    )


async def _answering(channel: McpChannel, work: Awaitable[_T]) -> _T | mt.InputRequiredResult:
    """What ``work`` (a tool call, a prompt, a resource of ours, which may ask the
    client through ``channel``) answers; on 2026-07-28, when it asks, the questions (the
    client asks them, then sends the request again with the answers).

    Raises:
        MCPError: -32021 with ``data.requiredCapabilities``, when ``work`` asked what
            the client cannot answer (a prompt, a resource: a tool's call makes that an
            error result first, see `McpServer._run_call`); on both eras, since neither
            has an error result for these requests.
    """
    try:
        return await work
    except InputRequired as pending:
        return channel.input_required(pending)
    except MissingClientCapabilityError as exc:
        raise channel.missing_capability(exc.capability) from exc
    except BaseExceptionGroup as group:  # asked from tasks of its own
        within = InputRequired.within(group)
        if within is not None:
            return channel.input_required(within)
        lacking, other = group.split(MissingClientCapabilityError)
        if lacking is None or other is not None:
            raise
        first: BaseException = lacking
        while isinstance(first, BaseExceptionGroup):
            first = first.exceptions[0]
        raise channel.missing_capability(getattr(first, "capability", None)) from group


def _refused(exc: BaseException) -> bool:
    """Whether an upstream server answered a request with an error (rather than not
    answering): a server asked for a resource or prompt it does not hold says so."""
    cause = exc.__cause__
    return isinstance(cause, MCPError) and cause.error.code != REQUEST_TIMEOUT


class _ByName:
    """Finds a tool of a listing by name: through an index of the latest listing when it
    is a tuple (a toolset that lists the same tuple each time, as an OpenAPI toolset
    does, is indexed once: a call to one of a thousand tools does not go through them
    all), else by going through it."""

    def __init__(self) -> None:
        self._tools: Sequence[Tool] | None = None
        self._index: dict[str, Tool] = {}

    def find(self, tools: Sequence[Tool], name: str) -> Tool | None:
        """The first tool of ``tools`` called ``name``."""
        if tools is not self._tools:
            if not isinstance(tools, tuple):  # a list may change under an index
                return next((tool for tool in tools if tool.name == name), None)
            index: dict[str, Tool] = {}
            for tool in tools:
                index.setdefault(tool.name, tool)
            self._tools, self._index = tools, index
        return self._index.get(name)


@dataclass(frozen=True, eq=False)
class _Listing:
    """A tool as a server lists it, with the declaration it was made from."""

    declaration: ToolDeclaration
    tool: mt.Tool
    output: ArgumentChecker | None
    """Checks results against the ``outputSchema`` (None: the tool lists none)."""

    @functools.cached_property
    def routed(self) -> bool:
        """Whether arguments of the tool are mirrored in ``Mcp-Param-*`` headers (its
        ``inputSchema`` marks properties ``x-mcp-header``, validly: a client drops a
        tool whose marks are not, and sends no such header for it)."""
        schema = self.tool.input_schema
        return bool(x_mcp_header_map(schema)) and find_invalid_x_mcp_header(schema) is None


def _checked_when_called(name: str) -> None:
    """The SDK's lookup of a tool's input schema before a 2026-07-28 ``tools/call`` is
    served, to check its ``Mcp-Param-*`` headers: none (nothing to check there). Without
    one the SDK runs the whole ``tools/list`` on every call with arguments to find that
    schema (GitHub's spec: 40 ms a call); the call checks the headers itself, against
    the tool as its own caller is offered it (`_check_param_headers`), which the SDK's
    lookup, made before the server knows the caller, cannot see."""
    return None


def _check_param_headers(
    ctx: ServerRequestContext[Any, Any], params: mt.CallToolRequestParams, listing: _Listing
) -> None:
    """Refuse a 2026-07-28 call over HTTP whose ``Mcp-Param-*`` headers do not mirror
    its arguments as the tool's ``inputSchema`` marks them (``x-mcp-header``): a proxy
    may route on a header, and the tool must not run on other values than those.

    Raises:
        MCPError: -32020 (header mismatch: HTTP 400), naming the header.
    """
    if not listing.routed or ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        return
    headers = getattr(ctx.request, "headers", None)
    if headers is None:  # not over HTTP: no headers to mirror anything
        return
    rejection = validate_mcp_param_headers(
        listing.tool.input_schema, params.arguments or {}, headers
    )
    if rejection is not None:
        raise MCPError(rejection.code, rejection.message, rejection.data)


def _made_listing(tool: Tool, declaration: ToolDeclaration) -> _Listing:
    listed = tool_to_mcp(tool, declaration)
    assert listed is not None  # it has a declaration
    schema = listed.output_schema
    output = (
        ArgumentChecker(schema, tool_name=tool.name, checks="results", formats=False)
        if schema is not None
        else None
    )
    return _Listing(declaration, listed, output)


def _listed(tool: Tool) -> _Listing | None:
    """``tool`` as a server lists it, None when it is passive (from any thread)."""
    declaration = tool.declaration()
    return None if declaration is None else _made_listing(tool, declaration)


def _not_as_listed(name: str, problem: tuple[str, str], result: JsonValue) -> JsonValue:
    pointer, what = problem
    return error_result(
        f"The result of {name!r} does not match the tool's output schema (at "
        f"{pointer or 'the top'!r}: {clip(what, 200)}); the whole result is under 'result'.",
        pointer=pointer,
        result=result,
    )


def _offered(tools: Sequence[Tool]) -> list[str]:
    """The names of the tools a listing offers (passive ones are not)."""
    return [t.name for t in tools if t.declaration() is not None]


def _same_offer(before: Sequence[Tool], after: Sequence[Tool]) -> bool:
    """Whether two listings offer the same tools under the same declarations (a name,
    a description or parameters changed is a change: `code_mode`'s ``run_code``
    describes the tools a search loaded). A toolset that did not change lists the same
    tuple again (the wrappers keep theirs), which is not gone through."""
    if before is after:
        return True
    was, now = _declarations(before), _declarations(after)
    return len(was) == len(now) and all(a is b or a == b for a, b in zip(was, now, strict=True))


def _declarations(tools: Sequence[Tool]) -> list[ToolDeclaration]:
    """The declarations a listing offers, in order (passive tools offer none)."""
    return [d for d in (tool.declaration() for tool in tools) if d is not None]


def _unknown(name: str, tools: Sequence[Tool]) -> JsonValue:
    names = _offered(tools)
    shown = ", ".join(names[:20]) + (f" and {len(names) - 20} more" if len(names) > 20 else "")
    return error_result(
        f"Unknown tool {clip(name, 100)!r}; this server offers: {shown or 'no tools'}.",
        fields={"name": "no tool of this name"},
    )


def _no_credential(tool_name: str, config: AuthConfig) -> JsonValue:
    return error_result(
        f"Calling {tool_name!r} needs the credential {config.scheme_name!r}, which this "
        "server was not given; the call was not made.",
        credential=config.scheme_name,
    )


def _incoming(ctx: ServerRequestContext[Any, Any]) -> IncomingRequest:
    http = ctx.request
    headers: dict[str, str] = {}
    if http is not None and hasattr(http, "headers"):
        headers = {name.lower(): value for name, value in http.headers.items()}
    params = ctx.session.client_params
    connection = _connection(ctx)
    return IncomingRequest(
        method=ctx.method,
        protocol_version=ctx.protocol_version,
        headers=headers,
        client=params.client_info if params is not None else None,
        # The session the SDK's transport made and checked the request against; never
        # the header itself (a client sends any it likes to a stateless server).
        session_id=connection.session_id if connection is not None else None,
    )


def _connection(ctx: ServerRequestContext[Any, Any]) -> Connection | None:
    """The connection a request came on (the SDK hands handlers no public handle)."""
    connection: Connection | None = getattr(ctx.session, "_connection", None)
    return connection


def _protocol_error(what: str, exc: BaseException) -> MCPError:
    """A fault behind the server (an upstream server, the toolset) as the protocol
    error the client gets: an upstream server's own code when it sent one."""
    cause = exc.__cause__
    if isinstance(cause, MCPError) and cause.error.code != REQUEST_TIMEOUT:
        return MCPError(cause.error.code, f"{what} failed: {exc}")
    if isinstance(exc, TimeoutError):
        return MCPError(REQUEST_TIMEOUT, f"{what} timed out: {exc}")
    return MCPError(INTERNAL_ERROR, f"{what} failed: {exc}")


def _mcp_sources(toolset: Toolset) -> list[McpToolset]:
    """The MCP servers behind ``toolset`` (through wrappers and ``combined``), once
    each, in order."""
    return [each for each in _composition(toolset) if isinstance(each, McpToolset)]


def _watched(toolset: Toolset) -> list[Any]:
    """The toolsets in ``toolset`` (itself, those it wraps or combines) that tell when
    their tools change (``on_tools_changed``: an `McpToolset`, a `StaticToolset`)."""
    return [
        each for each in _composition(toolset) if callable(getattr(each, "on_tools_changed", None))
    ]


def _composition(toolset: Toolset) -> list[object]:
    """``toolset`` and every toolset inside it (through wrappers and ``combined``),
    once each, outermost first."""
    found: list[object] = []

    def walk(candidate: object) -> None:
        if any(candidate is seen for seen in found):
            return
        found.append(candidate)
        inner = getattr(candidate, "wrapped", None)
        if isinstance(inner, Toolset):
            walk(inner)
        many = getattr(candidate, "toolsets", None)
        if isinstance(many, tuple | list):
            for each in many:
                walk(each)

    walk(toolset)
    return found


def _version() -> str:
    from toolsets import __version__

    return __version__
