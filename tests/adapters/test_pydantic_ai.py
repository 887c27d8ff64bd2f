"""toolsets.adapters.pydantic_ai: toolsets' tools in a real pydantic-ai ``Agent`` run by
pydantic-ai's own ``FunctionModel`` (scripted tool calls), against the notes API on
127.0.0.1 and the fixture MCP server; and pydantic-ai's tools in toolsets' agent loop.

pydantic-ai's ``Agent`` runs on asyncio only (on trio its run fails: "no running event
loop"), so the agent turns run on asyncio; pydantic-ai's tools in our loop run on both.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
import pydantic
import pytest
from pydantic_ai import (
    Agent,
    ApprovalRequired,
    CallDeferred,
    DeferredToolRequests,
    DeferredToolResults,
    FunctionToolset,
    ModelRetry,
    RunContext,
    ToolFailed,
    UnexpectedModelBehavior,
)
from pydantic_ai.messages import (
    BinaryContent,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import ToolsetTool, WrapperToolset

from tests.adapters.fakes import Turn, calling, returned, scripted
from tests.adapters.helpers import NotesApi, everything, notes_api, wipe_disk
from tests.agent.helpers import (
    approve,
    asked_to_confirm,
    call,
    response_of,
    responses,
    start,
)
from tests.mcp.helpers import stdio_toolset
from toolsets import (
    AuthConfig,
    AuthCredential,
    Invocation,
    StaticToolset,
    ToolContext,
    ToolDefinitionError,
    tool,
)
from toolsets._install import install_line
from toolsets._invoke import Callbacks, Done, invoke
from toolsets.adapters.pydantic_ai import PydanticAIToolset, from_pydantic_ai
from toolsets.agent import LlmAgent, LongRunningRequest, Runner
from toolsets.models import ScriptedModel

pytestmark = pytest.mark.anyio

asyncio_only = pytest.mark.parametrize("anyio_backend", ["asyncio"])
"""pydantic-ai's Agent does not run on trio."""

RUN_TIMEOUT = 30.0


def retries(messages: Sequence[ModelMessage]) -> list[ToolReturnPart]:
    """The calls the model was asked to retry (pydantic-ai's ``ModelRetry``: a return
    whose outcome is ``"retried"``, formerly a ``RetryPromptPart``)."""
    return [
        part
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart) and part.outcome == "retried"
    ]


async def approved(toolset: Any, turn: Turn, call_id: str) -> list[ModelMessage]:
    """The messages of a run whose one call pauses for approval, resumed with the user's
    yes to ``call_id``."""
    model, _ = scripted(turn, "Done.")
    agent = Agent(model, toolsets=[toolset], output_type=[str, DeferredToolRequests])
    with anyio.fail_after(RUN_TIMEOUT):
        paused = await agent.run("go")
        resumed = await agent.run(
            message_history=paused.all_messages(),
            deferred_tool_results=DeferredToolResults(approvals={call_id: True}),
        )
    return resumed.new_messages()


@pytest.fixture
def api() -> Iterator[NotesApi]:
    with notes_api() as running:
        yield running


@pytest.fixture
async def notes_and_mcp(api: NotesApi) -> AsyncIterator[PydanticAIToolset[Any]]:
    toolset = PydanticAIToolset(everything(api))
    async with toolset:
        yield toolset


@asyncio_only
async def test_an_agent_calls_an_openapi_tool_on_the_real_api_and_an_mcp_tool(
    api: NotesApi, notes_and_mcp: PydanticAIToolset[Any]
) -> None:
    model, _ = scripted(
        [
            ToolCallPart("create_note", {"title": "milk"}, tool_call_id="note"),
            ToolCallPart("add", {"a": 2, "b": 3}, tool_call_id="sum"),
        ],
        "Noted, and 2 + 3 = 5.",
    )
    agent = Agent(model, toolsets=[notes_and_mcp])
    with anyio.fail_after(RUN_TIMEOUT):
        result = await agent.run("note milk, and add 2 and 3")
    answers = returned(result.all_messages())
    assert answers["note"] == {"id": 1, "title": "milk"}
    assert "5" in str(answers["sum"])
    assert api.requests == ["POST /notes"]
    assert result.output == "Noted, and 2 + 3 = 5."


