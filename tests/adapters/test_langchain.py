"""The LangChain adapter, judged by LangChain and LangGraph themselves: a ReAct graph
(``ToolNode`` in a ``StateGraph`` with an ``InMemorySaver``) driven by LangChain's fake
tool-calling chat model calls the notes API on 127.0.0.1 and the fixture MCP server,
pauses on a gated call and resumes, and gets invalid arguments back with the field named.

LangGraph's async path runs on asyncio only (langchain-core puts every async tool call in
an asyncio task), so the tests of ``graph.ainvoke`` are asyncio's; the sync path
(``graph.invoke``) is tested on both backends, with the tools listed on an asyncio or a
trio loop, and so is `ToolsetTool.ainvoke`, which runs on trio through the sync path.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import anyio
import anyio.from_thread
import anyio.lowlevel
import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool as LangChainBaseTool
from langchain_core.tools import StructuredTool
from langchain_core.tools import tool as langchain_tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command

from tests.adapters.helpers import NotesApi, everything, notes_api, wipe_disk
from tests.agent.helpers import call, response_of, start
from tests.mcp.helpers import stdio_toolset
from toolsets import (
    AuthConfig,
    AuthCredential,
    FunctionTool,
    Invocation,
    StaticToolset,
    ToolCallError,
    ToolConfirmation,
    ToolContext,
    tool,
)
from toolsets._install import install_line
from toolsets._invoke import Callbacks
from toolsets._tool import Tool
from toolsets.adapters.langchain import (
    ConfirmationRequest,
    LangChainTool,
    ToolsetTool,
    from_langchain,
    to_langchain,
)
from toolsets.agent import LlmAgent, Runner
from toolsets.models import ScriptedModel

TIMEOUT = 30.0
"""Seconds a test's run may take before it counts as hung (real servers included)."""
ASYNCIO = pytest.mark.parametrize("anyio_backend", ["asyncio"])
"""For tests that use LangChain's async path, which needs asyncio."""


class FakeToolCallingModel(GenericFakeChatModel):
    """LangChain's fake chat model, accepting tools as a tool-calling model does (it
    answers from its script whatever tools it is given)."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> FakeToolCallingModel:
        return self


def model(*turns: AIMessage | str) -> FakeToolCallingModel:
    return FakeToolCallingModel(
        messages=iter(t if isinstance(t, AIMessage) else AIMessage(content=t) for t in turns)
    )


def calls(*made: tuple[str, dict[str, Any]]) -> AIMessage:
    """A model turn calling tools ``(name, args)``, with ids ``call-0``, ``call-1``..."""
    return AIMessage(
        content="",
        tool_calls=[
            {"name": name, "args": args, "id": f"call-{i}", "type": "tool_call"}
            for i, (name, args) in enumerate(made)
        ],
    )


def react_graph(
    chat: FakeToolCallingModel, tools: Sequence[LangChainBaseTool]
) -> CompiledStateGraph:
    """The ReAct loop as LangGraph's prebuilt pieces make it: the model node, a
    ``ToolNode`` and ``tools_condition``, with an in-memory checkpointer (interrupts
    need one)."""
    bound = chat.bind_tools(tools)

    def agent(state: MessagesState) -> dict[str, list[BaseMessage]]:
        return {"messages": [bound.invoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile(checkpointer=InMemorySaver())


def thread(name: str = "t1", **configurable: Any) -> dict[str, Any]:
    return {"configurable": {"thread_id": name, **configurable}}


def tool_messages(result: dict[str, Any]) -> dict[str, ToolMessage]:
    """The graph's tool messages by tool call id."""
    return {m.tool_call_id: m for m in result["messages"] if isinstance(m, ToolMessage)}


def call_of(name: str, /, **args: Any) -> dict[str, Any]:
    """A tool call as LangGraph's ``ToolNode`` passes it to ``ainvoke``."""
    return {"type": "tool_call", "id": "call-0", "name": name, "args": args}


def interrupt_value(result: dict[str, Any]) -> Any:
    (interrupt,) = result["__interrupt__"]
    return interrupt.value


@ASYNCIO
@pytest.mark.anyio
async def test_a_react_graph_calls_an_openapi_tool_and_an_mcp_tool() -> None:
    turns = calls(("create_note", {"title": "milk"}), ("add", {"a": 2, "b": 3}))
    with notes_api() as api, anyio.fail_after(TIMEOUT):
        async with everything(api) as toolset:
            graph = react_graph(model(turns, "Done."), await to_langchain(toolset))
            result = await graph.ainvoke({"messages": [HumanMessage("note milk")]}, thread())
    made = tool_messages(result)
    assert made["call-0"].status == "success"
    assert made["call-0"].artifact == {"id": 1, "title": "milk"}
    assert json.loads(made["call-0"].content) == {"id": 1, "title": "milk"}
    assert made["call-1"].artifact == {"total": 5}
    assert api.requests == ["POST /notes"]
    assert result["messages"][-1].content == "Done."


