"""The OpenAI dialect: function tools and parameter schemas that Chat Completions accepts.

OpenAI, and the servers that copy its API (vLLM, llama.cpp, Ollama), take a JSON Schema
per function, but reject or mishandle parts of what MCP servers and OpenAPI specs
produce: references into definitions they do not resolve, object schemas without
``properties``, arrays without ``items``, names with dots or slashes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import unquote

from toolsets._declaration import ToolDeclaration
from toolsets._errors import SpecError
from toolsets._json import copy_json
from toolsets._jsonschema import (
    DEFINITION_KEYWORDS,
    SCHEMA_KEYWORDS,
    SCHEMA_LIST_KEYWORDS,
    SCHEMA_MAP_KEYWORDS,
    PointerError,
    escape,
    resolve,
    unescape,
)
from toolsets._names import NameRule
from toolsets.schema._names import ToolNameMap
from toolsets.schema._restore import DialectSchema, ToolCallMap, call_map
from toolsets.schema._strict import STRICT_LIMITS, strict_form

__all__ = [
    "DROPPED_KEYWORDS",
    "STRICT_LIMITS",
    "openai_parameters",
    "openai_strict_parameters",
    "to_openai_tools",
]

DROPPED_KEYWORDS = frozenset({"$schema", "$id", "$comment", "$anchor", "$dynamicAnchor"})
"""Keywords removed from every schema: they identify or annotate the document for
tooling, tell the model nothing, and some OpenAI-compatible servers reject them.
(``examples``, ``title``, ``format`` and unknown ``x-`` keywords are kept: they help the
model and are accepted.)"""

# Definition blocks are only reachable through "$ref", so they are not walked in place;
# what is still needed after inlining comes back as one top-level "$defs". "items" is
# walked apart: before draft 2020-12 it may be a list of schemas.
_SCHEMA_MAPS = SCHEMA_MAP_KEYWORDS - DEFINITION_KEYWORDS
_SCHEMAS = SCHEMA_KEYWORDS - {"items"}
_DEF_NAMES = NameRule(illegal=re.compile(r"[^A-Za-z0-9_.-]"), dedupe="number")
"""Names under the result's ``$defs`` (clashes numbered: ``Node``, ``Node_2``)."""


def _has_type(schema: Mapping[str, Any], name: str) -> bool:
    declared = schema.get("type")
    if isinstance(declared, str):
        return declared == name
    return isinstance(declared, list) and name in declared


