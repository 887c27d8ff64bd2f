"""`McpToolset`: an MCP server's tools, over one long-lived session.

`Sessions` keeps the sessions and sends each request over one; `ServerAccess` holds what
is asked of the server besides tools; `call_sender` makes a call that is more than the
plain request."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, Literal, Self

import mcp.types as mt
from mcp import Client

from toolsets._auth import redact_json
from toolsets._concurrency import check_timeout
from toolsets._confirmed import ConfirmPolicy, confirm_rule, may_be_destructive
from toolsets._context import ToolContext
from toolsets._declaration import ToolAnnotations
from toolsets._errors import AuthError
from toolsets._json import JsonValue
from toolsets._names import MCP_TOOL_NAMES
from toolsets._results import error_result
from toolsets._tool import BaseTool, Tool
from toolsets._toolset import BaseToolset
from toolsets._validation import ArgumentChecker
from toolsets._wrappers import RenamedTool
from toolsets.mcp._convert import convert_result, parameters_of
from toolsets.mcp._relay import TOOLS_CHANGED_META
from toolsets.mcp.client._access import ServerAccess, access_tools
from toolsets.mcp.client._callbacks import (
    ElicitationHandler,
    RootsSource,
    SamplingHandler,
    client_kwargs,
)
from toolsets.mcp.client._calls import ProgressHandler, call_sender
from toolsets.mcp.client._pushback import ServerStatusError
from toolsets.mcp.client._relay import ConfirmationRelay
from toolsets.mcp.client._sessions import Sessions
from toolsets.mcp.client._tasks import callable_tools
from toolsets.mcp.client._transports import Sse, Stdio, StreamableHttp, Transport
from toolsets.mcp.client._withheld import Withheld
from toolsets.models import Llm

__all__ = [
    "DEFAULT_CALL_TIMEOUT",
    "DEFAULT_CONNECT_TIMEOUT",
    "McpTool",
    "McpToolset",
]

logger = logging.getLogger("toolsets.mcp")

DEFAULT_CALL_TIMEOUT = 60.0
"""Seconds a tool call may take unless the toolset or the call says otherwise."""
DEFAULT_CONNECT_TIMEOUT = 30.0
"""Seconds to start a server (or reach it) and finish the handshake."""


class McpTool(BaseTool):
    """One tool of an MCP server: its declaration from the server's ``inputSchema``,
    ``outputSchema``, title and annotations; a call goes over the toolset's session."""

    def __init__(self, toolset: McpToolset, tool: mt.Tool, *, name: str | None = None) -> None:
        hints = tool.annotations
        read_only = hints.read_only_hint if hints else None
        annotations = ToolAnnotations(
            read_only=read_only,
            destructive=hints.destructive_hint if hints else None,
            idempotent=hints.idempotent_hint if hints else None,
            open_world=hints.open_world_hint if hints else None,
        )
        self.toolset = toolset
        """The toolset this tool belongs to."""
        self.mcp_tool = tool
        """The server's definition, as listed."""
        super().__init__(
            name or tool.name,
            tool.description or "",
            parameters=parameters_of(tool.input_schema),
            response_schema=tool.output_schema,
            title=tool.title or (hints.title if hints else None),
            annotations=annotations,
            timeout=toolset.timeout,
        )
        self._checker = ArgumentChecker(self.parameters, tool_name=self.name)

    @property
    def mcp_name(self) -> str:
        """The name the server knows the tool by."""
        return self.mcp_tool.name

    @property
    def is_destructive(self) -> bool:
        """Destructive by the MCP defaults: unless read-only or marked non-destructive."""
        return may_be_destructive(self)

    def requires_confirmation(self, args: Mapping[str, Any]) -> bool:
        """As the toolset's ``confirm`` says: the check `confirmed` makes."""
        return self.toolset._confirm_rule(self, args)

    async def run(self, args: Mapping[str, Any], ctx: ToolContext) -> JsonValue:
        """Call the tool; the server's ``isError`` comes back as ``{"error": ...}``.

        The arguments are checked against the tool's ``inputSchema`` first: arguments
        that do not fit come back as ``{"error": ..., "fields": {...}}`` (as for every
        tool) and nothing is sent. A schema that cannot be used for checking (some
        servers publish invalid ones) is logged once; calls are then sent unchecked.
        ``null`` for an optional parameter that does not take null means "not given"
        (as hosts in strict mode send it) and is left out. A secret the session carries
        (a credential header, a secret environment variable: the transport's
        ``secrets``) is masked wherever the server quotes it back. A credential the
        transport's ``header_provider`` cannot find for the caller, or that the server
        refuses (`AuthError`), is ``{"error": ..., "credential": <its name>}``; a 429 or 5xx
        over HTTP, ``{"error": ..., "status": ..., "retry_after": ...}`` (for `Retry`).
        """
        if isinstance(args, Mapping):
            args = self._checker.without_null_options(args)
        invalid = self._checker.result(args)
        if invalid is not None:
            return invalid
        try:
            called = self.toolset._call_tool(self.mcp_name, dict(args), ctx, self.toolset.timeout)
            result, secrets = await called
        except AuthError as exc:
            # No credential for this caller (a `UserBearer`'s), or one the server refused.
            return error_result(str(exc), credential=exc.scheme_name)
        except ServerStatusError as exc:  # busy or unavailable: `Retry` reads the status
            return exc.result()
        return redact_json(convert_result(result), secrets)


