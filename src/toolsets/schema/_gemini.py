"""The Gemini dialect: function declarations for Gemini (the Gemini API and Vertex AI).

A declaration carries its parameters in one of two forms:

- ``parametersJsonSchema``: JSON Schema, which current models take as it is;
- ``parameters``: Gemini's ``Schema``, a subset of OpenAPI 3.0's schema object, which
  every model and endpoint takes (and older ones need). It has no references, no
  ``additionalProperties``, no type lists (``nullable`` instead), no ``oneOf``/``allOf``/
  ``not``/``const``, enums of strings only, a handful of formats, and parameter names of
  letters, digits and ``_`` only; and the API refuses an object without properties
  ("should be non-empty for OBJECT type") and a value without a type. What it cannot say
  is rewritten (``oneOf`` → ``anyOf``, ``const`` → a one-value enum, ``exclusiveMinimum``
  of an integer → ``minimum``), folded into the description, or dropped; recursive
  schemas are unrolled a few levels. What it cannot carry as it is, is carried another
  way and read back exactly: a free-form object whose values have one schema as its
  entries (``[{"key": ..., "value": ...}]``, each value typed), and an object or a value
  of any type (or one past the recursion depth) as JSON text.

Entries rather than JSON text wherever the values have a schema: the model fills typed
fields the API checks as it generates them, where text would hide the values' schema in
a description and have the quotes of every string inside escaped; where values may be
anything, entries would only add a second level (each value JSON text), so the whole
object is one text.

Function names start with a letter or ``_`` and hold letters, digits, ``_ . : -``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from toolsets._declaration import ToolDeclaration
from toolsets._json import copy_json
from toolsets._names import NameRule
from toolsets.schema._names import ToolNameMap, legal_names
from toolsets.schema._openai import openai_parameters
from toolsets.schema._restore import (
    DialectSchema,
    Plan,
    ToolCallMap,
    alternative,
    call_map,
    closed,
    def_name,
    exclusive_branches,
    finished,
    json_kind,
    kinds_of,
)

__all__ = [
    "GEMINI_RECURSION_DEPTH",
    "gemini_parameters",
    "gemini_parameters_json_schema",
    "to_gemini_declarations",
]

GEMINI_RECURSION_DEPTH = 3
"""How many times a recursive definition is unrolled in ``parameters`` before the schema
is cut there (the cut value is described as such)."""

GEMINI_TOOL_NAMES = NameRule(
    illegal=re.compile(r"[^A-Za-z0-9_.:-]"), max_length=64, first=re.compile(r"[A-Za-z_]")
)
"""Function names Gemini accepts."""

GEMINI_PROPERTY_NAMES = NameRule(
    illegal=re.compile(r"[^A-Za-z0-9_]"), max_length=64, first=re.compile(r"[A-Za-z_]")
)
"""Property names in ``parameters``: a letter or ``_``, then letters, digits and ``_``."""

_TYPES = {
    "string": "STRING",
    "number": "NUMBER",
    "integer": "INTEGER",
    "boolean": "BOOLEAN",
    "array": "ARRAY",
    "object": "OBJECT",
}
_FORMATS = {
    "STRING": frozenset({"enum", "date-time"}),
    "NUMBER": frozenset({"float", "double"}),
    "INTEGER": frozenset({"int32", "int64"}),
}
_COUNTS = {
    "ARRAY": ("minItems", "maxItems"),
    "STRING": ("minLength", "maxLength"),
    "OBJECT": ("minProperties", "maxProperties"),
}
"""The counts each type takes (a count beside another type is dropped: Gemini refuses it)."""
_ANNOTATIONS = ("description", "title", "default")
# JSON Schema keywords and OpenAPI annotations Gemini's JSON Schema form has no use for.
_NOT_JSON_SCHEMA = frozenset({"discriminator", "xml", "externalDocs", "example", "nullable"})


def _text(value: Any) -> str:
    """An enum value as the string Gemini gets."""
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


def _notes(description: Any, notes: list[str]) -> str | None:
    parts = [description] if isinstance(description, str) and description else []
    return " ".join([*parts, *(f"({note})" for note in notes)]) or None


_ARGUMENTS = "arguments"
"""The one property of ``parameters`` when a tool's arguments are a free-form object
(``additionalProperties`` and no properties): it holds them as entries or as JSON text."""

_TEXT_NOTES = {
    "object": 'JSON text of an object: {"name": value, ...}',
    "array": "JSON text of an array: [value, ...]",
    "value": (
        'JSON text of the value: a string in quotes ("text"), a number, true, false, '
        "null, an array or an object"
    ),
}
"""What the description of a value carried as JSON text says, by what the text holds."""
_ENTRIES_NOTE = "an object given as its entries, each a key and its value"
"""What the description of an object carried as its entries says."""


def _json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _count(value: Any) -> int:
    """A count keyword's value (``minItems``...), or -1 when it is none."""
    if isinstance(value, int | float) and not isinstance(value, bool) and value == int(value):
        return max(int(value), 0)
    return -1


