"""The spans and durations telemetry records (`toolsets.telemetry`), read back from the
OpenTelemetry SDK's in-memory exporter and metric reader: the one call path's
``execute_tool`` span, a served request's SERVER span continuing the ``traceparent`` of
its ``_meta``, an OpenAPI tool's REST request as a CLIENT span sending ``traceparent`` to a
real HTTP server, an MCP tool's call carrying it in ``_meta`` to a real MCP server; errors
as their class, and no argument value or secret anywhere."""

from __future__ import annotations

from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from opentelemetry.trace import SpanKind, StatusCode

from tests.agent.helpers import one_call, response_of
from tests.mcp.helpers import HttpServer, stdio_toolset
from tests.mcp.server_helpers import connected, uvicorn_thread
from tests.openapi.helpers import ONE_GET, RecordingServer, recording_server, secured
from tests.telemetry.helpers import Recorded, parent_id, recorded, span_id, trace_id
from toolsets import FunctionCall, FunctionTool, ToolContext, is_error_result, telemetry
from toolsets._invoke import Done, invoke
from toolsets.mcp import McpServer, McpToolset, StreamableHttp
from toolsets.openapi import OpenApiToolset

pytestmark = pytest.mark.anyio

__all__ = ["recorded"]  # the fixture, used by name

SECRET = "planted-sekrit-4711"
"""An argument value and a credential: in no span, attribute, event or status."""
TRACE = "0af7651916cd43dd8448eb211c80319c"
PARENT = "b7ad6b7169203331"
TRACEPARENT = f"00-{TRACE}-{PARENT}-01"


def shout(text: str) -> str:
    """Shout ``text``."""
    return text.upper()


def explode(text: str) -> str:
    """Fail, quoting ``text``."""
    raise ValueError(f"cannot take {text}")


async def test_a_call_through_the_one_call_path_is_an_execute_tool_span(
    recorded: Recorded,
) -> None:
    outcome = await invoke(
        FunctionTool(shout), {"text": SECRET}, ToolContext(function_call_id="c1"), default_timeout=5
    )
    assert isinstance(outcome, Done)
    span = recorded.span("execute_tool shout")
    assert span.kind is SpanKind.INTERNAL
    assert dict(span.attributes or {}) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "shout",
        "gen_ai.tool.type": "function",
        "gen_ai.tool.call.id": "c1",
    }
    assert span.status.status_code is StatusCode.UNSET
    (point,) = recorded.histogram("gen_ai.client.operation.duration")
    assert dict(point.attributes) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "shout",
    }
    assert point.count == 1
    assert SECRET not in recorded.everything()


async def test_a_tool_that_raises_is_its_error_class_and_never_its_message(
    recorded: Recorded,
) -> None:
    tool = FunctionTool(explode)
    outcome = await invoke(tool, {"text": SECRET}, ToolContext(), default_timeout=5)
    assert isinstance(outcome, Done)
    assert SECRET in str(outcome.result)  # the model is told; the span is not
    span = recorded.span("execute_tool explode")
    assert (span.attributes or {})["error.type"] == "ValueError"
    assert span.status.status_code is StatusCode.ERROR
    assert not span.events
    (point,) = recorded.histogram("gen_ai.client.operation.duration")
    assert point.attributes["error.type"] == "ValueError"
    assert SECRET not in recorded.everything()


async def test_an_error_result_is_a_tool_error(recorded: Recorded) -> None:
    outcome = await invoke(FunctionTool(shout), {}, ToolContext(), default_timeout=5)
    assert isinstance(outcome, Done)
    assert is_error_result(outcome.result)
    span = recorded.span("execute_tool shout")
    assert (span.attributes or {})["error.type"] == "tool_error"


async def test_off_nothing_is_recorded(recorded: Recorded) -> None:
    telemetry.disable()
    assert not telemetry.is_enabled()
    await invoke(FunctionTool(shout), {"text": "a"}, ToolContext(), default_timeout=5)
    assert recorded.spans() == []


def _rest_toolset(api: RecordingServer) -> OpenApiToolset:
    spec = secured("key", {"type": "apiKey", "in": "header", "name": "X-Key"})
    return OpenApiToolset(spec, base_url=api.url, credentials={"key": SECRET})


@pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
async def test_a_served_call_continues_the_meta_traceparent_down_to_the_rest_request(
    recorded: Recorded, mode: str
) -> None:
    async with recording_server() as api:
        server = McpServer(_rest_toolset(api))
        async with connected(server, mode) as client:
            result = await client.call_tool(
                "get_thing", {"id": SECRET}, meta={"traceparent": TRACEPARENT}
            )
    assert not result.is_error
    served = recorded.span("tools/call get_thing")
    called = recorded.span("execute_tool get_thing")
    sent = recorded.span("GET /things/{id}")
    assert served.kind is SpanKind.SERVER
    assert f"{trace_id(served):032x}" == TRACE
    assert f"{parent_id(served):016x}" == PARENT
    assert {s.name for s in recorded.spans() if trace_id(s) != trace_id(served)} <= {
        "initialize",
        "notifications/initialized",
        "tools/list",
        "server/discover",
    }
    attributes = dict(served.attributes or {})
    assert attributes["mcp.method.name"] == "tools/call"
    assert attributes["gen_ai.tool.name"] == "get_thing"
    assert attributes["gen_ai.operation.name"] == "execute_tool"
    assert attributes["mcp.protocol.version"]
    assert "jsonrpc.request.id" in attributes
    assert parent_id(called) == span_id(served)
    assert parent_id(sent) == span_id(called)
    assert sent.kind is SpanKind.CLIENT
    assert dict(sent.attributes or {}) == {
        "http.request.method": "GET",
        "server.address": "127.0.0.1",
        "server.port": api.port,
        "url.template": "/things/{id}",
        "http.response.status_code": 200,
    }
    (request,) = api.requests
    assert request.headers["traceparent"] == (f"00-{TRACE}-{span_id(sent):016x}-01")
    (point,) = [
        p
        for p in recorded.histogram("mcp.server.operation.duration")
        if p.attributes["mcp.method.name"] == "tools/call"
    ]
    assert point.attributes["gen_ai.tool.name"] == "get_thing"
    assert "jsonrpc.request.id" not in point.attributes
    (http,) = recorded.histogram("http.client.request.duration")
    assert http.attributes["url.template"] == "/things/{id}"
    assert SECRET not in recorded.everything()


async def test_a_failing_rest_request_is_its_status_and_the_served_call_a_tool_error(
    recorded: Recorded,
) -> None:
    async with recording_server() as api:
        api.status = 500
        api.body = {"message": f"no {SECRET}"}
        server = McpServer(_rest_toolset(api))
        async with connected(server, "2026-07-28") as client:
            result = await client.call_tool("get_thing", {"id": SECRET})
    assert result.is_error
    sent = recorded.span("GET /things/{id}")
    assert (sent.attributes or {})["error.type"] == "500"
    assert sent.status.status_code is StatusCode.ERROR
    assert (recorded.span("execute_tool get_thing").attributes or {})["error.type"] == (
        "tool_error"
    )
    assert (recorded.span("tools/call get_thing").attributes or {})["error.type"] == ("tool_error")
    assert SECRET not in recorded.everything()


async def test_an_unreachable_api_is_the_connection_errors_class(recorded: Recorded) -> None:
    toolset = OpenApiToolset(ONE_GET, base_url="http://127.0.0.1:9")
    async with toolset:
        (tool,) = await toolset.list_tools(ToolContext())
        await invoke(tool, {"id": SECRET}, ToolContext(), default_timeout=5)
    sent = recorded.span("GET /things/{id}")
    assert (sent.attributes or {})["error.type"] == "httpx2.ConnectError"
    called = recorded.span("execute_tool get_thing")
    assert (called.attributes or {})["error.type"] == "toolsets._errors.ConnectionError"
    assert SECRET not in recorded.everything()


