"""`McpToolset`: an MCP server's tools, over one long-lived session."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import inspect
import json
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, Literal, Self, TypeAlias

import anyio
import mcp.types as mt
import pydantic
from mcp import Client, MCPError
from mcp.shared.dispatcher import ProgressFnT

from toolsets._auth import check_headers, redact, redact_json
from toolsets._concurrency import check_timeout
from toolsets._confirmed import ConfirmPolicy, confirm_rule, may_be_destructive
from toolsets._context import ToolContext
from toolsets._declaration import ToolAnnotations
from toolsets._errors import ConnectionError, ToolCallError
from toolsets._function_tool import FunctionTool
from toolsets._json import JsonValue
from toolsets._names import MCP_TOOL_NAMES
from toolsets._tool import BaseTool, Tool
from toolsets._toolset import BaseToolset
from toolsets._validation import ArgumentChecker
from toolsets._wrappers import RenamedTool
from toolsets.mcp._convert import convert_result
from toolsets.mcp._relay import TOOLS_CHANGED_META
from toolsets.mcp.client._callbacks import (
    ElicitationHandler,
    RootsSource,
    SamplingHandler,
    elicitation_callback,
    logging_callback,
    roots_callback,
    sampling_callback,
)
from toolsets.mcp.client._connection import (
    ConnectionOptions,
    Host,
    SessionRefusedError,
    StaleConnectionError,
    is_connection_lost,
)
from toolsets.mcp.client._relay import ConfirmationRelay
from toolsets.mcp.client._tasks import (
    TaskCall,
    call_as_task,
    list_tasks_page,
    server_runs_tool_tasks,
    task_support,
)
from toolsets.mcp.client._transports import Sse, Stdio, StreamableHttp, Transport
from toolsets.models import Llm

__all__ = [
    "DEFAULT_CALL_TIMEOUT",
    "DEFAULT_CONNECT_TIMEOUT",
    "McpTool",
    "McpToolset",
    "ProgressHandler",
]

logger = logging.getLogger("toolsets.mcp")

DEFAULT_CALL_TIMEOUT = 60.0
"""Seconds a tool call may take unless the toolset or the call says otherwise."""
DEFAULT_CONNECT_TIMEOUT = 30.0
"""Seconds to start a server (or reach it) and finish the handshake."""


_Kind: TypeAlias = Literal["tools", "resources", "resource_templates", "prompts"]
"""A paginated list of a server's."""
_PAGES: dict[_Kind, tuple[Callable[..., Awaitable[Any]], Callable[[Any], list[Any]]]] = {
    "tools": (Client.list_tools, lambda page: page.tools),
    "resources": (Client.list_resources, lambda page: page.resources),
    "resource_templates": (Client.list_resource_templates, lambda page: page.resource_templates),
    "prompts": (Client.list_prompts, lambda page: page.prompts),
}
"""How a page of each list is asked for (``client.<list>(cursor=...)``), and its items."""

ProgressHandler: TypeAlias = Callable[
    [str, float, float | None, str | None], "Awaitable[None] | None"
]
"""Called with (tool name, progress, total, message) as a server reports progress: a
plain function, or an async one (awaited; keep it short, the call waits for it)."""


