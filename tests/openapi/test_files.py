"""Is this a file? One rule (`toolsets.openapi._serialize.is_file`): where the tool's
declaration tells the model to give a file object, the request carries the file's raw
bytes; where it tells the model to give text, the text is what is sent."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from toolsets.openapi import OpenApiToolset

pytestmark = pytest.mark.anyio

RAW = b"GIF89a\x00\x01\xff\xfe"
TEXT = "plain words"

SCHEMAS: dict[str, dict[str, Any]] = {
    "no type keywords": {},
    "a description only": {"description": "The document."},
    "format binary": {"format": "binary"},
    "a binary string": {"type": "string", "format": "binary"},
    "contentMediaType alone": {"contentMediaType": "image/gif"},
    "a string": {"type": "string"},
    "a base64 string": {"type": "string", "contentEncoding": "base64"},
    "format byte": {"type": "string", "format": "byte"},
    "binary in base64": {"type": "string", "format": "binary", "contentEncoding": "base64"},
}


def spec(schema: dict[str, Any]) -> dict[str, Any]:
    def post(operation_id: str, media_type: str, body: dict[str, Any]) -> dict[str, Any]:
        return {
            "post": {
                "operationId": operation_id,
                "requestBody": {"required": True, "content": {media_type: {"schema": body}}},
                "responses": {"200": {"description": "ok"}},
            }
        }

    form = {"type": "object", "properties": {"doc": schema}}
    return {
        "openapi": "3.1.0",
        "info": {"title": "t", "version": "1"},
        "paths": {
            "/parts": post("upload_part", "multipart/form-data", form),
            "/raw": post("upload_raw", "application/octet-stream", schema),
        },
    }


def told_a_file(declared: dict[str, Any]) -> bool:
    return "content_base64" in declared.get("properties", {})


@pytest.mark.parametrize("schema", SCHEMAS.values(), ids=SCHEMAS.keys())
async def test_a_multipart_part_is_sent_as_the_model_is_told(schema: dict[str, Any]) -> None:
    async with OpenApiToolset(spec(schema), base_url="http://api.test") as toolset:
        tool = await toolset.get_tool("upload_part")
        declared = tool.parameters["properties"]["doc"]
        if told_a_file(declared):
            given = {"content_base64": base64.b64encode(RAW).decode(), "filename": "a.gif"}
            sent = tool.build_request({"doc": given}).content
            assert b"\r\n\r\n" + RAW + b"\r\n" in sent
            assert b'filename="a.gif"' in sent
        else:
            assert declared.get("type") == "string"
            sent = tool.build_request({"doc": TEXT}).content
            assert b"\r\n\r\n" + TEXT.encode() + b"\r\n" in sent


@pytest.mark.parametrize("schema", SCHEMAS.values(), ids=SCHEMAS.keys())
async def test_a_raw_body_is_sent_as_the_model_is_told(schema: dict[str, Any]) -> None:
    async with OpenApiToolset(spec(schema), base_url="http://api.test") as toolset:
        tool = await toolset.get_tool("upload_raw")
        declared = tool.parameters["properties"]["body"]
        if told_a_file(declared):
            given = {"content_base64": base64.b64encode(RAW).decode()}
            assert tool.build_request({"body": given}).content == RAW
        else:
            assert declared.get("type") == "string"
            assert tool.build_request({"body": TEXT}).content == TEXT.encode()


@pytest.mark.parametrize(
    "schema",
    [
        SCHEMAS["no type keywords"],
        SCHEMAS["format binary"],
        SCHEMAS["contentMediaType alone"],
    ],
)
async def test_raw_bytes_are_a_file_for_the_model_and_on_the_wire(schema: dict[str, Any]) -> None:
    async with OpenApiToolset(spec(schema), base_url="http://api.test") as toolset:
        part = await toolset.get_tool("upload_part")
        raw = await toolset.get_tool("upload_raw")
        assert told_a_file(part.parameters["properties"]["doc"])
        assert told_a_file(raw.parameters["properties"]["body"])
