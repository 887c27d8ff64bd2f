"""Built-in tools through real runs: transfer, exit_loop, user choice, memory, artifacts,
and agents used as tools."""

from __future__ import annotations

import functools
from typing import Any

import anyio
import pytest

from tests.agent import helpers
from tests.agent.helpers import call, collect
from toolsets import (
    Content,
    FunctionResponse,
    InMemoryArtifactService,
    InMemoryMemoryService,
    MemoryEntry,
    Part,
    ToolContext,
    is_error_result,
)
from toolsets.agent import (
    AgentTool,
    Event,
    LlmAgent,
    LongRunningRequest,
    LoopAgent,
    Runner,
    SequentialAgent,
    exit_loop,
    get_user_choice_tool,
    load_artifacts_tool,
    load_memory_tool,
    preload_memory_tool,
    transfer_to_agent_tool,
)
from toolsets.models import ScriptedModel

pytestmark = pytest.mark.anyio

APP = "desk"
start = functools.partial(helpers.start, user_id="ann")
"""Every run here is ann's."""


def responses(contents_or_events: list[Any], name: str) -> list[FunctionResponse]:
    found: list[FunctionResponse] = []
    for item in contents_or_events:
        parts = item.content.parts if isinstance(item, Event) and item.content else ()
        if isinstance(item, Content):
            parts = item.parts
        found += [
            p.function_response
            for p in parts
            if p.function_response is not None and p.function_response.name == name
        ]
    return found


# --- transfer_to_agent --------------------------------------------------------------------


def support_tree(
    root_steps: list[Any], billing_steps: list[Any], *, transfer: bool = True
) -> tuple[LlmAgent, ScriptedModel, ScriptedModel, ScriptedModel]:
    root_model = ScriptedModel(root_steps)
    billing_model = ScriptedModel(billing_steps)
    shipping_model = ScriptedModel()
    root = LlmAgent(
        "frontdesk",
        root_model,
        transfer=transfer,
        sub_agents=[
            LlmAgent("billing", billing_model, description="Invoices and refunds."),
            LlmAgent("shipping", shipping_model, description="Parcels."),
        ],
    )
    return root, root_model, billing_model, shipping_model


async def test_an_agent_with_sub_agents_is_offered_transfer_to_its_sub_agents() -> None:
    root, root_model, _, _ = support_tree(["hello"], [])
    await start(Runner(root, app_name=APP), "hi")

    declaration = root_model.requests[0].declarations["transfer_to_agent"]
    agent_name = declaration.parameters["properties"]["agent_name"]
    assert agent_name["enum"] == ["billing", "shipping"]
    assert declaration.parameters["required"] == ["agent_name"]
    assert "Invoices and refunds." in declaration.description


async def test_an_agent_with_transfer_disabled_is_not_offered_transfer() -> None:
    root, root_model, _, _ = support_tree(["hello"], [], transfer=False)
    await start(Runner(root, app_name=APP), "hi")
    assert "transfer_to_agent" not in root_model.requests[0].declarations


async def test_an_agent_without_sub_agents_or_llm_parent_is_not_offered_transfer() -> None:
    model = ScriptedModel(["hello"])
    await start(Runner(LlmAgent("alone", model), app_name=APP), "hi")
    assert model.requests[0].declarations == {}


async def test_a_transfer_hands_the_run_to_the_sub_agent_whose_answer_is_final() -> None:
    root, root_model, billing_model, shipping_model = support_tree(
        [call("transfer_to_agent", agent_name="billing")], ["Your refund is on its way."]
    )
    _, events = await start(Runner(root, app_name=APP), "where is my refund?")

    assert len(root_model.requests) == 1
    assert len(billing_model.requests) == 1
    assert shipping_model.requests == []
    assert responses(events, "transfer_to_agent")[0].response == {"transferred_to": "billing"}
    assert events[-1].author == "billing"
    assert events[-1].text == "Your refund is on its way."
    assert events[-1].is_final_response()
    # The sub-agent sees the user's message.
    assert billing_model.requests[0].contents[0] == Content.user("where is my refund?")
    # A sub-agent with an LLM parent is offered to hand back to it.
    handback = billing_model.requests[0].declarations["transfer_to_agent"]
    assert handback.parameters["properties"]["agent_name"]["enum"] == ["frontdesk"]


