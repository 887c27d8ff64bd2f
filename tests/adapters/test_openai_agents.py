"""The openai-agents adapter, judged by openai-agents itself: real ``Runner.run`` turns
with a scripted openai-agents ``Model``, calling the notes API on 127.0.0.1 and the
fixture MCP server; and openai-agents' function tools run by toolsets' own agent loop.

openai-agents' runner needs asyncio (it makes asyncio tasks), so the runner's tests run on
asyncio only; the tools' ``on_invoke_tool`` and the imported tools run on both backends.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from agents import (
    Agent,
    FunctionTool,
    RunConfig,
    RunContextWrapper,
    RunState,
    function_tool,
)
from agents.tool_context import ToolContext as AgentsToolContext

from tests.adapters.fakes import Call, Scripted, run
from tests.adapters.helpers import NOTES_SPEC, NotesApi, everything, notes_api, wipe_disk
from tests.agent.helpers import approve, asked_to_confirm, call, response_of, start
from toolsets import AuthConfig, AuthCredential, Invocation, StaticToolset, ToolContext, tool
from toolsets._errors import ToolDefinitionError
from toolsets._install import install_line
from toolsets._invoke import Callbacks
from toolsets.adapters.openai_agents import (
    OpenAIAgentsTool,
    from_openai_agents,
    to_openai_agents,
)
from toolsets.agent import LlmAgent
from toolsets.agent import Runner as ToolsetsRunner
from toolsets.models import ScriptedModel as ToolsetsScriptedModel
from toolsets.openapi import OpenApiToolset

ASYNCIO = pytest.mark.parametrize("anyio_backend", ["asyncio"])


@pytest.fixture
def api() -> Iterator[NotesApi]:
    with notes_api() as served:
        yield served


def by_name(tools: list[FunctionTool]) -> dict[str, FunctionTool]:
    return {t.name: t for t in tools}


# -- out: a real Runner.run turn ----------------------------------------------------------


@ASYNCIO
async def test_a_runner_turn_calls_a_rest_api_on_localhost_and_an_mcp_tool(
    anyio_backend: str, api: NotesApi
) -> None:
    async with everything(api) as toolset:
        tools = await to_openai_agents(toolset)
        model = Scripted(
            [
                [
                    Call("create_note", {"title": "milk", "body": "2 l"}, "c1"),
                    Call("add", {"a": 2, "b": 3}, "c2"),
                ],
                "Noted; 5.",
            ]
        )
        result = await run(Agent(name="notes", model=model, tools=tools), "go")
    assert result.final_output == "Noted; 5."
    assert api.requests == ["POST /notes"]
    assert model.output("c1") == {"id": 1, "title": "milk", "body": "2 l"}
    assert model.output("c2") == {"total": 5}
    create_note = by_name(tools)["create_note"]
    # OpenAI's strict mode (openai-agents' default): every property required, the
    # optional one nullable.
    assert create_note.strict_json_schema
    assert create_note.params_json_schema["required"] == ["title", "body"]


@ASYNCIO
async def test_in_strict_mode_the_null_sent_for_an_optional_argument_never_reaches_the_api(
    anyio_backend: str, api: NotesApi
) -> None:
    async with everything(api) as toolset:
        tools = await to_openai_agents(toolset)
        model = Scripted([[Call("create_note", {"title": "milk", "body": None}, "c1")], "ok"])
        await run(Agent(name="notes", model=model, tools=tools), "go")
    # The tool refuses null for "body": the null is dropped, as if the model had left it out.
    assert model.output("c1") == {"id": 1, "title": "milk"}
    assert api.notes == {1: {"id": 1, "title": "milk"}}


@ASYNCIO
async def test_a_schema_strict_mode_cannot_express_is_sent_non_strict(anyio_backend: str) -> None:
    @tool
    def tag(labels: dict[str, str]) -> int:
        """Tag with free-form labels."""
        return len(labels)

    (strict_off,) = await to_openai_agents([tag])
    assert not strict_off.strict_json_schema
    assert strict_off.params_json_schema["properties"]["labels"]["additionalProperties"] == {
        "type": "string"
    }
    (plain,) = await to_openai_agents([wipe_disk], strict=False)
    assert not plain.strict_json_schema
    assert plain.params_json_schema["required"] == ["disk"]


@ASYNCIO
async def test_an_mcp_tools_image_reaches_the_model_as_an_image(
    anyio_backend: str, api: NotesApi
) -> None:
    async with everything(api) as toolset:
        model = Scripted([[Call("media", {}, "m1")], "A picture."])
        agent = Agent(name="a", model=model, tools=await to_openai_agents(toolset))
        paused = await run(agent, "go")  # not read-only: MCP's default asks the user
        state = paused.to_state()
        state.approve(paused.interruptions[0])
        await run(agent, state)
    output = model.output("m1")
    images = [part for part in output if part["type"] == "input_image"]
    assert [image["image_url"] for image in images] == ["data:image/png;base64,iVBORw=="]
    texts = [part["text"] for part in output if part["type"] == "input_text"]
    assert texts[0] == "hello"
    assert any("audio/wav" in text for text in texts)


@ASYNCIO
async def test_a_confirmation_gated_call_pauses_and_runs_exactly_once_when_approved(
    anyio_backend: str, api: NotesApi
) -> None:
    api.notes[7] = {"id": 7, "title": "old"}
    async with everything(api) as toolset:
        agent = Agent(
            name="notes",
            model=Scripted([[Call("delete_note", {"note_id": 7}, "d1")], "Deleted."]),
            tools=await to_openai_agents(toolset),
        )
        paused = await run(agent, "delete note 7")
        (item,) = paused.interruptions
        assert (item.tool_name, item.arguments) == ("delete_note", '{"note_id": 7}')
        assert api.requests == []
        # The pause survives a round trip through text, as when the user answers later.
        state = await RunState.from_string(agent, paused.to_state().to_string())
        state.approve(state.get_interruptions()[0])
        result = await run(agent, state)
    assert result.final_output == "Deleted."
    assert api.requests == ["DELETE /notes/7"]
    assert 7 not in api.notes


@ASYNCIO
async def test_a_gated_function_tool_runs_once_when_approved(anyio_backend: str) -> None:
    runs: list[str] = []

    @tool(requires_confirmation=True)
    def erase(disk: str) -> str:
        """Erase a disk."""
        runs.append(disk)
        return f"{disk} erased"

    seen: list[str] = []

    def before(tool_: Any, args: dict[str, Any], ctx: ToolContext) -> None:
        seen.append(f"before {args['disk']}")

    def after(tool_: Any, args: Any, ctx: ToolContext, result: Any) -> None:
        seen.append(f"after {result}")

    model = Scripted([[Call("erase", {"disk": "sda"}, "e1")], "Erased."])
    tools = await to_openai_agents(
        [erase], callbacks=Callbacks(before_tool=[before], after_tool=[after])
    )
    agent = Agent(name="a", model=model, tools=tools)
    paused = await run(agent, "erase sda")
    assert runs == []
    state = paused.to_state()
    state.approve(paused.interruptions[0])
    await run(agent, state)
    assert runs == ["sda"]
    assert model.output("e1") == "sda erased"
    assert seen == ["before sda", "after sda erased"]


@ASYNCIO
async def test_invalid_arguments_come_back_to_the_model_with_the_field_named(
    anyio_backend: str, api: NotesApi
) -> None:
    async with everything(api) as toolset:
        model = Scripted(
            [[Call("create_note", {"title": 5}, "c1"), Call("add", {"a": 1}, "c2")], "Fixing."]
        )
        agent = Agent(name="notes", model=model, tools=await to_openai_agents(toolset))
        await run(agent, "go")
    assert list(model.output("c1")["fields"]) == ["title"]
    assert list(model.output("c2")["fields"]) == ["b"]
    assert api.requests == []


@ASYNCIO
async def test_arguments_that_are_not_json_are_asked_about_then_come_back_as_an_error(
    anyio_backend: str, api: NotesApi
) -> None:
    # openai-agents asks the user about a call whose arguments its approval policy
    # cannot read; once approved, the model is told what is wrong with them.
    async with everything(api) as toolset:
        model = Scripted([[Call("create_note", "{not json", "c3")], "Fixing."])
        agent = Agent(name="notes", model=model, tools=await to_openai_agents(toolset))
        paused = await run(agent, "go")
        state = paused.to_state()
        state.approve(paused.interruptions[0])
        await run(agent, state)
    assert "not valid JSON" in model.output("c3")["error"]
    assert api.requests == []


@ASYNCIO
async def test_a_tool_that_asks_for_confirmation_while_running_is_approved_on_its_next_call(
    anyio_backend: str,
) -> None:
    runs: list[bool] = []

    @tool
    def transfer(amount: int, ctx: ToolContext) -> str:
        """Transfer money; large amounts need the user's approval."""
        confirmed = ctx.tool_confirmation is not None and ctx.tool_confirmation.confirmed
        runs.append(confirmed)
        if amount > 100 and not confirmed:
            ctx.request_confirmation(hint=f"Transfer {amount}?")
            return "waiting"
        return f"sent {amount}"

    model = Scripted(
        [
            [Call("transfer", {"amount": 500}, "t1")],
            [Call("transfer", {"amount": 500}, "t2")],
            "Sent.",
        ]
    )
    agent = Agent(name="bank", model=model, tools=await to_openai_agents([transfer]))
    paused = await run(agent, "send 500")
    refused = model.output("t1")
    assert refused["approval_needed"] is True
    assert "Transfer 500?" in refused["error"]
    (item,) = paused.interruptions
    assert item.tool_name == "transfer"
    state = paused.to_state()
    state.approve(item)
    await run(agent, state)
    assert model.output("t2") == "sent 500"
    assert runs == [False, True]


