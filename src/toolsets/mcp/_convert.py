"""MCP tool results into the JSON a model reads (one place for every content type)."""

from __future__ import annotations

from typing import Any

import mcp.types as mt

from toolsets._json import JsonValue, to_json_value
from toolsets._results import error_result

__all__ = ["convert_block", "convert_result"]


def _without_none(values: dict[str, Any]) -> dict[str, JsonValue]:
    return {key: value for key, value in values.items() if value is not None}


def convert_block(block: mt.ContentBlock) -> dict[str, JsonValue]:
    """One content block as JSON: text, image/audio (base64 with its media type), a
    resource link, or an embedded text/blob resource."""
    if isinstance(block, mt.TextContent):
        return {"type": "text", "text": block.text}
    if isinstance(block, mt.ImageContent | mt.AudioContent):
        return {"type": block.type, "mime_type": block.mime_type, "data": block.data}
    if isinstance(block, mt.ResourceLink):
        return _without_none(
            {
                "type": "resource_link",
                "uri": str(block.uri),
                "name": block.name,
                "title": block.title,
                "description": block.description,
                "mime_type": block.mime_type,
                "size": block.size,
            }
        )
    resource = block.resource
    out: dict[str, Any] = {
        "type": "resource",
        "uri": str(resource.uri),
        "mime_type": resource.mime_type,
    }
    if isinstance(resource, mt.TextResourceContents):
        out["text"] = resource.text
    else:
        out["blob"] = resource.blob
    return _without_none(out)


def convert_result(result: mt.CallToolResult) -> JsonValue:
    """A call's result for the model.

    ``isError`` → ``{"error": <the server's text>}`` (plus any non-text content);
    structured content when present (it is the typed result); a single text block → its
    text; anything else → ``{"content": [blocks]}``.
    """
    blocks = [convert_block(b) for b in result.content]
    texts = [str(b["text"]) for b in blocks if b["type"] == "text"]
    if result.is_error:
        others = [b for b in blocks if b["type"] != "text"]
        message = "\n".join(texts) or "The tool reported an error without a message."
        return error_result(message, content=list(others)) if others else error_result(message)
    if result.structured_content is not None:
        return to_json_value(result.structured_content)
    if len(blocks) == 1 and blocks[0]["type"] == "text":
        return blocks[0]["text"]
    return {"content": list(blocks)}
