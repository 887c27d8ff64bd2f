"""Dispatching one function call: before_tool → scopes → confirmation → auth → run →
after_tool, with on_tool_error around the run. Internal to the agent loop."""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias, TypeVar

import anyio

from toolsets._auth import AuthCredential
from toolsets._concurrency import with_deadline
from toolsets._content import FunctionCall, FunctionResponse
from toolsets._context import EventActions, ToolConfirmation, ToolContext
from toolsets._errors import close_names
from toolsets._function_tool import FunctionTool
from toolsets._json import MAX_JSON_DEPTH, JsonValue, copy_json, deeper_than
from toolsets._results import clip, error_result
from toolsets._tool import Tool
from toolsets.agent._events import (
    ConfirmationRequest,
    CredentialRequest,
    LongRunningRequest,
    PendingRequest,
)
from toolsets.agent._run import RunContext
from toolsets.models import INVALID_JSON_KEY

__all__ = [
    "AfterTool",
    "BeforeTool",
    "CallOutcome",
    "Callbacks",
    "Dispatcher",
    "OnToolError",
    "argument_problem",
    "unknown_tool",
]

BeforeTool: TypeAlias = Callable[
    [Tool, dict[str, Any], ToolContext], "JsonValue | Awaitable[JsonValue]"
]
"""Called before a tool runs with a copy of the arguments it may change in place (to
rewrite the call); returning anything but None skips the tool and uses that as its
result."""
AfterTool: TypeAlias = Callable[
    [Tool, Mapping[str, Any], ToolContext, JsonValue], "JsonValue | Awaitable[JsonValue]"
]
"""Called with the tool's result; returning anything but None replaces it."""
OnToolError: TypeAlias = Callable[
    [Tool, Mapping[str, Any], ToolContext, Exception], "JsonValue | Awaitable[JsonValue]"
]
"""Called when the tool raised (or timed out); returning anything but None is used as
the result; otherwise the model is told the error."""

T = TypeVar("T")

_FUNCTION_TOOL_RUN = FunctionTool.run


def _on_loop(tool: Tool) -> FunctionTool[..., Any] | None:
    """``tool`` if it is a `FunctionTool` calling a plain function on the event loop (and
    not of a subclass that overrides ``run``, which is run as usual)."""
    if getattr(type(tool), "run", None) is not _FUNCTION_TOOL_RUN:
        return None
    function_tool: FunctionTool[..., Any] = tool  # type: ignore[assignment]
    return function_tool if function_tool.runs_on_loop else None


WAITING_FOR_CONFIRMATION: JsonValue = {"status": "waiting for the user's confirmation"}
WAITING_FOR_CREDENTIAL: JsonValue = {"status": "waiting for the user's credentials"}
DECLINED = "The user declined this call; it did not run."


@dataclass(frozen=True, kw_only=True)
class Callbacks:
    """The tool callbacks of one agent; each list is tried in order, first non-None wins."""

    before_tool: Sequence[BeforeTool] = ()
    after_tool: Sequence[AfterTool] = ()
    on_tool_error: Sequence[OnToolError] = ()


@dataclass(kw_only=True)
class CallOutcome:
    """What dispatching one call produced."""

    response: FunctionResponse
    """The final result, or a placeholder with ``will_continue`` when pending."""
    actions: EventActions | None = None
    """The actions the tool set (None: none)."""
    pending: PendingRequest | None = None
    """What the call waits for, if anything."""


async def _first(callbacks: Sequence[Callable[..., Any]], *args: Any) -> JsonValue:
    """The first non-None answer of ``callbacks`` (called in order), or None."""
    for callback in callbacks:
        value = callback(*args)
        if inspect.isawaitable(value):
            value = await value
        if value is not None:
            result: JsonValue = value
            return result
    return None


def describe_error(tool_name: str, error: Exception) -> str:
    """What the model is told about an exception: the real cause, in one line."""
    if isinstance(error, TimeoutError):
        return f"The tool {tool_name!r} timed out: {error or 'no result in time'}"
    return f"The tool {tool_name!r} failed: {type(error).__name__}: {error}"


_SHOWN = 100
"""Characters of a model's own text (a name, unreadable arguments) quoted back to it."""
_LISTED = 10
"""Tools named when the model calls one that does not exist: all of them up to this
many, otherwise the closest few (the model has every declaration anyway)."""


def _kind(value: object) -> str:
    """The JSON type of ``value``, as the model would call it."""
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list | tuple):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return "null" if value is None else type(value).__name__


_TOO_DEEP = f"The arguments are nested deeper than {MAX_JSON_DEPTH} levels; send them flatter."


def argument_problem(args: object) -> str | None:
    """What is wrong with a call's arguments before any tool may see them (not a JSON
    object, text the model could not read, nested deeper than `MAX_JSON_DEPTH`), or None."""
    if not isinstance(args, Mapping):
        return f"The arguments must be a JSON object, not {_kind(args)}."
    if len(args) == 1 and isinstance(args.get(INVALID_JSON_KEY), str):
        return _unreadable(args[INVALID_JSON_KEY])
    if deeper_than(args, MAX_JSON_DEPTH):
        return _TOO_DEEP
    return None


