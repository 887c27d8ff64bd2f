"""Where an OpenApiToolset sends: a relative server URL (or none) needs no base URL to
list and inspect the tools; it resolves against the spec's own URL when the spec came
from one; only a call with no base at all stops, naming what to pass."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.openapi.helpers import recording_server
from toolsets import ToolContext, ToolDefinitionError
from toolsets.openapi import OpenApiToolset

pytestmark = pytest.mark.anyio


def pets(servers: list[dict[str, Any]] | None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {"title": "Pets", "version": "1"},
        "paths": {
            "/pets/{id}": {
                "get": {
                    "operationId": "getPet",
                    "parameters": [
                        {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}
                    ],
                    "responses": {"200": {"description": "a pet"}},
                }
            }
        },
    }
    if servers is not None:
        spec["servers"] = servers
    return spec


@pytest.mark.parametrize("servers", [[{"url": "/api/v31"}], None], ids=["relative", "none"])
async def test_a_spec_file_with_a_relative_server_lists_its_tools_and_a_call_says_what_to_pass(
    tmp_path: Path, servers: list[dict[str, Any]] | None
) -> None:
    path = tmp_path / "pets.json"
    path.write_text(json.dumps(pets(servers)))
    async with recording_server() as server, OpenApiToolset(path) as toolset:
        (tool,) = await toolset.list_tools()
        assert tool.declaration() is not None
        assert toolset.problems == ()
        with pytest.raises(ToolDefinitionError) as caught:
            await tool.run({"id": "1"}, ToolContext())
        assert caught.value.tool_name == "getPet"
        assert "base_url=" in str(caught.value)
        with pytest.raises(ToolDefinitionError):
            tool.build_request({"id": "1"})
    assert server.requests == []


async def test_a_relative_server_resolves_against_the_url_the_spec_came_from() -> None:
    async with recording_server() as server:
        server.body = pets([{"url": "/api/v31"}])
        async with OpenApiToolset(f"{server.url}/specs/pets.json") as toolset:
            tool = await toolset.get_tool("getPet")
            await tool.run({"id": "1"}, ToolContext())
    assert [r.request_line for r in server.requests] == [
        "GET /specs/pets.json HTTP/1.1",
        "GET /api/v31/pets/1 HTTP/1.1",
    ]


async def test_a_relative_server_resolves_against_the_spec_url_given_for_a_dict() -> None:
    async with recording_server() as server:
        spec = pets([{"url": "v2"}])
        async with OpenApiToolset(spec, spec_url=f"{server.url}/specs/pets.json") as toolset:
            tool = await toolset.get_tool("getPet")
            await tool.run({"id": "1"}, ToolContext())
        async with OpenApiToolset(spec, base_url=server.url) as toolset:
            tool = await toolset.get_tool("getPet")
            await tool.run({"id": "2"}, ToolContext())
    assert [r.request_line for r in server.requests] == [
        "GET /specs/v2/pets/1 HTTP/1.1",
        "GET /pets/2 HTTP/1.1",
    ]


@pytest.mark.parametrize("base_url", ["http://127.0.0.1:1/api?api_key=sk-SECRET-1", "http://h/a#x"])
def test_a_base_url_with_a_query_or_fragment_is_refused_where_it_is_given(base_url: str) -> None:
    # Paths are appended to the base URL: a query there would end up inside every path.
    with pytest.raises(ToolDefinitionError) as caught:
        OpenApiToolset(
            {"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": {}},
            base_url=base_url,
        )

    assert caught.value.field == "base_url"
    assert "sk-SECRET-1" not in str(caught.value)
