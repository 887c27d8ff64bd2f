"""Tool names for operations: legal for every major provider (``^[a-zA-Z0-9_-]{1,64}$``),
deterministic, and unique within a spec."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

from toolsets.openapi._model import Operation

__all__ = ["MAX_NAME", "tool_names"]

MAX_NAME = 64
"""The longest name every major provider accepts."""
_ILLEGAL = re.compile(r"[^A-Za-z0-9]+")


def base_name(op: Operation) -> str:
    """The name before collisions are settled: the operationId with every run of other
    characters than letters and digits made one ``_`` (``repos/get-branch`` →
    ``repos_get_branch``), or the method and path (``get_users_id``) without one;
    shortened to fit, with a hash of the whole so that shortened names stay distinct."""
    raw = op.operation_id or f"{op.method} {op.path}"
    name = _ILLEGAL.sub("_", raw).strip("_") or op.method
    if len(name) > MAX_NAME:
        digest = hashlib.sha256(raw.encode()).hexdigest()[:8]
        name = f"{name[: MAX_NAME - 9].rstrip('_')}_{digest}"
    return name


def tool_names(operations: Sequence[Operation]) -> list[str]:
    """One unique name per operation, in order. Operations whose names collide keep them
    in document order: the first the plain name, the next ``_2``, ``_3``..."""
    names: list[str] = []
    taken: set[str] = set()
    for op in operations:
        name = base = base_name(op)
        suffix = 2
        while name in taken:
            tail = f"_{suffix}"
            name = f"{base[: MAX_NAME - len(tail)]}{tail}"
            suffix += 1
        taken.add(name)
        names.append(name)
    return names
