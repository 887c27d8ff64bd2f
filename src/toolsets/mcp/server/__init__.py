"""Any toolset served as an MCP server: `McpServer` (stdio and streamable HTTP, both
protocol eras; over HTTP an OAuth 2.1 resource server with `OAuthResourceServer` and
`Introspection`), with resources, resource templates and prompts of its own (`Resource`,
`ResourceTemplate`, `Prompt` and the decorators), resumable event streams
(`SessionEventStore`), the store of the request states taken (`SpentStates`; shared by
replicas through Redis, `RedisSpentStates`), and each
calling user's own upstream credential (`UserCredentials`, `TokenExchange`; for an
upstream MCP server behind a gateway, `UserBearer`); each call's
audit record (`AuditRecord`) goes to the logger `AUDIT_LOGGER`.

The names are re-exported by `toolsets.mcp`, which is where users import them from
(importing them from there loads this package on first use only)."""

from toolsets.mcp.server._audit import AUDIT_LOGGER, AuditOutcome, AuditRecord
from toolsets.mcp.server._auth import Introspection, OAuthResourceServer
from toolsets.mcp.server._bearer import UserBearer
from toolsets.mcp.server._caching import GATEWAY_LIST_TTL, LIST_TTL
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
from toolsets.mcp.server._exchange import TOKEN_EXCHANGE_TIMEOUT, TokenExchange
from toolsets.mcp.server._redis import RedisSpentStates
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
from toolsets.mcp.server._upstream import CredentialResolver, ServerCredentials, UserCredentials

__all__ = [
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
]
