"""Background tools through the agent loop: an acknowledgment at once, the conversation
going on, the result given to the model when it arrives; cancelled with the run."""

from __future__ import annotations

import contextvars
from typing import Any

import anyio
import pytest

from tests.agent.helpers import (
    RUN_TIMEOUT,
    approve,
    asked_to_confirm,
    call,
    collect,
    listen_until,
    response_of,
    start,
)
from toolsets import (
    Content,
    JsonValue,
    StaticToolset,
    Tool,
    ToolContext,
    ToolDefinitionError,
    intercept,
    prefixed,
    tool,
)
from toolsets._invoke import invoke
from toolsets._results import error_result
from toolsets.agent import (
    BackgroundUpdate,
    Event,
    LlmAgent,
    Runner,
    _agents,
    background,
)
from toolsets.agent._background import LONG_RUNNING_REFUSED
from toolsets.models import ScriptedModel

pytestmark = pytest.mark.anyio


def user_texts(contents: list[Content]) -> list[str]:
    return [c.text for c in contents if c.role == "user"]


class Gate:
    """A background job that ends when the test opens the gate."""

    def __init__(self) -> None:
        self.opened = anyio.Event()
        self.closed = anyio.Event()

        @tool
        async def compute(n: int, ctx: ToolContext) -> dict[str, int]:
            """A slow computation."""
            try:
                await self.opened.wait()
                ctx.state["computed"] = n * 2
                return {"value": n * 2}
            finally:
                self.closed.set()

        self.tool = compute


async def run_opening(runner: Runner, gate: Gate, when: str) -> tuple[str, list[Event]]:
    """Run one message; open the gate when the model says ``when``: the session id and
    the events."""
    session = await runner.create_session(user_id="u")
    events: list[Event] = []
    with anyio.fail_after(RUN_TIMEOUT):
        async for event in runner.run(user_id="u", session_id=session.id, message="go"):
            events.append(event)
            if event.text == when:
                gate.opened.set()
    return session.id, events


async def test_the_model_is_told_at_once_and_given_the_result_when_it_arrives() -> None:
    gate = Gate()
    model = ScriptedModel([call("compute", n=21), "Working on it.", "It is 42."])
    runner = Runner(LlmAgent("assistant", model, tools=[background(gate.tool)]))
    session_id, events = await run_opening(runner, gate, "Working on it.")

    ack = events[1].function_responses[0]
    assert ack.name == "compute"
    assert isinstance(ack.response, dict)
    assert ack.response["status"] == "running"
    assert events[2].text == "Working on it."  # the conversation went on meanwhile
    told = events[3]
    assert told.content is not None
    assert told.content.role == "user"
    assert told.text == "The background call compute (" + str(ack.id) + ') finished: {"value": 42}'
    assert told.actions.state_delta == {"computed": 42}  # the call's actions, with its result
    assert not told.is_final_response()  # news for the model, not its answer
    assert events[-1].text == "It is 42."
    assert user_texts(model.requests[2].contents)[-1] == told.text
    session = await runner.get_session(user_id="u", session_id=session_id)
    assert session.state["computed"] == 42


async def test_a_result_that_arrives_during_a_later_call_is_given_before_the_next_turn() -> None:
    gate = Gate()

    @tool
    async def release() -> str:
        """Let the computation finish."""
        gate.opened.set()
        return "released"

    async def respond(request: Any) -> Any:
        told = [t for t in user_texts(request.contents) if "finished" in t]
        if told:
            return f"heard: {told[-1]}"
        turns = len([c for c in request.contents if c.role == "model"])
        if turns == 0:
            return call("compute", n=1)
        if turns == 1:
            return call("release")
        return "still waiting"

    model = ScriptedModel(respond=respond)
    runner = Runner(LlmAgent("assistant", model, tools=[background(gate.tool), release]))
    _, events = await start(runner, "go")
    assert events[-1].text.startswith("heard: The background call compute")
    assert '{"value": 2}' in events[-1].text


async def test_an_error_of_a_background_call_is_told_to_the_model_as_an_error() -> None:
    gate = Gate()

    @tool
    async def explode() -> str:
        """Fail."""
        await gate.opened.wait()
        raise RuntimeError("the reactor melted")

    model = ScriptedModel([call("explode"), "Started.", "It failed."])
    runner = Runner(LlmAgent("assistant", model, tools=[background(explode)]))
    _, events = await run_opening(runner, gate, "Started.")
    (told,) = [e for e in events if e.content is not None and e.content.role == "user"]
    assert "failed" in told.text
    assert "the reactor melted" in told.text
    assert events[-1].text == "It failed."


