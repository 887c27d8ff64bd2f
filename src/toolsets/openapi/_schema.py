"""The schema a model sees for an operation: one object holding every path, query, header
and cookie parameter and the body, in plain JSON Schema (2020-12), compact.

Spec schemas are translated (OpenAPI 3.0's ``nullable`` and boolean exclusive bounds, Swagger
2.0's dialect), stripped of what only costs tokens (examples, XML, extensions, titles), and
properties a client must not send (``readOnly``) are left out. Referenced schemas become
shared definitions in ``$defs`` (a recursive one refers to itself there, never expanded);
each is translated once per toolset and shared by every operation that uses it.

An object body's properties are arguments of their own (lifted: ``body_<name>`` where a
parameter has the name), unless the body is optional and requires some of them: it is
then one optional ``body`` argument whose ``required`` stands, so that a body is sent
whole or not at all (lifted, its properties could be given without those it requires).
A body that is not an object, or combines schemas, is one ``body`` argument too. The
arguments object says ``additionalProperties: false`` (an argument it does not name is
refused), unless a lifted body takes more properties: then it says what they may be.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from toolsets._errors import SpecError
from toolsets._http import essence, is_json, is_text
from toolsets._jsonschema import (
    DEFINITION_KEYWORDS,
    PRE_2020_KEYWORDS,
    SCHEMA_KEYWORDS,
    SCHEMA_LIST_KEYWORDS,
    SCHEMA_MAP_KEYWORDS,
    unescape,
)
from toolsets._names import NameRule
from toolsets._validation import TrustedSchema
from toolsets.openapi._document import Resolver, join_pointer
from toolsets.openapi._model import Body, MediaType, Operation
from toolsets.openapi._serialize import is_file, is_raw

__all__ = ["Argument", "OperationSchema", "SchemaBuilder", "pick_media_type", "plain_text"]

_KEEP = frozenset(
    (
        "type",
        "enum",
        "const",
        "default",
        "description",
        "format",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "minLength",
        "maxLength",
        "pattern",
        "minItems",
        "maxItems",
        "uniqueItems",
        "minProperties",
        "maxProperties",
        "contentEncoding",
        "contentMediaType",
        "dependentRequired",
        "minContains",
        "maxContains",
    )
)
# The output is draft 2020-12, so the keywords earlier drafts spelled otherwise
# (additionalItems, dependencies, definitions) are not carried over; "properties" is
# converted apart (read-only ones are left out), and definitions are reached through
# "$ref" only.
_SUBSCHEMA = SCHEMA_KEYWORDS - PRE_2020_KEYWORDS
_SUBSCHEMA_LISTS = SCHEMA_LIST_KEYWORDS
_SUBSCHEMA_MAPS = SCHEMA_MAP_KEYWORDS - PRE_2020_KEYWORDS - DEFINITION_KEYWORDS - {"properties"}
"""Keywords whose value maps names (or patterns) to schemas; all of them are kept: a
dropped ``patternProperties`` beside ``additionalProperties: false`` would forbid what
the spec allows."""
_TYPES = frozenset(("string", "number", "integer", "boolean", "array", "object", "null"))


def _is_number(value: Any, openapi30: bool = False) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_count(value: Any, openapi30: bool = False) -> bool:
    return _is_number(value) and value >= 0 and float(value).is_integer()


def _is_type(value: Any, openapi30: bool) -> bool:
    if isinstance(value, str):
        return value in _TYPES
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(t, str) and t in _TYPES for t in value)
        and len(set(value)) == len(value)
    )


def _is_text(value: Any, openapi30: bool = False) -> bool:
    return isinstance(value, str)


_EXPECTED: Mapping[str, tuple[Callable[[Any, bool], bool], str]] = {
    "type": (_is_type, "a JSON Schema type or a list of them"),
    "enum": (lambda v, _: isinstance(v, list), "a list"),
    "description": (_is_text, "a string"),
    "format": (_is_text, "a string"),
    "pattern": (_is_text, "a string"),
    "contentEncoding": (_is_text, "a string"),
    "contentMediaType": (_is_text, "a string"),
    "minimum": (_is_number, "a number"),
    "maximum": (_is_number, "a number"),
    "exclusiveMinimum": (lambda v, _: isinstance(v, int | float), "a number"),
    "exclusiveMaximum": (lambda v, _: isinstance(v, int | float), "a number"),
    "multipleOf": (lambda v, _: _is_number(v) and v > 0, "a number above 0"),
    "uniqueItems": (lambda v, _: isinstance(v, bool), "true or false"),
    "dependentRequired": (
        lambda v, _: (
            isinstance(v, Mapping)
            and all(isinstance(n, list) and all(isinstance(x, str) for x in n) for n in v.values())
        ),
        "an object of lists of property names",
    ),
    **{
        key: (_is_count, "a whole number, 0 or more")
        for key in (
            "minLength",
            "maxLength",
            "minItems",
            "maxItems",
            "minProperties",
            "maxProperties",
            "minContains",
            "maxContains",
        )
    },
}
"""What each kept keyword's value must be (JSON Schema's meta-schema): a value a validator
trips over (``type: date``, ``minimum: "5"``, ``multipleOf: 0``) leaves its operation out
at load, rather than failing every call, or the model request that declares it."""


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


_IGNORED_HEADERS = frozenset(
    (
        *("accept", "content-type", "authorization"),
        *("content-length", "host", "transfer-encoding", "connection", "keep-alive"),
        *("proxy-connection", "te", "trailer", "upgrade", "expect"),
    )
)
"""Header parameters left out: those OpenAPI says to ignore (the request sets them
itself), and those the HTTP client computes (framing and connection headers: a value
the model gives would contradict the request, and HTTP clients refuse it)."""
_COMPONENT = re.compile(r"/(?:components/schemas|definitions)/[^/]+")
"""Where a spec's named schemas are (OpenAPI 3, Swagger 2.0): each keeps its name."""
_DEF_NAMES = NameRule(
    illegal=re.compile(r"[^A-Za-z0-9_.-]+"), strip=True, fallback="schema", dedupe="number"
)
"""Names under ``$defs``: a schema's own name, made safe for a JSON pointer and a model;
clashes numbered (``Repo``, ``Repo_2``)."""
_LINK = re.compile(r"\[([^\]]+)\]\((?:https?://|/)[^)\s]*\)")
_ANY_LINK = r"\[[^\]]+\]\((?:https?://|/)[^)\s]*\)"
_IN_SENTENCE = r"(?:[^.\n\[]|\n(?![ \t]*\n))"
"""A character of a sentence that is not a link: a line break too, but not a blank line
(a sentence may wrap, as GitHub's do: '... see "[A](...)"\nand "[B](...)."')."""
_POINTER = re.compile(
    # A sentence (at the start of a line, or after another one ends) that sends the reader
    # to a link: "For more information, see [X](...).", "See [X](...) for ...".
    r"(?:^| (?<=[.!?] )| (?<=[.!?]\" ))"  # the space first: most places fail fast
    r"(?:(?:For (?:more|further) (?:information|details)|For the list|To learn more)\b"
    r"[^.\n\[]*?,? see|See|Refer to)\b"
    rf"(?:{_IN_SENTENCE}|{_ANY_LINK})*?{_ANY_LINK}(?:{_IN_SENTENCE}|{_ANY_LINK})*(?:\.\"?|$)",
    re.MULTILINE,
)
_BLANK_LINES = re.compile(r"\n[ \t]*\n\s*")


