"""The way back: arguments a model sends in a provider's dialect, as the tool's own.

A dialect may rename properties (Gemini and Anthropic allow fewer characters in property
names), add ``null`` to optional properties (OpenAI strict mode makes every property
required), or turn enum values into strings (Gemini). While converting a schema, each
dialect records what it changed in a `Plan` tree that mirrors the schema; `DialectSchema`
and `ToolCallMap` walk the model's arguments along it.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from toolsets._jsonschema import unescape
from toolsets._results import INVALID_JSON_KEY
from toolsets.schema._names import ToolNameMap

__all__ = [
    "DialectSchema",
    "Plan",
    "ToolCallMap",
    "Unreadable",
    "accepts_null",
    "alternative",
    "call_map",
    "closed",
    "def_name",
    "encode",
    "exclusive_branches",
    "finished",
    "json_kind",
    "kinds_of",
    "requirements_only",
    "restore",
]

_KINDS = {
    "string": frozenset({"string"}),
    "integer": frozenset({"integer"}),
    "number": frozenset({"number", "integer"}),
    "boolean": frozenset({"boolean"}),
    "array": frozenset({"array"}),
    "object": frozenset({"object"}),
    "null": frozenset({"null"}),
}


def kinds_of(types: Any) -> frozenset[str] | None:
    """The JSON kinds a ``type`` keyword (one name or a list; any case) admits; None
    for any."""
    names = [types] if isinstance(types, str) else types
    if not isinstance(names, list) or not names:
        return None
    found: set[str] = set()
    for name in names:
        found |= _KINDS.get(str(name).lower(), frozenset())
    return frozenset(found)


_DEFS = "#/$defs/"


def def_name(ref: Any, defs: Mapping[str, Any]) -> str | None:
    """The definition a ``$ref`` of `openai_parameters`' output names (``""`` for the
    root), or None when it names none of ``defs``."""
    if ref == "#":
        return ""
    if isinstance(ref, str) and ref.startswith(_DEFS):
        name = unescape(ref[len(_DEFS) :])
        return name if name in defs else None
    return None


def json_kind(value: Any) -> str:
    """The JSON kind of ``value`` (a whole float is an ``integer``, as JSON Schema says)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    return "object" if isinstance(value, Mapping) else "unknown"


class Plan:
    """What a dialect changed in one schema, and so what to undo in its values."""

    __slots__ = (
        "branches",
        "drop_null",
        "entries",
        "extra",
        "integer",
        "items",
        "keys",
        "kinds",
        "names",
        "non_null",
        "null_only",
        "properties",
        "ref",
        "required",
        "text",
        "values",
        "wrapped",
    )

    def __init__(self) -> None:
        self.names: dict[str, str] = {}
        """Renamed properties: the dialect's name → the tool's own."""
        self.properties: dict[str, Plan | None] = {}
        """Every declared property (the dialect's name) → the plan of its values."""
        self.drop_null: set[str] = set()
        """Properties (the dialect's names) whose ``null`` means "not given"."""
        self.extra: Plan | None = None
        """The plan of values under other keys (``additionalProperties``)."""
        self.items: Plan | None = None
        """The plan of an array's items."""
        self.branches: list[Plan] = []
        """Alternatives (``anyOf``): the first that fits the value applies."""
        self.values: dict[str, Any] | None = None
        """Enum values the dialect made strings: the string → the original value."""
        self.null_only = False
        """Whether the tool accepts only ``null`` here (a dialect without a null type
        says "nullable, anything"): any value becomes ``null``."""
        self.integer = False
        """Whether a whole float (``3.0``) means the integer the tool asked for."""
        self.kinds: frozenset[str] | None = None
        """The JSON kinds the dialect's schema admits (None: any), to pick a branch."""
        self.keys: frozenset[str] | None = None
        """The property names the dialect's object schema declares (None: any), to pick
        a branch."""
        self.required: frozenset[str] = frozenset()
        """The properties the dialect's schema requires, to pick a branch."""
        self.non_null: frozenset[str] = frozenset()
        """The properties that cannot be ``null`` in the dialect, to pick a branch."""
        self.ref: tuple[Mapping[str, Plan | None], str] | None = None
        """A recursive definition this schema stands for: (the plans by name, name)."""
        self.text: str | None = None
        """What a value the dialect carries as JSON text holds (``"object"``,
        ``"array"``, ``"value"``), or None: the text is parsed back into the value."""
        self.entries = False
        """Whether the dialect carries this object as a list of its entries
        (``{"key": ..., "value": ...}``, each value under `extra`'s plan)."""
        self.wrapped: str | None = None
        """The one property the dialect puts the whole arguments object under."""

    def is_trivial(self) -> bool:
        """Whether no value needs a change (branches and references are not followed:
        a plan that has them is never trivial)."""
        return not (
            self.names
            or any(child is not None for child in self.properties.values())
            or self.drop_null
            or self.extra
            or self.items
            or self.branches
            or self.values is not None
            or self.integer
            or self.null_only
            or self.ref
            or self.text is not None
            or self.entries
            or self.wrapped is not None
        )

    def fits(self, value: Any) -> bool:
        """Whether ``value`` can be an instance of this plan's schema (a cheap test by
        kind, enum strings, property names and nulls, used to pick a branch)."""
        if self.kinds is not None and json_kind(value) not in self.kinds:
            return False
        if self.values is not None and isinstance(value, str):
            return value in self.values
        if isinstance(value, Mapping):
            if self.keys is not None and not all(key in self.keys for key in value):
                return False
            if not all(key in value for key in self.required):
                return False
            return not any(value.get(key, 0) is None for key in self.non_null)
        return True