async def test_the_next_message_goes_straight_to_the_agent_last_transferred_to() -> None:
    root, root_model, billing_model, _ = support_tree(
        [call("transfer_to_agent", agent_name="billing")], ["Refund sent.", "Yes, 20 EUR."]
    )
    runner = Runner(root, app_name=APP)
    session_id, _ = await start(runner, "refund?")
    events = await collect(
        runner.run(user_id="ann", session_id=session_id, message="how much was it?")
    )

    assert len(root_model.requests) == 1  # the root was not asked again
    assert len(billing_model.requests) == 2
    assert billing_model.requests[1].contents[-1] == Content.user("how much was it?")
    assert [(e.author, e.text) for e in events] == [("billing", "Yes, 20 EUR.")]


async def test_a_transfer_to_an_unknown_agent_is_an_error_result_and_the_agent_continues() -> None:
    root, root_model, billing_model, shipping_model = support_tree(
        [call("transfer_to_agent", agent_name="legal"), "I will handle it myself."], []
    )
    _, events = await start(Runner(root, app_name=APP), "sue them")

    (result,) = responses(events, "transfer_to_agent")
    assert is_error_result(result.response)
    assert "legal" in result.response["error"]
    assert events[-1].author == "frontdesk"
    assert events[-1].text == "I will handle it myself."
    assert billing_model.requests == []
    assert shipping_model.requests == []
    # The model was told, in reply to its own call.
    told = responses(root_model.requests[1].contents, "transfer_to_agent")
    assert [r.response for r in told] == [result.response]
    assert told[0].id == events[0].function_calls[0].id
    assert events[1].actions.transfer_to_agent is None


async def test_the_generic_transfer_tool_rejects_a_name_outside_the_tree() -> None:
    model = ScriptedModel([call("transfer_to_agent", agent_name="nobody"), "staying"])
    agent = LlmAgent("solo", model, tools=[transfer_to_agent_tool], transfer=False)
    _, events = await start(Runner(agent, app_name=APP), "hi")

    (result,) = responses(events, "transfer_to_agent")
    assert is_error_result(result.response)
    assert "nobody" in result.response["error"]
    assert events[1].actions.transfer_to_agent is None
    assert (events[-1].author, events[-1].text) == ("solo", "staying")
    assert len(model.requests) == 2


# --- exit_loop and LoopAgent --------------------------------------------------------------


async def test_exit_loop_stops_the_loop_it_runs_in() -> None:
    model = ScriptedModel(["draft 1", call("exit_loop"), "draft 3", "draft 4"])
    writer = LlmAgent("writer", model, tools=[exit_loop])
    loop = LoopAgent("refine", sub_agents=[writer], max_iterations=4)
    _, events = await start(Runner(loop, app_name=APP), "write")

    assert len(model.requests) == 2
    assert model.remaining == 2
    assert events[-1].actions.escalate
    assert responses(events, "exit_loop")[0].response == {"status": "loop exited"}
    assert all(e.error_code is None for e in events)


async def test_exit_loop_breaks_only_the_loop_so_the_next_agent_in_a_sequence_runs() -> None:
    loop_model = ScriptedModel([call("exit_loop"), "never"])
    after_model = ScriptedModel(["summary"])
    pipeline = SequentialAgent(
        "pipeline",
        sub_agents=[
            LoopAgent("refine", sub_agents=[LlmAgent("writer", loop_model, tools=[exit_loop])]),
            LlmAgent("summarizer", after_model),
        ],
    )
    _, events = await start(Runner(pipeline, app_name=APP), "go")

    assert len(loop_model.requests) == 1
    assert len(after_model.requests) == 1
    assert (events[-1].author, events[-1].text) == ("summarizer", "summary")