def plain_text(description: str) -> str:
    """A description with its Markdown links reduced to their text, and sentences that only
    point to a link left out: a model cannot follow them, and in a large spec (GitHub's)
    they are a twentieth of every declaration."""
    if "](" not in description:
        return description
    text = _POINTER.sub("", description)
    if len(text) != len(description):
        text = _BLANK_LINES.sub("\n\n", text)
        text = text.strip()
    return _LINK.sub(r"\1", text)


@dataclass(frozen=True, kw_only=True)
class Argument:
    """Where one of the model's arguments goes."""

    location: Literal["path", "query", "header", "cookie", "body", "body_property"]
    """A parameter's location; ``body`` for the whole body; ``body_property`` for one
    property of an object body whose properties were lifted to the top level."""
    name: str
    """The parameter's or property's name on the wire (``""`` for the whole body)."""


@dataclass(frozen=True, kw_only=True)
class OperationSchema:
    """The model's view of an operation, and the way back to the request."""

    parameters: TrustedSchema
    """The JSON Schema of the arguments object (draft 2020-12, valid by construction)."""
    arguments: Mapping[str, Argument]
    """Argument name → where it goes."""
    media_type: MediaType | None
    """The body's media type that will be sent, if the operation has a body."""
    extra_to_body: bool = False
    """Arguments the schema does not name go into the body: its properties were lifted,
    and it declares ``additionalProperties`` (or ``patternProperties``) of its own, which
    the schema's top level then carries. Otherwise such arguments are refused, and the
    schema says ``additionalProperties: false``."""