def accepts_null(schema: Any) -> bool:
    """Whether a dialect's schema (JSON Schema or Gemini's) plainly admits ``null``."""
    if not isinstance(schema, Mapping):
        return True
    declared = schema.get("type")
    if schema.get("nullable") is True or declared == "null" or declared == "NULL":
        return True
    if isinstance(declared, list) and "null" in declared:
        return True
    if isinstance(schema.get("enum"), list) and None in schema["enum"]:
        return True
    branches = schema.get("anyOf")
    return isinstance(branches, list) and any(accepts_null(b) for b in branches)


def alternative(schema: Any, plan: Plan | None) -> Plan:
    """The plan of one alternative of an ``anyOf`` (its dialect schema ``schema``), with
    what `Plan.fits` needs to tell it from the others."""
    plan = plan if plan is not None else Plan()
    if not isinstance(schema, Mapping):
        return plan
    plan.kinds = kinds_of(schema.get("type"))
    if plan.kinds is not None and accepts_null(schema):
        plan.kinds |= {"null"}
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        extra = schema.get("additionalProperties")
        if extra is None or closed(extra):
            plan.keys = frozenset(properties)
        plan.required = frozenset(schema.get("required") or ())
        plan.non_null = frozenset(n for n, s in properties.items() if not accepts_null(s))
    return plan


def requirements_only(branches: list[Any]) -> bool:
    """Whether alternatives only say which properties are required (each something)."""
    return all(
        isinstance(b, Mapping)
        and set(b) <= {"required", "description", "title"}
        and bool(b.get("required"))
        for b in branches
    )


