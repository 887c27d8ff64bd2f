"""Typed Python signatures for tools, written from their JSON Schemas, for a model that
calls them from code (`code_mode`): one ``async def`` per tool, keyword-only parameters,
a ``TypedDict`` per object with known properties, ``Literal`` for enums, a one-line
docstring; and the Python names the tools are called by."""

from __future__ import annotations

import keyword
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from toolsets._declaration import ToolDeclaration

__all__ = ["Stubs", "python_name", "python_names", "write_stubs"]

MAX_DEPTH = 3
"""Objects nested deeper than this are written ``dict[str, Any]``."""
MAX_LITERALS = 12
"""Enum values written as a ``Literal``; a longer enum is its base type."""
MAX_DOC = 160
"""Characters of a tool's docstring line."""

_SCALARS = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}
_NOT_WORD = re.compile(r"\W+")


def python_name(name: str) -> str:
    """``name`` as a Python identifier: other characters become ``_``, a leading digit or
    a keyword gets ``_`` (``list-issues`` → ``list_issues``, ``class`` → ``class_``)."""
    made = _NOT_WORD.sub("_", name).strip("_") or "_"
    if made[0].isdigit():
        made = "_" + made
    if keyword.iskeyword(made) or keyword.issoftkeyword(made):
        made += "_"
    return made


def python_names(names: Iterable[str]) -> dict[str, str]:
    """Each tool name's Python name, unique among ``names`` (a clash gets ``_2``, ...)."""
    made: dict[str, str] = {}
    taken: set[str] = set()
    for name in names:
        base = candidate = python_name(name)
        count = 1
        while candidate in taken:
            count += 1
            candidate = f"{base}_{count}"
        taken.add(candidate)
        made[name] = candidate
    return made


def _pascal(text: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in _NOT_WORD.split(text) if part) or "T"


def _one_line(text: str) -> str:
    """The first sentence or line of ``text``, cut to `MAX_DOC` characters."""
    line = " ".join(text.strip().split("\n\n")[0].split())
    if len(line) > MAX_DOC:
        line = line[: MAX_DOC - 1] + "\u2026"
    return line.replace("\\", "\\\\").replace('"""', "'''")


@dataclass
class _Writer:
    """Writes the types one tool's signature needs."""

    root: Mapping[str, Any]
    prefix: str
    taken: set[str]
    classes: list[str] = field(default_factory=list)
    _named: dict[str, str] = field(default_factory=dict)

    def resolve(self, schema: Mapping[str, Any]) -> Mapping[str, Any]:
        ref = schema.get("$ref")
        if not isinstance(ref, str) or not ref.startswith("#/"):
            return schema
        node: Any = self.root
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(node, Mapping) or part not in node:
                return {}
            node = node[part]
        return node if isinstance(node, Mapping) else {}

    def fresh(self, hint: str) -> str:
        """A class name for ``hint`` that no other class of these stubs has."""
        name = self.prefix + hint
        count = 1
        while name in self.taken:
            count += 1
            name = f"{self.prefix}{hint}{count}"
        self.taken.add(name)
        return name

    def type_of(self, schema: object, hint: str, depth: int, name: str | None = None) -> str:
        if not isinstance(schema, Mapping) or not schema:
            return "Any"
        ref = schema.get("$ref")
        if isinstance(ref, str):
            if ref in self._named:
                return self._named[ref]
            target = self.resolve(schema)
            named = self.fresh(_pascal(ref.rsplit("/", 1)[-1]))
            self._named[ref] = f'"{named}"'  # a reference to itself, while it is written
            written = self.type_of(target, hint, depth, named)
            self._named[ref] = written
            return written
        if "const" in schema:
            return f"Literal[{schema['const']!r}]"
        enum = schema.get("enum")
        if (
            isinstance(enum, list)
            and 0 < len(enum) <= MAX_LITERALS
            and all(isinstance(v, str | int | bool) or v is None for v in enum)
        ):
            return f"Literal[{', '.join(repr(v) for v in enum)}]"
        for key in ("anyOf", "oneOf"):
            options = schema.get(key)
            if isinstance(options, list) and options:
                return _union([self.type_of(option, hint, depth) for option in options[:6]])
        every = schema.get("allOf")
        if isinstance(every, list) and len(every) == 1:
            return self.type_of(every[0], hint, depth)
        kinds = schema.get("type")
        if isinstance(kinds, list):
            return _union([self.type_of({**schema, "type": kind}, hint, depth) for kind in kinds])
        nullable = " | None" if schema.get("nullable") is True else ""
        if kinds in _SCALARS:
            return _SCALARS[kinds] + nullable
        if kinds == "array" or "items" in schema:
            return f"list[{self.type_of(schema.get('items'), hint + 'Item', depth)}]{nullable}"
        if kinds == "object" or "properties" in schema:
            return self.object_type(schema, hint, depth, name) + nullable
        return "Any"

    def object_type(
        self, schema: Mapping[str, Any], hint: str, depth: int, name: str | None
    ) -> str:
        properties = schema.get("properties")
        if not isinstance(properties, Mapping) or not properties or depth >= MAX_DEPTH:
            extra = schema.get("additionalProperties")
            if isinstance(extra, Mapping) and extra and depth < MAX_DEPTH:
                return f"dict[str, {self.type_of(extra, hint + 'Value', depth + 1)}]"
            return "dict[str, Any]"
        if name is None:
            name = self.fresh(hint)
        required = set(schema.get("required") or ())
        fields = []
        for key, value in properties.items():
            written = self.type_of(value, _pascal(key), depth + 1)
            if key not in required:
                written = f"NotRequired[{written}]"
            fields.append(f"{key!r}: {written}")
        # The functional form: property names need not be identifiers.
        self.classes.append(f"{name} = TypedDict({name!r}, {{{', '.join(fields)}}})")
        return name


