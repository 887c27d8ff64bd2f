"""MCP tool results into the JSON a model reads, and back (one place for every content
type): `convert_result` (and `parameters_of` a tool) for a client, `tool_to_mcp` and
`result_to_mcp` for a server."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import mcp.types as mt
import pydantic
import pydantic_core

from toolsets._declaration import ToolDeclaration
from toolsets._json import JsonValue, to_json_value
from toolsets._results import error_result, is_error_result
from toolsets._tool import Tool

__all__ = [
    "block_to_mcp",
    "convert_block",
    "convert_result",
    "parameters_of",
    "result_to_mcp",
    "tool_to_mcp",
]


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

    ``isError`` → its structured content when that is an ``{"error": ...}`` object (a
    toolsets server sends the whole error so: its details round-trip), else
    ``{"error": <the server's text>}`` (plus any non-text content); structured content
    when present (it is the typed result); a single text block → its text; anything
    else → ``{"content": [blocks]}``.
    """
    blocks = [convert_block(b) for b in result.content]
    texts = [str(b["text"]) for b in blocks if b["type"] == "text"]
    if result.is_error:
        structured = to_json_value(result.structured_content)
        if is_error_result(structured):
            return structured
        others = [b for b in blocks if b["type"] != "text"]
        message = "\n".join(texts) or "The tool reported an error without a message."
        return error_result(message, content=list(others)) if others else error_result(message)
    if result.structured_content is not None:
        return to_json_value(result.structured_content)
    if len(blocks) == 1 and blocks[0]["type"] == "text":
        return blocks[0]["text"]
    return {"content": list(blocks)}


def parameters_of(schema: Mapping[str, Any]) -> dict[str, Any]:
    """An MCP tool's input schema as an object schema (some servers leave out ``type``
    or ``properties``)."""
    out = dict(schema)
    out.setdefault("type", "object")
    if out["type"] == "object":
        out.setdefault("properties", {})
    return out


def tool_to_mcp(tool: Tool, declaration: ToolDeclaration | None = None) -> mt.Tool | None:
    """A tool as MCP lists it (None for a passive tool, which has no declaration): its
    parameters as ``inputSchema``, an object ``response_schema`` as ``outputSchema``
    (MCP before 2026-07-28 allows only objects there), its title, and its hints as
    annotations. ``declaration``: the tool's, when the caller has it already."""
    if declaration is None:
        declaration = tool.declaration()
    if declaration is None:
        return None
    hints = declaration.annotations
    annotations = mt.ToolAnnotations(
        read_only_hint=hints.read_only if hints.read_only is not None else tool.is_read_only,
        destructive_hint=hints.destructive,
        idempotent_hint=hints.idempotent,
        open_world_hint=hints.open_world,
    )
    response = declaration.response
    output = dict(response) if response is not None and response.get("type") == "object" else None
    return mt.Tool(
        name=declaration.name,
        title=declaration.title,
        description=declaration.description or None,
        input_schema=dict(declaration.parameters),
        output_schema=output,
        annotations=annotations,
    )


_BLOCKS: dict[str, type[pydantic.BaseModel]] = {
    "text": mt.TextContent,
    "image": mt.ImageContent,
    "audio": mt.AudioContent,
    "resource_link": mt.ResourceLink,
}


def block_to_mcp(block: JsonValue) -> mt.ContentBlock | None:
    """One content block in the shape `convert_block` makes, as MCP content (None: not
    such a block)."""
    if not isinstance(block, Mapping):
        return None
    kind = block.get("type")
    try:
        if kind == "resource":
            resource: mt.TextResourceContents | mt.BlobResourceContents
            if "text" in block:
                resource = mt.TextResourceContents.model_validate(block)
            else:
                resource = mt.BlobResourceContents.model_validate(block)
            return mt.EmbeddedResource(type="resource", resource=resource)
        model = _BLOCKS.get(kind) if isinstance(kind, str) else None
        if model is None:
            return None
        made: mt.ContentBlock = model.model_validate(block)  # type: ignore[assignment]
        return made
    except pydantic.ValidationError:
        return None


def _blocks(value: JsonValue) -> list[mt.ContentBlock] | None:
    """A list of content blocks as MCP content, or None if any item is not one."""
    if not isinstance(value, list):
        return None
    blocks = [block_to_mcp(item) for item in value]
    return None if any(b is None for b in blocks) else blocks  # type: ignore[return-value]


def _text(value: JsonValue) -> mt.TextContent:
    # Compact JSON (no spaces after separators: fewer tokens), by pydantic-core: a large
    # result's text is a good part of what serving a call costs, and the standard
    # library's encoder takes three times as long.
    text = value if isinstance(value, str) else pydantic_core.to_json(value).decode()
    return mt.TextContent(type="text", text=text)


def result_to_mcp(result: JsonValue, *, output_schema: bool = False) -> mt.CallToolResult:
    """A tool's result as an MCP call result, the inverse of `convert_result`.

    ``{"error": ...}`` → ``isError`` with the message as text (other details as JSON
    text after it, content blocks after that) and the whole error object as
    ``structuredContent`` (which `convert_result` reads back exactly);
    ``{"content": [blocks]}`` → those blocks (text, image, audio, resource link,
    embedded resource); a string → one text block; another object →
    ``structuredContent`` and the same as JSON text (MCP allows only an object there);
    any other JSON → its JSON text. A tool listed with an ``outputSchema``
    (``output_schema``) gives its object result as ``structuredContent`` whatever its
    shape, as MCP requires.
    """
    if is_error_result(result):
        assert isinstance(result, Mapping)
        details = {k: v for k, v in result.items() if k not in ("error", "content")}
        content: list[mt.ContentBlock] = [_text(result["error"])]
        if details:
            content.append(_text(details))
        content.extend(_blocks(result.get("content")) or ())
        return mt.CallToolResult(content=content, structured_content=dict(result), is_error=True)
    if isinstance(result, dict):
        if len(result) == 1 and "content" in result:
            blocks = _blocks(result["content"])
            if blocks is not None:
                structured = result if output_schema else None
                return mt.CallToolResult(content=blocks, structured_content=structured)
        return mt.CallToolResult(content=[_text(result)], structured_content=result)
    return mt.CallToolResult(content=[_text(result)])
