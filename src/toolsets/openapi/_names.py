"""Tool names for operations: legal for every major provider (``^[a-zA-Z0-9_-]{1,64}$``),
deterministic, and unique within a spec."""

from __future__ import annotations

from collections.abc import Sequence

from toolsets._names import OPENAPI_TOOL_NAMES
from toolsets.openapi._model import Operation

__all__ = ["MAX_NAME", "tool_names"]

MAX_NAME = 64
"""The longest name every major provider accepts."""


def tool_names(operations: Sequence[Operation]) -> list[str]:
    """One unique name per operation, in order: the operationId with every run of other
    characters than letters and digits made one ``_`` (``repos/get-branch`` →
    ``repos_get_branch``), or the method and path (``get_users_id``) without one;
    shortened to fit, with a hash of the whole so that shortened names stay distinct.
    Operations whose names collide keep them in document order: the first the plain
    name, the next ``_2``, ``_3``..."""
    names: list[str] = []
    taken: set[str] = set()
    for op in operations:
        raw = op.operation_id or f"{op.method} {op.path}"
        name = OPENAPI_TOOL_NAMES.unique(raw, taken, fallback=op.method)
        taken.add(name)
        names.append(name)
    return names