async def test_a_background_call_is_bounded_by_the_tool_timeout() -> None:
    @tool
    async def forever() -> str:
        """Never end."""
        await anyio.sleep_forever()
        return "never"

    model = ScriptedModel([call("forever"), "Started.", "Too slow."])
    runner = Runner(LlmAgent("assistant", model, tools=[background(forever)], tool_timeout=0.2))
    _, events = await start(runner, "go")
    (told,) = [e for e in events if e.content is not None and e.content.role == "user"]
    assert "timed out" in told.text
    assert events[-1].text == "Too slow."


async def test_calls_still_running_when_the_caller_stops_are_cancelled_and_the_model_told() -> None:
    gate = Gate()
    model = ScriptedModel([call("compute", n=1), "never reached", "What happened?"])
    runner = Runner(LlmAgent("assistant", model, tools=[background(gate.tool)]))
    # Stop listening at the acknowledgment.
    session_id = await listen_until(runner, lambda event: bool(event.function_responses))
    assert gate.closed.is_set()  # the job was cancelled, its cleanup ran
    stored = await runner.get_session(user_id="u", session_id=session_id)
    told = stored.events[-1]
    assert told.content is not None
    assert told.content.role == "user"
    assert "was cancelled" in told.text
    # The next run's model sees it.
    model_steps = ScriptedModel(["Sorry, it was cancelled."])
    runner.agent.model = model_steps  # type: ignore[attr-defined]
    await collect(runner.run(user_id="u", session_id=session_id, message="and?"))
    assert any("was cancelled" in t for t in user_texts(model_steps.requests[0].contents))


async def test_a_cancelled_run_cancels_its_background_calls() -> None:
    gate = Gate()
    model = ScriptedModel([call("compute", n=1), "Started."])
    runner = Runner(LlmAgent("assistant", model, tools=[background(gate.tool)]))
    session = await runner.create_session(user_id="u")
    with anyio.CancelScope() as scope:
        async for event in runner.run(user_id="u", session_id=session.id, message="go"):
            if event.text == "Started.":
                scope.cancel()
    assert gate.closed.is_set()
    stored = await runner.get_session(user_id="u", session_id=session.id)
    assert "was cancelled" in stored.events[-1].text


async def test_the_formatter_shapes_the_acknowledgment_and_the_message() -> None:
    seen: list[BackgroundUpdate] = []

    def formatter(update: BackgroundUpdate) -> JsonValue:
        seen.append(update)
        if update.status == "running":
            return {"job": update.function_call_id, "state": "queued"}
        return {"job": update.function_call_id, "state": update.status, "out": update.result}

    @tool
    async def quick(x: int) -> int:
        """Return x."""
        await anyio.lowlevel.checkpoint()
        return x

    model = ScriptedModel([call("quick", x=5), "Queued.", "Done."])
    runner = Runner(LlmAgent("assistant", model, tools=[background(quick, formatter=formatter)]))
    _, events = await start(runner, "go")
    ack = events[1].function_responses[0]
    assert ack.response == {"job": ack.id, "state": "queued"}
    (told,) = [e for e in events if e.content is not None and e.content.role == "user"]
    assert told.text == f'{{"job": "{ack.id}", "state": "done", "out": 5}}'
    assert [u.status for u in seen] == ["running", "done"]
    assert seen[1].args == {"x": 5}


async def test_a_background_call_passes_the_confirmation_gate_before_it_starts() -> None:
    ran: list[str] = []

    @tool(requires_confirmation=True)
    async def deploy(env: str) -> str:
        """Deploy."""
        await anyio.lowlevel.checkpoint()
        ran.append(env)
        return f"deployed {env}"

    model = ScriptedModel([call("deploy", env="prod"), "Deploying.", "Deployed."])
    runner = Runner(LlmAgent("assistant", model, tools=[background(deploy)]))
    session_id, events = await start(runner, "go")
    request = asked_to_confirm(events)
    assert ran == []
    resumed = await approve(runner, session_id, request)
    assert ran == ["prod"]
    assert resumed[0].function_responses[0].response["status"] == "running"  # type: ignore[index]
    (told,) = [e for e in resumed if e.content is not None and e.content.role == "user"]
    assert "deployed prod" in told.text
    assert resumed[-1].text == "Deployed."


