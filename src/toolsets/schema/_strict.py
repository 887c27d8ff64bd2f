"""OpenAI strict mode: parameter schemas the model must follow exactly.

With ``"strict": true`` OpenAI constrains the model's output to the schema, but accepts
only a subset of JSON Schema: every object lists all its properties in ``required`` and
sets ``additionalProperties: false``, optional values are expressed as nullable, and a
set of keywords and size limits applies (OpenAI's "Structured Outputs: supported
schemas"). A schema that cannot be said this way without losing what it allows (a
free-form object, a map of arbitrary keys, a tuple, ``if``/``then``) is not strict:
`toolsets.schema.openai_strict_parameters` returns None and the tool is offered without ``strict``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toolsets.schema._restore import (
    DialectSchema,
    Plan,
    alternative,
    closed,
    def_name,
    exclusive_branches,
    finished,
    kinds_of,
    requirements_only,
)

__all__ = ["STRICT_LIMITS", "strict_form"]

STRICT_LIMITS: Mapping[str, int] = {
    "properties": 5000,
    "depth": 10,
    "enum_values": 1000,
    "string_length": 120_000,
    "large_enum_values": 250,
    "large_enum_length": 15_000,
}
"""OpenAI's published limits for one strict schema: object properties in all, levels of
object nesting, enum values in all, characters of all property names, definition names,
enum and const values together, and for one string enum of more than 250 values, the
characters of its values."""

_TYPES = frozenset({"string", "number", "integer", "boolean", "object", "array", "null"})
_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)
# Keywords strict mode accepts, besides the structural ones handled one by one.
_KEPT = frozenset(
    {
        "description",
        "title",
        "pattern",
        "multipleOf",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minItems",
        "maxItems",
    }
)
# What strict mode cannot express without changing what the tool accepts.
_BLOCKERS = frozenset(
    {
        "if",
        "then",
        "else",
        "dependentSchemas",
        "dependentRequired",
        "dependencies",
        "patternProperties",
        "propertyNames",
        "unevaluatedProperties",
        "unevaluatedItems",
        "prefixItems",
        "additionalItems",
        "contains",
    }
)


class _NotStrict(Exception):
    """This schema has no strict form (`strict_form` returns None)."""


def _accepts_null(schema: Any) -> bool:
    """Whether the tool's own ``schema`` admits ``null`` (every keyword must: a
    reference is taken not to)."""
    if not isinstance(schema, Mapping):
        return schema is True
    declared = schema.get("type")
    nullable_type = declared == "null" or (isinstance(declared, list) and "null" in declared)
    if declared is not None and not nullable_type:
        return False
    if isinstance(schema.get("enum"), list) and None not in schema["enum"]:
        return False
    if "const" in schema and schema["const"] is not None:
        return False
    if "$ref" in schema:
        return False
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list) and not any(_accepts_null(b) for b in schema[key]):
            return False
    if isinstance(schema.get("allOf"), list) and not all(_accepts_null(b) for b in schema["allOf"]):
        return False
    return (
        declared is not None
        or "enum" in schema
        or "const" in schema
        or not any(k in schema for k in ("properties", "items", "required"))
    )


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` that also accepts ``null``."""
    if "$ref" in schema or "const" in schema:
        return {"anyOf": [schema, {"type": "null"}]}
    if "anyOf" in schema:
        branches = schema["anyOf"]
        if not any(b.get("type") == "null" for b in branches):
            return {**schema, "anyOf": [*branches, {"type": "null"}]}
        return schema
    out = dict(schema)
    declared = out.get("type")
    if isinstance(declared, str) and declared != "null":
        out["type"] = [declared, "null"]
    elif isinstance(declared, list) and "null" not in declared:
        out["type"] = [*declared, "null"]
    if "enum" in out and None not in out["enum"]:
        out["enum"] = [*out["enum"], None]
    return out


