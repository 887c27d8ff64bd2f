"""What a model is told about a tool."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from toolsets._errors import ToolDefinitionError
from toolsets._json import JsonValue

__all__ = ["ToolAnnotations", "ToolDeclaration", "empty_parameters"]


def empty_parameters() -> dict[str, Any]:
    """A new parameter schema for a tool that takes no arguments."""
    return {"type": "object", "properties": {}}


_NAME = re.compile(r"^[A-Za-z0-9_.:/-]{1,128}$")


@dataclass(frozen=True, kw_only=True)
class ToolAnnotations:
    """Hints about a tool's behaviour (the MCP tool annotations). ``None`` means unknown."""

    read_only: bool | None = None
    """The tool does not change its environment."""
    destructive: bool | None = None
    """The tool may destroy or overwrite data (meaningful when not read-only)."""
    idempotent: bool | None = None
    """Calling it again with the same arguments has no further effect."""
    open_world: bool | None = None
    """The tool talks to an open world (the internet) rather than a closed domain."""

    def to_json(self) -> dict[str, JsonValue]:
        """The annotations that are known, as a JSON object."""
        known = {
            "read_only": self.read_only,
            "destructive": self.destructive,
            "idempotent": self.idempotent,
            "open_world": self.open_world,
        }
        return {k: v for k, v in known.items() if v is not None}


@dataclass(frozen=True, kw_only=True)
class ToolDeclaration:
    """The function declaration a model sees: name, description and parameter schema.

    Provider-specific dialects (OpenAI, Anthropic, Gemini) are derived from this by
    ``toolsets.schema``; this is the neutral form. Treat the schemas as immutable.
    """

    name: str
    """The name the model calls the tool by."""
    description: str = ""
    """What the tool does, for the model."""
    parameters: Mapping[str, Any] = field(default_factory=empty_parameters)
    """JSON Schema of the arguments; always an object schema."""
    response: Mapping[str, Any] | None = None
    """JSON Schema of the result, when known."""
    title: str | None = None
    """A human-readable name, when the source gives one."""
    annotations: ToolAnnotations = field(default_factory=ToolAnnotations)
    """Behaviour hints."""

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ToolDefinitionError(
                f"invalid tool name {self.name!r}: use 1-128 letters, digits and _ . : / -",
                tool_name=self.name,
            )
        if self.parameters.get("type") != "object":
            raise ToolDefinitionError(
                f"tool {self.name!r}: the parameter schema must have type 'object', "
                f"got {self.parameters.get('type')!r}",
                tool_name=self.name,
            )

    def to_json(self) -> dict[str, JsonValue]:
        """A JSON object with every field that is set (schemas as given)."""
        out: dict[str, JsonValue] = {
            "name": self.name,
            "description": self.description,
            "parameters": dict(self.parameters),
        }
        if self.response is not None:
            out["response"] = dict(self.response)
        if self.title is not None:
            out["title"] = self.title
        annotations = self.annotations.to_json()
        if annotations:
            out["annotations"] = annotations
        return out