def _unreadable(text: str) -> str:
    """Why the text a model sent as arguments is not a JSON object."""
    try:
        value = json.loads(text)
        if isinstance(value, str):  # encoded twice, as some models do
            value = json.loads(value)
    except RecursionError:  # json's answer to deep nesting
        return _TOO_DEEP
    except json.JSONDecodeError as exc:
        return (
            f"The arguments are not valid JSON ({exc.msg} at character {exc.pos}); send a "
            f"JSON object. They began: {clip(text, _SHOWN)!r}"
        )
    if not isinstance(value, Mapping):
        return f"The arguments must be a JSON object, not {_kind(value)}."
    return _TOO_DEEP if deeper_than(value, MAX_JSON_DEPTH) else "The arguments are unreadable."


def unknown_tool(name: str, available: Mapping[str, object]) -> str:
    """What the model is told when it calls a tool that does not exist: its name (cut
    short) and the tools it may have meant."""
    shown = clip(name, _SHOWN)
    if len(available) <= _LISTED:
        names = ", ".join(sorted(available)) or "none"
        return f"There is no tool named {shown!r}. Available tools: {names}."
    close = close_names(name, available, limit=5)
    hint = f"The closest: {', '.join(close)}." if close else "Call one of the tools declared."
    return f"There is no tool named {shown!r} (of {len(available)} tools). {hint}"