@ASYNCIO
@pytest.mark.anyio
async def test_invalid_arguments_come_back_to_the_model_with_the_field_named() -> None:
    turns = calls(("list_notes", {"limit": 0}), ("add", {"a": 2}))
    with notes_api() as api, anyio.fail_after(TIMEOUT):
        async with everything(api) as toolset:
            graph = react_graph(model(turns, "Sorry."), await to_langchain(toolset))
            result = await graph.ainvoke({"messages": [HumanMessage("list")]}, thread())
    made = tool_messages(result)
    assert made["call-0"].status == "error"
    assert list(json.loads(made["call-0"].content)["fields"]) == ["limit"]
    assert made["call-1"].status == "error"
    assert list(json.loads(made["call-1"].content)["fields"]) == ["b"]
    assert api.requests == []


async def _interrupted_delete(api: NotesApi) -> tuple[CompiledStateGraph, dict[str, Any]]:
    api.notes[7] = {"id": 7, "title": "old"}
    toolset = everything(api)
    graph = react_graph(
        model(calls(("delete_note", {"note_id": 7})), "Deleted."), await to_langchain(toolset)
    )
    result = await graph.ainvoke({"messages": [HumanMessage("delete 7")]}, thread())
    return graph, result


@pytest.mark.anyio
async def test_ainvoke_calls_openapi_and_mcp_tools_on_either_backend() -> None:
    with notes_api() as api, anyio.fail_after(TIMEOUT):
        async with everything(api) as toolset:
            tools = {t.name: t for t in await to_langchain(toolset)}
            note = await tools["create_note"].ainvoke(call_of("create_note", title="milk"))
            total = await tools["add"].ainvoke(call_of("add", a=2, b=3))
            wrong = await tools["get_note"].ainvoke(call_of("get_note", note_id="one"))
    assert note.artifact == {"id": 1, "title": "milk"}
    assert total.artifact == {"total": 5}
    assert wrong.status == "error"
    assert list(json.loads(wrong.content)["fields"]) == ["note_id"]
    assert api.requests == ["POST /notes"]


@ASYNCIO
@pytest.mark.anyio
async def test_a_gated_call_interrupts_the_graph_and_runs_once_when_approved() -> None:
    with notes_api() as api, anyio.fail_after(TIMEOUT):
        async with everything(api):
            graph, paused = await _interrupted_delete(api)
            asked = interrupt_value(paused)
            assert api.requests == []
            result = await graph.ainvoke(Command(resume=True), thread())
    assert asked["type"] == "confirmation"
    assert (asked["tool"], asked["tool_call_id"], asked["args"]) == (
        "delete_note",
        "call-0",
        {"note_id": 7},
    )
    assert asked["hint"]
    assert api.requests == ["DELETE /notes/7"]
    assert tool_messages(result)["call-0"].status == "success"
    assert result["messages"][-1].content == "Deleted."


@ASYNCIO
@pytest.mark.anyio
async def test_a_resumed_graph_takes_the_call_up_where_it_paused() -> None:
    # LangGraph runs the node again when the graph is resumed: the call must not start
    # over (before_tool again, the tool's first run again, other arguments than approved).
    before: list[dict[str, Any]] = []
    runs: list[ToolConfirmation | None] = []

    def stamp(tool: Tool, args: dict[str, Any], ctx: ToolContext) -> None:
        before.append(dict(args))
        args["path"] = f"/tmp/{len(before)}"  # a rewrite that differs on each run

    @tool
    def remove(path: str, ctx: ToolContext) -> str:
        """Remove a file; asks first, while running."""
        runs.append(ctx.tool_confirmation)
        if ctx.tool_confirmation is None:
            ctx.request_confirmation(hint=f"Remove {path}?")
            return "waiting"
        return f"removed {path}"

    with anyio.fail_after(TIMEOUT):
        tools = await to_langchain([remove], callbacks=Callbacks(before_tool=[stamp]))
        graph = react_graph(model(calls(("remove", {"path": "a"})), "Done."), tools)
        paused = await graph.ainvoke({"messages": [HumanMessage("rm a")]}, thread())
        assert interrupt_value(paused)["args"] == {"path": "/tmp/1"}
        result = await graph.ainvoke(Command(resume=True), thread())
    assert tool_messages(result)["call-0"].content == "removed /tmp/1"
    assert before == [{"path": "a"}]
    assert [r is not None and r.confirmed for r in runs] == [False, True]


