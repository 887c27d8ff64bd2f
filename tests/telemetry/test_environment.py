"""Telemetry from the standard ``OTEL_*`` environment: which variables turn it on, off by
default (nothing of OpenTelemetry imported), one clear message when the ``[otel]`` extra is
missing, and ``toolsets serve`` exporting its spans over OTLP/HTTP to a real receiver."""

from __future__ import annotations

import gzip
import http.server
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.cli.helpers import SRC, entry_point, environment
from tests.mcp.helpers import HttpServer, eventually
from toolsets.telemetry._environment import Exporters, exporters_wanted

TRACE = "0af7651916cd43dd8448eb211c80319c"
TRACEPARENT = f"00-{TRACE}-b7ad6b7169203331-01"
SECRET = "planted-sekrit-4711"

CALL_A_TOOL = """
import sys, anyio
import toolsets
from toolsets import FunctionTool, ToolContext
from toolsets._invoke import invoke

def shout(text: str) -> str:
    '''Shout.'''
    return text.upper()

async def main():
    await invoke(FunctionTool(shout), {"text": "a"}, ToolContext(), default_timeout=5)

anyio.run(main)
print(sorted(m for m in sys.modules if m.split(".")[0] == "opentelemetry")[:3])
print(toolsets.telemetry.is_enabled())
"""


def run_python(code: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``code`` run by a new Python with only ``env`` of the OTEL_* variables."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    environ["PYTHONPATH"] = SRC
    environ.update(env)
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env=environ,
        check=False,
    )