def _open(schema: Mapping[str, Any]) -> bool:
    """Whether an object schema says it takes keys it does not name (a bare object that
    names none takes no arguments: the MCP convention for a tool without any)."""
    extra = schema.get("additionalProperties")
    return (extra is not None and not closed(extra)) or bool(schema.get("patternProperties"))


def _values_of(schema: Mapping[str, Any]) -> tuple[Any, str | None]:
    """The one schema every key of a free-form object holds, and the pattern its keys
    follow; ``(None, None)`` when its values may be anything or follow several schemas."""
    extra = schema.get("additionalProperties")
    patterns = schema.get("patternProperties")
    if isinstance(patterns, Mapping) and patterns:
        if len(patterns) == 1 and closed(extra):
            [(pattern, value)] = patterns.items()
            return value, pattern
        return None, None
    if isinstance(extra, Mapping) and not closed(extra):
        return extra, None
    return None, None


def _wrapped(
    out: dict[str, Any], plan: Plan | None, *, required: bool
) -> tuple[dict[str, Any], Plan]:
    """Arguments that are a free-form object (``out``, entries or JSON text, and its
    ``plan``), as the one property `_ARGUMENTS` of the parameters."""
    out.pop("nullable", None)  # the arguments are an object, never null
    wrapper = Plan()
    wrapper.properties[_ARGUMENTS] = plan
    wrapper.wrapped = _ARGUMENTS
    schema: dict[str, Any] = {"type": "OBJECT", "properties": {_ARGUMENTS: out}}
    if required:
        schema["required"] = [_ARGUMENTS]
    return schema, wrapper


def _ambiguous(branches: list[dict[str, Any]], plans: list[Plan]) -> bool:
    """Whether alternatives cannot be told apart once some are carried as JSON text or
    entries: one of them is any value, or one shares its type with another."""
    if any(plan.text == "value" for plan in plans):
        return True
    kinds = [branch.get("type") for branch in branches]
    return any(
        (plan.text is not None or plan.entries) and kinds.count(kind) > 1
        for kind, plan in zip(kinds, plans, strict=True)
    )