@ASYNCIO
@pytest.mark.anyio
async def test_a_gated_call_the_user_denies_never_reaches_the_server() -> None:
    with notes_api() as api, anyio.fail_after(TIMEOUT):
        async with everything(api):
            graph, _ = await _interrupted_delete(api)
            result = await graph.ainvoke(Command(resume={"confirmed": False}), thread())
    answer = tool_messages(result)["call-0"]
    assert answer.status == "error"
    assert "declined" in json.loads(answer.content)["error"]
    assert api.requests == []
    assert 7 in api.notes


@ASYNCIO
@pytest.mark.anyio
async def test_outside_langgraph_the_confirm_callback_decides() -> None:
    asked: list[ConfirmationRequest] = []

    async def confirm(request: ConfirmationRequest) -> bool:
        asked.append(request)
        return request["args"]["disk"] == "sdb"

    (wipe,) = await to_langchain([wipe_disk], confirm=confirm)
    with anyio.fail_after(TIMEOUT):
        denied = await wipe.ainvoke(call_of("wipe_disk", disk="sda"))
        approved = await wipe.ainvoke(call_of("wipe_disk", disk="sdb"))
    assert denied.status == "error"
    assert (approved.status, approved.content) == ("success", "sdb wiped")
    assert [r["args"] for r in asked] == [{"disk": "sda"}, {"disk": "sdb"}]


@ASYNCIO
@pytest.mark.anyio
async def test_a_sync_confirm_callback_may_answer_with_a_tool_confirmation() -> None:
    (wipe,) = await to_langchain([wipe_disk], confirm=lambda r: ToolConfirmation(confirmed=True))
    with anyio.fail_after(TIMEOUT):
        answer = await wipe.ainvoke(call_of("wipe_disk", disk="sda"))
    assert answer.content == "sda wiped"


@ASYNCIO
@pytest.mark.anyio
async def test_an_answer_that_is_no_confirmation_is_an_error_naming_the_tool() -> None:
    (wipe,) = await to_langchain([wipe_disk], confirm=lambda r: "yes")  # type: ignore[arg-type,return-value]
    with anyio.fail_after(TIMEOUT), pytest.raises(ToolCallError) as raised:
        await wipe.ainvoke(call_of("wipe_disk", disk="sda"))
    assert raised.value.tool_name == "wipe_disk"


NOTES_KEY = AuthConfig(scheme_name="notes_key", scheme={"type": "apiKey", "in": "header"})


@tool(auth_config=NOTES_KEY)
def read_private(ctx: ToolContext) -> str:
    """Read the private notes."""
    assert ctx.auth_credential is not None
    return f"read with a {ctx.auth_credential.kind}"


@ASYNCIO
@pytest.mark.anyio
async def test_the_credentials_option_gives_a_call_its_credential() -> None:
    (by_name,) = await to_langchain(
        [read_private], credentials={"notes_key": AuthCredential.api_key("k")}
    )

    async def by_scheme(config: AuthConfig) -> AuthCredential:
        return AuthCredential.bearer(config.scheme_name)

    (by_function,) = await to_langchain([read_private], credentials=by_scheme)
    with anyio.fail_after(TIMEOUT):
        first = await by_name.ainvoke(call_of("read_private"))
        second = await by_function.ainvoke(call_of("read_private"))
    assert first.content == "read with a api_key"
    assert second.content == "read with a bearer"


@ASYNCIO
@pytest.mark.anyio
async def test_in_a_graph_a_missing_credential_interrupts_and_the_answer_is_used() -> None:
    tools = await to_langchain([read_private])
    graph = react_graph(model(calls(("read_private", {})), "Read."), tools)
    with anyio.fail_after(TIMEOUT):
        paused = await graph.ainvoke({"messages": [HumanMessage("read")]}, thread())
        result = await graph.ainvoke(
            Command(resume={"kind": "bearer", "secret": "s3cret"}), thread()
        )
    asked = interrupt_value(paused)
    assert (asked["type"], asked["scheme_name"]) == ("credential", "notes_key")
    assert tool_messages(result)["call-0"].content == "read with a bearer"


@ASYNCIO
@pytest.mark.anyio
async def test_an_answer_that_is_no_credential_fails_the_run_naming_the_tool() -> None:
    graph = react_graph(
        model(calls(("read_private", {})), "Read."), await to_langchain([read_private])
    )
    with anyio.fail_after(TIMEOUT):
        await graph.ainvoke({"messages": [HumanMessage("read")]}, thread())
        with pytest.raises(ToolCallError) as raised:
            await graph.ainvoke(Command(resume={"kind": "bearer"}), thread())
    assert raised.value.tool_name == "read_private"


