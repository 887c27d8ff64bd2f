"""The dispatch of each call: gates, callbacks, concurrency, timeouts, cancellation."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from tests.agent.helpers import agent_with, call, collect, response_of, responses, start
from toolsets import (
    AuthConfig,
    AuthCredential,
    FunctionCall,
    FunctionTool,
    JsonValue,
    StaticToolset,
    Tool,
    ToolConfirmation,
    ToolContext,
    prefixed,
    tool,
)
from toolsets.agent import ConfirmationRequest, CredentialRequest, LlmAgent, RunConfig, Runner
from toolsets.models import ScriptedModel

pytestmark = pytest.mark.anyio

TOKEN = AuthConfig(scheme_name="token", scheme={"type": "http", "scheme": "bearer"})


@tool(read_only=True)
def add(a: int, b: int) -> int:
    """Add."""
    return a + b


# --- unknown tools and bad arguments ----------------------------------------------------


async def test_an_unknown_tool_gives_the_model_an_error_listing_the_available_names() -> None:
    runner, model = agent_with([call("ad", a=1), "sorry"], [add])
    _, events = await start(runner, "hi")
    error = response_of(events, "ad")
    assert isinstance(error, dict)
    assert "'ad'" in str(error["error"])
    assert "add" in str(error["error"])
    assert "transfer_to_agent" not in str(error["error"])
    assert events[-1].text == "sorry"
    assert len(model.requests) == 2


async def test_invalid_arguments_reach_the_model_naming_the_field_and_the_loop_goes_on() -> None:
    runner, _ = agent_with([call("add", a="x", b=2), call("add", a=1, b=2), "3"], [add])
    _, events = await start(runner, "hi")
    first, second = [r.response for r in responses(events)]
    assert isinstance(first, dict)
    assert set(first["fields"]) == {"a"}  # type: ignore[arg-type]
    assert second == 3
    assert events[-1].text == "3"


# --- the confirmation gate --------------------------------------------------------------


@tool(requires_confirmation=True, confirmation_hint=lambda args: f"Delete {args['path']}?")
def delete(path: str, ctx: ToolContext) -> str:
    """Delete a file."""
    ctx.state["deleted"] = path
    if ctx.tool_confirmation is not None and ctx.tool_confirmation.payload:
        return f"deleted {path} ({ctx.tool_confirmation.payload})"
    return f"deleted {path}"


async def test_a_call_needing_confirmation_pauses_with_the_hint_and_runs_once_approved() -> None:
    runner, model = agent_with([call("delete", path="/a"), "done"], [delete])
    session_id, events = await start(runner, "clean up")
    pause = events[-1]
    assert pause.is_final_response()
    (request,) = pause.pending
    assert isinstance(request, ConfirmationRequest)
    assert (request.tool_name, request.args, request.hint) == (
        "delete",
        {"path": "/a"},
        "Delete /a?",
    )
    session = await runner.get_session(user_id="u", session_id=session_id)
    assert "deleted" not in session.state, "nothing ran before approval"
    assert len(model.requests) == 1, "the model is not called while waiting"

    resumed = await collect(
        runner.resume(
            user_id="u", session_id=session_id, confirmations={request.function_call_id: True}
        )
    )
    assert response_of(resumed, "delete") == "deleted /a"
    assert resumed[-1].text == "done"
    session = await runner.get_session(user_id="u", session_id=session_id)
    assert session.state["deleted"] == "/a"
    # The model saw exactly one answer for the call, the final one, right after the call.
    tool_turn = model.requests[1].contents[-1]
    (answer,) = [p.function_response for p in tool_turn.parts]
    assert answer is not None
    assert (answer.id, answer.response, answer.will_continue) == (
        request.function_call_id,
        "deleted /a",
        False,
    )


async def test_a_denied_call_does_not_run_and_the_model_is_told_the_user_declined() -> None:
    runner, _ = agent_with([call("delete", path="/a"), "ok, kept it"], [delete])
    session_id, events = await start(runner, "clean up")
    call_id = events[-1].pending[0].function_call_id
    resumed = await collect(
        runner.resume(user_id="u", session_id=session_id, confirmations={call_id: False})
    )
    refusal = response_of(resumed, "delete")
    assert isinstance(refusal, dict)
    assert "declined" in str(refusal["error"])
    session = await runner.get_session(user_id="u", session_id=session_id)
    assert "deleted" not in session.state
    assert resumed[-1].text == "ok, kept it"


async def test_an_approval_can_carry_a_payload_the_tool_reads() -> None:
    runner, _ = agent_with([call("delete", path="/a"), "done"], [delete])
    session_id, events = await start(runner, "clean up")
    call_id = events[-1].pending[0].function_call_id
    resumed = await collect(
        runner.resume(
            user_id="u",
            session_id=session_id,
            confirmations={call_id: ToolConfirmation(confirmed=True, payload="backup first")},
        )
    )
    assert response_of(resumed, "delete") == "deleted /a (backup first)"


async def test_a_tool_may_ask_for_confirmation_while_running_and_runs_again_when_approved() -> None:
    runs: list[bool] = []

    @tool
    def transfer_money(amount: int, ctx: ToolContext) -> str:
        """Move money."""
        runs.append(ctx.tool_confirmation is not None)
        if amount > 100 and ctx.tool_confirmation is None:
            ctx.request_confirmation(hint=f"Move {amount}?", payload={"amount": amount})
            return "needs approval"
        return f"moved {amount}"

    runner, _ = agent_with([call("transfer_money", amount=500), "done"], [transfer_money])
    session_id, events = await start(runner, "pay")
    (request,) = events[-1].pending
    assert isinstance(request, ConfirmationRequest)
    assert (request.hint, request.payload) == ("Move 500?", {"amount": 500})
    resumed = await collect(
        runner.resume(
            user_id="u", session_id=session_id, confirmations={request.function_call_id: True}
        )
    )
    assert response_of(resumed, "transfer_money") == "moved 500"
    assert runs == [False, True]


# --- the auth gate ----------------------------------------------------------------------


@tool(auth_config=TOKEN)
def whoami(ctx: ToolContext) -> str:
    """Who am I at the API."""
    assert ctx.auth_credential is not None
    return f"token ends {ctx.auth_credential.secret[-2:]}"


async def test_a_tool_needing_a_credential_pauses_and_then_reuses_the_credential() -> None:
    runner, model = agent_with([call("whoami"), "first", call("whoami"), "second"], [whoami])
    session_id, events = await start(runner, "who")
    (request,) = events[-1].pending
    assert isinstance(request, CredentialRequest)
    assert request.auth_config == TOKEN
    resumed = await collect(
        runner.resume(
            user_id="u",
            session_id=session_id,
            credentials={request.function_call_id: AuthCredential.bearer("secret-42")},
        )
    )
    assert response_of(resumed, "whoami") == "token ends 42"
    # The next call finds the stored credential: no second pause.
    again = await collect(runner.run(user_id="u", session_id=session_id, message="again"))
    assert again[-1].text == "second"
    assert not again[-1].pending
    # The secret is in no event and no request the model saw.
    session = await runner.get_session(user_id="u", session_id=session_id)
    assert "secret-42" not in repr(session.events)
    assert "secret-42" not in repr([r.contents for r in model.requests])


async def test_credentials_belong_to_their_user() -> None:
    runner, _ = agent_with([call("whoami"), "x", call("whoami")], [whoami])
    session_id, events = await start(runner, "who", user_id="ann")
    call_id = events[-1].pending[0].function_call_id
    await collect(
        runner.resume(
            user_id="ann",
            session_id=session_id,
            credentials={call_id: AuthCredential.bearer("ann-1")},
        )
    )
    _, bob_events = await start(runner, "who", user_id="bob")
    assert isinstance(bob_events[-1].pending[0], CredentialRequest)


async def test_a_tool_needing_both_gates_asks_for_confirmation_then_for_a_credential() -> None:
    @tool(auth_config=TOKEN, requires_confirmation=True)
    def pay(amount: int, ctx: ToolContext) -> str:
        """Pay."""
        return f"paid {amount}"

    runner, _ = agent_with([call("pay", amount=5), "done"], [pay])
    session_id, events = await start(runner, "pay")
    call_id = events[-1].pending[0].function_call_id
    step = await collect(
        runner.resume(user_id="u", session_id=session_id, confirmations={call_id: True})
    )
    assert isinstance(step[-1].pending[0], CredentialRequest)
    final = await collect(
        runner.resume(
            user_id="u", session_id=session_id, credentials={call_id: AuthCredential.bearer("t")}
        )
    )
    assert response_of(final, "pay") == "paid 5"
    assert final[-1].text == "done"


class CountingStore:
    """A `CredentialStore` in memory that records every read and write."""

    def __init__(self) -> None:
        self.kept: dict[tuple[str, str, str], AuthCredential] = {}
        self.used: list[str] = []

    async def get(
        self, *, app_name: str, user_id: str, config: AuthConfig
    ) -> AuthCredential | None:
        self.used.append("get")
        return self.kept.get((app_name, user_id, config.key))

    async def put(
        self, *, app_name: str, user_id: str, config: AuthConfig, credential: AuthCredential
    ) -> None:
        self.used.append("put")
        self.kept[(app_name, user_id, config.key)] = credential


async def test_the_credential_store_is_not_touched_before_scopes_and_confirmation_pass() -> None:
    @tool(auth_config=TOKEN, required_scopes={"admin"})
    def purge() -> str:
        """Purge."""
        raise AssertionError("ran")  # pragma: no cover

    @tool(auth_config=TOKEN, requires_confirmation=True)
    def pay(ctx: ToolContext) -> str:
        """Pay."""
        return "paid"

    store = CountingStore()
    runner = Runner(
        LlmAgent("a", ScriptedModel([call("purge"), call("pay"), "done"]), tools=[purge, pay]),
        credential_store=store,
    )
    session_id, events = await start(runner, "go")

    assert isinstance(response_of(events, "purge"), dict)
    assert isinstance(events[-1].pending[0], ConfirmationRequest)
    assert store.used == []  # refused by scopes, then paused for confirmation
    call_id = events[-1].pending[0].function_call_id
    approved = await collect(
        runner.resume(user_id="u", session_id=session_id, confirmations={call_id: True})
    )
    assert isinstance(approved[-1].pending[0], CredentialRequest)
    assert store.used == ["get"]
    final = await collect(
        runner.resume(
            user_id="u", session_id=session_id, credentials={call_id: AuthCredential.bearer("t")}
        )
    )
    assert response_of(final, "pay") == "paid"
    assert store.used == ["get", "put"]


# --- scopes -----------------------------------------------------------------------------


@tool(required_scopes={"admin"})
def drop_table(name: str) -> str:
    """Drop a table."""
    return f"dropped {name}"


async def test_a_tool_whose_scopes_the_caller_lacks_is_not_run_and_the_model_is_told() -> None:
    runner, _ = agent_with([call("drop_table", name="users"), "cannot"], [drop_table])
    _, events = await start(runner, "drop")
    refusal = response_of(events, "drop_table")
    assert isinstance(refusal, dict)
    assert "admin" in str(refusal["error"])
    assert refusal["missing_scopes"] == ["admin"]  # for a client, and the audit, to read


async def test_a_caller_with_the_scopes_may_run_the_tool() -> None:
    runner, _ = agent_with([call("drop_table", name="users"), "done"], [drop_table])
    session = await runner.create_session(user_id="u")
    events = await collect(
        runner.run(
            user_id="u",
            session_id=session.id,
            message="drop",
            run_config=RunConfig(scopes=frozenset({"admin"})),
        )
    )
    assert response_of(events, "drop_table") == "dropped users"


# --- callbacks --------------------------------------------------------------------------


async def test_before_tool_may_rewrite_the_arguments_without_touching_the_models_call() -> None:
    def double_a(t: Tool, args: dict[str, Any], ctx: ToolContext) -> None:
        args["a"] = args["a"] * 2

    runner, _ = agent_with([call("add", a=2, b=1), "5"], [add], before_tool=double_a)
    session_id, events = await start(runner, "add")
    assert response_of(events, "add") == 5
    session = await runner.get_session(user_id="u", session_id=session_id)
    (model_call,) = [c for e in session.events for c in e.function_calls]
    assert dict(model_call.args) == {"a": 2, "b": 1}


async def test_before_tool_may_answer_instead_of_the_tool() -> None:
    ran: list[int] = []

    @tool
    def expensive(x: int) -> int:
        ran.append(x)
        return x

    async def cached(t: Tool, args: dict[str, Any], ctx: ToolContext) -> JsonValue:
        await anyio.lowlevel.checkpoint()
        return {"cached": args["x"]}

    runner, _ = agent_with([call("expensive", x=1), "ok"], [expensive], before_tool=cached)
    _, events = await start(runner, "go")
    assert response_of(events, "expensive") == {"cached": 1}
    assert ran == []


async def test_the_first_callback_that_answers_wins() -> None:
    seen: list[str] = []

    def first(t: Tool, args: dict[str, Any], ctx: ToolContext) -> None:
        seen.append("first")

    def second(t: Tool, args: dict[str, Any], ctx: ToolContext) -> JsonValue:
        seen.append("second")
        return "from second"

    def third(t: Tool, args: dict[str, Any], ctx: ToolContext) -> JsonValue:
        seen.append("third")
        return "from third"

    runner, _ = agent_with([call("add", a=1, b=1), "ok"], [add], before_tool=[first, second, third])
    _, events = await start(runner, "go")
    assert response_of(events, "add") == "from second"
    assert seen == ["first", "second"]


async def test_after_tool_may_replace_the_result() -> None:
    def redact(t: Tool, args: Mapping[str, Any], ctx: ToolContext, result: JsonValue) -> JsonValue:
        return {"value": result, "checked_by": "after_tool"}

    runner, _ = agent_with([call("add", a=1, b=2), "ok"], [add], after_tool=redact)
    _, events = await start(runner, "go")
    assert response_of(events, "add") == {"value": 3, "checked_by": "after_tool"}


@tool
def explode(what: str) -> str:
    """Always fails."""
    raise LookupError(f"no {what} here")


async def test_a_tool_error_reaches_the_model_with_its_real_cause() -> None:
    runner, _ = agent_with([call("explode", what="cheese"), "sorry"], [explode])
    _, events = await start(runner, "go")
    error = response_of(events, "explode")
    assert isinstance(error, dict)
    assert "LookupError" in str(error["error"])
    assert "no cheese here" in str(error["error"])
    assert events[-1].text == "sorry"


async def test_on_tool_error_may_recover_with_a_result() -> None:
    seen: list[Exception] = []

    async def fallback(
        t: Tool, args: Mapping[str, Any], ctx: ToolContext, error: Exception
    ) -> JsonValue:
        seen.append(error)
        return {"fallback": True}

    runner, _ = agent_with([call("explode", what="x"), "ok"], [explode], on_tool_error=fallback)
    _, events = await start(runner, "go")
    assert response_of(events, "explode") == {"fallback": True}
    assert isinstance(seen[0], LookupError)


# --- concurrency ------------------------------------------------------------------------


async def test_read_only_calls_of_one_turn_run_concurrently_and_keep_their_order() -> None:
    both = anyio.Event()
    arrived = 0

    @tool(read_only=True)
    async def wait_for_peer(label: str) -> str:
        nonlocal arrived
        arrived += 1
        if arrived == 2:
            both.set()
        await both.wait()  # deadlocks (and times out) unless both run at once
        return label

    runner, _ = agent_with(
        [[call("wait_for_peer", label="one"), call("wait_for_peer", label="two")], "ok"],
        [wait_for_peer],
    )
    with anyio.fail_after(5):
        _, events = await start(runner, "go")
    assert [r.response for r in responses(events)] == ["one", "two"]


async def test_calls_that_are_not_concurrency_safe_run_one_after_the_other_in_order() -> None:
    log: list[str] = []

    @tool
    async def step(label: str) -> str:
        log.append(f"start {label}")
        await anyio.lowlevel.checkpoint()
        await anyio.lowlevel.checkpoint()
        log.append(f"end {label}")
        return label

    runner, _ = agent_with([[call("step", label="a"), call("step", label="b")], "ok"], [step])
    _, events = await start(runner, "go")
    assert log == ["start a", "end a", "start b", "end b"]
    assert [r.response for r in responses(events)] == ["a", "b"]


# --- timeouts and cancellation ----------------------------------------------------------


async def hang_until_cancelled(cancelled: anyio.Event) -> str:
    """Never returns; sets ``cancelled`` on the way out."""
    try:
        await anyio.sleep_forever()
    finally:
        cancelled.set()
    return "never"  # pragma: no cover


async def test_a_tool_that_exceeds_its_timeout_is_cancelled_and_the_model_told() -> None:
    cancelled = anyio.Event()

    @tool
    async def hang() -> str:
        """Never returns."""
        return await hang_until_cancelled(cancelled)

    runner, _ = agent_with([call("hang"), "gave up"], [hang], tool_timeout=0.05)
    with anyio.fail_after(5):
        _, events = await start(runner, "go")
    error = response_of(events, "hang")
    assert isinstance(error, dict)
    assert "timed out" in str(error["error"])
    assert "0.05" in str(error["error"])
    assert cancelled.is_set()
    assert events[-1].text == "gave up"


async def test_a_tools_own_timeout_wins_over_the_agents_even_when_renamed() -> None:
    @tool(timeout=0.05)
    async def hang_briefly() -> str:
        await anyio.sleep(1)
        return "late"

    runner, _ = agent_with(
        [call("x_hang_briefly"), "ok"],
        [prefixed(StaticToolset([hang_briefly]), "x")],
        tool_timeout=30,
    )
    with anyio.fail_after(5):
        _, events = await start(runner, "go")
    assert "timed out" in str(response_of(events, "x_hang_briefly"))


def test_a_tool_timeout_must_be_positive() -> None:
    with pytest.raises(ValueError, match="timeout"):
        tool(timeout=0)(add.fn)


async def test_a_sync_tool_that_times_out_sees_its_cancellation_flag() -> None:
    stopped = threading.Event()

    @tool
    def busy(ctx: ToolContext) -> str:
        deadline = time.monotonic() + 5
        while not ctx.cancellation.cancelled and time.monotonic() < deadline:
            time.sleep(0.005)
        stopped.set()
        return "stopped"

    runner, _ = agent_with([call("busy"), "ok"], [busy], tool_timeout=0.05)
    with anyio.fail_after(5):
        _, events = await start(runner, "go")
        await anyio.to_thread.run_sync(stopped.wait, 5)
    assert "timed out" in str(response_of(events, "busy"))


async def test_a_plain_function_on_the_loop_runs_and_its_errors_reach_the_model() -> None:
    @tool(run_in_thread=False)
    def double(x: int) -> int:
        """Twice x."""
        if x < 0:
            raise ValueError("x must not be negative")
        return 2 * x

    runner, _ = agent_with(
        [[call("double", x=2), call("double", x=-1), call("double", x="many")], "ok"], [double]
    )
    _, events = await start(runner, "go")
    fine, failed, invalid = (r.response for r in responses(events))
    assert fine == 4
    assert isinstance(failed, dict)
    assert "x must not be negative" in str(failed["error"])
    assert isinstance(invalid, dict)
    assert "x" in str(invalid["error"])


async def test_an_awaitable_returned_by_a_plain_function_on_the_loop_gets_the_deadline() -> None:
    cancelled = anyio.Event()

    @tool(run_in_thread=False)
    def starts_hanging() -> Any:
        """A sync wrapper handing back a coroutine."""
        return hang_until_cancelled(cancelled)

    async def quick() -> str:
        await anyio.sleep(0.001)
        return "quick"

    @tool(run_in_thread=False)
    def starts_quick() -> Any:
        """A sync wrapper handing back a coroutine that finishes."""
        return quick()

    runner, _ = agent_with(
        [call("starts_hanging"), call("starts_quick"), "ok"],
        [starts_hanging, starts_quick],
        tool_timeout=0.05,
    )
    with anyio.fail_after(5):
        _, events = await start(runner, "go")
    assert "timed out" in str(response_of(events, "starts_hanging"))
    assert cancelled.is_set()
    assert response_of(events, "starts_quick") == "quick"


async def test_a_function_tool_subclass_that_overrides_run_is_run_under_the_deadline() -> None:
    class Slow(FunctionTool[[], str]):
        async def run(self, args: Mapping[str, Any], ctx: ToolContext) -> JsonValue:
            await anyio.sleep(5)
            return await super().run(args, ctx)  # pragma: no cover

    def quick() -> str:
        """Answers at once."""
        return "quick"

    runner, _ = agent_with(
        [call("quick"), "ok"], [Slow(quick, run_in_thread=False)], tool_timeout=0.05
    )
    with anyio.fail_after(3):
        _, events = await start(runner, "go")
    assert "timed out" in str(response_of(events, "quick"))


async def test_cancelling_the_run_cancels_the_running_tool_cleanly() -> None:
    started = anyio.Event()
    cleaned_up = anyio.Event()

    @tool
    async def long_job() -> str:
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            cleaned_up.set()
        return "never"  # pragma: no cover

    runner, _ = agent_with([call("long_job")], [long_job])
    session = await runner.create_session(user_id="u")
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:

            async def consume() -> None:
                await collect(runner.run(user_id="u", session_id=session.id, message="go"))

            tg.start_soon(consume)
            await started.wait()
            tg.cancel_scope.cancel()
    assert cleaned_up.is_set()


async def test_a_caller_that_stops_listening_cancels_the_run_but_a_finished_run_does_not() -> None:
    seen: list[ToolContext] = []

    @tool
    async def note(ctx: ToolContext) -> str:
        seen.append(ctx)
        return "noted"

    runner, _ = agent_with([call("note"), call("note"), "done"], [note])
    session = await runner.create_session(user_id="u")
    with anyio.fail_after(5):
        run = runner.run(user_id="u", session_id=session.id, message="go")
        async for event in run:
            if event.function_responses:
                break
        await run.aclose()  # type: ignore[attr-defined]
    assert len(seen) == 1
    assert seen[0].cancellation.cancelled
    assert seen[0].cancellation.reason == "the run was stopped"

    runner, _ = agent_with([call("note"), "done"], [note])
    await start(runner, "go")
    assert not seen[1].cancellation.cancelled


async def test_model_calls_without_ids_get_ids_that_survive_a_pause() -> None:
    runner, model = agent_with(
        [
            [
                FunctionCall(name="delete", args={"path": "/a"}),
                FunctionCall(name="add", args={"a": 1, "b": 1}),
            ],
            "ok",
        ],
        [delete, add],
    )
    session_id, events = await start(runner, "go")
    calls = events[0].function_calls
    assert all(c.id for c in calls)
    assert len({c.id for c in calls}) == 2
    (request,) = events[-1].pending
    assert request.function_call_id == calls[0].id
    await collect(
        runner.resume(
            user_id="u", session_id=session_id, confirmations={request.function_call_id: True}
        )
    )
    answered = [
        p.function_response.id for p in model.requests[1].contents[-1].parts if p.function_response
    ]
    assert answered == [calls[0].id, calls[1].id]
