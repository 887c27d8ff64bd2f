"""How an operation's object body becomes arguments: its properties lifted to the top
level, or, for an optional body that requires some of them, one optional ``body``
argument whose own ``required`` stands, so that a body goes whole or not at all. What is
sent is read back from a real server on 127.0.0.1 and judged by openapi-core."""

from __future__ import annotations

import json
from email.parser import BytesParser
from email.policy import HTTP
from typing import Any

import pytest

from tests.openapi.helpers import recording_server
from tests.openapi.judge import CoreJudge, WireRequest
from toolsets import ToolContext
from toolsets.openapi import OpenApiToolset
from toolsets.schema import to_anthropic_tools, to_gemini_declarations, to_openai_tools

pytestmark = pytest.mark.anyio

SERVER = "http://127.0.0.1:9"
"""The spec's server: the judge reads requests as sent there."""
ACCOUNT = {
    "type": "object",
    "description": "The account to open.",
    "required": ["code", "tier"],
    "properties": {
        "code": {"type": "string"},
        "tier": {"type": "string", "enum": ["gold", "silver"]},
        "note": {"type": "string"},
        "id": {"type": "string", "readOnly": True},
    },
}


def accounts(body: dict[str, Any], media: str = "application/json") -> dict[str, Any]:
    """A spec with one POST whose body (optional unless ``body`` says) is ``body``."""
    return {
        "openapi": "3.0.3",
        "info": {"title": "Accounts", "version": "1"},
        "servers": [{"url": SERVER}],
        "paths": {
            "/accounts": {
                "post": {
                    "operationId": "open",
                    "parameters": [
                        {"name": "dry_run", "in": "query", "schema": {"type": "boolean"}}
                    ],
                    "requestBody": {"content": {media: {"schema": ACCOUNT}}, **body},
                    "responses": {"201": {"description": "opened"}},
                }
            }
        },
    }


OPTIONAL = accounts({})
REQUIRED = accounts({"required": True})


def wire(recorded: Any) -> WireRequest:
    method, target, _ = recorded.request_line.split(" ", 2)
    return WireRequest(method, target, tuple(recorded.headers.items()), recorded.body)


async def test_an_optional_body_that_requires_properties_is_one_optional_argument() -> None:
    async with OpenApiToolset(OPTIONAL) as ts:
        declared = (await ts.get_tool("open")).parameters

    assert declared["properties"]["body"] == {
        "type": "object",
        "description": "The account to open.",
        "properties": {
            "code": {"type": "string"},
            "tier": {"type": "string", "enum": ["gold", "silver"]},
            "note": {"type": "string"},
        },
        "required": ["code", "tier"],
        "additionalProperties": False,
    }
    assert "required" not in declared  # the body is optional, dry_run too
    assert list(declared["properties"]) == ["dry_run", "body"]


async def test_a_required_body_and_an_optional_one_that_requires_nothing_stay_lifted() -> None:
    relaxed = accounts({})
    schema = relaxed["paths"]["/accounts"]["post"]["requestBody"]["content"]["application/json"]
    schema["schema"] = {k: v for k, v in ACCOUNT.items() if k != "required"}
    async with OpenApiToolset(REQUIRED) as required, OpenApiToolset(relaxed) as optional:
        lifted = (await required.get_tool("open")).parameters
        free = (await optional.get_tool("open")).parameters

    assert list(lifted["properties"]) == ["dry_run", "code", "tier", "note"]
    assert lifted["required"] == ["code", "tier"]
    assert list(free["properties"]) == ["dry_run", "code", "tier", "note"]
    assert "required" not in free


async def test_a_partial_optional_body_is_refused_naming_what_it_lacks_and_nothing_is_sent() -> (
    None
):
    async with recording_server() as server, OpenApiToolset(OPTIONAL, base_url=server.url) as ts:
        tool = await ts.get_tool("open")
        partial = await tool.run({"body": {"code": "x"}}, ToolContext())
        empty = await tool.run({"body": {}}, ToolContext())
        flat = await tool.run({"code": "x"}, ToolContext())  # the lifted form: not taken

    assert server.requests == []
    assert isinstance(partial, dict)
    assert partial["fields"] == {"body.tier": "Field required"}
    assert isinstance(empty, dict)
    assert list(empty["fields"]) == ["body.code", "body.tier"]
    assert isinstance(flat, dict)
    assert list(flat["fields"]) == ["code"]


async def test_an_optional_body_is_sent_whole_or_not_at_all_as_openapi_core_judges() -> None:
    judge = CoreJudge(OPTIONAL)
    body = {"code": "x", "tier": "gold", "note": "n"}
    async with recording_server() as server, OpenApiToolset(OPTIONAL, base_url=server.url) as ts:
        tool = await ts.get_tool("open")
        assert await tool.run({"dry_run": True}, ToolContext()) == {"ok": True}
        assert await tool.run({"body": body}, ToolContext()) == {"ok": True}
        unknown = await tool.run({"body": {**body, "colour": "red"}}, ToolContext())

    assert isinstance(unknown, dict)
    assert list(unknown["fields"]) == ["body.colour"]
    without, whole = server.requests
    assert without.request_line == "POST /accounts?dry_run=true HTTP/1.1"
    assert without.body == b""
    assert json.loads(whole.body) == body
    for request in (without, whole):
        assert judge.errors(wire(request), SERVER) == []


