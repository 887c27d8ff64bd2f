"""MCP servers as toolsets: `McpToolset` over `Stdio`, `StreamableHttp` or `Sse`; and any
toolset as an MCP server: `McpServer`. Both on the official `mcp` SDK.

The client's names (`toolsets.mcp.client`) are imported with this package; the server's
(`toolsets.mcp.server`: `McpServer`, resources, prompts, ...) when first asked for, so
that a program that only calls MCP servers never loads toolsets' server side."""

from typing import TYPE_CHECKING

from toolsets.mcp._convert import convert_result
from toolsets.mcp.client import (
    DEFAULT_CALL_TIMEOUT,
    DEFAULT_CONNECT_TIMEOUT,
    KILL_GRACE,
    AssertionSource,
    ElicitationHandler,
    HeaderProvider,
    InputValues,
    McpTool,
    McpToolset,
    ProgressHandler,
    RootsSource,
    SamplingHandler,
    Sse,
    StderrTarget,
    Stdio,
    StreamableHttp,
    Transport,
    WorkloadIdentity,
    load_mcp_config,
    read_mcp_config,
)

if TYPE_CHECKING:  # what `__getattr__` gives, for the type checker
    from toolsets.mcp.server import (
        AUDIT_LOGGER,
        DEFAULT_PAGE_SIZE,
        GATEWAY_LIST_TTL,
        LIST_TTL,
        MAX_SESSION_STATES,
        SESSION_STATE_TTL,
        TOKEN_EXCHANGE_TIMEOUT,
        AuditOutcome,
        AuditRecord,
        Completer,
        CredentialResolver,
        CredentialsFor,
        IncomingRequest,
        Introspection,
        InvocationFor,
        McpServer,
        MemorySpentStates,
        OAuthResourceServer,
        Prompt,
        PromptArgument,
        PromptMessages,
        RedisSpentStates,
        Resource,
        ResourceTemplate,
        ServerCredentials,
        SessionEventStore,
        SpentStates,
        TokenExchange,
        UserBearer,
        UserCredentials,
        prompt,
        resource,
        resource_template,
    )


def __getattr__(name: str) -> object:
    """The server's names, imported when first asked for (then kept here)."""
    if name in _SERVER:
        from toolsets.mcp import server

        value: object = getattr(server, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_SERVER = frozenset(
    {
        "AUDIT_LOGGER",
        "DEFAULT_PAGE_SIZE",
        "GATEWAY_LIST_TTL",
        "LIST_TTL",
        "MAX_SESSION_STATES",
        "SESSION_STATE_TTL",
        "TOKEN_EXCHANGE_TIMEOUT",
        "AuditOutcome",
        "AuditRecord",
        "Completer",
        "CredentialResolver",
        "CredentialsFor",
        "IncomingRequest",
        "Introspection",
        "InvocationFor",
        "McpServer",
        "MemorySpentStates",
        "OAuthResourceServer",
        "Prompt",
        "PromptArgument",
        "PromptMessages",
        "RedisSpentStates",
        "Resource",
        "ResourceTemplate",
        "ServerCredentials",
        "SessionEventStore",
        "SpentStates",
        "TokenExchange",
        "UserBearer",
        "UserCredentials",
        "prompt",
        "resource",
        "resource_template",
    }
)

__all__ = [
    "AUDIT_LOGGER",
    "AssertionSource",
    "AuditOutcome",
    "AuditRecord",
    "DEFAULT_CALL_TIMEOUT",
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_PAGE_SIZE",
    "GATEWAY_LIST_TTL",
    "LIST_TTL",
    "MAX_SESSION_STATES",
    "SESSION_STATE_TTL",
    "TOKEN_EXCHANGE_TIMEOUT",
    "Completer",
    "CredentialResolver",
    "CredentialsFor",
    "KILL_GRACE",
    "ElicitationHandler",
    "HeaderProvider",
    "IncomingRequest",
    "InputValues",
    "Introspection",
    "InvocationFor",
    "McpServer",
    "McpTool",
    "McpToolset",
    "MemorySpentStates",
    "OAuthResourceServer",
    "ProgressHandler",
    "Prompt",
    "PromptArgument",
    "PromptMessages",
    "RedisSpentStates",
    "Resource",
    "ResourceTemplate",
    "RootsSource",
    "SamplingHandler",
    "ServerCredentials",
    "SessionEventStore",
    "SpentStates",
    "Sse",
    "StderrTarget",
    "Stdio",
    "StreamableHttp",
    "TokenExchange",
    "Transport",
    "UserBearer",
    "UserCredentials",
    "WorkloadIdentity",
    "convert_result",
    "load_mcp_config",
    "prompt",
    "read_mcp_config",
    "resource",
    "resource_template",
]
