"""An example call for ``toolsets inspect``: arguments made from a tool's parameter
schema (its examples, defaults and bounds), kept only when the tool's own checker
accepts them."""

from __future__ import annotations

import importlib
import re
from collections.abc import Mapping
from typing import Any

from toolsets._jsonschema import PointerError, resolve
from toolsets._validation import ArgumentChecker

__all__ = ["example_arguments"]

_MAX_DEPTH = 8
_FORMATS = {
    "date-time": "2025-01-31T12:00:00Z",
    "date": "2025-01-31",
    "time": "12:00:00Z",
    "email": "user@example.com",
    "uri": "https://example.com",
    "url": "https://example.com",
    "uuid": "123e4567-e89b-12d3-a456-426614174000",
    "ipv4": "192.0.2.1",
    "ipv6": "2001:db8::1",
    "hostname": "example.com",
    "byte": "aGVsbG8=",  # base64, which a call checks
}


def example_arguments(
    schema: Mapping[str, Any], *, tool_name: str = "tool"
) -> dict[str, Any] | None:
    """Arguments for a tool whose parameters are ``schema``: its required parameters
    only, each its schema's example, default or first allowed value, else a value of its
    type within its bounds. None when what is made does not pass the tool's checker (a
    pattern, say, that no simple value meets)."""
    made = _Maker(schema).value(schema, 0)
    if not isinstance(made, dict):
        return None
    checker = ArgumentChecker(schema, tool_name=tool_name)
    return made if checker.result(made) is None else None


class _Maker:
    def __init__(self, root: Mapping[str, Any]) -> None:
        self.root = root

    def resolve(self, schema: Mapping[str, Any]) -> Mapping[str, Any]:
        for _ in range(_MAX_DEPTH):
            ref = schema.get("$ref")
            if not isinstance(ref, str) or not ref.startswith("#/"):
                break
            try:
                found = resolve(self.root, ref[1:])
            except PointerError:
                break
            if not isinstance(found, Mapping):
                break
            schema = {**found, **{k: v for k, v in schema.items() if k != "$ref"}}
        return schema

    def value(self, schema: Any, depth: int) -> Any:
        if not isinstance(schema, Mapping) or depth > _MAX_DEPTH:
            return None
        schema = self.resolve(schema)
        if "const" in schema:
            return schema["const"]
        examples = schema.get("examples")
        if isinstance(examples, list) and examples:
            return examples[0]
        for key in ("example", "default"):
            if key in schema:
                return schema[key]
        enum = schema.get("enum")
        if isinstance(enum, list) and enum:
            return next((item for item in enum if item is not None), enum[0])
        for key in ("anyOf", "oneOf"):
            options = schema.get(key)
            if isinstance(options, list) and options:
                chosen = next(
                    (o for o in options if isinstance(o, Mapping) and o.get("type") != "null"),
                    options[0],
                )
                return self.value({**_without(schema, key), **chosen}, depth + 1)
        parts = schema.get("allOf")
        if isinstance(parts, list) and parts:
            merged: dict[str, Any] = dict(_without(schema, "allOf"))
            for part in parts:
                if isinstance(part, Mapping):
                    part = self.resolve(part)
                    merged["properties"] = {
                        **merged.get("properties", {}),
                        **part.get("properties", {}),
                    }
                    merged["required"] = [*merged.get("required", []), *part.get("required", [])]
                    merged.setdefault("type", part.get("type"))
            return self.value(merged, depth + 1)
        return self.typed(schema, _type_of(schema), depth)

    def typed(self, schema: Mapping[str, Any], kind: str | None, depth: int) -> Any:
        if kind == "object" or (kind is None and "properties" in schema):
            properties = schema.get("properties") or {}
            required = schema.get("required") or []
            return {
                name: self.value(properties.get(name, {}), depth + 1)
                for name in required
                if isinstance(name, str)
            }
        if kind == "array":
            count = max(int(schema.get("minItems", 1)), 1)
            if "maxItems" in schema:
                count = min(count, int(schema["maxItems"]))
            return [self.value(schema.get("items", {}), depth + 1) for _ in range(count)]
        if kind in ("integer", "number"):
            return _number(schema, integer=kind == "integer")
        if kind == "boolean":
            return True
        if kind == "null":
            return None
        pattern = schema.get("pattern")
        made = matching_string(pattern) if isinstance(pattern, str) else None
        text = made if made is not None else _FORMATS.get(str(schema.get("format")), "example")
        low = int(schema.get("minLength", 0))
        if len(text) < low:
            text += "x" * (low - len(text))
        if "maxLength" in schema:
            text = text[: int(schema["maxLength"])]
        return text