class _Gemini:
    """One schema in OpenAPI-subset form; recursive definitions unrolled, and what that
    form cannot carry as it is (a free-form object, a value of any type) carried as
    entries or as JSON text."""

    def __init__(self, root: Mapping[str, Any]) -> None:
        self._root = {k: v for k, v in root.items() if k != "$defs"}
        self._defs: Mapping[str, Any] = root.get("$defs") or {}
        self._stack: list[str] = []

    def top(self) -> tuple[dict[str, Any], Plan | None]:
        """The tool's parameters: an ``OBJECT`` with properties (or none at all, for a
        tool that takes no arguments). Arguments that are a free-form object are one
        property, ``arguments``, which holds them as entries or as JSON text."""
        root = self._root
        if "allOf" in root:
            root = self._merge_all_of(root)
        out, plan = self.schema(root, top=True)
        if out.get("type") == "OBJECT":
            if out.get("properties") or not _open(root):
                return out, plan
            out, plan = self._free_form(root, [], nullable=False)
        elif "anyOf" in out:
            return self._top_alternatives(root, out, plan)
        return _wrapped(out, plan, required=_count(root.get("minProperties")) > 0)

    def _top_alternatives(
        self, root: Mapping[str, Any], out: dict[str, Any], plan: Plan | None
    ) -> tuple[dict[str, Any], Plan | None]:
        """Arguments that are one of several objects: one object with the properties of
        them all (required: what every alternative requires), each alternative said in
        the description; the way back picks the alternative the arguments fit."""
        properties: dict[str, Any] = {}
        required: list[str] | None = None
        said: list[str] = []
        for branch in out["anyOf"]:
            if branch.get("type") != "OBJECT":
                return _wrapped(*self._text(root, "object"), required=True)
            names = branch.get("properties") or {}
            for name, schema in names.items():
                if properties.setdefault(name, schema) != schema:
                    # The same name means different things in two alternatives.
                    return _wrapped(*self._text(root, "object"), required=True)
            needs = list(branch.get("required") or ())
            required = needs if required is None else [n for n in required if n in needs]
            said.append(", ".join(needs) if needs else "nothing required")
        merged: dict[str, Any] = {"type": "OBJECT", "properties": properties}
        if required:
            merged["required"] = required
        note = "give one of these sets of properties: " + "; ".join(f"[{s}]" for s in said)
        merged["description"] = _notes(out.get("description"), [note])
        return merged, plan

    def schema(self, schema: Any, *, top: bool = False) -> tuple[dict[str, Any], Plan | None]:
        if not isinstance(schema, Mapping):
            # A boolean schema: any value (true), or none at all (false, which the
            # tool's own check refuses whatever is sent).
            return self._text({}, "value")
        target = def_name(schema.get("$ref"), self._defs)
        if target is not None:
            return self._reference(schema, target)
        if "allOf" in schema:
            schema = self._merge_all_of(schema)
        notes: list[str] = []
        branches = schema.get("anyOf", schema.get("oneOf"))
        if isinstance(branches, list) and branches:
            return self._any_of(schema, branches, notes)
        declared = schema.get("type")
        if isinstance(declared, list):
            return self._type_list(schema, declared, notes)
        out: dict[str, Any] = {}
        plan = Plan()
        if declared == "null":
            # Gemini has no null type: a nullable string, and whatever comes is null.
            out["type"] = "STRING"
            out["nullable"] = True
            plan.null_only = True
            notes.append("always null")
        elif isinstance(declared, str) and declared in _TYPES:
            out["type"] = _TYPES[declared]
        if "enum" in schema or "const" in schema:
            self._enum(schema, out, plan)
        kind = out.get("type")
        if kind is None:
            return self._text(schema, "value")  # any value: JSON text says every one
        plan.kinds = kinds_of(kind)
        if plan.kinds is not None and out.get("nullable"):
            plan.kinds |= {"null"}
        if kind == "OBJECT":
            self._object(schema, out, plan, notes)
            if not out.get("properties") and not top:
                return self._free_form(schema, notes, nullable=bool(out.get("nullable")))
        elif kind == "ARRAY":
            self._array(schema, out, plan, notes)
            if plan.items is not None and plan.items.text is not None:
                # Items of any type: the whole array as JSON text, not each item.
                return self._text(schema, "array", nullable=bool(out.get("nullable")))
        elif kind in ("NUMBER", "INTEGER"):
            self._bounds(schema, out, notes, integer=kind == "INTEGER")
            plan.integer = kind == "INTEGER"
        elif kind == "STRING" and isinstance(schema.get("pattern"), str) and "enum" not in out:
            out["pattern"] = schema["pattern"]
        self._keywords(schema, out, plan, notes)
        return out, finished(plan)

    # -- what the OpenAPI subset cannot say as it is -----------------------------------

    def _text(
        self, schema: Mapping[str, Any], what: str, *, nullable: bool = False
    ) -> tuple[dict[str, Any], Plan]:
        """A value carried as JSON text (a string the way back parses): what has no
        type, or is an object without properties, or is past the recursion depth."""
        out: dict[str, Any] = {"type": "STRING"}
        if nullable:
            out["nullable"] = True
        if isinstance(schema.get("title"), str):
            out["title"] = schema["title"]
        description = _notes(schema.get("description"), [_TEXT_NOTES[what]])
        if description:
            out["description"] = description
        for key in ("default", "example"):
            if key in schema and schema[key] is not None:
                out[key] = _json_text(schema[key])
        plan = Plan()
        plan.text = what
        plan.kinds = frozenset({"string", "null"} if nullable else {"string"})
        return out, plan

    def _free_form(
        self, schema: Mapping[str, Any], notes: list[str], *, nullable: bool
    ) -> tuple[dict[str, Any], Plan]:
        """An object without properties: its entries (an array of key and value) when
        every value has one schema the subset can say, else JSON text."""
        value, key_pattern = _values_of(schema)
        if value is None:
            return self._text(schema, "object", nullable=nullable)
        value_out, value_plan = self.schema(value)
        if value_plan is not None and value_plan.text is not None:
            return self._text(schema, "object", nullable=nullable)
        key: dict[str, Any] = {"type": "STRING"}
        if key_pattern is not None:
            key["pattern"] = key_pattern
        entry = {
            "type": "OBJECT",
            "properties": {"key": key, "value": value_out},
            "required": ["key", "value"],
        }
        out: dict[str, Any] = {"type": "ARRAY", "items": entry}
        for own, counted in (("minProperties", "minItems"), ("maxProperties", "maxItems")):
            if _count(schema.get(own)) >= 0:
                out[counted] = _count(schema.get(own))
        if nullable:
            out["nullable"] = True
        if isinstance(schema.get("title"), str):
            out["title"] = schema["title"]
        description = _notes(schema.get("description"), [*notes, _ENTRIES_NOTE])
        if description:
            out["description"] = description
        plan = Plan()
        plan.entries = True
        plan.extra = value_plan
        plan.kinds = frozenset({"array", "null"} if nullable else {"array"})
        return out, plan

    # -- structure -------------------------------------------------------------------

    def _reference(
        self, schema: Mapping[str, Any], target: str
    ) -> tuple[dict[str, Any], Plan | None]:
        definition = self._root if target == "" else self._defs[target]
        siblings = {k: v for k, v in schema.items() if k != "$ref"}
        merged = {**definition, **siblings} if isinstance(definition, Mapping) else siblings
        if self._stack.count(target) >= GEMINI_RECURSION_DEPTH:
            # Past the depth: the rest of the structure as JSON text, described.
            kind = merged.get("type")
            what = "object" if kind == "object" else "array" if kind == "array" else "value"
            return self._text(merged, what)
        self._stack.append(target)
        try:
            return self.schema(merged)
        finally:
            self._stack.pop()

    def _merge_all_of(self, schema: Mapping[str, Any]) -> dict[str, Any]:
        merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
        for branch in schema["allOf"]:
            if not isinstance(branch, Mapping):
                continue
            target = def_name(branch.get("$ref"), self._defs)
            if target is not None and self._stack.count(target) < GEMINI_RECURSION_DEPTH:
                definition = self._root if target == "" else self._defs[target]
                branch = {**definition, **{k: v for k, v in branch.items() if k != "$ref"}}
            if "allOf" in branch:
                branch = self._merge_all_of(branch)
            for key, value in branch.items():
                if key == "properties" and isinstance(value, Mapping):
                    merged["properties"] = {**merged.get("properties", {}), **value}
                elif key == "required" and isinstance(value, list):
                    merged["required"] = [*merged.get("required", []), *value]
                elif key not in merged:
                    merged[key] = value
        return merged

    def _any_of(
        self, schema: Mapping[str, Any], branches: list[Any], notes: list[str]
    ) -> tuple[dict[str, Any], Plan | None]:
        # Keywords beside the alternatives (a type, properties) apply to each of them.
        shared = {k: v for k, v in schema.items() if k not in ("anyOf", "oneOf", *_ANNOTATIONS)}
        nullable = False
        alternatives: list[Any] = []
        for branch in exclusive_branches(schema, shared):
            if isinstance(branch, Mapping) and branch.get("type") == "null":
                nullable = True
            else:
                alternatives.append(branch)
        if not alternatives:
            alternatives = [shared]
        if len(alternatives) == 1:
            single = alternatives[0]
            base = dict(single) if isinstance(single, Mapping) else {}
            for key in _ANNOTATIONS:
                if key in schema:
                    base[key] = schema[key]
            out, plan = self.schema(base)
        else:
            out = {"anyOf": []}
            plan = Plan()
            for option in alternatives:
                converted, branch_plan = self.schema(option)
                out["anyOf"].append(converted)
                plan.branches.append(alternative(converted, branch_plan))
            if _ambiguous(out["anyOf"], plan.branches):
                return self._text(schema, "value", nullable=nullable)
            if "oneOf" in schema and "anyOf" not in schema:
                notes.append("exactly one of the alternatives")
            self._keywords(schema, out, plan, notes)
            plan = finished(plan) if any(not b.is_trivial() for b in plan.branches) else None
        if nullable:
            out["nullable"] = True
            if plan is not None and plan.kinds is not None:
                plan.kinds |= {"null"}
        return out, plan

    def _type_list(
        self, schema: Mapping[str, Any], declared: list[Any], notes: list[str]
    ) -> tuple[dict[str, Any], Plan | None]:
        kinds = [t for t in declared if t != "null"]
        rest = {k: v for k, v in schema.items() if k != "type" and k not in _ANNOTATIONS}
        branches: list[Any] = [{**rest, "type": t} for t in kinds]
        if "null" in declared:
            branches.append({"type": "null"})
        annotations = {k: schema[k] for k in _ANNOTATIONS if k in schema}
        return self._any_of({"anyOf": branches, **annotations}, branches, notes)

    def _object(
        self, schema: Mapping[str, Any], out: dict[str, Any], plan: Plan, notes: list[str]
    ) -> None:
        properties = schema.get("properties")
        extra = schema.get("additionalProperties")
        undeclared = [n for n in schema.get("required") or () if n not in (properties or {})]
        if undeclared and isinstance(schema.get("required"), list):
            # Required but not described (Gemini needs it among the properties): what
            # other keys hold, else any value.
            value = extra if isinstance(extra, Mapping) and not closed(extra) else {}
            properties = {**(properties or {}), **{n: value for n in undeclared}}
        if not isinstance(properties, Mapping) or not properties:
            return
        names = legal_names(list(properties), GEMINI_PROPERTY_NAMES)
        out["properties"] = {}
        for own, legal in names.items():
            out["properties"][legal], plan.properties[legal] = self.schema(properties[own])
            if legal != own:
                plan.names[legal] = own
        wanted = set(schema.get("required") or ())
        required = [legal for own, legal in names.items() if own in wanted]
        if required:
            out["required"] = required
        if (extra is not None and not closed(extra)) or "patternProperties" in schema:
            if isinstance(extra, Mapping) and isinstance(extra.get("type"), str):
                notes.append(f"other keys allowed, each of type {extra['type']}")
            else:
                notes.append("other keys allowed")

    def _array(
        self, schema: Mapping[str, Any], out: dict[str, Any], plan: Plan, notes: list[str]
    ) -> None:
        items = schema.get("items")
        prefix = schema.get("prefixItems")
        if isinstance(items, list) or isinstance(prefix, list):
            tuple_items = items if isinstance(items, list) else prefix
            items = {"anyOf": list(tuple_items)} if tuple_items else {}
            notes.append("a tuple: items in the order given")
        out["items"], plan.items = self.schema(items if items is not None else {})
        if schema.get("uniqueItems") is True:
            notes.append("items must be unique")

    def _enum(self, schema: Mapping[str, Any], out: dict[str, Any], plan: Plan) -> None:
        values = schema["enum"] if "enum" in schema else [schema["const"]]
        if not isinstance(values, list):
            return
        if None in values:
            out["nullable"] = True
            values = [v for v in values if v is not None]
        kinds = kinds_of(schema.get("type"))
        if kinds is not None:
            # A value the declared type refuses (``""`` in a number's enum) is no option.
            values = [v for v in values if json_kind(v) in kinds]
        if not values:
            return
        if all(isinstance(v, str) for v in values):
            out["enum"] = list(values)
        else:
            texts: dict[str, Any] = {}
            for value in values:
                texts.setdefault(_text(value), value)
            out["enum"] = list(texts)
            plan.values = texts
        out["type"] = "STRING"
        out["format"] = "enum"

    def _bounds(
        self, schema: Mapping[str, Any], out: dict[str, Any], notes: list[str], *, integer: bool
    ) -> None:
        for key in ("minimum", "maximum"):
            if isinstance(schema.get(key), int | float) and not isinstance(schema[key], bool):
                out[key] = schema[key]
        for key, bound, step in (
            ("exclusiveMinimum", "minimum", 1),
            ("exclusiveMaximum", "maximum", -1),
        ):
            value = schema.get(key)
            if not isinstance(value, int | float) or isinstance(value, bool):
                continue
            if integer:
                # The nearest integer inside the bound says the same thing exactly.
                edge = math.floor(value) + 1 if step == 1 else math.ceil(value) - 1
                if bound not in out or (out[bound] < edge if step == 1 else out[bound] > edge):
                    out[bound] = edge
            else:
                notes.append(f"{'greater' if step == 1 else 'less'} than {value}")
        if isinstance(schema.get("multipleOf"), int | float):
            notes.append(f"a multiple of {schema['multipleOf']}")

    def _keywords(
        self, schema: Mapping[str, Any], out: dict[str, Any], plan: Plan, notes: list[str]
    ) -> None:
        kind = out.get("type")
        for key in _COUNTS.get(kind or "", ()):
            if _count(schema.get(key)) >= 0:
                out[key] = _count(schema.get(key))
        fmt = schema.get("format")
        if isinstance(fmt, str) and "format" not in out:
            if fmt in _FORMATS.get(kind or "", ()):
                out["format"] = fmt
            else:
                notes.append(f"format: {fmt}")
        if isinstance(schema.get("title"), str):
            out["title"] = schema["title"]
        if "default" in schema and plan.values is None:
            out["default"] = copy_json(schema["default"])
        examples = schema.get("examples")
        if "example" in schema and plan.values is None:
            out["example"] = copy_json(schema["example"])
        elif isinstance(examples, list) and examples and plan.values is None:
            out["example"] = copy_json(examples[0])
        if schema.get("deprecated") is True:
            notes.append("deprecated")
        description = _notes(schema.get("description"), notes)
        if description:
            out["description"] = description


