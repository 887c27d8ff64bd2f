"""Phase-scoped tools (`phased`) through the agent loop: each turn offers the current
phase's tools; a call outside the phase is refused with an error result naming it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from tests.agent.helpers import agent_with, call, response_of, start
from toolsets import (
    BaseTool,
    BaseToolset,
    Invocation,
    JsonValue,
    LlmRequest,
    StaticToolset,
    Tool,
    ToolContext,
    ToolDeclaration,
    ToolDefinitionError,
    Toolset,
    phased,
    prefixed,
    tool,
)
from toolsets._invoke import Done, invoke

pytestmark = pytest.mark.anyio

ran: list[str] = []


@tool(read_only=True)
def read_logs(ctx: ToolContext) -> str:
    """Read the logs; moves on to the fix phase."""
    ran.append("read_logs")
    ctx.state["phase"] = "fix"
    return "NullPointer in checkout"


@tool(requires_confirmation=True)
def apply_patch(patch: str) -> str:
    """Apply a patch."""
    ran.append("apply_patch")
    return f"applied {patch}"


@tool(read_only=True)
def status() -> str:
    """Where things stand."""
    return "ok"


def phases() -> Any:
    return phased({"triage": [read_logs, status], "fix": [apply_patch, status]}, "phase")


async def test_each_turn_offers_the_tools_of_the_phase_the_state_names() -> None:
    ran.clear()
    runner, model = agent_with(
        [call("read_logs"), call("status"), "triaged, now fixing"], [phases()]
    )
    _, events = await start(runner, "fix checkout")
    assert list(model.requests[0].declarations) == ["read_logs", "status"]
    assert list(model.requests[1].declarations) == ["apply_patch", "status"]
    assert response_of(events, "status") == "ok"  # a tool of both phases
    assert ran == ["read_logs"]


async def test_a_call_outside_the_phase_is_refused_naming_the_phase_and_its_tools() -> None:
    ran.clear()
    runner, _ = agent_with([call("apply_patch", patch="p1"), "oops"], [phases()])
    _, events = await start(runner, "patch it")
    refused = response_of(events, "apply_patch")
    assert isinstance(refused, dict)
    assert refused["phase"] == "triage"
    assert refused["tools"] == ["read_logs", "status"]
    assert "'apply_patch'" in str(refused["error"])
    assert "'fix'" in str(refused["error"])  # the phase it belongs to
    assert not events[-1].pending  # refused before the confirmation gate: no one asked
    assert ran == []
    assert events[-1].text == "oops"


async def test_a_function_of_the_state_chooses_the_phase() -> None:
    toolset = phased(
        {"triage": [read_logs], "fix": [apply_patch]},
        lambda state: "fix" if state.get("bug") else "triage",
    )
    runner, model = agent_with(["hi"], [toolset])
    session = await runner.create_session(user_id="u", state={"bug": "NPE"})
    async for _ in runner.run(user_id="u", session_id=session.id, message="go"):
        pass
    assert list(model.requests[0].declarations) == ["apply_patch"]


async def test_a_wrapped_phased_toolset_keeps_refusing_under_the_new_names() -> None:
    runner, _ = agent_with([call("ops_apply_patch", patch="p"), "no"], [prefixed(phases(), "ops")])
    _, events = await start(runner, "go")
    refused = response_of(events, "ops_apply_patch")
    assert isinstance(refused, dict)
    assert refused["phase"] == "triage"
    assert refused["tools"] == ["ops_read_logs", "ops_status"]
    assert "'ops_apply_patch'" in str(refused["error"])


async def test_tools_outside_the_phase_are_listed_without_a_declaration() -> None:
    ctx = ToolContext()
    listed = {t.name: t.declaration() for t in await phases().list_tools(ctx)}
    assert listed["read_logs"] is not None
    assert listed["apply_patch"] is None


async def test_a_state_naming_no_phase_is_a_definition_error() -> None:
    ctx = ToolContext(Invocation(state={"phase": "deploy"}))
    with pytest.raises(ToolDefinitionError) as caught:
        await phases().list_tools(ctx)
    assert caught.value.field == "phase"


def test_an_initial_phase_that_is_none_of_them_is_refused() -> None:
    with pytest.raises(ToolDefinitionError) as caught:
        phased({"a": [status]}, "phase", initial="b")
    assert caught.value.field == "initial"


async def test_two_different_tools_of_one_name_in_two_phases_are_refused() -> None:
    @tool(name="status")
    def other_status() -> str:
        """Another."""
        return "?"

    toolset = phased({"a": StaticToolset([status]), "b": [other_status]}, "phase")
    with pytest.raises(ToolDefinitionError) as caught:
        await toolset.list_tools(ToolContext())
    assert caught.value.tool_name == "status"


async def test_a_tool_refusal_is_asked_through_every_wrapper_before_any_callback() -> None:
    seen: list[str] = []

    def before(tool: Any, args: Mapping[str, Any], ctx: ToolContext) -> None:
        seen.append(tool.name)

    runner, _ = agent_with([call("apply_patch", patch="p"), "no"], [phases()], before_tool=before)
    await start(runner, "go")
    assert seen == []


@pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
async def test_an_mcp_server_lists_the_phase_tools_and_refuses_the_others(mode: str) -> None:
    from tests.mcp.server_helpers import connected
    from toolsets.mcp import McpServer

    ran.clear()
    async with connected(McpServer(phases()), mode) as client:
        listed = await client.list_tools()
        refused = await client.call_tool("apply_patch", {"patch": "p"})
    assert [t.name for t in listed.tools] == ["read_logs", "status"]
    # The server calls only what it lists: the client is told the tools it has now.
    assert refused.is_error
    assert refused.structured_content is not None
    assert "read_logs, status" in refused.structured_content["error"]
    assert ran == []


class Audited:
    """A wrapper tool of a user's own: it forwards every member but ``refusal`` (it
    refuses nothing itself), and offers itself by name (passive: no declaration of its
    own)."""

    def __init__(self, tool: Tool) -> None:
        self.tool = tool

    def __getattr__(self, name: str) -> Any:
        return getattr(self.tool, name)

    def refusal(self, args: Mapping[str, Any], ctx: ToolContext) -> JsonValue | None:
        return None

    async def process_llm_request(self, req: LlmRequest, ctx: ToolContext) -> None:
        await self.tool.process_llm_request(req, ctx)
        req.tools[self.tool.name] = self  # type: ignore[assignment]


class AuditedToolset(BaseToolset):
    def __init__(self, inner: Toolset) -> None:
        self.inner = inner

    async def list_tools(self, ctx: ToolContext | None = None) -> Sequence[Tool]:
        return [Audited(t) for t in await self.inner.list_tools(ctx)]  # type: ignore[misc]


async def test_a_wrapper_that_does_not_forward_the_refusal_does_not_bypass_the_phase() -> None:
    @tool
    def restart() -> str:
        """Restart the service."""
        ran.append("restart")
        return "restarted"

    ran.clear()
    toolset = phased({"triage": [read_logs, status], "fix": [restart]}, "phase")
    runner, _ = agent_with([call("restart"), "oops"], [AuditedToolset(toolset)])
    _, events = await start(runner, "restart it")
    refused = response_of(events, "restart")
    assert isinstance(refused, dict)
    assert refused["phase"] == "triage"
    assert refused["tools"] == ["read_logs", "status"]
    assert ran == []


class CalledUnderMore(BaseTool):
    """A tool whose calls take more than the model is offered (as an OpenAPI operation
    cut to a declaration budget does): ``size`` must be a whole number."""

    def __init__(self) -> None:
        super().__init__("resize", "Resize the pool.", requires_confirmation=True)

    def call_declaration(self) -> ToolDeclaration | None:
        whole = {"type": "object", "properties": {"size": {"type": "integer"}}}
        return ToolDeclaration(name=self.name, description=self.description, parameters=whole)

    async def run(self, args: Mapping[str, Any], ctx: ToolContext) -> JsonValue:
        ran.append("resize")
        return "resized"


@pytest.mark.parametrize("phase", ["triage", "fix"])
async def test_a_phase_tool_is_called_under_the_declaration_its_tool_is_called_under(
    phase: str,
) -> None:
    """In its phase or out of it, the arguments are checked against the whole
    declaration before the user is asked to confirm."""
    toolset = phased({"triage": [status], "fix": [CalledUnderMore()]}, "phase", initial=phase)
    ctx = ToolContext(Invocation(state={"phase": phase}))
    listed = {t.name: t for t in await toolset.list_tools(ctx)}
    resize = listed["resize"]
    assert resize.call_declaration() == CalledUnderMore().call_declaration()

    ran.clear()
    outcome = await invoke(
        resize, {"size": "big"}, ToolContext(Invocation(state={"phase": "fix"})), default_timeout=5
    )
    assert isinstance(outcome, Done)
    assert isinstance(outcome.result, dict)
    assert "size" in str(outcome.result["error"])
    assert ran == []


async def test_a_call_while_the_state_names_no_phase_gets_an_error_result() -> None:
    listed = {t.name: t for t in await phases().list_tools(ToolContext())}
    ctx = ToolContext(Invocation(state={"phase": "deploy"}))  # set by a call before
    outcome = await invoke(listed["status"], {}, ctx, default_timeout=5)
    assert isinstance(outcome, Done)
    assert isinstance(outcome.result, dict)
    assert outcome.result["field"] == "phase"
    assert "'deploy'" in str(outcome.result["error"])


class TeamTools(BaseToolset):
    """Each team's own fix tools, read from the state."""

    async def list_tools(self, ctx: ToolContext | None = None) -> Sequence[Tool]:
        team = ctx.state.get("team") if ctx is not None else None
        return [apply_patch] if team == "a" else [status]


async def test_a_refusal_names_the_tools_its_own_listing_found() -> None:
    toolset = phased({"triage": [read_logs], "fix": TeamTools()}, "phase", initial="fix")
    ours = {t.name: t for t in await toolset.list_tools(team_context("a"))}
    await toolset.list_tools(team_context("b"))  # another session's listing
    outcome = await invoke(ours["read_logs"], {}, team_context("a"), default_timeout=5)
    assert isinstance(outcome, Done)
    assert isinstance(outcome.result, dict)
    assert outcome.result["tools"] == ["apply_patch"]


def team_context(team: str) -> ToolContext:
    return ToolContext(Invocation(state={"team": team}))