@asyncio_only
async def test_the_model_sees_each_tool_with_its_description_and_schema(api: NotesApi) -> None:
    seen: dict[str, Any] = {}

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.update({t.name: t for t in info.function_tools})
        return ModelResponse(parts=[TextPart("ok")])

    agent = Agent(FunctionModel(respond), toolsets=[PydanticAIToolset(everything(api))])
    with anyio.fail_after(RUN_TIMEOUT):
        await agent.run("hi")
    note = seen["create_note"]
    assert note.description == "Create a note"
    assert note.parameters_json_schema["required"] == ["title"]
    assert seen["add"].metadata == {"annotations": {"read_only": True}}
    assert not seen["add"].sequential  # read-only: may run beside other calls
    assert seen["wipe_disk"].sequential
    assert "disk" in seen["wipe_disk"].parameters_json_schema["properties"]


@asyncio_only
async def test_invalid_arguments_come_back_to_the_model_naming_the_field(
    api: NotesApi, notes_and_mcp: PydanticAIToolset[Any]
) -> None:
    model, _ = scripted(
        calling("create_note", "bad", title=""),
        calling("create_note", "good", title="milk"),
        "done",
    )
    agent = Agent(model, toolsets=[notes_and_mcp])
    with anyio.fail_after(RUN_TIMEOUT):
        result = await agent.run("note milk")
    (retry,) = retries(result.all_messages())
    assert retry.tool_call_id == "bad"
    assert retry.content == (
        "Invalid arguments: title (see fields). Fix them and call the tool again.\n"
        "- title: '' should be non-empty"
    )
    assert api.requests == ["POST /notes"]  # the invalid call never reached the API


@asyncio_only
async def test_a_model_that_keeps_sending_invalid_arguments_runs_out_of_retries(
    api: NotesApi,
) -> None:
    model, _ = scripted(*(calling("create_note", f"c{i}", title="") for i in range(3)))
    agent = Agent(model, toolsets=[PydanticAIToolset(everything(api), max_retries=1)])
    with anyio.fail_after(RUN_TIMEOUT), pytest.raises(UnexpectedModelBehavior):
        await agent.run("note nothing")
    assert api.requests == []


@asyncio_only
async def test_a_gated_call_pauses_and_runs_once_when_approved(
    api: NotesApi, notes_and_mcp: PydanticAIToolset[Any]
) -> None:
    api.notes[1] = {"id": 1, "title": "old"}
    model, _ = scripted(calling("delete_note", "del", note_id=1), "Deleted.")
    agent = Agent(model, toolsets=[notes_and_mcp], output_type=[str, DeferredToolRequests])
    with anyio.fail_after(RUN_TIMEOUT):
        paused = await agent.run("delete note 1")
    requests = paused.output
    assert isinstance(requests, DeferredToolRequests)
    assert [c.tool_call_id for c in requests.approvals] == ["del"]
    assert "DELETE /notes/{note_id}" in requests.metadata["del"]["hint"]
    assert api.requests == []  # nothing sent before the user's answer

    with anyio.fail_after(RUN_TIMEOUT):
        resumed = await agent.run(
            message_history=paused.all_messages(),
            deferred_tool_results=DeferredToolResults(approvals={"del": True}),
        )
    assert resumed.output == "Deleted."
    assert api.requests == ["DELETE /notes/1"]
    assert 1 not in api.notes


@asyncio_only
async def test_a_gated_function_tool_and_a_destructive_mcp_tool_both_pause(
    api: NotesApi, notes_and_mcp: PydanticAIToolset[Any]
) -> None:
    model, _ = scripted(
        [
            ToolCallPart("wipe_disk", {"disk": "sda"}, tool_call_id="wipe"),
            ToolCallPart("delete_file", {"path": "/tmp/x"}, tool_call_id="rm"),
        ],
        "Both done.",
    )
    agent = Agent(model, toolsets=[notes_and_mcp], output_type=[str, DeferredToolRequests])
    with anyio.fail_after(RUN_TIMEOUT):
        paused = await agent.run("wipe sda and remove /tmp/x")
        requests = paused.output
        assert isinstance(requests, DeferredToolRequests)
        assert {c.tool_call_id for c in requests.approvals} == {"wipe", "rm"}
        resumed = await agent.run(
            message_history=paused.all_messages(),
            deferred_tool_results=requests.build_results(approve_all=True),
        )
    answers = returned(resumed.new_messages())
    assert answers["wipe"] == "sda wiped"
    assert "/tmp/x" in str(answers["rm"])