def pick_media_type(body: Body | None) -> MediaType | None:
    """The media type to send a body as: JSON first, then forms, then the spec's first
    (a wildcard, ``*/*`` or ``application/*``, is sent as JSON unless it is a file)."""
    if body is None or not body.media_types:
        return None

    def rank(media: MediaType) -> int:
        kind = essence(media.content_type)
        if is_json(kind):
            return 0
        if kind == "application/x-www-form-urlencoded":
            return 1
        if kind == "multipart/form-data":
            return 2
        return 3

    return min(body.media_types, key=rank)  # min keeps the first of equal rank


class SchemaBuilder:
    """Translates one spec's schemas; shared by all its operations."""

    def __init__(self, resolver: Resolver, *, openapi30: bool) -> None:
        self._resolver = resolver
        self._openapi30 = openapi30
        self._names: dict[tuple[str, str], str] = {}
        self._taken: set[str] = set()
        self._defs: dict[str, dict[str, Any]] = {}
        self._deps: dict[str, frozenset[str]] = {}
        self._failed: dict[tuple[str, str], SpecError] = {}
        self._made: list[tuple[str, str]] = []
        """The definitions in the order they were begun (to undo those a failure spoils)."""
        self._arguments: dict[tuple[str, str], Argument] = {}
        """One (immutable) Argument per place: tens of thousands fewer objects in a big spec."""

    def operation(self, op: Operation, base: str) -> OperationSchema:
        """The schema of ``op``'s arguments."""
        properties: dict[str, Any] = {}
        required: list[str] = []
        arguments: dict[str, Argument] = {}
        used: set[str] = set()

        def add(name: str, place: tuple[Any, str], schema: dict[str, Any], needed: bool) -> None:
            argument = self._arguments.get(place)
            if argument is None:
                location, wire_name = place
                argument = self._arguments[place] = Argument(location=location, name=wire_name)
            key = name
            if key in arguments:  # the first location keeps the plain name
                key = f"{argument.location.split('_')[0]}_{name}"
                suffix = 2
                while key in arguments:
                    key = f"{argument.location.split('_')[0]}_{name}_{suffix}"
                    suffix += 1
            arguments[key] = argument
            properties[key] = schema
            if needed:
                required.append(key)

        for param in op.parameters:
            if param.location == "header" and param.name.lower() in _IGNORED_HEADERS:
                continue
            where = join_pointer(op.pointer, "parameters", param.name)
            schema = (
                self.convert(param.schema, param.base or base, where, used) if param.schema else {}
            )
            if param.description and "description" not in schema:
                schema = {**schema, "description": plain_text(param.description)}
            if param.required and param.location == "query":
                schema = _not_empty(schema)
            add(
                param.name,
                (param.location, param.name),
                schema,
                param.required,
            )

        media = pick_media_type(op.body)
        extra: dict[str, Any] = {}
        if op.body is not None and media is not None:
            where = join_pointer(op.pointer, "requestBody", "content", media.content_type, "schema")
            raw = media.schema or {}
            base = media.base or base  # a body from another file refers from there
            target, target_base, target_pointer = self._resolver.resolve(raw, base, where)
            wildcard = essence(media.content_type) in ("*/*", "application/*")
            if wildcard and isinstance(target, Mapping) and not is_file(target):
                media = dataclasses.replace(media, content_type="application/json")
            multipart = media.content_type.lower().startswith("multipart/")
            if is_raw(media.content_type):
                schema = self._raw_body(media.content_type, raw, target, base, where, used)
                if op.body.description and "description" not in schema:
                    schema = {**schema, "description": plain_text(op.body.description)}
                add("body", ("body", ""), schema, op.body.required)
            elif _is_plain_object(target):
                target_base = self._resolver.inner_base(target, target_base)
                members, needed = self._members(
                    target, target_base, target_pointer, base, multipart, used
                )
                more = self._extra(target, target_base, target_pointer, used)
                if op.body.required or not needed:
                    for name, schema in members.items():
                        add(name, ("body_property", name), schema, name in needed)
                    extra = more
                else:
                    add(
                        "body",
                        ("body", ""),
                        self._whole(op.body, target, members, needed, more),
                        False,
                    )
            else:
                schema = self.convert(raw, base, where, used)
                if _is_form(media.content_type) and not _may_be_object(target, media.content_type):
                    schema = {"type": "object"}
                if op.body.description and "description" not in schema:
                    schema = {**schema, "description": plain_text(op.body.description)}
                add("body", ("body", ""), schema, op.body.required)

        parameters: dict[str, Any] = {"type": "object", "properties": properties}
        if required:
            parameters["required"] = required
        # Arguments it does not name are refused (`RestApiTool` names them), unless they
        # go into a lifted body that takes more: the schema says which, for the model.
        parameters.update(extra or {"additionalProperties": False})
        if used:
            parameters["$defs"] = {name: self._defs[name] for name in sorted(self._closure(used))}
        return OperationSchema(
            parameters=TrustedSchema(parameters),
            arguments=arguments,
            media_type=media,
            extra_to_body=bool(extra),
        )

    def _members(
        self,
        target: Mapping[str, Any],
        base: str,
        pointer: str,
        spec_base: str,
        multipart: bool,
        used: set[str],
    ) -> tuple[dict[str, Any], list[str]]:
        """An object body's properties a client may send (``readOnly`` ones left out;
        one that is required but undescribed takes anything), and the required ones, in
        the spec's order."""
        required_at = join_pointer(pointer, "required")
        listed = _required(target.get("required"), required_at, spec_base)
        members: dict[str, Any] = {}
        for name, prop in (target.get("properties") or {}).items():
            prop_pointer = join_pointer(pointer, "properties", name)
            if self._read_only(prop, base, prop_pointer):
                continue
            schema = self.convert(prop, base, prop_pointer, used)
            if multipart:
                schema = self._part(prop, schema, base, prop_pointer)
            members[name] = schema
        declared = target.get("properties") or {}
        for name in sorted(set(listed) - set(declared)):  # required, undescribed
            members[name] = {}
        needed = [name for name in dict.fromkeys(listed) if name in members]
        return members, needed

    @staticmethod
    def _whole(
        body: Body,
        target: Mapping[str, Any],
        members: dict[str, Any],
        needed: list[str],
        more: dict[str, Any],
    ) -> dict[str, Any]:
        """An optional object body that requires some of its properties, as one optional
        argument: lifted, its properties could be given without the ones it requires
        (and a partial body sent); whole, its own ``required`` stands. Closed unless it
        declares more properties, as a lifted body is (and the schema says so)."""
        schema: dict[str, Any] = {"type": "object"}
        told = body.description or target.get("description")
        if isinstance(told, str) and told:
            schema["description"] = plain_text(told)
        schema.update(properties=members, required=needed)
        schema.update(more or {"additionalProperties": False})
        return schema

    def _extra(
        self, body: Mapping[str, Any], base: str, pointer: str, used: set[str]
    ) -> dict[str, Any]:
        """What a lifted body takes besides its properties, as top-level keywords of the
        arguments: only what it declares. A body that says nothing is taken as closed,
        although JSON Schema would allow more: specs rarely write ``false``, and a
        misspelt name is likelier than a property the spec forgot."""
        out: dict[str, Any] = {}
        more = body.get("additionalProperties")
        if isinstance(more, Mapping) or more is True:
            converted = self.convert(more, base, f"{pointer}/additionalProperties", used)
            out["additionalProperties"] = converted or True
        patterns = body.get("patternProperties")
        if isinstance(patterns, Mapping) and patterns:
            out["patternProperties"] = {
                pattern: self.convert(
                    sub, base, join_pointer(pointer, "patternProperties", pattern), used
                )
                for pattern, sub in patterns.items()
            }
            out.setdefault("additionalProperties", False)
        return out

    # --- files ----------------------------------------------------------------------

    def _raw_body(
        self,
        content_type: str,
        raw: Any,
        target: Any,
        base: str,
        pointer: str,
        used: set[str],
    ) -> dict[str, Any]:
        """A body sent as the model gives it (not JSON, form or multipart): a file object
        where `is_file` says the schema is raw bytes (text and XML types excepted), else
        text, whatever the schema's structure (it cannot be encoded in this media type;
        the model writes the text)."""
        schema = target if isinstance(target, Mapping) else {}
        kind = essence(content_type)
        if is_file(schema) and not is_text(kind):
            return _file_schema(schema.get("description"))
        if schema.get("type") == "string" and not any(
            k in schema for k in ("properties", "items", "allOf", "anyOf", "oneOf")
        ):
            return self.convert(raw, base, pointer, used)
        told = schema.get("description")
        text = f"The body, written as {kind}."
        return {"type": "string", "description": f"{plain_text(told)} {text}" if told else text}

    def _part(self, node: Any, schema: dict[str, Any], base: str, pointer: str) -> dict[str, Any]:
        """A multipart property's schema: a file object (or an array of them) where the
        part is a file (`is_file`), else ``schema``."""
        target = self._resolver.resolve(node, base, pointer)[0] if _has_ref(node) else node
        if not isinstance(target, Mapping):
            return schema
        if is_file(target):
            return _file_schema(target.get("description"))
        items = target.get("items")
        if target.get("type") == "array" and isinstance(items, Mapping):
            items = self._resolver.resolve(items, base, f"{pointer}/items")[0]
            if isinstance(items, Mapping) and is_file(items):
                return {"type": "array", "items": FILE_SCHEMA}
        return schema

    # --- translation ----------------------------------------------------------------

    def convert(self, node: Any, base: str, pointer: str, used: set[str]) -> dict[str, Any]:
        """``node`` in the model's dialect; references it makes are added to ``used``."""
        if isinstance(node, bool):
            return {} if node else {"not": {}}
        if not isinstance(node, Mapping):
            raise SpecError("a schema must be an object", pointer=pointer, source=base or None)
        if "$id" in node:  # OpenAPI 3.1: the base URI of the references in it
            base = self._resolver.inner_base(node, base)
        if "$ref" in node:
            name = self._definition(node, base, pointer)
            used.add(name)
            out: dict[str, Any] = {"$ref": f"#/$defs/{name}"}
            if isinstance(node.get("description"), str):  # 3.1: a description beside $ref
                out["description"] = plain_text(node["description"])
            return out
        out = {}
        properties: Any = None
        required: Any = None
        for key, value in node.items():  # one pass: most keys are dropped or kept as they are
            if key in _KEEP:
                if key in _EXPECTED and not _EXPECTED[key][0](value, self._openapi30):
                    raise SpecError(
                        f"{key} must be {_EXPECTED[key][1]}, not {_short(value)}",
                        pointer=f"{pointer}/{key}",
                        source=base or None,
                    )
                if key == "dependentRequired":  # each list once over, as the meta-schema asks
                    value = {name: list(dict.fromkeys(needed)) for name, needed in value.items()}
                out[key] = value
            elif key in _SUBSCHEMA:
                if isinstance(value, Mapping | bool) and not (
                    key == "additionalProperties" and value is True
                ):
                    out[key] = self.convert(value, base, f"{pointer}/{key}", used)
            elif key in _SUBSCHEMA_LISTS:
                if isinstance(value, list):
                    if not value:
                        raise SpecError(
                            f"{key} must list at least one schema",
                            pointer=f"{pointer}/{key}",
                            source=base or None,
                        )
                    out[key] = [
                        self.convert(s, base, f"{pointer}/{key}/{i}", used)
                        for i, s in enumerate(value)
                    ]
            elif key in _SUBSCHEMA_MAPS:
                if isinstance(value, Mapping):
                    out[key] = {
                        name: self.convert(sub, base, join_pointer(pointer, key, name), used)
                        for name, sub in value.items()
                    }
            elif key == "properties":
                properties = value
            elif key == "required":
                required = value
        if isinstance(out.get("description"), str):
            out["description"] = plain_text(out["description"])
        if "exclusiveMinimum" in out or "exclusiveMaximum" in out:
            _draft4_bounds(node, out)
        dropped: set[str] = set()
        if isinstance(properties, Mapping):
            kept: dict[str, Any] = {}
            for name, prop in properties.items():
                where = join_pointer(pointer, "properties", name)
                if self._read_only(prop, base, where):
                    dropped.add(name)
                else:
                    kept[name] = self.convert(prop, base, where, used)
            out["properties"] = kept
        required = _required(required, f"{pointer}/required", base)
        if required:
            still = [r for r in required if r not in dropped] if dropped else required
            if still:
                out["required"] = still
        if self._openapi30 and node.get("nullable") is True:
            out = _nullable(out)
        return out

    def _definition(self, node: Mapping[str, Any], base: str, pointer: str) -> str:
        """The ``$defs`` name of the schema ``node`` refers to, translated on first use."""
        ref = node["$ref"]
        if not isinstance(ref, str):
            raise SpecError("$ref must be a string", pointer=pointer, source=base or None)
        # Named by where it is, however it was referred to (a pointer, an $id, an anchor).
        target, target_base, document, target_pointer = self._resolver.locate(node, base, pointer)
        key = (document, target_pointer)
        name = self._names.get(key)
        if name is not None:
            return name
        failed = self._failed.get(key)
        if failed is not None:  # every operation using it fails the same way
            raise copy.copy(failed) from failed  # fresh: the kept traceback stays short
        name = self._new_name(*key)
        self._names[key] = name
        self._defs[name] = {}  # a recursive reference finds the name already there
        made = len(self._made)
        self._made.append(key)
        used: set[str] = set()
        try:
            converted = self.convert(target, target_base, target_pointer, used)
        except SpecError as error:
            # Forget it and every definition made meanwhile (they may refer to it): none
            # is left half made for the next operation to use as if it were whole.
            for undone in self._made[made:]:
                undone_name = self._names.pop(undone)
                self._defs.pop(undone_name, None)
                self._deps.pop(undone_name, None)
                self._taken.discard(undone_name)
            del self._made[made:]
            self._failed[key] = error
            raise
        self._defs[name].update(converted)
        self._deps[name] = frozenset(used)
        return name

    def _new_name(self, uri: str, fragment: str) -> str:
        """The ``$defs`` name of the schema at ``uri`` ``fragment``: made from where it
        is, not from which schemas were translated before (tools built on demand, in any
        order, declare the same): a component of the spec keeps its name, any other
        schema of the spec is named after its last segment and a digest of its location.
        A spec that refers to other documents has every schema built as it loads, in
        the spec's order: theirs keep their names (numbered when they clash)."""
        if fragment.strip("/"):
            last = unescape(fragment.rsplit("/", 1)[-1])
        else:  # a whole document: named after its file
            last = uri.rsplit("/", 1)[-1].split(".", 1)[0]
        name = _DEF_NAMES.legal(last)
        inside = uri == self._resolver.root.uri
        if inside and (not _COMPONENT.fullmatch(fragment) or name != last):
            # The place in the spec, not the spec's own address (a file moved or fetched
            # from elsewhere declares the same).
            digest = hashlib.blake2s(fragment.encode(), digest_size=4).hexdigest()
            name = f"{name}_{digest}"
        # A clash left (a component named like a digest) is numbered, as before.
        name = _DEF_NAMES.unique(name, self._taken)
        self._taken.add(name)
        return name

    def _closure(self, used: set[str]) -> set[str]:
        seen: set[str] = set()
        todo = list(used)
        while todo:
            name = todo.pop()
            if name not in seen:
                seen.add(name)
                todo.extend(self._deps.get(name, ()))
        return seen

    def _read_only(self, node: Any, base: str, pointer: str) -> bool:
        """``readOnly`` on the property, beside its ``$ref`` (as Google's specs write it,
        and as validators read it), on what it refers to, or on a member of its ``allOf``
        (``allOf: [{$ref: ...}, {readOnly: true}]``, DigitalOcean's way)."""
        if not isinstance(node, Mapping):
            return False
        if node.get("readOnly") is True:
            return True
        target = self._resolver.resolve(node, base, pointer)[0] if "$ref" in node else node
        if not isinstance(target, Mapping):
            return False
        members = target.get("allOf")
        return target.get("readOnly") is True or (
            isinstance(members, list)
            and any(isinstance(m, Mapping) and m.get("readOnly") is True for m in members)
        )