SECURED_SPEC: dict[str, Any] = {
    **NOTES_SPEC,
    "components": {"securitySchemes": {"notes_token": {"type": "http", "scheme": "bearer"}}},
    "security": [{"notes_token": []}],
}


@ASYNCIO
async def test_a_call_gets_its_credential_from_the_credentials_option(
    anyio_backend: str, api: NotesApi
) -> None:
    seen: list[Any] = []

    def credentials(run_ctx: AgentsToolContext[Any], config: AuthConfig) -> AuthCredential:
        seen.append((config.scheme_name, run_ctx.context))
        return AuthCredential.bearer(run_ctx.context["token"])

    async with OpenApiToolset(SECURED_SPEC, base_url=api.url) as toolset:
        model = Scripted([[Call("list_notes", {}, "l1")], "Here."])
        tools = await to_openai_agents(toolset, credentials=credentials)
        agent = Agent(name="notes", model=model, tools=tools)
        await run(agent, "list", context={"token": "t0k"})
    assert api.requests == ["GET /notes"]
    assert model.output("l1") == []
    assert seen == [("notes_token", {"token": "t0k"})]


@ASYNCIO
@pytest.mark.parametrize(
    "given", [AuthCredential.bearer("t0k"), "t0k"], ids=["credential", "string"]
)
async def test_credentials_may_be_given_by_security_scheme_name(
    anyio_backend: str, api: NotesApi, given: AuthCredential | str
) -> None:
    # A string is the token itself, as OpenApiToolset's credentials= takes it.
    credentials = {"notes_token": given}
    async with OpenApiToolset(SECURED_SPEC, base_url=api.url) as toolset:
        model = Scripted([[Call("list_notes", {"limit": 5}, "l1")], "Here."])
        tools = await to_openai_agents(toolset, credentials=credentials)
        await run(Agent(name="notes", model=model, tools=tools), "list")
    assert api.requests == ["GET /notes?limit=5"]
    assert api.authorizations == ["Bearer t0k"]