class McpToolset(ServerAccess, BaseToolset):
    """The tools of one MCP server, over one long-lived session shared by every call.

    The session opens on first use (or on ``async with``, which is faster and keeps it in
    the caller's task group) and reopens after the server crashed or forgot the session:
    a call in flight when a server dies fails (it may have run); a stdio server that
    exits while idle is noticed at once and started again by the next call; a request an
    HTTP server refuses for its session id (404, or 400 naming the session) never ran, so
    it is sent again, once, on a new session. A credential an HTTP server refuses (401,
    or 403 ``insufficient_scope``) is an `AuthError` saying so (a `UserBearer` drops the
    caller's: their next request obtains a new one). Tools are listed once, page by page, and
    listed again when the server says they changed. Every wait is bounded:
    ``connect_timeout`` for starting the server and the handshake, ``timeout`` for each
    call (and each listing). A tool the server runs only as a task
    (``execution.taskSupport: "required"``) is called as one, within the same ``timeout``,
    and is not offered by a server that does not accept tasks.

    Args:
        transport: `Stdio`, `StreamableHttp`, or `Sse` (MCP's older HTTP transport).
        timeout: Seconds a call may take (a cancelled or timed-out call is cancelled on
            the server too; the session stays usable).
        connect_timeout: Seconds to start or reach the server and finish the handshake.
            A stdio server not connected by then is killed (with its process group),
            so the error arrives within ``connect_timeout`` + `KILL_GRACE`.
        confirm: When calls need the user's approval (see `ConfirmPolicy`), as
            ``confirmed(toolset, confirm)`` would ask. By default (``"destructive"``) a
            tool not marked read-only or non-destructive waits for the user in an
            agent; ``"never"`` opts out. Anything else raises `ToolDefinitionError`
            (``.field == "confirm"``).
        sampling: Answers the server's sampling requests: an `Llm`, or a function.
        elicitation: Answers the server's questions for the user: a function, or
            ``"defaults"`` to accept each form with its schema's defaults.
        roots: The directories the server may work in.
        progress: Called as the server reports progress on a call.
        log_level: The lowest level of server log messages to receive (they go to the
            ``toolsets.mcp.server`` logger).
        mode: The protocol era: ``"auto"`` (2026-07-28 if the server speaks it, else the
            2025-11-25 handshake), ``"legacy"`` or ``"2026-07-28"``.
        name: A name for errors and logs (default: the command or URL).
        max_sessions: With a ``header_provider``: how many sessions (one per distinct
            set of headers) stay open; the least recently used is closed beyond that.
        resources_as_tools: Also offer ``list_resources`` and ``read_resource`` tools.
        prompts_as_tools: Also offer ``list_prompts`` and ``get_prompt`` tools.
        relay_confirmations: For a gateway in front of a server that confirms its own
            tools (another ``toolsets serve``): a call the user confirmed here (its
            context's ``tool_confirmation``) answers yes to that server's confirmation
            of the very same call, once. Only a yes-or-no question our `McpServer`
            tagged as its confirmation of a call of the same tool with the same
            arguments, under way on the same session, is answered so; every other
            question (the tool's own, an unconfirmed call's, one asked while listing or
            reading a prompt or resource, a second one for the same call, any from a
            server that is not ours) goes to ``elicitation``, and is declined without
            one. Declares the elicitation capability.
    """

    def __init__(
        self,
        transport: Transport,
        *,
        timeout: float = DEFAULT_CALL_TIMEOUT,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        confirm: ConfirmPolicy = "destructive",
        sampling: SamplingHandler | Llm | None = None,
        elicitation: ElicitationHandler | Literal["defaults"] | None = None,
        roots: RootsSource | None = None,
        progress: ProgressHandler | None = None,
        log_level: mt.LoggingLevel | None = "info",
        mode: Literal["auto", "legacy", "2026-07-28"] = "auto",
        name: str | None = None,
        resources_as_tools: bool = False,
        prompts_as_tools: bool = False,
        max_sessions: int = 64,
        relay_confirmations: bool = False,
    ) -> None:
        if not isinstance(transport, Stdio | StreamableHttp | Sse):
            raise TypeError(f"transport must be Stdio, StreamableHttp or Sse, not {transport!r}")
        self.transport = transport
        self.timeout = check_timeout(timeout, "timeout")
        self.connect_timeout = check_timeout(connect_timeout, "connect_timeout")
        self._confirm = confirm
        self._confirm_rule = confirm_rule(confirm)
        self.name = name or transport.target
        if max_sessions < 1:
            raise ValueError("max_sessions must be at least 1")
        self.max_sessions = max_sessions
        self._progress = progress
        kwargs = client_kwargs(
            self.name, self._on_message, mode, log_level, sampling, elicitation, roots
        )
        self._relay: ConfirmationRelay | None = None
        if relay_confirmations:
            self._relay = ConfirmationRelay(kwargs.get("elicitation_callback"))
            kwargs["elicitation_callback"] = self._relay
        self._sessions = Sessions(
            transport,
            name=self.name,
            connect_timeout=self.connect_timeout,
            client_kwargs=kwargs,
            max_sessions=max_sessions,
            on_list_changed=self._invalidate,
        )
        self._withheld = Withheld(self.name)
        self._listeners: dict[object, Callable[[], None]] = {}
        self._generation = 0  # bumped by each announced change
        self._extra_tools = access_tools(self, resources_as_tools, prompts_as_tools)
        # Per MCP tool name, how its listing says it may be called (tasks or not).
        self._task_support: dict[str, str] = {}

    # --- lifecycle --------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        await self._sessions.enter(self)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._sessions.exit()

    async def shutdown(self) -> None:
        """Close every session (ending a stdio server's process); idempotent, and safe
        from any task. The next use opens a new session."""
        await self._sessions.close()

    # --- changes ----------------------------------------------------------------------

    def _invalidate(self) -> None:
        self._generation += 1
        self._sessions.listings.clear()
        for listener in list(self._listeners.values()):
            listener()

    def on_tools_changed(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call ``listener`` (a plain function, on the event loop; keep it quick) each
        time the server announces that its tools changed. Returns the function that
        stops it (idempotent). An MCP server serving this toolset uses it to tell its
        own clients."""
        token = object()
        self._listeners[token] = listener
        return lambda: self._listeners.pop(token, None) and None

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, mt.ToolListChangedNotification):
            self._invalidate()

    # --- tools ------------------------------------------------------------------------

    @property
    def confirm(self) -> ConfirmPolicy:
        """The confirmation policy its tools apply (as ``confirmed(toolset, confirm)``
        would), fixed when the toolset is made."""
        return self._confirm

    async def list_tools(self, ctx: ToolContext | None = None) -> Sequence[Tool]:
        """Every tool of the server (all pages), cached until it announces a change or
        the session is reopened; none for a caller offered nothing (see `Withheld`)."""
        if (found := await self._offering(ctx)) is None:
            return ()
        key, host = found
        cached = self._sessions.listings.get(key)
        live = host.connection
        if cached is not None and live is not None and cached[0] is live and live.alive:
            return tuple(cached[1])
        generation = self._generation
        listed: list[mt.Tool] = await self._all_pages(ctx, "tools", host)
        client = host.connection.client if host.connection is not None else None
        usable = callable_tools(listed, client, self._task_support, server=self.name)
        tools: list[Tool] = []
        taken: set[str] = set()
        for tool in usable:
            name = MCP_TOOL_NAMES.unique(tool.name, taken)
            if name != tool.name:
                logger.warning("MCP tool %r of %s is offered as %r", tool.name, self.name, name)
            taken.add(name)
            tools.append(McpTool(self, tool, name=name))
        for extra in self._extra_tools:
            tools.append(extra if extra.name not in taken else _renamed(extra, taken))
            taken.add(tools[-1].name)
        if generation == self._generation:  # else a change came in while listing
            self._sessions.listings[key] = (host.connection, tools)
        return tuple(tools)

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        ctx: ToolContext | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 - bounds the request, see Sessions.request
        progress: ProgressHandler | None = None,
        meta: Mapping[str, Any] | None = None,
        task: bool | None = None,
    ) -> mt.CallToolResult:
        """Call a tool by its MCP name and return the server's raw result.

        A tool listed as requiring task augmentation is called as a task (see
        docs/guides/mcp.md); ``task`` forces the choice (None: as the tool's listing says).
        A JSON-RPC "invalid params" answer (-32602, how many servers report bad
        arguments) comes back as an error result (``is_error``, the server's message as
        its text), since the model can fix it.

        Raises:
            ConnectionError: the server cannot be reached, or went away during the call.
            TimeoutError: no answer within the timeout (the call is cancelled).
            ToolCallError: the server answered with another protocol error, or with a
                result that is not a valid ``CallToolResult``; over HTTP, answered 429 or
                5xx, its ``status`` and ``retry_after`` on it (a ``ServerStatusError``).
        """
        bound = check_timeout(timeout, "timeout") if timeout is not None else self.timeout
        args = dict(arguments or {})
        result, _ = await self._call_tool(name, args, ctx, bound, progress, meta, task)
        return result

    async def _call_tool(
        self,
        name: str,
        args: dict[str, Any],
        ctx: ToolContext | None,
        bound: float,
        progress: ProgressHandler | None = None,
        meta: Mapping[str, Any] | None = None,
        task: bool | None = None,
    ) -> tuple[mt.CallToolResult, tuple[str, ...]]:
        """`call_tool` within ``bound`` seconds, and the secrets of the session it went
        over (to be masked in what the model sees)."""
        sessions = self._sessions
        host = sessions.shared_host()
        if host is None:
            _, host = await sessions.host_for(ctx)
        task = self._task_support.get(name) == "required" if task is None else task
        call = call_sender(
            name, args, ctx, bound, report=progress or self._progress, meta=meta,
            task=task, relay=self._relay, server=self.name, answers_input=sessions.answers_input,
            transport=self.transport,
        )  # fmt: skip
        what = f"the call to {name!r}"
        if call is None:
            # Most calls: no closure made for them (fewer objects for the collector).
            # The SDK's call itself, with no read timeout of its own: the cancel scope
            # of `Sessions.request` bounds it (one deadline per call, not two timers).
            result: mt.CallToolResult = await sessions.request(
                ctx, what, Client.call_tool, bound, tool_name=name, host=host,
                fn_args=(name, args), invalid_params_result=True,
            )  # fmt: skip
        else:
            result = await sessions.request(ctx, what, call, bound, tool_name=name, host=host)
        return self._called(result), host.secrets

    def _called(self, result: mt.CallToolResult) -> mt.CallToolResult:
        if result.meta and result.meta.get(TOOLS_CHANGED_META) is True:
            # A toolsets server says the call changed this caller's tools (a search
            # loaded some): list again now, not when the announcement reaches us.
            self._invalidate()
        return result

    def __repr__(self) -> str:
        return f"McpToolset({self.name!r})"


def _renamed(tool: Tool, taken: set[str]) -> Tool:
    return RenamedTool(tool, MCP_TOOL_NAMES.unique(tool.name, taken))
