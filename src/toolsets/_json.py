"""JSON value types, and the conversion of Python results into them."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any, TypeAlias

import pydantic_core
from pydantic import JsonValue

__all__ = [
    "JSON_ATOMS",
    "MAX_JSON_DEPTH",
    "JsonObject",
    "JsonValue",
    "all_atoms",
    "copy_json",
    "deeper_than",
    "to_json_value",
]

# JsonValue is pydantic's: the same recursive union for type checkers, and one pydantic
# can build a schema for at run time (a tool may well be annotated "-> JsonValue").

JsonObject: TypeAlias = "dict[str, JsonValue]"
"""A JSON object."""


def to_json_value(value: Any) -> JsonValue:
    """Convert a Python value (pydantic models, dataclasses, enums, dates, bytes, ...) to
    plain JSON types. Bytes become base64; NaN and infinities, which JSON cannot carry,
    become None.

    Raises:
        TypeError: the value holds something JSON cannot represent.
    """
    try:
        result: JsonValue = pydantic_core.to_jsonable_python(
            value, bytes_mode="base64", inf_nan_mode="null"
        )
    except pydantic_core.PydanticSerializationError as exc:
        raise TypeError(str(exc)) from exc
    return result


JSON_ATOMS = (str, int, float, bool, type(None))
"""The types of JSON's scalars: immutable, so never copied."""
_CONTAINERS = frozenset({dict, list})

MAX_JSON_DEPTH = 64
"""How deeply a model's arguments may nest (objects and arrays): far more than any tool's
schema needs, far less than would exhaust Python's recursion (deeper arguments are an
error result for the model, never a crash)."""


def deeper_than(value: Any, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether objects and arrays in ``value`` nest more than ``limit`` levels (``{}`` is
    one level). It recurses at most ``limit`` levels, whatever the depth of ``value``."""
    kind = type(value)
    if kind is dict or (kind is not list and isinstance(value, Mapping)):
        children: Iterable[Any] = value.values()
    elif kind is list or isinstance(value, tuple):
        children = value
    else:
        return False
    if limit <= 0:
        return True
    limit -= 1
    for child in children:
        container = type(child) in _CONTAINERS or not isinstance(child, JSON_ATOMS)
        if container and deeper_than(child, limit):
            return True
    return False


_ATOM_TYPES = frozenset(JSON_ATOMS)


def all_atoms(values: dict[Any, Any]) -> bool:
    """Whether every value of ``values`` is a JSON scalar (of exactly a JSON atom's type):
    such a dict needs no deep copy, and nests one level."""
    # A loop, not all() over a generator (which makes a frame per value): this runs on
    # every call.
    for value in values.values():  # noqa: SIM110
        if type(value) not in _ATOM_TYPES:
            return False
    return True


def copy_json(value: Any) -> Any:
    """A deep copy of JSON-shaped data without ``copy.deepcopy``'s memo and dispatch per
    value (it falls back to it for anything that is not a mapping, list or JSON atom). Other
    mappings than dicts (a read-only ``MappingProxyType``, which ``copy.deepcopy``
    cannot copy) come back as dicts."""
    if isinstance(value, dict):
        return {key: copy_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [copy_json(item) for item in value]
    if isinstance(value, JSON_ATOMS):
        return value
    if isinstance(value, Mapping):
        return {key: copy_json(item) for key, item in value.items()}
    return copy.deepcopy(value)
