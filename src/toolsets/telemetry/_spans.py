"""What telemetry records once it is on: the spans and duration histograms of tool calls,
MCP requests (served and sent) and the REST requests of OpenAPI tools, on the
OpenTelemetry API (the providers given to `toolsets.telemetry.enable`, or the global ones).

Attribute names follow the semantic conventions: GenAI's ``execute_tool`` span, MCP's
``{mcp.method.name} {target}`` spans and ``mcp.*.operation.duration`` histograms, HTTP's
client span and ``http.client.request.duration``. What a span says of a call is its
names, kind, ids and outcome: never an argument value, a result, a header value or a URL
(whose query may hold a key); an error is its class (``error.type``), never its message.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextvars import ContextVar
from time import perf_counter
from types import TracebackType
from typing import TYPE_CHECKING, Self

from opentelemetry import context as otel_context
from opentelemetry import metrics, propagate, trace
from opentelemetry.context import Context
from opentelemetry.trace import SpanKind, StatusCode
from opentelemetry.util.types import AttributeValue

if TYPE_CHECKING:
    import httpx2

__all__ = ["Attributes", "Operation", "Telemetry", "error_type", "parent_of"]

SCOPE = "toolsets"
"""The instrumentation scope of every span and instrument."""

Attributes = dict[str, AttributeValue]

_MCP_BUCKETS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300]
"""The MCP conventions' advised boundaries of the operation durations (seconds)."""
_GEN_AI_BUCKETS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48]
"""The GenAI conventions' advised boundaries of ``gen_ai.client.operation.duration``."""
_HTTP_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10]
"""The HTTP conventions' advised boundaries of ``http.client.request.duration``."""

_METRIC_KEYS = frozenset(
    {
        "error.type",
        "gen_ai.operation.name",
        "gen_ai.prompt.name",
        "gen_ai.tool.name",
        "http.request.method",
        "http.response.status_code",
        "mcp.method.name",
        "mcp.protocol.version",
        "network.transport",
        "rpc.response.status_code",
        "server.address",
        "server.port",
        "url.template",
    }
)
"""The span attributes a duration histogram keeps: the low-cardinality ones (no ids)."""


def error_type(error: BaseException) -> str:
    """``error.type`` of an exception: its class's qualified name (never its message,
    which may quote an argument or a credential)."""
    cls = type(error)
    module = cls.__module__
    return cls.__qualname__ if module == "builtins" else f"{module}.{cls.__qualname__}"


def parent_of(*carriers: Mapping[str, object] | None) -> Context | None:
    """The trace context the first of ``carriers`` (a request's ``_meta``, its HTTP
    headers) that holds a valid ``traceparent`` continues; None: none does (the span
    is parented as usual, not orphaned)."""
    for carrier in carriers:
        if not carrier or "traceparent" not in carrier:
            continue
        try:
            found = propagate.extract(carrier)
        except (TypeError, ValueError):
            continue
        if trace.get_current_span(found).get_span_context().is_valid:
            return found
    return None


class Operation:
    """One span, current while its ``with`` block runs, and its duration recorded when
    it ends. An exception leaving the block sets ``error.type`` to its class (unless
    `failed` said already); its message is never recorded."""

    __slots__ = ("_histogram", "_start", "_token", "attributes", "span")

    def __init__(
        self,
        span: trace.Span,
        attributes: Attributes,
        histogram: metrics.Histogram,
    ) -> None:
        self.span = span
        self.attributes = attributes
        """The span's attributes so far (what its duration is recorded with)."""
        self._histogram = histogram
        self._start = perf_counter()
        self._token: object = None

    def __enter__(self) -> Self:
        self._token = otel_context.attach(trace.set_span_in_context(self.span))
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if error is not None and "error.type" not in self.attributes:
            self.failed(error_type(error))
        otel_context.detach(self._token)  # type: ignore[arg-type]
        self.span.end()
        kept = {k: v for k, v in self.attributes.items() if k in _METRIC_KEYS}
        self._histogram.record(perf_counter() - self._start, kept)

    def set(self, key: str, value: AttributeValue) -> None:
        """Set an attribute of the span (and of its duration, if low-cardinality)."""
        self.attributes[key] = value
        self.span.set_attribute(key, value)

    def failed(self, kind: str) -> None:
        """The operation failed: ``error.type`` is ``kind`` (an error's class, an
        error code, ``tool_error``), the status an error without a description."""
        self.set("error.type", kind)
        self.span.set_status(StatusCode.ERROR)