def exclusive_branches(schema: Mapping[str, Any], shared: Mapping[str, Any]) -> list[Any]:
    """The alternatives of ``schema``'s ``anyOf``/``oneOf``, each with the keywords
    ``shared`` beside them merged in.

    A ``oneOf`` whose alternatives only say which of the shared properties are
    required ("give ``id``, or ``owner`` and ``repo``") becomes alternatives without the
    properties that only the others require: then "exactly one" survives the change to
    ``anyOf``, which is all a dialect has.
    """
    key = "anyOf" if "anyOf" in schema else "oneOf"
    branches: list[Any] = list(schema[key])
    properties = shared.get("properties")
    only_required = requirements_only(branches)
    if isinstance(properties, Mapping) and closed(shared.get("additionalProperties")):
        # An alternative that requires a property the object cannot have never holds.
        possible = [
            b
            for b in branches
            if not isinstance(b, Mapping)
            or set(b.get("required") or ()) <= set(properties) | set(b.get("properties") or ())
        ]
        branches = possible or branches
    if key == "oneOf" and only_required and isinstance(properties, Mapping):
        needs = [set(b.get("required") or ()) for b in branches]
        out = []
        for i, branch in enumerate(branches):
            others = set().union(*(n for j, n in enumerate(needs) if j != i)) - needs[i]
            kept = {n: s for n, s in properties.items() if n not in others}
            out.append(_merge({**shared, "properties": kept}, branch))
        return out
    return [
        _merge(shared, b) if shared and isinstance(b, Mapping) and "$ref" not in b else b
        for b in branches
    ]


def _merge(shared: Mapping[str, Any], branch: Mapping[str, Any]) -> dict[str, Any]:
    """``branch`` with ``shared`` applied too: both sets of properties and of required
    names; otherwise the branch's keyword wins."""
    out = {**shared, **branch}
    for key in ("properties", "required"):
        mine, theirs = shared.get(key), branch.get(key)
        if isinstance(mine, Mapping) and isinstance(theirs, Mapping):
            out[key] = {**mine, **theirs}
        elif isinstance(mine, list) and isinstance(theirs, list):
            out[key] = list(dict.fromkeys([*mine, *theirs]))
    return out


def closed(extra: Any) -> bool:
    """Whether an ``additionalProperties`` value allows no other keys."""
    return extra is False or (isinstance(extra, Mapping) and dict(extra) == {"not": {}})


def finished(plan: Plan) -> Plan | None:
    """``plan``, or None when no value needs a change."""
    return None if plan.is_trivial() else plan


class Unreadable(Exception):
    """Values a model sent that cannot be read back (JSON text that is not JSON, entries
    without a key): each as (the path to it in the dialect's names, what is wrong)."""

    def __init__(self, problems: list[tuple[list[str], str]]) -> None:
        super().__init__(problems)
        self.problems = problems

    def at(self, key: str) -> Unreadable:
        """This, with ``key`` put in front of every path."""
        for path, _ in self.problems:
            path.insert(0, key)
        return self

    def fields(self) -> dict[str, str]:
        """``{dotted path: what is wrong}``."""
        return {".".join(path) or "(arguments)": problem for path, problem in self.problems}


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _parsed(plan: Plan, text: str) -> Any:
    """JSON text a model wrote for a value the dialect carries as text, parsed."""
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as exc:
        problem = f"not valid JSON ({exc.msg} at character {exc.pos})"
    except ValueError as exc:  # NaN, Infinity
        problem = f"not valid JSON ({exc})"
    except RecursionError:
        problem = "nested too deep to read"
    what = {"object": "an object", "array": "an array"}.get(plan.text or "", "the value")
    raise Unreadable([([], f"{problem}; write {what} as JSON text")])


def _entries(plan: Plan, value: list[Any]) -> dict[str, Any]:
    """A model's entries (``[{"key": k, "value": v}]``) as the object they stand for."""
    out: dict[str, Any] = {}
    problems: list[tuple[list[str], str]] = []
    for index, entry in enumerate(value):
        if not isinstance(entry, Mapping) or not isinstance(entry.get("key"), str):
            problems.append(([str(index)], "each entry must be an object with a key (a string)"))
            continue
        if "value" not in entry:
            problems.append(([str(index)], f"the entry of the key {entry['key']!r} has no value"))
            continue
        if entry["key"] in out:
            problems.append(([str(index)], f"the key {entry['key']!r} is given twice"))
            continue
        try:
            out[entry["key"]] = restore(plan.extra, entry["value"])
        except Unreadable as exc:
            problems.extend(exc.at("value").at(str(index)).problems)
    if problems:
        raise Unreadable(problems)
    return out


