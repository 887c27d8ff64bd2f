"""Every serialization rule on the wire: each row of the OpenAPI "Style Examples" table
(path, query, header, cookie), allowReserved, content-typed parameters and every body
media type, declared in a spec, called through `RestApiTool.run`, and read back from the
raw bytes a real HTTP server on 127.0.0.1 received."""

from __future__ import annotations

import json
from email.parser import BytesParser
from email.policy import HTTP
from typing import Any

import pytest

from tests.openapi.helpers import (
    COOKIE_TABLE,
    HEADER_TABLE,
    PATH_TABLE,
    QUERY_TABLE,
    REJECTED,
    VALUES,
    Recorded,
    recording_server,
)
from toolsets import ToolContext
from toolsets.openapi import OpenApiToolset
from toolsets.openapi._serialize import SerializationError

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the wire, not the event loop, is under test (both run elsewhere)


SCHEMAS: dict[str, dict[str, Any]] = {
    "empty": {"type": "string"},
    "string": {"type": "string"},
    "array": {"type": "array", "items": {"type": "string"}},
    "object": {
        "type": "object",
        "properties": {k: {"type": "integer"} for k in ("R", "G", "B")},
    },
}


def one_operation(operation: dict[str, Any], path: str = "/op", method: str = "get") -> Any:
    return {
        "openapi": "3.1.0",
        "info": {"title": "wire", "version": "1"},
        "paths": {path: {method: {"operationId": "op", **operation}}},
    }


async def send(spec: dict[str, Any], args: dict[str, Any]) -> tuple[Recorded, Any]:
    """``args`` sent through the spec's one tool: what arrived, and the tool's result."""
    async with recording_server() as server, OpenApiToolset(spec, base_url=server.url) as ts:
        tool = await ts.get_tool("op")
        result = await tool.run(args, ToolContext())
    assert len(server.requests) <= 1
    return (server.requests[0] if server.requests else None), result  # type: ignore[return-value]


def rows(table: dict[tuple[str, bool], tuple[object, ...]]) -> list[Any]:
    return [
        pytest.param(style, explode, kind, expected, id=f"{style}-{explode}-{kind}")
        for (style, explode), row in table.items()
        for kind, expected in zip(VALUES, row, strict=True)
    ]


def parameter(location: str, style: str, explode: bool, kind: str) -> dict[str, Any]:
    return {
        "name": "color",
        "in": location,
        "required": True,
        "style": style,
        "explode": explode,
        "schema": SCHEMAS[kind],
    }


@pytest.mark.parametrize(("style", "explode", "kind", "expected"), rows(PATH_TABLE))
async def test_path_styles_on_the_wire(style: str, explode: bool, kind: str, expected: Any) -> None:
    spec = one_operation(
        {"parameters": [parameter("path", style, explode, kind)]}, path="/p/{color}/end"
    )
    request, result = await send(spec, {"color": VALUES[kind]})
    if expected is REJECTED:
        assert request is None  # nothing is sent...
        assert "color" in result["fields"]  # ...and the model is told which field
    else:
        assert request.request_line == f"GET /p/{expected}/end HTTP/1.1"


@pytest.mark.parametrize(("style", "explode", "kind", "expected"), rows(QUERY_TABLE))
async def test_query_styles_on_the_wire(
    style: str, explode: bool, kind: str, expected: str
) -> None:
    spec = one_operation({"parameters": [parameter("query", style, explode, kind)]})
    request, _ = await send(spec, {"color": VALUES[kind]})
    assert request.request_line == f"GET /op?{expected} HTTP/1.1"


@pytest.mark.parametrize(("style", "explode", "kind", "expected"), rows(HEADER_TABLE))
async def test_header_styles_on_the_wire(
    style: str, explode: bool, kind: str, expected: str
) -> None:
    spec = one_operation({"parameters": [parameter("header", style, explode, kind)]})
    request, _ = await send(spec, {"color": VALUES[kind]})
    assert request.headers["color"] == expected