FILE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "A file: its bytes as base64 (content_base64) or its text (content).",
    "properties": {
        "content_base64": {"type": "string"},
        "content": {"type": "string"},
        "filename": {"type": "string"},
        "content_type": {"type": "string"},
    },
    "oneOf": [{"required": ["content_base64"]}, {"required": ["content"]}],
    "additionalProperties": False,
}
"""What the model sends where raw bytes go (a multipart part or a raw body whose schema
`is_file`): JSON cannot carry bytes, so a file object, which the body encoder turns into
the raw bytes. Elsewhere (a JSON or form body, a parameter) a binary string is text."""


def _required(value: Any, pointer: str, base: str) -> list[str]:
    """A schema's ``required`` names. A boolean is a common slip (``required: true`` on a
    property, as a parameter has it) that asks nothing of an object: it is passed over,
    as validators do; anything else but a list of names breaks the schema."""
    if value is None or isinstance(value, bool):
        return []
    if not isinstance(value, list) or not all(isinstance(name, str) for name in value):
        raise SpecError(
            "required must be a list of property names", pointer=pointer, source=base or None
        )
    return list(dict.fromkeys(value))  # a name listed twice is required once


def _file_schema(told: object) -> dict[str, Any]:
    hint = FILE_SCHEMA["description"]
    return {
        **FILE_SCHEMA,
        "description": f"{plain_text(told)} {hint}" if isinstance(told, str) and told else hint,
    }


