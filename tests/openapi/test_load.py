"""OpenApiToolset loading real specs: GitHub's (npm @octokit/openapi), ReadMe's collection
of example documents (npm @readme/oas-examples: Swagger 2.0, 3.0 and 3.1, the Swagger
Petstore among them), and our own fixtures for external references, circular schemas, 3.0
dialect, collisions and broken operations."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator

from tests.openapi.helpers import FIXTURES, GITHUB, OAS_EXAMPLES, recording_server
from toolsets import SpecError, ToolContext
from toolsets._metaschema import surely_valid
from toolsets._validation import TrustedSchema
from toolsets.openapi import OpenApiToolset, RestApiTool

LEGAL = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")

pytestmark = pytest.mark.anyio


async def tools_of(source: Any, **options: Any) -> dict[str, RestApiTool]:
    async with OpenApiToolset(source, **options) as toolset:
        return {tool.name: tool for tool in await toolset.list_tools()}


# --- GitHub's spec ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def github_declarations() -> list[dict[str, Any]]:
    import anyio

    async def load() -> list[dict[str, Any]]:
        tools = await tools_of(GITHUB)
        return [dict(t.declaration().to_json()) for t in tools.values()]  # type: ignore[union-attr]

    return anyio.run(load)


def test_every_github_operation_becomes_a_tool_with_a_legal_unique_name(
    github_declarations: list[dict[str, Any]],
) -> None:
    names = [d["name"] for d in github_declarations]
    assert len(names) == 1223
    assert len(set(names)) == len(names)
    assert all(LEGAL.match(name) for name in names), [n for n in names if not LEGAL.match(n)]


def test_github_operation_ids_become_readable_names(
    github_declarations: list[dict[str, Any]],
) -> None:
    branch = next(d for d in github_declarations if d["name"] == "repos_get_branch")
    parameters = branch["parameters"]
    assert parameters["required"] == ["owner", "repo", "branch"]
    assert parameters["properties"]["owner"]["type"] == "string"
    assert "$defs" not in parameters


def test_the_github_catalogue_stays_compact(github_declarations: list[dict[str, Any]]) -> None:
    seen = [
        {"name": d["name"], "description": d["description"], "parameters": d["parameters"]}
        for d in github_declarations
    ]
    size = len(json.dumps(seen, separators=(",", ":")))  # what a model is sent
    assert size <= 1_500_000, size  # issue 5's target
    assert "](https://docs.github.com" not in json.dumps(seen)


# --- our fixture: dialect, definitions, names, problems --------------------------------


async def test_circular_schemas_are_shared_definitions_not_expanded() -> None:
    tools = await tools_of(FIXTURES / "shapes.yaml")
    replace = tools["trees_replace_tree"].parameters
    assert replace["properties"]["root"] == {"$ref": "#/$defs/Node"}
    node = replace["$defs"]["Node"]
    assert node["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}
    assert "x-internal" not in node
    (forests,) = [t for n, t in tools.items() if n.startswith("a_very_long")]
    assert forests.parameters["properties"]["body"]["items"] == {"$ref": "#/$defs/Node"}


async def test_openapi_30_keywords_become_json_schema() -> None:
    tools = await tools_of(FIXTURES / "shapes.yaml")
    depth = tools["trees_get_tree"].parameters["properties"]["depth"]
    assert depth == {"type": ["integer", "null"], "exclusiveMinimum": 0}
    note = tools["trees_replace_tree"].parameters["properties"]["note"]
    assert note == {"type": ["string", "null"]}  # example dropped


async def test_read_only_properties_are_not_offered_and_names_collide_predictably() -> None:
    tools = await tools_of(FIXTURES / "shapes.yaml")
    replace = tools["trees_replace_tree"].parameters
    # path "id" keeps the name; the header of the same name is "header_id"; the body's
    # "id" is readOnly, so it is not offered at all.
    assert list(replace["properties"]) == ["id", "header_id", "root", "note"]
    assert replace["required"] == ["id", "root"]


async def test_names_are_truncated_with_a_hash_and_fall_back_to_method_and_path() -> None:
    tools = await tools_of(FIXTURES / "shapes.yaml")
    assert "get_forests" in tools
    long_names = [n for n in tools if n.startswith("a_very_long")]
    assert len(long_names) == 1
    # Cut to fit, ending in a hash of the whole operationId, so cut names stay distinct.
    assert re.fullmatch(
        r"a_very_long_operation_id_that_goes_on_and_on_well_past_[0-9a-f]{8}", long_names[0]
    )


async def test_method_hints() -> None:
    tools = await tools_of(FIXTURES / "shapes.yaml", confirm="writes")
    get, put, delete = (tools[f"trees_{v}_tree"] for v in ("get", "replace", "delete"))
    assert get.is_read_only
    assert get.is_concurrency_safe
    assert not get.requires_confirmation({})
    assert not put.is_read_only
    assert put.requires_confirmation({})
    assert put.declaration().annotations.idempotent  # type: ignore[union-attr]
    assert delete.declaration().annotations.destructive  # type: ignore[union-attr]
    assert put.declaration().annotations.destructive  # type: ignore[union-attr]
    destructive_only = await tools_of(FIXTURES / "shapes.yaml", confirm="destructive")
    assert destructive_only["trees_delete_tree"].requires_confirmation({})
    assert destructive_only["trees_replace_tree"].requires_confirmation({}), "a PUT overwrites"
    never = await tools_of(FIXTURES / "shapes.yaml", confirm="never")
    assert not never["trees_delete_tree"].requires_confirmation({})


async def test_broken_operations_are_reported_with_their_pointer_and_the_rest_loads(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with OpenApiToolset(FIXTURES / "shapes.yaml") as toolset:
        names = {t.name for t in await toolset.list_tools()}
        found = toolset.problems
    problems = {p.pointer: str(p) for p in found}
    assert "trees_get_tree" in names
    assert "broken" not in names
    assert "dangling" not in names
    assert "/paths/~1broken~1{missing}/get" in problems
    assert "{missing}" in problems["/paths/~1broken~1{missing}/get"]
    # The operation is named; the reference that broke it is in the message and the cause.
    assert "/components/parameters/Nowhere" in problems["/paths/~1dangling/get"]
    (dangling,) = [p for p in found if p.pointer == "/paths/~1dangling/get"]
    assert isinstance(dangling.__cause__, SpecError)
    assert dangling.__cause__.pointer == "/paths/~1dangling/get/parameters/0"
    assert any("skipping GET /dangling" in r.message for r in caplog.records)


async def test_links_become_their_text_and_sentences_that_only_point_to_one_are_left_out() -> None:
    spec = {
        "openapi": "3.0.3",
        "info": {"title": "Links", "version": "1"},
        "servers": [{"url": "https://links.example"}],
        "paths": {
            "/items": {
                "get": {
                    "operationId": "list",
                    "summary": "List items",
                    "description": (
                        "Lists the [items](https://docs.example/items) you can see. For more "
                        'information, see "[Using pagination](https://docs.example/p)."\n\n'
                        "See [the guide](/guide) for the scopes it needs.\n\n"
                        "Sorted by [creation time](https://docs.example/t). For more information, "
                        'see "[Limits](https://docs.example/l)"\nand "[Tips](https://docs.example/b)."'
                    ),
                    "parameters": [
                        {
                            "name": "page",
                            "in": "query",
                            "description": "The page. For more information about pages, see "
                            "[Paging\nin the API](https://docs.example/p).",
                            "schema": {"type": "integer"},
                        }
                    ],
                    "responses": {"200": {"description": "ok"}},
                }
            }
        },
    }
    tool = (await tools_of(spec))["list"]
    assert tool.description == (
        "List items\n\nLists the items you can see.\n\nSorted by creation time."
    )
    assert tool.parameters["properties"]["page"]["description"] == "The page."


async def test_a_broken_document_names_its_pointer() -> None:
    spec = {"openapi": "3.0.0", "info": {"title": "x"}, "paths": {"/a": {"get": []}}}
    async with OpenApiToolset(spec) as toolset:
        assert await toolset.list_tools() == ()
        assert [p.pointer for p in toolset.problems] == ["/paths/~1a/get"]
    with pytest.raises(SpecError) as caught:
        await OpenApiToolset({"openapi": "2.5"}).load()
    assert caught.value.pointer == "/openapi"
    with pytest.raises(SpecError, match="invalid JSON or YAML"):
        await OpenApiToolset("{not: [valid\n").load()


# --- Swagger 2.0 and external references ------------------------------------------------


PETSTORE_OPERATIONS = {
    "addPet",
    "updatePet",
    "findPetsByStatus",
    "findPetsByTags",
    "getPetById",
    "updatePetWithForm",
    "deletePet",
    "uploadFile",
    "getInventory",
    "placeOrder",
    "getOrderById",
    "deleteOrder",
    "createUser",
    "createUsersWithArrayInput",
    "createUsersWithListInput",
    "loginUser",
    "logoutUser",
    "getUserByName",
    "updateUser",
    "deleteUser",
}


async def test_swagger_2_petstore() -> None:
    tools = await tools_of(OAS_EXAMPLES / "2.0" / "json" / "petstore.json")
    assert set(tools) == PETSTORE_OPERATIONS
    assert tools["getPetById"].parameters["properties"]["petId"]["type"] == "integer"
    status = tools["findPetsByStatus"].parameters["properties"]["status"]
    assert status["type"] == "array"
    assert set(status["items"]["enum"]) == {"available", "pending", "sold"}


@pytest.mark.parametrize("kind", ["json", "yaml"])
async def test_external_references_across_files(kind: str) -> None:
    # Swagger 2.0: swagger.* → NewTask.* (allOf Task.*), parameters.*, ../common/Problem.*.
    spec = FIXTURES / "swagger2-split" / kind / "api" / f"swagger.{kind}"
    tools = await tools_of(spec)
    add = tools["createTask"].parameters
    # The body is NewTask (allOf Task and more): both files become definitions.
    assert add["properties"]["body"]["$ref"] == "#/$defs/NewTask"
    assert add["required"] == ["body"]
    new_task = add["$defs"]["NewTask"]
    assert new_task["allOf"][0] == {"$ref": "#/$defs/Task"}
    assert new_task["allOf"][1]["required"] == ["name"]
    assert add["$defs"]["Task"]["properties"]["name"] == {"type": "string"}
    assert tools["listTasks"].parameters["properties"]["limit"]["type"] == "integer"
    assert set(tools) == {"listTasks", "createTask", "get_task_by_id", "deleteTask"}


async def test_every_example_document_of_the_collection_loads_without_problems() -> None:
    # Swagger 2.0, 3.0 and 3.1: webhooks-only documents, every parameter style, callbacks,
    # circular schemas, discriminators, every security scheme, server variables, ...
    specs = sorted(OAS_EXAMPLES.glob("*/json/*.json"))
    assert len(specs) >= 60
    for spec in specs:
        async with OpenApiToolset(spec, base_url="http://127.0.0.1:1") as toolset:
            await toolset.list_tools()
            assert toolset.problems == (), spec


async def test_every_arguments_schema_made_is_valid_json_schema_so_calls_trust_it() -> None:
    # Calls never check an operation's schema against the meta-schema (it would take up
    # to a fifth of a second on a first call): it is valid by construction. GitHub's and
    # every example document's, walked whole; a sample also checked by jsonschema.
    schemas: list[Any] = []
    for spec in [GITHUB, *sorted(OAS_EXAMPLES.glob("*/json/*.json"))]:
        async with OpenApiToolset(spec, base_url="http://127.0.0.1:1") as toolset:
            tools = await toolset.list_tools()
            schemas.extend(t.arguments_schema for t in tools if isinstance(t, RestApiTool))
    assert len(schemas) > 1500
    assert all(isinstance(schema, TrustedSchema) for schema in schemas)
    assert [s for s in schemas if not surely_valid(s)] == []
    for schema in schemas[::60]:
        Draft202012Validator.check_schema(schema)


async def test_a_spec_schema_the_meta_schema_refuses_is_a_problem_not_a_trusted_schema() -> None:
    spec = {
        "openapi": "3.1.0",
        "info": {"title": "t", "version": "1"},
        "paths": {
            "/a": {
                "post": {
                    "operationId": "a",
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "properties": {
                                        "x": {"anyOf": []},
                                        "y": {"type": "null"},
                                        "z": {"type": "object", "required": ["k", "k"]},
                                    },
                                    "required": ["y", "y"],
                                }
                            }
                        },
                    },
                    "responses": {"200": {"description": "ok"}},
                }
            },
            "/b": {
                "get": {
                    "operationId": "b",
                    "parameters": [
                        {
                            "name": "n",
                            "in": "query",
                            "required": True,
                            "schema": {"type": "null", "nullable": True},
                        }
                    ],
                    "responses": {"200": {"description": "ok"}},
                }
            },
        },
    }
    async with OpenApiToolset(spec, base_url="http://127.0.0.1:1") as toolset:
        tools = {tool.name: tool for tool in await toolset.list_tools()}
        assert set(tools) == {"b"}  # a is broken: its anyOf lists no schema
        (problem,) = toolset.problems
    assert problem.pointer == "/paths/~1a/post"
    assert "/properties/x/anyOf: anyOf must list at least one schema" in str(problem)
    spec["paths"]["/a"]["post"]["requestBody"]["content"]["application/json"]["schema"][
        "properties"
    ]["x"] = {"type": "string"}
    async with OpenApiToolset(spec, base_url="http://127.0.0.1:1") as toolset:
        tools = {tool.name: tool for tool in await toolset.list_tools()}
        for tool in tools.values():
            Draft202012Validator.check_schema(tool.arguments_schema)
        z = tools["a"].arguments_schema["properties"]["z"]
        assert z["required"] == ["k"]  # once, as the meta-schema asks


@pytest.mark.parametrize("version", ["2.0", "3.0", "3.1"])
async def test_swagger_petstore_yaml(version: str) -> None:
    tools = await tools_of(OAS_EXAMPLES / version / "yaml" / "petstore.yaml")
    assert set(tools) == PETSTORE_OPERATIONS
    for tool in tools.values():
        assert LEGAL.match(tool.name)


async def test_references_inside_other_files_are_relative_to_those_files() -> None:
    # spec.yaml → bodies/pet-body.yaml → ../schemas/Pet.yaml → Tag.yaml, and a shared
    # parameter in parameters/common.yaml → ../schemas/Kind.yaml.
    async with OpenApiToolset(FIXTURES / "split" / "spec.yaml") as toolset:
        tools = {tool.name: tool for tool in await toolset.list_tools()}
        assert toolset.problems == ()
        pet = tools["add_pet"].parameters
        assert pet["properties"]["kind"] == {"$ref": "#/$defs/Kind"}
        assert pet["$defs"]["Kind"] == {"type": "string", "enum": ["cat", "dog"]}
        assert pet["$defs"]["Tag"]["properties"] == {"label": {"type": "string"}}
        request = tools["add_form"].build_request({"name": "rex", "tag": {"label": "x"}})
        assert request.content == b"name=rex&tag%5Blabel%5D=x"


async def test_swagger_2_has_no_cookie_parameters() -> None:
    spec = {
        "swagger": "2.0",
        "info": {"title": "t", "version": "1"},
        "host": "127.0.0.1",
        "paths": {
            "/a": {
                "get": {
                    "operationId": "get_a",
                    "parameters": [{"name": "sid", "in": "cookie", "type": "string"}],
                    "responses": {"200": {"description": "ok"}},
                }
            }
        },
    }
    async with OpenApiToolset(spec) as toolset:
        assert await toolset.list_tools() == ()
        (problem,) = toolset.problems
    assert problem.pointer == "/paths/~1a/get"
    assert isinstance(problem.__cause__, SpecError)
    assert problem.__cause__.pointer == "/paths/~1a/get/parameters/0"
    assert "'in' must be one of path, query, header, body, formData" in str(problem)


async def test_json_schema_applicators_are_kept_so_nothing_allowed_is_forbidden() -> None:
    tags = {
        "type": "object",
        "patternProperties": {"^[a-z]+$": {"type": "integer"}},
        "additionalProperties": False,
        "propertyNames": {"maxLength": 8},
        "dependentRequired": {"a": ["b"]},
        "if": {"required": ["x"]},
        "then": {"required": ["y"]},
        "else": {},
    }
    spec = {
        "openapi": "3.1.0",
        "info": {"title": "t", "version": "1"},
        "servers": [{"url": "http://127.0.0.1:9"}],
        "paths": {
            "/x": {
                "post": {
                    "operationId": "put_tags",
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {
                                "schema": {"type": "object", "properties": {"tags": tags}}
                            }
                        },
                    },
                    "responses": {"200": {"description": "ok"}},
                }
            }
        },
    }
    async with OpenApiToolset(spec) as toolset:
        (tool,) = await toolset.list_tools()
        kept = tool.parameters["properties"]["tags"]
        assert kept["patternProperties"] == {"^[a-z]+$": {"type": "integer"}}
        assert {"propertyNames", "dependentRequired", "if", "then", "else"} <= set(kept)
        validator = Draft202012Validator(tool.parameters)
        assert validator.is_valid({"tags": {"abc": 1}})
        assert not validator.is_valid({"tags": {"ABC": 1}})


# --- OpenAPI 3.1: schemas named by $id ------------------------------------------------


async def test_schemas_named_by_their_id_are_found_as_json_schema_2020_12_says(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with OpenApiToolset(FIXTURES / "ids31.yaml") as toolset:
        tools = {tool.name: tool for tool in await toolset.list_tools()}
        assert toolset.problems == ()
    assert set(tools) == {"plantBed", "getBed", "orderSeeds"}
    assert not [r for r in caplog.records if r.levelname == "WARNING"]
    bed = tools["plantBed"].parameters
    # /schemas/soil is Soil's $id (relative to the document); "texture" is relative to it.
    assert bed["properties"]["soil"] == {"$ref": "#/$defs/Soil"}
    assert bed["$defs"]["Soil"]["properties"]["texture"] == {"$ref": "#/$defs/Texture"}
    assert bed["$defs"]["Texture"] == {"type": "string", "enum": ["sand", "loam", "clay"]}
    # A JSON pointer inside an identified schema is relative to that schema.
    assert bed["$defs"]["Plant"]["properties"]["spacing"] == {"$ref": "#/$defs/spacing_8b9e3dcc"}
    assert bed["$defs"]["spacing_8b9e3dcc"] == {"type": "number", "minimum": 0}
    # An $anchor inside an identified schema (named after its place, like any other: a
    # schema of the spec that is no component gets a digest of its place in its name).
    assert tools["getBed"].parameters["$defs"]["bedId_3b0a410a"] == {
        "type": "integer",
        "minimum": 1,
    }
    # An absolute $id, and a nested $id that references resolve against.
    order = tools["orderSeeds"].parameters
    packet = order["properties"]["packets"]["items"]  # the body's properties, lifted
    assert packet["properties"]["seed"] == {"$ref": "#/$defs/Seed"}
    assert packet["properties"]["count"] == {"$ref": "#/$defs/count_b010d91b"}
    assert order["$defs"]["Seed"]["pattern"] == "^[a-z]+$"
    validator = Draft202012Validator(order)
    assert validator.is_valid({"packets": [{"seed": "kale", "count": 2}]})
    assert not validator.is_valid({"packets": [{"seed": "Kale", "count": 0}]})


async def test_the_same_schema_named_two_ways_is_one_definition() -> None:
    tools = await tools_of(FIXTURES / "ids31.yaml")
    defs = tools["plantBed"].parameters["$defs"]
    # Bed → /schemas/soil and getBed's response → the same: one "Soil" definition.
    assert sorted(defs) == ["Plant", "Soil", "Texture", "spacing_8b9e3dcc"]


async def test_a_spec_declares_the_same_wherever_its_file_is(tmp_path: Path) -> None:
    moved = tmp_path / "elsewhere" / "ids31.yaml"
    moved.parent.mkdir()
    shutil.copyfile(FIXTURES / "ids31.yaml", moved)
    here, there = await tools_of(FIXTURES / "ids31.yaml"), await tools_of(moved)
    assert {name: tool.parameters for name, tool in here.items()} == {
        name: tool.parameters for name, tool in there.items()
    }


async def test_responses_are_checked_through_id_references() -> None:
    good = {"name": "a", "soil": {"texture": "loam"}, "plants": [{"spacing": 1}]}
    bad = {"name": "a", "soil": {"texture": "mud"}, "plants": [{"spacing": -1}]}
    results = []
    async with recording_server() as server:
        server.status = 201
        spec = FIXTURES / "ids31.yaml"
        async with OpenApiToolset(spec, base_url=server.url, validate_responses="error") as ts:
            tool = await ts.get_tool("plantBed")
            for body in (good, bad):
                server.body = body
                results.append(await tool.run({"name": "a"}, ToolContext()))
    assert results[0] == good
    assert {p["field"] for p in results[1]["problems"]} == {"soil.texture", "plants.0.spacing"}


async def test_an_id_reference_that_leads_nowhere_drops_its_operation_by_pointer(
    caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    spec = yaml.safe_load((FIXTURES / "ids31.yaml").read_text())
    spec["components"]["schemas"]["Soil"]["properties"]["texture"]["$ref"] = "texturre"
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec))
    async with OpenApiToolset(tmp_path / "spec.yaml") as toolset:
        names = {tool.name for tool in await toolset.list_tools()}
        problems = toolset.problems
        validated = await toolset.validate()
    assert names == {"getBed", "orderSeeds"}  # getBed's response is not read to load it
    (problem,) = problems
    assert problem.pointer == "/paths/~1beds/post"
    assert "texturre" in str(problem)
    assert problem in validated  # validate() reports what loading found
    logged = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert any("POST /beds" in line and "texturre" in line for line in logged)


async def test_an_id_reference_in_a_spec_given_in_memory_says_what_is_missing() -> None:
    spec = yaml.safe_load((FIXTURES / "ids31.yaml").read_text())
    spec["components"]["schemas"]["Soil"]["properties"]["texture"]["$ref"] = "texturre"
    async with OpenApiToolset(spec) as toolset:
        assert {tool.name for tool in await toolset.list_tools()} == {"getBed", "orderSeeds"}
        (problem,) = toolset.problems
    assert problem.pointer == "/paths/~1beds/post"
    assert "/schemas/texturre" in str(problem)


async def test_extensions_under_paths_are_not_paths(caplog: pytest.LogCaptureFixture) -> None:
    spec = {
        "openapi": "3.0.3",
        "info": {"title": "t", "version": "1"},
        "servers": [{"url": "http://127.0.0.1:9"}],
        "paths": {
            "x-codegen-contextRoot": "/apis/registry/v2",  # as APIs.guru's apicurio spec has
            "x-other": {"get": {"operationId": "not_an_operation"}},
            "/a": {"get": {"operationId": "get_a", "responses": {"200": {"description": "ok"}}}},
        },
    }
    async with OpenApiToolset(spec) as toolset:
        assert [tool.name for tool in await toolset.list_tools()] == ["get_a"]
        assert toolset.problems == ()
    assert not caplog.records
