"""Whether telemetry is on: what the one call path, the OpenAPI source, the MCP client
and the MCP server read before recording anything (internal).

Off, `current` is None, and nothing of OpenTelemetry is imported by toolsets: a call reads
one module attribute. `toolsets.telemetry.enable` (called by you, or at import when the
``OTEL_*`` environment variables ask for an exporter) sets it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from toolsets.telemetry._spans import Telemetry

__all__ = ["current"]

current: Telemetry | None = None
"""What records the spans and durations while telemetry is on; None while off."""
