"""The agent loop's flow: actions, limits, streaming, pauses, and workflow agents."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.agent.helpers import call, collect, response_of, start
from toolsets import (
    Content,
    InMemoryArtifactService,
    JsonValue,
    Part,
    ToolContext,
    tool,
)
from toolsets.agent import (
    BaseAgent,
    ConfirmationRequest,
    Event,
    LlmAgent,
    LlmRequest,
    LongRunningRequest,
    LoopAgent,
    RunConfig,
    Runner,
    SequentialAgent,
    SessionNotFoundError,
    exit_loop,
)
from toolsets.agent._run import RunContext
from toolsets.models import LlmResponse, ScriptedModel, ScriptExhaustedError, Usage

pytestmark = pytest.mark.anyio


@tool
def remember(key: str, value: str, ctx: ToolContext) -> str:
    """Remember a value."""
    ctx.state[key] = value
    return "ok"


@tool
async def write_report(text: str, ctx: ToolContext) -> int:
    """Save a report."""
    return await ctx.save_artifact("report.txt", Part.from_text(text))


@tool(requires_confirmation=True)
def risky(x: int) -> int:
    """Needs approval."""
    return x


# --- the basic cycle --------------------------------------------------------------------


async def test_a_text_answer_ends_the_run_and_is_the_final_event() -> None:
    model = ScriptedModel(["Hello!"])
    runner = Runner(LlmAgent("greeter", model, instruction="Be nice."))
    session_id, events = await start(runner, "hi")
    (final,) = events
    assert final.is_final_response()
    assert (final.author, final.text) == ("greeter", "Hello!")
    (request,) = model.requests
    assert request.system_instruction == "Be nice."
    assert [c.text for c in request.contents] == ["hi"]
    session = await runner.get_session(user_id="u", session_id=session_id)
    assert [e.author for e in session.events] == ["user", "greeter"]


async def test_the_instruction_may_be_computed_from_the_invocation() -> None:
    model = ScriptedModel(["ok"])
    agent = LlmAgent("a", model, instruction=lambda inv: f"The user is {inv.user_id}.")
    await start(Runner(agent), "hi", user_id="ann")
    assert model.requests[0].system_instruction == "The user is ann."


async def test_state_and_artifact_deltas_ride_on_the_tool_event_and_are_persisted() -> None:
    artifacts = InMemoryArtifactService()
    model = ScriptedModel(
        [[call("remember", key="color", value="red"), call("write_report", text="R")], "done"]
    )
    runner = Runner(
        LlmAgent("a", model, tools=[remember, write_report]), artifact_service=artifacts
    )
    session_id, events = await start(runner, "go")
    tool_event = events[1]
    assert tool_event.actions.state_delta == {"color": "red"}
    assert tool_event.actions.artifact_delta == {"report.txt": 0}
    session = await runner.get_session(user_id="u", session_id=session_id)
    assert session.state["color"] == "red"
    saved = await artifacts.load_artifact(
        app_name="toolsets", user_id="u", session_id=session_id, filename="report.txt"
    )
    assert saved is not None
    assert saved.text == "R"


async def test_the_next_tool_call_sees_state_written_by_the_previous_one() -> None:
    @tool
    def read(key: str, ctx: ToolContext) -> JsonValue:
        value: JsonValue = ctx.state.get(key)
        return value

    model = ScriptedModel([call("remember", key="k", value="v"), call("read", key="k"), "done"])
    _, events = await start(Runner(LlmAgent("a", model, tools=[remember, read])), "go")
    assert response_of(events, "read") == "v"


async def test_output_key_saves_the_final_answer_in_the_state() -> None:
    runner = Runner(LlmAgent("a", ScriptedModel(["42"]), output_key="answer"))
    session_id, _ = await start(runner, "q")
    session = await runner.get_session(user_id="u", session_id=session_id)
    assert session.state["answer"] == "42"


async def test_skip_summarization_ends_the_turn_with_the_tool_response_as_the_answer() -> None:
    @tool
    def show_table(ctx: ToolContext) -> dict[str, list[int]]:
        """Show a table as is."""
        ctx.actions.skip_summarization = True
        return {"rows": [1, 2]}

    model = ScriptedModel([call("show_table")])  # a second model call would exhaust it
    _, events = await start(Runner(LlmAgent("a", model, tools=[show_table])), "go")
    assert events[-1].is_final_response()
    assert response_of(events, "show_table") == {"rows": [1, 2]}
    assert len(model.requests) == 1


# --- limits and errors ------------------------------------------------------------------


@tool
def noop() -> str:
    return "ok"


async def test_max_iterations_caps_the_model_calls_of_one_agent_for_one_message() -> None:
    model = ScriptedModel(respond=lambda request: call("noop"))
    runner = Runner(LlmAgent("a", model, tools=[noop], max_iterations=3))
    _, events = await start(runner, "go")
    assert len(model.requests) == 3
    assert events[-1].error_code == "max_iterations"
    assert events[-1].is_final_response()


async def test_max_llm_calls_caps_the_whole_run() -> None:
    model = ScriptedModel(respond=lambda request: call("noop"))
    runner = Runner(LlmAgent("a", model, tools=[noop]))
    session = await runner.create_session(user_id="u")
    events = await collect(
        runner.run(
            user_id="u", session_id=session.id, message="go", run_config=RunConfig(max_llm_calls=2)
        )
    )
    assert len(model.requests) == 2
    assert events[-1].error_code == "max_llm_calls"
    with pytest.raises(ValueError, match="max_llm_calls"):
        RunConfig(max_llm_calls=0)


async def test_a_model_error_ends_the_run_with_an_error_event() -> None:
    failing = LlmResponse(
        error_code="http_429", error_message="rate limited", usage=Usage(input_tokens=3)
    )
    _, events = await start(Runner(LlmAgent("a", ScriptedModel([failing]))), "go")
    (event,) = events
    assert (event.error_code, event.error_message) == ("http_429", "rate limited")
    assert event.usage == Usage(input_tokens=3)
    assert event.is_final_response()


async def test_a_scripted_model_called_too_often_says_so() -> None:
    runner = Runner(LlmAgent("a", ScriptedModel([call("noop")]), tools=[noop]))
    with pytest.raises(ScriptExhaustedError):
        await start(runner, "go")


async def test_running_a_missing_session_is_a_clear_error() -> None:
    runner = Runner(LlmAgent("a", ScriptedModel(["x"])))
    with pytest.raises(SessionNotFoundError) as info:
        await collect(runner.run(user_id="u", session_id="nope", message="hi"))
    assert info.value.session_id == "nope"


# --- streaming --------------------------------------------------------------------------


async def test_streaming_yields_partial_events_that_are_not_recorded() -> None:
    runner = Runner(LlmAgent("a", ScriptedModel(["Hello there, friend"])))
    session = await runner.create_session(user_id="u")
    events = await collect(
        runner.run(
            user_id="u", session_id=session.id, message="hi", run_config=RunConfig(streaming=True)
        )
    )
    partial = [e for e in events if e.partial]
    assert "".join(e.text for e in partial) == "Hello there, friend"
    assert len(partial) == 3
    assert not any(e.is_final_response() for e in partial)
    assert events[-1].text == "Hello there, friend"
    assert not events[-1].partial
    stored = await runner.get_session(user_id="u", session_id=session.id)
    assert not any(e.partial for e in stored.events)


# --- pause and resume -------------------------------------------------------------------


@tool(is_long_running=True)
def start_export(table: str) -> dict[str, str]:
    """Start an export."""
    return {"status": "started", "job": f"job-{table}"}


async def test_a_long_running_call_pauses_with_its_interim_result_and_resumes_with_the_final() -> (
    None
):
    model = ScriptedModel([call("start_export", table="users"), "Export finished."])
    runner = Runner(LlmAgent("a", model, tools=[start_export]))
    session_id, events = await start(runner, "export")
    pause = events[-1]
    (request,) = pause.pending
    assert isinstance(request, LongRunningRequest)
    assert request.interim == {"status": "started", "job": "job-users"}
    assert pause.actions.long_running
    (interim,) = pause.function_responses
    assert interim.will_continue
    resumed = await collect(
        runner.resume(
            user_id="u", session_id=session_id, results={request.function_call_id: {"rows": 10}}
        )
    )
    assert resumed[-1].text == "Export finished."
    answers = [p.function_response for p in model.requests[1].contents[-1].parts]
    assert [(a.response, a.will_continue) for a in answers if a] == [({"rows": 10}, False)]


async def test_answering_some_of_several_pending_calls_pauses_again_on_the_rest() -> None:
    model = ScriptedModel([[call("risky", x=1), call("risky", x=2)], "both done"])
    runner = Runner(LlmAgent("a", model, tools=[risky]))
    session_id, events = await start(runner, "go")
    first, second = events[-1].pending
    step = await collect(
        runner.resume(
            user_id="u", session_id=session_id, confirmations={first.function_call_id: True}
        )
    )
    assert [r.function_call_id for r in step[-1].pending] == [second.function_call_id]
    assert len(model.requests) == 1
    final = await collect(
        runner.resume(
            user_id="u", session_id=session_id, confirmations={second.function_call_id: True}
        )
    )
    assert final[-1].text == "both done"
    answers = [p.function_response for p in model.requests[1].contents[-1].parts]
    assert [a.response for a in answers if a] == [1, 2]


async def test_wrong_answers_are_rejected_and_change_nothing() -> None:
    model = ScriptedModel([call("risky", x=1), "done"])
    runner = Runner(LlmAgent("a", model, tools=[risky]))
    session_id, events = await start(runner, "go")
    (request,) = events[-1].pending
    assert isinstance(request, ConfirmationRequest)
    with pytest.raises(ValueError, match="no call 'nope' is pending"):
        await collect(
            runner.resume(user_id="u", session_id=session_id, confirmations={"nope": True})
        )
    with pytest.raises(ValueError, match="ConfirmationRequest"):
        await collect(
            runner.resume(user_id="u", session_id=session_id, results={request.function_call_id: 1})
        )
    with pytest.raises(ValueError, match="no answers"):
        await collect(runner.resume(user_id="u", session_id=session_id))
    # Still paused on the same request: a right answer works.
    final = await collect(
        runner.resume(
            user_id="u", session_id=session_id, confirmations={request.function_call_id: True}
        )
    )
    assert final[-1].text == "done"
    with pytest.raises(ValueError, match="not waiting"):
        await collect(
            runner.resume(
                user_id="u", session_id=session_id, confirmations={request.function_call_id: True}
            )
        )


async def test_a_new_message_instead_of_an_answer_closes_the_pending_call_for_the_model() -> None:
    model = ScriptedModel([call("risky", x=1), "never mind then"])
    runner = Runner(LlmAgent("a", model, tools=[risky]))
    session_id, events = await start(runner, "go")
    call_id = events[-1].pending[0].function_call_id
    after = await collect(runner.run(user_id="u", session_id=session_id, message="forget it"))
    assert after[-1].text == "never mind then"
    contents = model.requests[1].contents
    closing = [p.function_response for c in contents for p in c.parts if p.function_response]
    assert [(r.id, r.will_continue) for r in closing] == [(call_id, False)]
    assert "new message" in str(closing[0].response)
    assert contents[-1].text == "forget it"


# --- workflow agents --------------------------------------------------------------------


async def test_a_sequential_agent_runs_each_sub_agent_once_in_order() -> None:
    first = LlmAgent("first", ScriptedModel(["one"]))
    second = LlmAgent("second", ScriptedModel(["two"]))
    runner = Runner(SequentialAgent("pipeline", sub_agents=[first, second]))
    _, events = await start(runner, "go")
    assert [(e.author, e.text) for e in events] == [("first", "one"), ("second", "two")]


async def test_a_later_agent_sees_an_earlier_agents_answer_as_context() -> None:
    second_model = ScriptedModel(["two"])
    runner = Runner(
        SequentialAgent(
            "pipeline",
            sub_agents=[
                LlmAgent("first", ScriptedModel(["one"])),
                LlmAgent("second", second_model),
            ],
        )
    )
    await start(runner, "go")
    contents = second_model.requests[0].contents
    assert [c.role for c in contents] == ["user", "user"]
    assert contents[1].text == "For context:\n[first] said: one"


async def test_escalate_stops_a_loop_and_the_sequence_inside_it() -> None:
    checker_model = ScriptedModel(["not yet", call("exit_loop")])
    worker_model = ScriptedModel(["draft 1", "draft 2", "never"])
    loop = LoopAgent(
        "refine",
        sub_agents=[
            SequentialAgent(
                "round",
                sub_agents=[
                    LlmAgent("worker", worker_model),
                    LlmAgent("checker", checker_model, tools=[exit_loop]),
                ],
            )
        ],
        max_iterations=5,
    )
    _, events = await start(Runner(loop), "go")
    assert len(worker_model.requests) == 2
    assert len(checker_model.requests) == 2
    assert events[-1].actions.escalate


async def test_a_run_paused_inside_a_loop_resumes_in_the_same_iteration() -> None:
    worker_model = ScriptedModel([call("risky", x=1), "first done", "second round"])
    loop = LoopAgent(
        "loop", sub_agents=[LlmAgent("worker", worker_model, tools=[risky])], max_iterations=2
    )
    runner = Runner(loop)
    session_id, events = await start(runner, "go")
    pause = events[-1]
    assert pause.resume_state == {"loop": {"iteration": 0}}
    resumed = await collect(
        runner.resume(
            user_id="u",
            session_id=session_id,
            confirmations={pause.pending[0].function_call_id: True},
        )
    )
    # Iteration 0 finishes, then exactly one more iteration (max_iterations=2).
    assert [e.text for e in resumed if e.text] == ["first done", "second round"]
    assert worker_model.remaining == 0


class CountingEntries(BaseAgent):
    """Counts, in its saved state changed in place, how often it was entered."""

    async def run(self, ctx: RunContext) -> AsyncIterator[Event]:
        saved = ctx.agent_states.setdefault(self.name, {"entries": 0})
        saved["entries"] += 1
        for sub in self.sub_agents:
            async for event in sub.run(ctx):
                yield event


async def test_resuming_leaves_the_recorded_pause_as_it_was() -> None:
    model = ScriptedModel([call("risky", x=1), "done"])
    runner = Runner(CountingEntries("root", sub_agents=[LlmAgent("worker", model, tools=[risky])]))
    session_id, events = await start(runner, "go")
    pause = events[-1]
    assert pause.resume_state == {"root": {"entries": 1}}
    await collect(
        runner.resume(
            user_id="u",
            session_id=session_id,
            confirmations={pause.pending[0].function_call_id: True},
        )
    )
    stored = (await runner.get_session(user_id="u", session_id=session_id)).events
    (recorded,) = [e for e in stored if e.pending]
    assert recorded.resume_state == {"root": {"entries": 1}}


async def test_a_run_paused_in_a_sequence_resumes_and_continues_with_the_next_agent() -> None:
    then = LlmAgent("then", ScriptedModel(["after"]))
    runner = Runner(
        SequentialAgent(
            "seq",
            sub_agents=[
                LlmAgent("first", ScriptedModel([call("risky", x=3), "before"]), tools=[risky]),
                then,
            ],
        )
    )
    session_id, events = await start(runner, "go")
    call_id = events[-1].pending[0].function_call_id
    resumed = await collect(
        runner.resume(user_id="u", session_id=session_id, confirmations={call_id: True})
    )
    assert [(e.author, e.text) for e in resumed if e.text] == [
        ("first", "before"),
        ("then", "after"),
    ]


def test_agent_trees_reject_bad_names_shared_children_and_duplicates() -> None:
    model = ScriptedModel()
    with pytest.raises(ValueError, match="invalid agent name"):
        LlmAgent("has space", model)
    with pytest.raises(ValueError, match="invalid agent name"):
        LlmAgent("user", model)
    child = LlmAgent("child", model)
    SequentialAgent("one", sub_agents=[child])
    with pytest.raises(ValueError, match="already belongs"):
        SequentialAgent("two", sub_agents=[child])
    with pytest.raises(ValueError, match="two agents"):
        SequentialAgent("dup", sub_agents=[LlmAgent("x", model), LlmAgent("x", model)])
    with pytest.raises(ValueError, match="root"):
        Runner(child)
    with pytest.raises(ValueError, match="max_iterations"):
        LlmAgent("a", model, max_iterations=0)


async def test_the_scripted_model_can_answer_from_the_request() -> None:
    def echo(request: LlmRequest) -> Any:
        return f"you said {request.contents[-1].text}"

    _, events = await start(Runner(LlmAgent("a", ScriptedModel(respond=echo))), "hello")
    assert events[-1].text == "you said hello"
    with pytest.raises(ValueError, match="not both"):
        ScriptedModel(["x"], respond=echo)


async def test_a_message_may_be_a_whole_content() -> None:
    model = ScriptedModel(["seen"])
    runner = Runner(LlmAgent("a", model))
    session = await runner.create_session(user_id="u")
    image = Content(
        role="user", parts=(Part.from_text("look"), Part.from_bytes(b"\x89PNG", "image/png"))
    )
    await collect(runner.run(user_id="u", session_id=session.id, message=image))
    assert model.requests[0].contents == [image]


class OneEventAgent(BaseAgent):
    """An agent whose run is an async iterator but not a generator (no ``aclose``)."""

    def run(self, ctx: RunContext) -> AsyncIterator[Event]:
        return _Events(
            [
                ctx.event(
                    author=self.name, content=Content(role="model", parts=(Part.from_text("hi"),))
                )
            ]
        )


class _Events:
    def __init__(self, events: list[Event]) -> None:
        self._events = iter(events)

    def __aiter__(self) -> _Events:
        return self

    async def __anext__(self) -> Event:
        for event in self._events:
            return event
        raise StopAsyncIteration


async def test_an_agent_whose_run_is_a_plain_async_iterator_runs_without_aclose() -> None:
    _, events = await start(Runner(OneEventAgent("plain")), "go")
    assert events[-1].text == "hi"


class _ClosableEvents(_Events):
    def __init__(self, events: list[Event], closed: list[bool]) -> None:
        super().__init__(events)
        self._closed = closed

    async def aclose(self) -> None:
        self._closed.append(True)


class ClosableAgent(BaseAgent):
    """An agent whose run is an async iterator with ``aclose`` (not a generator)."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.closed: list[bool] = []

    def run(self, ctx: RunContext) -> AsyncIterator[Event]:
        reply = Content(role="model", parts=(Part.from_text("hi"),))
        return _ClosableEvents([ctx.event(author=self.name, content=reply)], self.closed)


async def test_an_agent_whose_run_has_aclose_is_closed_when_the_run_ends() -> None:
    agent = ClosableAgent("closable")
    _, events = await start(Runner(agent), "go")
    assert events[-1].text == "hi"
    assert agent.closed == [True]