def restore(plan: Plan | None, value: Any) -> Any:
    """``value`` (the model's, in the dialect) as the tool's own; never changes it.

    Raises:
        Unreadable: JSON text that is not JSON, or entries without a key or a value.
    """
    while plan is not None and plan.ref is not None:
        plans, name = plan.ref
        plan = plans.get(name)
    if plan is None:
        return value
    if plan.null_only:
        return None
    if plan.text is not None:
        # JSON text holds the tool's own value; a model that sent the value itself
        # (as it may after seeing its earlier calls) means that value.
        return _parsed(plan, value) if isinstance(value, str) else value
    if plan.values is not None and isinstance(value, str) and value in plan.values:
        return plan.values[value]
    if plan.branches:
        chosen = next((b for b in plan.branches if b.fits(value)), None)
        return value if chosen is None else restore(chosen, value)
    if plan.integer and isinstance(value, float) and value.is_integer():
        return int(value)
    if plan.entries and isinstance(value, list):
        return _entries(plan, value)
    if isinstance(value, Mapping):
        if plan.wrapped is not None:
            return _unwrapped(plan, value)
        out: dict[str, Any] = {}
        fields: Mapping[str, Any] = value
        problems: list[tuple[list[str], str]] = []
        for key, item in fields.items():
            if item is None and key in plan.drop_null:
                continue
            child = plan.properties.get(key, plan.extra)
            try:
                out[plan.names.get(key, key)] = restore(child, item)
            except Unreadable as exc:
                problems.extend(exc.at(key).problems)
        if problems:
            raise Unreadable(problems)
        return out
    if isinstance(value, list) and plan.items is not None:
        items: list[Any] = []
        problems = []
        for index, item in enumerate(value):
            try:
                items.append(restore(plan.items, item))
            except Unreadable as exc:
                problems.extend(exc.at(str(index)).problems)
        if problems:
            raise Unreadable(problems)
        return items
    return value


def _unwrapped(plan: Plan, value: Mapping[str, Any]) -> Any:
    """Arguments the dialect put under one property (`Plan.wrapped`), as the tool's."""
    assert plan.wrapped is not None
    if plan.wrapped not in value:
        return dict(value)
    try:
        inner = restore(plan.properties.get(plan.wrapped), value[plan.wrapped])
    except Unreadable as exc:
        raise exc.at(plan.wrapped) from None
    if inner is None:
        inner = {}
    if not isinstance(inner, Mapping):
        raise Unreadable([([plan.wrapped], "the arguments must be an object")])
    rest = {k: v for k, v in value.items() if k != plan.wrapped}
    return {**rest, **inner}


def encode(plan: Plan | None, value: Any) -> Any:
    """``value`` (the tool's own) as a model following the dialect's schema sends it: the
    inverse of `restore` (``restore(plan, encode(plan, value)) == value``)."""
    while plan is not None and plan.ref is not None:
        plans, name = plan.ref
        plan = plans.get(name)
    if plan is None or plan.null_only:
        return value
    if plan.text is not None:
        if value is None and plan.kinds is not None and "null" in plan.kinds:
            return None
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    if plan.values is not None:
        kind = json_kind(value)
        for text, own in plan.values.items():
            if own == value and json_kind(own) == kind:
                return text
    if plan.branches:
        for branch in plan.branches:
            encoded = encode(branch, value)
            # The alternative `restore` will pick for what is sent, so it comes back.
            if next((b for b in plan.branches if b.fits(encoded)), None) is branch:
                return encoded
        return value
    if plan.entries and isinstance(value, Mapping):
        return [{"key": key, "value": encode(plan.extra, item)} for key, item in value.items()]
    if isinstance(value, Mapping):
        if plan.wrapped is not None:
            return {plan.wrapped: encode(plan.properties.get(plan.wrapped), value)}
        wire_names = {own: wire for wire, own in plan.names.items()}
        out: dict[str, Any] = {}
        fields: Mapping[str, Any] = value
        for key, item in fields.items():
            wire = wire_names.get(key, key)
            out[wire] = encode(plan.properties.get(wire, plan.extra), item)
        for wire in plan.drop_null:
            out.setdefault(wire, None)
        return out
    if isinstance(value, list) and plan.items is not None:
        return [encode(plan.items, item) for item in value]
    return value


