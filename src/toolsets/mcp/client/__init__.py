"""MCP servers as toolsets: `McpToolset` over `Stdio`, `StreamableHttp` or `Sse`, the
callbacks a server may call back (sampling, elicitation, roots), workload identity, OAuth
logins that last (`oauth_login`, kept in a `LoginStore`), and
the ``{"mcpServers": {...}}`` config files. Nothing here imports `toolsets.mcp.server`.

The names are re-exported by `toolsets.mcp`, which is where users import them from."""

from toolsets.mcp.client._callbacks import ElicitationHandler, RootsSource, SamplingHandler
from toolsets.mcp.client._calls import ProgressHandler
from toolsets.mcp.client._config import InputValues, load_mcp_config, read_mcp_config
from toolsets.mcp.client._login import (
    LOGIN_TIMEOUT,
    LoginPrompt,
    forget_login,
    oauth_client_credentials,
    oauth_login,
)
from toolsets.mcp.client._login_store import (
    FileLoginStore,
    KeyringLoginStore,
    LoginStore,
    LoginStoreKind,
)
from toolsets.mcp.client._stdio import KILL_GRACE
from toolsets.mcp.client._toolset import (
    DEFAULT_CALL_TIMEOUT,
    DEFAULT_CONNECT_TIMEOUT,
    McpTool,
    McpToolset,
)
from toolsets.mcp.client._transports import (
    HeaderProvider,
    Sse,
    StderrTarget,
    Stdio,
    StreamableHttp,
    Transport,
)
from toolsets.mcp.client._workload_identity import AssertionSource, WorkloadIdentity

__all__ = [
    "AssertionSource",
    "DEFAULT_CALL_TIMEOUT",
    "DEFAULT_CONNECT_TIMEOUT",
    "KILL_GRACE",
    "ElicitationHandler",
    "FileLoginStore",
    "HeaderProvider",
    "InputValues",
    "KeyringLoginStore",
    "LOGIN_TIMEOUT",
    "LoginPrompt",
    "LoginStore",
    "LoginStoreKind",
    "McpTool",
    "McpToolset",
    "ProgressHandler",
    "RootsSource",
    "SamplingHandler",
    "Sse",
    "StderrTarget",
    "Stdio",
    "StreamableHttp",
    "Transport",
    "WorkloadIdentity",
    "forget_login",
    "load_mcp_config",
    "oauth_client_credentials",
    "oauth_login",
    "read_mcp_config",
]
