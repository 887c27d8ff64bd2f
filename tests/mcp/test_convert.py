"""What `McpServer` sends for a tool and its results (`tool_to_mcp`, `result_to_mcp`):
the inverse of what `McpToolset` makes of an MCP server's (`convert_result`)."""

from __future__ import annotations

from typing import Any

import mcp.types as mt
import pytest

from toolsets import FunctionTool, ToolAnnotations, tool
from toolsets._json import JsonValue
from toolsets.mcp._convert import convert_result, result_to_mcp, tool_to_mcp

PNG = "iVBORw0KGgo="


@pytest.mark.parametrize(
    "result",
    [
        "plain text",
        {"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
        {"content": [{"type": "image", "mime_type": "image/png", "data": PNG}]},
        {"content": [{"type": "audio", "mime_type": "audio/wav", "data": PNG}]},
        {"content": [{"type": "resource_link", "uri": "file:///a.txt", "name": "a"}]},
        {
            "content": [
                {"type": "resource", "uri": "file:///a", "mime_type": "text/plain", "text": "x"}
            ]
        },
        {"content": [{"type": "resource", "uri": "file:///b", "blob": PNG}]},
        {"answer": 42, "nested": {"list": [1, 2]}},
        {"error": "it failed"},
    ],
)
def test_what_the_server_sends_a_client_reads_back_as_the_same_result(result: JsonValue) -> None:
    assert convert_result(result_to_mcp(result)) == result


def test_an_object_is_structured_content_and_its_json_text() -> None:
    sent = result_to_mcp({"a": 1})
    assert sent.structured_content == {"a": 1}
    assert [block.text for block in sent.content if isinstance(block, mt.TextContent)] == [
        '{"a":1}'  # compact: fewer tokens
    ]


@pytest.mark.parametrize("result", [[1, 2], 3, True, None])
def test_json_that_is_not_an_object_is_text_only(result: JsonValue) -> None:
    sent = result_to_mcp(result)
    assert sent.structured_content is None
    assert not sent.is_error


def test_content_blocks_of_a_tool_with_an_output_schema_are_structured_content_too() -> None:
    result: dict[str, Any] = {"content": [{"type": "text", "text": "a"}]}
    assert result_to_mcp(result, output_schema=True).structured_content == result
    assert result_to_mcp(result).structured_content is None


def test_an_error_keeps_its_details_and_its_content_blocks() -> None:
    image = {"type": "image", "mime_type": "image/png", "data": PNG}
    sent = result_to_mcp({"error": "bad", "fields": {"x": "missing"}, "content": [image]})
    assert sent.is_error
    first, details, picture = sent.content
    assert isinstance(first, mt.TextContent)
    assert first.text == "bad"
    assert isinstance(details, mt.TextContent)
    assert details.text == '{"fields":{"x":"missing"}}'
    assert isinstance(picture, mt.ImageContent)


def test_a_content_list_with_an_unknown_block_is_an_object_not_content() -> None:
    result: dict[str, Any] = {"content": [{"type": "hologram"}]}
    assert result_to_mcp(result).structured_content == result


def test_a_tool_is_listed_with_its_schemas_title_and_hints() -> None:
    @tool(title="Adder", annotations=ToolAnnotations(read_only=True, idempotent=True))
    def add(a: int, b: int) -> dict[str, int]:
        """Add."""
        return {"sum": a + b}

    listed = tool_to_mcp(add)
    assert listed is not None
    assert listed.name == "add"
    assert listed.title == "Adder"
    assert listed.input_schema["required"] == ["a", "b"]
    assert listed.output_schema is not None
    assert listed.output_schema["type"] == "object"
    assert listed.annotations == mt.ToolAnnotations(read_only_hint=True, idempotent_hint=True)


def test_a_result_schema_that_is_not_an_object_is_not_an_output_schema() -> None:
    def count() -> list[int]:
        """Count."""
        return [1, 2]

    listed = tool_to_mcp(FunctionTool(count))
    assert listed is not None
    assert listed.output_schema is None
