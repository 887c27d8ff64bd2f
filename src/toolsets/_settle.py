"""Answering a call's pauses, the one way every consumer of tools answers them.

`invoke` hands back what a call waits for (`ConfirmationNeeded`, `CredentialNeeded`)
for its caller to answer. `settle` is that answering, written once: on a confirmation
it asks the consumer's ``confirm``, on a credential its ``lookup``, and calls again
(``resumed=True``) carrying every answer so far, for at most `MAX_PAUSES` answers. The
MCP server, the command line, code mode and the framework adapters all settle their
calls through it, each keeping only how *it* asks its user (an elicitation, a terminal
prompt, a LangGraph interrupt, a callback). The agent loop does not: it turns a pause
into a request its caller answers in a later turn, and resumes then.

What a call wrote to ``ctx.state`` outlives it without its ``temp:`` keys
(`TEMP_PREFIX`: they live for the run that made them, here the one call): `keep_state`
applies the rest to the state its caller keeps.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, MutableMapping, Set
from typing import Any, Protocol, TypeAlias, TypeVar

from toolsets._auth import AuthConfig, AuthCredential
from toolsets._context import ToolConfirmation, ToolContext, state_writes
from toolsets._invoke import (
    NO_CALLBACKS,
    Callbacks,
    ConfirmationNeeded,
    CredentialNeeded,
    Done,
    LongRunning,
    Outcome,
    invoke,
)
from toolsets._json import JsonValue
from toolsets._results import error_result
from toolsets._tool import Tool

__all__ = [
    "MAX_PAUSES",
    "NEEDS_APPROVAL",
    "Caller",
    "Resume",
    "caller",
    "gave_up_result",
    "keep_state",
    "needs_approval_result",
    "no_credential_result",
    "settle",
]

MAX_PAUSES = 4
"""Answers one call may be given (confirmations and credentials, asked before it runs or
while it runs) before it is given up: enough for a confirmation and a credential before
the run and one of each during it; a tool that asks again whatever it is told would
otherwise ask forever."""

NEEDS_APPROVAL = (
    "This call needs the user's approval, and no one could be asked, so it did not run. "
    "Tell the user what you wanted to do."
)
"""What the model is told about a call that needs the user's approval when its consumer
has no way to ask (no ``confirm`` callback)."""

Resume: TypeAlias = Callable[
    [dict[str, Any], ToolConfirmation | None, AuthCredential | None], Awaitable[Outcome]
]
"""Calls the paused call again (`invoke` with ``resumed=True``: ``before_tool`` does not
run again) with its arguments as the pause left them, the confirmation and the
credential given so far (None: none yet)."""


class Caller(Protocol):
    """How a consumer calls one tool in one context (see `caller`)."""

    def __call__(
        self,
        args: Mapping[str, Any],
        confirmation: ToolConfirmation | None,
        credential: AuthCredential | None,
        *,
        resumed: bool = True,
    ) -> Awaitable[Outcome]: ...


def caller(
    tool: Tool,
    ctx: ToolContext,
    *,
    default_timeout: float,
    callbacks: Callbacks = NO_CALLBACKS,
    scopes: Set[str] = frozenset(),
) -> Caller:
    """How a consumer calls ``tool`` in ``ctx``: `invoke`, with ``default_timeout``,
    ``callbacks`` and ``scopes``, given the arguments and the answers so far; a `Resume`
    (``resumed=True``), and the first call too (``resumed=False``)."""

    def call(
        args: Mapping[str, Any],
        confirmation: ToolConfirmation | None,
        credential: AuthCredential | None,
        *,
        resumed: bool = True,
    ) -> Awaitable[Outcome]:
        return invoke(
            tool,
            args,
            ctx,
            default_timeout=default_timeout,
            callbacks=callbacks,
            scopes=scopes,
            confirmation=confirmation,
            credential=credential,
            resumed=resumed,
        )

    return call


_Stop = TypeVar("_Stop")
"""What a consumer's callback may end the call with instead of an answer."""


def needs_approval_result(needed: ConfirmationNeeded) -> dict[str, JsonValue]:
    """The result of a call that needed the user's approval when no one could be asked:
    `NEEDS_APPROVAL`, with the question (``hint``)."""
    return error_result(NEEDS_APPROVAL, hint=needed.hint)


