"""Provider schemas: tool declarations in the dialect each model provider accepts.

One module per provider dialect. Each turns the neutral `ToolDeclaration` into the
provider's tool format, normalizing the parameter schema so that any schema from an MCP
server or an OpenAPI spec is accepted, and maps the tools' names to names the provider
allows, exactly and reversibly, with a `ToolNameMap`.
"""

from toolsets.schema._anthropic import anthropic_input_schema, to_anthropic_tools
from toolsets.schema._gemini import (
    GEMINI_RECURSION_DEPTH,
    gemini_parameters,
    gemini_parameters_json_schema,
    to_gemini_declarations,
)
from toolsets.schema._names import ToolNameMap, legal_tool_name
from toolsets.schema._openai import (
    DROPPED_KEYWORDS,
    STRICT_LIMITS,
    openai_parameters,
    openai_strict_parameters,
    to_openai_tools,
)
from toolsets.schema._restore import DialectSchema, ToolCallMap

__all__ = [
    "DROPPED_KEYWORDS",
    "GEMINI_RECURSION_DEPTH",
    "STRICT_LIMITS",
    "DialectSchema",
    "ToolCallMap",
    "ToolNameMap",
    "anthropic_input_schema",
    "gemini_parameters",
    "gemini_parameters_json_schema",
    "legal_tool_name",
    "openai_parameters",
    "openai_strict_parameters",
    "to_anthropic_tools",
    "to_gemini_declarations",
    "to_openai_tools",
]
