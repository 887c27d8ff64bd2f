"""The dialect judge's tools: the published rules each provider checks that its SDK types
do not (OpenAI strict mode's supported subset and limits, Gemini's ``Schema`` subset and
name rules, Anthropic's name rules), and a generator of valid arguments for a schema in
any dialect, as a model following that schema would send them."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from typing import Any

from toolsets.cli._example import matching_string

OPENAI_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
ANTHROPIC_NAME = OPENAI_NAME
ANTHROPIC_PROPERTY = re.compile(r"^[a-zA-Z0-9_.-]{1,64}$")
GEMINI_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.:-]{0,63}$")
GEMINI_PROPERTY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


def walk(schema: Any, at: str = "") -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Every sub-schema of a JSON Schema or a Gemini ``Schema``, with its pointer."""
    if not isinstance(schema, Mapping):
        return
    yield at, schema
    for key in ("properties", "$defs", "patternProperties"):
        if isinstance(schema.get(key), Mapping):
            for name, child in schema[key].items():
                yield from walk(child, f"{at}/{key}/{name}")
    for key in ("items", "additionalProperties", "not"):
        if isinstance(schema.get(key), Mapping):
            yield from walk(schema[key], f"{at}/{key}")
    for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
        if isinstance(schema.get(key), list):
            for i, child in enumerate(schema[key]):
                yield from walk(child, f"{at}/{key}/{i}")


# -- OpenAI strict mode: "Structured Outputs, supported schemas" -----------------------

STRICT_KEYWORDS = frozenset(
    {
        "type",
        "description",
        "title",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "anyOf",
        "enum",
        "const",
        "$ref",
        "$defs",
        "pattern",
        "format",
        "multipleOf",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minItems",
        "maxItems",
    }
)
STRICT_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)
STRICT_TYPES = frozenset({"string", "number", "integer", "boolean", "object", "array", "null"})


def _depth(schema: Any) -> int:
    """Levels of object nesting (references not followed)."""
    if not isinstance(schema, Mapping):
        return 0
    own = 1 if "properties" in schema else 0
    children: list[Any] = list((schema.get("properties") or {}).values())
    children += [schema[k] for k in ("items",) if isinstance(schema.get(k), Mapping)]
    children += list(schema.get("anyOf") or [])
    return own + max((_depth(c) for c in children), default=0)


def strict_violations(schema: Mapping[str, Any]) -> list[str]:
    """What in ``schema`` OpenAI's strict mode refuses (empty: nothing)."""
    found: list[str] = []
    if schema.get("type") != "object" or "anyOf" in schema:
        found.append("/: the root must be an object, not anyOf")
    properties = enum_values = length = 0
    for name in schema.get("$defs") or {}:
        length += len(name)
    for at, node in walk(schema):
        for key in node:
            if key not in STRICT_KEYWORDS:
                found.append(f"{at}: keyword {key!r} is not supported")
        if "format" in node and node["format"] not in STRICT_FORMATS:
            found.append(f"{at}: format {node['format']!r} is not supported")
        declared = node.get("type")
        names = [declared] if isinstance(declared, str) else declared
        if names is not None and not set(names) <= STRICT_TYPES:
            found.append(f"{at}: type {declared!r}")
        typed = names is not None or any(k in node for k in ("enum", "const", "anyOf", "$ref"))
        if not typed and at != "":
            found.append(f"{at}: no type")
        if names is not None and "object" in names:
            props = node.get("properties")
            if not isinstance(props, Mapping):
                found.append(f"{at}: an object without properties")
                continue
            if node.get("additionalProperties") is not False:
                found.append(f"{at}: additionalProperties is not false")
            if sorted(node.get("required") or []) != sorted(props):
                found.append(f"{at}: not every property is required")
            properties += len(props)
            length += sum(len(n) for n in props)
        if "enum" in node:
            enum_values += len(node["enum"])
            strings = [v for v in node["enum"] if isinstance(v, str)]
            length += sum(len(v) for v in strings)
            if len(strings) > 250 and sum(len(v) for v in strings) > 15_000:
                found.append(f"{at}: a large enum is too long")
        if isinstance(node.get("const"), str):
            length += len(node["const"])
        ref = node.get("$ref")
        if ref is not None and not (ref == "#" or ref.startswith("#/$defs/")):
            found.append(f"{at}: $ref {ref!r}")
    if properties > 5000:
        found.append(f"{properties} properties (over 5,000)")
    if enum_values > 1000:
        found.append(f"{enum_values} enum values (over 1,000)")
    if length > 120_000:
        found.append(f"{length} characters of names and values (over 120,000)")
    if _depth(schema) > 10:
        found.append("nested deeper than 10 levels")
    return found


