"""Swagger 2.0's own ways, legal and met in real specs (go-swagger's test specs among
them): a body parameter named ``""`` (its name never goes on the wire) and every
``collectionFormat`` (``tsv`` too: the items joined by a tab) wherever Swagger 2.0
allows it, read back from the raw bytes a real server on 127.0.0.1 received."""

from __future__ import annotations

import json
from email.parser import BytesParser
from email.policy import HTTP
from typing import Any

import pytest

from tests.openapi.helpers import Recorded, recording_server
from toolsets import ToolContext
from toolsets.openapi import OpenApiToolset

pytestmark = pytest.mark.anyio

STRINGS = {"type": "array", "items": {"type": "string"}}
NUMBERS = {"type": "array", "items": {"type": "integer"}}
OK = {"200": {"description": "ok"}}


def swagger(paths: dict[str, Any]) -> dict[str, Any]:
    return {
        "swagger": "2.0",
        "info": {"title": "Swagger 2.0's ways", "version": "1"},
        "host": "127.0.0.1:9",
        "basePath": "/v1",
        "schemes": ["http"],
        "paths": paths,
    }


def one(path: str, method: str, parameters: list[Any], **more: Any) -> dict[str, Any]:
    """A spec of one operation, ``op``."""
    operation = {"operationId": "op", "parameters": parameters, "responses": OK, **more}
    return swagger({path: {method: operation}})


def arrays() -> dict[str, Any]:
    """One GET taking an array in its path, query and a header."""
    return one(
        "/tags/{ids}",
        "get",
        [
            {"in": "path", "name": "ids", "required": True, **STRINGS},
            {"in": "query", "name": "q", **STRINGS},
            {"in": "header", "name": "X-Ids", **NUMBERS},
        ],
    )


def with_format(spec: dict[str, Any], fmt: str) -> dict[str, Any]:
    for operation in spec["paths"].values():
        for param in operation["get" if "get" in operation else "post"]["parameters"]:
            param["collectionFormat"] = fmt
    return spec


def form(media: str, fmt: str) -> dict[str, Any]:
    param = {"in": "formData", "name": "ids", **STRINGS, "collectionFormat": fmt}
    return one("/forms", "post", [param], consumes=[media])


async def send(spec: dict[str, Any], args: dict[str, Any]) -> Recorded:
    async with recording_server() as server, OpenApiToolset(spec, base_url=server.url) as ts:
        await ts.load()
        assert ts.problems == ()
        result = await (await ts.get_tool("op")).run(args, ToolContext())
    assert result == {"ok": True}
    (request,) = server.requests
    return request


async def test_a_body_parameter_named_nothing_is_read_and_its_body_sent() -> None:
    pet = {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}
    body = {"in": "body", "name": "", "required": True, "schema": pet}
    request = await send(one("/pets", "post", [body]), {"name": "rex"})

    assert request.request_line == "POST /pets HTTP/1.1"
    assert json.loads(request.body) == {"name": "rex"}


async def test_a_parameter_elsewhere_still_needs_a_name() -> None:
    spec = one("/pets", "get", [{"in": "query", "name": "", "type": "string"}])
    async with OpenApiToolset(spec) as ts:
        await ts.load()
        assert [p.pointer for p in ts.problems] == ["/paths/~1pets/get"]


@pytest.mark.parametrize(
    ("fmt", "path", "query", "header"),
    [
        ("csv", "a%20b,c", "a%20b,c", "1,2"),
        ("ssv", "a%20b%20c", "a%20b%20c", "1 2"),
        ("tsv", "a%20b%09c", "a%20b%09c", "1\t2"),
        ("pipes", "a%20b%7Cc", "a%20b%7Cc", "1|2"),
    ],
)
async def test_each_collection_format_joins_the_items_by_its_delimiter_everywhere(
    fmt: str, path: str, query: str, header: str
) -> None:
    spec = with_format(arrays(), fmt)
    request = await send(spec, {"ids": ["a b", "c"], "q": ["a b", "c"], "X-Ids": [1, 2]})

    assert request.request_line == f"GET /tags/{path}?q={query} HTTP/1.1"
    assert request.headers["x-ids"] == header


async def test_multi_repeats_a_query_parameter() -> None:
    spec = arrays()
    spec["paths"]["/tags/{ids}"]["get"]["parameters"][1]["collectionFormat"] = "multi"
    request = await send(spec, {"ids": ["a"], "q": ["a b", "c"]})

    assert request.request_line == "GET /tags/a?q=a%20b&q=c HTTP/1.1"


@pytest.mark.parametrize(
    ("fmt", "expected"),
    [("csv", "a%20b,c"), ("ssv", "a%20b%20c"), ("tsv", "a%20b%09c"), ("pipes", "a%20b%7Cc")],
)
async def test_each_collection_format_joins_a_form_field(fmt: str, expected: str) -> None:
    request = await send(form("application/x-www-form-urlencoded", fmt), {"ids": ["a b", "c"]})

    assert request.body == f"ids={expected}".encode()


async def test_tsv_joins_a_multipart_field_by_a_tab() -> None:
    request = await send(form("multipart/form-data", "tsv"), {"ids": ["a b", "c"]})

    head = f"Content-Type: {request.headers['content-type']}\r\n\r\n".encode()
    (part,) = BytesParser(policy=HTTP).parsebytes(head + request.body).iter_parts()
    assert part.get_param("name", header="content-disposition") == "ids"
    assert part.get_content() == "a b\tc"


@pytest.mark.parametrize("where", ["query", "formData"])
async def test_an_unknown_collection_format_leaves_its_operation_out_naming_it(
    where: str,
) -> None:
    spec = form("application/x-www-form-urlencoded", "tabs")
    if where == "query":
        operation = spec["paths"]["/forms"]["post"]
        operation["parameters"][0]["in"] = "query"
    async with OpenApiToolset(spec) as ts:
        await ts.load()
        (problem,) = ts.problems
    assert problem.pointer == "/paths/~1forms/post"
    assert "collectionFormat 'tabs'" in str(problem)