@asyncio_only
async def test_runs_inside_one_agent_context_share_one_mcp_session() -> None:
    toolset = PydanticAIToolset(stdio_toolset(confirm="never"))
    model, _ = scripted(calling("pid", "p1"), "one", calling("pid", "p2"), "two")
    agent = Agent(model, toolsets=[toolset])
    with anyio.fail_after(RUN_TIMEOUT):
        async with agent:
            first = await agent.run("pid")
            second = await agent.run("pid again")
    pids = returned(first.all_messages())["p1"], returned(second.all_messages())["p2"]
    assert pids[0] == pids[1]
    with pytest.raises(RuntimeError, match="more often"):
        await toolset.__aexit__(None, None, None)


PROVIDER_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
"""A tool name OpenAI, Anthropic and Gemini all accept."""


@tool(name="files.delete")
def delete_files(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


@tool(name="notes/list")
def list_notes() -> list[str]:
    """The notes."""
    return ["milk"]


@tool(name="a_tool_whose_name_is_far_too_long_for_any_provider_to_accept_it_at_all")
def long_named() -> str:
    """A tool with a long name."""
    return "long"


@asyncio_only
async def test_dotted_slashed_and_long_tool_names_reach_the_model_legal_and_are_called() -> None:
    offered: list[ToolDefinition] = []

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if not offered:
            offered.extend(info.function_tools)
            return ModelResponse(
                parts=[
                    ToolCallPart(
                        t.name,
                        {"path": "/tmp/a"} if "delete" in t.name else {},
                        tool_call_id=f"c{i}",
                    )
                    for i, t in enumerate(offered)
                ]
            )
        return ModelResponse(parts=[TextPart("done")])

    toolset = PydanticAIToolset([delete_files, list_notes, long_named])
    with anyio.fail_after(RUN_TIMEOUT):
        result = await Agent(FunctionModel(respond), toolsets=[toolset]).run("tidy up")
    names = [t.name for t in offered]
    assert all(PROVIDER_NAME.match(name) for name in names), names
    assert names[:2] == ["files_delete", "notes_list"]
    assert returned(result.all_messages()) == {
        "c0": "deleted /tmp/a",
        "c1": ["milk"],
        "c2": "long",
    }


@asyncio_only
async def test_a_toolset_you_open_yourself_keeps_its_session_across_runs_with_close_false() -> None:
    mcp = stdio_toolset(confirm="never")

    async def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart("pid", {}, tool_call_id="p")])
        return ModelResponse(parts=[TextPart("done")])

    agent = Agent(FunctionModel(respond), toolsets=[PydanticAIToolset(mcp, close=False)])
    with anyio.fail_after(RUN_TIMEOUT):
        async with mcp:
            runs = [await agent.run("which pid?") for _ in range(2)]
            pids = {str(returned(run.all_messages())["p"]) for run in runs}
            assert len(pids) == 1  # one session, never closed between runs
            (pid,) = (int(re.findall(r"\d+", p)[0]) for p in pids)
            os.kill(pid, 0)  # still running while the toolset is open
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