@ASYNCIO
async def test_credentials_no_call_could_use_are_refused_when_the_tools_are_made(
    anyio_backend: str,
) -> None:
    with pytest.raises(ToolDefinitionError) as refused:
        await to_openai_agents([wipe_disk], credentials={"notes_token": 42})  # type: ignore[dict-item]
    assert refused.value.field == "credentials"


@ASYNCIO
async def test_the_run_becomes_the_tool_context(anyio_backend: str) -> None:
    @tool
    def whoami(ctx: ToolContext) -> dict[str, Any]:
        """Who is calling."""
        ctx.state["calls"] = ctx.state.get("calls", 0) + 1
        return {
            "user": ctx.user_id,
            "session": ctx.session_id,
            "agent": ctx.agent_name,
            "call": ctx.function_call_id,
        }

    state: dict[str, Any] = {}

    def invocation(run_ctx: AgentsToolContext[Any]) -> Invocation:
        return Invocation(user_id=run_ctx.context["user"], session_id="s1", state=state)

    model = Scripted([[Call("whoami", {}, "w1")], "You."])
    tools = await to_openai_agents([whoami], invocation=invocation)
    await run(Agent(name="helper", model=model, tools=tools), "who?", context={"user": "ann"})
    assert model.output("w1") == {"user": "ann", "session": "s1", "agent": None, "call": "w1"}
    assert state == {"calls": 1}

    model = Scripted([[Call("whoami", {}, "w2")], "You."])
    tools = await to_openai_agents([whoami], invocation=Invocation(user_id="bob"))
    config = RunConfig(tracing_disabled=True, group_id="thread-9")
    await run(Agent(name="helper", model=model, tools=tools), "who?", config=config)
    assert model.output("w2") == {
        "user": "bob",
        "session": "thread-9",
        "agent": "helper",
        "call": "w2",
    }


async def test_on_invoke_tool_runs_on_either_event_loop(anyio_backend: str) -> None:
    tools = by_name(await to_openai_agents([wipe_disk, _noop]))
    ctx = AgentsToolContext(context=None, tool_name="_noop", tool_call_id="x", tool_arguments="")
    refused = json.loads(await tools["wipe_disk"].on_invoke_tool(ctx, '{"disk": "sda"}'))
    assert refused["approval_needed"] is True  # not approved: it did not run
    noop = tools["_noop"]
    assert await noop.on_invoke_tool(ctx, '{"x": 1}') == "1"
    assert "x" in json.loads(await noop.on_invoke_tool(ctx, '{"x": "a"}'))["fields"]
    assert "JSON object" in json.loads(await noop.on_invoke_tool(ctx, "[1]"))["error"]
    assert "x" in json.loads(await noop.on_invoke_tool(ctx, ""))["fields"]  # no arguments


