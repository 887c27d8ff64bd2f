"""The google-adk adapter, judged by ADK itself: a real `InMemoryRunner` turn whose model
(an ADK `BaseLlm` written here) calls an OpenAPI tool against a real API on 127.0.0.1
and a tool of the fixture MCP server, pauses on ADK's own confirmation and credential
requests and resumes; and ADK's tools run by toolsets' agent loop.

ADK's runner runs on asyncio only, so its tests do too; ADK's tools run by toolsets' loop
are tested on trio as well.
"""

from __future__ import annotations

import copy
import subprocess
import sys
from collections.abc import AsyncGenerator, Iterator, Sequence
from typing import Any, Literal

import anyio
import pytest
from fastapi.openapi.models import APIKey, APIKeyIn
from google.adk.agents import LlmAgent as AdkAgent
from google.adk.auth.auth_credential import AuthCredential as AdkAuthCredential
from google.adk.auth.auth_credential import AuthCredentialTypes
from google.adk.auth.auth_tool import AuthConfig as AdkAuthConfig
from google.adk.auth.credential_service.in_memory_credential_service import (
    InMemoryCredentialService,
)
from google.adk.events.event import Event as AdkEvent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest as AdkLlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import InMemoryRunner
from google.adk.runners import Runner as AdkRunner
from google.adk.sessions.in_memory_session_service import InMemorySessionService
from google.adk.tools import FunctionTool as AdkFunctionTool
from google.adk.tools.base_tool import BaseTool as AdkBaseTool
from google.adk.tools.base_toolset import BaseToolset as AdkBaseToolset
from google.adk.tools.tool_context import ToolContext as AdkToolContext
from google.genai import types
from pydantic import Field

from tests.adapters.helpers import (
    NOTES_SPEC,
    NotesApi,
    everything,
    mcp_toolset,
    notes_api,
    wipe_disk,
)
from tests.agent.helpers import asked_to_confirm, collect, response_of, start
from toolsets import (
    AuthCredential,
    FunctionCall,
    Part,
    StaticToolset,
    ToolContext,
    ToolDefinitionError,
    tool,
)
from toolsets._install import install_line
from toolsets._invoke import DECLINED
from toolsets.adapters.adk import (
    WAITING_FOR_CONFIRMATION,
    WAITING_FOR_CREDENTIAL,
    AdkToolset,
    _adk_credential,
    _credential,
    from_adk,
)
from toolsets.agent import CredentialRequest, LlmAgent, Runner
from toolsets.models import ScriptedModel
from toolsets.openapi import OpenApiToolset

pytestmark = pytest.mark.anyio

RUN_TIMEOUT = 30.0
APP = "notes_app"


@pytest.fixture
def anyio_backend() -> str:
    """ADK is built on asyncio (its runner, flows and locks): asyncio only."""
    return "asyncio"


ON_BOTH_BACKENDS = pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
"""ADK's tools run by toolsets' loop need no asyncio of their own: both backends."""


@pytest.fixture
def api() -> Iterator[NotesApi]:
    with notes_api() as running:
        yield running


