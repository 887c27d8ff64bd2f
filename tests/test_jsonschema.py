"""One JSON pointer implementation and one set of JSON-Schema keyword tables: what they
do, and what each walker gained where its old table missed a keyword (``contentSchema``,
``dependentSchemas``)."""

from __future__ import annotations

from typing import Annotated, Any

import pydantic
import pytest

from toolsets import FunctionTool, SpecError
from toolsets._jsonschema import (
    SCHEMA_KEYWORDS,
    SCHEMA_MAP_KEYWORDS,
    PointerError,
    escape,
    join_pointer,
    resolve,
    unescape,
)
from toolsets.mcp import read_mcp_config
from toolsets.openapi import OpenApiToolset
from toolsets.schema import openai_parameters


def test_tokens_escape_and_unescape_as_rfc_6901_says() -> None:
    assert escape("a/b~c") == "a~1b~0c"
    assert unescape("a~1b~0c") == "a/b~c"
    assert unescape("~01") == "~1"  # "~0" first would wrongly give "/"
    assert join_pointer("/paths", "/repos/{owner}", "get", 0) == "/paths/~1repos~1{owner}/get/0"


def test_resolve_walks_objects_and_arrays_and_names_the_first_missing_step() -> None:
    document = {"a/b": [{"c~d": 1}], "": "empty key"}
    assert resolve(document, "") is document
    assert resolve(document, "/a~1b/0/c~0d") == 1
    assert resolve(document, "/") == "empty key"
    with pytest.raises(PointerError) as caught:
        resolve(document, "/a~1b/3/c")
    assert caught.value.walked == "/a~1b/3"
    assert caught.value.pointer == "/a~1b/3/c"


def test_a_config_error_names_a_server_with_a_slash_by_an_escaped_pointer() -> None:
    with pytest.raises(SpecError) as caught:
        read_mcp_config({"mcpServers": {"team/github": {"command": 3}}})
    assert caught.value.pointer.startswith("/mcpServers/team~1github")


def test_the_tables_hold_the_draft_4_spellings_still_met() -> None:
    assert {"definitions", "dependencies", "$defs", "dependentSchemas"} <= SCHEMA_MAP_KEYWORDS
    assert {"additionalItems", "contentSchema", "items"} <= SCHEMA_KEYWORDS


def test_an_openai_schema_inlines_a_reference_under_content_schema() -> None:
    # Copied as data, the reference would point into "$defs", which the result drops.
    schema = {
        "type": "object",
        "properties": {
            "doc": {
                "type": "string",
                "contentMediaType": "application/json",
                "contentSchema": {"$ref": "#/$defs/Doc"},
            }
        },
        "$defs": {"Doc": {"type": "object", "properties": {"id": {"type": "integer"}}}},
    }
    out = openai_parameters(schema)
    assert out["properties"]["doc"]["contentSchema"] == {
        "type": "object",
        "properties": {"id": {"type": "integer"}},
    }
    assert "$defs" not in out


def test_an_openai_schema_copies_read_only_mappings_in_data() -> None:
    import types

    frozen = types.MappingProxyType({"a": [1]})
    out = openai_parameters({"type": "object", "properties": {"x": {"default": frozen}}})
    assert out["properties"]["x"]["default"] == {"a": [1]}
    assert out["properties"]["x"]["default"]["a"] is not frozen["a"]


@pytest.mark.anyio
async def test_an_openapi_tool_keeps_a_content_schema_and_its_definition() -> None:
    spec = {
        "openapi": "3.1.0",
        "info": {"title": "docs", "version": "1"},
        "servers": [{"url": "http://127.0.0.1:1"}],
        "paths": {
            "/docs": {
                "post": {
                    "operationId": "post_doc",
                    "requestBody": {
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "properties": {
                                        "payload": {
                                            "type": "string",
                                            "contentMediaType": "application/json",
                                            "contentSchema": {"$ref": "#/components/schemas/Doc"},
                                        }
                                    },
                                }
                            }
                        }
                    },
                    "responses": {"200": {"description": "ok"}},
                }
            }
        },
        "components": {
            "schemas": {"Doc": {"type": "object", "properties": {"id": {"type": "integer"}}}}
        },
    }

    async with OpenApiToolset(spec) as toolset:
        out = (await toolset.get_tool("post_doc")).declaration().parameters
    assert out["properties"]["payload"]["contentSchema"] == {"$ref": "#/$defs/Doc"}
    assert out["$defs"]["Doc"] == {"type": "object", "properties": {"id": {"type": "integer"}}}


_EXTRA: Any = {"dependentSchemas": {"default": {"title": "Defaults", "type": "object"}}}


def test_a_function_schema_under_dependent_schemas_loses_its_titles_like_any_other() -> None:
    # An entry named like a data keyword ("default") is still a schema, not data.
    def configure(
        config: Annotated[dict[str, Any], pydantic.Field(json_schema_extra=_EXTRA)],
    ) -> None:
        """Configure."""

    parameters = FunctionTool(configure).declaration().parameters
    assert parameters["properties"]["config"]["dependentSchemas"] == {"default": {"type": "object"}}