async def test_a_call_to_an_mcp_tool_is_a_client_span_whose_traceparent_goes_in_meta(
    recorded: Recorded, http_server: HttpServer
) -> None:
    async with McpToolset(StreamableHttp(url=http_server.url), confirm="never") as toolset:
        tools = {tool.name: tool for tool in await toolset.list_tools(ToolContext())}
        with anyio.fail_after(20):
            outcome = await invoke(tools["meta"], {}, ToolContext(), default_timeout=10)
    assert isinstance(outcome, Done)
    seen: Any = outcome.result
    sent = recorded.span("tools/call meta")
    called = recorded.span("execute_tool meta")
    assert sent.kind is SpanKind.CLIENT
    assert parent_id(sent) == span_id(called)
    assert dict(sent.attributes or {}) == {
        "mcp.method.name": "tools/call",
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "meta",
        "network.transport": "tcp",
        "server.address": "127.0.0.1",
        "server.port": http_server.port,
    }
    traceparent = seen["traceparent"] if isinstance(seen, dict) else str(seen)
    assert f"-{trace_id(sent):032x}-" in traceparent
    assert recorded.histogram("mcp.client.operation.duration")


async def test_a_session_over_http_continues_the_traceparent_header(recorded: Recorded) -> None:
    server = McpServer([shout])
    async with (
        uvicorn_thread(server.http_app) as url,
        httpx2.AsyncClient(headers={"traceparent": TRACEPARENT}, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http), mode="legacy") as client,
    ):
        result = await client.call_tool("shout", {"text": SECRET})
    assert not result.is_error
    served = recorded.span("tools/call shout")
    attributes = dict(served.attributes or {})
    assert f"{trace_id(served):032x}" == TRACE
    assert f"{parent_id(served):016x}" == PARENT
    assert attributes["network.transport"] == "tcp"
    assert attributes["mcp.protocol.version"] == "2025-11-25"
    assert len(str(attributes["mcp.session.id"])) >= 16
    assert parent_id(recorded.span("execute_tool shout")) == span_id(served)
    assert SECRET not in recorded.everything()


async def test_the_agent_loop_calls_are_execute_tool_spans_with_their_call_ids(
    recorded: Recorded,
) -> None:
    request = FunctionCall(name="shout", args={"text": SECRET}, id="call-7")
    _, _, events = await one_call(FunctionTool(shout), request, "done")
    assert response_of(events, "shout") == SECRET.upper()
    span = recorded.span("execute_tool shout")
    assert (span.attributes or {})["gen_ai.tool.call.id"] == "call-7"
    assert SECRET not in recorded.everything()


async def test_an_mcp_tools_error_is_a_tool_error_and_stdio_is_a_pipe(recorded: Recorded) -> None:
    async with stdio_toolset(confirm="never") as toolset:
        tools = {tool.name: tool for tool in await toolset.list_tools(ToolContext())}
        with anyio.fail_after(20):
            await invoke(tools["fail"], {"message": SECRET}, ToolContext(), default_timeout=10)
    sent = recorded.span("tools/call fail")
    attributes = dict(sent.attributes or {})
    assert attributes["network.transport"] == "pipe"
    assert attributes["error.type"] == "tool_error"
    assert sent.status.status_code is StatusCode.ERROR
    assert (recorded.span("execute_tool fail").attributes or {})["error.type"] == "tool_error"
    (point,) = recorded.histogram("mcp.client.operation.duration")
    assert point.attributes["error.type"] == "tool_error"
    assert SECRET not in recorded.everything()


async def test_off_with_a_tracer_provider_set_up_the_sdks_own_server_span_is_kept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Telemetry off (no toolsets span), an OpenTelemetry SDK set up in the process by
    # someone else: the mcp SDK's middleware records its span, as it did before toolsets
    # stopped running it when no SDK is set up.
    from mcp.shared import _otel as mcp_otel
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    telemetry.disable()
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    # The API's global, and the mcp SDK's tracer (made at its import: a proxy would keep
    # the first provider it met for good), both put back after.
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", provider)
    monkeypatch.setattr(mcp_otel, "_tracer", provider.get_tracer("mcp-python-sdk"))
    try:
        async with connected(McpServer([shout]), "2026-07-28") as client:
            await client.call_tool("shout", {"text": "a"})
    finally:
        provider.shutdown()
    names = [span.name for span in exporter.get_finished_spans()]
    assert "tools/call shout" in names
    assert not any(name.startswith("execute_tool") for name in names)