async def test_interceptors_see_a_background_result_before_the_model_does() -> None:
    @tool
    async def fetch_user() -> dict[str, str]:
        """Fetch the user."""
        await anyio.lowlevel.checkpoint()
        return {"name": "Ann", "ssn": "123-45-6789"}

    def redact(tool: Tool, args: Any, ctx: ToolContext, result: JsonValue) -> JsonValue:
        if isinstance(result, dict) and "ssn" in result:
            return {**result, "ssn": "***"}
        return None

    model = ScriptedModel([call("jobs_fetch_user"), "Fetching.", "Got it."])
    toolset = prefixed(background(StaticToolset([fetch_user])), "jobs")  # type: ignore[arg-type]
    runner = Runner(LlmAgent("assistant", model, tools=[toolset], after_tool=intercept(redact)))
    _, events = await start(runner, "go")
    (told,) = [e for e in events if e.content is not None and e.content.role == "user"]
    assert "***" in told.text
    assert "6789" not in told.text


async def test_other_consumers_call_a_background_tool_as_the_tool_it_wraps() -> None:
    @tool
    async def quick(x: int) -> int:
        """Return x."""
        await anyio.lowlevel.checkpoint()
        return x

    outcome = await invoke(background(quick), {"x": 3}, ToolContext(), default_timeout=5)  # type: ignore[arg-type]
    assert outcome.result == 3  # type: ignore[union-attr]


async def test_a_pause_cancels_the_background_calls_and_the_run_can_still_be_resumed() -> None:
    gate = Gate()

    @tool(requires_confirmation=True)
    def publish() -> str:
        """Publish."""
        return "published"

    model = ScriptedModel(
        [call("compute", n=1), call("publish"), "Published; the computation was cancelled."]
    )
    runner = Runner(LlmAgent("assistant", model, tools=[background(gate.tool), publish]))
    session_id, events = await start(runner, "go")
    request = asked_to_confirm(events)
    assert gate.closed.is_set()  # the pause ended the run, and the call with it
    stored = await runner.get_session(user_id="u", session_id=session_id)
    assert "was cancelled" in stored.events[-1].text
    resumed = await approve(runner, session_id, request)
    assert resumed[0].function_responses[0].response == "published"
    assert resumed[-1].text == "Published; the computation was cancelled."
    assert any("was cancelled" in t for t in user_texts(model.requests[-1].contents))


async def test_a_background_tool_the_agent_could_not_see_runs_as_a_plain_call() -> None:
    @tool
    async def quick(x: int) -> int:
        """Return x."""
        await anyio.lowlevel.checkpoint()
        return x

    shelf = StaticToolset([])
    model = ScriptedModel([call("quick", x=7), "seven"])
    runner = Runner(LlmAgent("assistant", model, tools=[shelf]))
    shelf.push(background(quick))  # after the agent was made
    _, events = await start(runner, "go")
    assert events[1].function_responses[0].response == 7
    assert events[-1].text == "seven"


# Trio warns that the caller let the run's generator be collected unexhausted.
collected_unexhausted = pytest.mark.filterwarnings(
    "ignore:Async generator .* was garbage collected:ResourceWarning"
)


async def a_running_job() -> tuple[Gate, Runner, str]:
    """A runner whose model starts a background job that runs until cancelled: the gate,
    the runner and a new session's id."""
    gate = Gate()
    model = ScriptedModel([call("compute", n=1), "never reached"])
    runner = Runner(LlmAgent("assistant", model, tools=[background(gate.tool)]))
    session = await runner.create_session(user_id="u")
    return gate, runner, session.id


async def cancellation_recorded(runner: Runner, session_id: str) -> Event:
    """The message telling the model the job was cancelled, once the dropped run has
    closed and recorded it."""
    while True:
        stored = await runner.get_session(user_id="u", session_id=session_id)
        if "was cancelled" in stored.events[-1].text:
            return stored.events[-1]
        await anyio.lowlevel.checkpoint()


