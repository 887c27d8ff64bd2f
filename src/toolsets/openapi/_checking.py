"""openapi-spec-validator's keyword validators made quicker on big specs, and able to say
how far they are (`OpenApiToolset.validate`'s ``progress``).

The validator remembers what it has checked (each schema's id, each ``operationId``) in
lists, and asks each new one whether it is in them: quadratic in the size of the spec,
and most of the keyword walk on a spec of thousands of operations (GitHub's:
`benchmarks/cli.py --validate` measures it). `quicker` gives those lists a set to answer
``in`` from; the validator's checks and their order are its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeAlias

__all__ = ["ValidationProgress", "quicker", "count_operations"]

ValidationProgress: TypeAlias = Callable[[str, int, "int | None"], None]
"""Told how far a validation is, from the worker thread it runs in: the phase (``"the
document's structure"``, ``"operations"``, ``"components"``), how much of it is done,
and its size (None when unknown)."""

_REGISTRIES = ("visited_schema_ids", "meta_checked_schema_ids", "operation_ids_registry")
"""The validator's lists of what it has checked, asked ``in`` for each new item."""
_METHODS = frozenset(("get", "put", "post", "delete", "options", "head", "patch", "trace"))


class _Seen(list[Any]):
    """A list whose ``in`` is a set's: what the validator appends it also asks for."""

    def __init__(self) -> None:
        super().__init__()
        self._members: set[Any] = set()

    def append(self, item: Any) -> None:
        self._members.add(item)
        super().append(item)

    def __contains__(self, item: object) -> bool:
        return item in self._members


def count_operations(document: Any) -> int:
    """The operations of a parsed spec (the keys of its path items that are methods)."""
    paths = document.get("paths") if isinstance(document, Mapping) else None
    if not isinstance(paths, Mapping):
        return 0
    return sum(
        sum(1 for key in item if key in _METHODS)
        for item in paths.values()
        if isinstance(item, Mapping)
    )


def quicker(
    validators: Mapping[str, type[Any]],
    progress: ValidationProgress | None = None,
    operations: int | None = None,
) -> dict[str, type[Any]]:
    """``validators`` (a spec validator's ``keyword_validators``), each a subclass whose
    lists of what it checked answer ``in`` from a set; with ``progress``, the operation
    validator reports each operation checked (of ``operations``) and the components
    validator its start."""
    made: dict[str, type[Any]] = {}
    for keyword, cls in validators.items():
        members: dict[str, Any] = {"__init__": _init(cls)}
        if progress is not None and keyword == "operation":
            members["__call__"] = _counting(cls, progress, operations)
        elif progress is not None and keyword == "components":
            members["__call__"] = _announcing(cls, progress)
        made[keyword] = type(cls.__name__, (cls,), members)
    return made


def _init(cls: type[Any]) -> Callable[..., None]:
    def __init__(self: Any, registry: Any) -> None:
        cls.__init__(self, registry)
        for name in _REGISTRIES:
            if isinstance(getattr(self, name, None), list):
                setattr(self, name, _Seen())

    return __init__


def _counting(
    cls: type[Any], progress: ValidationProgress, operations: int | None
) -> Callable[..., Iterator[Any]]:
    done = [0]

    def __call__(self: Any, *args: Any, **kwargs: Any) -> Iterator[Any]:
        yield from cls.__call__(self, *args, **kwargs)
        done[0] += 1
        progress("operations", done[0], operations)

    return __call__


def _announcing(cls: type[Any], progress: ValidationProgress) -> Callable[..., Iterator[Any]]:
    def __call__(self: Any, *args: Any, **kwargs: Any) -> Iterator[Any]:
        progress("components", 0, None)
        yield from cls.__call__(self, *args, **kwargs)

    return __call__
