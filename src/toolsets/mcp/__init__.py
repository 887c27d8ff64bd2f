"""MCP servers as toolsets: `McpToolset` over `Stdio`, `StreamableHttp` or `Sse`; and any
toolset as an MCP server: `McpServer`. Both on the official `mcp` SDK."""

from toolsets.mcp._callbacks import ElicitationHandler, RootsSource, SamplingHandler
from toolsets.mcp._config import InputValues, load_mcp_config, read_mcp_config
from toolsets.mcp._convert import convert_result
from toolsets.mcp._events import SessionEventStore
from toolsets.mcp._resources import (
    Completer,
    Prompt,
    PromptArgument,
    PromptMessages,
    Resource,
    ResourceTemplate,
    prompt,
    resource,
    resource_template,
)
from toolsets.mcp._server import (
    DEFAULT_PAGE_SIZE,
    MAX_SESSION_STATES,
    SESSION_STATE_TTL,
    CredentialsFor,
    IncomingRequest,
    InvocationFor,
    McpServer,
)
from toolsets.mcp._server_spent import MemorySpentStates, SpentStates
from toolsets.mcp._stdio import KILL_GRACE
from toolsets.mcp._toolset import (
    DEFAULT_CALL_TIMEOUT,
    DEFAULT_CONNECT_TIMEOUT,
    McpTool,
    McpToolset,
    ProgressHandler,
)
from toolsets.mcp._transports import (
    HeaderProvider,
    Sse,
    StderrTarget,
    Stdio,
    StreamableHttp,
    Transport,
)
from toolsets.mcp._workload_identity import AssertionSource, WorkloadIdentity

__all__ = [
    "AssertionSource",
    "DEFAULT_CALL_TIMEOUT",
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_PAGE_SIZE",
    "MAX_SESSION_STATES",
    "SESSION_STATE_TTL",
    "Completer",
    "CredentialsFor",
    "KILL_GRACE",
    "ElicitationHandler",
    "HeaderProvider",
    "IncomingRequest",
    "InputValues",
    "InvocationFor",
    "McpServer",
    "McpTool",
    "McpToolset",
    "MemorySpentStates",
    "ProgressHandler",
    "Prompt",
    "PromptArgument",
    "PromptMessages",
    "Resource",
    "ResourceTemplate",
    "RootsSource",
    "SamplingHandler",
    "SessionEventStore",
    "SpentStates",
    "Sse",
    "StderrTarget",
    "Stdio",
    "StreamableHttp",
    "Transport",
    "WorkloadIdentity",
    "convert_result",
    "load_mcp_config",
    "prompt",
    "read_mcp_config",
    "resource",
    "resource_template",
]