def no_credential_result(config: AuthConfig) -> dict[str, JsonValue]:
    """The result of a call that needs a credential that was not given, naming its
    security scheme (``credential``). The message names no tool: the model knows which
    call it made."""
    return error_result(
        f"This call needs the credential {config.scheme_name!r}, which was not given, so "
        "it did not run.",
        credential=config.scheme_name,
    )


def gave_up_result(max_pauses: int = MAX_PAUSES) -> dict[str, JsonValue]:
    """The result of a call that still asked after ``max_pauses`` answers."""
    return error_result(
        f"This call kept asking for confirmation or a credential after {max_pauses} "
        "answers, so it was given up."
    )


async def settle(
    first: Outcome,
    *,
    resume: Resume,
    confirm: Callable[[ConfirmationNeeded], Awaitable[ToolConfirmation | _Stop | None]] | None,
    lookup: Callable[[CredentialNeeded], Awaitable[AuthCredential | _Stop | None]] | None,
    confirmation: ToolConfirmation | None = None,
    credential: AuthCredential | None = None,
    max_pauses: int = MAX_PAUSES,
) -> Done | LongRunning | _Stop:
    """Answer the pauses of a call until it ends: the one loop every consumer runs.

    Args:
        first: The call's outcome so far (its first `invoke`, or a pause taken up again).
        resume: Calls it again with the answers (see `Resume`).
        confirm: Asks the user about a `ConfirmationNeeded`: a `ToolConfirmation`
            answers it (a declined one ends the call with `toolsets._invoke.DECLINED`);
            None means no one could be asked (the call ends with `NEEDS_APPROVAL`);
            anything else ends the call with that value as it is (the pause itself,
            for a framework that asks its user its own way, or the consumer's own
            refusal). None: no one can be asked, ever.
        lookup: Finds the credential for a `CredentialNeeded`: an `AuthCredential`
            answers it; None means there is none (the call ends with
            `no_credential_result`); anything else ends the call with it as it is.
            None: no credential is ever given.
        confirmation: The confirmation given before ``first`` (carried to each round).
        credential: The credential given before ``first`` (carried to each round).
        max_pauses: Answers given before the call is given up (`MAX_PAUSES`).

    Returns:
        `Done` or `LongRunning` when the call ended: it ran (or failed, or was declined),
        or it was refused here (`Done` with `needs_approval_result`,
        `no_credential_result`, or `gave_up_result` when it still asked after
        ``max_pauses`` answers); or what a callback ended it with. Each answer given is
        carried to every later round: a call asking a confirmation and then a
        credential gets both. What the call's runs asked for (``actions``, its state
        writes among them) is in the call's context, and on the outcome `invoke` gave.

    Raises:
        Whatever ``resume``, ``confirm`` or ``lookup`` raise (a consumer that stops a
        call by raising: a LangGraph interrupt, a command-line refusal).
    """
    outcome = first
    for _ in range(max_pauses):
        if isinstance(outcome, ConfirmationNeeded):
            asked = None if confirm is None else await confirm(outcome)
            if asked is None:
                refused = needs_approval_result(outcome)
                return Done(result=refused, args=outcome.args, actions=outcome.actions)
            if not isinstance(asked, ToolConfirmation):
                return asked
            confirmation = asked
        elif isinstance(outcome, CredentialNeeded):
            found = None if lookup is None else await lookup(outcome)
            if found is None:
                return Done(
                    result=no_credential_result(outcome.auth_config),
                    args=outcome.args,
                    actions=outcome.actions,
                )
            if not isinstance(found, AuthCredential):
                return found
            credential = found
        else:
            return outcome
        outcome = await resume(outcome.args, confirmation, credential)
    if isinstance(outcome, ConfirmationNeeded | CredentialNeeded):
        return Done(result=gave_up_result(max_pauses), args=outcome.args, actions=outcome.actions)
    return outcome


def keep_state(ctx: ToolContext) -> dict[str, Any]:
    """What a call wrote to ``ctx.state`` that outlives it (the `TEMP_PREFIX` keys left
    out: they live for the call's run only), applied to the state of the invocation it
    ran in when that is a mutable mapping (a dict its caller keeps, which later calls
    read), else applied nowhere.

    Returns:
        Those writes (empty when there were none), for a caller that keeps state
        elsewhere (the MCP server, for each client).
    """
    writes = state_writes(ctx.actions_set, lasting=True)
    state = ctx.invocation.state
    if writes and isinstance(state, MutableMapping):
        state.update(writes)
    return writes