# -- Gemini's Schema (the OpenAPI subset of `parameters`) -----------------------------

GEMINI_TYPES = frozenset({"STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT"})
GEMINI_FORMATS = {
    "STRING": frozenset({"enum", "date-time"}),
    "NUMBER": frozenset({"float", "double"}),
    "INTEGER": frozenset({"int32", "int64"}),
}
GEMINI_KEYS = frozenset(
    {"type", "format", "title", "description", "nullable", "enum", "maxItems", "minItems"}
    | {"properties", "required", "minProperties", "maxProperties", "minLength", "maxLength"}
    | {"pattern", "example", "anyOf", "propertyOrdering", "default", "items", "minimum"}
    | {"maximum"}
)
"""The fields of the Gemini API's ``Schema`` (``generativelanguage`` v1beta): the SDK's
``Schema`` also takes ``additionalProperties``, ``ref`` and ``defs``, which the API's
``parameters`` does not."""
GEMINI_TYPED_KEYS = {
    "properties": {"OBJECT"},
    "required": {"OBJECT"},
    "minProperties": {"OBJECT"},
    "maxProperties": {"OBJECT"},
    "items": {"ARRAY"},
    "minItems": {"ARRAY"},
    "maxItems": {"ARRAY"},
    "minLength": {"STRING"},
    "maxLength": {"STRING"},
    "pattern": {"STRING"},
    "enum": {"STRING"},
    "minimum": {"NUMBER", "INTEGER"},
    "maximum": {"NUMBER", "INTEGER"},
}
"""The fields that constrain values of some types only, and those types."""


def gemini_violations(schema: Mapping[str, Any]) -> list[str]:
    """What in a ``parameters`` schema the Gemini API's documented subset refuses (beyond
    what `google.genai.types.Schema` itself checks): keys it has no field for, a type
    it does not know, a value of no type ("missing field type"), an object without
    properties ("properties: should be non-empty for OBJECT type", the top level
    too), a keyword beside a type it does not apply to (an enum of numbers), a format
    of another type, an array without items, a property name it refuses, a required
    name that is no property."""
    found: list[str] = []
    for at, node in walk(schema):
        for key in node:
            if key not in GEMINI_KEYS:
                found.append(f"{at}: {key}")
        kind = node.get("type")
        if kind is not None and kind not in GEMINI_TYPES:
            found.append(f"{at}: type {kind!r}")
        if kind is None and "anyOf" not in node:
            found.append(f"{at}: no type")
        if "anyOf" in node and not node["anyOf"]:
            found.append(f"{at}: an empty anyOf")
        for key, kinds in GEMINI_TYPED_KEYS.items():
            if key in node and kind not in kinds:
                found.append(f"{at}: {key} of type {kind!r}")
        if kind == "OBJECT" and not node.get("properties"):
            found.append(f"{at}: an object without properties")
        if "format" in node and node["format"] not in GEMINI_FORMATS.get(kind, ()):
            found.append(f"{at}: format {node['format']!r} for {kind!r}")
        if kind == "ARRAY" and "items" not in node:
            found.append(f"{at}: an array without items")
        for name in node.get("properties") or {}:
            if not GEMINI_PROPERTY.match(name):
                found.append(f"{at}: property name {name!r}")
        missing = set(node.get("required") or ()) - set(node.get("properties") or {})
        if missing:
            found.append(f"{at}: required but not a property: {sorted(missing)}")
    return found


_GEMINI_KEPT = frozenset(
    {"enum", "required", "minimum", "maximum", "pattern", "minItems", "maxItems", "minLength"}
    | {"maxLength", "minProperties", "maxProperties"}
)


