"""What a successful call of an operation returns, as its spec describes it
(`RestApiTool.success_response`): which response, which media type, and its schema with
the ``$ref``s followed within bounds."""

from __future__ import annotations

from typing import Any

import pytest

from toolsets.openapi import OpenApiToolset
from toolsets.openapi._returns import MAX_REFERENCES_FOLLOWED

pytestmark = pytest.mark.anyio


def spec(responses: dict[str, Any], **components: Any) -> dict[str, Any]:
    return {
        "openapi": "3.0.3",
        "info": {"title": "returns", "version": "1"},
        "paths": {"/r": {"get": {"operationId": "get_r", "responses": responses}}},
        "components": {"schemas": components},
    }


async def success(document: dict[str, Any]) -> Any:
    async with OpenApiToolset(document, base_url="http://127.0.0.1:9") as toolset:
        (tool,) = await toolset.list_tools()
        return tool.success_response()


def body(schema: Any, media: str = "application/json") -> dict[str, Any]:
    return {"description": "the thing", "content": {media: {"schema": schema}}}


async def test_the_lowest_2xx_response_is_the_success_one() -> None:
    found = await success(
        spec(
            {
                "404": body({"type": "string"}),
                "201": body({"type": "integer"}),
                "200": {"description": "none"},
            }
        )
    )
    assert (found.status, found.description, found.schema) == ("200", "none", None)
    found = await success(
        spec({"default": body({"type": "string"}), "2XX": body({"type": "integer"})})
    )
    assert (found.status, found.schema) == ("2XX", {"type": "integer"})
    assert await success(spec({"404": body({"type": "string"})})) is None


async def test_status_codes_yaml_read_as_numbers_are_ordered_with_the_quoted_ones() -> None:
    # YAML reads an unquoted 201 as a number and '202' as a string: both are codes.
    found = await success(spec({201: body({"type": "integer"}), "202": {"description": "queued"}}))
    assert (found.status, found.schema) == ("201", {"type": "integer"})


async def test_json_is_chosen_among_the_media_types() -> None:
    response = {
        "description": "ok",
        "content": {
            "text/csv": {"schema": {"type": "string"}},
            "application/vnd.api+json": {"schema": {"type": "object"}},
        },
    }
    found = await success(spec({"200": response}))
    assert (found.content_type, found.schema) == ("application/vnd.api+json", {"type": "object"})


async def test_references_are_followed_within_their_bound_and_a_recursive_one_is_kept() -> None:
    document = spec(
        {"200": body({"type": "array", "items": {"$ref": "#/components/schemas/Issue"}})},
        Issue={
            "type": "object",
            "properties": {
                "user": {"$ref": "#/components/schemas/User"},
                "parent": {"$ref": "#/components/schemas/Issue"},
            },
        },
        User={"type": "object", "properties": {"org": {"$ref": "#/components/schemas/Org"}}},
        Org={"type": "object", "properties": {"name": {"type": "string"}}},
    )
    found = await success(document)
    issue = found.schema["items"]
    assert MAX_REFERENCES_FOLLOWED == 2
    assert issue["properties"]["user"]["type"] == "object"  # followed: 2nd reference
    assert issue["properties"]["user"]["properties"]["org"] == {
        "$ref": "#/components/schemas/Org"
    }  # a 3rd: kept as the spec writes it
    assert issue["properties"]["parent"] == {"$ref": "#/components/schemas/Issue"}  # recursive


async def test_swagger_2_responses_have_one_schema_and_no_media_type() -> None:
    document = {
        "swagger": "2.0",
        "info": {"title": "returns", "version": "1"},
        "paths": {
            "/r": {
                "get": {
                    "operationId": "get_r",
                    "responses": {"200": {"description": "ok", "schema": {"type": "string"}}},
                }
            }
        },
    }
    found = await success(document)
    assert (found.content_type, found.schema) == (None, {"type": "string"})


async def test_values_are_not_taken_for_schemas() -> None:
    schema = {
        "type": "object",
        "example": {"$ref": "not a reference, an example"},
        "properties": {"example": {"type": "string"}},
    }
    found = await success(spec({"200": body(schema)}))
    assert found.schema == schema