async def test_a_loop_with_max_iterations_runs_its_sub_agents_exactly_that_many_times() -> None:
    first = ScriptedModel(["a1", "a2", "a3"])
    second = ScriptedModel(["b1", "b2", "b3"])
    loop = LoopAgent(
        "twice",
        sub_agents=[LlmAgent("first", first), LlmAgent("second", second)],
        max_iterations=2,
    )
    _, events = await start(Runner(loop, app_name=APP), "go")

    assert len(first.requests) == 2
    assert len(second.requests) == 2
    assert [(e.author, e.text) for e in events] == [
        ("first", "a1"),
        ("second", "b1"),
        ("first", "a2"),
        ("second", "b2"),
    ]
    assert all(not e.actions.escalate and e.error_code is None for e in events)


# --- get_user_choice ----------------------------------------------------------------------


async def test_get_user_choice_pauses_and_the_users_choice_reaches_the_model_on_resume() -> None:
    model = ScriptedModel([call("get_user_choice", options=["red", "blue"]), "Painting it red."])
    runner = Runner(LlmAgent("painter", model, tools=[get_user_choice_tool]), app_name=APP)
    session_id, events = await start(runner, "paint the shed")

    (pending,) = events[-1].pending
    assert isinstance(pending, LongRunningRequest)
    assert pending.tool_name == "get_user_choice"
    assert pending.args == {"options": ["red", "blue"]}
    assert isinstance(pending.interim, dict)
    assert pending.interim["options"] == ["red", "blue"]
    assert events[-1].is_final_response()
    assert len(model.requests) == 1  # the model waits for the choice
    call_id = pending.function_call_id
    assert call_id == events[0].function_calls[0].id

    resumed = await collect(
        runner.resume(user_id="ann", session_id=session_id, results={call_id: "red"})
    )

    assert len(model.requests) == 2
    answers = [
        p.function_response
        for c in model.requests[1].contents
        for p in c.parts
        if p.function_response is not None
    ]
    assert [(a.id, a.response, a.will_continue) for a in answers] == [(call_id, "red", False)]
    assert (resumed[-1].author, resumed[-1].text) == ("painter", "Painting it red.")
    assert not resumed[-1].pending


# --- memory -------------------------------------------------------------------------------


async def remember(service: InMemoryMemoryService, user_id: str, *texts: str) -> None:
    await service.add_entries(
        app_name=APP,
        user_id=user_id,
        entries=[MemoryEntry(content=Content.user(t), author=user_id) for t in texts],
    )


async def test_load_memory_returns_the_users_matching_memories() -> None:
    memory = InMemoryMemoryService()
    await remember(memory, "ann", "My favourite colour is teal", "The dog is called Rex")
    await remember(memory, "bob", "My favourite colour is orange")
    model = ScriptedModel([call("load_memory", query="favourite colour"), "teal"])
    runner = Runner(
        LlmAgent("recall", model, tools=[load_memory_tool]), app_name=APP, memory_service=memory
    )
    _, events = await start(runner, "what colour do I like?")

    (result,) = responses(events, "load_memory")
    memories = result.response["memories"]
    assert [(m["author"], m["text"]) for m in memories] == [("ann", "My favourite colour is teal")]
    assert responses(model.requests[1].contents, "load_memory")[0].response == result.response


async def test_preload_memory_puts_the_most_relevant_memories_into_the_instruction() -> None:
    memory = InMemoryMemoryService()
    await remember(
        memory,
        "ann",
        "I live in Lisbon",
        "My favourite colour is teal",
        "My favourite dish is caldo verde",
    )
    model = ScriptedModel(["teal"])
    agent = LlmAgent(
        "recall", model, instruction="Be brief.", tools=[preload_memory_tool(max_entries=1)]
    )
    await start(Runner(agent, app_name=APP, memory_service=memory), "what is my favourite colour?")

    (request,) = model.requests
    assert request.declarations == {}
    assert request.system_instruction.startswith("Be brief.")
    assert "My favourite colour is teal" in request.system_instruction
    assert "caldo verde" not in request.system_instruction
    assert "Lisbon" not in request.system_instruction


