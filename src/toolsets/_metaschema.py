"""Whether a JSON Schema (draft 2020-12) is certainly valid against its meta-schema,
found in one walk over it.

jsonschema's own meta-schema check follows the meta-schema's ``$dynamicRef``s through
its seven vocabularies for every keyword, which a big schema (an AWS operation's) pays
many times over, on a tool's first call (`benchmarks/first_call.py` measures that call).
This walk reads each keyword's value once, against what the 2020-12 meta-schema asks of
it (a schema, a non-empty list of schemas, a whole number 0 or more, a list of distinct
names...). Objects are ``dict``s and arrays ``list``s, as jsonschema's types are. It
answers True only when it is sure; False means "not sure" (a keyword the table does not
cover, an anchor it reads more strictly than the meta-schema's pattern...), and the
caller asks jsonschema, whose answer is exact. Formats in the meta-schema (``regex``,
``uri``, ``uri-reference``) are not asserted, as they are not when jsonschema checks
without a format checker.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, Final

__all__ = ["surely_valid"]

_SIMPLE_TYPES: Final = frozenset(
    ("array", "boolean", "integer", "null", "number", "object", "string")
)
_ANCHOR: Final = re.compile(r"[A-Za-z_][-A-Za-z0-9._]*")


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_count(value: object) -> bool:
    """The meta-schema's ``nonNegativeInteger`` (jsonschema takes 2.0 as an integer)."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return value >= 0
    return isinstance(value, float) and value.is_integer() and value >= 0


def _is_names(value: object) -> bool:
    """The meta-schema's ``stringArray``: distinct strings."""
    return (
        isinstance(value, list)
        and all(isinstance(name, str) for name in value)
        and len(set(value)) == len(value)
    )


def _is_type(value: object) -> bool:
    if isinstance(value, str):
        return value in _SIMPLE_TYPES
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(name, str) and name in _SIMPLE_TYPES for name in value)
        and len(set(value)) == len(value)
    )


def _is_id(value: object) -> bool:
    # "^[^#]*#?$": no fragment but an empty one.
    return isinstance(value, str) and "#" not in value[:-1]


def _is_anchor(value: object) -> bool:
    return isinstance(value, str) and _ANCHOR.fullmatch(value) is not None


def _is_text(value: object) -> bool:
    return isinstance(value, str)


def _is_flag(value: object) -> bool:
    return isinstance(value, bool)


def _is_vocabulary(value: object) -> bool:
    return isinstance(value, dict) and all(isinstance(v, bool) for v in value.values())


def _is_dependent_required(value: object) -> bool:
    return isinstance(value, dict) and all(_is_names(names) for names in value.values())


_VALUES: Final[Mapping[str, Callable[[object], bool]]] = {
    "type": _is_type,
    "enum": lambda value: isinstance(value, list),
    "examples": lambda value: isinstance(value, list),
    "multipleOf": lambda value: _is_number(value) and value > 0,  # type: ignore[operator]
    **dict.fromkeys(("maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum"), _is_number),
    **dict.fromkeys(
        (
            *("maxLength", "minLength", "maxItems", "minItems"),
            *("maxContains", "minContains", "maxProperties", "minProperties"),
        ),
        _is_count,
    ),
    "required": _is_names,
    "dependentRequired": _is_dependent_required,
    **dict.fromkeys(("uniqueItems", "deprecated", "readOnly", "writeOnly"), _is_flag),
    **dict.fromkeys(
        (
            *("pattern", "title", "description", "$comment", "format"),
            *("contentEncoding", "contentMediaType", "$schema", "$ref", "$dynamicRef"),
            "$recursiveRef",
        ),
        _is_text,
    ),
    "$id": _is_id,
    **dict.fromkeys(("$anchor", "$dynamicAnchor", "$recursiveAnchor"), _is_anchor),
    "$vocabulary": _is_vocabulary,
}
"""What the meta-schema asks of each keyword whose value is not a schema (``const`` and
``default`` may be anything, and so may any keyword it does not name)."""

_ONE: Final = frozenset(
    (
        *("items", "contains", "additionalProperties", "propertyNames", "if", "then"),
        *("else", "not", "unevaluatedItems", "unevaluatedProperties", "contentSchema"),
    )
)
"""Keywords whose value is one schema."""
_LIST: Final = frozenset(("prefixItems", "allOf", "anyOf", "oneOf"))
"""Keywords whose value is a non-empty list of schemas."""
_MAP: Final = frozenset(
    ("properties", "patternProperties", "dependentSchemas", "$defs", "definitions")
)
"""Keywords whose value maps names (or patterns) to schemas."""


def surely_valid(schema: Any) -> bool:
    """True when ``schema`` is certainly valid against JSON Schema 2020-12's meta-schema;
    False when it is not, or the walk cannot tell (ask jsonschema then)."""
    todo = [schema]
    while todo:
        node = todo.pop()
        if isinstance(node, bool):
            continue
        if not isinstance(node, dict):
            return False
        for key, value in node.items():
            if key in _ONE:
                todo.append(value)
            elif key in _MAP:
                if not isinstance(value, dict):
                    return False
                todo.extend(value.values())
            elif key in _LIST:
                if not isinstance(value, list) or not value:
                    return False
                todo.extend(value)
            elif key == "dependencies":  # a schema or a list of names each
                if not isinstance(value, dict):
                    return False
                for each in value.values():
                    if isinstance(each, list):
                        if not _is_names(each):
                            return False
                    else:
                        todo.append(each)
            else:
                check = _VALUES.get(key)
                if check is not None and not check(value):
                    return False
    return True