class _Normalizer:
    """One pass over one schema; definitions are normalized at most once each."""

    def __init__(self, root: Mapping[str, Any], source: str | None) -> None:
        self._root = root
        self._source = source
        # Finished definitions, by pointer: each is built once however often it is used.
        self._done: dict[str, Any] = {}
        # Definitions being built, innermost last: a reference to one of these is a cycle.
        self._active: list[str] = []
        self._recursive: dict[str, str] = {}  # pointer -> name under the output "$defs"
        self._def_names: set[str] = set()

    def run(self) -> dict[str, Any]:
        built = self._schema(self._root, "")
        # A copy: the root may be a definition that is also used (and shared) below.
        out = dict(built) if isinstance(built, dict) else {}
        out["type"] = "object"
        if not isinstance(out.get("properties"), dict):
            out["properties"] = {}
        if self._recursive:
            out["$defs"] = {name: self._done[ptr] for ptr, name in self._recursive.items()}
        return out

    def _schema(self, schema: Any, pointer: str) -> Any:
        if not isinstance(schema, Mapping):
            # Boolean schemas mean "anything" / "nothing"; other values are left for
            # the provider to judge rather than silently changed.
            return copy_json(schema)
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith("#"):
            return self._reference(schema, ref, pointer)
        out: dict[str, Any] = {}
        for key, value in schema.items():
            if key in DROPPED_KEYWORDS or key in DEFINITION_KEYWORDS:
                continue
            at = f"{pointer}/{escape(key)}"
            if key in _SCHEMA_MAPS and isinstance(value, Mapping):
                out[key] = {n: self._schema(s, f"{at}/{escape(n)}") for n, s in value.items()}
            elif key in _SCHEMAS:
                out[key] = self._schema(value, at)
            elif key in SCHEMA_LIST_KEYWORDS and isinstance(value, list | tuple):
                out[key] = [self._schema(s, f"{at}/{i}") for i, s in enumerate(value)]
            elif key == "items":
                if isinstance(value, list | tuple):  # draft 4-2019 tuple form
                    out[key] = [self._schema(s, f"{at}/{i}") for i, s in enumerate(value)]
                else:
                    out[key] = self._schema(value, at)
            else:
                out[key] = copy_json(value)
        if _has_type(out, "object") and "properties" not in out:
            out["properties"] = {}
        if _has_type(out, "array") and "items" not in out and "prefixItems" not in out:
            # OpenAI rejects an array schema without "items"; {} means what absence did.
            out["items"] = {}
        return out

    def _reference(self, schema: Mapping[str, Any], ref: str, pointer: str) -> Any:
        target_pointer = unquote(ref[1:])
        siblings = {k: v for k, v in schema.items() if k != "$ref"}
        if target_pointer == "":
            # A reference to the root stays one: the result's root is the same schema.
            return self._merge({"$ref": "#"}, siblings, pointer)
        if target_pointer in self._active or target_pointer in self._recursive:
            return self._merge({"$ref": self._def_ref(target_pointer)}, siblings, pointer)
        built = self._done.get(target_pointer)
        if built is None:
            target = self._resolve(target_pointer, ref, pointer)
            self._active.append(target_pointer)
            try:
                built = self._schema(target, target_pointer)
            finally:
                self._active.pop()
            self._done[target_pointer] = built
        if target_pointer in self._recursive:
            return self._merge({"$ref": self._def_ref(target_pointer)}, siblings, pointer)
        if not siblings:
            return built
        if not isinstance(built, dict):
            return self._merge({"allOf": [built]}, siblings, pointer)
        return self._merge(dict(built), siblings, pointer)

    def _merge(self, base: dict[str, Any], siblings: Mapping[str, Any], pointer: str) -> Any:
        # Keywords beside "$ref" (a description, a default) refine the referenced schema,
        # and win over the definition's own.
        if siblings:
            base.update(self._schema(siblings, pointer))
        return base

    def _def_ref(self, target_pointer: str) -> str:
        name = self._recursive.get(target_pointer)
        if name is None:
            parts = target_pointer.split("/")
            is_definition = len(parts) == 3 and parts[1] in DEFINITION_KEYWORDS
            raw = parts[2] if is_definition else target_pointer.strip("/")
            name = _DEF_NAMES.unique(unescape(raw), self._def_names)
            self._def_names.add(name)
            self._recursive[target_pointer] = name
        return f"#/$defs/{escape(name)}"

    def _resolve(self, target_pointer: str, ref: str, pointer: str) -> Any:
        try:
            return resolve(self._root, target_pointer)
        except PointerError:
            raise SpecError(
                f"$ref {ref!r} points at nothing", pointer=f"{pointer}/$ref", source=self._source
            ) from None