@dataclass(frozen=True, kw_only=True)
class DialectSchema:
    """A tool's parameter schema in one provider's dialect, and the way back from it.

    Send `schema` to the provider; pass the arguments of the model's call to `restore`
    to get the arguments the tool itself accepts.
    """

    schema: dict[str, Any]
    """The parameter schema in the dialect. Treat it as immutable."""
    _plan: Plan | None = field(default=None, repr=False, compare=False)

    @property
    def changes_arguments(self) -> bool:
        """Whether `restore` can change anything (False: the model's arguments already
        are the tool's)."""
        return self._plan is not None

    def restore(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """The tool's own arguments for ``arguments`` a model sent against `schema`.

        Renamed properties get their names back, ``null`` sent for an optional
        property that does not accept ``null`` is dropped, enum values the dialect made
        strings become the original values again, a whole number sent as a float
        for an integer becomes an int, JSON text is parsed and entries become the
        object they list (Gemini's ``parameters``). ``arguments`` is never changed: the
        result is a new dict (values the dialect did not change are the model's own
        objects).

        Arguments that cannot be read back (JSON text that is not JSON, entries without
        a key or a value, a key given twice) come back as ``{INVALID_JSON_KEY:
        {"<field path>": "<what is wrong>"}}``, the path in the names the model used:
        the call path answers such arguments with an ``{"error": ...}`` naming each
        field, and no tool sees them.
        """
        try:
            restored = restore(self._plan, arguments)
        except Unreadable as exc:
            return {INVALID_JSON_KEY: exc.fields()}
        return dict(restored) if restored is arguments else restored

    def encode(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """``arguments`` (the tool's own) as a model following `schema` sends them: the
        inverse of `restore`, to show a model a call in the form it makes calls (its
        earlier calls, an example). ``arguments`` is never changed."""
        encoded = encode(self._plan, arguments)
        return dict(encoded) if encoded is arguments else encoded


@dataclass(frozen=True, kw_only=True, repr=False)
class ToolCallMap(ToolNameMap):
    """A `ToolNameMap` that also maps each call's arguments back to the tool's own.

    Every ``to_*`` converter of `toolsets.schema` returns one beside the provider's
    tools. For each call the model makes::

        name, arguments = calls.restore(call_name, call_arguments)

    gives the tool's own name and arguments, whatever the dialect changed.
    """

    _schemas: Mapping[str, DialectSchema] = field(default_factory=dict, compare=False)

    def restore(self, name: str, arguments: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        """The tool's own name and arguments for a call the model made in the dialect.

        An unknown name comes back unchanged with a copy of ``arguments`` (the caller
        tells the model that there is no such tool). Arguments that cannot be read back
        come back as ``{INVALID_JSON_KEY: {field: problem}}`` (see
        `DialectSchema.restore`).
        """
        own = self.from_provider(name)
        schema = self._schemas.get(own)
        if schema is None:
            return own, dict(arguments)
        return own, schema.restore(arguments)

    def encode(self, name: str, arguments: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        """The provider's name and the dialect's arguments for a call of the tool named
        ``name`` (its own name) with ``arguments`` (its own): the inverse of `restore`."""
        schema = self._schemas.get(name)
        encoded = dict(arguments) if schema is None else schema.encode(arguments)
        return self.to_provider(name), encoded

    def schema(self, name: str) -> DialectSchema | None:
        """The dialect schema of the tool with the (own) name ``name``, if it is mapped."""
        return self._schemas.get(name)


def call_map(names: ToolNameMap, schemas: Mapping[str, DialectSchema]) -> ToolCallMap:
    """``names`` with the dialect schemas of the tools (by their own names)."""
    fields = {f.name: getattr(names, f.name) for f in dataclasses.fields(names)}
    return ToolCallMap(**fields, _schemas=MappingProxyType(dict(schemas)))
