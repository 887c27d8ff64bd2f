"""What one program in the sandbox may use (apart from the sandbox, which needs the
``code`` extra)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Limits"]


@dataclass(frozen=True, kw_only=True)
class Limits:
    """What one program may use; each exceeded ends it with an error result whose
    ``limit`` field names it."""

    timeout: float = 30.0
    """Seconds of wall time for the whole program, its tool calls included (not the wait
    for a free sandbox worker)."""
    max_memory: int = 100 * 1024 * 1024
    """Bytes of the sandbox's heap."""
    max_tool_calls: int = 50
    """Tool calls one program may make."""
    max_output: int = 20_000
    """Characters of the result (as JSON) and, separately, of the printed output."""
    max_workers: int | None = None
    """Programs run at once, each in its own sandbox worker (None: the CPU count); a
    program waits for a free worker up to ``timeout`` seconds before it starts."""