@pytest.mark.parametrize(("style", "explode", "kind", "expected"), rows(COOKIE_TABLE))
async def test_cookie_styles_on_the_wire(
    style: str, explode: bool, kind: str, expected: str
) -> None:
    spec = one_operation({"parameters": [parameter("cookie", style, explode, kind)]})
    request, _ = await send(spec, {"color": VALUES[kind]})
    assert request.headers["cookie"] == expected


async def test_allow_reserved_and_content_typed_parameters_on_the_wire() -> None:
    spec = one_operation(
        {
            "parameters": [
                {"name": "q", "in": "query", "allowReserved": True, "schema": {"type": "string"}},
                {"name": "plain", "in": "query", "schema": {"type": "string"}},
                {
                    "name": "filter",
                    "in": "query",
                    "content": {"application/json": {"schema": {"type": "object"}}},
                },
            ]
        }
    )
    args = {"q": "a/b?c:d", "plain": "a/b?c:d", "filter": {"x": [1, 2]}}
    request, _ = await send(spec, args)
    assert request.request_line == (
        "GET /op?q=a/b?c:d&plain=a%2Fb%3Fc%3Ad&filter=%7B%22x%22%3A%5B1%2C2%5D%7D HTTP/1.1"
    )


def body_operation(content: dict[str, Any]) -> dict[str, Any]:
    return one_operation(
        {"requestBody": {"required": True, "content": content}}, path="/b", method="post"
    )


async def test_json_and_plus_json_bodies_on_the_wire() -> None:
    for media in ("application/json", "application/merge-patch+json"):
        schema = {"type": "object", "properties": {"name": {"type": "string"}, "n": {}}}
        spec = body_operation({media: {"schema": schema}})
        request, _ = await send(spec, {"name": "Zoë", "n": [1, None]})
        assert request.headers["content-type"] == media
        assert json.loads(request.body) == {"name": "Zoë", "n": [1, None]}


async def test_a_form_body_with_its_encoding_object_on_the_wire() -> None:
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "address": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
    encoding = {"tags": {"style": "form", "explode": False}, "address": {"style": "deepObject"}}
    spec = body_operation(
        {"application/x-www-form-urlencoded": {"schema": schema, "encoding": encoding}}
    )
    args = {"name": "a b&c", "tags": ["x", "y"], "address": {"city": "Köln"}}
    request, _ = await send(spec, args)
    assert request.headers["content-type"] == "application/x-www-form-urlencoded"
    # form, explode false: the commas are the style's delimiters, so they stay literal
    assert request.body == b"name=a%20b%26c&tags=x,y&address%5Bcity%5D=K%C3%B6ln"


async def test_a_multipart_body_with_files_on_the_wire() -> None:
    schema = {
        "type": "object",
        "properties": {
            "title": {"type": "string"},
            "meta": {"type": "object"},
            "image": {"type": "string", "contentMediaType": "image/png"},
            "notes": {"type": "string", "format": "binary"},
            "signature": {"type": "string", "contentEncoding": "base64"},
        },
    }
    spec = body_operation({"multipart/form-data": {"schema": schema}})
    args = {
        "title": "cat",
        "meta": {"a": 1},
        "image": {"content_base64": "iVBORw0KGgo=", "filename": "cat.png"},
        "notes": {"content": "plain text"},
        "signature": "c2lnbmVk",
    }
    request, _ = await send(spec, args)
    content_type = request.headers["content-type"]
    assert content_type.startswith("multipart/form-data; boundary=")
    message = BytesParser(policy=HTTP).parsebytes(
        f"Content-Type: {content_type}\r\n\r\n".encode() + request.body
    )
    parts = {
        part.get_param("name", header="content-disposition"): part for part in message.iter_parts()
    }
    assert parts["title"].get_content() == "cat"
    assert json.loads(parts["meta"].get_content()) == {"a": 1}
    assert parts["meta"].get_content_type() == "application/json"
    assert parts["image"].get_content_type() == "image/png"
    assert parts["image"].get_filename() == "cat.png"
    assert parts["image"].get_payload(decode=True) == b"\x89PNG\r\n\x1a\n"
    assert parts["notes"].get_payload(decode=True) == b"plain text"
    assert parts["signature"].get_payload(decode=True) == b"c2lnbmVk"  # base64 text as is