def gemini_as_json_schema(schema: Any) -> Any:
    """A Gemini ``Schema`` (dict) as the JSON Schema that says the same, to check the
    generated arguments against the dialect's own schema."""
    if not isinstance(schema, Mapping):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "type":
            out["type"] = value.lower()
        elif key == "properties":
            out[key] = {n: gemini_as_json_schema(s) for n, s in value.items()}
        elif key == "items":
            out[key] = gemini_as_json_schema(value)
        elif key == "anyOf":
            out[key] = [gemini_as_json_schema(s) for s in value]
        elif key in _GEMINI_KEPT:
            out[key] = value
    if schema.get("nullable"):
        if "anyOf" in out:
            out["anyOf"] = [*out["anyOf"], {"type": "null"}]
        elif "type" in out:
            out["type"] = [out["type"], "null"]
            if "enum" in out:
                out["enum"] = [*out["enum"], None]
    return out


# -- valid arguments for a schema, as a model would send them ---------------------------

_FORMAT_VALUES = {
    "date-time": "2024-05-06T07:08:09Z",
    "date": "2024-05-06",
    "time": "07:08:09Z",
    "email": "octo@example.com",
    "uri": "https://example.com/a",
    "url": "https://example.com/a",
    "uuid": "123e4567-e89b-12d3-a456-426614174000",
    "ipv4": "192.0.2.1",
    "ipv6": "2001:db8::1",
    "hostname": "example.com",
    "duration": "P1D",
}
_CANDIDATES = ("x", "a", "1", "abc", "A", "a1", "main", "2024-05-06", "a-b", "a_b", "ab12", "v1")


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _types(schema: Mapping[str, Any]) -> list[str]:
    declared = schema.get("type")
    names = [declared] if isinstance(declared, str) else list(declared or [])
    return [n.lower() for n in names]


def _nullable(schema: Mapping[str, Any]) -> bool:
    return bool(schema.get("nullable")) or "null" in _types(schema)


