"""Telemetry on, recorded to memory: every span through the OpenTelemetry SDK's
synchronous processor to an exporter that counts and drops it (the in-memory exporter's
work without its list of every span made, which the garbage collector would go over again
and again under a load test), every duration to the SDK's in-memory metric reader. What
telemetry costs a call before any export (benchmarks/telemetry.py's on side,
benchmarks/serve_load.py's ``ours 1 telemetry`` row)."""

from __future__ import annotations

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


def record_in_memory() -> Counting:
    """Turn telemetry on, recording to memory; the exporter that counts the spans."""
    exporter = Counting()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    telemetry.enable(tracer_provider=tracer_provider, meter_provider=meter_provider)
    return exporter