@tool
def _noop(x: int) -> int:
    """Return x."""
    return x


# -- in: openai-agents' tools in toolsets' agent loop ---------------------------------------


@function_tool
def multiply(a: int, b: int) -> int:
    """Multiply two numbers."""
    return a * b


@function_tool
async def shout(text: str) -> str:
    """Shout a text."""
    return text.upper()


async def test_openai_agents_tools_run_in_toolsets_agent_loop(anyio_backend: str) -> None:
    toolset = from_openai_agents([multiply, shout])
    runner = ToolsetsRunner(
        LlmAgent(
            "assistant",
            ToolsetsScriptedModel(
                [[call("multiply", a=6, b=7), call("shout", text="hi")], "42 and HI."]
            ),
            tools=[toolset],
        )
    )
    _, events = await start(runner, "go")
    assert response_of(events, "multiply") == 42
    assert response_of(events, "shout") == "HI"
    assert events[-1].text == "42 and HI."


async def test_invalid_arguments_to_an_imported_tool_name_the_field(anyio_backend: str) -> None:
    runner = ToolsetsRunner(
        LlmAgent(
            "assistant",
            ToolsetsScriptedModel([call("multiply", a=6, b="x"), "Oops."]),
            tools=[from_openai_agents(multiply)],
        )
    )
    _, events = await start(runner, "go")
    result = response_of(events, "multiply")
    assert isinstance(result, dict)
    assert list(result["fields"]) == ["b"]


async def test_an_imported_tool_needing_approval_pauses_and_runs_once_approved(
    anyio_backend: str,
) -> None:
    runs: list[int] = []

    async def big(run_ctx: Any, params: dict[str, Any], call_id: str) -> bool:
        return bool(params["amount"] > 100)

    @function_tool(needs_approval=big)
    async def pay(amount: int) -> str:
        """Pay an amount."""
        runs.append(amount)
        return f"paid {amount}"

    @function_tool(needs_approval=True)
    async def reboot() -> str:
        """Reboot."""
        return "rebooting"

    toolset = from_openai_agents([pay, reboot])
    tools = {t.name: t for t in await toolset.list_tools()}
    assert tools["reboot"].requires_confirmation({}) is True
    runner = ToolsetsRunner(
        LlmAgent(
            "assistant",
            ToolsetsScriptedModel([call("pay", amount=5), call("pay", amount=500), "Paid."]),
            tools=[toolset],
        )
    )
    session_id, events = await start(runner, "pay")
    assert runs == [5]
    request = asked_to_confirm(events)
    assert request.tool_name == "pay"
    events = await approve(runner, session_id, request)
    assert runs == [5, 500]
    assert response_of(events, "pay") == "paid 500"


async def test_an_imported_tool_sees_the_run_context_object_and_the_call_id(
    anyio_backend: str,
) -> None:
    @function_tool
    async def whoami(run_ctx: RunContextWrapper[dict[str, str]]) -> str:
        """Who is calling."""
        assert isinstance(run_ctx, AgentsToolContext)
        return f"{run_ctx.context['user']} in {run_ctx.tool_call_id}"

    toolset = from_openai_agents([whoami], context=lambda ctx: {"user": ctx.user_id})
    runner = ToolsetsRunner(
        LlmAgent("assistant", ToolsetsScriptedModel([call("whoami"), "Ann."]), tools=[toolset])
    )
    _, events = await start(runner, "who?", user_id="ann")
    (request,) = [c for e in events for c in e.function_calls]
    assert response_of(events, "whoami") == f"ann in {request.id}"


def test_what_is_not_an_openai_agents_function_tool_is_refused() -> None:
    with pytest.raises(ToolDefinitionError) as caught:
        from_openai_agents([multiply, "multiply"])  # type: ignore[list-item]
    assert caught.value.field == "tools"


def test_an_imported_tool_disabled_outright_is_left_out() -> None:
    disabled = function_tool(lambda: "x", name_override="off", is_enabled=False)
    toolset = from_openai_agents([multiply, disabled])
    assert isinstance(toolset, StaticToolset)
    assert isinstance(anyio.run(toolset.list_tools)[0], OpenAIAgentsTool)
    assert [t.name for t in anyio.run(toolset.list_tools)] == ["multiply"]


def test_without_openai_agents_the_import_names_the_extra() -> None:
    code = (
        "import sys; sys.modules['agents'] = None\n"
        "try:\n"
        "    import toolsets.adapters.openai_agents\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert install_line("openai-agents") in out.stdout  # toolsets-ai is not on PyPI
