"""Task-augmented tool calls, MCP 2025-11-25 (internal).

A tool listed with ``execution.taskSupport: "required"`` cannot be called plainly: the
call creates a *task* on the server (``tools/call`` with a ``task`` parameter, answered
at once by a ``CreateTaskResult``), the client follows its status with ``tasks/get``
until it is terminal, and ``tasks/result`` hands over the tool's result. While the task
is ``input_required``, ``tasks/result`` is also where the server's questions arrive
(elicitation, sampling): the SDK passes them to the session's callbacks.

What the SDK 2.3 gives: the task types and ``ClientSession.send_request``, not the
task runtime (it was dropped with the tasks' move to an extension in 2026-07-28).
``tasks/status`` notifications are dropped by it as well, so the status is polled, at
the server's ``pollInterval`` kept within [`MIN_POLL_INTERVAL`, `MAX_POLL_INTERVAL`].
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import anyio
import mcp.types as mt
from mcp import Client, MCPError
from pydantic import BaseModel, ValidationError

from toolsets._errors import ToolCallError
from toolsets.mcp.client._connection import is_connection_lost, is_session_expired

__all__ = [
    "CANCEL_TIMEOUT",
    "MAX_POLL_INTERVAL",
    "MIN_POLL_INTERVAL",
    "TaskCall",
    "call_as_task",
    "callable_tools",
    "list_tasks_page",
    "server_runs_tool_tasks",
    "task_support",
]

logger = logging.getLogger("toolsets.mcp")

M = TypeVar("M", bound=BaseModel)

MIN_POLL_INTERVAL = 0.05
"""Seconds: the shortest wait between two ``tasks/get`` (whatever the server asks)."""
MAX_POLL_INTERVAL = 5.0
"""Seconds: the longest wait between two ``tasks/get`` (whatever the server asks)."""
DEFAULT_POLL_INTERVAL = 0.5
"""Seconds between two ``tasks/get`` when the server suggests no interval."""
CANCEL_TIMEOUT = 2.0
"""Seconds a cancelled call waits for the server to take its ``tasks/cancel``."""
TTL_MARGIN = 30.0
"""Seconds the server is asked to keep a task beyond the call's timeout."""

TERMINAL = frozenset({"completed", "failed", "cancelled"})

TaskSupport = Literal["forbidden", "optional", "required"]


def task_support(tool: mt.Tool) -> TaskSupport:
    """How a listed tool may be called: ``"required"`` means only as a task."""
    execution = tool.execution
    support = execution.task_support if execution is not None else None
    return support or "forbidden"


def server_runs_tool_tasks(client: Client) -> bool:
    """The server accepts task-augmented ``tools/call`` (its ``tasks`` capability says
    so; only the 2025-11-25 handshake carries it)."""
    try:
        capabilities = client.session.server_capabilities
    except RuntimeError:  # the session already closed
        return False
    tasks = capabilities.tasks if capabilities is not None else None
    requests = tasks.requests if tasks is not None else None
    tools = requests.tools if requests is not None else None
    return tools is not None and tools.call is not None


def callable_tools(
    listed: list[mt.Tool], client: Client | None, support: dict[str, str], *, server: str
) -> list[mt.Tool]:
    """The tools of ``listed`` a session can call: all, but those it may call only as a
    task when ``server`` does not accept tasks (named in one log line). How each tool
    may be called goes into ``support``, by its MCP name."""
    runs_tasks = client is not None and server_runs_tool_tasks(client)
    usable: list[mt.Tool] = []
    unusable: list[str] = []
    for tool in listed:
        kind = support[tool.name] = task_support(tool)
        if kind == "required" and not runs_tasks:
            unusable.append(tool.name)
        else:
            usable.append(tool)
    if unusable:
        logger.info(
            "MCP tools of %s not offered: %s (they can only be called as tasks, which "
            "the server does not accept)",
            server,
            ", ".join(repr(name) for name in unusable),
        )
    return usable


@dataclass(frozen=True, kw_only=True)
class TaskCall:
    """One task-augmented call, as the toolset asks for it."""

    name: str
    """The tool's MCP name."""
    arguments: dict[str, Any]
    meta: mt.RequestParamsMeta | None
    timeout: float
    """The call's bound in seconds (enforced by the caller's cancel scope; here it sizes
    the task's time to live and each request's backstop)."""
    server: str
    """The server's name, for messages."""
    answers_input: bool
    """The session has a callback (elicitation, sampling) to answer the server's
    questions while the task is ``input_required``."""
    on_status: Callable[[mt.Task], Awaitable[None]] | None = None
    """Called with the task each time its status or status message changes."""