@collected_unexhausted
async def test_a_caller_that_breaks_without_closing_the_run_ends_its_background_calls() -> None:
    gate, runner, session_id = await a_running_job()
    with anyio.fail_after(RUN_TIMEOUT):
        async for event in runner.run(user_id="u", session_id=session_id, message="go"):
            if event.function_responses:
                break  # the acknowledgment: stop listening, without aclosing
        await gate.closed.wait()  # the job was cancelled, its cleanup ran
        told = await cancellation_recorded(runner, session_id)
    assert told.content is not None
    assert told.content.role == "user"


@collected_unexhausted
async def test_an_error_in_the_caller_ends_the_background_calls_of_the_run() -> None:
    gate, runner, session_id = await a_running_job()

    async def listen() -> None:
        async for event in runner.run(user_id="u", session_id=session_id, message="go"):
            if event.function_responses:
                raise LookupError("the caller failed")

    with anyio.fail_after(RUN_TIMEOUT):
        with pytest.raises(LookupError):
            await listen()
        await gate.closed.wait()
        await cancellation_recorded(runner, session_id)


@collected_unexhausted
async def test_a_background_call_whose_cleanup_lasts_does_not_hold_up_a_caller_that_stops(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_agents, "BACKGROUND_CLOSE_GRACE", 0.2)
    cleaning, release = anyio.Event(), anyio.Event()

    @tool
    async def stubborn(n: int) -> int:
        """Work until cancelled, then clean up until released."""
        try:
            await anyio.sleep_forever()
        finally:
            with anyio.CancelScope(shield=True):
                cleaning.set()
                await release.wait()
        return n

    model = ScriptedModel([call("stubborn", n=1), "never reached"])
    runner = Runner(LlmAgent("assistant", model, tools=[background(stubborn)]))
    session = await runner.create_session(user_id="u")
    with anyio.fail_after(RUN_TIMEOUT):
        events = runner.run(user_id="u", session_id=session.id, message="go")
        async for event in events:
            if event.function_responses:
                break
        await events.aclose()  # back once the grace is over, the cleanup still going
        assert cleaning.is_set()
        assert not release.is_set()
        release.set()
        await cancellation_recorded(runner, session.id)


@tool(is_long_running=True)
async def ticket(title: str) -> dict[str, str]:
    """Open a ticket a human resolves later."""
    return {"status": "pending", "title": title}


def test_a_long_running_tool_cannot_be_run_in_the_background() -> None:
    with pytest.raises(ToolDefinitionError) as caught:
        background(ticket)
    assert "long-running" in str(caught.value)


async def test_a_long_running_tool_of_a_background_toolset_gives_the_model_an_error() -> None:
    model = ScriptedModel([call("ticket", title="fix it"), "It could not start."])
    agent = LlmAgent("assistant", model, tools=[background(StaticToolset([ticket]))])
    _, events = await start(Runner(agent), "go")
    assert response_of(events, "ticket") == error_result(LONG_RUNNING_REFUSED)
    assert not any(e.pending for e in events)
    assert events[-1].text == "It could not start."


async def test_a_background_call_that_marks_itself_long_running_ends_with_an_error() -> None:
    @tool
    async def maybe_later(ctx: ToolContext) -> str:
        """Start something that may finish later."""
        ctx.actions.long_running = True
        return "queued"

    model = ScriptedModel([call("maybe_later"), "Started.", "Noted."])
    runner = Runner(LlmAgent("assistant", model, tools=[background(maybe_later)]))
    _, events = await start(runner, "go")
    (told,) = [e for e in events if e.content is not None and e.content.role == "user"]
    assert "failed" in told.text
    assert "long-running" in told.text
    assert "finished" not in told.text
    assert not any(e.pending for e in events)


caller_var: contextvars.ContextVar[str] = contextvars.ContextVar("caller_var", default="unset")


async def test_the_caller_s_context_reaches_the_tools_of_a_run_with_background_calls() -> None:
    seen: list[str] = []

    @tool
    def peek() -> str:
        """Read the caller's context."""
        seen.append(caller_var.get())
        return "ok"

    caller_var.set("the caller's")
    model = ScriptedModel([call("peek"), "done"])
    runner = Runner(LlmAgent("assistant", model, tools=[peek, background(Gate().tool)]))
    await start(runner, "go")
    assert seen == ["the caller's"]