class _ToolCall(Operation):
    """An ``execute_tool`` span: the one `Telemetry.tool_failed` marks while it runs."""

    __slots__ = ("_current",)

    def __enter__(self) -> Self:
        super().__enter__()
        self._current = _TOOL_CALL.set(self)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        _TOOL_CALL.reset(self._current)
        super().__exit__(kind, error, traceback)


_TOOL_CALL: ContextVar[Operation | None] = ContextVar("toolsets_tool_call", default=None)
"""The ``execute_tool`` span of the call running in this context."""


class Telemetry:
    """The tracer and the duration histograms telemetry records with (one per process
    while on; `toolsets.telemetry.enable` makes it)."""

    def __init__(
        self,
        tracer_provider: trace.TracerProvider | None = None,
        meter_provider: metrics.MeterProvider | None = None,
        *,
        version: str,
    ) -> None:
        self.tracer = trace.get_tracer(SCOPE, version, tracer_provider)
        meter = metrics.get_meter(SCOPE, version, meter_provider)
        self.tool_duration = meter.create_histogram(
            "gen_ai.client.operation.duration",
            unit="s",
            description="Duration of GenAI operations: here, tool calls (execute_tool).",
            explicit_bucket_boundaries_advisory=_GEN_AI_BUCKETS,
        )
        self.server_duration = meter.create_histogram(
            "mcp.server.operation.duration",
            unit="s",
            description="Duration of the MCP requests this server answered.",
            explicit_bucket_boundaries_advisory=_MCP_BUCKETS,
        )
        self.client_duration = meter.create_histogram(
            "mcp.client.operation.duration",
            unit="s",
            description="Duration of the MCP requests sent to upstream servers.",
            explicit_bucket_boundaries_advisory=_MCP_BUCKETS,
        )
        self.http_duration = meter.create_histogram(
            "http.client.request.duration",
            unit="s",
            description="Duration of the HTTP requests OpenAPI tools sent.",
            explicit_bucket_boundaries_advisory=_HTTP_BUCKETS,
        )

    def operation(
        self,
        name: str,
        kind: SpanKind,
        attributes: Attributes,
        histogram: metrics.Histogram,
        context: Context | None = None,
        *,
        made: type[Operation] = Operation,
    ) -> Operation:
        """A span ``name`` (of ``made``, an `Operation`), to run a ``with`` block in,
        its duration recorded in ``histogram``."""
        span = self.tracer.start_span(
            name,
            context,
            kind,
            attributes,
            record_exception=False,
            set_status_on_exception=False,
        )
        return made(span, attributes, histogram)

    def tool_call(self, tool_name: str, call_id: str | None) -> Operation:
        """The ``execute_tool {tool_name}`` span of one call (GenAI conventions)."""
        attributes: Attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tool_name,
            "gen_ai.tool.type": "function",
        }
        if call_id:
            attributes["gen_ai.tool.call.id"] = call_id
        return self.operation(
            f"execute_tool {tool_name}",
            SpanKind.INTERNAL,
            attributes,
            self.tool_duration,
            made=_ToolCall,
        )

    def tool_failed(self, error: BaseException) -> None:
        """The tool of the call running raised ``error`` (or timed out): its class is
        the call's ``error.type``, whatever result the model is given for it."""
        call = _TOOL_CALL.get()
        if call is not None:
            call.failed(error_type(error))

    def mcp_call(self, tool_name: str, peer: Attributes) -> Operation:
        """The CLIENT span ``tools/call {tool_name}`` of a call to an MCP server's tool
        (``peer``: the server's ``network.transport``, ``server.address``...); the SDK
        puts its ``traceparent`` in the request's ``_meta``."""
        attributes: Attributes = {
            "mcp.method.name": "tools/call",
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tool_name,
            **peer,
        }
        return self.operation(
            f"tools/call {tool_name}", SpanKind.CLIENT, attributes, self.client_duration
        )

    async def send(
        self, client: httpx2.AsyncClient, request: httpx2.Request, template: str
    ) -> httpx2.Response:
        """``client.send(request)`` (streamed, no redirects followed) as a CLIENT span
        ``{method} {template}`` (HTTP conventions), its ``traceparent`` sent as a header.
        The span ends when the response's head has arrived."""
        url = request.url
        attributes: Attributes = {
            "http.request.method": request.method,
            "server.address": url.host,
            "server.port": url.port or (443 if url.scheme == "https" else 80),
            "url.template": template,
        }
        name = f"{request.method} {template}"
        with self.operation(name, SpanKind.CLIENT, attributes, self.http_duration) as operation:
            propagate.inject(request.headers)
            response = await client.send(request, stream=True, follow_redirects=False)
            status = response.status_code
            operation.set("http.response.status_code", status)
            if status >= 400:
                operation.failed(str(status))
            return response
