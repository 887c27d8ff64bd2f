"""The OpenTelemetry SDK's in-memory exporter and metric reader, and telemetry turned on
with them for a test."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from toolsets import telemetry


@dataclass
class Recorded:
    """What telemetry recorded during a test."""

    exporter: InMemorySpanExporter
    reader: InMemoryMetricReader

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def span(self, name: str) -> ReadableSpan:
        found = [span for span in self.spans() if span.name == name]
        assert len(found) == 1, [span.name for span in self.spans()]
        return found[0]

    def histogram(self, name: str) -> list[HistogramDataPoint]:
        data = self.reader.get_metrics_data()
        points: list[HistogramDataPoint] = []
        for resource in data.resource_metrics if data else []:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if metric.name == name:
                        points += [p for p in metric.data.data_points]  # type: ignore[misc]
        return points

    def everything(self) -> str:
        """Every exported span as JSON text (names, attributes, events, status): where a
        planted secret must not be."""
        return "\n".join(span.to_json() for span in self.spans())


@pytest.fixture
def recorded() -> Iterator[Recorded]:
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    telemetry.enable(tracer_provider=tracer_provider, meter_provider=meter_provider)
    try:
        yield Recorded(exporter, reader)
    finally:
        telemetry.disable()
        tracer_provider.shutdown()
        meter_provider.shutdown()


def parent_id(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def span_id(span: ReadableSpan) -> int:
    assert span.context is not None
    return span.context.span_id


def trace_id(span: ReadableSpan) -> int:
    assert span.context is not None
    return span.context.trace_id