@tool(requires_confirmation=True, auth_config=NOTES_KEY)
def wipe_private(ctx: ToolContext) -> str:
    """Erase the private notes."""
    assert ctx.auth_credential is not None
    return "private notes wiped"


@ASYNCIO
@pytest.mark.anyio
async def test_a_graph_resumed_twice_keeps_the_answer_it_was_given_first() -> None:
    graph = react_graph(
        model(calls(("wipe_private", {})), "Wiped."), await to_langchain([wipe_private])
    )
    with anyio.fail_after(TIMEOUT):
        confirming = await graph.ainvoke({"messages": [HumanMessage("wipe")]}, thread())
        crediting = await graph.ainvoke(Command(resume=True), thread())
        result = await graph.ainvoke(Command(resume={"kind": "api_key", "secret": "k3y"}), thread())
    assert interrupt_value(confirming)["type"] == "confirmation"
    assert interrupt_value(crediting)["type"] == "credential"
    assert "__interrupt__" not in result  # the approval was not asked again
    assert tool_messages(result)["call-0"].content == "private notes wiped"


@pytest.mark.anyio
async def test_an_mcp_tools_image_and_audio_reach_the_model_as_image_and_file_blocks() -> None:
    async with stdio_toolset(confirm="never") as toolset:
        (media,) = [made for made in await to_langchain(toolset) if made.name == "media"]
        with anyio.fail_after(TIMEOUT):
            message = await media.ainvoke(call_of("media"))
    assert message.content[:3] == [
        {"type": "text", "text": "hello"},
        {"type": "image", "base64": "iVBORw==", "mime_type": "image/png"},
        {"type": "file", "base64": "UklGRg==", "mime_type": "audio/wav"},
    ]
    assert {block["type"] for block in message.content[3:]} == {"text"}  # resources, as JSON
    assert message.artifact["content"][1]["type"] == "image"  # the raw result


@tool
def whoami(ctx: ToolContext) -> dict[str, Any]:
    """Who is calling, in which session."""
    return {"user": ctx.user_id, "session": ctx.session_id, "call": ctx.function_call_id}


@pytest.mark.anyio
async def test_the_thread_the_user_and_the_call_id_reach_the_tool_context() -> None:
    (who,) = await to_langchain([whoami], invocation=Invocation(user_id="nobody"))
    with anyio.fail_after(TIMEOUT):
        configured = await who.ainvoke(call_of("whoami"), thread("t9", user_id="ada"))
        plain = await who.ainvoke(call_of("whoami"))
    assert configured.artifact == {"user": "ada", "session": "t9", "call": "call-0"}
    assert plain.artifact["user"] == "nobody"


@pytest.mark.anyio
async def test_names_are_made_legal_for_the_providers_and_the_schema_is_the_tools() -> None:
    dotted = FunctionTool(lambda q: q, name="notes.search", description="Search the notes.")
    (made,) = await to_langchain(StaticToolset([dotted]))
    declared = convert_to_openai_tool(made)["function"]
    assert isinstance(made, ToolsetTool)
    assert made.tool is dotted
    assert declared["name"] == "notes_search"
    assert declared["description"] == "Search the notes."
    assert declared["parameters"] == dict(dotted.parameters)


@pytest.mark.anyio
async def test_a_sync_call_on_the_running_loop_is_refused_instead_of_blocking_it() -> None:
    (who,) = await to_langchain([whoami])
    with pytest.raises(ToolCallError) as raised:
        who.invoke(call_of("whoami"))
    assert raised.value.tool_name == "whoami"


@pytest.mark.anyio
async def test_a_sync_call_from_a_worker_thread_runs_on_the_loop() -> None:
    (who,) = await to_langchain([whoami])
    with anyio.fail_after(TIMEOUT):
        answer = await anyio.to_thread.run_sync(who.invoke, call_of("whoami"))
    assert answer.artifact["call"] == "call-0"


