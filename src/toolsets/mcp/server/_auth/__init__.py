"""`McpServer` as an OAuth 2.1 resource server (the MCP authorization spec): the settings
(`OAuthResourceServer`, `Introspection`), and the pieces that check tokens and guard the
HTTP app (`_tokens`, `_issuer`, `_guard`, `_app`: imported when a server is served with
authorization, so that serving without it never loads PyJWT)."""

from toolsets.mcp.server._auth._config import (
    DEFAULT_FETCH_TIMEOUT,
    DEFAULT_INTROSPECTION_CACHE,
    DEFAULT_KEYS_TTL,
    DEFAULT_LEEWAY,
    DEFAULT_REFRESH_INTERVAL,
    MAX_TOKEN_LENGTH,
    NO_AUTH,
    Introspection,
    OAuthResourceServer,
    ServerAuth,
    check_exposure,
)

__all__ = [
    "DEFAULT_FETCH_TIMEOUT",
    "DEFAULT_INTROSPECTION_CACHE",
    "DEFAULT_KEYS_TTL",
    "DEFAULT_LEEWAY",
    "DEFAULT_REFRESH_INTERVAL",
    "MAX_TOKEN_LENGTH",
    "NO_AUTH",
    "Introspection",
    "OAuthResourceServer",
    "ServerAuth",
    "check_exposure",
]