async def test_an_optional_body_that_takes_more_properties_keeps_them_in_its_argument() -> None:
    spec = accounts({})
    spec["paths"]["/accounts"]["post"]["requestBody"]["content"]["application/json"]["schema"] = {
        **ACCOUNT,
        "additionalProperties": {"type": "string"},
    }
    async with recording_server() as server, OpenApiToolset(spec, base_url=server.url) as ts:
        tool = await ts.get_tool("open")
        declared = tool.parameters
        sent = await tool.run({"body": {"code": "x", "tier": "gold", "extra": "e"}}, ToolContext())
        refused = await tool.run({"code": "x", "tier": "gold"}, ToolContext())

    assert declared["properties"]["body"]["additionalProperties"] == {"type": "string"}
    assert declared["additionalProperties"] is False  # the top level takes only what it names
    assert sent == {"ok": True}
    assert isinstance(refused, dict)
    assert set(refused["fields"]) == {"code", "tier"}
    (request,) = server.requests
    assert json.loads(request.body) == {"code": "x", "tier": "gold", "extra": "e"}


@pytest.mark.parametrize("media", ["application/x-www-form-urlencoded", "multipart/form-data"])
async def test_an_optional_form_body_is_sent_whole_in_its_media_type(media: str) -> None:
    spec = accounts({}, media)
    async with recording_server() as server, OpenApiToolset(spec, base_url=server.url) as ts:
        tool = await ts.get_tool("open")
        result = await tool.run({"body": {"code": "a b", "tier": "gold"}}, ToolContext())

    assert result == {"ok": True}
    (request,) = server.requests
    assert CoreJudge(spec).errors(wire(request), SERVER) == []
    if media.startswith("multipart/"):
        head = f"Content-Type: {request.headers['content-type']}\r\n\r\n".encode()
        parts = BytesParser(policy=HTTP).parsebytes(head + request.body).iter_parts()
        named = {p.get_param("name", header="content-disposition"): p for p in parts}
        assert {name: part.get_content() for name, part in named.items()} == {
            "code": "a b",
            "tier": "gold",
        }
    else:
        assert request.body == b"code=a%20b&tier=gold"


async def test_an_optional_multipart_body_takes_its_file_as_a_file_object() -> None:
    spec = accounts({}, "multipart/form-data")
    schema = spec["paths"]["/accounts"]["post"]["requestBody"]["content"]["multipart/form-data"]
    schema["schema"] = {
        "type": "object",
        "required": ["upload"],
        "properties": {
            "upload": {"type": "string", "format": "binary"},
            "label": {"type": "string"},
        },
    }
    async with recording_server() as server, OpenApiToolset(spec, base_url=server.url) as ts:
        tool = await ts.get_tool("open")
        upload = tool.parameters["properties"]["body"]["properties"]["upload"]
        file = {"content": "hello", "filename": "a.txt", "content_type": "text/plain"}
        result = await tool.run({"body": {"upload": file}}, ToolContext())

    assert upload["required"] if "required" in upload else upload["oneOf"]  # a file object
    assert result == {"ok": True}
    (request,) = server.requests
    assert b'filename="a.txt"' in request.body
    assert b"\r\n\r\nhello\r\n" in request.body


async def test_the_optional_body_maps_back_exactly_from_every_dialect() -> None:
    # Strict mode makes the optional body nullable: the null a model sends for it is "not
    # given", and a body given whole comes back as it was.
    async with OpenApiToolset(OPTIONAL) as ts:
        declaration = (await ts.get_tool("open")).declaration()
    assert declaration is not None
    body = {"code": "x", "tier": "gold"}

    tools, calls = to_openai_tools([declaration], strict=True)
    assert tools[0]["function"]["strict"] is True
    strict_body = tools[0]["function"]["parameters"]["properties"]["body"]
    assert strict_body["type"] == ["object", "null"]
    assert strict_body["required"] == ["code", "tier", "note"]
    name = tools[0]["function"]["name"]
    assert calls.restore(name, {"dry_run": None, "body": None})[1] == {}
    assert calls.restore(name, {"dry_run": None, "body": {**body, "note": None}})[1] == {
        "body": body
    }
    for tools, calls in (
        to_openai_tools([declaration]),
        to_anthropic_tools([declaration]),
        to_gemini_declarations([declaration]),
        to_gemini_declarations([declaration], form="json_schema"),
    ):
        name = tools[0].get("name") or tools[0]["function"]["name"]
        assert calls.restore(name, {"body": body})[1] == {"body": body}
