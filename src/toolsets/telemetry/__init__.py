"""OpenTelemetry traces and metrics of tool calls, off unless configured.

On, every call through the one call path (the agent loop, the adapters, the MCP server,
the CLI, code mode) is an ``execute_tool {name}`` span (GenAI semantic conventions); a
served MCP request is a SERVER span ``{mcp.method.name} {target}`` (MCP conventions)
continuing the ``traceparent`` its ``_meta`` (or HTTP header) carries; an OpenAPI tool's
REST request is a CLIENT span sending ``traceparent`` on, and an MCP tool's call a CLIENT
span ``tools/call {name}`` whose ``traceparent`` the SDK puts in ``_meta``. Durations go to
``gen_ai.client.operation.duration``, ``mcp.server.operation.duration``,
``mcp.client.operation.duration`` and ``http.client.request.duration``. Errors are their
class (``error.type``); argument values, results and secrets are never recorded.

Two ways to turn it on:

- the standard ``OTEL_*`` environment variables, read when `toolsets` is imported (see
  `toolsets.telemetry._environment` for exactly which; needs the ``[otel]`` extra):
  ``OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4318 toolsets serve ...``;
- `enable`, with your own providers or the global ones::

      from toolsets import telemetry

      telemetry.enable(tracer_provider=provider, meter_provider=meters)

Off, nothing of OpenTelemetry is imported by toolsets and a call pays one attribute read.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING

from toolsets import _telemetry
from toolsets.telemetry._environment import exporters_wanted, providers

if TYPE_CHECKING:
    from opentelemetry.metrics import MeterProvider
    from opentelemetry.trace import TracerProvider

__all__ = ["disable", "enable", "enable_from_environment", "is_enabled"]

logger = logging.getLogger("toolsets.telemetry")


def enable(
    *,
    tracer_provider: TracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
) -> None:
    """Turn telemetry on (again, with other providers, when it is on).

    Args:
        tracer_provider: Where the spans go; None: OpenTelemetry's global provider
            (``opentelemetry.trace.set_tracer_provider``), even one set later.
        meter_provider: Where the durations go; None: the global one.
    """
    from importlib import metadata

    from toolsets._install import DISTRIBUTION
    from toolsets.telemetry._spans import Telemetry

    try:
        version = metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:  # imported from a clone, not installed
        version = ""
    _telemetry.current = Telemetry(tracer_provider, meter_provider, version=version)


def disable() -> None:
    """Turn telemetry off: nothing more is recorded (the providers are not shut down)."""
    _telemetry.current = None


def is_enabled() -> bool:
    """Whether telemetry is on."""
    return _telemetry.current is not None


def enable_from_environment() -> bool:
    """Turn telemetry on if the ``OTEL_*`` environment variables ask for an exporter:
    with the global providers when an OpenTelemetry SDK is already set up in this
    process (by ``opentelemetry-instrument``, say), else with providers of its own that
    become the global ones. Whether it is on.

    Raises:
        ImportError: the ``[otel]`` extra is missing.
        ValueError: an exporter or protocol toolsets does not export with.
    """
    wanted = exporters_wanted(os.environ)
    if wanted is None:
        return False
    from opentelemetry import metrics, trace

    if not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        enable()  # someone configured OpenTelemetry before us: theirs is used
        return True
    tracer_provider, meter_provider = providers(wanted)
    if tracer_provider is not None:
        trace.set_tracer_provider(tracer_provider)  # the mcp SDK's own spans go there too
    if meter_provider is not None:
        metrics.set_meter_provider(meter_provider)
    enable(tracer_provider=tracer_provider, meter_provider=meter_provider)
    return True


def _at_import() -> None:
    try:
        enable_from_environment()
    except (ImportError, ValueError) as exc:
        # A library import does not fail over its environment: the operator is told
        # once, and telemetry stays off.
        logger.warning("OpenTelemetry is off: %s", exc)


_at_import()