async def test_preload_memory_adds_nothing_when_no_memory_matches() -> None:
    memory = InMemoryMemoryService()
    await remember(memory, "ann", "I live in Lisbon")
    model = ScriptedModel(["ok"])
    agent = LlmAgent("recall", model, instruction="Be brief.", tools=[preload_memory_tool()])
    await start(Runner(agent, app_name=APP, memory_service=memory), "hello there")
    assert model.requests[0].system_instruction == "Be brief."


def test_preload_memory_needs_at_least_one_entry() -> None:
    with pytest.raises(ValueError, match="max_entries"):
        preload_memory_tool(max_entries=0)


async def test_load_memory_without_a_memory_service_tells_the_model_it_is_not_configured() -> None:
    model = ScriptedModel([call("load_memory", query="colour"), "I cannot remember."])
    runner = Runner(LlmAgent("recall", model, tools=[load_memory_tool]), app_name=APP)
    _, events = await start(runner, "what colour do I like?")

    (result,) = responses(events, "load_memory")
    assert is_error_result(result.response)
    assert "memory_service" in result.response["error"]
    assert "ServiceNotConfiguredError" in result.response["error"]
    told = responses(model.requests[1].contents, "load_memory")
    assert [r.response for r in told] == [result.response]
    assert events[-1].text == "I cannot remember."


# --- artifacts ----------------------------------------------------------------------------


async def save_report(ctx: ToolContext) -> int:
    """Save the quarterly report."""
    return await ctx.save_artifact("report.txt", Part(text="Q3 revenue: 12"))


async def test_saved_artifacts_are_listed_to_the_model_and_load_artifacts_returns_them() -> None:
    model = ScriptedModel(
        [
            call("save_report"),
            call("load_artifacts", artifact_names=["report.txt", "missing.txt"]),
            "Revenue was 12.",
        ]
    )
    agent = LlmAgent("clerk", model, tools=[save_report, load_artifacts_tool])
    runner = Runner(agent, app_name=APP, artifact_service=InMemoryArtifactService())
    _, events = await start(runner, "report please")

    assert "report.txt" not in model.requests[0].system_instruction
    assert "load_artifacts" in model.requests[0].declarations
    assert "report.txt" in model.requests[1].system_instruction
    saved = [e for e in events if responses([e], "save_report")]
    assert saved[0].actions.artifact_delta == {"report.txt": 0}

    (loaded,) = responses(events, "load_artifacts")
    assert loaded.response == {
        "artifacts": [
            {"name": "report.txt", "text": "Q3 revenue: 12"},
            {"name": "missing.txt", "error": "no such artifact"},
        ]
    }
    assert events[-1].text == "Revenue was 12."


async def test_load_artifacts_returns_inline_bytes_as_base64() -> None:
    artifacts = InMemoryArtifactService()
    runner_model = ScriptedModel([call("load_artifacts", artifact_names=["logo.png"]), "ok"])
    runner = Runner(
        LlmAgent("clerk", runner_model, tools=[load_artifacts_tool]),
        app_name=APP,
        artifact_service=artifacts,
    )
    session = await runner.create_session(user_id="ann")
    await artifacts.save_artifact(
        app_name=APP,
        user_id="ann",
        session_id=session.id,
        filename="logo.png",
        artifact=Part.from_bytes(b"\x89PNG", "image/png"),
    )
    events = await collect(runner.run(user_id="ann", session_id=session.id, message="logo?"))

    assert "logo.png" in runner_model.requests[0].system_instruction
    (loaded,) = responses(events, "load_artifacts")
    assert loaded.response == {
        "artifacts": [{"name": "logo.png", "mime_type": "image/png", "data": "iVBORw=="}]
    }


# --- AgentTool ----------------------------------------------------------------------------


async def record_finding(finding: str, ctx: ToolContext) -> str:
    """Record a finding in the session state.

    Args:
        finding: What was found.
    """
    ctx.state["finding"] = finding
    return "recorded"