def gemini_parameters(schema: Mapping[str, Any], *, source: str | None = None) -> DialectSchema:
    """Gemini's ``parameters`` (the OpenAPI-subset ``Schema``) for ``schema``, and the way
    back.

    Types are Gemini's (``STRING``, ``OBJECT``...); a type list becomes ``anyOf`` plus
    ``nullable``; references are inlined, a recursive one unrolled
    `GEMINI_RECURSION_DEPTH` times and then carried as JSON text; ``oneOf`` becomes
    ``anyOf``, ``allOf`` is merged; enums and ``const`` become string enums (other
    values as JSON text: ``1``, ``true``); other keys of an object that has properties
    (``additionalProperties``), ``uniqueItems``, ``multipleOf``, other formats and a
    number's exclusive bounds are said in the description (an integer's exclusive bound
    becomes the inclusive one); ``not`` and conditionals are dropped; property names are
    made legal. An object without properties is its entries when its values have one
    schema (``additionalProperties``, or one ``patternProperties`` pattern, which its
    keys keep; ``minProperties`` becomes ``minItems``), else JSON text; a value of any
    type, an array of them, and alternatives a string could stand for are JSON text.
    Arguments that are a free-form object are one property, ``arguments``; arguments that
    are one of several objects are one object with the properties of them all, which
    alternatives there are said in the description. The result never holds
    ``additionalProperties``, an object without properties (but the top level of a
    tool that takes no arguments: leave ``parameters`` out), or a value without a type.

    `DialectSchema.restore` undoes it all: the renames and the enum strings, whole
    floats made ints where the tool wants an integer, entries made the object again and
    JSON text parsed (a value sent as it is, where text was asked for, is taken as it
    is); what cannot be read back is named, as it says. `DialectSchema.encode` is the
    inverse.

    Args:
        schema: A JSON Schema of an object (a tool's parameters).
        source: What the schema belongs to, named in errors (e.g. ``tool:search``).

    Raises:
        SpecError: a local ``$ref`` points at nothing.
    """
    normalized = openai_parameters(schema, source=source)
    out, plan = _Gemini(normalized).top()
    return DialectSchema(schema=out, _plan=plan)


