"""How `McpToolset` sends a tool call that is more than the plain request (internal): one
that reports progress (to the toolset's or the call's handler, and to a caller listening
for its own client), carries ``_meta``, runs as a task (its status changes reported as
progress), or has its confirmation answered by a `ConfirmationRelay`.

The plain call (most of them) is sent by the toolset as the SDK's ``call_tool`` itself,
with no closure built for it (`call_sender` says None).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeAlias

import httpx2
import mcp.types as mt
from mcp import Client, MCPError
from mcp.shared.dispatcher import ProgressFnT

from toolsets import _telemetry
from toolsets._context import ToolContext
from toolsets.mcp.client._relay import ConfirmationRelay
from toolsets.mcp.client._sessions import result_of_invalid_params
from toolsets.mcp.client._tasks import TaskCall, call_as_task
from toolsets.mcp.client._transports import Stdio, Transport

if TYPE_CHECKING:
    from toolsets.telemetry._spans import Attributes, Telemetry

__all__ = ["ProgressHandler", "call_sender"]

ProgressHandler: TypeAlias = Callable[
    [str, float, float | None, str | None], "Awaitable[None] | None"
]
"""Called with (tool name, progress, total, message) as a server reports progress: a
plain function, or an async one (awaited; keep it short, the call waits for it)."""


def call_sender(
    name: str,
    args: dict[str, Any],
    ctx: ToolContext | None,
    bound: float,
    *,
    report: ProgressHandler | None,
    meta: Mapping[str, Any] | None,
    task: bool,
    relay: ConfirmationRelay | None,
    server: str,
    answers_input: bool,
    transport: Transport | None = None,
) -> Callable[[Client], Awaitable[mt.CallToolResult]] | None:
    """The request of a call to ``server``'s tool ``name`` within ``bound`` seconds, or
    None for the plain one (``client.call_tool(name, args)``).

    Args:
        report: The toolset's or the call's progress handler.
        meta: The request's ``_meta``.
        task: Whether to call it as a task.
        relay: Answers the server's confirmation of a call the user confirmed (its
            context's ``tool_confirmation``), once.
        answers_input: Whether the toolset answers a server's questions (elicitation or
            sampling) while a task runs.
        transport: How the server is reached (what a telemetry span says of it).
    """
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
    as_task = None
    if task:
        as_task = _task_call(name, args, request_meta, bound, report, server, answers_input)
    given = ctx.tool_confirmation if ctx is not None else None
    if given is None or not given.confirmed:
        relay = None
    telemetry = _telemetry.current
    plain = relay is None and as_task is None and on_progress is None and request_meta is None
    if plain and telemetry is None:
        return None
    sender = _sender(name, args, on_progress, request_meta, as_task, relay)
    return sender if telemetry is None else _traced(telemetry, name, sender, transport)


def _peer(transport: Transport | None) -> Attributes:
    """What a span says of the server ``transport`` reaches (semantic conventions)."""
    if isinstance(transport, Stdio):
        return {"network.transport": "pipe"}
    if transport is None:
        return {}
    url = httpx2.URL(transport.url)
    port = url.port or (443 if url.scheme == "https" else 80)
    return {"network.transport": "tcp", "server.address": url.host, "server.port": port}


def _traced(
    telemetry: Telemetry,
    name: str,
    sender: Callable[[Client], Awaitable[mt.CallToolResult]],
    transport: Transport | None,
) -> Callable[[Client], Awaitable[mt.CallToolResult]]:
    """``sender`` as a CLIENT span ``tools/call {name}`` (the SDK's request under it
    puts its ``traceparent`` in ``_meta``); a result with ``isError`` is a ``tool_error``."""

    peer = _peer(transport)

    async def call(client: Client) -> mt.CallToolResult:
        with telemetry.mcp_call(name, peer) as span:
            result = await sender(client)
            if result.is_error:
                span.failed("tool_error")
            return result

    return call


async def _notify(
    report: ProgressHandler, name: str, done: float, total: float | None, message: str | None
) -> None:
    """Call a progress handler, awaiting it if it is async."""
    outcome = report(name, done, total, message)
    if outcome is not None:
        await outcome


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


def _task_call(
    name: str,
    args: dict[str, Any],
    meta: mt.RequestParamsMeta | None,
    bound: float,
    report: ProgressHandler | None,
    server: str,
    answers_input: bool,
) -> TaskCall:
    """A task-augmented call of ``server``'s tool ``name``; the task's status changes go
    to ``report`` (progress counts them, the status message is the message)."""
    updates = 0

    async def on_status(task: mt.Task) -> None:
        nonlocal updates
        updates += 1
        if report is not None:
            await _notify(report, name, float(updates), None, task.status_message or task.status)

    return TaskCall(
        name=name,
        arguments=args,
        meta=meta,
        timeout=bound,
        server=server,
        answers_input=answers_input,
        on_status=on_status,
    )


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
        # No read timeout of the SDK's: the request's cancel scope bounds the call (one
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
            return result_of_invalid_params(exc)

    return call