async def read_finding(ctx: ToolContext) -> Any:
    """Read the recorded finding."""
    return ctx.state.get("finding")


def research_setup() -> tuple[Runner, ScriptedModel, ScriptedModel]:
    child_model = ScriptedModel([call("record_finding", finding="42 units"), "There are 42 units."])
    child = LlmAgent(
        "researcher", child_model, description="Looks things up.", tools=[record_finding]
    )
    parent_model = ScriptedModel(
        [
            call("researcher", request="how many units are left?"),
            call("read_finding"),
            "42 units are left.",
        ]
    )
    parent = LlmAgent("lead", parent_model, tools=[AgentTool.wrap(child), read_finding])
    return Runner(parent, app_name=APP), parent_model, child_model


async def test_an_agent_tool_sends_the_request_to_the_child_and_returns_its_final_text() -> None:
    runner, parent_model, child_model = research_setup()
    _, events = await start(runner, "stock check")

    declaration = parent_model.requests[0].declarations["researcher"]
    assert declaration.description == "Looks things up."
    assert declaration.parameters["required"] == ["request"]
    assert child_model.requests[0].contents == [Content.user("how many units are left?")]
    (result,) = responses(events, "researcher")
    assert result.response == {"text": "There are 42 units."}
    assert responses(parent_model.requests[1].contents, "researcher")[0].response == {
        "text": "There are 42 units."
    }
    assert (events[-1].author, events[-1].text) == ("lead", "42 units are left.")


async def test_an_agent_tools_child_events_are_on_a_branch_the_parent_model_never_sees() -> None:
    runner, parent_model, _ = research_setup()
    session_id, events = await start(runner, "stock check")

    stored = (await runner.get_session(user_id="ann", session_id=session_id)).events
    branched = [e for e in stored if e.branch is not None]
    assert {e.branch for e in branched} == {"researcher"}
    assert [e.author for e in branched] == ["user", "researcher", "researcher", "researcher"]
    assert branched[0].text == "how many units are left?"
    assert branched[-1].text == "There are 42 units."
    assert all(e.branch is None for e in stored if e.author == "lead")
    # The child's events are not yielded by the parent's run either.
    assert all(e.branch is None for e in events)

    seen = parent_model.requests[1].contents
    assert [c.role for c in seen] == ["user", "model", "tool"]
    texts = " ".join(c.text for c in seen)
    assert "how many units are left?" not in texts
    assert "There are 42 units." not in texts
    assert responses(seen, "record_finding") == []


async def test_state_written_by_an_agent_tools_child_is_visible_to_the_parent() -> None:
    runner, _, _ = research_setup()
    session_id, events = await start(runner, "stock check")

    assert [r.response for r in responses(events, "read_finding")] == ["42 units"]
    stored = await runner.get_session(user_id="ann", session_id=session_id)
    assert stored.state["finding"] == "42 units"


async def test_an_agent_tool_runs_standalone_outside_any_agent() -> None:
    model = ScriptedModel(["standalone answer"])
    helper = AgentTool.wrap(LlmAgent("helper", model), name="ask_helper")
    assert helper.name == "ask_helper"

    with anyio.fail_after(5):
        result = await helper.run({"request": "hi there"}, ToolContext())

    assert result == {"text": "standalone answer"}
    assert model.requests[0].contents == [Content.user("hi there")]


async def test_an_agent_tool_asks_for_a_non_empty_request() -> None:
    model = ScriptedModel()
    helper = AgentTool.wrap(LlmAgent("helper", model))
    result = await helper.run({"request": ""}, ToolContext())
    assert is_error_result(result)
    assert result["fields"] == {"request": "required"}
    assert model.requests == []


def test_an_agent_inside_a_tree_cannot_be_wrapped_as_a_tool() -> None:
    child = LlmAgent("child", ScriptedModel())
    LlmAgent("parent", ScriptedModel(), sub_agents=[child])
    with pytest.raises(ValueError, match="child"):
        AgentTool.wrap(child)