@asyncio_only
async def test_two_overlapping_runs_share_one_mcp_session_which_closes_after_both() -> None:
    toolset = PydanticAIToolset(stdio_toolset(confirm="never"))
    started, first_done = anyio.Event(), anyio.Event()
    inside = 0

    async def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        nonlocal inside
        run = str(messages[0].parts[0].content)  # type: ignore[union-attr]
        if len(messages) == 1:  # each run's first step: both runs are in before any call
            inside += 1
            if inside == 2:
                started.set()
            await started.wait()
            return ModelResponse(parts=[ToolCallPart("pid", {}, tool_call_id=run)])
        if run == "second":  # the run that entered last leaves last
            await first_done.wait()
        return ModelResponse(parts=[TextPart(run)])

    agent = Agent(FunctionModel(respond), toolsets=[toolset])
    results: dict[str, Any] = {}

    async def run(prompt: str) -> None:
        results[prompt] = await agent.run(prompt)
        if prompt == "first":
            first_done.set()

    with anyio.fail_after(RUN_TIMEOUT):
        async with anyio.create_task_group() as group:
            group.start_soon(run, "first")
            group.start_soon(run, "second")
    pids = {
        prompt: int(re.findall(r"\d+", str(returned(result.all_messages())[prompt]))[0])
        for prompt, result in results.items()
    }
    assert [results[p].output for p in ("first", "second")] == ["first", "second"]
    assert pids["first"] == pids["second"]  # one session for both
    with pytest.raises(ProcessLookupError):  # closed after both: the server has exited
        os.kill(pids["first"], 0)


@tool
def count(ctx: ToolContext) -> int:
    """Count the calls of this run."""
    ctx.state["n"] = ctx.state.get("n", 0) + 1
    return int(ctx.state["n"])


@asyncio_only
async def test_interleaved_runs_each_keep_their_own_state() -> None:
    at_second_step = 0
    both_there = anyio.Event()

    async def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        nonlocal at_second_step
        run = str(messages[0].parts[0].content)  # type: ignore[union-attr]
        step = len(messages) // 2 + 1
        if step == 2:  # both runs called once before either calls again
            at_second_step += 1
            if at_second_step == 2:
                both_there.set()
            await both_there.wait()
        if step < 3:
            return ModelResponse(parts=[ToolCallPart("count", {}, tool_call_id=f"{run}{step}")])
        return ModelResponse(parts=[TextPart(run)])

    agent = Agent(FunctionModel(respond), toolsets=[PydanticAIToolset([count])])
    answers: dict[str, Any] = {}

    async def run(prompt: str) -> None:
        answers.update(returned((await agent.run(prompt)).all_messages()))

    with anyio.fail_after(RUN_TIMEOUT):
        async with anyio.create_task_group() as group:
            group.start_soon(run, "a")
            group.start_soon(run, "b")
    assert answers == {"a1": 1, "a2": 2, "b1": 1, "b2": 2}


@asyncio_only
async def test_pydantic_ai_wrappers_over_the_adapter_call_the_same_tools() -> None:
    toolset = PydanticAIToolset([wipe_disk]).prefixed("fs").approval_required()
    messages = await approved(toolset, calling("fs_wipe_disk", "w", disk="sdb"), "w")
    assert returned(messages)["w"] == "sdb wiped"


class Rebuilt(WrapperToolset[Any]):
    """A wrapper that rebuilds each tool from its definition, as durable execution does."""

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        tools = await super().get_tools(ctx)
        return {
            name: ToolsetTool(
                toolset=self,
                tool_def=listed.tool_def,
                max_retries=listed.max_retries,
                args_validator=listed.args_validator,
            )
            for name, listed in tools.items()
        }


@asyncio_only
async def test_a_tool_rebuilt_from_its_definition_is_still_called() -> None:
    model, _ = scripted(calling("remember", "r", city="Rome"), "ok")
    agent = Agent(model, toolsets=[Rebuilt(PydanticAIToolset([remember]))])
    with anyio.fail_after(RUN_TIMEOUT):
        result = await agent.run("Rome")
    assert returned(result.all_messages())["r"] == "user lives in Rome (call r)"


@asyncio_only
async def test_callbacks_run_around_a_call_and_before_tool_once_for_an_approved_one() -> None:
    before: list[dict[str, Any]] = []

    def rewrite(tool_: Any, args: dict[str, Any], ctx: ToolContext) -> None:
        before.append(dict(args))
        args["disk"] = "sdz"

    def tag(tool_: Any, args: Any, ctx: ToolContext, result: Any) -> Any:
        return f"{result} (checked)"

    callbacks = Callbacks(before_tool=[rewrite], after_tool=[tag])
    toolset = PydanticAIToolset([wipe_disk], callbacks=callbacks)
    messages = await approved(toolset, calling("wipe_disk", "w", disk="sda"), "w")
    assert returned(messages)["w"] == "sdz wiped (checked)"
    assert before == [{"disk": "sda"}]