@pytest.mark.parametrize(
    ("environ", "wanted"),
    [
        ({}, None),
        ({"OTEL_SERVICE_NAME": "x"}, None),
        (
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"},
            Exporters(traces=("otlp",), metrics=("otlp",)),
        ),
        (
            {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c/v1/traces"},
            Exporters(traces=("otlp",), metrics=()),
        ),
        (
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_METRICS_EXPORTER": "none"},
            Exporters(traces=("otlp",), metrics=()),
        ),
        (
            {"OTEL_TRACES_EXPORTER": "console, otlp"},
            Exporters(traces=("console", "otlp"), metrics=()),
        ),
        ({"OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "none"}, None),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_SDK_DISABLED": "true"}, None),
    ],
)
def test_which_variables_turn_telemetry_on(
    environ: dict[str, str], wanted: Exporters | None
) -> None:
    assert exporters_wanted(environ) == wanted


@pytest.mark.parametrize(
    ("environ", "named"),
    [
        ({"OTEL_TRACES_EXPORTER": "zipkin"}, "zipkin"),
        ({"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, "http/protobuf"),
    ],
)
def test_an_exporter_toolsets_does_not_have_is_refused_by_name(
    environ: dict[str, str], named: str
) -> None:
    with pytest.raises(ValueError, match=named):
        exporters_wanted(environ)


def test_off_by_default_nothing_of_opentelemetry_is_imported_by_a_call() -> None:
    done = run_python(CALL_A_TOOL, {})
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["[]", "False"]


def test_the_environment_turns_it_on_and_spans_are_exported() -> None:
    done = run_python(CALL_A_TOOL, {"OTEL_TRACES_EXPORTER": "console"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "True"
    assert '"name": "execute_tool shout"' in done.stderr  # the console exporter's JSON
    assert '"service.name": "toolsets"' in done.stderr


def test_without_the_extra_the_environment_gets_one_message_naming_it() -> None:
    blocked = "import sys\nsys.modules['opentelemetry.sdk'] = None\n"
    done = run_python(blocked + CALL_A_TOOL, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "False"
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("OpenTelemetry is off: toolsets.telemetry needs opentelemetry-sdk")
    assert "[otel]" in line


# --- OTLP/HTTP to a local receiver ------------------------------------------------------


@dataclass
class Receiver:
    """An OTLP/HTTP receiver on 127.0.0.1: the spans and metric names it was sent."""

    spans: list[dict[str, Any]] = field(default_factory=list)
    metrics: set[str] = field(default_factory=set)
    port: int = 0

    def take(self, path: str, body: bytes) -> None:
        if path == "/v1/traces":
            request = ExportTraceServiceRequest.FromString(body)
            for resource in request.resource_spans:
                service = {a.key: a.value.string_value for a in resource.resource.attributes}
                for scope in resource.scope_spans:
                    for span in scope.spans:
                        attributes = {a.key: str(a.value) for a in span.attributes}
                        self.spans.append(
                            {
                                "name": span.name,
                                "kind": span.kind,
                                "trace": span.trace_id.hex(),
                                "id": span.span_id.hex(),
                                "parent": span.parent_span_id.hex(),
                                "attributes": attributes,
                                "service": service.get("service.name"),
                                "raw": str(span),
                            }
                        )
        elif path == "/v1/metrics":
            request_m = ExportMetricsServiceRequest.FromString(body)
            for resource_m in request_m.resource_metrics:
                for scope_m in resource_m.scope_metrics:
                    self.metrics.update(metric.name for metric in scope_m.metrics)

    def named(self, name: str) -> dict[str, Any]:
        (found,) = [span for span in self.spans if span["name"] == name]
        return found


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    received = Receiver()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", 0)))
            if self.headers.get("content-encoding") == "gzip":
                body = gzip.decompress(body)
            received.take(self.path, body)
            self.send_response(200)
            self.send_header("content-type", "application/x-protobuf")
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    received.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield received
    server.shutdown()
    server.server_close()
    thread.join(10)


class Served(HttpServer):
    """``toolsets serve oteltools:tools --http``, configured by OTEL_* variables only."""

    def __init__(self, folder: Path, otel: dict[str, str]) -> None:
        super().__init__()
        self.folder = folder
        self.otel = otel

    def command(self) -> tuple[list[str], dict[str, str]]:
        env = {k: v for k, v in environment().items() if not k.startswith("OTEL_")}
        env["PYTHONPATH"] = os.pathsep.join([str(self.folder), env["PYTHONPATH"]])
        env.update(self.otel)
        listen = f"127.0.0.1:{self.port}"
        return [*entry_point(), "serve", "oteltools:tools", "--http", listen], env


@pytest.mark.anyio
async def test_serve_exports_its_spans_over_otlp_http_configured_by_the_environment_alone(
    receiver: Receiver, tmp_path: Path
) -> None:
    receiver.spans.clear()
    receiver.metrics.clear()
    (tmp_path / "oteltools.py").write_text(
        "def shout(text: str) -> str:\n    '''Shout.'''\n    return text.upper()\n\n"
        "tools = [shout]\n"
    )
    served = Served(
        tmp_path,
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{receiver.port}",
            "OTEL_BSP_SCHEDULE_DELAY": "50",
            "OTEL_METRIC_EXPORT_INTERVAL": "100",
            "OTEL_SERVICE_NAME": "served-tools",
        },
    )
    served.start()
    try:
        async with httpx2.AsyncClient(timeout=30) as http:
            transport = streamable_http_client(served.url, http_client=http)
            async with Client(transport) as client:  # type: ignore[arg-type]
                result = await client.call_tool(
                    "shout", {"text": SECRET}, meta={"traceparent": TRACEPARENT}
                )
        assert not result.is_error

        async def exported() -> bool:
            names = {span["name"] for span in receiver.spans}
            wanted = {"tools/call shout", "execute_tool shout"}
            return wanted <= names and "mcp.server.operation.duration" in receiver.metrics

        await eventually(exported, within=20)
    finally:
        served.stop()
    server_span = receiver.named("tools/call shout")
    tool_span = receiver.named("execute_tool shout")
    assert server_span["trace"] == TRACE
    assert server_span["kind"] == 2  # SPAN_KIND_SERVER
    assert server_span["service"] == "served-tools"
    assert server_span["attributes"]["network.transport"] == 'string_value: "tcp"\n'
    assert tool_span["parent"] == server_span["id"]
    assert SECRET not in json.dumps(receiver.spans)


def test_reading_the_environment_at_import_loads_nothing_else() -> None:
    """``import toolsets`` reads ``OTEL_*`` without loading what only an enabled telemetry
    or a missing extra's message needs (the install helpers, importlib.metadata)."""
    code = (
        "import sys\nimport toolsets\n"
        "print(sorted(m for m in ('toolsets._install', 'toolsets.telemetry._spans', "
        "'importlib.metadata', 'tomllib') if m in sys.modules))"
    )
    done = run_python(code, {})
    assert done.stdout.strip() == "[]", done.stderr