def _not_empty(schema: dict[str, Any]) -> dict[str, Any]:
    """A required query parameter's schema: an empty array or object would send
    nothing (RFC 6570), so at least one item or property."""
    kind = schema.get("type")
    if kind == "array" and "minItems" not in schema:
        return {**schema, "minItems": 1}
    if kind == "object" and "minProperties" not in schema:
        return {**schema, "minProperties": 1}
    return schema


def _is_form(content_type: str) -> bool:
    """Form and multipart bodies: objects, property by property."""
    kind = essence(content_type)
    return kind == "application/x-www-form-urlencoded" or kind.startswith("multipart/")


def _may_be_object(schema: Any, content_type: str) -> bool:
    """Whether a form or multipart body's schema describes an object (or may: it
    combines others), or the text of a form (a string); a schema that says nothing or
    names another type does not."""
    if not isinstance(schema, Mapping):
        return False
    kind = schema.get("type")
    if kind == "string" and not content_type.lower().startswith("multipart/"):
        return True
    if kind is None:
        return any(k in schema for k in _OBJECT_HINTS)
    return kind == "object" or (isinstance(kind, list) and "object" in kind)


_OBJECT_HINTS = frozenset(
    (
        *("allOf", "anyOf", "oneOf", "$ref", "properties", "additionalProperties"),
        *("patternProperties", "required", "minProperties", "maxProperties"),
    )
)