@tool
def transfer(amount: int, ctx: ToolContext) -> str:
    """Send money."""
    answer = ctx.tool_confirmation
    if answer is None:
        ctx.request_confirmation(hint=f"Send {amount}?", payload={"limit": 100})
        return "waiting"
    return f"sent {amount} ({answer.payload})"


@asyncio_only
async def test_a_tool_asking_while_running_gets_the_answer_and_its_metadata() -> None:
    model, _ = scripted(calling("transfer", "t", amount=5), "Sent.")
    toolset = PydanticAIToolset([transfer])
    agent = Agent(model, toolsets=[toolset], output_type=[str, DeferredToolRequests])
    with anyio.fail_after(RUN_TIMEOUT):
        paused = await agent.run("send 5")
        requests = paused.output
        assert isinstance(requests, DeferredToolRequests)
        assert requests.metadata["t"] == {"hint": "Send 5?", "payload": {"limit": 100}}
        resumed = await agent.run(
            message_history=paused.all_messages(),
            deferred_tool_results=DeferredToolResults(
                approvals={"t": True}, metadata={"t": {"limit": 10}}
            ),
        )
    assert returned(resumed.new_messages())["t"] == "sent 5 ({'limit': 10})"


@asyncio_only
async def test_an_mcp_tools_images_and_audio_reach_the_model_as_binary_content() -> None:
    toolset = PydanticAIToolset(stdio_toolset(confirm="never"))
    model, seen = scripted(calling("media", "m"), "ok")
    with anyio.fail_after(RUN_TIMEOUT):
        async with toolset:
            await Agent(model, toolsets=[toolset]).run("media")
    shown = [
        part
        for message in seen[-1]
        if isinstance(message, ModelRequest)
        for part in message.parts
        for part in (part.content if isinstance(part.content, list) else [part.content])
    ]
    media = [p for p in shown if isinstance(p, BinaryContent)]
    assert [(m.media_type, m.data) for m in media] == [
        ("image/png", b"\x89PNG"),
        ("audio/wav", b"RIFF"),
    ]
    assert "hello" in shown


# --- context, credentials, long-running ------------------------------------------------------


@dataclass
class Deps:
    user: str
    state: dict[str, Any] = field(default_factory=dict)


def from_deps(ctx: RunContext[Deps]) -> Invocation:
    return Invocation(user_id=ctx.deps.user, state=ctx.deps.state)


@tool
def remember(city: str, ctx: ToolContext) -> str:
    """Remember the user's city."""
    ctx.state["city"] = city
    return f"{ctx.user_id} lives in {city} (call {ctx.function_call_id})"


@asyncio_only
async def test_the_context_hook_gives_the_tool_its_user_and_state_and_keeps_its_writes() -> None:
    deps = Deps(user="ada")
    model, _ = scripted(calling("remember", "r1", city="Paris"), "ok")
    toolset = PydanticAIToolset[Deps]([remember], context=from_deps)
    agent = Agent(model, deps_type=Deps, toolsets=[toolset])
    with anyio.fail_after(RUN_TIMEOUT):
        result = await agent.run("I live in Paris", deps=deps)
    assert returned(result.all_messages())["r1"] == "ada lives in Paris (call r1)"
    assert deps.state == {"city": "Paris"}


API_KEY = AuthConfig(scheme_name="weather_key", scheme={"type": "apiKey", "in": "header"})


@tool(auth_config=API_KEY)
def forecast(city: str, ctx: ToolContext) -> str:
    """The weather in a city."""
    credential = ctx.auth_credential
    assert credential is not None
    return f"sunny in {city} (key of {len(credential.secret)} characters)"


