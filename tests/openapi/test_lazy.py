"""Schemas built on demand, as consumers see them: a broken operation of a huge spec is a
tool no consumer offers, whose calls are an error result; calls are checked against the
whole schema while the model is shown the budgeted view, which is never stricter; and
declarations do not depend on the order tools are first declared in."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from fixtures.openapi.synthetic import synthetic_spec
from jsonschema import Draft202012Validator

from tests.agent.helpers import agent_with, asked_to_confirm, response_of, start
from tests.mcp.server_helpers import connected
from toolsets import FunctionCall, SpecError, ToolContext, prefixed, searchable
from toolsets._invoke import _invalid
from toolsets.mcp import McpServer
from toolsets.openapi import OpenApiToolset
from toolsets.openapi._budget import fit_declaration
from toolsets.openapi._toolset import EAGER_OPERATIONS

BROKEN = "/paths/~1broken/post"
NOWHERE = "http://127.0.0.1:9"


def huge_spec(**paths: Any) -> dict[str, Any]:
    """More operations than are built as the spec loads, and ``paths`` (by path)."""
    spec = synthetic_spec(EAGER_OPERATIONS)
    spec["paths"].update({f"/{path}": item for path, item in paths.items()})
    return spec


def post(operation_id: str, schema: dict[str, Any]) -> dict[str, Any]:
    body = {"required": True, "content": {"application/json": {"schema": schema}}}
    return {
        "post": {
            "operationId": operation_id,
            "requestBody": body,
            "responses": {"200": {"description": "ok"}},
        }
    }


def with_broken() -> dict[str, Any]:
    return huge_spec(broken=post("broken", {"$ref": "#/components/schemas/Nowhere"}))


def is_refusal_naming_the_pointer(result: Any) -> bool:
    return isinstance(result, dict) and "error" in result and result.get("pointer") == BROKEN


@pytest.mark.anyio
async def test_a_broken_operation_of_a_huge_spec_is_offered_to_no_one_and_its_call_says_why() -> (
    None
):
    async with OpenApiToolset(with_broken(), base_url=NOWHERE) as toolset:
        listed = await toolset.list_tools()
        broken = await toolset.get_tool("broken")

        assert broken.declaration() is None
        assert broken.call_declaration() is None
        assert broken.requires_confirmation({}) is False
        with anyio.fail_after(10):
            result = await broken.run({}, ToolContext())
        assert is_refusal_naming_the_pointer(result)
        assert [p.pointer for p in toolset.problems] == [BROKEN]
        assert len(listed) == EAGER_OPERATIONS + 1
        assert "broken" not in [tool.name for tool in await toolset.list_tools()]


@pytest.mark.anyio
async def test_a_broken_operation_is_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    async with OpenApiToolset(with_broken(), base_url=NOWHERE) as toolset:
        broken = await toolset.get_tool("broken")
        for _ in range(3):
            broken.declaration()
            await broken.run({}, ToolContext())

    assert [r.getMessage() for r in caplog.records].count(caplog.records[0].getMessage()) == 1


@pytest.mark.anyio
async def test_a_broken_schema_raised_again_does_not_grow_its_traceback() -> None:
    def frames(error: BaseException) -> int:
        count, tb = 0, error.__traceback__
        while tb is not None:
            count, tb = count + 1, tb.tb_next
        return count

    async with OpenApiToolset(with_broken(), base_url=NOWHERE) as toolset:
        broken = await toolset.get_tool("broken")
        depths = []
        for _ in range(20):
            with pytest.raises(SpecError) as raised:
                _ = broken.arguments_schema
            depths.append(frames(raised.value))
            cause = raised.value.__cause__
            assert cause is not None
            depths.append(frames(cause))

    assert raised.value.pointer == BROKEN
    assert max(depths) <= depths[0] + depths[1]


@pytest.mark.anyio
async def test_an_agent_over_a_huge_spec_with_a_broken_operation_runs_on() -> None:
    toolset = OpenApiToolset(with_broken(), base_url=NOWHERE)
    steps = [FunctionCall(id="c", name="broken", args={}), "done"]
    runner, model = agent_with(steps, [toolset])
    with anyio.fail_after(60):
        _, events = await start(runner, "hi")

    assert "error" in str(response_of(events, "broken"))
    offered = model.requests[0].tools  # the first request declared every tool but it
    assert "broken" not in offered
    assert len(offered) == EAGER_OPERATIONS
    await toolset.shutdown()


@pytest.mark.anyio
async def test_a_served_huge_spec_lists_its_tools_the_first_time_without_the_broken_one() -> None:
    toolset = OpenApiToolset(with_broken(), base_url=NOWHERE)
    server = McpServer(toolset, page_size=10_000)
    # Listing builds every declaration of the huge spec: a bound as the agent tests' (a
    # busy machine takes seconds).
    async with connected(server, "legacy", within=60) as client:
        listed = await client.list_tools()
        called = await client.call_tool("broken", {})

    names = [tool.name for tool in listed.tools]
    assert len(names) == EAGER_OPERATIONS
    assert "broken" not in names
    assert called.is_error
    await toolset.shutdown()


@pytest.mark.anyio
async def test_searching_a_huge_spec_then_calling_its_broken_operation_is_an_error_result() -> None:
    toolset = OpenApiToolset(with_broken(), base_url=NOWHERE)
    steps = [
        FunctionCall(id="s", name="search_tools", args={"query": "broken"}),
        FunctionCall(id="c", name="broken", args={}),
        "done",
    ]
    runner, _ = agent_with(steps, [searchable(toolset)])
    with anyio.fail_after(60):
        _, events = await start(runner, "hi")

    found = response_of(events, "search_tools")
    assert isinstance(found, dict)
    assert "error" not in found
    # Loading it built it: found broken, it is left out (or, called, says why).
    called = response_of(events, "broken")
    assert isinstance(called, dict)
    assert "error" in called
    assert [p.pointer for p in toolset.problems] == [BROKEN]
    await toolset.shutdown()


# --- building declarations off the event loop -------------------------------------------------


def spread_broken() -> tuple[dict[str, Any], int]:
    """More operations than are built as the spec loads, one path in ten followed by a
    broken operation (a ``$ref`` to nowhere): how many have been found broken tells how
    far building has gone. The spec, and how many are broken."""
    spec = synthetic_spec(EAGER_OPERATIONS)
    paths: dict[str, Any] = {}
    broken = 0
    for number, (path, item) in enumerate(spec["paths"].items()):
        paths[path] = item
        if number % 10 == 0:
            paths[f"/broken{number}"] = post(f"broken_{number}", {"$ref": "#/nowhere"})
            broken += 1
    spec["paths"] = paths
    return spec, broken


async def progress_seen(
    toolset: OpenApiToolset, work: Callable[[], Awaitable[object]]
) -> list[int]:
    """How many broken operations had been found each time a task of the event loop ran
    while ``work`` did: a loop that builds the declarations itself only sees none or all."""
    seen: list[int] = []
    done = anyio.Event()

    async def watch() -> None:
        while not done.is_set():
            seen.append(len(toolset.problems))
            # A short sleep, not a busy loop: the loop idles between looks (the building
            # thread gets the interpreter, under a tracer too), and looks every few ms.
            await anyio.sleep(0.001)

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(watch)
        try:
            with anyio.fail_after(120):
                await work()
        finally:
            done.set()
    return seen


@pytest.mark.anyio
async def test_a_server_builds_a_huge_catalogues_declarations_while_the_event_loop_runs_on() -> (
    None
):
    spec, broken = spread_broken()
    async with OpenApiToolset(spec, base_url=NOWHERE) as toolset:
        await toolset.list_tools()
        server = McpServer(toolset)
        listed: list[str] = []
        async with connected(server, "legacy") as client:

            async def list_all() -> None:
                cursor: str | None = None
                while True:
                    page = await client.list_tools(cursor=cursor)
                    listed.extend(tool.name for tool in page.tools)
                    cursor = page.next_cursor
                    if cursor is None:
                        return

            seen = await progress_seen(toolset, list_all)
            assert len(toolset.problems) == broken

        assert any(0 < found < broken for found in seen)  # the loop ran while they were built
        assert len(listed) == EAGER_OPERATIONS
        assert not any(name.startswith("broken_") for name in listed)


@pytest.mark.anyio
async def test_an_agent_builds_a_huge_catalogues_declarations_while_the_event_loop_runs_on() -> (
    None
):
    spec, broken = spread_broken()
    async with OpenApiToolset(spec, base_url=NOWHERE) as toolset:
        await toolset.list_tools()
        runner, model = agent_with(["done"], [toolset])

        seen = await progress_seen(toolset, lambda: start(runner, "hi"))

        assert any(0 < found < broken for found in seen)
        assert len(toolset.problems) == broken
        assert len(model.requests[0].tools) == EAGER_OPERATIONS


WIDE = {f"field_{i}": {"type": "string", "description": "What it is. " * 10} for i in range(40)}
NESTED = {"type": "object", "required": ["field_30"], "properties": WIDE}
EVENTS = [f"event.{i}" for i in range(30)]
EVENT = {"oneOf": [{"type": "string", "enum": EVENTS}, {"type": "string", "pattern": "^x-"}]}


def gated_spec() -> dict[str, Any]:
    schema = {
        "type": "object",
        "required": ["body"],
        "properties": {"body": NESTED, "event": EVENT},
    }
    return {
        "openapi": "3.0.3",
        "info": {"title": "gated", "version": "1"},
        "paths": {"/things": post("make", schema)},
    }


@pytest.mark.anyio
async def test_a_call_valid_under_the_whole_schema_but_not_the_view_is_asked_to_confirm() -> None:
    toolset = OpenApiToolset(
        gated_spec(), base_url=NOWHERE, confirm="always", declaration_budget=700
    )
    make = await toolset.get_tool("make")
    declared = make.declaration()
    assert declared is not None
    assert declared.parameters != make.arguments_schema
    args = {"body": {"field_30": "a", "extra": {"deep": [1, 2]}}, "event": "x-custom"}
    steps = [FunctionCall(id="c", name="make", args=args), "done"]
    runner, _ = agent_with(steps, [toolset])
    with anyio.fail_after(30):
        _, events = await start(runner, "hi")

    assert asked_to_confirm(events).function_call_id == "c"
    assert _invalid(make, args) is None
    await toolset.shutdown()


@pytest.mark.anyio
async def test_a_call_missing_a_required_field_the_view_hides_is_refused_before_confirmation() -> (
    None
):
    toolset = OpenApiToolset(
        gated_spec(), base_url=NOWHERE, confirm="always", declaration_budget=700
    )
    make = await toolset.get_tool("make")
    assert "field_30" not in json.dumps(make.declaration().parameters.get("required", []))
    args = {"body": {"field_0": "a"}}
    steps = [FunctionCall(id="c", name="make", args=args), "done"]
    runner, _ = agent_with(steps, [toolset])
    with anyio.fail_after(30):
        _, events = await start(runner, "hi")

    result = response_of(events, "make")
    assert isinstance(result, dict)
    assert result["fields"] == {"body.field_30": "Field required"}
    assert not any(event.pending for event in events)
    await toolset.shutdown()


LONG = [f"v{i}" for i in range(30)]
DEEP = {"type": "object", "properties": {"a": {"type": "object", "properties": WIDE}}}
CASES = {
    "not an enum": (
        {"not": {"enum": LONG}},
        ["other", "v30"],
    ),
    "oneOf over a long enum": (
        {"oneOf": [{"type": "string", "enum": LONG}, {"type": "string", "pattern": "^x-"}]},
        ["v3", "x-y", "v29"],
    ),
    "if a long enum": (
        {"if": {"enum": LONG}, "then": {"minLength": 2}, "else": {"maxLength": 1}},
        ["v1", "q"],
    ),
    "not a deep object": (
        {"type": "object", "not": {"required": ["a"], **DEEP}},
        [{}, {"b": 1}],
    ),
    "oneOf deep objects": (
        {"oneOf": [DEEP, {"type": "object", "required": ["b"], "properties": {"b": DEEP}}]},
        [{"a": {"field_1": "x"}}, {"a": 5, "b": {}}],
    ),
    "unevaluated beside summarized members": (
        {"allOf": [DEEP], "unevaluatedProperties": False},
        [{"a": {"field_2": "x"}}],
    ),
    "contains with a maximum": (
        {"type": "array", "contains": {"enum": LONG}, "maxContains": 1},
        [["v1", "zz"]],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("budget", [300, 700, 1500])
def test_the_view_accepts_whatever_the_whole_schema_accepts(case: str, budget: int) -> None:
    node, values = CASES[case]
    parameters = {"type": "object", "properties": {"x": node, "pad": DEEP}}
    _, view = fit_declaration("A tool.", parameters, budget)
    whole, shown = Draft202012Validator(parameters), Draft202012Validator(view)
    for value in values:
        args = {"x": value}
        assert whole.is_valid(args), (case, value)
        assert shown.is_valid(args), (case, value, view)


def order_spec() -> dict[str, Any]:
    def refer(ref: str) -> dict[str, Any]:
        return {"type": "object", "properties": {"x": {"$ref": ref}}}

    spec = huge_spec(
        a=post("use_a", refer("#/components/schemas/Item")),
        b=post("use_b", refer("#/components/schemas/Other/properties/Item")),
    )
    spec["components"]["schemas"].update(
        {
            "Item": {"type": "object", "properties": {"a": {"type": "string"}}},
            "Other": {
                "type": "object",
                "properties": {
                    "Item": {"type": "object", "properties": {"b": {"type": "integer"}}}
                },
            },
        }
    )
    return spec


@pytest.mark.anyio
async def test_declarations_are_the_same_whatever_order_tools_are_first_declared_in() -> None:
    async def declared(order: list[str]) -> dict[str, Any]:
        async with OpenApiToolset(order_spec(), base_url=NOWHERE) as toolset:
            tools = {name: await toolset.get_tool(name) for name in order}
            return {name: tools[name].declaration() for name in order}

    first = await declared(["use_a", "use_b"])
    second = await declared(["use_b", "use_a"])

    assert first == second
    assert first["use_a"].parameters["properties"]["x"] == {"$ref": "#/$defs/Item"}


@pytest.mark.anyio
async def test_a_prefixed_tool_is_called_under_the_whole_schema_too() -> None:
    toolset = OpenApiToolset(gated_spec(), base_url=NOWHERE, declaration_budget=700)
    (tool,) = await prefixed(toolset, "api").list_tools()
    hidden_required = {"body": {"field_0": "a"}}  # field_30 is required, summarized away

    refused = _invalid(tool, hidden_required)

    assert refused is not None
    assert refused.result == {
        "error": refused.result["error"],
        "fields": {"body.field_30": "Field required"},
    }
    assert _invalid(tool, {"body": {"field_30": "a"}}) is None
    await toolset.shutdown()


def test_a_summary_names_every_required_property_first_and_says_so() -> None:
    wide = {f"p_{i}": {"type": "string", "description": "Something. " * 5} for i in range(60)}
    nested = {"type": "object", "required": ["p_50", "p_3"], "properties": wide}
    parameters = {
        "type": "object",
        "properties": {"body": {"type": "object", "properties": {"n": nested}}},
    }

    _, view = fit_declaration("A tool.", parameters, 600)

    summary = view["properties"]["body"]["properties"]["n"]["description"]
    assert summary.startswith("Properties: p_3 (required), p_50 (required), p_0, ")
    assert "(36 more)" in summary