def _without(schema: Mapping[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in schema.items() if k != key}


def _type_of(schema: Mapping[str, Any]) -> str | None:
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    return kind if isinstance(kind, str) else None


def _number(schema: Mapping[str, Any], *, integer: bool) -> int | float:
    value: float = 1
    if isinstance(schema.get("minimum"), int | float):
        value = schema["minimum"]
    elif isinstance(schema.get("exclusiveMinimum"), int | float):
        value = schema["exclusiveMinimum"] + 1
    elif isinstance(schema.get("maximum"), int | float) and schema["maximum"] < 1:
        value = schema["maximum"]
    elif isinstance(below := schema.get("exclusiveMaximum"), int | float) and below <= 1:
        value = below - 1
    step = schema.get("multipleOf")
    if isinstance(step, int | float) and step > 0:
        value = -(-value // step) * step
    return int(value) if integer else value


def matching_string(pattern: str) -> str | None:
    """A short string that ``pattern`` matches (searched, as JSON Schema does), or None
    for one beyond literals, classes (negated too), groups, alternatives and repeats."""
    # re's own parser (private, but stable across 3.11-3.13; sre_parse, its public
    # name, warns on import): the pattern as re reads it.
    parser: Any = importlib.import_module("re._parser")
    try:
        made = _emit(parser.parse(pattern))
    except (re.error, RecursionError, StopIteration, IndexError, TypeError):
        return None
    return made if re.search(pattern, made) else None


_CATEGORY = {
    "CATEGORY_DIGIT": "1",
    "CATEGORY_NOT_DIGIT": "a",
    "CATEGORY_WORD": "a",
    "CATEGORY_NOT_WORD": "-",
    "CATEGORY_SPACE": " ",
    "CATEGORY_NOT_SPACE": "a",
}
"""A character of each class escape (``\\d``, ``\\W``...)."""


def _emit(parsed: Any) -> str:
    out: list[str] = []
    for op, arg in parsed:
        name = str(op)
        if name == "LITERAL":
            out.append(chr(arg))
        elif name == "NOT_LITERAL":
            out.append("a" if chr(arg) != "a" else "b")
        elif name == "ANY":
            out.append("a")
        elif name == "IN":
            out.append(_member(arg))
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            low, _, body = arg
            out.append(_emit(body) * low)
        elif name == "SUBPATTERN":
            out.append(_emit(arg[-1]))
        elif name == "ATOMIC_GROUP":
            out.append(_emit(arg))
        elif name == "BRANCH":
            out.append(_emit(arg[1][0]))
        elif name == "CATEGORY":
            out.append(_CATEGORY.get(str(arg), "a"))
        # Anchors, lookarounds and back references write nothing: the caller checks
        # that the string made matches.
    return "".join(out)


def _member(items: list[tuple[Any, Any]]) -> str:
    """A character of a class ``[...]`` (or one outside a negated class)."""
    negate = any(str(op) == "NEGATE" for op, _ in items)
    allowed: list[str] = []
    banned: set[str] = set()
    for op, arg in items:
        name = str(op)
        if name == "LITERAL":
            (banned.add if negate else allowed.append)(chr(arg))
        elif name == "RANGE":
            if negate:
                banned.update(chr(c) for c in range(arg[0], arg[1] + 1))
            else:
                allowed.append(chr(arg[0]))
        elif name == "CATEGORY":
            char = _CATEGORY.get(str(arg), "a")
            (banned.add if negate else allowed.append)(char)
    if negate:
        return next(c for c in "aZ1-_ x.@" if c not in banned)
    return allowed[0] if allowed else "a"