@asyncio_only
async def test_a_missing_credential_defers_the_call_until_the_user_gives_one() -> None:
    asked: list[str] = []

    async def lookup(ctx: RunContext[Any], config: AuthConfig) -> AuthCredential | None:
        asked.append(config.scheme_name)
        return None

    model, _ = scripted(calling("forecast", "f", city="Oslo"), "It is sunny.")
    toolset = PydanticAIToolset([forecast], credentials=lookup)
    agent = Agent(model, toolsets=[toolset], output_type=[str, DeferredToolRequests])
    with anyio.fail_after(RUN_TIMEOUT):
        paused = await agent.run("weather?")
    requests = paused.output
    assert isinstance(requests, DeferredToolRequests)
    (deferred,) = requests.calls
    assert requests.metadata["f"]["auth_config"]["scheme_name"] == "weather_key"
    assert asked == ["weather_key"]

    answer = await toolset.call_with_credential(deferred, AuthCredential.api_key("secret"))
    assert answer == "sunny in Oslo (key of 6 characters)"
    with anyio.fail_after(RUN_TIMEOUT):
        resumed = await agent.run(
            message_history=paused.all_messages(),
            deferred_tool_results=DeferredToolResults(calls={"f": answer}),
        )
    assert resumed.output == "It is sunny."


@asyncio_only
async def test_a_string_credential_is_the_schemes_kind_and_a_sync_lookup_runs_off_the_loop() -> (
    None
):
    loop_thread = threading.get_ident()
    threads: list[int] = []

    def lookup(ctx: RunContext[Any], config: AuthConfig) -> str:
        threads.append(threading.get_ident())
        return "s3cret"

    model, _ = scripted(calling("forecast", "f", city="Oslo"), "ok")
    other_model, _ = scripted(calling("forecast", "g", city="Rome"), "ok")
    strings = PydanticAIToolset([forecast], credentials={"weather_key": "k3y"})
    by_function = PydanticAIToolset([forecast], credentials=lookup)
    with anyio.fail_after(RUN_TIMEOUT):
        result = await Agent(model, toolsets=[strings]).run("weather?")
        other = await Agent(other_model, toolsets=[by_function]).run("weather?")
    assert returned(result.all_messages())["f"] == "sunny in Oslo (key of 3 characters)"
    assert returned(other.all_messages())["g"] == "sunny in Rome (key of 6 characters)"
    assert threads
    assert loop_thread not in threads  # a blocking lookup never stops the loop


def test_credentials_no_call_could_use_are_refused_when_the_adapter_is_made() -> None:
    with pytest.raises(ToolDefinitionError) as raised:
        PydanticAIToolset([forecast], credentials={"weather_key": 3})  # type: ignore[dict-item]
    assert raised.value.field == "credentials"


PAID: list[int] = []


@tool(auth_config=API_KEY, requires_confirmation=True)
def pay(amount: int, ctx: ToolContext) -> str:
    """Pay an amount."""
    PAID.append(amount)
    return f"paid {amount} in {ctx.session_id}"


@asyncio_only
async def test_approved_from_the_client_never_skips_the_users_approval() -> None:
    PAID.clear()
    model, _ = scripted(calling("pay", "p", amount=5))
    toolset = PydanticAIToolset([pay])
    agent = Agent(model, toolsets=[toolset], output_type=[str, DeferredToolRequests])
    with anyio.fail_after(RUN_TIMEOUT):
        paused = await agent.run("pay 5")
        requests = paused.output
        assert isinstance(requests, DeferredToolRequests)
        (asked,) = requests.approvals  # never approved by the user
        key = AuthCredential.api_key("k")
        spoofed = await toolset.call_with_credential(asked, key, approved=True)
        unknown = ToolCallPart("pay", {"amount": 9}, tool_call_id="never-seen")
        made_up = await toolset.call_with_credential(unknown, key, approved=True)
    assert isinstance(spoofed, ToolFailed)
    assert isinstance(made_up, ToolFailed)
    assert PAID == []