def _merge_all_of(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``allOf`` of object schemas folded into one (properties and ``required`` joined)."""
    merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
    for branch in schema["allOf"]:
        if not isinstance(branch, Mapping) or "$ref" in branch or "allOf" in branch:
            raise _NotStrict
        for key, value in branch.items():
            if key == "properties":
                merged["properties"] = {**merged.get("properties", {}), **value}
            elif key == "required":
                merged["required"] = [*merged.get("required", []), *value]
            elif key == "type" and merged.get("type", value) != value:
                raise _NotStrict
            elif key not in merged:
                merged[key] = value
    return merged


def _lengths_as_pattern(schema: Mapping[str, Any], out: dict[str, Any]) -> None:
    """``minLength``/``maxLength``, which strict mode refuses, said as the ``pattern`` it
    accepts (exactly: both count characters), when the schema has no pattern of its own."""
    low, high = schema.get("minLength"), schema.get("maxLength")
    if "pattern" in out or (low is None and high is None):
        return
    if not all(v is None or (isinstance(v, int) and not isinstance(v, bool)) for v in (low, high)):
        return
    out["pattern"] = f"^[\\s\\S]{{{low or 0},{'' if high is None else high}}}$"


def _disjoint(branches: list[Any]) -> bool:
    """Whether no value can match two of ``branches``: each admits other JSON types, or
    each gives a property they all require its own constant values (a discriminator)."""
    if not all(isinstance(b, Mapping) for b in branches):
        return False
    kinds = [kinds_of(b.get("type")) for b in branches]
    if all(k is not None for k in kinds) and _pairwise_disjoint(kinds):  # type: ignore[arg-type]
        return True
    common = set.intersection(*(set(b.get("required") or ()) for b in branches))
    for name in sorted(common):
        values: list[frozenset[str]] = []
        for branch in branches:
            prop = (branch.get("properties") or {}).get(name)
            if isinstance(prop, Mapping) and "const" in prop:
                values.append(frozenset({repr(prop["const"])}))
            elif isinstance(prop, Mapping) and isinstance(prop.get("enum"), list):
                values.append(frozenset(repr(v) for v in prop["enum"]))
            else:
                break
        else:
            if _pairwise_disjoint(values):
                return True
    return False


def _pairwise_disjoint(sets: list[frozenset[str]]) -> bool:
    seen: set[str] = set()
    for each in sets:
        if seen & each:
            return False
        seen |= each
    return True


class _Strict:
    def __init__(self, root: Mapping[str, Any]) -> None:
        self._root = root
        self._defs: Mapping[str, Any] = root.get("$defs") or {}
        self._def_plans: dict[str, Plan | None] = {}
        self._properties = 0
        self._enum_values = 0
        self._length = 0

    def run(self) -> DialectSchema:
        root = {k: v for k, v in self._root.items() if k != "$defs"}
        if any(k in root for k in ("anyOf", "oneOf", "allOf", "enum", "not")):
            raise _NotStrict  # the root must be a plain object
        out, plan = self._schema(root, depth=0, at_root=True)
        self._def_plans[""] = plan
        if self._defs:
            out["$defs"] = {}
            for name, definition in self._defs.items():
                self._length += len(name)
                out["$defs"][name], self._def_plans[name] = self._schema(definition, depth=0)
        self._check_limits()
        return DialectSchema(schema=out, _plan=plan)

    def _check_limits(self) -> None:
        if (
            self._properties > STRICT_LIMITS["properties"]
            or self._enum_values > STRICT_LIMITS["enum_values"]
            or self._length > STRICT_LIMITS["string_length"]
        ):
            raise _NotStrict

    def _schema(
        self, schema: Any, *, depth: int, at_root: bool = False
    ) -> tuple[dict[str, Any], Plan | None]:
        if not isinstance(schema, Mapping) or any(k in schema for k in _BLOCKERS):
            raise _NotStrict
        if "allOf" in schema:
            schema = _merge_all_of(schema)
        ref = schema.get("$ref")
        if isinstance(ref, str):
            return self._reference(schema, ref)
        out: dict[str, Any] = {k: schema[k] for k in _KEPT if k in schema}
        _lengths_as_pattern(schema, out)
        if isinstance(schema.get("format"), str) and schema["format"] in _FORMATS:
            out["format"] = schema["format"]
        plan = Plan()
        branches = schema.get("anyOf", schema.get("oneOf"))
        if branches is not None:
            return self._any_of(schema, branches, out, plan, depth)
        if "enum" in schema or "const" in schema:
            self._literals(schema, out)
        declared = schema.get("type")
        names = [declared] if isinstance(declared, str) else declared
        if names is None and "enum" not in out and "const" not in out:
            raise _NotStrict  # any value: strict mode needs a type
        if names is not None:
            if not isinstance(names, list) or not names or not set(names) <= _TYPES:
                raise _NotStrict
            out["type"] = declared
            plan.kinds = kinds_of(declared)
        if names and "object" in names:
            self._object(schema, out, plan, depth, at_root)
        if names and "array" in names:
            items = schema.get("items", {})
            if not isinstance(items, Mapping):
                raise _NotStrict
            out["items"], plan.items = self._schema(items, depth=depth)
        return out, finished(plan)

    def _reference(self, schema: Mapping[str, Any], ref: str) -> tuple[dict[str, Any], Plan]:
        name = def_name(ref, self._defs)
        if name is None:
            raise _NotStrict  # another document: nothing to check it against
        out: dict[str, Any] = {"$ref": ref}
        plan = Plan()
        plan.ref = (self._def_plans, name)
        return out, plan

    def _any_of(
        self,
        schema: Mapping[str, Any],
        branches: Any,
        out: dict[str, Any],
        plan: Plan,
        depth: int,
    ) -> tuple[dict[str, Any], Plan | None]:
        if not isinstance(branches, list) or not branches:
            raise _NotStrict
        # Structural keywords beside "anyOf" apply to every branch.
        shared = {
            k: v
            for k, v in schema.items()
            if k not in ("anyOf", "oneOf", "description", "title") and k not in _KEPT
        }
        alternatives = exclusive_branches(schema, shared)
        one_of = "anyOf" not in schema
        if one_of and not requirements_only(branches) and not _disjoint(alternatives):
            raise _NotStrict  # "exactly one" would become "at least one"
        converted = []
        for branch in alternatives:
            if not isinstance(branch, Mapping):
                raise _NotStrict
            branch_out, branch_plan = self._schema(branch, depth=depth)
            converted.append(branch_out)
            plan.branches.append(alternative(branch_out, branch_plan))
        out["anyOf"] = converted
        if all(b.is_trivial() for b in plan.branches):
            return out, None
        return out, plan

    def _literals(self, schema: Mapping[str, Any], out: dict[str, Any]) -> None:
        values = schema["enum"] if "enum" in schema else [schema["const"]]
        if not isinstance(values, list) or not values:
            raise _NotStrict
        if any(isinstance(v, dict | list) for v in values):
            raise _NotStrict
        strings = [v for v in values if isinstance(v, str)]
        length = sum(len(v) for v in strings)
        large = len(strings) > STRICT_LIMITS["large_enum_values"]
        if large and length > STRICT_LIMITS["large_enum_length"]:
            raise _NotStrict
        self._enum_values += len(values)
        self._length += length
        if "enum" in schema:
            out["enum"] = list(values)
        else:
            out["const"] = values[0]

    def _object(
        self,
        schema: Mapping[str, Any],
        out: dict[str, Any],
        plan: Plan,
        depth: int,
        at_root: bool,
    ) -> None:
        depth += 1
        if depth > STRICT_LIMITS["depth"]:
            raise _NotStrict
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        if extra is not None and not closed(extra):
            raise _NotStrict  # a map of arbitrary keys
        if not properties and extra is None and not at_root:
            raise _NotStrict  # a free-form object
        required = set(schema.get("required") or ())
        if not required <= set(properties):
            raise _NotStrict  # a required property of unknown type
        out_props: dict[str, Any] = {}
        for name, child in properties.items():
            self._properties += 1
            self._length += len(name)
            converted, child_plan = self._schema(child, depth=depth)
            if name not in required:
                if _accepts_null(child):
                    # The model would have to send null for "leave it out", and null
                    # means something of its own here (clear a field, in a PATCH): the
                    # two could not be told apart on the way back.
                    raise _NotStrict
                converted = _nullable(converted)
                plan.drop_null.add(name)
            out_props[name] = converted
            plan.properties[name] = child_plan
        out["properties"] = out_props
        out["required"] = list(out_props)
        out["additionalProperties"] = False


def strict_form(normalized: Mapping[str, Any]) -> DialectSchema | None:
    """The strict form of `openai_parameters`' output, or None (see
    `openai_strict_parameters`)."""
    try:
        return _Strict(normalized).run()
    except _NotStrict:
        return None
