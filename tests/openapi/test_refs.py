"""Which documents a spec's ``$ref``s may load: a document refers only to what its own
origin allows (files from files; a remote spec its own origin), plus what ``allow_refs``
adds. Real HTTP servers on 127.0.0.1 serve the remote documents."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.openapi.helpers import RecordingServer, recording_server
from toolsets import SpecError, ToolContext, ToolDefinitionError
from toolsets.openapi import OpenApiToolset

pytestmark = pytest.mark.anyio

SECRET = "the-content-of-a-local-file"


def serve(server: RecordingServer, documents: Mapping[str, Any]) -> None:
    """Serve each document (JSON) at its path; ``(status, location)`` is a redirect."""
    for path, document in documents.items():
        if isinstance(document, tuple):
            server.routes[path] = (document[0], {"Location": document[1]}, b"")
        else:
            server.routes[path] = (200, {}, document)


def asked(server: RecordingServer) -> list[str]:
    return [request.path for request in server.requests]


def spec_with(refs: Mapping[str, str]) -> dict[str, Any]:
    """A spec with one POST operation per ``refs`` entry, its body the schema referred to."""
    return {
        "openapi": "3.0.3",
        "info": {"title": "refs", "version": "1"},
        "servers": [{"url": "http://127.0.0.1:9"}],
        "paths": {
            f"/{name}": {
                "post": {
                    "operationId": name,
                    "requestBody": {
                        "content": {"application/json": {"schema": {"$ref": ref}}},
                    },
                    "responses": {"200": {"description": "ok"}},
                }
            }
            for name, ref in refs.items()
        },
    }


def body_pointer(name: str) -> str:
    return f"/paths/~1{name}/post/requestBody/content/application~1json/schema"


@pytest.fixture
def secret_file(tmp_path: Path) -> Path:
    path = tmp_path / "secret.json"
    path.write_text(json.dumps({"type": "string", "enum": [SECRET]}))
    return path


PET = {"type": "object", "properties": {"name": {"type": "string"}}}


async def test_a_remote_spec_may_refer_to_its_own_origin_but_not_to_a_local_file(
    secret_file: Path,
) -> None:
    async with recording_server() as server:
        refs = {
            "local": secret_file.as_uri(),
            "own": "../schemas/pet.json",
            "own_abs": f"{server.url}/schemas/pet.json",
        }
        serve(server, {"/specs/spec.json": spec_with(refs), "/schemas/pet.json": PET})
        async with OpenApiToolset(f"{server.url}/specs/spec.json") as toolset:
            tools = {tool.name: tool for tool in await toolset.list_tools()}
            (problem,) = toolset.problems
            validated = await toolset.validate()
    assert set(tools) == {"own", "own_abs"}
    assert tools["own"].parameters["properties"] == {"name": {"type": "string"}}
    assert problem.pointer == "/paths/~1local/post"
    assert isinstance(problem.__cause__, SpecError)
    assert problem.__cause__.pointer == body_pointer("local")
    assert problem in validated
    seen = json.dumps([t.parameters for t in tools.values()]) + "".join(map(str, validated))
    assert SECRET not in seen


async def test_a_remote_spec_may_not_refer_to_another_origin_unless_it_is_allowed() -> None:
    async with recording_server() as home, recording_server() as other:
        serve(other, {"/pet.json": PET})
        serve(home, {"/spec.json": spec_with({"pet": f"{other.url}/pet.json"})})
        async with OpenApiToolset(f"{home.url}/spec.json") as toolset:
            assert await toolset.list_tools() == ()
            (problem,) = toolset.problems
        assert problem.pointer == "/paths/~1pet/post"
        assert asked(other) == []  # refused before anything was sent
        async with OpenApiToolset(f"{home.url}/spec.json", allow_refs=[other.url]) as toolset:
            assert [tool.name for tool in await toolset.list_tools()] == ["pet"]
        assert asked(other) == ["/pet.json"]


async def test_a_referenced_document_is_not_fetched_through_a_redirect_to_another_origin() -> None:
    async with recording_server() as home, recording_server() as other:
        serve(other, {"/pet.json": PET})
        serve(
            home,
            {
                "/spec.json": spec_with({"pet": "/moved.json", "here": "/here.json"}),
                "/moved.json": (302, f"{other.url}/pet.json"),
                "/here.json": (301, "/pet.json"),
                "/pet.json": PET,
            },
        )
        async with OpenApiToolset(f"{home.url}/spec.json") as toolset:
            assert [tool.name for tool in await toolset.list_tools()] == ["here"]
            (problem,) = toolset.problems
    assert problem.pointer == "/paths/~1pet/post"
    assert asked(other) == []


async def test_a_remote_document_a_local_spec_refers_to_gets_its_own_origin_s_rights(
    tmp_path: Path, secret_file: Path
) -> None:
    async with recording_server() as server:
        pet = {
            "type": "object",
            "properties": {"owner": {"$ref": secret_file.as_uri()}, "name": {"type": "string"}},
        }
        serve(server, {"/pet.json": pet, "/tag.json": {"type": "string"}})
        spec = tmp_path / "spec.json"
        spec.write_text(
            json.dumps(
                spec_with({"pet": f"{server.url}/pet.json", "tag": f"{server.url}/tag.json"})
            )
        )
        async with OpenApiToolset(spec) as toolset:
            tools = {tool.name: tool for tool in await toolset.list_tools()}
            (problem,) = toolset.problems
    assert set(tools) == {"tag"}  # a file may refer to a URL; that URL's document not to a file
    assert problem.pointer == "/paths/~1pet/post"
    assert SECRET not in json.dumps(tools["tag"].parameters)


async def test_a_spec_given_in_memory_refers_to_nothing_outside_itself_by_default(
    tmp_path: Path, secret_file: Path
) -> None:
    async with recording_server() as server:
        serve(server, {"/pet.json": PET})
        spec = spec_with({"file": secret_file.as_uri(), "url": f"{server.url}/pet.json"})
        async with OpenApiToolset(spec) as toolset:
            assert await toolset.list_tools() == ()
            assert {p.pointer for p in toolset.problems} == {
                "/paths/~1file/post",
                "/paths/~1url/post",
            }
        async with OpenApiToolset(json.dumps(spec)) as toolset:  # as text: the same
            assert await toolset.list_tools() == ()
        assert asked(server) == []
        # spec_url says where it came from, and gives that origin's rights ...
        here = (tmp_path / "spec.json").as_uri()
        async with OpenApiToolset(spec, spec_url=here) as toolset:
            assert {tool.name for tool in await toolset.list_tools()} == {"file", "url"}
        # ... and allow_refs lets it refer to what it names.
        allowed = [tmp_path.as_uri() + "/"]
        async with OpenApiToolset(spec, allow_refs=allowed) as toolset:
            assert [tool.name for tool in await toolset.list_tools()] == ["file"]


async def test_an_allowed_prefix_is_not_left_through_dot_segments(
    tmp_path: Path, secret_file: Path
) -> None:
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "pet.json").write_text(json.dumps(PET))
    refs = {
        "inside": (specs / "pet.json").as_uri(),
        "dots": specs.as_uri() + "/../secret.json",
        "escaped": specs.as_uri() + "/%2e%2e/secret.json",
        "sibling": specs.as_uri() + "-other/pet.json",
    }
    async with OpenApiToolset(spec_with(refs), allow_refs=[specs.as_uri()]) as toolset:
        assert [tool.name for tool in await toolset.list_tools()] == ["inside"]
        assert len(toolset.problems) == 3


@pytest.mark.parametrize("entry", ["127.0.0.1:8000", "/srv/specs", "ftp://example.com/"])
def test_allow_refs_takes_absolute_file_and_http_urls_only(entry: str) -> None:
    with pytest.raises(ToolDefinitionError):
        OpenApiToolset(spec_with({}), allow_refs=[entry])


async def test_a_response_schema_that_refers_to_a_local_file_is_not_read_to_check_a_response(
    secret_file: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with recording_server() as server:
        server.routes["/thing"] = (200, {}, {"name": "x"})
        spec = {
            "openapi": "3.0.3",
            "info": {"title": "t", "version": "1"},
            "servers": [{"url": server.url}],
            "paths": {
                "/thing": {
                    "get": {
                        "operationId": "thing",
                        "responses": {
                            "200": {
                                "description": "ok",
                                "content": {
                                    "application/json": {"schema": {"$ref": secret_file.as_uri()}}
                                },
                            }
                        },
                    }
                }
            },
        }
        serve(server, {"/spec.json": spec})
        async with OpenApiToolset(f"{server.url}/spec.json", validate_responses="error") as ts:
            result = await (await ts.get_tool("thing")).run({}, ToolContext())
    assert result == {"name": "x"}  # not checked: the schema may not be read
    assert any("not checked" in r.getMessage() for r in caplog.records)
    assert SECRET not in caplog.text


async def test_a_spec_that_was_redirected_refers_relative_to_where_it_came_from() -> None:
    async with recording_server() as home, recording_server() as other:
        serve(home, {"/spec.json": (302, f"{other.url}/v2/spec.json"), "/pet.json": PET})
        spec = spec_with({"there": "pet.json", "back": f"{home.url}/pet.json"})
        serve(other, {"/v2/spec.json": spec, "/v2/pet.json": PET})
        async with OpenApiToolset(f"{home.url}/spec.json") as toolset:
            assert [tool.name for tool in await toolset.list_tools()] == ["there"]
            (problem,) = toolset.problems
    assert problem.pointer == "/paths/~1back/post"
    assert problem.source == f"{other.url}/v2/spec.json"
    assert asked(home) == ["/spec.json"]


async def test_a_spec_url_that_is_not_a_url_is_a_spec_error() -> None:
    with pytest.raises(SpecError):
        await OpenApiToolset("http://[::1/spec.json").load()