@asyncio_only
async def test_a_call_approved_then_deferred_for_a_credential_runs_once_in_its_conversation() -> (
    None
):
    PAID.clear()
    model, _ = scripted(calling("pay", "p", amount=5), "Paid.")
    toolset = PydanticAIToolset([pay])
    agent = Agent(model, toolsets=[toolset], output_type=[str, DeferredToolRequests])
    with anyio.fail_after(RUN_TIMEOUT):
        paused = await agent.run("pay 5")
        deferred = await agent.run(
            message_history=paused.all_messages(),
            deferred_tool_results=DeferredToolResults(approvals={"p": True}),
        )
        requests = deferred.output
        assert isinstance(requests, DeferredToolRequests)
        (call_,) = requests.calls
        assert requests.metadata["p"]["approved"] is True
        key = AuthCredential.api_key("k")
        answer = await toolset.call_with_credential(call_, key, approved=True)
        again = await toolset.call_with_credential(call_, key, approved=True)
    assert answer == f"paid 5 in {deferred.conversation_id}"
    assert isinstance(again, ToolFailed)  # the approval was used up
    assert PAID == [5]


@tool(is_long_running=True)
def start_backup(disk: str) -> dict[str, str]:
    """Start backing a disk up."""
    return {"job": f"backup-{disk}", "status": "started"}


@asyncio_only
async def test_a_long_running_call_pauses_with_its_interim_until_the_result_is_given() -> None:
    model, _ = scripted(calling("start_backup", "b", disk="sda"), "Backed up.")
    agent = Agent(
        model,
        toolsets=[PydanticAIToolset([start_backup])],
        output_type=[str, DeferredToolRequests],
    )
    with anyio.fail_after(RUN_TIMEOUT):
        paused = await agent.run("back sda up")
        requests = paused.output
        assert isinstance(requests, DeferredToolRequests)
        assert requests.metadata["b"] == {
            "long_running": True,
            "interim": {"job": "backup-sda", "status": "started"},
        }
        resumed = await agent.run(
            message_history=paused.all_messages(),
            deferred_tool_results=DeferredToolResults(calls={"b": {"status": "done"}}),
        )
    assert returned(resumed.new_messages())["b"] == {"status": "done"}


# --- in: pydantic-ai's tools in toolsets' agent loop -----------------------------------------


def pydantic_ai_tools() -> FunctionToolset[str]:
    tools = FunctionToolset[str]()

    @tools.tool
    def greet(ctx: RunContext[str], name: str, times: int = 1) -> str:
        """Greet someone.

        Args:
            name: Who.
            times: How often.
        """
        return " ".join([f"{ctx.deps} greets {name}"] * times)

    @tools.tool_plain(requires_approval=True)
    def launch(target: str) -> str:
        """Launch something."""
        return f"launched at {target}"

    return tools


def runner_of(tools: Any, *steps: Any) -> Runner:
    return Runner(LlmAgent("assistant", ScriptedModel(list(steps)), tools=[tools]))


async def test_pydantic_ai_tools_run_in_our_agent_loop_with_their_deps() -> None:
    toolset = from_pydantic_ai(pydantic_ai_tools(), deps=lambda ctx: f"agent of {ctx.user_id}")
    listed = {t.name: t for t in await toolset.list_tools()}
    declaration = listed["greet"].declaration()
    assert declaration is not None
    assert declaration.description.startswith("Greet someone.")
    assert declaration.parameters["required"] == ["name"]

    runner = runner_of(toolset, call("greet", name="Bo", times=2), "Done.")
    _, events = await start(runner, "greet Bo", user_id="ann")
    assert response_of(events, "greet") == "agent of ann greets Bo agent of ann greets Bo"


async def test_invalid_arguments_to_a_pydantic_ai_tool_name_the_field() -> None:
    runner = runner_of(from_pydantic_ai(pydantic_ai_tools()), call("greet", times="x"), "Sorry.")
    _, events = await start(runner, "greet")
    result = response_of(events, "greet")
    assert isinstance(result, dict)
    assert set(result["fields"]) == {"name", "times"}


async def test_a_pydantic_ai_tool_needing_approval_pauses_our_loop_until_approved() -> None:
    runner = runner_of(
        from_pydantic_ai(pydantic_ai_tools()), call("launch", target="moon"), "Gone."
    )
    session_id, events = await start(runner, "launch")
    request = asked_to_confirm(events)
    assert request.tool_name == "launch"
    events = await approve(runner, session_id, request)
    assert response_of(events, "launch") == "launched at moon"