@contextmanager
def tools_on_a_loop(backend: str, api: NotesApi) -> Iterator[list[ToolsetTool]]:
    """``everything``'s tools listed on an event loop of ``backend`` in its own thread,
    open until the block ends, for sync LangChain code."""
    with (
        anyio.from_thread.start_blocking_portal(backend) as portal,
        portal.wrap_async_context_manager(everything(api)) as toolset,
    ):
        yield portal.call(to_langchain, toolset)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_sync_graph_runs_the_tools_on_the_loop_they_were_listed_on(backend: str) -> None:
    turns = calls(("create_note", {"title": "milk"}), ("add", {"a": 2, "b": 3}))
    with notes_api() as api, tools_on_a_loop(backend, api) as tools:
        graph = react_graph(model(turns, calls(("delete_note", {"note_id": 1})), "Done."), tools)
        paused = graph.invoke({"messages": [HumanMessage("note milk")]}, thread())
        assert interrupt_value(paused)["tool"] == "delete_note"
        result = graph.invoke(Command(resume=True), thread())
    made = tool_messages(result)
    assert made["call-1"].artifact == {"total": 5}
    assert api.requests == ["POST /notes", "DELETE /notes/1"]
    assert result["messages"][-1].content == "Done."


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_sync_call_after_the_loop_finished_says_so(backend: str) -> None:
    with anyio.from_thread.start_blocking_portal(backend) as portal:
        (who,) = portal.call(to_langchain, [whoami])
    with pytest.raises(ToolCallError) as raised:
        who.invoke(call_of("whoami"))
    assert raised.value.tool_name == "whoami"


# In: LangChain tools as a toolset, run by toolsets' own agent loop.


@langchain_tool
def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


@langchain_tool(return_direct=True)
def final_word(word: str) -> str:
    """Say the last word."""
    return word.upper()


@pytest.mark.anyio
async def test_langchain_tools_run_in_the_agent_loop() -> None:
    toolset = from_langchain([multiply, final_word])
    steps = [call("multiply", a=6, b=7), call("multiply", a="six"), "42."]
    runner = Runner(LlmAgent("assistant", ScriptedModel(steps), tools=[toolset]))
    with anyio.fail_after(TIMEOUT):
        _, events = await start(runner, "6 x 7?")
    results = [r.response for e in events for r in e.function_responses]
    assert results[0] == "42"
    assert isinstance(results[1], dict)
    assert set(results[1]["fields"]) == {"a", "b"}


@pytest.mark.anyio
async def test_a_return_direct_langchain_tool_ends_the_turn_with_its_result() -> None:
    model = ScriptedModel([call("final_word", word="bye")])
    runner = Runner(LlmAgent("assistant", model, tools=[from_langchain(final_word)]))
    with anyio.fail_after(TIMEOUT):
        _, events = await start(runner, "the end")
    assert response_of(events, "final_word") == "BYE"


@pytest.mark.anyio
async def test_a_langchain_tool_keeps_its_name_description_and_schema() -> None:
    (made,) = await from_langchain(multiply).list_tools()
    assert isinstance(made, LangChainTool)
    assert made.langchain_tool is multiply
    declaration = made.declaration()
    assert declaration is not None
    assert (declaration.name, declaration.description) == ("multiply", "Multiply two integers.")
    assert declaration.parameters["required"] == ["a", "b"]


@ASYNCIO
@pytest.mark.anyio
async def test_an_async_only_langchain_tool_runs_on_asyncio() -> None:
    async def shout(text: str) -> str:
        return text.upper()

    loud = StructuredTool.from_function(coroutine=shout, name="shout", description="Shout.")
    (made,) = await from_langchain(loud).list_tools()
    with anyio.fail_after(TIMEOUT):
        assert await made.run({"text": "hi"}, ToolContext()) == "HI"


@pytest.mark.anyio
async def test_a_langchain_tools_error_message_is_an_error_result() -> None:
    def fails(x: int) -> str:
        from langchain_core.tools import ToolException

        raise ToolException(f"no {x}")

    failing = StructuredTool.from_function(
        fails, name="fails", description="Fail.", handle_tool_error=True
    )
    (made,) = await from_langchain(failing).list_tools()
    with anyio.fail_after(TIMEOUT):
        assert await made.run({"x": 3}, ToolContext().for_call("c1")) == {"error": "no 3"}


def test_without_langchain_the_import_names_the_extra_to_install() -> None:
    code = (
        "import sys; sys.modules['langchain_core'] = None\n"
        "try:\n    import toolsets.adapters.langchain\n"
        "except ImportError as e:\n    print(e)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert install_line("langchain") in done.stdout  # toolsets-ai is not on PyPI


@pytest.mark.anyio
async def test_a_streaming_tool_gives_langchain_its_last_result() -> None:
    @tool
    async def count(to: int) -> AsyncIterator[int]:
        """Count up to a number, one result at a time."""
        for n in range(1, to + 1):
            await anyio.lowlevel.checkpoint()
            yield n

    with anyio.fail_after(TIMEOUT):
        (adapted,) = await to_langchain([count])
        message = await adapted.ainvoke(call_of("count", to=3))
    assert message.artifact == 3
    assert message.status == "success"
