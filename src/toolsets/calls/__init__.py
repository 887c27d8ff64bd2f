"""Calls in production: wrappers around tool calls (`wrap_calls`), and the ones APIs
need — `Retry` (honouring ``Retry-After``, only for calls safe to repeat), `RateLimit`
(a token bucket per upstream, waiting within the call's deadline) and `ResultLimit` (a
result kept under a size in bytes or tokens, saying how to get the rest).

A wrapper runs in the one call path (`invoke`), so the agent loop, every framework
adapter, the MCP server and the CLI run it alike, for OpenAPI tools, MCP tools and
functions::

    from toolsets.calls import RateLimit, Retry, wrap_calls

    api = wrap_calls(OpenApiToolset("openapi.json"), RateLimit(rate=10), Retry(tries=4))
"""

from toolsets.calls._rate_limit import RateLimit, upstream_of
from toolsets.calls._result_limit import BYTES_PER_TOKEN, DEFAULT_MAX_RESULT_BYTES, ResultLimit
from toolsets.calls._retry import DEFAULT_RETRY_STATUSES, Retry
from toolsets.calls._wrapping import CallNext, CallWrapper, ToolCall, Try, WrappedTool, wrap_calls

__all__ = [
    "BYTES_PER_TOKEN",
    "DEFAULT_MAX_RESULT_BYTES",
    "DEFAULT_RETRY_STATUSES",
    "CallNext",
    "CallWrapper",
    "RateLimit",
    "ResultLimit",
    "Retry",
    "ToolCall",
    "Try",
    "WrappedTool",
    "upstream_of",
    "wrap_calls",
]