def _union(written: list[str]) -> str:
    unique = list(dict.fromkeys(part for text in written for part in text.split(" | ")))
    if "Any" in unique:
        return "Any"
    return " | ".join(unique)


@dataclass(frozen=True, kw_only=True)
class Stubs:
    """The stubs written for a list of tools."""

    text: str
    """The Python stub source: types, then one ``async def`` per tool."""
    written: tuple[str, ...]
    """The tools (their names) with a signature in ``text``."""
    left_out: tuple[str, ...]
    """The tools (their Python names) left out for want of room."""


def signature(declaration: ToolDeclaration, pyname: str, taken: set[str]) -> tuple[list[str], str]:
    """The classes and the ``async def`` one tool is written as."""
    parameters = declaration.parameters
    writer = _Writer(root=parameters, prefix=_pascal(pyname), taken=taken)
    properties = parameters.get("properties")
    required = set(parameters.get("required") or ())
    params: list[str] = []
    optional: list[str] = []
    loose: list[str] = []
    if isinstance(properties, Mapping):
        for key, schema in properties.items():
            written = writer.type_of(schema, _pascal(key), 1)
            if not key.isidentifier() or keyword.iskeyword(key):
                loose.append(key)
                continue
            if key in required:
                params.append(f"{key}: {written}")
            else:
                nullable = written if "None" in written.split(" | ") else f"{written} | None"
                optional.append(f"{key}: {nullable} = None")
    listed = ", ".join([*params, *optional])
    if listed:
        listed = f"*, {listed}"
    if loose:
        listed = f"{listed}, **more: Any" if listed else "**more: Any"
    returns = "Any"
    if declaration.response:
        returns = writer.type_of(declaration.response, "Result", 1)
    doc = _one_line(declaration.description)
    if loose:
        doc += f" (Also takes {', '.join(repr(k) for k in loose)}: pass **{{...}}.)"
    head = f"async def {pyname}({listed}) -> {returns}:"
    body = f'    """{doc}"""' if doc else "    ..."
    return writer.classes, f"{head}\n{body}"


def write_stubs(
    declarations: Iterable[tuple[str, Callable[[], ToolDeclaration | None]]], *, budget: int
) -> Stubs:
    """The stubs of the tools (each a Python name and how to get its declaration; None:
    a passive tool, left out), in order, as many as fit in ``budget`` characters; the
    names of the rest are listed after them, in a quarter of ``budget`` more at most.
    A declaration is asked for only while there is room for its stub (a catalogue's
    declarations may be built on demand)."""
    parts: list[str] = []
    used = 0
    written: list[str] = []
    left_out: list[str] = []
    taken: set[str] = set()
    for pyname, declare in declarations:
        if left_out:
            left_out.append(pyname)
            continue
        declaration = declare()
        if declaration is None:
            continue
        classes, function = signature(declaration, pyname, taken)
        text = "\n".join([*classes, function]) + "\n"
        if used + len(text) > budget:
            left_out.append(pyname)
            continue
        parts.append(text)
        used += len(text)
        written.append(declaration.name)
    if left_out:
        room = max(budget // 4, 200)
        names = ", ".join(left_out)
        if len(names) > room:
            cut = names[:room].rsplit(", ", 1)[0]
            shown = cut.count(", ") + 1
            names = f"{cut} and {len(left_out) - shown} more"
        parts.append(f"# Also (no room for their signatures; keyword arguments): {names}\n")
    return Stubs(text="\n".join(parts), written=tuple(written), left_out=tuple(left_out))