class Dispatcher:
    """Runs the calls of one model turn for one agent."""

    def __init__(
        self,
        *,
        ctx: RunContext,
        agent_name: str,
        tools: Mapping[str, Tool],
        callbacks: Callbacks,
        default_timeout: float,
    ) -> None:
        self._ctx = ctx
        self._agent_name = agent_name
        self._tools = tools
        self._callbacks = callbacks
        self._default_timeout = default_timeout
        self._invocation = ctx.invocation(agent_name)

    def _response(self, call_id: str, name: str, result: JsonValue) -> FunctionResponse:
        return FunctionResponse(id=call_id, name=name, response=result)

    def refused(self, call: FunctionCall, message: str) -> CallOutcome:
        """The outcome of a call that does not run: an error result saying why."""
        assert call.id is not None
        return CallOutcome(response=self._response(call.id, call.name, error_result(message)))

    def is_concurrency_safe(self, call: FunctionCall) -> bool:
        """Whether this call may run alongside others."""
        tool = self._tools.get(call.name)
        return tool is not None and tool.is_concurrency_safe

    async def dispatch(
        self,
        call: FunctionCall,
        *,
        confirmation: ToolConfirmation | None = None,
        credential: AuthCredential | None = None,
        resumed: bool = False,
    ) -> CallOutcome:
        """Run one call through the gates.

        ``resumed`` calls come back from a pause with their (already rewritten)
        arguments and the user's answer; ``before_tool`` is not run again for them.
        """
        assert call.id is not None
        tool = self._tools.get(call.name)
        if tool is None:
            return self.refused(call, unknown_tool(call.name, self._tools))
        ctx = ToolContext(
            self._invocation,
            function_call_id=call.id,
            auth_credential=credential,
            tool_confirmation=confirmation,
        )
        # The model's arguments stay as recorded in its event; the callbacks and the
        # tool work on a copy.
        received = call.args
        args: dict[str, Any] = (
            copy_json(received if type(received) is dict else dict(received)) if received else {}
        )

        if not resumed and self._callbacks.before_tool:
            ready = await _first(self._callbacks.before_tool, tool, args, ctx)
            if ready is not None:
                if self._callbacks.after_tool:
                    ready = await self._after(tool, args, ctx, ready)
                return self._finish(tool, call.id, args, ctx, ready)

        required = tool.required_scopes
        missing = required - self._ctx.run_config.scopes if required else required
        if missing:
            return CallOutcome(
                response=self._response(
                    call.id,
                    tool.name,
                    error_result(
                        f"Not permitted: calling {tool.name!r} needs the scopes "
                        f"{', '.join(sorted(missing))}, which this user does not have."
                    ),
                )
            )

        if confirmation is not None and not confirmation.confirmed:
            return CallOutcome(response=self._response(call.id, tool.name, error_result(DECLINED)))
        if confirmation is None and tool.requires_confirmation(args):
            return self._waiting(
                call.id,
                tool.name,
                WAITING_FOR_CONFIRMATION,
                ConfirmationRequest(
                    function_call_id=call.id,
                    tool_name=tool.name,
                    args=args,
                    hint=tool.confirmation_hint(args),
                ),
            )

        config = tool.auth_config
        if config is not None:
            store = self._ctx.credential_store
            where = {"app_name": self._ctx.app_name, "user_id": self._ctx.session.user_id}
            if credential is not None:
                await store.put(**where, config=config, credential=credential)
            else:
                credential = await store.get(**where, config=config)
            if credential is None:
                return self._waiting(
                    call.id,
                    tool.name,
                    WAITING_FOR_CREDENTIAL,
                    CredentialRequest(
                        function_call_id=call.id,
                        tool_name=tool.name,
                        args=args,
                        auth_config=config,
                    ),
                )
            ctx.auth_credential = credential

        # The run, under the tool's deadline; on_tool_error sees what it raised.
        timeout = getattr(tool, "timeout", None) or self._default_timeout
        try:
            on_loop = _on_loop(tool)
            if on_loop is not None:
                # A plain function on the loop cannot be interrupted: no cancel scope, which
                # would cost more than such a call (any awaitable it returns gets one).
                called = on_loop.run_on_loop(args, ctx)
                if inspect.isawaitable(called):
                    result, timed_out = await with_deadline(called, timeout)
                else:
                    result, timed_out = called, False
            else:
                result, timed_out = await with_deadline(tool.run(args, ctx), timeout)
        except anyio.get_cancelled_exc_class():
            ctx.cancellation.cancel("the run was cancelled")
            raise
        except Exception as error:  # the agent's on_tool_error boundary
            result = await self._recover(tool, args, ctx, error)
        else:
            if timed_out:
                ctx.cancellation.cancel(f"timed out after {timeout:g} s")
                late = TimeoutError(f"no result within {timeout:g} s")
                result = await self._recover(tool, args, ctx, late)
        if self._callbacks.after_tool:
            result = await self._after(tool, args, ctx, result)
        return self._finish(tool, call.id, args, ctx, result)

    def _waiting(
        self,
        call_id: str,
        name: str,
        placeholder: JsonValue,
        request: PendingRequest,
        actions: EventActions | None = None,
    ) -> CallOutcome:
        """A pending call: a placeholder answer (``will_continue``) and what it waits for."""
        response = FunctionResponse(id=call_id, name=name, response=placeholder, will_continue=True)
        return CallOutcome(response=response, actions=actions, pending=request)

    async def _recover(
        self, tool: Tool, args: dict[str, Any], ctx: ToolContext, error: Exception
    ) -> JsonValue:
        recovered = await _first(self._callbacks.on_tool_error, tool, args, ctx, error)
        if recovered is not None:
            return recovered
        return error_result(describe_error(tool.name, error))

    async def _after(
        self, tool: Tool, args: dict[str, Any], ctx: ToolContext, result: JsonValue
    ) -> JsonValue:
        replaced = await _first(self._callbacks.after_tool, tool, args, ctx, result)
        return result if replaced is None else replaced

    def _finish(
        self, tool: Tool, call_id: str, args: dict[str, Any], ctx: ToolContext, result: JsonValue
    ) -> CallOutcome:
        if isinstance(result, dict | list) and deeper_than(result, MAX_JSON_DEPTH):
            # Kept, it would break every later read of the session and every request
            # that carries the conversation (both recurse as deep as the value goes).
            result = error_result(
                f"The tool's result is nested deeper than {MAX_JSON_DEPTH} levels, too "
                "deep to keep; it was dropped."
            )
        actions = ctx.actions_set
        if actions is None:  # most calls: nothing to act on
            if tool.is_long_running:
                request: PendingRequest = LongRunningRequest(
                    function_call_id=call_id, tool_name=tool.name, args=args, interim=result
                )
                return self._waiting(call_id, tool.name, result, request)
            return CallOutcome(
                response=FunctionResponse(id=call_id, name=tool.name, response=result)
            )

        target = actions.transfer_to_agent
        if target is not None and target not in self._ctx.agent_names:
            actions.transfer_to_agent = None
            names = ", ".join(sorted(self._ctx.agent_names)) or "none"
            result = error_result(
                f"There is no agent named {target!r} to transfer to. Agents: {names}."
            )

        # A tool may ask for confirmation or credentials while running: it pauses and
        # runs again, with the answer in its context, when the run is resumed.
        if call_id in actions.requested_tool_confirmations:
            asked = actions.requested_tool_confirmations.pop(call_id)
            request = ConfirmationRequest(
                function_call_id=call_id,
                tool_name=tool.name,
                args=args,
                hint=asked.hint or tool.confirmation_hint(args),
                payload=asked.payload,
            )
            return self._waiting(call_id, tool.name, WAITING_FOR_CONFIRMATION, request, actions)
        if call_id in actions.requested_auth_configs:
            config = actions.requested_auth_configs.pop(call_id)
            request = CredentialRequest(
                function_call_id=call_id, tool_name=tool.name, args=args, auth_config=config
            )
            return self._waiting(call_id, tool.name, WAITING_FOR_CREDENTIAL, request, actions)
        if tool.is_long_running or actions.long_running:
            request = LongRunningRequest(
                function_call_id=call_id, tool_name=tool.name, args=args, interim=result
            )
            return self._waiting(call_id, tool.name, result, request, actions)
        return CallOutcome(
            response=FunctionResponse(id=call_id, name=tool.name, response=result), actions=actions
        )
