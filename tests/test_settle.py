"""`settle`, the one loop that answers a call's pauses, on its own: how many answers it
gives, what it carries from round to round, how a consumer's callback ends a call, and
`keep_state`. (Every consumer running it through its own entry: tests/consumers.)"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

import pytest

from toolsets import AuthConfig, AuthCredential, Invocation, ToolConfirmation, ToolContext, tool
from toolsets._invoke import DECLINED, ConfirmationNeeded, CredentialNeeded, Done, invoke
from toolsets._settle import (
    MAX_PAUSES,
    NEEDS_APPROVAL,
    caller,
    gave_up_result,
    keep_state,
    needs_approval_result,
    no_credential_result,
    settle,
)

pytestmark = pytest.mark.anyio

KEY = AuthConfig(scheme_name="key", scheme={"type": "apiKey", "in": "header", "name": "K"})
runs: list[Any] = []


@tool
def never_satisfied(ctx: ToolContext) -> str:
    """Ask for confirmation on every run."""
    runs.append(ctx.tool_confirmation)
    ctx.request_confirmation(hint="Again?")
    return "asked"


@tool(requires_confirmation=True, auth_config=KEY)
def guarded(ctx: ToolContext) -> str:
    """Needs a yes and the key."""
    runs.append((ctx.tool_confirmation, ctx.auth_credential))
    return "ran"


@pytest.fixture(autouse=True)
def no_runs() -> None:
    runs.clear()


async def settled(made: Any, ctx: ToolContext | None = None, **callbacks: Any) -> Done | Any:
    ctx = ctx or ToolContext(function_call_id="c1")
    call = caller(made, ctx, default_timeout=5)
    return await settle(await call({}, None, None, resumed=False), resume=call, **callbacks)


async def test_a_tool_that_asks_whatever_it_is_told_is_asked_about_max_pauses_times() -> None:
    asked: list[str] = []

    async def confirm(needed: ConfirmationNeeded) -> ToolConfirmation:
        asked.append(needed.hint)
        return ToolConfirmation(confirmed=True)

    outcome = await settled(never_satisfied, confirm=confirm, lookup=None)
    assert outcome == Done(result=gave_up_result(), args={}, actions=outcome.actions)
    assert asked == ["Again?"] * MAX_PAUSES
    assert len(runs) == MAX_PAUSES + 1


async def test_every_answer_goes_with_every_later_round() -> None:
    async def confirm(needed: ConfirmationNeeded) -> ToolConfirmation:
        return ToolConfirmation(confirmed=True)

    async def lookup(needed: CredentialNeeded) -> AuthCredential:
        return AuthCredential.api_key("k")

    outcome = await settled(guarded, confirm=confirm, lookup=lookup)
    assert isinstance(outcome, Done)
    assert outcome.result == "ran"
    ((confirmation, credential),) = runs
    assert confirmation.confirmed
    assert credential.secret == "k"


async def test_a_declined_call_ends_declined_and_never_runs() -> None:
    async def confirm(needed: ConfirmationNeeded) -> ToolConfirmation:
        return ToolConfirmation(confirmed=False)

    outcome = await settled(guarded, confirm=confirm, lookup=None)
    assert isinstance(outcome, Done)
    assert outcome.result == {"error": DECLINED}
    assert runs == []


async def test_with_no_one_to_ask_or_no_credential_the_call_ends_saying_so() -> None:
    unasked = await settled(guarded, confirm=None, lookup=None)
    assert isinstance(unasked, Done)
    assert unasked.result == needs_approval_result(
        ConfirmationNeeded(hint=guarded.confirmation_hint({}), args={})
    )
    assert unasked.result["error"] == NEEDS_APPROVAL

    async def yes(needed: ConfirmationNeeded) -> ToolConfirmation:
        return ToolConfirmation(confirmed=True)

    async def none(needed: CredentialNeeded) -> None:
        return None

    missing = await settled(guarded, confirm=yes, lookup=none)
    assert isinstance(missing, Done)
    assert missing.result == no_credential_result(KEY)
    assert runs == []


async def test_a_callback_may_end_the_call_with_a_value_of_its_own() -> None:
    async def handed_back(needed: ConfirmationNeeded) -> ConfirmationNeeded:
        return needed

    outcome = await settled(guarded, confirm=handed_back, lookup=None)
    assert isinstance(outcome, ConfirmationNeeded)
    assert runs == []


async def test_what_outlives_a_call_is_its_writes_without_temp_keys() -> None:
    @tool
    def remember(ctx: ToolContext) -> str:
        """Write to the state."""
        ctx.state["note"] = "kept"
        ctx.state["temp:scratch"] = "gone"
        return "ok"

    state: dict[str, Any] = {"before": 1}
    ctx = ToolContext(Invocation(state=state))
    await invoke(remember, {}, ctx, default_timeout=5)
    assert keep_state(ctx) == {"note": "kept"}
    assert state == {"before": 1, "note": "kept"}

    frozen = ToolContext(Invocation(state=MappingProxyType({"before": 1})))
    await invoke(remember, {}, frozen, default_timeout=5)
    assert keep_state(frozen) == {"note": "kept"}  # for a caller that keeps it elsewhere
