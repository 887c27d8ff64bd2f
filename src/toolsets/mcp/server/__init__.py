"""Any toolset served as an MCP server: `McpServer` (stdio and streamable HTTP, both
protocol eras), with resources, resource templates and prompts of its own (`Resource`,
`ResourceTemplate`, `Prompt` and the decorators), resumable event streams
(`SessionEventStore`) and the store of the request states taken (`SpentStates`).

The names are re-exported by `toolsets.mcp`, which is where users import them from
(importing them from there loads this package on first use only)."""

from toolsets.mcp.server._catalog import (
    Completer,
    Prompt,
    PromptArgument,
    PromptMessages,
    Resource,
    ResourceTemplate,
)
from toolsets.mcp.server._decorators import prompt, resource, resource_template
from toolsets.mcp.server._events import SessionEventStore
from toolsets.mcp.server._server import (
    DEFAULT_PAGE_SIZE,
    MAX_SESSION_STATES,
    SESSION_STATE_TTL,
    CredentialsFor,
    IncomingRequest,
    InvocationFor,
    McpServer,
)
from toolsets.mcp.server._spent import MemorySpentStates, SpentStates

__all__ = [
    "DEFAULT_PAGE_SIZE",
    "MAX_SESSION_STATES",
    "SESSION_STATE_TTL",
    "Completer",
    "CredentialsFor",
    "IncomingRequest",
    "InvocationFor",
    "McpServer",
    "MemorySpentStates",
    "Prompt",
    "PromptArgument",
    "PromptMessages",
    "Resource",
    "ResourceTemplate",
    "SessionEventStore",
    "SpentStates",
    "prompt",
    "resource",
    "resource_template",
]
