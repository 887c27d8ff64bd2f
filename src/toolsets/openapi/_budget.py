"""Declarations sized for a model: an operation's arguments schema, made to fit a byte
budget by summarizing what the model rarely needs, while calls are still checked against
the whole schema.

The view is never stricter than the schema it stands for, so whatever is valid under
the schema is valid under the view: a summarized branch keeps only its type, a trimmed
enum becomes a list in the description, and where loosening a part would make the
whole stricter or change its meaning (under ``not``, ``oneOf``, ``if``, ``contains``,
beside ``unevaluatedProperties``/``unevaluatedItems``) the keyword is left out of the
view instead when any part of it would change (the description says more is checked).
Calls are checked against the whole schema (`RestApiTool.call_declaration`), before the
user is asked to confirm: a model that sends the full structure of a summarized branch
is checked and sent as before.

What is given up, in this order, until the declaration fits (each step deterministic):

1. Long descriptions are cut to their first sentences, long enums to their first values
   (the rest counted in the description).
2. Nested objects are summarized, the deepest first: a branch below depth ``n`` (the
   top-level arguments are depth 0; ``n`` goes down from the deepest that fits to 0)
   becomes ``{"type": "object", "description": "<its description>. Properties: a
   (required), b, ..."}`` (the required ones first, all of them named); shared
   definitions are then written where they are used.
3. The descriptions of optional top-level arguments, then of the required ones, then the
   tool's description beyond its first sentences.

The top-level arguments and which of them are required always stay. So do the properties
of an argument that stands for a whole request body (an optional body that requires
some of its properties, see `toolsets.openapi._schema`): they are viewed as top-level
arguments are, as they would be had the body been lifted.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Collection, Mapping
from typing import Any

import pydantic_core

__all__ = ["DEFAULT_DECLARATION_BUDGET", "declaration_size", "fit_declaration"]

DEFAULT_DECLARATION_BUDGET = 4096
"""Bytes a declaration (description and parameters, as compact JSON) may take by
default: about a thousand tokens."""

DESCRIPTION_CHARS = 160
"""A description longer than this is cut to the sentences that fit (once a declaration
is over its budget)."""
SHORT_DESCRIPTION_CHARS = 80
"""The length descriptions are cut to in the last resort."""
ENUM_VALUES = 16
"""An enum with more values is trimmed to this many, the rest counted."""
SUMMARY_NAMES = 24
"""Property names listed in the summary of a branch."""
MAX_DEPTH = 12
"""The deepest view tried: beyond, a schema is summarized whatever the budget."""
_MAX_CALLS = 48
"""Schemas nested in one another (items, combinations included) before a branch is
summarized whatever its depth."""

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_SCHEMA_MAPS = ("properties", "patternProperties", "dependentSchemas", "$defs")
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
_SCHEMA_VALUES = (
    *("items", "additionalProperties", "not", "contains", "propertyNames"),
    *("if", "then", "else", "unevaluatedItems", "unevaluatedProperties"),
)
_NESTING = frozenset(("properties", "additionalProperties", "patternProperties"))
"""Keywords whose schemas are one level deeper (an object's members); array items and
combinations stay at their schema's depth."""
_ARRAY_ONLY = frozenset(("uniqueItems", "minItems", "maxItems", "minContains", "maxContains"))
"""Keywords that constrain arrays only: left out of the view of a schema of another type."""
_EXACT = ("not", "oneOf", "if", "contains")
"""Keywords whose schemas cannot be loosened without the whole becoming stricter (a
looser ``not`` rejects more; two loosened ``oneOf`` members may both match; a looser
``if`` picks another branch; a looser ``contains`` counts more items for
``maxContains``): left out of the view when their view would differ."""
_UNEVALUATED = ("unevaluatedProperties", "unevaluatedItems")
"""Keywords that depend on what their siblings evaluate: left out of the view of a
schema any part of which is loosened."""
_MORE_CHECKED = "More constraints are checked when it is called."
_STRUCTURE = frozenset(
    (*_SCHEMA_MAPS, *_SCHEMA_LISTS, *_SCHEMA_VALUES, "$ref", "required", "dependentRequired")
)


def declaration_size(description: str, parameters: Mapping[str, Any]) -> int:
    """The bytes the model is sent for a declaration's description and parameters:
    compact JSON, UTF-8, as the providers' HTTP APIs receive it (what
    ``json.dumps(..., separators=(",", ":"), ensure_ascii=False)`` writes)."""
    return _size({"description": description, "parameters": parameters})


def fit_declaration(
    description: str,
    parameters: Mapping[str, Any],
    budget: int | None,
    *,
    bodies: Collection[str] = (),
) -> tuple[str, Mapping[str, Any]]:
    """``description`` and ``parameters`` as the model is sent them: as they are when
    they fit in ``budget`` bytes (or there is none), else summarized as the module says.
    A declaration that cannot fit even with every step taken is as small as they make
    it (the top-level arguments always stay). ``bodies`` names the top-level arguments
    that stand for a whole request body: their properties are kept as top-level
    arguments are."""
    if budget is None or _fits(description, parameters, budget):
        return description, parameters
    defs = parameters.get("$defs")
    defs = defs if isinstance(defs, Mapping) else {}
    room = budget - len(description)
    flat = frozenset(bodies)
    tidied = _Viewer(defs, limit=None, room=room, flat=flat).attempt(parameters)
    if tidied is not None and _fits(description, tidied, budget):
        return description, tidied
    # The shallowest views first: each is at most as big as the next, and the first
    # over the budget ends the search (a view is given up as soon as it is too big).
    fitting: Mapping[str, Any] | None = None
    for limit in range(MAX_DEPTH + 1):
        view = _Viewer(defs, limit=limit, room=room, flat=flat).attempt(parameters)
        if view is None or not _fits(description, view, budget):
            break
        fitting = view
    if fitting is not None:
        deepened = _deepened(description, parameters, defs, fitting, limit, budget, flat)
        return description, deepened
    smallest = _Viewer(defs, limit=0, room=None, flat=flat).view(parameters, 0)
    return _last_resort(description, smallest, budget, flat)


def _deepened(
    description: str,
    parameters: Mapping[str, Any],
    defs: Mapping[str, Any],
    view: Mapping[str, Any],
    limit: int,
    budget: int,
    flat: frozenset[str] = frozenset(),
) -> Mapping[str, Any]:
    """``view`` (every branch summarized below depth ``limit - 1``) with the top-level
    arguments that still fit shown one level deeper, then deeper again, those that
    grow least first: the biggest branches are the ones left summarized."""
    whole = parameters.get("properties")
    shown = view.get("properties")
    if not isinstance(whole, Mapping) or not isinstance(shown, Mapping):
        return view
    properties = dict(shown)
    out = {**view, "properties": properties}
    limits = dict.fromkeys(properties, limit - 1)
    sizes = {name: _size(schema) for name, schema in properties.items()}
    room = budget - declaration_size(description, out)
    # Views only grow with depth and the room only shrinks: an argument that did not
    # fit once never will, nor one whose deeper view is the same.
    growing = [name for name in properties if _is_branch_view(whole[name])]
    while growing:
        grown: list[tuple[int, str, Any, int]] = []
        for name in growing:
            limits[name] += 1
            viewer = _Viewer(defs, limit=limits[name], room=room, flat=flat)
            deeper = viewer.attempt_argument(name, whole[name])
            if deeper is None or limits[name] >= MAX_DEPTH:
                continue
            deeper_size = _size(deeper)
            if 0 < deeper_size - sizes[name] <= room:
                grown.append((deeper_size - sizes[name], name, deeper, deeper_size))
        growing = []
        # The rest of the declaration is the same: its size changes by the growth.
        for growth, name, deeper, deeper_size in sorted(grown, key=lambda g: (g[0], g[1])):
            if growth <= room:
                properties[name] = deeper
                sizes[name] = deeper_size
                room -= growth
                growing.append(name)
        growing.sort(key=list(properties).index)
    return out


def _is_branch_view(schema: Any) -> bool:
    return isinstance(schema, Mapping) and (_is_branch(schema) or "$ref" in schema)


def _size(value: Any) -> int:
    return len(pydantic_core.to_json(value))  # compact, UTF-8, three times json's speed


def _fits(description: str, parameters: Mapping[str, Any], budget: int) -> bool:
    """Whether the declaration takes ``budget`` bytes or fewer (a huge one is known
    not to long before it would be written out)."""
    defs = parameters.get("$defs")
    huge = isinstance(defs, Mapping) and len(defs) > _FEW_DEFINITIONS
    if huge and _text_over(parameters, budget - len(description)) < 0:
        return False
    return declaration_size(description, parameters) <= budget


_FEW_DEFINITIONS = 16
"""Fewer definitions than this are written out at once (JSON is written in C), more
first counted until the budget is passed (a declaration may take megabytes)."""


def _text_over(node: Any, room: int) -> int:
    """``room`` less the characters of the keys and strings in ``node`` (which its JSON
    takes at least), stopping once below 0."""
    kind = type(node)  # the schemas are made of dicts and lists: no isinstance (slow)
    if kind is str:
        return room - len(node)
    if kind is dict:
        for key, value in node.items():
            room -= len(key)
            if type(value) is str:
                room -= len(value)
            elif type(value) in _CONTAINERS:
                room = _text_over(value, room)
            if room < 0:
                break
    elif kind is list:
        for value in node:
            room = _text_over(value, room)
            if room < 0:
                break
    return room


_CONTAINERS = (dict, list)


def _last_resort(
    description: str, view: dict[str, Any], budget: int, flat: frozenset[str] = frozenset()
) -> tuple[str, dict[str, Any]]:
    """Step 3, until it fits: the top-level arguments' descriptions shortened (optional
    ones first, a whole body's properties with them), the tool's description cut to a
    paragraph, the arguments' descriptions dropped (optional ones first), and the tool's
    description cut to a sentence or two."""
    properties: dict[str, Any] = dict(view.get("properties") or {})
    view = {**view, "properties": properties}
    required = set(view.get("required") or ())
    places: list[tuple[dict[str, Any], str]] = [
        (properties, n) for n in properties if n not in required
    ]
    for body in [n for n in properties if n in flat]:
        members = properties[body].get("properties") if isinstance(properties[body], dict) else None
        if isinstance(members, dict):
            members = dict(members)
            properties[body] = {**properties[body], "properties": members}
            needed = set(properties[body].get("required") or ())
            places.extend((members, n) for n in members if n not in needed)
            places.extend((members, n) for n in members if n in needed)
    places.extend((properties, n) for n in properties if n in required)
    for step in ("shorten", "paragraph", "drop"):
        if step == "paragraph":
            description = shortened(description, 4 * DESCRIPTION_CHARS)
            if declaration_size(description, view) <= budget:
                return description, view
            continue
        for holder, name in places:
            schema = holder[name]
            if not isinstance(schema, dict) or "description" not in schema:
                continue
            if step == "shorten":
                told = shortened(schema["description"], SHORT_DESCRIPTION_CHARS)
                holder[name] = {**schema, "description": told}
            else:
                holder[name] = {k: v for k, v in schema.items() if k != "description"}
            if declaration_size(description, view) <= budget:
                return description, view
    return shortened(description, DESCRIPTION_CHARS), view


def shortened(text: Any, limit: int) -> Any:
    """``text`` cut to the sentences that fit in ``limit`` characters (the first one cut
    at a word, with an ellipsis, when it alone is longer)."""
    if not isinstance(text, str) or len(text) <= limit:
        return text
    return _shortened(text, limit)


@functools.lru_cache(maxsize=4096)  # a spec repeats its descriptions (parameters, refs)
def _shortened(text: str, limit: int) -> str:
    kept = ""
    for sentence in _SENTENCE_END.split(text.strip()):
        joined = f"{kept} {sentence}" if kept else sentence
        if len(joined) > limit:
            break
        kept = joined
    if kept:
        return kept
    cut = text[: limit - 1].rsplit(None, 1)[0] if " " in text[: limit - 1] else text[: limit - 1]
    return cut.rstrip(",;:") + "…"


class _TooBig(Exception):
    """The view being made is bigger than the room it was given."""


class _Viewer:
    """Makes the model's view of a schema: descriptions and enums tidied, and with a
    ``limit``, every branch nested deeper summarized and definitions written in place.
    With ``room``, gives up (`attempt` returns None) once the view's keys and strings
    alone take more characters."""

    def __init__(
        self,
        defs: Mapping[str, Any],
        *,
        limit: int | None,
        room: int | None,
        flat: frozenset[str] = frozenset(),
    ) -> None:
        self._defs = defs
        self._limit = limit
        self._room = room
        self._flat = flat
        """Top-level arguments standing for a whole body: their properties are viewed at
        the top-level arguments' depth."""
        self._loosened = 0
        """How many parts were loosened (enums trimmed, branches summarized) so far."""
        self._long_enums: dict[str, bool] = {}

    def attempt(self, parameters: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """The view of ``parameters``, or None when it is bigger than the room."""
        view: Mapping[str, Any] | None = self.attempt_at(parameters, 0)
        return view

    def attempt_at(self, node: Any, depth: int) -> Any:
        """The view of ``node`` at ``depth``, or None when it is bigger than the room."""
        try:
            return self.view(node, depth)
        except _TooBig:
            return None

    def attempt_argument(self, name: str, node: Any) -> Any:
        """The view of top-level argument ``name``, or None when it is bigger than the
        room."""
        try:
            return self._argument(name, node, 0)
        except _TooBig:
            return None

    def _argument(self, name: str, node: Any, calls: int) -> Any:
        """A top-level argument's view; a whole body's properties at its own depth."""
        members = node.get("properties") if isinstance(node, Mapping) else None
        if name not in self._flat or not isinstance(members, Mapping):
            return self.view(node, 1, calls)
        rest = self.view({k: v for k, v in node.items() if k != "properties"}, 0, calls)
        shown = {n: self.view(s, 1, calls) for n, s in members.items()}
        out = {
            k: (shown if k == "properties" else rest[k])
            for k in node
            if k in rest or k == "properties"
        }
        out.update(rest)  # a note the view added (the description is then its own)
        return out

    def _spend(self, text: str) -> None:
        if self._room is not None:
            self._room -= len(text)
            if self._room < 0:
                raise _TooBig

    def view(self, node: Any, depth: int, calls: int = 0) -> Any:
        if not isinstance(node, Mapping):
            return node
        if self._limit is not None:
            node = self._inlined(node)
            # calls: a definition made of itself through items or combinations only
            # never gets deeper, but is summarized all the same.
            if (depth > self._limit or calls > _MAX_CALLS) and _is_branch(node):
                return self._summary(node)
        calls += 1
        out: dict[str, Any] = {}
        note = ""
        loosened = self._loosened
        left_out: list[str] = []
        for key, value in node.items():
            self._spend(key)
            if key in _EXACT:
                before = self._loosened
                shown = (
                    [self.view(s, depth, calls) for s in value]
                    if key == "oneOf" and isinstance(value, list)
                    else self.view(value, depth, calls)
                )
                if self._loosened != before or (self._limit is None and self._long_enum(value)):
                    left_out.append(key)
                else:
                    out[key] = shown
            elif key == "$defs":
                if self._limit is None and isinstance(value, Mapping):
                    out[key] = {name: self.view(s, depth, calls) for name, s in value.items()}
            elif key == "properties" and depth == 0 and self._flat and isinstance(value, Mapping):
                out[key] = {name: self._argument(name, s, calls) for name, s in value.items()}
            elif key in _SCHEMA_MAPS and isinstance(value, Mapping):
                deeper = depth + (key in _NESTING)
                out[key] = {name: self.view(s, deeper, calls) for name, s in value.items()}
            elif key in _SCHEMA_LISTS and isinstance(value, list):
                out[key] = [self.view(s, depth, calls) for s in value]
            elif key in _SCHEMA_VALUES:
                out[key] = self.view(value, depth + (key in _NESTING), calls)
            elif (
                key in _ARRAY_ONLY and isinstance(node.get("type"), str) and node["type"] != "array"
            ):
                continue  # no constraint on anything else (Kubernetes' strings carry it)
            elif key == "description":
                out[key] = shortened(value, DESCRIPTION_CHARS)
                if isinstance(out[key], str):
                    self._spend(out[key])
            elif key == "enum" and isinstance(value, list) and len(value) > ENUM_VALUES:
                listed = ", ".join(json.dumps(v, ensure_ascii=False) for v in value[:ENUM_VALUES])
                note = f"One of: {listed}, … ({len(value)} values)."
                self._spend(note)
                self._loosened += 1
            else:
                out[key] = value
        if left_out or (self._loosened != loosened and any(k in out for k in _UNEVALUATED)):
            if "if" in left_out:  # without it, then and else apply to nothing
                out.pop("then", None)
                out.pop("else", None)
            for key in _UNEVALUATED:
                out.pop(key, None)
            self._spend(_MORE_CHECKED)
            note = f"{note} {_MORE_CHECKED}" if note else _MORE_CHECKED
        if note:  # the enum, trimmed, is no longer a constraint: a looser view
            told = out.get("description")
            out["description"] = f"{told} {note}" if told else note
        return out

    def _long_enum(self, node: Any, hops: int = 0) -> bool:
        """Whether ``node`` or a definition it refers to has an enum trimmed in a view
        that leaves definitions in ``$defs`` (their views are made apart)."""
        if hops > 4 * MAX_DEPTH:
            return True  # deep enough: taken as loosened, the keyword is left out
        if isinstance(node, list):
            return any(self._long_enum(v, hops + 1) for v in node)
        if not isinstance(node, Mapping):
            return False
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            name = ref[len("#/$defs/") :]
            known = self._long_enums.get(name)
            if known is None:
                self._long_enums[name] = False  # a definition made of itself
                known = self._long_enums[name] = self._long_enum(self._target(ref), hops + 1)
            if known:
                return True
        enum = node.get("enum")
        if isinstance(enum, list) and len(enum) > ENUM_VALUES:
            return True
        return any(
            self._long_enum(v, hops + 1)
            for k, v in node.items()
            if k not in ("enum", "const", "default", "examples", "$defs")
            and isinstance(v, Mapping | list)
        )

    def _inlined(self, node: Mapping[str, Any]) -> Mapping[str, Any]:
        """``node`` with the definition it refers to written in place (its own keywords,
        a description say, over the definition's)."""
        seen = 0
        while isinstance(node.get("$ref"), str) and seen < MAX_DEPTH:
            target = self._target(node["$ref"])
            if target is None:
                return node
            node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
            seen += 1
        return node

    def _target(self, ref: str) -> Mapping[str, Any] | None:
        prefix = "#/$defs/"
        if not ref.startswith(prefix):
            return None
        target = self._defs.get(ref[len(prefix) :].replace("~1", "/").replace("~0", "~"))
        return target if isinstance(target, Mapping) else None

    def _summary(self, node: Mapping[str, Any]) -> dict[str, Any]:
        """A branch in one line: its type (when it says one), its description and the
        names of its properties (those of what it combines too)."""
        names: list[str] = []
        self._names(node, names, 0)
        told = shortened(node.get("description"), SHORT_DESCRIPTION_CHARS)
        parts = [_sentence(told) if isinstance(told, str) and told else ""]
        if names:
            # The required ones first, each said so, and never left out of the list.
            required = self._required_names(node)
            ordered = [n for n in names if n in required] + [n for n in names if n not in required]
            shown = ordered[: max(SUMMARY_NAMES, len(required))]
            more = len(names) - len(shown)
            listed = ", ".join(f"{n} (required)" if n in required else n for n in shown)
            listed += f", … ({more} more)" if more > 0 else ""
            parts.append(f"Properties: {listed}.")
        elif node.get("type") == "array" or "items" in node:
            parts.append("A list.")
        self._loosened += 1
        out: dict[str, Any] = {}
        kind = node.get("type")
        if isinstance(kind, str | list):
            out["type"] = kind
        summary = " ".join(p for p in parts if p)
        self._spend(summary)
        if summary:
            out["description"] = summary
        return out

    def _required_names(self, node: Mapping[str, Any]) -> set[str]:
        """The property names ``node`` requires, itself or through its ``allOf``
        members (those of ``anyOf``/``oneOf`` members hold only for that member)."""
        node = self._inlined(node)
        found: set[str] = set()
        members = node.get("allOf")
        for schema in (node, *(members if isinstance(members, list) else ())):
            names = self._inlined(schema).get("required") if isinstance(schema, Mapping) else None
            if isinstance(names, list):
                found.update(n for n in names if isinstance(n, str))
        return found

    def _names(self, node: Any, names: list[str], hops: int) -> None:
        """The property names of ``node``, of its combinations' members and its items."""
        if not isinstance(node, Mapping) or hops > MAX_DEPTH or len(names) > 4 * SUMMARY_NAMES:
            return
        node = self._inlined(node)
        properties = node.get("properties")
        if isinstance(properties, Mapping):
            names.extend(n for n in properties if n not in names)
        for key in ("allOf", "anyOf", "oneOf"):
            members = node.get(key)
            if isinstance(members, list):
                for member in members:
                    self._names(member, names, hops + 1)
        if "properties" not in node:
            self._names(node.get("items"), names, hops + 1)


def _sentence(text: str) -> str:
    return text if text.endswith(("…", ".", "!", "?")) else text + "."


def _is_branch(node: Mapping[str, Any]) -> bool:
    """Whether summarizing ``node`` saves anything: it has structure (members, items,
    combinations), not only a type and constraints."""
    return any(key in _STRUCTURE for key in node) or (
        isinstance(node.get("enum"), list) and len(node["enum"]) > ENUM_VALUES
    )