class Arguments:
    """Arguments for one dialect schema: ``nulls`` gives ``null`` wherever the schema
    allows it, ``optional`` includes the properties that are not required."""

    def __init__(self, root: Mapping[str, Any], *, nulls: bool, optional: bool) -> None:
        self.root = root
        self.nulls = nulls
        self.optional = optional
        self.endless = False
        """Whether the schema requires itself without end (no finite instance)."""

    def value(self, schema: Any, depth: int = 0) -> Any:
        if not isinstance(schema, Mapping):
            return "x"
        ref = schema.get("$ref")
        if isinstance(ref, str):
            target = self.root if ref == "#" else (self.root.get("$defs") or {})[ref.split("/")[-1]]
            return self.value(target, depth + 1)
        if depth > 40:
            self.endless = True  # a schema that requires itself has no finite instance
            return None
        if isinstance(schema.get("allOf"), list):
            return self.value(self._all_of(schema), depth)
        deep = depth > 8
        if schema.get("enum"):
            values = schema["enum"]
            if None in values and (self.nulls or deep):
                return None
            kinds = set(_types(schema))
            if "number" in kinds:
                kinds.add("integer")
            fitting = [v for v in values if v is not None and (not kinds or _json_kind(v) in kinds)]
            return (fitting or [v for v in values if v is not None] or [None])[0]
        if "const" in schema:
            return schema["const"]
        branches = schema.get("anyOf") or schema.get("oneOf")
        if branches:
            if (self.nulls or deep) and (
                _nullable(schema) or any(_types(b) == ["null"] for b in branches)
            ):
                return None
            real = [b for b in branches if _types(b) != ["null"] and self._possible(schema, b)]
            pick = real[depth % len(real)] if real else {}
            siblings = {k: v for k, v in schema.items() if k not in ("anyOf", "oneOf")}
            if siblings and isinstance(pick, Mapping) and "$ref" not in pick:
                pick = self._within(schema, siblings, pick, real)
            return self.value(pick, depth + 1)
        if (self.nulls or deep) and _nullable(schema):
            return None
        if _types(schema) == ["null"]:
            return None
        kinds = [k for k in _types(schema) if k != "null"]
        kind = kinds[0] if kinds else ("object" if "properties" in schema else "string")
        return getattr(self, f"_{kind}")(schema, depth)

    def _all_of(self, schema: Mapping[str, Any]) -> dict[str, Any]:
        merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
        for branch in schema["allOf"]:
            if isinstance(branch, Mapping) and isinstance(branch.get("$ref"), str):
                ref = branch["$ref"]
                branch = self.root if ref == "#" else self.root["$defs"][ref.split("/")[-1]]
            if not isinstance(branch, Mapping):
                continue
            if "allOf" in branch:
                branch = self._all_of(branch)
            for key, value in branch.items():
                if key == "properties":
                    merged[key] = {**merged.get(key, {}), **value}
                elif key == "required":
                    merged[key] = [*merged.get(key, []), *value]
                else:
                    merged.setdefault(key, value)
        return merged

    @staticmethod
    def _possible(schema: Mapping[str, Any], branch: Any) -> bool:
        """Whether an alternative can hold: not when it requires a property the object
        (closed) cannot have."""
        extra = schema.get("additionalProperties")
        if not isinstance(branch, Mapping) or extra not in (False, {"not": {}}):
            return True
        known = set(schema.get("properties") or ()) | set(branch.get("properties") or ())
        return set(branch.get("required") or ()) <= known

    @staticmethod
    def _within(
        schema: Mapping[str, Any],
        siblings: dict[str, Any],
        pick: Mapping[str, Any],
        branches: list[Any],
    ) -> dict[str, Any]:
        """The chosen alternative with the keywords beside it; for ``oneOf``, without the
        properties only the other alternatives require (so that exactly one holds)."""
        merged = {**siblings, **pick}
        if isinstance(siblings.get("properties"), Mapping):
            merged["properties"] = {**siblings["properties"], **(pick.get("properties") or {})}
        merged["required"] = [*(siblings.get("required") or []), *(pick.get("required") or [])]
        if "oneOf" in schema:
            mine = set(pick.get("required") or ())
            theirs = {
                n
                for b in branches
                if b is not pick and isinstance(b, Mapping)
                for n in b.get("required") or ()
            }
            merged["properties"] = {
                n: s for n, s in (merged.get("properties") or {}).items() if n not in theirs - mine
            }
        return merged

    def _string(self, schema: Mapping[str, Any], depth: int) -> str:
        pattern = schema.get("pattern")
        fmt = schema.get("format")
        if isinstance(fmt, str) and fmt in _FORMAT_VALUES:
            return _FORMAT_VALUES[fmt]
        low, high = schema.get("minLength", 1), schema.get("maxLength")
        if isinstance(pattern, str):
            for candidate in _CANDIDATES:
                if re.search(pattern, candidate):
                    return candidate
            found = matching_string(pattern)
            if found is not None:
                return found
        text = "x" * max(int(low), 1)
        return text[: int(high)] if high is not None else text

    def _number(self, schema: Mapping[str, Any], depth: int, *, integer: bool = False) -> Any:
        low = schema.get("minimum")
        high = schema.get("maximum")
        if isinstance(schema.get("exclusiveMinimum"), int | float):
            low = schema["exclusiveMinimum"] + (1 if integer else 0.5)
        if isinstance(schema.get("exclusiveMaximum"), int | float):
            high = schema["exclusiveMaximum"] - (1 if integer else 0.5)
        value: float = 1 if low is None else low
        if high is not None and value > high:
            value = high
        step = schema.get("multipleOf")
        if isinstance(step, int | float) and step:
            value = math.ceil(value / step) * step
        return math.ceil(value) if integer else value

    def _integer(self, schema: Mapping[str, Any], depth: int) -> int:
        result: int = self._number(schema, depth, integer=True)
        return result

    def _boolean(self, schema: Mapping[str, Any], depth: int) -> bool:
        return True

    def _null(self, schema: Mapping[str, Any], depth: int) -> None:
        return None

    def _array(self, schema: Mapping[str, Any], depth: int) -> list[Any]:
        count = max(int(schema.get("minItems", 1)), 0 if depth > 8 else 1)
        if schema.get("maxItems") is not None:
            count = min(count, int(schema["maxItems"]))
        return [self.value(schema.get("items", {}), depth + 1) for _ in range(count)]

    def _object(self, schema: Mapping[str, Any], depth: int) -> dict[str, Any]:
        properties = schema.get("properties") or {}
        required = list(schema.get("required") or ())
        made = {
            name: self.value(child, depth + 1)
            for name, child in properties.items()
            if name in required or (self.optional and depth <= 8)
        }
        # Required but not described (allowed when the object is open): any value.
        made.update({name: "x" for name in required if name not in properties})
        return made


def arguments(schema: Mapping[str, Any], *, nulls: bool, optional: bool) -> dict[str, Any] | None:
    """Arguments a model following ``schema`` could send; None when ``schema`` has no
    finite instance (it requires itself without end)."""
    maker = Arguments(schema, nulls=nulls, optional=optional)
    made: dict[str, Any] = maker._object(schema, 0)
    return None if maker.endless else made