def _json_schema(schema: Any) -> Any:
    if isinstance(schema, list):
        return [_json_schema(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key.startswith("x-") or key in _NOT_JSON_SCHEMA:
            continue
        if key in ("properties", "$defs", "patternProperties", "dependentSchemas"):
            out[key] = (
                {n: _json_schema(s) for n, s in value.items()} if isinstance(value, dict) else value
            )
        elif key in ("enum", "const", "default", "examples"):
            out[key] = value
        else:
            out[key] = _json_schema(value)
    return out


def gemini_parameters_json_schema(
    schema: Mapping[str, Any], *, source: str | None = None
) -> DialectSchema:
    """Gemini's ``parametersJsonSchema`` for ``schema``: `openai_parameters`' schema
    without OpenAPI's annotations (``example``, ``discriminator``, ``xml``,
    ``externalDocs``) and ``x-`` extensions. Arguments need no change back.

    Raises:
        SpecError: a local ``$ref`` points at nothing.
    """
    return DialectSchema(schema=_json_schema(openai_parameters(schema, source=source)))


def _takes_arguments(parameters: Mapping[str, Any]) -> bool:
    """Whether a parameter schema lets a call have arguments though it names no
    properties (a free-form map, alternatives at its root): its declaration must keep it."""
    return (
        any(
            key in parameters
            for key in ("additionalProperties", "patternProperties", "anyOf", "oneOf", "allOf")
        )
        and parameters.get("additionalProperties") is not False
    )


def to_gemini_declarations(
    declarations: Iterable[ToolDeclaration],
    *,
    form: Literal["parameters", "json_schema"] = "parameters",
) -> tuple[list[dict[str, Any]], ToolCallMap]:
    """Gemini ``functionDeclarations`` for ``declarations``, and the map back.

    Args:
        declarations: The tools' declarations.
        form: ``"parameters"`` for the OpenAPI-subset ``Schema`` every Gemini endpoint
            takes (`gemini_parameters`), ``"json_schema"`` for ``parametersJsonSchema``
            (the tool's JSON Schema as it is, ``additionalProperties`` and all: every
            current model takes it, and the arguments need no change back).

    Returns:
        ``[{"name", "description", "parameters" | "parametersJsonSchema"}]`` (no
        parameters for a tool that takes none) with legal names, and the `ToolCallMap`
        that turns each function call's name and arguments back into the tool's own.

    Raises:
        ToolDefinitionError: two declarations have the same name.
        SpecError: a parameter schema has a broken local ``$ref``.
    """
    if form not in ("parameters", "json_schema"):
        raise ValueError(f"form must be 'parameters' or 'json_schema', got {form!r}")
    decls = list(declarations)
    names = ToolNameMap._build((d.name for d in decls), GEMINI_TOOL_NAMES)
    convert = gemini_parameters if form == "parameters" else gemini_parameters_json_schema
    key = "parameters" if form == "parameters" else "parametersJsonSchema"
    out: list[dict[str, Any]] = []
    schemas: dict[str, DialectSchema] = {}
    for decl in decls:
        converted = convert(decl.parameters, source=f"tool:{decl.name}")
        schemas[decl.name] = converted
        declaration: dict[str, Any] = {"name": names.to_provider(decl.name)}
        if decl.description:
            declaration["description"] = decl.description
        if converted.schema.get("properties") or _takes_arguments(decl.parameters):
            declaration[key] = converted.schema
        out.append(declaration)
    return out, call_map(names, schemas)
