"""The SERVER span of each MCP request served, while telemetry is on (`toolsets.telemetry`).

A span ``{mcp.method.name} {target}`` (MCP semantic conventions: the target is the tool's
or the prompt's name) with the method, the protocol version, the JSON-RPC id, the session
(``Mcp-Session-Id``) and the transport; it continues the ``traceparent`` of the request's
``params._meta``, else of its HTTP header; its duration goes to
``mcp.server.operation.duration``. The ``execute_tool`` span of a ``tools/call`` (the one
call path's) is its child. Off, the SDK's own middleware runs as it always does once an
OpenTelemetry SDK is set up in the process (a tracer provider set), and not at all
before.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mcp import MCPError
from mcp.server.context import CallNext, HandlerResult, ServerMiddleware, ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp_types import INVALID_PARAMS, CallToolResult
from opentelemetry import trace
from opentelemetry.trace import SpanKind
from pydantic import ValidationError

from toolsets import _telemetry
from toolsets.telemetry._spans import parent_of

if TYPE_CHECKING:
    from toolsets.telemetry._spans import Attributes, Telemetry

__all__ = ["ServerSpans", "trace_requests"]

_NAMED = {"tools/call": "gen_ai.tool.name", "prompts/get": "gen_ai.prompt.name"}
"""The methods whose span names their target, and the attribute that holds it."""


class ServerSpans:
    """Context-tier middleware of the SDK's server: our span while telemetry is on, the
    SDK's OpenTelemetry middleware it replaces (if any) while off."""

    def __init__(self, sdk: ServerMiddleware[Any] | None) -> None:
        self._sdk = sdk

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        telemetry = _telemetry.current
        if telemetry is not None:
            return await _served(telemetry, ctx, call_next)
        if self._sdk is not None and _sdk_recording():
            return await self._sdk(ctx, call_next)
        # No OpenTelemetry SDK is set up: the SDK's middleware would make a span that
        # records nothing, a good part of what a small served call costs.
        return await call_next(ctx)


def _sdk_recording() -> bool:
    """Whether a tracer provider is set up (`opentelemetry.trace.set_tracer_provider`):
    until one is, every span is one that records nothing."""
    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


def trace_requests(server: Server[Any]) -> None:
    """Put `ServerSpans` in place of the SDK's OpenTelemetry middleware of ``server``."""
    from mcp.server._otel import OpenTelemetryMiddleware

    middleware = server.middleware
    for i, each in enumerate(middleware):
        if isinstance(each, OpenTelemetryMiddleware):
            middleware[i] = ServerSpans(each)
            return
    middleware.insert(0, ServerSpans(None))


def _attributes(ctx: ServerRequestContext[Any, Any]) -> tuple[str, Attributes]:
    """The span name and attributes of the request of ``ctx``."""
    method = ctx.method
    attributes: Attributes = {"mcp.method.name": method}
    if ctx.protocol_version:
        attributes["mcp.protocol.version"] = ctx.protocol_version
    if ctx.request_id is not None:
        attributes["jsonrpc.request.id"] = str(ctx.request_id)
    headers = _headers(ctx)
    if headers is not None:
        attributes["network.transport"] = "tcp"
        session = headers.get("mcp-session-id")
        if session:
            attributes["mcp.session.id"] = session
    name = method
    key = _NAMED.get(method)
    target = ctx.params.get("name") if key is not None and ctx.params else None
    if key is not None and isinstance(target, str):
        attributes[key] = target
        name = f"{method} {target}"
    if method == "tools/call":
        attributes["gen_ai.operation.name"] = "execute_tool"
    return name, attributes


def _headers(ctx: ServerRequestContext[Any, Any]) -> Mapping[str, str] | None:
    """The HTTP headers of the request (None: not served over HTTP)."""
    headers = getattr(ctx.request, "headers", None)
    return headers if isinstance(headers, Mapping) else None


async def _served(
    telemetry: Telemetry, ctx: ServerRequestContext[Any, Any], call_next: CallNext
) -> HandlerResult:
    """``call_next(ctx)`` as the request's SERVER span."""
    name, attributes = _attributes(ctx)
    meta: Mapping[str, object] | None = ctx.meta
    parent = parent_of(meta, _headers(ctx))
    with telemetry.operation(
        name, SpanKind.SERVER, attributes, telemetry.server_duration, parent
    ) as span:
        try:
            result = await call_next(ctx)
        except MCPError as exc:
            span.set("rpc.response.status_code", str(exc.error.code))
            span.failed(str(exc.error.code))
            raise
        except ValidationError:  # the params: pydantic's message would quote them
            span.set("rpc.response.status_code", str(INVALID_PARAMS))
            span.failed(str(INVALID_PARAMS))
            raise
        if ctx.method == "tools/call" and _is_error(result):
            span.failed("tool_error")
        return result


def _is_error(result: HandlerResult) -> bool:
    if isinstance(result, CallToolResult):
        return result.is_error is True
    return isinstance(result, dict) and result.get("isError") is True
