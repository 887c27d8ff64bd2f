"""Dispatching one function call of the agent loop through the call path
(`toolsets._invoke`): the credential store, the transfer target check, and the
outcome as the loop records it. Internal to the agent loop."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Mapping
from typing import Any

from toolsets._auth import AuthCredential
from toolsets._content import FunctionCall, FunctionResponse
from toolsets._context import EventActions, ToolConfirmation, ToolContext
from toolsets._errors import ToolNotFoundError
from toolsets._invoke import (
    Callbacks,
    ConfirmationNeeded,
    CredentialNeeded,
    Done,
    LongRunning,
    Outcome,
    Running,
    ToolRun,
    invoke,
    unreadable_arguments,
)
from toolsets._invoke import argument_problem as shape_problem
from toolsets._json import JsonValue
from toolsets._results import error_result
from toolsets._tool import Tool
from toolsets.agent._background import (
    LONG_RUNNING_REFUSED,
    BackgroundCalls,
    BackgroundTool,
    BackgroundUpdate,
    background_tool_of,
)
from toolsets.agent._events import (
    ConfirmationRequest,
    CredentialRequest,
    LongRunningRequest,
    PendingRequest,
)
from toolsets.agent._run import RunContext
from toolsets.models import INVALID_JSON_KEY

__all__ = [
    "CallOutcome",
    "Dispatcher",
    "argument_problem",
    "unknown_tool",
]

WAITING_FOR_CONFIRMATION: JsonValue = {"status": "waiting for the user's confirmation"}
WAITING_FOR_CREDENTIAL: JsonValue = {"status": "waiting for the user's credentials"}


@dataclasses.dataclass(kw_only=True)
class CallOutcome:
    """What dispatching one call produced."""

    response: FunctionResponse
    """The final result, or a placeholder with ``will_continue`` when pending."""
    actions: EventActions | None = None
    """The actions the tool set (None: none)."""
    pending: PendingRequest | None = None
    """What the call waits for, if anything."""
    running: ToolRun | None = None
    """A streaming call for the loop to pull (``response`` is then a placeholder)."""


def argument_problem(args: object) -> str | None:
    """What is wrong with a call's arguments before any tool may see them: the call
    path's answer (`toolsets._invoke.argument_problem`), or why text the model sent
    could not be read, or None."""
    if isinstance(args, Mapping) and len(args) == 1 and isinstance(args.get(INVALID_JSON_KEY), str):
        return unreadable_arguments(args[INVALID_JSON_KEY])
    return shape_problem(args)


def unknown_tool(name: str, available: Mapping[str, object]) -> str:
    """What the model is told when it calls a tool that does not exist: its name (cut
    short) and the tools it may have meant."""
    return ToolNotFoundError(name, available).for_model()


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
        background: BackgroundCalls | None = None,
    ) -> None:
        self._ctx = ctx
        self._background = background
        self._agent_name = agent_name
        self._tools = tools
        self._callbacks = callbacks
        self._default_timeout = default_timeout
        self._invocation = ctx.invocation(agent_name)

    def refused(self, call: FunctionCall, message: str) -> CallOutcome:
        """The outcome of a call that does not run: an error result saying why."""
        assert call.id is not None
        response = FunctionResponse(id=call.id, name=call.name, response=error_result(message))
        return CallOutcome(response=response)

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
        """Run one call through the call path.

        ``resumed`` calls come back from a pause with their (already rewritten)
        arguments and the user's answer; ``before_tool`` is not run again for them.
        """
        call_id = call.id
        assert call_id is not None
        tool = self._tools.get(call.name)
        if tool is None:
            return self.refused(call, unknown_tool(call.name, self._tools))
        if credential is not None and tool.auth_config is not None:
            # An answer for the tool's own credential: stored, and given to the call,
            # only once the gates before it (scopes, confirmation) let the call through.
            answered, credential = credential, None
        else:
            answered = None
        ctx = ToolContext(self._invocation, function_call_id=call_id)
        behind = background_tool_of(tool) if self._background is not None else None
        if behind is not None and tool.is_long_running:  # listed by a background toolset
            return self.refused(call, LONG_RUNNING_REFUSED)
        outcome = await self._invoke(
            tool, call.args, ctx, confirmation, credential, resumed, behind is not None
        )
        if isinstance(outcome, CredentialNeeded) and outcome.actions is None:
            # Every gate but the credential's passed: the store answers, or the user did.
            stored = await self._stored(outcome, answered)
            if stored is not None:
                outcome = await self._invoke(
                    tool, outcome.args, ctx, confirmation, stored, True, behind is not None
                )
        if isinstance(outcome, Running):
            if behind is not None:
                return self._started(call_id, tool.name, outcome.call, behind)
            placeholder = FunctionResponse(
                id=call_id, name=tool.name, response=None, will_continue=True
            )
            return CallOutcome(response=placeholder, running=outcome.call)
        return self.recorded(call_id, tool.name, outcome)

    def _started(
        self, call_id: str, name: str, run: ToolRun, behind: BackgroundTool
    ) -> CallOutcome:
        """A background call started: the model's acknowledgment."""
        assert self._background is not None
        self._background.start(run, name, call_id, behind.formatter)
        update = BackgroundUpdate(
            status="running", tool_name=name, function_call_id=call_id, args=run.args
        )
        response = FunctionResponse(id=call_id, name=name, response=behind.formatter(update))
        return CallOutcome(response=response)

    def _invoke(
        self,
        tool: Tool,
        args: Mapping[str, Any] | None,
        ctx: ToolContext,
        confirmation: ToolConfirmation | None,
        credential: AuthCredential | None,
        resumed: bool,
        defer: bool,
    ) -> Awaitable[Outcome | Running]:
        return invoke(
            tool,
            args,
            ctx,
            default_timeout=self._default_timeout,
            callbacks=self._callbacks,
            scopes=self._ctx.run_config.scopes,
            confirmation=confirmation,
            credential=credential,
            resumed=resumed,
            streams=True,
            defer=defer,
        )

    async def _stored(
        self, needed: CredentialNeeded, answered: AuthCredential | None
    ) -> AuthCredential | None:
        """The credential the user ``answered`` (now stored), or the stored one, or None."""
        store = self._ctx.credential_store
        where = {"app_name": self._ctx.app_name, "user_id": self._ctx.session.user_id}
        if answered is not None:
            await store.put(**where, config=needed.auth_config, credential=answered)
            return answered
        return await store.get(**where, config=needed.auth_config)

    def _transfer_checked(self, outcome: Outcome, actions: EventActions) -> Outcome:
        """``outcome``, its transfer dropped for an error result when no agent has the
        name it asks for."""
        target = actions.transfer_to_agent
        if target in self._ctx.agent_names:
            return outcome
        actions.transfer_to_agent = None
        names = ", ".join(sorted(self._ctx.agent_names)) or "none"
        wrong = error_result(f"There is no agent named {target!r} to transfer to. Agents: {names}.")
        if isinstance(outcome, Done):
            return dataclasses.replace(outcome, result=wrong)
        if isinstance(outcome, LongRunning):
            return dataclasses.replace(outcome, interim=wrong)
        return outcome

    def recorded(self, call_id: str, name: str, outcome: Outcome) -> CallOutcome:
        """The outcome as the loop records it: a response, and what it waits for."""
        actions = outcome.actions
        if actions is not None and actions.transfer_to_agent is not None:
            outcome = self._transfer_checked(outcome, actions)
        if isinstance(outcome, Done):
            response = FunctionResponse(id=call_id, name=name, response=outcome.result)
            return CallOutcome(response=response, actions=actions)
        request: PendingRequest
        placeholder: JsonValue
        if isinstance(outcome, ConfirmationNeeded):
            placeholder = WAITING_FOR_CONFIRMATION
            request = ConfirmationRequest(
                function_call_id=call_id,
                tool_name=name,
                args=outcome.args,
                hint=outcome.hint,
                payload=outcome.payload,
            )
        elif isinstance(outcome, CredentialNeeded):
            placeholder = WAITING_FOR_CREDENTIAL
            request = CredentialRequest(
                function_call_id=call_id,
                tool_name=name,
                args=outcome.args,
                auth_config=outcome.auth_config,
            )
        else:
            assert isinstance(outcome, LongRunning)  # a Running one is the loop's to pull
            placeholder = outcome.interim
            request = LongRunningRequest(
                function_call_id=call_id, tool_name=name, args=outcome.args, interim=placeholder
            )
        response = FunctionResponse(id=call_id, name=name, response=placeholder, will_continue=True)
        return CallOutcome(response=response, actions=actions, pending=request)
