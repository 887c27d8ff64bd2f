"""`confirmed(toolset, policy)`: one confirmation policy, read from each tool's own hints,
over function tools, a real MCP server's tools and a real OpenAPI spec's operations; the
sources' ``confirm=`` gives the same answers."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest

from tests.agent.helpers import approve, asked_to_confirm, one_call, response_of
from tests.helpers import ROOT
from tests.mcp.helpers import HttpServer, stdio_toolset
from toolsets import (
    ConfirmedTool,
    ConfirmPolicy,
    FunctionCall,
    Invocation,
    LlmRequest,
    RenamedTool,
    StaticToolset,
    Tool,
    ToolAnnotations,
    ToolContext,
    ToolDefinitionError,
    Toolset,
    confirmed,
    filtered,
    prefixed,
    renamed,
    tool,
)
from toolsets.mcp import McpToolset, StreamableHttp
from toolsets.openapi import OpenApiToolset

pytestmark = pytest.mark.anyio

POLICIES: list[ConfirmPolicy] = ["never", "writes", "destructive", "always"]
FIXTURES = ROOT / "fixtures" / "openapi"


@tool(read_only=True)
def look(path: str) -> str:
    """Read a file."""
    return f"contents of {path}"


@tool(annotations=ToolAnnotations(read_only=False, destructive=False))
def append(path: str, line: str) -> str:
    """Append a line."""
    return "appended"


@tool(annotations=ToolAnnotations(destructive=True))
def wipe(path: str) -> str:
    """Delete a file."""
    return f"wiped {path}"


@tool
def touch(path: str) -> str:
    """Says nothing about itself."""
    return "touched"


FUNCTIONS = StaticToolset([look, append, wipe, touch])


async def asking(toolset: Toolset, args: Mapping[str, Any], names: Sequence[str]) -> set[str]:
    """Which of the tools ``names`` would ask the user before a call with ``args``."""
    tools = {t.name: t for t in await toolset.list_tools()}
    return {name for name in names if tools[name].requires_confirmation(args)}


# --- policies over function tools -------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ("never", set()),
        ("writes", {"append", "wipe", "touch"}),
        ("destructive", {"wipe", "touch"}),  # a tool that says nothing has not said it is safe
        ("always", {"look", "append", "wipe", "touch"}),
    ],
)
async def test_each_policy_reads_a_function_tools_own_hints(
    policy: ConfirmPolicy, expected: set[str]
) -> None:
    names = ["look", "append", "wipe", "touch"]
    assert await asking(confirmed(FUNCTIONS, policy), {"path": "a"}, names) == expected


async def test_the_same_tool_keeps_its_wrapper_from_one_listing_to_the_next() -> None:
    # What keeps tools by identity (a server's converted listing) keeps them through it.
    toolset = confirmed(FUNCTIONS, "always")
    first, again = await toolset.list_tools(), await toolset.list_tools()
    assert all(a is b for a, b in zip(first, again, strict=True))
    assert all(isinstance(t, ConfirmedTool) for t in first)


async def test_the_default_policy_is_destructive() -> None:
    names = ["look", "append", "wipe", "touch"]
    assert await asking(confirmed(FUNCTIONS), {"path": "a"}, names) == {"wipe", "touch"}


async def test_a_function_policy_decides_per_call_and_sees_the_wrapped_tool() -> None:
    seen: list[tuple[Tool, Mapping[str, Any]]] = []

    def outside_tmp(t: Tool, args: Mapping[str, Any]) -> bool:
        seen.append((t, args))
        return not str(args["path"]).startswith("/tmp/")

    (wrapped,) = await confirmed(StaticToolset([wipe]), outside_tmp).list_tools()
    assert wrapped.requires_confirmation({"path": "/etc/passwd"})
    assert not wrapped.requires_confirmation({"path": "/tmp/x"})
    assert seen == [(wipe, {"path": "/etc/passwd"}), (wipe, {"path": "/tmp/x"})]


async def test_a_policy_only_adds_a_tool_asking_for_confirmation_itself_still_does() -> None:
    careful = tool(name="careful", read_only=True, requires_confirmation=True)(lambda: "ok")
    (wrapped,) = await confirmed(StaticToolset([careful]), "never").list_tools()
    assert wrapped.requires_confirmation({})


@pytest.mark.parametrize("bad", ["sometimes", "Destructive", "", None, 3, ["always"]])
@pytest.mark.parametrize(
    "make",
    [
        lambda bad: confirmed(FUNCTIONS, bad),
        lambda bad: McpToolset(StreamableHttp(url="http://127.0.0.1:1/mcp"), confirm=bad),
        lambda bad: OpenApiToolset(FIXTURES / "shapes.yaml", confirm=bad),
    ],
    ids=["confirmed", "McpToolset", "OpenApiToolset"],
)
def test_an_invalid_policy_is_one_error_naming_the_option_and_the_value(
    make: Callable[[object], object], bad: object
) -> None:
    with pytest.raises(ToolDefinitionError) as info:
        make(bad)
    assert info.value.field == "confirm"
    assert repr(bad) in str(info.value)


# --- policies over a real MCP server's tools --------------------------------------------

MCP_TOOLS = ["echo", "add", "delete_file", "append_line", "slow"]
"""The fixture server's echo and add are read-only, delete_file destructive, append_line
marked non-destructive, and slow says nothing."""


def everything_outside_tmp(t: Tool, args: Mapping[str, Any]) -> bool:
    return not str(args.get("path", "")).startswith("/tmp/")


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ("never", set()),
        ("writes", {"delete_file", "append_line", "slow"}),
        ("destructive", {"delete_file", "slow"}),  # MCP: destructiveHint defaults to true
        ("always", set(MCP_TOOLS)),
        (everything_outside_tmp, set(MCP_TOOLS)),
    ],
)
async def test_each_policy_over_a_real_mcp_servers_annotations_and_confirm_is_the_same(
    http_server: HttpServer, policy: ConfirmPolicy, expected: set[str]
) -> None:
    args = {"path": "/home/a"}
    async with McpToolset(StreamableHttp(url=http_server.url), confirm="never") as plain:
        assert await asking(confirmed(plain, policy), args, MCP_TOOLS) == expected
        assert await asking(plain, args, MCP_TOOLS) == set()
    async with McpToolset(StreamableHttp(url=http_server.url), confirm=policy) as sugar:
        assert await asking(sugar, args, MCP_TOOLS) == expected
        assert await asking(sugar, {"path": "/tmp/a"}, ["delete_file"]) == (
            set() if policy is everything_outside_tmp else expected & {"delete_file"}
        )


async def test_in_an_agent_a_confirmed_mcp_tool_pauses_and_runs_only_once_approved() -> None:
    async with stdio_toolset(confirm="never") as server:
        toolset = prefixed(confirmed(server, "destructive"), "fs")
        delete = FunctionCall(name="fs_delete_file", args={"path": "notes.txt"})
        runner, session_id, events = await one_call(toolset, delete, "Deleted.")
        request = asked_to_confirm(events)
        assert request.hint.startswith("Allow the tool 'fs_delete_file' to run")
        assert await called(server) == ["calls_received"], "it did not run unasked"
        events = await approve(runner, session_id, request)
        assert await called(server) == ["calls_received", "delete_file", "calls_received"]
    assert response_of(events, "fs_delete_file") == {"result": "deleted notes.txt"}
    assert events[-1].text == "Deleted."


async def called(toolset: McpToolset) -> list[str]:
    """The tools the fixture server was asked to call (this question included)."""
    result = await toolset.call_tool("calls_received", {})
    assert result.structured_content is not None
    names: list[str] = result.structured_content["result"]
    return names


# --- policies over a real OpenAPI spec's operations -------------------------------------

METHODS = ["get", "head", "options", "post", "put", "patch", "delete", "trace"]
EVERY_METHOD: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {"title": "Every method", "version": "1"},
    "paths": {
        "/things/{id}": {
            "parameters": [{"name": "id", "in": "path", "required": True}],
            **{m: {"operationId": m, "responses": {"200": {"description": "ok"}}} for m in METHODS},
        }
    },
}


def id_is_draft(t: Tool, args: Mapping[str, Any]) -> bool:
    return args.get("id") != "draft"


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ("never", set()),
        ("writes", {"post", "put", "patch", "delete", "trace"}),
        ("destructive", {"put", "patch", "delete"}),  # a POST is taken to add
        ("always", set(METHODS)),
        (id_is_draft, set(METHODS)),
    ],
)
async def test_each_policy_over_an_api_s_methods_and_confirm_is_the_same(
    policy: ConfirmPolicy, expected: set[str]
) -> None:
    args = {"id": "t1"}
    async with OpenApiToolset(EVERY_METHOD, base_url="http://127.0.0.1:1", confirm="never") as ts:
        assert await asking(confirmed(ts, policy), args, METHODS) == expected
        assert await asking(ts, args, METHODS) == set()
    async with OpenApiToolset(EVERY_METHOD, base_url="http://127.0.0.1:1", confirm=policy) as ts:
        assert await asking(ts, args, METHODS) == expected
        draft = set() if policy is id_is_draft else expected
        assert await asking(ts, {"id": "draft"}, METHODS) == draft


async def test_a_spec_files_operations_get_the_same_answers_wrapped_as_by_confirm() -> None:
    spec = FIXTURES / "shapes.yaml"
    names = ["trees_get_tree", "trees_replace_tree", "trees_delete_tree", "get_forests"]
    for policy in POLICIES:
        async with OpenApiToolset(spec, base_url="http://127.0.0.1:1", confirm=policy) as sugar:
            by_confirm = await asking(sugar, {"id": "t"}, names)
        async with OpenApiToolset(spec, base_url="http://127.0.0.1:1", confirm="never") as ts:
            assert await asking(confirmed(ts, policy), {"id": "t"}, names) == by_confirm
    async with OpenApiToolset(spec, base_url="http://127.0.0.1:1") as ts:
        by_default = await asking(ts, {"id": "t"}, names)
    assert by_default == {"trees_replace_tree", "trees_delete_tree"}


# --- wrapping: names, forwarding, the agent ---------------------------------------------


async def test_the_hint_names_the_tool_as_the_model_sees_it_whatever_the_order() -> None:
    orders = [
        confirmed(prefixed(FUNCTIONS, "ops"), "always"),
        prefixed(confirmed(FUNCTIONS, "always"), "ops"),
        renamed(confirmed(prefixed(FUNCTIONS, "x"), "always"), {"x_wipe": "ops_wipe"}),
    ]
    for toolset in orders:
        (wrapped,) = [t for t in await toolset.list_tools() if t.name == "ops_wipe"]
        assert wrapped.requires_confirmation({"path": "a"})
        assert wrapped.confirmation_hint({"path": "a"}) == (
            'Allow the tool \'ops_wipe\' to run with arguments {"path": "a"}?'
        )


async def test_a_hint_of_the_tools_own_making_is_shown_as_written() -> None:
    own = tool(name="own", confirmation_hint="Really?")(lambda: "ok")
    (wrapped,) = await confirmed(StaticToolset([own]), "always").list_tools()
    assert wrapped.confirmation_hint({}) == "Really?"


async def test_a_confirmed_tool_is_the_wrapped_tool_in_every_other_member() -> None:
    def deploy(ctx: ToolContext, service: str) -> str:
        """Deploy."""
        return "started"

    inner = tool(
        read_only=True,
        is_long_running=True,
        is_concurrency_safe=False,
        required_scopes={"ops"},
        timeout=7.0,
    )(deploy)
    wrappers: list[ConfirmedTool | RenamedTool] = [
        ConfirmedTool(inner, "always"),
        RenamedTool(inner, "deploy"),
        ConfirmedTool(RenamedTool(inner, "deploy"), "never"),
    ]
    for wrapped in wrappers:
        assert isinstance(wrapped, Tool)
        members = [name for name in vars(Tool) if not name.startswith("_")]
        for name in members:
            if isinstance(vars(Tool)[name], property):
                assert getattr(wrapped, name) == getattr(inner, name), name
            else:
                assert callable(getattr(wrapped, name)), name
        assert wrapped.declaration() == inner.declaration()
        assert wrapped.timeout == 7.0
        ctx = ToolContext().for_call("c1")
        assert await wrapped.run({"service": "api"}, ctx) == "started"


async def test_the_model_is_offered_the_confirming_tool_so_its_calls_are_checked() -> None:
    req = LlmRequest()
    for t in await prefixed(confirmed(FUNCTIONS), "ops").list_tools():
        await t.process_llm_request(req, ToolContext())
    offered = req.tools["ops_wipe"]
    assert isinstance(offered, RenamedTool)
    assert isinstance(offered.tool, ConfirmedTool)
    assert offered.tool.tool is wipe
    req = LlmRequest()
    for t in await confirmed(FUNCTIONS).list_tools():
        await t.process_llm_request(req, ToolContext())
    assert isinstance(req.tools["wipe"], ConfirmedTool)
    assert req.declarations["wipe"] == wipe.declaration()


async def test_in_an_agent_a_wrapped_destructive_tool_pauses_until_approved() -> None:
    wiped: list[str] = []

    @tool(annotations=ToolAnnotations(destructive=True))
    def wipe(path: str) -> str:
        """Delete a file."""
        wiped.append(path)
        return f"wiped {path}"

    call = FunctionCall(name="wipe", args={"path": "notes.txt"})
    runner, session_id, events = await one_call(confirmed(StaticToolset([wipe])), call, "Wiped.")
    request = asked_to_confirm(events)
    assert request.hint == 'Allow the tool \'wipe\' to run with arguments {"path": "notes.txt"}?'
    assert wiped == [], "it did not run unasked"
    events = await approve(runner, session_id, request)
    assert wiped == ["notes.txt"]
    assert response_of(events, "wipe") == "wiped notes.txt"
    assert events[-1].text == "Wiped."


async def test_a_read_only_tool_runs_unasked_through_the_same_wrapper() -> None:
    call = FunctionCall(name="look", args={"path": "notes.txt"})
    _, _, events = await one_call(confirmed(FUNCTIONS), call, "Read.")
    assert response_of(events, "look") == "contents of notes.txt"
    assert events[-1].text == "Read."


async def test_renamed_over_confirmed_is_silent_about_a_tool_a_per_context_filter_hides(
    caplog: pytest.LogCaptureFixture,
) -> None:
    admins_only = filtered(FUNCTIONS, lambda t, ctx: ctx.user_id == "admin")
    toolset = renamed(confirmed(admins_only), {"wipe": "rm"})
    with caplog.at_level(logging.WARNING, logger="toolsets"):
        assert await toolset.list_tools() == ()
        admin = ToolContext(Invocation(user_id="admin"))
        assert [t.name for t in await toolset.list_tools(admin)] == [
            "look",
            "append",
            "rm",
            "touch",
        ]
    assert caplog.records == []


def test_a_confirmed_toolset_and_tool_say_what_they_wrap() -> None:
    assert repr(confirmed(FUNCTIONS, "writes")) == f"confirmed({FUNCTIONS!r}, 'writes')"
    assert repr(ConfirmedTool(wipe, "always")) == (
        "ConfirmedTool(FunctionTool(name='wipe'), policy='always')"
    )
