"""Provider schemas: tool declarations in the dialect each model provider accepts.

One module per provider dialect. Each turns the neutral `ToolDeclaration` into the
provider's tool format, normalizing the parameter schema so that any schema from an MCP
server or an OpenAPI spec is accepted, and maps the tools' names to names the provider
allows, exactly and reversibly, with a `ToolNameMap`.
"""

from toolsets.schema._names import ToolNameMap, legal_tool_name
from toolsets.schema._openai import DROPPED_KEYWORDS, openai_parameters, to_openai_tools

__all__ = [
    "DROPPED_KEYWORDS",
    "ToolNameMap",
    "legal_tool_name",
    "openai_parameters",
    "to_openai_tools",
]