async def call_as_task(client: Client, call: TaskCall) -> mt.CallToolResult:
    """Create the task, follow it to the end and return the tool's result.

    A cancelled call (the caller's cancel scope, the call's deadline) cancels the task
    on the server (shielded, at most `CANCEL_TIMEOUT` s) before the cancellation goes on.

    Raises:
        ToolCallError: the server does not run tasks, lost the task or cancelled it, or
            answered the task requests with an error or a malformed result.
        MCPError: as a plain call would (creating the task, or its result): the caller
            maps these.
    """
    if not server_runs_tool_tasks(client):
        raise ToolCallError(
            f"the MCP tool {call.name!r} can only be called as a task, which {call.server} "
            "does not accept (it does not advertise tasks for tools/call)",
            tool_name=call.name,
        )
    return await _Follower(client, call).run()


class _Follower:
    def __init__(self, client: Client, call: TaskCall) -> None:
        self.client = client
        self.call = call
        self.backstop = call.timeout + 5  # our own cancel scope fires first
        self.task: mt.Task | None = None
        self.seen: tuple[str, str | None] | None = None
        self.finished = False

    async def run(self) -> mt.CallToolResult:
        task = await self._create()
        if isinstance(task, mt.CallToolResult):
            return task
        try:
            result = await self._follow(task)
            self.finished = True
            return result
        finally:
            if not self.finished:
                await self._cancel()

    async def _create(self) -> mt.Task | mt.CallToolResult:
        """The task, or the result itself from a server that ran the call plainly (as
        the spec has servers do with a task they do not support)."""
        call = self.call
        ttl = math.ceil((call.timeout + TTL_MARGIN) * 1000)
        request = mt.CallToolRequest(
            params=mt.CallToolRequestParams(
                name=call.name,
                arguments=call.arguments,
                task=mt.TaskMetadata(ttl=ttl),
                _meta=call.meta,
            )
        )
        created: mt.CreateTaskResult | mt.CallToolResult
        try:
            created = await self.client.session.send_request(
                request, mt.CreateTaskResult, request_read_timeout_seconds=self.backstop
            )
        except ValidationError as exc:
            # The SDK 2.3 checks every tools/call answer against CallToolResult before
            # the type asked for (modelcontextprotocol/python-sdk#3161): a task's
            # creation fails that check only for its missing content, and the error
            # carries the answer.
            created = _created_task(exc, call.name)
        if isinstance(created, mt.CallToolResult):
            return created
        self.task = created.task
        logger.debug("MCP tool %r runs as task %s", call.name, created.task.task_id)
        return created.task

    async def _follow(self, task: mt.Task) -> mt.CallToolResult:
        while True:
            self.task = task
            self.finished = task.status in TERMINAL  # nothing left to cancel
            await self._report(task)
            if task.status == "completed":
                return await self._result()
            if task.status == "failed":
                return await self._failed(task)
            if task.status == "cancelled":
                raise ToolCallError(
                    f"{self.call.server} cancelled task {task.task_id} of {self.call.name!r}"
                    + (f": {task.status_message}" if task.status_message else ""),
                    tool_name=self.call.name,
                )
            if task.status == "input_required":
                if not self.call.answers_input:
                    return await self._cannot_answer(task)
                # Blocks until the task ends, delivering the server's questions to the
                # session's callbacks on the way.
                return await self._result()
            await anyio.sleep(_poll_interval(task))
            task = await self._request(
                mt.GetTaskRequest(params=mt.GetTaskRequestParams(task_id=task.task_id)),
                mt.GetTaskResult,
                "tasks/get",
            )

    async def _result(self) -> mt.CallToolResult:
        assert self.task is not None
        request = mt.GetTaskPayloadRequest(
            params=mt.GetTaskPayloadRequestParams(task_id=self.task.task_id)
        )
        # An error answer is the error the call itself would have had: the caller maps
        # it as for a plain call (only a lost session is told apart: not to be retried).
        result = await self._request(request, mt.CallToolResult, "tasks/result", map_errors=False)
        self.finished = True
        return result

    async def _failed(self, task: mt.Task) -> mt.CallToolResult:
        try:
            result = await self._result()
        except MCPError as exc:
            if is_connection_lost(exc):
                raise
            self.finished = True
            return _error(f"The tool failed: {task.status_message or exc.message}")
        if not result.is_error:
            return _error(f"The tool failed: {task.status_message or 'no reason given'}")
        return result

    async def _cannot_answer(self, task: mt.Task) -> mt.CallToolResult:
        await self._cancel()
        self.finished = True
        asked = f" ({task.status_message})" if task.status_message else ""
        return _error(
            f"The tool stopped to ask the user for input{asked}, which this client cannot "
            "give; the task was cancelled."
        )

    async def _report(self, task: mt.Task) -> None:
        seen = (task.status, task.status_message)
        if seen == self.seen:
            return
        self.seen = seen
        logger.debug(
            "MCP task %s of %r: %s %s",
            task.task_id,
            self.call.name,
            task.status,
            task.status_message or "",
        )
        if self.call.on_status is not None:
            await self.call.on_status(task)

    async def _cancel(self) -> None:
        task = self.task
        if task is None or self.finished:
            return
        self.finished = True
        request = mt.CancelTaskRequest(params=mt.CancelTaskRequestParams(task_id=task.task_id))
        with anyio.move_on_after(CANCEL_TIMEOUT, shield=True) as scope:
            try:
                await self.client.session.send_request(
                    request, mt.CancelTaskResult, request_read_timeout_seconds=CANCEL_TIMEOUT
                )
            except (MCPError, ValidationError) as exc:
                # Already over, or the server is gone: nothing left to stop.
                logger.debug("tasks/cancel of %s: %s", task.task_id, exc)
                return
        if scope.cancelled_caught:
            logger.warning(
                "MCP task %s of %r: no answer to tasks/cancel within %g s",
                task.task_id,
                self.call.name,
                CANCEL_TIMEOUT,
            )
        else:
            logger.debug("MCP task %s of %r cancelled", task.task_id, self.call.name)

    async def _request(
        self, request: Any, result_type: type[M], method: str, *, map_errors: bool = True
    ) -> M:
        assert self.task is not None
        try:
            return await self.client.session.send_request(
                request, result_type, request_read_timeout_seconds=self.backstop
            )
        except MCPError as exc:
            # Once the task exists, a rejected session must not make the caller send the
            # call again (a new task): the work may have run.
            if is_connection_lost(exc) or not (map_errors or is_session_expired(exc)):
                raise
            raise ToolCallError(
                f"{self.call.server} answered {method} for task {self.task.task_id} of "
                f"{self.call.name!r} with error {exc.code}: {exc.message}",
                tool_name=self.call.name,
            ) from exc
        except ValidationError as exc:
            raise ToolCallError(
                f"{self.call.server} answered {method} for task {self.task.task_id} of "
                f"{self.call.name!r} with a malformed result",
                tool_name=self.call.name,
            ) from exc