def _has_ref(node: Any) -> bool:
    return isinstance(node, Mapping) and "$ref" in node


def _is_plain_object(schema: Any) -> bool:
    """An object body whose properties can be lifted to the top level of the arguments."""
    return (
        isinstance(schema, Mapping)
        and isinstance(schema.get("properties"), Mapping)
        and schema.get("type", "object") == "object"
        and not any(k in schema for k in ("allOf", "anyOf", "oneOf", "$ref"))
        and schema.get("nullable") is not True
    )


def _draft4_bounds(node: Mapping[str, Any], out: dict[str, Any]) -> None:
    """Draft 4's boolean exclusive bounds (OpenAPI 3.0's and Swagger 2.0's dialect, and
    3.1 schemas still written in it) as JSON Schema 2020-12's numbers."""
    for bound, limit in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        flag = node.get(bound)
        if isinstance(flag, bool):
            del out[bound]
            if flag and limit in node:
                out[bound] = out.pop(limit)


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    kind = schema.get("type")
    if kind == "null":
        return schema
    if isinstance(kind, str):
        schema["type"] = [kind, "null"]
        if "enum" in schema and None not in schema["enum"]:
            schema["enum"] = [*schema["enum"], None]
        return schema
    if kind is None and not schema:
        return schema  # anything, null included
    return {"anyOf": [schema, {"type": "null"}]}