async def test_octet_stream_and_text_bodies_on_the_wire() -> None:
    binary = {"type": "string", "format": "binary"}
    spec = body_operation({"application/octet-stream": {"schema": binary}})
    request, _ = await send(spec, {"body": {"content_base64": "AAEC/w=="}})
    assert request.headers["content-type"] == "application/octet-stream"
    assert request.body == b"\x00\x01\x02\xff"
    # A string where a file is expected goes back to the model: it cannot carry bytes.
    request, result = await send(spec, {"body": "AAEC/w=="})
    assert request is None
    assert "body" in result["fields"]
    spec = body_operation({"text/plain": {"schema": {"type": "string"}}})
    request, _ = await send(spec, {"body": "héllo\n"})
    assert request.headers["content-type"].startswith("text/plain")
    assert request.body == "héllo\n".encode()


# --- what real specs declare (issue 11, item 18c) ------------------------------------------


async def test_a_path_keys_fragment_is_not_sent_and_its_query_merges_with_the_parameters() -> None:
    action = {"name": "Action", "in": "query", "required": True, "schema": {"enum": ["Get"]}}
    version = {"name": "Version", "in": "query", "required": True, "schema": {"type": "string"}}
    spec = one_operation({"parameters": [action, version]}, path="/#Action=Get")
    request, _ = await send(spec, {"Action": "Get", "Version": "2011-06-15"})
    assert request.request_line == "GET /?Action=Get&Version=2011-06-15 HTTP/1.1"
    limit = {"name": "limit", "in": "query", "schema": {"type": "integer"}}
    spec = one_operation({"parameters": [limit]}, path="/jobs?op=LIST#list")
    request, _ = await send(spec, {"limit": 5})
    assert request.request_line == "GET /jobs?op=LIST&limit=5 HTTP/1.1"
    request, _ = await send(spec, {})
    assert request.request_line == "GET /jobs?op=LIST HTTP/1.1"
    # A parameter named like the key's own pair sends it once, with the model's value.
    op = {"name": "op", "in": "query", "schema": {"type": "string"}}
    spec = one_operation({"parameters": [op]}, path="/jobs?op=LIST")
    request, _ = await send(spec, {"op": "LIST"})
    assert request.request_line == "GET /jobs?op=LIST HTTP/1.1"


async def test_a_path_parameter_in_the_keys_fragment_leaves_its_operation_out() -> None:
    # Nothing after "#" is sent: the parameter would be lost and another resource called.
    partner = {"name": "partnerId", "in": "path", "required": True, "schema": {"type": "string"}}
    spec = one_operation({"parameters": [partner]}, path="/send/#env/v1/partners/{partnerId}")
    async with OpenApiToolset(spec, base_url="http://127.0.0.1:9") as ts:
        await ts.load()
        assert list(await ts.list_tools()) == []
        (problem,) = ts.problems
    assert problem.pointer == "/paths/~1send~1#env~1v1~1partners~1{partnerId}/get"
    assert "{partnerId} after '#'" in str(problem)


@pytest.mark.parametrize("path", ["@evil.example/x", "{host}/x", "x", ".evil.example/x", ""])
async def test_a_path_not_beginning_with_a_slash_leaves_its_operations_out(path: str) -> None:
    # It is appended to the server's URL: "@evil.example/x" would send the request, and
    # every credential on it, to evil.example.
    host = {"name": "host", "in": "path", "required": True, "schema": {"type": "string"}}
    spec = one_operation({"parameters": [host]} if "{host}" in path else {}, path=path)
    spec["components"] = {
        "securitySchemes": {"key": {"type": "apiKey", "in": "header", "name": "K"}}
    }
    spec["security"] = [{"key": []}]
    async with recording_server() as server:
        async with OpenApiToolset(spec, base_url=server.url, credentials={"key": "S3CRET"}) as ts:
            await ts.load()
            assert list(await ts.list_tools()) == []
            (problem,) = ts.problems
        assert server.requests == []
    assert problem.pointer == "/paths/" + path.replace("~", "~0").replace("/", "~1")
    assert "must begin with '/'" in str(problem)