async def list_tasks_page(client: Client, cursor: str | None) -> mt.ListTasksResult:
    """One page of ``tasks/list``."""
    params = mt.PaginatedRequestParams(cursor=cursor) if cursor else None
    return await client.session.send_request(mt.ListTasksRequest(params=params), mt.ListTasksResult)


def _created_task(error: ValidationError, name: str) -> mt.CreateTaskResult | mt.CallToolResult:
    for detail in error.errors():
        answer = detail.get("input")
        if not isinstance(answer, Mapping):
            continue
        try:
            if "task" in answer:
                return mt.CreateTaskResult.model_validate(answer, by_name=False)
            if "content" in answer:  # a plain result
                return mt.CallToolResult.model_validate(answer, by_name=False)
        except ValidationError:
            break
    raise ToolCallError(
        f"the answer to the task-augmented call of {name!r} is neither a task nor a result",
        tool_name=name,
    ) from error


def _poll_interval(task: mt.Task) -> float:
    asked = task.poll_interval
    seconds = asked / 1000 if asked is not None and asked > 0 else DEFAULT_POLL_INTERVAL
    return min(max(seconds, MIN_POLL_INTERVAL), MAX_POLL_INTERVAL)


def _error(text: str) -> mt.CallToolResult:
    return mt.CallToolResult(content=[mt.TextContent(type="text", text=text)], is_error=True)
