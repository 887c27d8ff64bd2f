"""The Anthropic dialect: tools for the Messages API.

Anthropic takes a JSON Schema per tool as ``input_schema``, but refuses ``oneOf``,
``anyOf`` and ``allOf`` at its top level, and property names outside
``^[a-zA-Z0-9_.-]{1,64}$``; tool names are ``^[a-zA-Z0-9_-]{1,64}$``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from toolsets._declaration import ToolDeclaration
from toolsets._names import NameRule
from toolsets.schema._names import ToolNameMap, legal_names
from toolsets.schema._openai import openai_parameters
from toolsets.schema._restore import (
    DialectSchema,
    Plan,
    ToolCallMap,
    alternative,
    call_map,
    def_name,
    finished,
    kinds_of,
)

__all__ = ["anthropic_input_schema", "to_anthropic_tools"]

ANTHROPIC_PROPERTY_NAMES = NameRule(illegal=re.compile(r"[^A-Za-z0-9_.-]"), max_length=64)
"""Property names Anthropic accepts, at every level of a schema."""

_COMBINATORS = ("allOf", "anyOf", "oneOf")


def _flatten_root(root: dict[str, Any]) -> dict[str, Any]:
    """The top level without ``allOf``/``anyOf``/``oneOf``: their object branches'
    properties joined. ``allOf`` keeps every branch's ``required``; ``anyOf``/``oneOf``
    only what every branch requires, and say in the description that the alternatives
    are exclusive."""
    if not any(k in root for k in _COMBINATORS):
        return root
    out = {k: v for k, v in root.items() if k not in _COMBINATORS}
    properties: dict[str, Any] = dict(out.get("properties") or {})
    required: list[str] = list(out.get("required") or [])
    notes: list[str] = []
    for key in _COMBINATORS:
        branches = [b for b in root.get(key) or [] if isinstance(b, Mapping)]
        if not branches:
            continue
        for branch in branches:
            for name, schema in (branch.get("properties") or {}).items():
                properties.setdefault(name, schema)
        if key == "allOf":
            for branch in branches:
                required += [n for n in branch.get("required") or [] if n not in required]
            continue
        sets = [set(b.get("required") or ()) for b in branches]
        required += [n for n in sorted(set.intersection(*sets)) if n not in required]
        options = [sorted(s) for s in sets if s]
        if options:
            word = "exactly one" if key == "oneOf" else "at least one"
            notes.append(f"Give {word} of these sets of arguments: {options}.")
    out["properties"] = properties
    if required:
        out["required"] = required
    if notes:
        out["description"] = " ".join([out.get("description", ""), *notes]).strip()
    return out


class _Renamer:
    """Property names made legal wherever ``properties`` occurs, with the plan back."""

    def __init__(self, root: Mapping[str, Any], rule: NameRule) -> None:
        self._rule = rule
        self._defs: Mapping[str, Any] = root.get("$defs") or {}
        self._def_plans: dict[str, Plan | None] = {}

    def run(self, root: Mapping[str, Any]) -> DialectSchema:
        body = {k: v for k, v in root.items() if k != "$defs"}
        out, plan = self.schema(body)
        self._def_plans[""] = plan
        if self._defs:
            out["$defs"] = {}
            for name, definition in self._defs.items():
                out["$defs"][name], self._def_plans[name] = self.schema(definition)
        return DialectSchema(schema=out, _plan=plan)

    def schema(self, schema: Any) -> tuple[Any, Plan | None]:
        if not isinstance(schema, Mapping):
            return schema, None
        plan = Plan()
        plan.kinds = kinds_of(schema.get("type"))
        target = def_name(schema.get("$ref"), self._defs)
        if target is not None:
            plan.ref = (self._def_plans, target)
            return schema, plan
        out = dict(schema)
        properties = schema.get("properties")
        if isinstance(properties, Mapping):
            names = legal_names(list(properties), self._rule)
            out["properties"] = {}
            for own, legal in names.items():
                out["properties"][legal], plan.properties[legal] = self.schema(properties[own])
                if legal != own:
                    plan.names[legal] = own
            required = schema.get("required")
            if isinstance(required, list) and plan.names:
                out["required"] = [names.get(n, n) for n in required]
        if isinstance(schema.get("items"), Mapping):
            out["items"], plan.items = self.schema(schema["items"])
        if isinstance(schema.get("additionalProperties"), Mapping):
            out["additionalProperties"], plan.extra = self.schema(schema["additionalProperties"])
        for key in ("anyOf", "oneOf"):
            if isinstance(schema.get(key), list):
                out[key] = []
                for branch in schema[key]:
                    converted, branch_plan = self.schema(branch)
                    out[key].append(converted)
                    plan.branches.append(alternative(converted, branch_plan))
                if all(b.is_trivial() for b in plan.branches):
                    plan.branches = []
        if isinstance(schema.get("allOf"), list):
            # Every branch applies to the same value: their renames add up.
            out["allOf"] = []
            for branch in schema["allOf"]:
                converted, branch_plan = self.schema(branch)
                out["allOf"].append(converted)
                if branch_plan is not None:
                    plan.names.update(branch_plan.names)
                    plan.properties.update(branch_plan.properties)
                    plan.drop_null |= branch_plan.drop_null
        return out, finished(plan)


def rename_properties(schema: Mapping[str, Any], rule: NameRule) -> DialectSchema:
    """``schema`` with every property name that ``rule`` does not accept made legal."""
    return _Renamer(schema, rule).run(schema)


def anthropic_input_schema(
    schema: Mapping[str, Any], *, source: str | None = None
) -> DialectSchema:
    """An ``input_schema`` Anthropic accepts, built from ``schema``, and the way back.

    `openai_parameters`' schema (references inlined, recursive ones under ``$defs``),
    with no ``allOf``/``anyOf``/``oneOf`` at the top level (their branches' properties
    are joined; the alternatives are described) and every property name made legal
    (``^[a-zA-Z0-9_.-]{1,64}$``; `DialectSchema.restore` gives the names back).

    Args:
        schema: A JSON Schema of an object (a tool's parameters).
        source: What the schema belongs to, named in errors (e.g. ``tool:search``).

    Raises:
        SpecError: a local ``$ref`` points at nothing.
    """
    root = _flatten_root(openai_parameters(schema, source=source))
    return rename_properties(root, ANTHROPIC_PROPERTY_NAMES)


def to_anthropic_tools(
    declarations: Iterable[ToolDeclaration],
) -> tuple[list[dict[str, Any]], ToolCallMap]:
    """Messages API ``tools`` for ``declarations``, and the map back.

    Returns:
        ``[{"name", "description", "input_schema"}]`` with legal names, and the
        `ToolCallMap` that turns each ``tool_use`` block's name and input back into
        the tool's own.

    Raises:
        ToolDefinitionError: two declarations have the same name.
        SpecError: a parameter schema has a broken local ``$ref``.
    """
    decls = list(declarations)
    names = ToolNameMap.build(d.name for d in decls)
    tools: list[dict[str, Any]] = []
    schemas: dict[str, DialectSchema] = {}
    for decl in decls:
        converted = anthropic_input_schema(decl.parameters, source=f"tool:{decl.name}")
        schemas[decl.name] = converted
        tools.append(
            {
                "name": names.to_provider(decl.name),
                "description": decl.description,
                "input_schema": converted.schema,
            }
        )
    return tools, call_map(names, schemas)