async def test_operations_sharing_a_path_through_their_keys_keep_distinct_stable_names() -> None:
    spec = {
        "openapi": "3.0.3",
        "info": {"title": "aws", "version": "1"},
        "paths": {
            "/#Action=A": {"get": {"responses": {"200": {"description": "ok"}}}},
            "/#Action=B": {"get": {"responses": {"200": {"description": "ok"}}}},
        },
    }
    async with recording_server() as server, OpenApiToolset(spec, base_url=server.url) as ts:
        tools = await ts.list_tools()
        assert [tool.name for tool in tools] == ["get_Action_A", "get_Action_B"]
        await tools[1].run({}, ToolContext())
    assert server.requests[0].request_line == "GET / HTTP/1.1"


async def test_a_javascript_pattern_is_checked_not_raised() -> None:
    name = {"name": "name", "in": "query", "schema": {"type": "string", "pattern": r"^\p{L}+$"}}
    spec = one_operation({"parameters": [name]})
    request, _ = await send(spec, {"name": "Zoë"})
    assert request.request_line == "GET /op?name=Zo%C3%AB HTTP/1.1"
    request, result = await send(spec, {"name": "R2D2"})
    assert request is None
    assert "name" in result["fields"]
    # A pattern no engine reads is not checked (a warning is logged), never an exception.
    broken = {"name": "name", "in": "query", "schema": {"type": "string", "pattern": "(?<"}}
    request, _ = await send(one_operation({"parameters": [broken]}), {"name": "any"})
    assert request.request_line == "GET /op?name=any HTTP/1.1"


async def test_an_object_body_under_xml_is_declared_as_text_and_sent_as_given() -> None:
    schema = {"type": "object", "properties": {"RoleArn": {"type": "string"}}}
    spec = body_operation({"text/xml": {"schema": schema}})
    async with recording_server() as server, OpenApiToolset(spec, base_url=server.url) as ts:
        tool = await ts.get_tool("op")
        declared = tool.declaration().parameters["properties"]  # type: ignore[union-attr]
        assert declared == {
            "body": {"type": "string", "description": "The body, written as text/xml."}
        }
        xml = "<AssumeRole><RoleArn>arn:a</RoleArn></AssumeRole>"
        await tool.run({"body": xml}, ToolContext())
    assert server.requests[0].headers["content-type"] == "text/xml; charset=utf-8"
    assert server.requests[0].body == xml.encode()


async def test_a_binary_string_in_a_json_body_is_text_and_a_multipart_one_a_file() -> None:
    binary = {"type": "string", "format": "binary"}
    schema = {"type": "object", "properties": {"file": binary}, "required": ["file"]}
    spec = body_operation({"application/json": {"schema": schema}})
    async with recording_server() as server, OpenApiToolset(spec, base_url=server.url) as ts:
        tool = await ts.get_tool("op")
        declared = tool.declaration().parameters["properties"]  # type: ignore[union-attr]
        assert declared["file"] == binary  # JSON carries text: no file object
        await tool.run({"file": "abc"}, ToolContext())
    assert json.loads(server.requests[0].body) == {"file": "abc"}
    files = {"type": "array", "items": binary}
    schema = {"type": "object", "properties": {"file": binary, "files": files}}
    spec = body_operation({"multipart/form-data": {"schema": schema}})
    async with OpenApiToolset(spec, base_url="http://127.0.0.1:1") as ts:
        declared = (await ts.get_tool("op")).declaration().parameters["properties"]  # type: ignore[union-attr]
    assert declared["file"]["properties"].keys() == {
        "content",
        "content_base64",
        "filename",
        "content_type",
    }
    assert declared["files"]["items"]["properties"].keys() == declared["file"]["properties"].keys()


async def test_header_parameters_the_http_client_owns_are_left_to_it() -> None:
    owned = ("Content-Length", "Host", "Transfer-Encoding", "Connection", "Expect")
    headers = [
        {"name": n, "in": "header", "required": True, "schema": {"type": "string"}} for n in owned
    ]
    spec = one_operation(
        {
            "parameters": headers,
            "requestBody": {"content": {"application/json": {"schema": {"type": "object"}}}},
        },
        method="post",
    )
    async with recording_server() as server, OpenApiToolset(spec, base_url=server.url) as ts:
        tool = await ts.get_tool("op")
        assert tool.declaration().parameters["properties"].keys() == {"body"}  # type: ignore[union-attr]
        await tool.run({"body": {"a": 1}}, ToolContext())
    assert server.requests[0].headers["content-length"] == "7"
    assert server.requests[0].body == b'{"a":1}'


