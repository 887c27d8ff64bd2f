"""`McpServer`: any toolset served as an MCP server, on the official SDK's low-level
`Server` (both protocol eras: the 2026-07-28 per-request one and the 2025-11-25
handshake), as a composition of features, each in a module of its own that yields the
requests it answers (`Feature`): tools (`_tools`), resources and subscriptions
(`_resources`), prompts (`_prompts`), completion (`_completion`), logging (`_logging`)
and change announcements (`_changes`); over what they share: the per-request state
(`_state`), asking the client (`_asking`), the upstream servers of a gateway
(`_gateway`). The transports that run it are `_stdio` and `_http`.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from typing import Any

from mcp.server.lowlevel.server import Server

from toolsets._concurrency import check_timeout
from toolsets._consumers import CallsTools, toolset_of
from toolsets._context import Invocation
from toolsets._invoke import DEFAULT_TOOL_TIMEOUT, NO_CALLBACKS, Callbacks
from toolsets._tool import Tool
from toolsets._toolset import Toolset
from toolsets.mcp.server._access import ItemAccess
from toolsets.mcp.server._asking import Asking
from toolsets.mcp.server._auth import OAuthResourceServer, ServerAuth
from toolsets.mcp.server._caching import LIST_TTL, ListCaching
from toolsets.mcp.server._catalog import Catalog, Prompt, Resource, ResourceTemplate
from toolsets.mcp.server._changes import AnnouncingServer, Changes
from toolsets.mcp.server._completion import Completion
from toolsets.mcp.server._feature import DEFAULT_PAGE_SIZE, Feature
from toolsets.mcp.server._gateway import Gateway
from toolsets.mcp.server._http import ServesHttp
from toolsets.mcp.server._listing import checked_when_called
from toolsets.mcp.server._logging import Logging
from toolsets.mcp.server._prompts import Prompts
from toolsets.mcp.server._request import CredentialsFor, IncomingRequest, InvocationFor
from toolsets.mcp.server._resources import Resources
from toolsets.mcp.server._spent import MemorySpentStates, SpentStates
from toolsets.mcp.server._state import MAX_SESSION_STATES, SESSION_STATE_TTL, Requests
from toolsets.mcp.server._stdio import ServesStdio
from toolsets.mcp.server._tools import CONFIRMATION_TIMEOUT, Tools
from toolsets.mcp.server._upstream import ServerCredentials

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


class McpServer(CallsTools, ServesStdio, ServesHttp):
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
    A `restricted` policy's rules for resources and prompts govern them too.
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
            (e.g. an API key for the bearer token that came in), or `UserCredentials`
            (each calling user's own). The client's own ``Authorization`` header is
            never passed on.
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
            serve the same clients share one (`RedisSpentStates`) and the state key.
        auth: Who may call over HTTP: an `OAuthResourceServer` makes the server an
            OAuth 2.1 resource server (every request needs a bearer token its issuer
            issued for this server; the caller's `Identity` is ``ctx.identity``, and by
            default the `Invocation`'s ``user_id`` and ``scopes``); ``"none"``: anyone,
            said on purpose; None (the default): anyone, and so `serve_http` and
            `run_http` serve on this machine only (a loopback address). Over stdio
            there is no authorization (the client started the server).
        list_ttl: Seconds a client may cache a list all callers get alike (`_caching`).

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
        credentials: ServerCredentials = None,
        invocation: Invocation | InvocationFor | None = None,
        page_size: int = DEFAULT_PAGE_SIZE,
        resources: Iterable[Resource | ResourceTemplate] = (),
        prompts: Iterable[Prompt] = (),
        max_session_states: int = MAX_SESSION_STATES,
        session_state_ttl: float = SESSION_STATE_TTL,
        spent_states: SpentStates | None = None,
        auth: ServerAuth = None,
        list_ttl: float = LIST_TTL,
    ) -> None:
        self.toolset = toolset_of(toolset)
        """What is served."""
        self.name = name
        self.default_timeout = check_timeout(tool_timeout, "tool_timeout")
        """Seconds a call may take, unless the tool says otherwise."""
        self.callbacks = callbacks if callbacks is not None else NO_CALLBACKS
        if auth is not None and auth != "none" and not isinstance(auth, OAuthResourceServer):
            raise TypeError(f"auth must be an OAuthResourceServer, 'none' or None, not {auth!r}")
        self.auth: ServerAuth = auth
        """Who may call over HTTP (see ``auth``)."""
        if page_size < 1:
            raise ValueError("page_size must be at least 1")
        self.page_size = page_size
        self._hints = ListCaching(self.toolset, credentials, list_ttl)
        self.spent_states: SpentStates = (
            spent_states if spent_states is not None else MemorySpentStates()
        )
        """Where the request states taken are remembered (see ``spent_states``)."""
        self.server: Server[Any] = AnnouncingServer(
            name,
            version=version or _version(),
            instructions=instructions,
            lifespan=self._lifespan,
            get_tool_input_schema=checked_when_called,
        )
        """The SDK's low-level server (for what this class does not offer)."""
        requests = Requests(name, invocation, max_session_states, session_state_ttl)
        self._changes = Changes(self.toolset, requests)
        self.server.middleware.append(self._changes.track_connection)  # before the seal's
        self._catalog = Catalog(self._changes.changed)
        self._catalog.add_resources(resources)
        self._catalog.add_prompts(prompts)
        logging = Logging()
        self._asking = Asking(self.server, name, logging, self.spent_states)
        gateway, access = Gateway(self.toolset), ItemAccess(self.toolset)
        self._resources = Resources(
            self._catalog, gateway, requests, self._asking, self._changes, self, page_size, access
        )
        self._register(requests, gateway, access, logging, credentials)

    def _register(
        self,
        requests: Requests,
        gateway: Gateway,
        access: ItemAccess,
        logging: Logging,
        credentials: ServerCredentials,
    ) -> None:
        """Register the requests each feature answers on the SDK's server (which
        advertises the capabilities they make). A new feature is a module, and a line
        here."""
        asking, changes, catalog, size = self._asking, self._changes, self._catalog, self.page_size
        features: tuple[Feature, ...] = (
            Tools(self, self.toolset, requests, asking, changes, credentials, size, gateway),
            self._resources,
            Prompts(catalog, gateway, requests, asking, self, size, access),
            Completion(catalog, gateway, requests, self, access),
            logging,
            changes,
        )
        for feature in features:
            for method, params, handler in feature.handlers():
                self.server.add_request_handler(method, params, self._hints.on(method, handler))

    @property
    def tool_timeout(self) -> float:
        """Seconds a call may take, unless the tool says otherwise."""
        return self.default_timeout

    def use_request_state_keys(self, keys: Sequence[bytes | str] | None) -> None:
        """Seal the state of a call that asks for confirmation (protocol 2026-07-28)
        under ``keys`` (each at least 32 bytes; the first seals, all unseal): processes
        that serve the same clients share them (the answer may reach another; rotation:
        new key first, old after it). None: a key of this process only; by default the
        environment's (`_keys`). A malformed key raises ValueError (never shown)."""
        self._asking.seal_with(keys)

    @contextlib.asynccontextmanager
    async def _lifespan(self, _: Server[Any]) -> AsyncIterator[dict[str, Any]]:
        """While serving: the toolset is entered (its sessions open), and changes of
        its tools (and of the resources and prompts) are announced."""
        async with self.toolset, self._changes.announcing():
            yield {}

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
        await self._resources.updated(uri)

    def __repr__(self) -> str:
        return f"McpServer({self.toolset!r}, name={self.name!r})"


def _version() -> str:
    from toolsets import __version__

    return __version__