class ScriptedLlm(BaseLlm):
    """An ADK model that answers each request with the next scripted response, and keeps
    the requests it was sent."""

    model: str = "scripted"
    replies: list[LlmResponse] = Field(default_factory=list)
    requests: list[AdkLlmRequest] = Field(default_factory=list)

    async def generate_content_async(
        self, llm_request: AdkLlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        self.requests.append(llm_request)
        yield self.replies.pop(0)


def calls(*calls: tuple[str, dict[str, Any]]) -> LlmResponse:
    """A model turn calling ``(name, args)`` pairs, with ids ``c1``, ``c2``..."""
    parts = [
        types.Part(function_call=types.FunctionCall(name=name, args=args, id=f"c{i}"))
        for i, (name, args) in enumerate(calls, 1)
    ]
    return LlmResponse(content=types.Content(role="model", parts=parts))


def says(text: str) -> LlmResponse:
    return LlmResponse(content=types.Content(role="model", parts=[types.Part(text=text)]))


def user(text: str) -> types.Content:
    return types.Content(role="user", parts=[types.Part(text=text)])


def answering(name: str, call_id: str, response: dict[str, Any]) -> types.Content:
    """The user's answer to one of ADK's requests (confirmation, credential)."""
    part = types.Part(
        function_response=types.FunctionResponse(name=name, id=call_id, response=response)
    )
    return types.Content(role="user", parts=[part])


class Turn:
    """One ADK runner with one agent over ``tools`` and a session, run message by message."""

    runner: AdkRunner

    def __init__(
        self,
        tools: list[Any],
        replies: list[LlmResponse],
        state: dict[str, Any] | None = None,
        credential_service: Any = None,
    ) -> None:
        self.model = ScriptedLlm(replies=replies)
        agent = AdkAgent(name="assistant", model=self.model, tools=tools)
        if credential_service is None:
            self.runner = InMemoryRunner(agent=agent, app_name=APP)
        else:
            self.runner = AdkRunner(
                agent=agent,
                app_name=APP,
                session_service=InMemorySessionService(),
                credential_service=credential_service,
            )
        self.state = state or {}
        self.session_id = ""

    async def send(self, message: types.Content) -> list[AdkEvent]:
        with anyio.fail_after(RUN_TIMEOUT):
            if not self.session_id:
                session = await self.runner.session_service.create_session(
                    app_name=APP, user_id="ada", state=self.state
                )
                self.session_id = session.id
            return [
                event
                async for event in self.runner.run_async(
                    user_id="ada", session_id=self.session_id, new_message=message
                )
            ]

    async def session_state(self) -> dict[str, Any]:
        session = await self.runner.session_service.get_session(
            app_name=APP, user_id="ada", session_id=self.session_id
        )
        assert session is not None
        return dict(session.state)


def responses(events: Sequence[AdkEvent]) -> dict[str, Any]:
    """Each function response of the events, by call id (the last one wins)."""
    return {
        response.id: response.response
        for event in events
        for response in event.get_function_responses()
    }


def declared(model: ScriptedLlm) -> dict[str, types.FunctionDeclaration]:
    """The function declarations of the model's first request, by name."""
    return {
        d.name or "": d
        for t in model.requests[0].config.tools or []
        for d in t.function_declarations or []
    }


def requested(events: Sequence[AdkEvent], name: str) -> types.FunctionCall:
    """The one call of ADK's own request function ``name`` among the events."""
    (found,) = [
        call for event in events for call in event.get_function_calls() if call.name == name
    ]
    return found


async def test_an_adk_agent_calls_an_openapi_tool_and_an_mcp_tool(api: NotesApi) -> None:
    toolset = AdkToolset(everything(api))
    turn = Turn(
        [toolset],
        [calls(("create_note", {"title": "milk"}), ("add", {"a": 2, "b": 3})), says("done")],
    )
    try:
        events = await turn.send(user("note milk, and add 2 and 3"))
    finally:
        await turn.runner.close()

    answers = responses(events)
    assert answers["c1"] == {"id": 1, "title": "milk"}
    assert answers["c2"] == {"total": 5}
    assert api.requests == ["POST /notes"]
    assert events[-1].content is not None
    assert events[-1].content.parts is not None
    assert events[-1].content.parts[0].text == "done"
    declarations = declared(turn.model)
    assert {"create_note", "add", "wipe_disk", "delete_note"} <= set(declarations)
    schema = declarations["create_note"].parameters_json_schema
    assert schema["required"] == ["title"]


@pytest.mark.parametrize("form", ["json_schema", "parameters"])
async def test_names_and_schemas_gemini_refuses_are_made_legal_and_calls_map_back(
    form: str,
) -> None:
    seen: list[dict[str, Any]] = []

    @tool(name="files/move")
    def move(level: Literal[1, 2, 3], note: str | int | None = None) -> str:
        """Move a file to a level."""
        seen.append({"level": level, "note": note})
        return "moved"

    toolset = AdkToolset([move], form=form)  # type: ignore[arg-type]
    tools = await toolset.get_tools()
    (adk_tool,) = tools
    declaration = adk_tool._get_declaration()
    assert declaration is not None
    # Gemini's names have no "/"; in the OpenAPI-subset form, enums are strings.
    assert adk_tool.name == declaration.name == "files_move"
    if form == "parameters":
        assert declaration.parameters is not None
        assert declaration.parameters.properties is not None
        assert declaration.parameters.properties["level"].enum == ["1", "2", "3"]
    replies = [calls(("files_move", {"level": "2"} if form == "parameters" else {"level": 2}))]
    turn = Turn([toolset], [*replies, says("moved")])
    try:
        events = await turn.send(user("move it to level 2"))
    finally:
        await turn.runner.close()

    assert responses(events)["c1"] == {"result": "moved"}
    # The model's "2" reached the function as the number 2 the tool declared.
    assert seen == [{"level": 2, "note": None}]


async def test_invalid_arguments_come_back_to_the_model_naming_the_field(api: NotesApi) -> None:
    turn = Turn(
        [AdkToolset(everything(api))], [calls(("create_note", {"title": 7})), says("sorry")]
    )
    try:
        events = await turn.send(user("note 7"))
    finally:
        await turn.runner.close()

    result = responses(events)["c1"]
    assert set(result["fields"]) == {"title"}
    assert api.requests == []
    # The model is asked again with the error in front of it.
    assert len(turn.model.requests) == 2


async def test_a_confirmation_gated_call_pauses_then_runs_once_when_approved(api: NotesApi) -> None:
    api.notes[1] = {"id": 1, "title": "old"}
    turn = Turn(
        [AdkToolset(everything(api))], [calls(("delete_note", {"note_id": 1})), says("deleted")]
    )
    try:
        paused = await turn.send(user("delete note 1"))
        asked = requested(paused, "adk_request_confirmation")
        assert asked.args is not None
        assert asked.args["originalFunctionCall"]["id"] == "c1"
        assert "DELETE" in asked.args["toolConfirmation"]["hint"]
        assert responses(paused)["c1"] == WAITING_FOR_CONFIRMATION
        assert api.requests == []
        assert len(turn.model.requests) == 1  # the pause does not go back to the model

        assert asked.id is not None
        resumed = await turn.send(
            answering("adk_request_confirmation", asked.id, {"confirmed": True})
        )
    finally:
        await turn.runner.close()

    assert responses(resumed)["c1"] == {"result": None}  # a 204 has no body
    assert api.requests == ["DELETE /notes/1"]
    assert api.notes == {}


async def test_an_approval_never_covers_a_later_call_that_reuses_the_id(api: NotesApi) -> None:
    api.notes.update({1: {"id": 1, "title": "a"}, 2: {"id": 2, "title": "b"}})
    replies = [calls(("delete_note", {"note_id": 1})), says("deleted 1")]
    replies += [calls(("delete_note", {"note_id": 2})), says("deleted 2")]
    turn = Turn([AdkToolset(everything(api))], replies)
    try:
        paused = await turn.send(user("delete note 1"))
        asked = requested(paused, "adk_request_confirmation")
        assert asked.id is not None
        await turn.send(answering("adk_request_confirmation", asked.id, {"confirmed": True}))
        again = await turn.send(user("delete note 2"))  # the model calls it "c1" again
    finally:
        await turn.runner.close()

    assert responses(again)["c1"] == WAITING_FOR_CONFIRMATION
    assert api.requests == ["DELETE /notes/1"]


async def test_a_declined_call_never_reaches_the_server(api: NotesApi) -> None:
    api.notes[1] = {"id": 1, "title": "keep"}
    turn = Turn(
        [AdkToolset(everything(api))], [calls(("delete_note", {"note_id": 1})), says("kept")]
    )
    try:
        paused = await turn.send(user("delete note 1"))
        asked = requested(paused, "adk_request_confirmation")
        assert asked.id is not None
        resumed = await turn.send(
            answering("adk_request_confirmation", asked.id, {"confirmed": False})
        )
    finally:
        await turn.runner.close()

    assert responses(resumed)["c1"] == {"error": DECLINED}
    assert api.requests == []
    assert api.notes == {1: {"id": 1, "title": "keep"}}


async def test_a_confirmation_gated_function_tool_pauses_and_resumes() -> None:
    turn = Turn([AdkToolset([wipe_disk])], [calls(("wipe_disk", {"disk": "sda"})), says("wiped")])
    try:
        paused = await turn.send(user("wipe sda"))
        asked = requested(paused, "adk_request_confirmation")
        assert asked.id is not None
        resumed = await turn.send(
            answering("adk_request_confirmation", asked.id, {"confirmed": True})
        )
    finally:
        await turn.runner.close()
    assert responses(resumed)["c1"] == {"result": "sda wiped"}


SEEN: dict[str, Any] = {}


@tool
def remember(color: str, ctx: ToolContext) -> str:
    """Remember a color.

    Args:
        color: The color.
    """
    SEEN.update(
        user=ctx.user_id,
        session=ctx.session_id,
        call=ctx.function_call_id,
        app=ctx.app_name,
        agent=ctx.agent_name,
        message=ctx.user_content.text if ctx.user_content else None,
        attached=[p.inline_data.mime_type for p in ctx.user_content.parts if p.inline_data]
        if ctx.user_content
        else None,
        before=ctx.state.get("color"),
        keys=sorted(ctx.state),
        size=len(ctx.state),
    )
    ctx.state["color"] = color
    ctx.state["user:colors"] = [*ctx.state.get("user:colors", []), color]
    ctx.actions.skip_summarization = True
    return f"remembered {color}"


async def test_user_session_and_state_reach_the_tool_and_its_writes_reach_adk() -> None:
    SEEN.clear()
    turn = Turn(
        [AdkToolset([remember])], [calls(("remember", {"color": "blue"}))], state={"color": "red"}
    )
    try:
        message = user("remember blue")
        assert message.parts is not None
        message.parts.append(types.Part.from_bytes(data=b"\x89PNG", mime_type="image/png"))
        events = await turn.send(message)
        state = await turn.session_state()
    finally:
        await turn.runner.close()

    assert {
        "user": "ada",
        "session": turn.session_id,
        "call": "c1",
        "app": APP,
        "agent": "assistant",
        "message": "remember blue",
        "attached": ["image/png"],
        "before": "red",
        "keys": ["color"],
        "size": 1,
    } == SEEN
    assert state["color"] == "blue"
    assert state["user:colors"] == ["blue"]
    (event,) = [e for e in events if e.get_function_responses()]
    assert event.actions.state_delta == {"color": "blue", "user:colors": ["blue"]}
    assert event.actions.skip_summarization is True
    assert len(turn.model.requests) == 1  # skip_summarization ended the turn


SECURED_SPEC: dict[str, Any] = copy.deepcopy(NOTES_SPEC)
SECURED_SPEC["components"] = {
    "securitySchemes": {"notes_key": {"type": "apiKey", "in": "query", "name": "key"}}
}
SECURED_SPEC["security"] = [{"notes_key": []}]


def key_response(call: types.FunctionCall, key: str) -> types.Content:
    """The user's answer to ADK's credential request: the API key."""
    assert call.args is not None
    assert call.id is not None
    config = dict(call.args["authConfig"])
    config["exchangedAuthCredential"] = AdkAuthCredential(
        auth_type=AuthCredentialTypes.API_KEY, api_key=key
    ).model_dump(mode="json", by_alias=True, exclude_none=True)
    return answering("adk_request_credential", call.id, config)


async def test_a_call_needing_a_credential_asks_adk_and_goes_out_only_with_it(
    api: NotesApi,
) -> None:
    notes = OpenApiToolset(SECURED_SPEC, base_url=api.url)
    turn = Turn([AdkToolset(notes)], [calls(("create_note", {"title": "milk"})), says("noted")])
    try:
        paused = await turn.send(user("note milk"))
        asked = requested(paused, "adk_request_credential")
        assert responses(paused)["c1"] == WAITING_FOR_CREDENTIAL
        assert asked.args is not None
        assert asked.args["functionCallId"] == "c1"
        assert api.requests == []

        resumed = await turn.send(key_response(asked, "s3cret-key"))
    finally:
        await turn.runner.close()

    assert responses(resumed)["c1"] == {"id": 1, "title": "milk"}
    assert api.requests == ["POST /notes?key=s3cret-key"]


async def test_an_answer_that_is_no_usable_credential_is_an_error_naming_the_scheme(
    api: NotesApi,
) -> None:
    notes = OpenApiToolset(SECURED_SPEC, base_url=api.url)
    turn = Turn([AdkToolset(notes)], [calls(("create_note", {"title": "milk"})), says("no")])
    try:
        paused = await turn.send(user("note milk"))
        asked = requested(paused, "adk_request_credential")
        assert asked.args is not None
        assert asked.id is not None
        config = dict(asked.args["authConfig"])
        config["exchangedAuthCredential"] = {"authType": "oauth2", "oauth2": {"clientId": "app"}}
        answered = await turn.send(answering("adk_request_credential", asked.id, config))
    finally:
        await turn.runner.close()

    # The run goes on: the model (and the user) are told which credential was unusable.
    result = responses(answered)["c1"]
    assert "notes_key" in result["error"]
    assert api.requests == []


@pytest.mark.filterwarnings("ignore:.EXPERIMENTAL. (InMemory|Base)CredentialService:UserWarning")
async def test_with_adks_credential_service_the_credential_is_asked_once_per_user(
    api: NotesApi,
) -> None:
    notes = OpenApiToolset(SECURED_SPEC, base_url=api.url)
    replies = [calls(("create_note", {"title": "milk"})), says("noted")]
    replies += [calls(("create_note", {"title": "eggs"})), says("noted")]
    turn = Turn([AdkToolset(notes)], replies, credential_service=InMemoryCredentialService())
    try:
        paused = await turn.send(user("note milk"))
        await turn.send(key_response(requested(paused, "adk_request_credential"), "s3cret-key"))
        later = await turn.send(user("note eggs"))
    finally:
        await turn.runner.close()

    assert responses(later)["c1"] == {"id": 2, "title": "eggs"}
    assert api.requests == ["POST /notes?key=s3cret-key", "POST /notes?key=s3cret-key"]


async def test_a_gated_call_needing_a_credential_asks_both_at_once_and_runs_once(
    api: NotesApi,
) -> None:
    api.notes[1] = {"id": 1, "title": "old"}
    notes = OpenApiToolset(SECURED_SPEC, base_url=api.url)
    turn = Turn([AdkToolset(notes)], [calls(("delete_note", {"note_id": 1})), says("deleted")])
    try:
        paused = await turn.send(user("delete note 1"))
        confirm = requested(paused, "adk_request_confirmation")
        key = requested(paused, "adk_request_credential")
        assert api.requests == []
        assert confirm.id is not None

        both = key_response(key, "s3cret-key")
        assert both.parts is not None
        both.parts.append(
            types.Part(
                function_response=types.FunctionResponse(
                    name="adk_request_confirmation", id=confirm.id, response={"confirmed": True}
                )
            )
        )
        resumed = await turn.send(both)
    finally:
        await turn.runner.close()

    assert responses(resumed)["c1"] == {"result": None}  # a 204 has no body
    assert api.requests == ["DELETE /notes/1?key=s3cret-key"]


@tool
async def file_report(text: str, ctx: ToolContext) -> str:
    """Store a report as an artifact, then stop the enclosing loop.

    Args:
        text: The report.
    """
    version = await ctx.save_artifact("report.txt", Part.from_text(text))
    loaded = await ctx.load_artifact("report.txt")
    ctx.actions.escalate = True
    return f"stored v{version}: {loaded.text if loaded else None}"


async def test_artifacts_go_to_adks_artifact_service_and_the_actions_become_adks() -> None:
    turn = Turn(
        [AdkToolset([file_report])], [calls(("file_report", {"text": "all good"})), says("filed")]
    )
    try:
        events = await turn.send(user("file the report"))
        stored = await turn.runner.artifact_service.load_artifact(
            app_name=APP, user_id="ada", session_id=turn.session_id, filename="report.txt"
        )
    finally:
        await turn.runner.close()

    assert responses(events)["c1"] == {"result": "stored v0: all good"}
    (event,) = [e for e in events if e.get_function_responses()]
    assert event.actions.artifact_delta == {"report.txt": 0}
    assert event.actions.escalate is True
    assert stored is not None
    assert stored.text == "all good"


class Recorded(StaticToolset):
    """A toolset that records being shut down."""

    closed = 0

    async def shutdown(self) -> None:
        self.closed += 1


async def test_closing_the_adk_runner_shuts_the_wrapped_toolset_down() -> None:
    toolset = Recorded([wipe_disk])
    turn = Turn([AdkToolset(toolset)], [says("hello")])
    await turn.send(user("hi"))
    assert toolset.closed == 0
    await turn.runner.close()
    assert toolset.closed == 1


async def test_entered_with_async_with_the_mcp_session_lives_in_the_callers_task() -> None:
    async with AdkToolset(mcp_toolset()) as toolset:
        turn = Turn([toolset], [calls(("add", {"a": 1, "b": 1})), says("2")])
        events = await turn.send(user("1 + 1"))
    assert responses(events)["c1"] == {"total": 2}


def test_what_is_neither_a_toolset_nor_tools_is_refused_naming_the_field() -> None:
    with pytest.raises(ToolDefinitionError) as caught:
        AdkToolset(42)  # type: ignore[arg-type]
    assert caught.value.field == "toolset"


@pytest.mark.parametrize(
    "credential",
    [
        AuthCredential.api_key("k-123456"),
        AuthCredential.bearer("t-123456"),
        AuthCredential.basic("ada", "p-123456"),
        AuthCredential.oauth2("a-123456", refresh_token="r-123456", expires_at=1_900_000_000),
    ],
    ids=lambda c: c.kind,
)
def test_a_credential_survives_the_trip_through_adks_form(credential: AuthCredential) -> None:
    assert _credential(_adk_credential(credential)) == credential


@tool(is_long_running=True)
def start_backup(disk: str) -> dict[str, str]:
    """Start backing a disk up.

    Args:
        disk: The disk.
    """
    return {"job": f"backup-{disk}", "status": "started"}


@tool
def hand_over(ctx: ToolContext) -> str:
    """Hand the conversation to the helper agent."""
    ctx.actions.transfer_to_agent = "helper"
    return "handing over"


async def test_a_long_running_tool_is_long_running_for_adk_and_answers_its_interim() -> None:
    turn = Turn(
        [AdkToolset([start_backup, wipe_disk], tool_filter=["start_backup"])],
        [calls(("start_backup", {"disk": "sda"})), says("started")],
    )
    try:
        events = await turn.send(user("back up sda"))
    finally:
        await turn.runner.close()

    assert responses(events)["c1"] == {"job": "backup-sda", "status": "started"}
    (call_event,) = [e for e in events if e.get_function_calls()]
    assert call_event.long_running_tool_ids == {"c1"}
    assert list(declared(turn.model)) == ["start_backup"]  # ADK's own tool_filter applies


async def test_a_transfer_the_tool_asks_for_hands_the_turn_to_that_adk_agent() -> None:
    helper_model = ScriptedLlm(replies=[says("helper here")])
    helper = AdkAgent(name="helper", model=helper_model, description="Helps.")
    model = ScriptedLlm(replies=[calls(("hand_over", {}))])
    agent = AdkAgent(
        name="assistant", model=model, tools=[AdkToolset([hand_over])], sub_agents=[helper]
    )
    runner = InMemoryRunner(agent=agent, app_name=APP)
    try:
        session = await runner.session_service.create_session(app_name=APP, user_id="ada")
        with anyio.fail_after(RUN_TIMEOUT):
            events = [
                e
                async for e in runner.run_async(
                    user_id="ada", session_id=session.id, new_message=user("help")
                )
            ]
    finally:
        await runner.close()

    (handed,) = [e for e in events if e.get_function_responses()]
    assert handed.actions.transfer_to_agent == "helper"
    assert events[-1].author == "helper"


# --- in: ADK's tools run by toolsets' agent loop ---------------------------------------


def paint(wall: str, color: str, tool_context: AdkToolContext) -> dict[str, Any]:
    """Paint a wall.

    Args:
        wall: Which wall.
        color: The paint's color.
    """
    before = tool_context.state.get("painted", [])
    tool_context.state["painted"] = [*before, wall]
    return {"wall": wall, "color": color, "user": tool_context.user_id}


def demolish(wall: str) -> str:
    """Knock a wall down.

    Args:
        wall: Which wall.
    """
    return f"{wall} is gone"


@ON_BOTH_BACKENDS
async def test_adk_function_tools_run_in_toolsets_agent_loop_with_state_and_user() -> None:
    toolset = from_adk(paint)
    model = ScriptedModel(
        [FunctionCall(name="paint", args={"wall": "north", "color": "teal"}), "painted"]
    )
    runner = Runner(LlmAgent("assistant", model, tools=[toolset]))
    session_id, events = await start(runner, "paint the north wall teal", user_id="bo")

    assert response_of(events, "paint") == {"wall": "north", "color": "teal", "user": "bo"}
    session = await runner.get_session(user_id="bo", session_id=session_id)
    assert session.state["painted"] == ["north"]
    declared = model.requests[0].declarations["paint"]
    assert declared.parameters["required"] == ["wall", "color"]
    assert "tool_context" not in declared.parameters["properties"]


@ON_BOTH_BACKENDS
async def test_an_adk_tool_requiring_confirmation_pauses_toolsets_loop_until_approved() -> None:
    ran: list[str] = []

    def demolish_tracked(wall: str) -> str:
        """Knock a wall down.

        Args:
            wall: Which wall.
        """
        ran.append(wall)
        return demolish(wall)

    toolset = from_adk(AdkFunctionTool(demolish_tracked, require_confirmation=True))
    model = ScriptedModel([FunctionCall(name="demolish_tracked", args={"wall": "east"}), "done"])
    runner = Runner(LlmAgent("assistant", model, tools=[toolset]))
    session_id, events = await start(runner, "knock down the east wall")
    request = asked_to_confirm(events)
    assert ran == []

    resumed = await collect(
        runner.resume(
            user_id="u", session_id=session_id, confirmations={request.function_call_id: True}
        )
    )
    assert response_of(resumed, "demolish_tracked") == "east is gone"
    assert ran == ["east"]


async def test_from_adk_refuses_what_is_not_an_adk_tool() -> None:
    with pytest.raises(ToolDefinitionError) as caught:
        from_adk(42)  # type: ignore[arg-type]
    assert caught.value.field == "tools"


LOCKED: list[str | None] = []


def open_vault(vault: str, tool_context: AdkToolContext) -> dict[str, Any]:
    """Open a vault with the user's key.

    Args:
        vault: Which vault.
    """
    config = VAULT_AUTH
    found = tool_context.get_auth_response(config)
    if found is None:
        tool_context.request_credential(config)
        return {"status": "needs a key"}
    LOCKED.append(found.api_key)
    tool_context.actions.skip_summarization = True
    return {"opened": vault}


VAULT_AUTH = AdkAuthConfig(
    auth_scheme=APIKey(**{"in": APIKeyIn.header, "name": "X-Vault-Key"}),
    credential_key="vault_key",
)


class VaultTools(AdkBaseToolset):
    """An ADK toolset holding one tool."""

    closed = False

    async def get_tools(self, readonly_context: Any = None) -> list[Any]:
        return [AdkFunctionTool(open_vault)]

    async def close(self) -> None:
        self.closed = True


@ON_BOTH_BACKENDS
async def test_an_adk_toolset_asks_toolsets_loop_for_a_credential_and_gets_it() -> None:
    LOCKED.clear()
    vault = VaultTools()
    toolset = from_adk(vault)
    model = ScriptedModel([FunctionCall(name="open_vault", args={"vault": "v1"}), "open"])
    runner = Runner(LlmAgent("assistant", model, tools=[toolset]))
    session_id, events = await start(runner, "open v1")
    (request,) = events[-1].pending
    assert isinstance(request, CredentialRequest)
    assert request.auth_config.scheme["name"] == "X-Vault-Key"
    assert LOCKED == []

    resumed = await collect(
        runner.resume(
            user_id="u",
            session_id=session_id,
            credentials={request.function_call_id: AuthCredential.api_key("vault-secret")},
        )
    )
    assert response_of(resumed, "open_vault") == {"opened": "v1"}
    assert LOCKED == ["vault-secret"]
    await toolset.shutdown()
    assert vault.closed


class Search(AdkBaseTool):
    """An ADK tool declared with Gemini's ``parameters`` (an OpenAPI-subset schema)."""

    def __init__(self) -> None:
        super().__init__(name="search", description="Search the notes.")

    def _get_declaration(self) -> types.FunctionDeclaration:
        return types.FunctionDeclaration(
            name=self.name,
            description=self.description,
            parameters=types.Schema(
                type=types.Type.OBJECT,
                properties={"query": types.Schema(type=types.Type.STRING)},
                required=["query"],
            ),
        )

    async def run_async(self, *, args: dict[str, Any], tool_context: AdkToolContext) -> Any:
        tool_context.actions.escalate = True
        return [types.Part(text=f"found {args['query']}")]


@ON_BOTH_BACKENDS
async def test_any_adk_base_tool_runs_with_its_schema_result_and_actions_mapped() -> None:
    model = ScriptedModel(
        [
            FunctionCall(name="search", args={"query": 7}),
            FunctionCall(name="search", args={"query": "milk"}),
            "found",
        ]
    )
    runner = Runner(LlmAgent("assistant", model, tools=[from_adk(Search())]))
    _, events = await start(runner, "search milk")

    (invalid, found) = [r.response for e in events for r in e.function_responses]
    assert isinstance(invalid, dict)
    assert set(invalid["fields"]) == {"query"}
    assert found == [{"text": "found milk"}]
    declared = model.requests[0].declarations["search"]
    assert declared.parameters == {
        "type": "object",
        "properties": {"query": {"type": "string"}},
        "required": ["query"],
    }
    assert any(e.actions is not None and e.actions.escalate for e in events)


@ON_BOTH_BACKENDS
async def test_an_adk_confirmation_rule_over_the_arguments_pauses_only_the_calls_it_names() -> None:
    ran: list[str] = []

    def knock_down(wall: str) -> str:
        """Knock a wall down.

        Args:
            wall: Which wall.
        """
        ran.append(wall)
        return f"{wall} is gone"

    def load_bearing(wall: str) -> bool:
        return wall == "spine"

    toolset = from_adk(AdkFunctionTool(knock_down, require_confirmation=load_bearing))
    model = ScriptedModel(
        [
            [
                FunctionCall(name="knock_down", args={"wall": "shed"}),
                FunctionCall(name="knock_down", args={"wall": "spine"}),
            ],
            "done",
        ]
    )
    runner = Runner(LlmAgent("assistant", model, tools=[toolset]))
    session_id, events = await start(runner, "knock down the shed and the spine")
    request = asked_to_confirm(events)
    assert request.args == {"wall": "spine"}
    assert ran == ["shed"]

    await collect(
        runner.resume(
            user_id="u", session_id=session_id, confirmations={request.function_call_id: True}
        )
    )
    assert ran == ["shed", "spine"]


def test_without_google_adk_the_import_names_the_extra() -> None:
    code = (
        "import sys; sys.modules['google.adk'] = None\n"
        "try:\n"
        "    import toolsets.adapters.adk\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    assert install_line("adk") in out  # toolsets-ai is not on PyPI