BINARY = {"type": "string", "format": "binary"}
MULTIPART = {"multipart/form-data": {"schema": {"type": "object", "properties": {"f": BINARY}}}}


@pytest.mark.parametrize(
    "file",
    [
        pytest.param({"content_type": "text/plain\r\n; X-Injected: 1"}, id="crlf-content-type"),
        pytest.param({"content_type": "text/plain\xa0;x=1"}, id="non-ascii-space-content-type"),
        pytest.param({"content_type": "text/plain; x=\u00e9"}, id="non-ascii-content-type"),
        pytest.param({"filename": "a\ud800.txt"}, id="lone-surrogate-filename"),
    ],
)
async def test_a_file_part_that_cannot_be_written_is_a_field_error(file: dict[str, str]) -> None:
    request, result = await send(body_operation(MULTIPART), {"f": {"content": "x", **file}})
    assert request is None  # nothing is sent...
    assert list(result["fields"]) == ["f"]  # ...and the model is told which argument


@pytest.mark.parametrize(
    "content_type",
    ["text/plain\r\n; X-Injected: 1", "text/plain\u2028;x=1", "text/plain\n"],
    ids=["crlf", "non-ascii", "trailing-lf"],
)
async def test_a_raw_bodys_file_type_that_cannot_be_a_header_is_a_field_error(
    content_type: str,
) -> None:
    spec = body_operation({"*/*": {"schema": BINARY}})
    request, result = await send(spec, {"body": {"content": "x", "content_type": content_type}})
    assert request is None
    assert list(result["fields"]) == ["body"]


async def test_a_non_ascii_filename_is_sent_as_utf_8() -> None:
    request, _ = await send(body_operation(MULTIPART), {"f": {"content": "x", "filename": "ü.txt"}})
    assert 'filename="ü.txt"'.encode() in request.body


async def test_a_path_parameter_placed_in_the_path_keys_query_is_sent_there() -> None:
    term = {"name": "term", "in": "path", "required": True, "schema": {"type": "string"}}
    spec = one_operation({"parameters": [term]}, path="/search?term={term}&v=3")
    request, _ = await send(spec, {"term": "a b"})
    assert request.request_line == "GET /search?term=a%20b&v=3 HTTP/1.1"


@pytest.mark.parametrize("media", ["multipart/form-data", "application/x-www-form-urlencoded"])
async def test_a_form_body_without_a_schema_is_declared_as_the_object_it_must_be(
    media: str,
) -> None:
    spec = body_operation({media: {"schema": {}}})
    async with recording_server() as server, OpenApiToolset(spec, base_url=server.url) as ts:
        tool = await ts.get_tool("op")
        assert tool.declaration().parameters["properties"]["body"] == {"type": "object"}  # type: ignore[union-attr]
        await tool.run({"body": {"note": "hi"}}, ToolContext())
    assert b"hi" in server.requests[0].body


async def test_a_required_query_array_is_declared_non_empty_and_an_empty_one_refused() -> None:
    ids = {"name": "ids", "in": "query", "required": True, "schema": {"type": "array", "items": {}}}
    spec = one_operation({"parameters": [ids]})
    async with recording_server() as server, OpenApiToolset(spec, base_url=server.url) as ts:
        tool = await ts.get_tool("op")
        assert tool.declaration().parameters["properties"]["ids"]["minItems"] == 1  # type: ignore[union-attr]
        # Past the schema (a caller building the request itself): still never sent bare.
        with pytest.raises(SerializationError) as caught:
            tool.build_request({"ids": []})
    assert (caught.value.location, caught.value.field) == ("query", "ids")
    assert server.requests == []