def openai_parameters(schema: Mapping[str, Any], *, source: str | None = None) -> dict[str, Any]:
    """A parameter schema that OpenAI-compatible servers accept, built from ``schema``.

    The result is a new schema (``schema`` is never changed, and nothing in the result
    is shared with it):

    - the top level is ``{"type": "object", "properties": {...}, ...}``;
    - local ``$ref`` (``#/$defs/...``, ``#/definitions/...``, any JSON pointer) are
      replaced by what they point at; keywords beside a ``$ref`` override the
      definition's own. A definition that refers to itself, directly or through
      others, cannot be inlined: it is kept under a top-level ``$defs`` and its
      references point there. References to other documents are left as they are;
    - object schemas without ``properties`` get an empty one, array schemas without
      ``items`` get ``{}`` (OpenAI rejects both as they are);
    - the keywords in `DROPPED_KEYWORDS` are removed, and definition blocks that
      nothing uses are dropped. Everything else (descriptions, ``enum``, ``default``,
      ``required``, ``anyOf``, ``format``, ``examples``) is kept.

    Each definition is normalized once; a definition used in several places is one
    shared object in the result. Treat the result as immutable, like the declaration's.

    Args:
        schema: A JSON Schema of an object (a tool's parameters).
        source: What the schema belongs to, named in errors (e.g. ``tool:search``).

    Raises:
        SpecError: a local ``$ref`` points at nothing (``pointer`` is where the
            reference is, within ``schema``).
    """
    return _Normalizer(schema, source).run()


def openai_strict_parameters(
    schema: Mapping[str, Any], *, source: str | None = None
) -> DialectSchema | None:
    """A parameter schema for OpenAI's strict mode, or None when ``schema`` has none.

    Built from `openai_parameters`' schema: every object gets all its properties in
    ``required`` and ``additionalProperties: false``; an optional property becomes
    nullable, and `DialectSchema.restore` drops the ``null`` a model sends for it (where
    the tool itself does not accept ``null``). ``oneOf`` becomes ``anyOf``; ``allOf`` of
    objects is merged; keywords strict mode refuses (``default``, ``examples``,
    ``minLength``, ``uniqueItems``, other formats...) are left out; ``not`` is dropped.

    None when the schema cannot be strict without refusing what the tool accepts, or
    without blurring what the model means: an optional property that itself accepts
    ``null`` (strict mode would make the model send ``null`` for "leave it out", and the
    tool could not tell it from a real ``null``, which clears a field in a PATCH), an
    object with free-form or pattern keys (``additionalProperties`` other than false,
    ``patternProperties``, no properties at all below the top level), a value of any
    type (no ``type``/``enum``/``anyOf``), a tuple, ``if``/``then``/``else``,
    ``dependentSchemas``, enum values that are objects, references to other
    documents, or a schema past `STRICT_LIMITS`.

    Args:
        schema: A JSON Schema of an object (a tool's parameters).
        source: What the schema belongs to, named in errors (e.g. ``tool:search``).

    Raises:
        SpecError: a local ``$ref`` points at nothing.
    """
    return strict_form(openai_parameters(schema, source=source))


def to_openai_tools(
    declarations: Iterable[ToolDeclaration], *, strict: bool = False
) -> tuple[list[dict[str, Any]], ToolCallMap]:
    """Chat Completions ``tools`` for ``declarations``, and the map back.

    Args:
        declarations: The tools' declarations.
        strict: Offer each tool whose schema allows it in strict mode
            (``"strict": true`` and `openai_strict_parameters`' schema); the others
            are offered as they are, without ``strict``.

    Returns:
        ``[{"type": "function", "function": {"name", "description", "parameters"}}]``
        with provider-legal names, and the `ToolCallMap` to turn the names and
        arguments in the model's calls back into the declarations' own (a
        `ToolNameMap`).

    Raises:
        ToolDefinitionError: two declarations have the same name.
        SpecError: a parameter schema has a broken local ``$ref``.
    """
    decls = list(declarations)
    names = ToolNameMap.build(d.name for d in decls)
    tools: list[dict[str, Any]] = []
    schemas: dict[str, DialectSchema] = {}
    for decl in decls:
        source = f"tool:{decl.name}"
        function: dict[str, Any] = {
            "name": names.to_provider(decl.name),
            "description": decl.description,
        }
        converted = openai_strict_parameters(decl.parameters, source=source) if strict else None
        if converted is None:
            function["parameters"] = openai_parameters(decl.parameters, source=source)
        else:
            function["parameters"] = converted.schema
            function["strict"] = True
            schemas[decl.name] = converted
        tools.append({"type": "function", "function": function})
    return tools, call_map(names, schemas)
