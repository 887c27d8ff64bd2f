"""Telemetry configured by the standard ``OTEL_*`` environment variables.

What turns it on (read once, when `toolsets` is imported):

- ``OTEL_TRACES_EXPORTER`` / ``OTEL_METRICS_EXPORTER`` naming ``otlp`` or ``console``
  (comma-separated; ``none`` exports nothing); or, when the variable is unset,
- ``OTEL_EXPORTER_OTLP_ENDPOINT`` (both signals), ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``
  (traces) or ``OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`` (metrics) being set.

``OTEL_SDK_DISABLED=true`` keeps it off whatever else says. ``otlp`` is OTLP over HTTP
with protobuf (``OTEL_EXPORTER_OTLP_PROTOCOL`` unset or ``http/protobuf``); ``console``
writes to standard error (standard output may be an MCP stdio stream). Everything else
(endpoints, headers, timeouts, ``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``, the
batch and export intervals) the OpenTelemetry SDK reads itself. It needs the ``[otel]``
extra (the SDK and the OTLP exporter).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import MetricExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter

__all__ = ["Exporters", "exporters_wanted", "providers"]

EXPORTERS = ("otlp", "console", "none")
"""The exporter names ``OTEL_TRACES_EXPORTER`` and ``OTEL_METRICS_EXPORTER`` may list."""
PROTOCOLS = ("", "http/protobuf")
"""The OTLP protocols supported (empty: unset, the default)."""


@dataclass(frozen=True, kw_only=True)
class Exporters:
    """The exporters the environment asks for, per signal (empty: that signal is off)."""

    traces: tuple[str, ...]
    metrics: tuple[str, ...]


def _listed(environ: Mapping[str, str], signal: str) -> tuple[str, ...]:
    named = environ.get(f"OTEL_{signal}_EXPORTER")
    if named is None:
        endpoints = ("OTEL_EXPORTER_OTLP_ENDPOINT", f"OTEL_EXPORTER_OTLP_{signal}_ENDPOINT")
        return ("otlp",) if any(environ.get(name) for name in endpoints) else ()
    names = tuple(dict.fromkeys(n.strip().lower() for n in named.split(",") if n.strip()))
    unknown = [name for name in names if name not in EXPORTERS]
    if unknown:
        raise ValueError(
            f"OTEL_{signal}_EXPORTER={named!r}: toolsets exports with "
            f"{', '.join(EXPORTERS)}, not {', '.join(unknown)}"
        )
    protocol = environ.get(
        f"OTEL_EXPORTER_OTLP_{signal}_PROTOCOL", environ.get("OTEL_EXPORTER_OTLP_PROTOCOL", "")
    )
    if "otlp" in names and protocol.strip().lower() not in PROTOCOLS:
        raise ValueError(
            f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol!r}: toolsets exports OTLP over HTTP "
            "with protobuf; set it to http/protobuf (or leave it unset)"
        )
    return tuple(name for name in names if name != "none")


def exporters_wanted(environ: Mapping[str, str]) -> Exporters | None:
    """The exporters ``environ`` asks for, or None when it asks for none (telemetry
    stays off).

    Raises:
        ValueError: an exporter or an OTLP protocol toolsets does not export with.
    """
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    wanted = Exporters(traces=_listed(environ, "TRACES"), metrics=_listed(environ, "METRICS"))
    return wanted if wanted.traces or wanted.metrics else None


def providers(wanted: Exporters) -> tuple[TracerProvider | None, MeterProvider | None]:
    """A tracer provider and a meter provider of the OpenTelemetry SDK exporting to
    ``wanted`` (None for a signal that is off).

    Raises:
        ImportError: the ``[otel]`` extra is not installed (naming the line that adds it).
    """
    try:
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.trace import TracerProvider
    except ImportError as exc:
        raise _missing(exc) from exc
    resource = _resource()
    tracer_provider = None
    if wanted.traces:
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        tracer_provider = TracerProvider(resource=resource)
        for name in wanted.traces:
            tracer_provider.add_span_processor(BatchSpanProcessor(_span_exporter(name)))
    meter_provider = None
    if wanted.metrics:
        from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

        readers = [PeriodicExportingMetricReader(_metric_exporter(n)) for n in wanted.metrics]
        meter_provider = MeterProvider(resource=resource, metric_readers=readers)
    return tracer_provider, meter_provider


def _resource() -> Resource:
    """The SDK's resource from the environment; ``service.name`` ``toolsets`` unless it
    names one."""
    from opentelemetry.sdk.resources import Resource

    found = Resource.create()
    if str(found.attributes.get("service.name", "")).startswith("unknown_service"):
        found = found.merge(Resource({"service.name": "toolsets"}))
    return found


def _span_exporter(name: str) -> SpanExporter:
    if name == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return ConsoleSpanExporter(out=sys.stderr)
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError as exc:
        raise _missing(exc) from exc
    return OTLPSpanExporter()


def _metric_exporter(name: str) -> MetricExporter:
    if name == "console":
        from opentelemetry.sdk.metrics.export import ConsoleMetricExporter

        return ConsoleMetricExporter(out=sys.stderr)
    try:
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    except ImportError as exc:
        raise _missing(exc) from exc
    return OTLPMetricExporter()


def _missing(cause: ImportError) -> ImportError:
    """The error naming the ``[otel]`` extra (`toolsets._install` is imported only then:
    ``import toolsets`` reads the environment without it)."""
    from toolsets._install import missing_extra

    return missing_extra("toolsets.telemetry", "otel", cause)