async def test_a_validation_error_inside_a_pydantic_ai_tool_is_its_failure_not_the_models() -> None:
    def parse(text: str) -> int:
        """Read a number from an upstream reply."""
        return pydantic.TypeAdapter(int).validate_python(text)

    (tool_,) = await from_pydantic_ai([parse]).list_tools(ToolContext())
    with anyio.fail_after(RUN_TIMEOUT):
        outcome = await invoke(
            tool_, {"text": "n/a"}, ToolContext(function_call_id="1"), default_timeout=5
        )
    assert isinstance(outcome, Done)
    result = outcome.result
    assert isinstance(result, dict)
    assert "error" in result
    assert "fields" not in result  # the model's arguments were fine


async def test_plain_functions_and_tools_become_a_toolset() -> None:
    def shout(text: str) -> str:
        """Shout."""
        return text.upper()

    toolset = from_pydantic_ai([shout])
    (tool_,) = await toolset.list_tools(ToolContext())
    with anyio.fail_after(RUN_TIMEOUT):
        assert await tool_.run({"text": "hi"}, ToolContext(function_call_id="1")) == "HI"


async def test_a_toolset_wrapped_both_ways_is_the_same_tools() -> None:
    there = PydanticAIToolset(StaticToolset([wipe_disk]))
    back = from_pydantic_ai(there)
    async with back:
        (tool_,) = await back.list_tools()
    assert tool_.name == "wipe_disk"
    assert tool_.description.startswith("Erase every file on a disk.")


async def test_what_a_pydantic_ai_tool_raises_reaches_our_model_or_pauses_our_loop() -> None:
    tools = FunctionToolset[None]()

    @tools.tool
    def pick(ctx: RunContext[None], n: int) -> str:
        """Pick a number."""
        if n < 0:
            raise ModelRetry("n must be positive")
        if n > 10 and not ctx.tool_call_approved:
            raise ApprovalRequired(metadata={"why": "a big number"})
        return f"picked {n}"

    @tools.tool_plain
    def order(item: str) -> str:
        """Order something; it arrives later."""
        raise CallDeferred(metadata={"order": item})

    toolset = from_pydantic_ai(tools)
    steps = [call("pick", n=-1), call("pick", n=11), call("order", item="tea"), "ok"]
    runner = runner_of(toolset, *steps)
    session_id, events = await start(runner, "pick")
    assert responses(events)[0].response == {"error": "n must be positive"}
    request = asked_to_confirm(events)
    assert request.payload == {"why": "a big number"}
    events = await approve(runner, session_id, request)
    assert response_of(events, "pick") == "picked 11"
    (pending,) = events[-1].pending  # the order's result arrives later
    assert isinstance(pending, LongRunningRequest)
    assert pending.interim == {"status": "deferred", "metadata": {"order": "tea"}}


@asyncio_only
async def test_by_default_a_tool_runs_in_the_conversation_and_run_of_pydantic_ai() -> None:
    @tool
    def where(ctx: ToolContext) -> list[str | None]:
        """Where the call runs."""
        return [ctx.session_id, ctx.invocation_id, ctx.agent_name]

    model, _ = scripted(calling("where", "w"), calling("where", "w2"), "ok")
    agent = Agent(model, name="helper", toolsets=[PydanticAIToolset([where])])
    with anyio.fail_after(RUN_TIMEOUT):
        result = await agent.run("where?")
    answers = returned(result.all_messages())
    assert answers["w"] == [result.conversation_id, result.run_id, "helper"]
    assert answers["w2"] == answers["w"]


def test_a_pydantic_ai_toolset_is_not_wrapped_again() -> None:
    with pytest.raises(ToolDefinitionError) as raised:
        PydanticAIToolset(FunctionToolset[None]())  # type: ignore[arg-type]
    assert raised.value.field == "toolset"


# --- the extra --------------------------------------------------------------------------------


def test_without_the_extra_the_import_error_names_the_install_line() -> None:
    code = (
        "import sys; sys.modules['pydantic_ai'] = None\n"
        "try:\n    import toolsets.adapters.pydantic_ai\n"
        "except ImportError as exc:\n    print(exc)\n"
    )
    shown = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert install_line("pydantic-ai") in shown.stdout  # toolsets-ai is not on PyPI