def _parameters(schema: Mapping[str, Any]) -> dict[str, Any]:
    """An MCP input schema as an object schema (some servers leave out type/properties)."""
    out = dict(schema)
    out.setdefault("type", "object")
    if out["type"] == "object":
        out.setdefault("properties", {})
    return out


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
            parameters=_parameters(tool.input_schema),
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
        ``secrets``) is masked wherever the server quotes it back.
        """
        if isinstance(args, Mapping):
            args = self._checker.without_null_options(args)
        invalid = self._checker.result(args)
        if invalid is not None:
            return invalid
        toolset = self.toolset
        result, secrets = await toolset._call_tool(self.mcp_name, dict(args), ctx, toolset.timeout)
        return redact_json(convert_result(result), secrets)


class McpToolset(BaseToolset):
    """The tools of one MCP server, over one long-lived session shared by every call.

    The session opens on first use (or on ``async with``, which is faster and keeps it in
    the caller's task group) and reopens after the server crashed or forgot the session:
    a call in flight when a server dies fails (it may have run); a stdio server that
    exits while idle is noticed at once and started again by the next call; a request an
    HTTP server refuses for its session id (404, or 400 naming the session) never ran, so
    it is sent again, once, on a new session. Tools are listed once, page by page, and
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
        self._client_kwargs = _client_kwargs(
            self.name, self._on_message, mode, log_level, sampling, elicitation, roots
        )
        self._relay: ConfirmationRelay | None = None
        if relay_confirmations:
            self._relay = ConfirmationRelay(self._client_kwargs.get("elicitation_callback"))
            self._client_kwargs["elicitation_callback"] = self._relay
        self._hosts: dict[str, Host] = {}
        self._listeners: dict[object, Callable[[], None]] = {}
        # Per header set: the connection a listing came from, and the listing.
        self._tools: dict[str, tuple[Any, list[Tool]]] = {}
        self._generation = 0  # bumped by each announced change
        self._task_group: Any = None
        self._entered = 0
        self._entered_by: int | None = None
        self._extra_tools = _access_tools(self, resources_as_tools, prompts_as_tools)
        # Per MCP tool name, how its listing says it may be called (tasks or not).
        self._task_support: dict[str, str] = {}
        self._per_call_headers = (
            isinstance(transport, StreamableHttp) and transport.header_provider is not None
        )

    # --- lifecycle --------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        task = anyio.get_current_task().id
        if self._task_group is not None and task != self._entered_by:
            raise RuntimeError(
                f"{self!r} is already entered by another task; enter it once, in the task "
                "that outlives its users (its session is shared by every task anyway)"
            )
        if self._task_group is None:
            if self._hosts:
                # Sessions opened on first use live on a background loop: close them, so
                # that every session from now on lives in this task group.
                await self.shutdown()
            self._entered_by = task
            task_group = anyio.create_task_group()
            await task_group.__aenter__()
            self._task_group = task_group
            for host in self._hosts.values():
                host.attach(task_group)
        self._entered += 1
        # Connect now, so that a wrong command or URL fails here rather than at the first
        # call (with per-call headers, sessions open per caller instead).
        if not self._per_call_headers:
            try:
                await self._host(None).connect()
            except BaseException:
                await self.__aexit__(None, None, None)
                raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._entered -= 1
        if self._entered > 0:
            return
        await self.shutdown()
        task_group, self._task_group = self._task_group, None
        if task_group is not None:
            await task_group.__aexit__(None, None, None)

    async def shutdown(self) -> None:
        """Close every session (ending a stdio server's process); idempotent, and safe
        from any task. The next use opens a new session."""
        hosts = list(self._hosts.values())
        self._hosts.clear()
        self._tools.clear()
        with anyio.CancelScope(shield=True):
            for host in hosts:
                await host.close()

    # --- sessions ---------------------------------------------------------------------

    async def _headers(self, ctx: ToolContext | None) -> dict[str, str]:
        transport = self.transport
        if not isinstance(transport, StreamableHttp) or transport.header_provider is None:
            return {}
        headers = transport.header_provider(ctx)
        if inspect.isawaitable(headers):
            headers = await headers
        check_headers(headers)
        return dict(headers)

    def _host(self, key: str | None, headers: Mapping[str, str] | None = None) -> Host:
        # One session per distinct set of per-call headers (e.g. one per user token):
        # a session's headers are fixed when it opens.
        key = key or ""
        host = self._hosts.get(key)
        if host is None:
            extra = dict(headers or {})
            secrets = self._transport(extra).secrets
            host = self._hosts[key] = Host(lambda: self._options(extra), secrets)
            if self._task_group is not None:
                host.attach(self._task_group)
        return host

    def _shared_host(self) -> Host | None:
        """The host of the one session every call shares, when no header provider picks
        a session per call (None: ask `_host_for`)."""
        if self._per_call_headers:
            return None
        return self._hosts.get("") or self._host(None)

    async def _host_for(self, ctx: ToolContext | None) -> tuple[str, Host]:
        headers = await self._headers(ctx)
        if not headers:
            return "", self._host(None)
        key = hashlib.sha256(json.dumps(sorted(headers.items())).encode()).hexdigest()
        host = self._host(key, headers)
        self._hosts[key] = self._hosts.pop(key)  # most recently used last
        while len(self._hosts) > self.max_sessions:
            # The least recently used caller's session is closed; it reopens if needed.
            oldest = next(iter(self._hosts))
            self._tools.pop(oldest, None)
            await self._hosts.pop(oldest).close()
        return key, host

    def _transport(self, extra_headers: Mapping[str, str]) -> Transport:
        """The transport of a session with ``extra_headers`` (a header provider's)."""
        transport = self.transport
        if extra_headers and isinstance(transport, StreamableHttp):
            transport = dataclasses.replace(
                transport, headers={**transport.headers, **extra_headers}, header_provider=None
            )
        return transport

    def _options(self, extra_headers: Mapping[str, str]) -> ConnectionOptions:
        return ConnectionOptions(
            transport=self._transport(extra_headers),
            name=self.name,
            connect_timeout=self.connect_timeout,
            client_kwargs=self._client_kwargs,
            on_list_changed=self._invalidate,
        )

    def _invalidate(self) -> None:
        self._generation += 1
        self._tools.clear()
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

    async def _request(
        self,
        ctx: ToolContext | None,
        what: str,
        fn: Callable[..., Awaitable[Any]],
        limit: float,
        *,
        tool_name: str = "",
        retry_expired: bool = True,
        host: Host | None = None,
        fn_args: tuple[Any, ...] = (),
        invalid_params_result: bool = False,
    ) -> Any:
        """Run one request, ``fn(client, *fn_args)``, on the session (``host``'s, by
        default the one serving ``ctx``), mapping the SDK's failures into ours; a secret
        of the session that the server quotes in an error is masked. With
        ``invalid_params_result``, a JSON-RPC "invalid params" answer is an error result
        (a tool call's arguments, which the model can fix)."""
        if host is None:
            _, host = await self._host_for(ctx)
        for attempt in (1, 2):
            connection = host.connection
            if connection is None or not connection.alive:
                connection = await host.connect()
            try:
                # A bare cancel scope: anyio.fail_after wraps one in another object.
                with anyio.CancelScope(deadline=anyio.current_time() + limit) as scope:
                    result = await host.call(connection, fn, fn_args)
                if scope.cancelled_caught:
                    raise TimeoutError(f"{what} got no answer within {limit:g} s")
                return result
            except StaleConnectionError as exc:
                if attempt == 2:
                    raise self._failure(exc, what, tool_name, host.secrets) from exc
                await host.discard(connection)  # nothing was sent: a new session
            except SessionRefusedError as exc:
                await host.discard(connection)
                if not retry_expired or attempt == 2:
                    raise self._failure(exc, what, tool_name, host.secrets) from exc
                # Refused before it ran: a new session, and the same request once more.
                logger.info("MCP session with %s expired; reconnecting", self.name)
            except MCPError as exc:
                if invalid_params_result and exc.code == mt.INVALID_PARAMS:
                    return _invalid_params_result(exc)
                if is_connection_lost(exc):
                    await host.discard(connection)
                raise self._failure(exc, what, tool_name, host.secrets) from exc
            except ToolCallError as exc:  # made by the request itself (a task's end)
                message = redact(str(exc), host.secrets)
                if message == str(exc):
                    raise
                raise ToolCallError(message, tool_name=exc.tool_name) from exc
            except pydantic.ValidationError as exc:
                raise self._failure(exc, what, tool_name, host.secrets) from exc
        raise AssertionError("unreachable")  # pragma: no cover

    def _failure(
        self,
        exc: MCPError | pydantic.ValidationError | StaleConnectionError | SessionRefusedError,
        what: str,
        tool_name: str,
        secrets: tuple[str, ...],
    ) -> Exception:
        """What a request's failure is raised as (a secret the server quoted masked):
        the server gone again before the request was sent, or refusing the session,
        or gone during the request; a timeout it reported, its protocol error, or a
        malformed result."""
        if isinstance(exc, StaleConnectionError):
            return ConnectionError(
                f"MCP server {self.name} exited again before {what} was sent",
                target=self.transport.target,
            )
        if isinstance(exc, SessionRefusedError):
            return ConnectionError(
                f"MCP server {self.name} refused the session for {what}: "
                + redact(str(exc), secrets),
                target=self.transport.target,
            )
        if isinstance(exc, pydantic.ValidationError):
            return ToolCallError(
                f"MCP server {self.name} answered {what} with a malformed result "
                f"({exc.error_count()} errors, the first: {_first_error(exc)})",
                tool_name=tool_name,
            )
        if is_connection_lost(exc):
            return ConnectionError(
                f"MCP server {self.name} went away during {what}; it is not retried "
                "because it may have run (the next call starts a new session)",
                target=self.transport.target,
            )
        message = redact(exc.message, secrets)
        if exc.code == mt.REQUEST_TIMEOUT:
            return TimeoutError(f"{what} timed out on the server: {message}")
        return ToolCallError(
            f"MCP server {self.name} answered {what} with error {exc.code}: {message}",
            tool_name=tool_name,
        )

    # --- tools ------------------------------------------------------------------------

    @property
    def confirm(self) -> ConfirmPolicy:
        """The confirmation policy its tools apply (as ``confirmed(toolset, confirm)``
        would), fixed when the toolset is made."""
        return self._confirm

    async def list_tools(self, ctx: ToolContext | None = None) -> Sequence[Tool]:
        """Every tool of the server (all pages), cached until the server announces a
        change or the session is reopened."""
        key, host = await self._host_for(ctx)
        cached = self._tools.get(key)
        live = host.connection
        if cached is not None and live is not None and cached[0] is live and live.alive:
            return tuple(cached[1])
        generation = self._generation
        listed: list[mt.Tool] = await self._all_pages(ctx, "tools", host)
        tools: list[Tool] = []
        taken: set[str] = set()
        client = host.connection.client if host.connection is not None else None
        runs_tasks = client is not None and server_runs_tool_tasks(client)
        unusable: list[str] = []
        for tool in listed:
            support = self._task_support[tool.name] = task_support(tool)
            if support == "required" and not runs_tasks:
                unusable.append(tool.name)
                continue
            name = MCP_TOOL_NAMES.unique(tool.name, taken)
            if name != tool.name:
                logger.warning("MCP tool %r of %s is offered as %r", tool.name, self.name, name)
            taken.add(name)
            tools.append(McpTool(self, tool, name=name))
        if unusable:
            logger.info(
                "MCP tools of %s not offered: %s (they can only be called as tasks, which "
                "the server does not accept)",
                self.name,
                ", ".join(repr(name) for name in unusable),
            )
        for extra in self._extra_tools:
            tools.append(extra if extra.name not in taken else _renamed(extra, taken))
            taken.add(tools[-1].name)
        if generation == self._generation:  # else a change came in while listing
            self._tools[key] = (host.connection, tools)
        return tuple(tools)

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        ctx: ToolContext | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 - bounds the request, see _request
        progress: ProgressHandler | None = None,
        meta: Mapping[str, Any] | None = None,
        task: bool | None = None,
    ) -> mt.CallToolResult:
        """Call a tool by its MCP name and return the server's raw result.

        A tool listed as requiring task augmentation is called as a task (see the
        README); ``task`` forces the choice (None: as the tool's listing says).
        A JSON-RPC "invalid params" answer (-32602, how many servers report bad
        arguments) comes back as an error result (``is_error``, the server's message as
        its text), since the model can fix it.

        Raises:
            ConnectionError: the server cannot be reached, or went away during the call.
            TimeoutError: no answer within the timeout (the call is cancelled).
            ToolCallError: the server answered with another protocol error, or with a
                result that is not a valid ``CallToolResult``.
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
        host = self._shared_host()
        if host is None:
            _, host = await self._host_for(ctx)
        report = progress or self._progress
        # A caller listening to the call's progress (our MCP server, for its own client)
        # hears the server's too.
        listened = ctx is not None and (ctx.progress is not None or ctx.client is not None)
        forward = ctx.report_progress if listened and ctx is not None else None
        on_progress = (
            _progress_callback(name, report, forward)
            if report is not None or forward is not None
            else None
        )
        request_meta: mt.RequestParamsMeta | None = dict(meta) if meta is not None else None  # type: ignore[assignment]
        if task is None:
            task = self._task_support.get(name) == "required"
        as_task = self._task_call(name, args, request_meta, bound, report) if task else None

        given = ctx.tool_confirmation if ctx is not None else None
        relay = self._relay if given is not None and given.confirmed else None
        if relay is None and as_task is None and on_progress is None and request_meta is None:
            # Most calls: no closure made for them (fewer objects for the collector).
            # The SDK's call itself, with no read timeout of its own: the cancel scope
            # of `_request` bounds it (one deadline per call, not two timers).
            result: mt.CallToolResult = await self._request(
                ctx, f"the call to {name!r}", Client.call_tool, bound, tool_name=name,
                host=host, fn_args=(name, args), invalid_params_result=True,
            )  # fmt: skip
            return self._called(result), host.secrets

        call = _sender(name, args, on_progress, request_meta, as_task, relay)
        result = await self._request(
            ctx, f"the call to {name!r}", call, bound, tool_name=name, host=host
        )
        return self._called(result), host.secrets

    def _called(self, result: mt.CallToolResult) -> mt.CallToolResult:
        if result.meta and result.meta.get(TOOLS_CHANGED_META) is True:
            # A toolsets server says the call changed this caller's tools (a search
            # loaded some): list again now, not when the announcement reaches us.
            self._invalidate()
        return result

    def _task_call(
        self,
        name: str,
        args: dict[str, Any],
        meta: mt.RequestParamsMeta | None,
        bound: float,
        report: ProgressHandler | None,
    ) -> TaskCall:
        """A task-augmented call; the task's status changes go to ``report`` (progress
        counts them, the status message is the message)."""
        updates = 0

        async def on_status(task: mt.Task) -> None:
            nonlocal updates
            updates += 1
            if report is not None:
                await _notify(
                    report, name, float(updates), None, task.status_message or task.status
                )

        return TaskCall(
            name=name,
            arguments=args,
            meta=meta,
            timeout=bound,
            server=self.name,
            answers_input=any(
                key in self._client_kwargs for key in ("elicitation_callback", "sampling_callback")
            ),
            on_status=on_status,
        )

    async def list_tasks(self, ctx: ToolContext | None = None) -> list[mt.Task]:
        """The tasks the server keeps for this session (all pages of ``tasks/list``):
        those of task-augmented calls, with their status."""
        tasks: list[mt.Task] = []
        cursor: str | None = None
        while True:
            page: mt.ListTasksResult = await self._request(
                ctx, "tasks/list", functools.partial(list_tasks_page, cursor=cursor), self.timeout
            )
            tasks.extend(page.tasks)
            cursor = page.next_cursor
            if not cursor:
                return tasks

    # --- resources and prompts --------------------------------------------------------

    async def _all_pages(
        self, ctx: ToolContext | None, kind: _Kind, host: Host | None = None
    ) -> list[Any]:
        """Every item of a paginated list (``tools``, ``resources``, ``prompts``), from
        one session (``host``'s, by default the one serving ``ctx``)."""
        if host is None:
            _, host = await self._host_for(ctx)
        method, items_of = _PAGES[kind]
        items: list[Any] = []
        cursor: str | None = None
        while True:
            page = await self._request(
                ctx,
                f"{kind}/list",
                functools.partial(method, cursor=cursor),
                self.timeout,
                host=host,
            )
            items.extend(items_of(page))
            cursor = page.next_cursor
            if not cursor:
                return items

    async def list_resources(self, ctx: ToolContext | None = None) -> list[mt.Resource]:
        """Every resource the server lists (all pages)."""
        resources: list[mt.Resource] = await self._all_pages(ctx, "resources")
        return resources

    async def list_resource_templates(
        self, ctx: ToolContext | None = None
    ) -> list[mt.ResourceTemplate]:
        """Every resource template the server offers (all pages)."""
        templates: list[mt.ResourceTemplate] = await self._all_pages(ctx, "resource_templates")
        return templates

    async def read_resource(
        self, uri: str, ctx: ToolContext | None = None
    ) -> list[mt.TextResourceContents | mt.BlobResourceContents]:
        """The contents of a resource."""
        return await self._read_resource(uri, ctx, None)

    async def _read_resource(
        self, uri: str, ctx: ToolContext | None, host: Host | None
    ) -> list[mt.TextResourceContents | mt.BlobResourceContents]:
        result = await self._request(
            ctx, f"reading {uri!r}", lambda c: c.read_resource(uri), self.timeout, host=host
        )
        contents: list[mt.TextResourceContents | mt.BlobResourceContents] = result.contents
        return contents

    async def list_prompts(self, ctx: ToolContext | None = None) -> list[mt.Prompt]:
        """Every prompt the server offers (all pages)."""
        prompts: list[mt.Prompt] = await self._all_pages(ctx, "prompts")
        return prompts

    async def get_prompt(
        self, name: str, arguments: Mapping[str, str] | None = None, ctx: ToolContext | None = None
    ) -> mt.GetPromptResult:
        """A prompt, filled in with ``arguments``."""
        return await self._get_prompt(name, arguments, ctx, None)

    async def _get_prompt(
        self,
        name: str,
        arguments: Mapping[str, str] | None,
        ctx: ToolContext | None,
        host: Host | None,
    ) -> mt.GetPromptResult:
        args = dict(arguments or {})
        result: mt.GetPromptResult = await self._request(
            ctx, f"the prompt {name!r}", lambda c: c.get_prompt(name, args), self.timeout, host=host
        )
        return result

    async def complete(
        self,
        ref: mt.PromptReference | mt.ResourceTemplateReference,
        argument: Mapping[str, str],
        context_arguments: Mapping[str, str] | None = None,
        ctx: ToolContext | None = None,
    ) -> mt.CompleteResult:
        """Completions the server suggests for an argument of a prompt or a resource
        template (``argument``: its ``name`` and the ``value`` typed so far)."""
        given = dict(argument)
        context = dict(context_arguments) if context_arguments is not None else None
        result: mt.CompleteResult = await self._request(
            ctx,
            "completion/complete",
            lambda c: c.complete(ref, given, context),
            self.timeout,
        )
        return result

    # --- what the server said about itself --------------------------------------------

    async def server_info(self) -> mt.Implementation:
        """The server's name and version (connecting if needed)."""
        connection = await self._host(None).connect()
        assert connection.client is not None
        info = connection.client.server_info
        if info is None:
            raise ToolCallError(f"MCP server {self.name} did not say who it is", tool_name="")
        return info

    async def protocol_version(self) -> str:
        """The protocol version negotiated with the server (connecting if needed)."""
        connection = await self._host(None).connect()
        assert connection.client is not None
        return str(connection.client.protocol_version)

    def __repr__(self) -> str:
        return f"McpToolset({self.name!r})"


def _first_error(exc: pydantic.ValidationError) -> str:
    error = exc.errors(include_url=False, include_input=False)[0]
    where = ".".join(str(part) for part in error["loc"]) or "the result"
    return f"{where}: {error['msg']}"


def _renamed(tool: Tool, taken: set[str]) -> Tool:
    return RenamedTool(tool, MCP_TOOL_NAMES.unique(tool.name, taken))


def _plain(item: Any) -> dict[str, Any]:
    """An SDK model as JSON, without the fields it leaves unset."""
    dumped: dict[str, Any] = item.model_dump(mode="json", exclude_none=True)
    return dumped


def _access_tools(toolset: McpToolset, resources: bool, prompts: bool) -> list[Tool]:
    """Tools giving the model the server's resources and prompts (a secret of the
    session the server quotes back is masked, as in a tool's result)."""
    tools: list[Tool] = []
    if resources:

        async def list_resources(ctx: ToolContext) -> list[dict[str, Any]]:
            """List the resources (documents, files, data) this server offers."""
            _, host = await toolset._host_for(ctx)  # one header_provider call per call
            listed = await toolset._all_pages(ctx, "resources", host)
            return redact_json([_plain(r) for r in listed], host.secrets)

        async def read_resource(uri: str, ctx: ToolContext) -> JsonValue:
            """Read one of this server's resources.

            Args:
                uri: The resource's URI, as listed by list_resources.
            """
            _, host = await toolset._host_for(ctx)
            contents = await toolset._read_resource(uri, ctx, host)
            shown: JsonValue = [_plain(c) for c in contents]
            return redact_json(shown, host.secrets)

        listing = FunctionTool(list_resources, read_only=True)
        reading = FunctionTool(read_resource, read_only=True)
        tools += [listing, reading]
    if prompts:

        async def list_prompts(ctx: ToolContext) -> list[dict[str, Any]]:
            """List the prompt templates this server offers."""
            _, host = await toolset._host_for(ctx)
            listed = await toolset._all_pages(ctx, "prompts", host)
            return redact_json([_plain(p) for p in listed], host.secrets)

        async def get_prompt(
            name: str, ctx: ToolContext, arguments: dict[str, str] | None = None
        ) -> JsonValue:
            """Fill in one of this server's prompt templates.

            Args:
                name: The prompt's name, as listed by list_prompts.
                arguments: Values for the prompt's arguments.
            """
            _, host = await toolset._host_for(ctx)
            result = await toolset._get_prompt(name, arguments, ctx, host)
            messages: JsonValue = [_plain(message) for message in result.messages]
            return redact_json(messages, host.secrets)

        prompt_list = FunctionTool(list_prompts, read_only=True)
        prompt_get = FunctionTool(get_prompt, read_only=True)
        tools += [prompt_list, prompt_get]
    return tools


def _client_kwargs(
    name: str,
    on_message: Callable[[Any], Awaitable[None]],
    mode: Literal["auto", "legacy", "2026-07-28"],
    log_level: mt.LoggingLevel | None,
    sampling: SamplingHandler | Llm | None,
    elicitation: ElicitationHandler | Literal["defaults"] | None,
    roots: RootsSource | None,
) -> dict[str, Any]:
    """The options of the SDK's client for each session of the toolset ``name``."""
    kwargs: dict[str, Any] = {
        "mode": mode,
        "read_timeout_seconds": None,  # each request gets its own bound instead
        "client_info": mt.Implementation(name="toolsets", version=_version()),
        "message_handler": on_message,
        "logging_callback": logging_callback(logging.getLogger("toolsets.mcp.server"), name),
        "cache": None,  # our own list cache, invalidated by list changes
    }
    if log_level is not None:
        kwargs["log_level"] = log_level
    if sampling is not None:
        kwargs["sampling_callback"] = sampling_callback(sampling)
    if elicitation is not None:
        kwargs["elicitation_callback"] = elicitation_callback(elicitation)
    if roots is not None:
        kwargs["list_roots_callback"] = roots_callback(roots)
    return kwargs


def _progress_callback(
    name: str, report: ProgressHandler | None, forward: ProgressFnT | None
) -> ProgressFnT:
    """The SDK's progress callback of a call to ``name``: tells ``report`` (the
    toolset's or the call's handler) and ``forward`` (the caller's own listener)."""

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        if report is not None:
            await _notify(report, name, progress, total, message)
        if forward is not None:
            await forward(progress, total, message)

    return on_progress


def _sender(
    name: str,
    args: dict[str, Any],
    on_progress: ProgressFnT | None,
    meta: mt.RequestParamsMeta | None,
    as_task: TaskCall | None,
    relay: ConfirmationRelay | None,
) -> Callable[[Client], Awaitable[mt.CallToolResult]]:
    """The request of a call to ``name`` that listens to its progress, carries
    ``meta``, runs as a task, or may have its confirmation answered by ``relay``."""

    async def send(client: Client) -> mt.CallToolResult:
        if as_task is not None:
            return await call_as_task(client, as_task)
        # No read timeout of the SDK's: `_request`'s cancel scope bounds the call (one
        # deadline per call, not two timers).
        return await client.call_tool(name, args, progress_callback=on_progress, meta=meta)

    async def call(client: Client) -> mt.CallToolResult:
        try:
            if relay is None:
                return await send(client)
            # The server's own confirmation of a call the user confirmed here is
            # answered by the relay, once (see `ConfirmationRelay`).
            with relay.confirmed_call(client.session, name, args):
                return await send(client)
        except MCPError as exc:
            return _invalid_params_result(exc)

    return call


def _version() -> str:
    from toolsets import __version__

    return __version__


def _invalid_params_result(exc: MCPError) -> mt.CallToolResult:
    """A JSON-RPC "invalid params" answer (how many servers report bad arguments) as an
    error result, which the model can act on; anything else is raised again."""
    if exc.code != mt.INVALID_PARAMS:
        raise exc
    text = mt.TextContent(type="text", text=exc.message)
    return mt.CallToolResult(content=[text], is_error=True)


async def _notify(
    report: ProgressHandler, name: str, done: float, total: float | None, message: str | None
) -> None:
    """Call a progress handler, awaiting it if it is async."""
    outcome = report(name, done, total, message)
    if outcome is not None:
        await outcome
