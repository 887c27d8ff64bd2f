"""Provider schemas: tool declarations in the dialect each model provider accepts.

One module per provider dialect: OpenAI (`to_openai_tools`, plain or strict), Anthropic
(`to_anthropic_tools`) and Gemini (`to_gemini_declarations`, its OpenAPI-subset
``parameters`` or ``parametersJsonSchema``). Each turns the neutral `ToolDeclaration`
into the provider's tool format, normalizing the parameter schema so that any schema
from an MCP server or an OpenAPI spec is accepted, and returns a `ToolCallMap` (a
`ToolNameMap`) that maps each call the model makes back to the tool's own name and
arguments: ``name, arguments = calls.restore(call_name, call_arguments)`` (and
``calls.encode`` the other way, to show a model a call as it makes them). Per schema,
`openai_strict_parameters`, `anthropic_input_schema` and `gemini_parameters` give a
`DialectSchema`: the provider's schema, its ``restore`` and its ``encode``.
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
