"""Optional response validation: a successful JSON body is checked against the schema the
operation declares for its status and media type (3.1, 3.0 with nullable, Swagger 2.0
with external $refs), against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Literal

import pytest

from tests.openapi.helpers import FIXTURES, RecordingServer, recording_server
from toolsets import ToolContext, ToolDefinitionError
from toolsets.openapi import OpenApiToolset

pytestmark = pytest.mark.anyio

THING = {
    "type": "object",
    "required": ["id", "name"],
    "properties": {"id": {"type": "integer"}, "name": {"type": "string"}},
}


def spec(version: str, thing: dict[str, Any]) -> dict[str, Any]:
    json_of = {"application/json": {"schema": {"$ref": "#/components/schemas/Thing"}}}
    return {
        "openapi": version,
        "info": {"title": "things", "version": "1"},
        "paths": {
            "/things": {
                "get": {
                    "operationId": "list_things",
                    "responses": {
                        "200": {
                            "description": "the things",
                            "content": {
                                "application/json": {
                                    "schema": {
                                        "type": "array",
                                        "items": {"$ref": "#/components/schemas/Thing"},
                                    }
                                }
                            },
                        },
                        "2XX": {"description": "one thing", "content": json_of},
                        "default": {"description": "no schema here"},
                    },
                }
            }
        },
        "components": {"schemas": {"Thing": thing}},
    }


async def answer(
    server: RecordingServer,
    document: dict[str, Any] | Path,
    body: Any,
    *,
    mode: Literal["warn", "error"] = "error",
    status: int = 200,
    tool: str = "list_things",
    args: dict[str, Any] | None = None,
) -> Any:
    server.status, server.body = status, body
    async with OpenApiToolset(document, base_url=server.url, validate_responses=mode) as ts:
        return await (await ts.get_tool(tool)).run(args or {}, ToolContext())


async def test_a_conforming_body_is_returned_as_it_is() -> None:
    async with recording_server() as server:
        body = [{"id": 1, "name": "a"}]
        assert await answer(server, spec("3.1.0", THING), body) == body


async def test_a_body_that_breaks_the_schema_is_an_error_naming_each_field() -> None:
    async with recording_server() as server:
        result = await answer(server, spec("3.1.0", THING), [{"id": "1", "name": "a"}, {"id": 2}])
    assert result["error"] == "the API's HTTP 200 response does not match its spec"
    assert result["status"] == 200
    assert result["problems"] == [
        {"field": "0.id", "problem": "'1' is not of type 'integer'"},
        {"field": "1", "problem": "'name' is a required property"},
    ]
    assert result["body"] == [{"id": "1", "name": "a"}, {"id": 2}]


async def test_warn_logs_the_mismatch_and_returns_the_body(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with recording_server() as server:
        result = await answer(server, spec("3.1.0", THING), {"id": 1}, mode="warn", status=201)
    assert result == {"id": 1}
    (record,) = [r for r in caplog.records if r.name == "toolsets.openapi"]
    assert record.levelno == logging.WARNING
    assert "list_things: the HTTP 201 response does not match the spec" in record.getMessage()
    assert "'name' is a required property" in record.getMessage()


async def test_the_status_picks_the_schema_exact_then_range_then_default() -> None:
    async with recording_server() as server:
        # 201 → "2XX": one thing, not a list
        one = await answer(server, spec("3.1.0", THING), [{"id": 1, "name": "a"}], status=201)
        assert "is not of type 'object'" in str(one["problems"])
        # 302 (with no Location: not followed) → "default", which declares no schema
        assert await answer(server, spec("3.1.0", THING), {"x": 1}, status=302) == {"x": 1}


async def test_openapi_30_nullable_is_understood() -> None:
    nullable = {
        **THING,
        "properties": {**THING["properties"], "name": {"type": "string", "nullable": True}},
    }
    async with recording_server() as server:
        assert await answer(server, spec("3.0.3", nullable), [{"id": 1, "name": None}]) == [
            {"id": 1, "name": None}
        ]
        result = await answer(server, spec("3.0.3", nullable), [{"id": None, "name": None}])
    assert result["problems"] == [{"field": "0.id", "problem": "None is not of type 'integer'"}]


async def test_swagger_20_schemas_in_other_files_are_followed() -> None:
    path = FIXTURES / "swagger2-split" / "yaml" / "api" / "swagger.yaml"
    async with recording_server() as server:
        result = await answer(server, path, [{"id": "x"}], tool="listTasks")
    assert result["problems"] == [
        {"field": "0", "problem": "'name' is a required property"},
        {"field": "0.id", "problem": "'x' is not of type 'integer'"},
    ]


async def test_responses_the_spec_says_nothing_about_are_not_checked() -> None:
    async with recording_server() as server:
        server.content_type = "text/plain"
        assert await answer(server, spec("3.1.0", THING), b"hello") == "hello"


def test_an_unknown_mode_is_refused() -> None:
    with pytest.raises(ToolDefinitionError, match="validate_responses"):
        OpenApiToolset(spec("3.1.0", THING), validate_responses="strict")  # type: ignore[arg-type]