async def test_a_text_body_without_a_schema_is_declared_as_text() -> None:
    spec = body_operation({"application/xml": {}})
    async with recording_server() as server, OpenApiToolset(spec, base_url=server.url) as ts:
        tool = await ts.get_tool("op")
        body = tool.declaration().parameters["properties"]["body"]  # type: ignore[union-attr]
        assert body["type"] == "string"
        await tool.run({"body": "<a/>"}, ToolContext())
    assert server.requests[0].body == b"<a/>"


async def test_a_response_schemas_javascript_pattern_is_checked_not_raised() -> None:
    named = {"type": "object", "properties": {"name": {"type": "string", "pattern": r"^\p{L}+$"}}}
    responses = {"200": {"description": "ok", "content": {"application/json": {"schema": named}}}}
    spec = one_operation({"responses": responses})
    async with (
        recording_server() as server,
        OpenApiToolset(spec, base_url=server.url, validate_responses="error") as ts,
    ):
        tool = await ts.get_tool("op")
        server.body = {"name": "Zoë"}
        assert await tool.run({}, ToolContext()) == {"name": "Zoë"}
        server.body = {"name": "R2D2"}
        result = await tool.run({}, ToolContext())
    assert [problem["field"] for problem in result["problems"]] == ["name"]


async def test_a_form_body_declared_as_a_string_is_the_forms_text() -> None:
    spec = body_operation({"application/x-www-form-urlencoded": {"schema": {"type": "string"}}})
    request, _ = await send(spec, {"body": "text=I%20like%20tacos"})
    assert request.headers["content-type"] == "application/x-www-form-urlencoded"
    assert request.body == b"text=I%20like%20tacos"


async def test_an_object_body_under_a_wildcard_type_is_sent_as_json() -> None:
    schema = {"type": "object", "properties": {"name": {"type": "string"}}}
    spec = body_operation({"*/*": {"schema": schema}})
    request, _ = await send(spec, {"name": "ns"})
    assert request.headers["content-type"] == "application/json"
    assert json.loads(request.body) == {"name": "ns"}


async def test_a_property_marked_read_only_beside_its_ref_or_in_its_all_of_is_not_offered() -> None:
    spec = body_operation(
        {
            "application/json": {
                "schema": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "access": {"$ref": "#/components/schemas/Access", "readOnly": True},
                        "link": {
                            "allOf": [{"$ref": "#/components/schemas/Access"}, {"readOnly": True}]
                        },
                    },
                }
            }
        }
    )
    spec["components"] = {"schemas": {"Access": {"type": "object"}}}
    async with OpenApiToolset(spec, base_url="http://127.0.0.1:1") as ts:
        declared = (await ts.get_tool("op")).declaration().parameters["properties"]  # type: ignore[union-attr]
    assert list(declared) == ["name"]


async def test_files_in_a_multipart_body_stay_files_whatever_style_the_encoding_gives() -> None:
    files = {"type": "array", "items": BINARY}
    schema = {"type": "object", "properties": {"images": files, "tag": {"type": "string"}}}
    encoding = {"images": {"style": "form"}, "tag": {"style": "form"}}
    spec = body_operation({"multipart/form-data": {"schema": schema, "encoding": encoding}})
    images = [{"content": "one", "filename": "1.png"}, {"content_base64": "dHdv"}]
    request, _ = await send(spec, {"images": images, "tag": "x"})
    message = BytesParser(policy=HTTP).parsebytes(
        f"Content-Type: {request.headers['content-type']}\r\n\r\n".encode() + request.body
    )
    parts = list(message.iter_parts())
    assert [part.get_filename() for part in parts] == ["1.png", "images", None]
    assert [part.get_payload(decode=True) for part in parts] == [b"one", b"two", b"x"]


async def test_a_body_property_required_but_not_described_is_still_asked_for() -> None:
    schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["key"]}
    spec = body_operation({"application/json": {"schema": schema}})
    async with recording_server() as server, OpenApiToolset(spec, base_url=server.url) as ts:
        tool = await ts.get_tool("op")
        parameters = tool.declaration().parameters  # type: ignore[union-attr]
        assert parameters["properties"]["key"] == {}
        assert parameters["required"] == ["key"]
        await tool.run({"key": "k1", "name": "n"}, ToolContext())
    assert json.loads(server.requests[0].body) == {"name": "n", "key": "k1"}
