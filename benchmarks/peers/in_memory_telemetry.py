"""Run ``toolsets``'s CLI with telemetry on, recording to memory: every span through the
OpenTelemetry SDK's synchronous processor to an exporter that counts and drops it (the
in-memory exporter's work without its list growing under a load test), every duration to
the SDK's in-memory metric reader. What telemetry costs a served call before any export
(benchmarks/serve_load.py's ``ours 1 telemetry`` row).

    python in_memory_telemetry.py serve SPEC ...   (the CLI's arguments)
"""

from __future__ import annotations

import runpy
import sys
from collections.abc import Sequence

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

from toolsets import telemetry


class Counting(SpanExporter):
    """Counts the spans it is given, keeps none."""

    def __init__(self) -> None:
        self.spans = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.spans += len(spans)
        return SpanExportResult.SUCCESS


def main() -> None:
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(Counting()))
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    telemetry.enable(tracer_provider=tracer_provider, meter_provider=meter_provider)
    sys.argv = ["toolsets.cli", *sys.argv[1:]]
    runpy.run_module("toolsets.cli", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
