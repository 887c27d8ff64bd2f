"""JSON value types, and the conversion of Python results into them."""

from __future__ import annotations

from typing import Any, TypeAlias

import pydantic_core
from pydantic import JsonValue

__all__ = ["JsonObject", "JsonValue", "to_json_value"]

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
