"""A quick yes to arguments that fit a JSON Schema (draft 2020-12), for the calls whose
arguments fit, which are nearly all of them.

jsonschema makes a validator object for every subschema it descends into and yields
errors through generators, on every call: for two plain arguments, more work than a
REST call's whole request building. `QuickCheck` reads each subschema once into one
closure that compares a value against the subschema's keywords in place, so a call
pays only the comparisons. It answers exactly as jsonschema's 2020-12 validator does
(with `toolsets._patterns`' ECMA-262 patterns and the given format checks) for JSON
values — dicts with string keys, lists, strings, ints, floats, booleans and None. A value
of another type where a keyword reads it, a keyword it does not read (``$dynamicRef``,
``unevaluated*``), a ``$ref`` out of the document, an ``$id`` or ``$schema`` below the
root, and a schema that recurses without end raise `Unsure`: a caller asks the validator
then, and whenever the answer is no, for the problems to report.

The schema is read where values take it, as they do: a property's schema the first time
a value has that property, a ``$ref``'s target the first time it is followed. A huge
schema (an AWS operation's) costs its first call no more than the parts it touches.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any, Final
from urllib.parse import unquote

from toolsets._jsonschema import PointerError, resolve
from toolsets._patterns import matches

__all__ = ["KEYWORDS", "QuickCheck", "Unsure"]

Check = Callable[[Any], bool]

KEYWORDS: Final = frozenset(
    (
        *("$dynamicRef", "$ref", "additionalProperties", "allOf", "anyOf", "const"),
        *("contains", "dependentRequired", "dependentSchemas", "enum", "exclusiveMaximum"),
        *("exclusiveMinimum", "format", "if", "items", "maxItems", "maxLength"),
        *("maxProperties", "maximum", "minItems", "minLength", "minProperties", "minimum"),
        *("multipleOf", "not", "oneOf", "pattern", "patternProperties", "prefixItems"),
        *("properties", "propertyNames", "required", "type", "unevaluatedItems"),
        *("unevaluatedProperties", "uniqueItems"),
    )
)
"""The keywords jsonschema's 2020-12 validator applies (its ``VALIDATORS``; a test holds
them equal): any other keyword is an annotation."""


class Unsure(Exception):
    """The quick check cannot tell: ask the validator."""


_NONE: Final = type(None)
_JSON_TYPES: Final = frozenset((dict, list, str, int, float, bool, _NONE))
_NUMBERS: Final = frozenset((int, float))
_TYPE_NAMES: Final[Mapping[str, tuple[type, ...]]] = {
    "string": (str,),
    "integer": (int,),  # and a float with no fraction (below)
    "number": (int, float),
    "object": (dict,),
    "array": (list,),
    "boolean": (bool,),
    "null": (_NONE,),
}
_BOUNDS: Final = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
_SIZES: Final = ("minLength", "maxLength")
_ITEM_SIZES: Final = ("minItems", "maxItems")
_PROPERTY_SIZES: Final = ("minProperties", "maxProperties")
_SCALAR_KEYWORDS: Final = frozenset(
    ("type", "pattern", "uniqueItems", *_BOUNDS, *_SIZES, *_ITEM_SIZES, *_PROPERTY_SIZES)
)
"""Keywords the node reads in place; the others become checks of their own."""
_OBJECT_KEYS: Final = ("properties", "patternProperties", "additionalProperties")
_ARRAY_KEYS: Final = ("items", "prefixItems")
_IGNORED_BELOW_ROOT: Final = frozenset(("$id", "$schema"))
"""Keywords that make a subschema a document of its own (its ``$ref``s resolve against
it): not read."""
_MISSING: Final = object()


def _equal(one: Any, two: Any) -> bool:
    """JSON equality as jsonschema has it: a boolean is no number, 1 is 1.0."""
    if one is two:
        return True
    first, second = type(one), type(two)
    if first not in _JSON_TYPES or second not in _JSON_TYPES:
        raise Unsure
    if first is str or second is str:
        return bool(one == two)
    if first is list and second is list:
        return len(one) == len(two) and all(map(_equal, one, two))
    if first is dict and second is dict:
        return len(one) == len(two) and all(
            key in two and _equal(value, two[key]) for key, value in one.items()
        )
    if first is bool or second is bool:
        return first is second and bool(one == two)
    if first in _NUMBERS and second in _NUMBERS:
        return bool(one == two)
    return False  # e.g. a list and an object, null and a number


def _unique(items: list[Any]) -> bool:
    kinds = {type(item) for item in items}
    if kinds <= {str} or (kinds <= _NUMBERS and all(item == item for item in items)):
        return len(set(items)) == len(items)  # 1 and 1.0 are one value, as in JSON
    return not any(
        _equal(items[i], items[j]) for i in range(len(items)) for j in range(i + 1, len(items))
    )


def _multiple(value: Any, factor: Any) -> bool:
    """jsonschema's ``multipleOf``, to the letter (floats included); jsonschema raises
    on an infinite or NaN value."""
    if type(value) is float and not math.isfinite(value):
        raise Unsure
    if isinstance(factor, float):
        quotient = value / factor
        try:
            return bool(int(quotient) == quotient)
        except OverflowError:
            return (Fraction(value) / Fraction(factor)).denominator == 1
    return not value % factor


def _unsure(value: Any) -> bool:
    raise Unsure


def _always(value: Any) -> bool:
    if type(value) not in _JSON_TYPES:
        raise Unsure
    return True


def _never(value: Any) -> bool:
    return False


def _is_number(value: Any) -> bool:
    return type(value) in _NUMBERS


def _is_count(value: Any) -> bool:
    return type(value) in _NUMBERS and value >= 0


class QuickCheck:
    """Whether values fit ``schema``, as jsonschema's 2020-12 validator would say.

    Args:
        schema: The schema (a JSON Schema 2020-12 object or boolean).
        formats: The format checks the validator makes, by format (None: formats are
            annotations): each True when a value is one, never raising.
    """

    def __init__(
        self, schema: Any, *, formats: Mapping[str, Callable[[object], bool]] | None
    ) -> None:
        self._root = schema
        self._formats = formats
        self._refs: dict[str, Check] = {}
        self._check = self._compile(schema, root=True)

    def __call__(self, value: Any) -> bool:
        """Whether ``value`` fits.

        Raises:
            Unsure: the quick check cannot tell.
        """
        try:
            return self._check(value)
        except RecursionError:
            raise Unsure from None

    # --- compiling ------------------------------------------------------------------

    def _lazy(self, schema: Any) -> Check:
        """The check of ``schema``, made the first time it is used."""
        if schema is True:
            return _always
        made: list[Check] = []

        def check(value: Any) -> bool:
            if not made:
                made.append(self._compile(schema))
            return made[0](value)

        return check

    def _ref(self, ref: Any) -> Check:
        if not isinstance(ref, str) or not ref.startswith("#"):
            return _unsure
        made = self._refs.get(ref)
        if made is None:
            fragment = unquote(ref[1:])
            if fragment and not fragment.startswith("/"):  # an anchor
                made = _unsure
            else:
                try:
                    target = resolve(self._root, fragment)
                except PointerError:
                    target = None
                made = self._lazy(target) if isinstance(target, dict | bool) else _unsure
            self._refs[ref] = made
        return made

    def _compile(self, schema: Any, *, root: bool = False) -> Check:
        """One closure for ``schema``: its type and the bounds of its type's values read
        in place, the rest (structure, combinations, references) as checks it calls."""
        if schema is True:
            return _always
        if schema is False:
            return _never
        if not isinstance(schema, dict):
            return _unsure
        if not root and not _IGNORED_BELOW_ROOT.isdisjoint(schema):
            return _unsure
        # What the type allows (None: anything): Python types, and whether a float with
        # no fraction is an integer here.
        allowed: frozenset[type] | None = None
        whole_floats = False
        if "type" in schema:
            names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
            if not all(isinstance(n, str) and n in _TYPE_NAMES for n in names):
                return _unsure  # jsonschema raises on an unknown type
            allowed = frozenset(kind for name in names for kind in _TYPE_NAMES[name])
            whole_floats = "integer" in names and "number" not in names
        bounds = [(key, schema[key]) for key in _BOUNDS if key in schema]
        if not all(_is_number(limit) for _, limit in bounds) or any(
            key == "multipleOf" and not limit for key, limit in bounds
        ):
            return _unsure
        lengths = [schema.get(key) for key in _SIZES]
        item_sizes = [schema.get(key) for key in _ITEM_SIZES]
        property_sizes = [schema.get(key) for key in _PROPERTY_SIZES]
        if not all(s is None or _is_count(s) for s in (*lengths, *item_sizes, *property_sizes)):
            return _unsure
        min_length, max_length = lengths
        min_items, max_items = item_sizes
        min_properties, max_properties = property_sizes
        pattern = schema.get("pattern")
        if not isinstance(pattern, str):
            pattern = None  # the ECMA keyword skips what is no pattern
        unique = schema.get("uniqueItems") is True
        on_numbers = _bounded(bounds)

        general: list[Check] = []  # checks of any value
        on_objects: list[Check] = []
        on_arrays: list[Check] = []
        for key in schema:
            if key not in KEYWORDS or key in _SCALAR_KEYWORDS:
                continue  # an annotation (or "then", "else", read with "if"), or in place
            made = self._keyword(key, schema)
            if made is _unsure:
                return _unsure
            if made is None:
                continue
            if (
                key in _OBJECT_KEYS
                or key in ("required", "propertyNames")
                or key.startswith("dependent")
            ):
                on_objects.append(made)
            elif key in _ARRAY_KEYS or key == "contains":
                on_arrays.append(made)
            else:
                general.append(made)

        def check(value: Any) -> bool:
            kind = type(value)
            if kind not in _JSON_TYPES:
                raise Unsure
            if (
                allowed is not None
                and kind not in allowed
                and not (whole_floats and kind is float and value.is_integer())
            ):
                return False
            if kind is str:
                if min_length is not None and len(value) < min_length:
                    return False
                if max_length is not None and len(value) > max_length:
                    return False
                if pattern is not None and not matches(pattern, value):
                    return False
            elif kind is dict:
                if min_properties is not None and len(value) < min_properties:
                    return False
                if max_properties is not None and len(value) > max_properties:
                    return False
                for each in on_objects:
                    if not each(value):
                        return False
            elif kind is list:
                if min_items is not None and len(value) < min_items:
                    return False
                if max_items is not None and len(value) > max_items:
                    return False
                if unique and not _unique(value):
                    return False
                for each in on_arrays:
                    if not each(value):
                        return False
            elif (
                (kind is int or kind is float) and on_numbers is not None and not on_numbers(value)
            ):
                return False
            for each in general:  # noqa: SIM110  # a loop: all() of a generator is slower
                if not each(value):
                    return False
            return True

        return check

    def _keyword(self, key: str, schema: dict[str, Any]) -> Check | None:
        value = schema[key]
        match key:
            case "enum":
                return _enum(value) if isinstance(value, list) else _unsure
            case "const":
                return lambda instance: _equal(instance, value)
            case "$ref":
                return self._ref(value)
            case "format":
                formats = self._formats
                if formats is None or not isinstance(value, str):
                    return None
                return formats.get(value)  # None: an annotation
            case "required":
                return _required(value) if isinstance(value, list) else _unsure
            case "properties" | "patternProperties" | "additionalProperties":
                # One check for the three, made at the first of them met.
                if key != next(k for k in schema if k in _OBJECT_KEYS):
                    return None
                return self._object(schema)
            case "items" | "prefixItems":
                if key != next(k for k in schema if k in _ARRAY_KEYS):
                    return None
                return self._array(schema)
            case "contains":
                return self._contains(schema)
            case "propertyNames":
                inner = self._lazy(value)
                return lambda instance: all(map(inner, instance))
            case "dependentRequired":
                return _dependent_required(value) if isinstance(value, dict) else _unsure
            case "dependentSchemas":
                if not isinstance(value, dict):
                    return _unsure
                table = {name: self._lazy(sub) for name, sub in value.items()}
                return lambda instance: all(
                    each(instance) for name, each in table.items() if name in instance
                )
            case "allOf" | "anyOf" | "oneOf":
                if not isinstance(value, list) or not value:
                    return _unsure
                return _combined(key, [self._lazy(sub) for sub in value])
            case "not":
                inner = self._lazy(value)
                return lambda instance: not inner(instance)
            case "if":
                return _conditional(
                    self._lazy(value),
                    self._lazy(schema["then"]) if "then" in schema else None,
                    self._lazy(schema["else"]) if "else" in schema else None,
                )
            case _:  # $dynamicRef, unevaluated*, and whatever jsonschema adds
                return _unsure

    def _object(self, schema: dict[str, Any]) -> Check:
        declared = schema.get("properties", {})
        patterns = schema.get("patternProperties", {})
        additional = schema.get("additionalProperties", True)
        if not isinstance(declared, dict) or not isinstance(patterns, dict):
            return _unsure
        made: dict[str, Check] = {}
        pattern_checks = [
            (pattern, self._lazy(sub))
            for pattern, sub in patterns.items()
            if isinstance(pattern, str)
        ]
        rest = self._lazy(additional) if additional is not True else None
        compile_ = self._compile

        def check(instance: dict[Any, Any]) -> bool:
            for name, item in instance.items():
                if type(name) is not str:
                    raise Unsure
                sub = declared.get(name, _MISSING)
                if sub is not _MISSING:
                    each = made.get(name)
                    if each is None:
                        each = made[name] = compile_(sub)
                    if not each(item):
                        return False
                    if not pattern_checks:
                        continue
                matched = False
                for pattern, each in pattern_checks:
                    if matches(pattern, name):
                        matched = True
                        if not each(item):
                            return False
                if sub is _MISSING and not matched and rest is not None and not rest(item):
                    return False
            return True

        return check

    def _array(self, schema: dict[str, Any]) -> Check:
        prefix = schema.get("prefixItems", [])
        items = schema.get("items", True)
        if not isinstance(prefix, list):
            return _unsure
        firsts = [self._lazy(sub) for sub in prefix]
        rest = self._lazy(items) if items is not True else None

        def check(instance: list[Any]) -> bool:
            for each, item in zip(firsts, instance, strict=False):
                if not each(item):
                    return False
            if rest is not None:
                for item in instance[len(firsts) :] if firsts else instance:
                    if not rest(item):
                        return False
            return True

        return check

    def _contains(self, schema: dict[str, Any]) -> Check:
        inner = self._lazy(schema["contains"])
        low, high = schema.get("minContains", 1), schema.get("maxContains")
        if not _is_number(low) or (high is not None and not _is_number(high)):
            return _unsure

        def check(instance: list[Any]) -> bool:
            found = sum(1 for item in instance if inner(item))
            return bool(found >= low and (high is None or found <= high))

        return check


def _bounded(bounds: list[tuple[str, Any]]) -> Check | None:
    """One check of a number against ``bounds`` (None: there are none). A NaN passes
    the comparisons, as it does jsonschema's."""
    if not bounds:
        return None
    low = high = low_ex = high_ex = factor = None
    for key, limit in bounds:
        if key == "minimum":
            low = limit
        elif key == "maximum":
            high = limit
        elif key == "exclusiveMinimum":
            low_ex = limit
        elif key == "exclusiveMaximum":
            high_ex = limit
        else:
            factor = limit

    def check(value: Any) -> bool:
        if low is not None and value < low:
            return False
        if high is not None and value > high:
            return False
        if low_ex is not None and value <= low_ex:
            return False
        if high_ex is not None and value >= high_ex:
            return False
        return factor is None or _multiple(value, factor)

    return check


def _enum(values: list[Any]) -> Check:
    if all(type(value) is str for value in values):
        texts = frozenset(values)
        return lambda instance: type(instance) is str and instance in texts
    return lambda instance: any(_equal(value, instance) for value in values)


def _required(names: list[Any]) -> Check:
    def check(instance: dict[str, Any]) -> bool:
        for name in names:  # noqa: SIM110  # a loop: all() of a generator is slower
            if name not in instance:
                return False
        return True

    return check


def _dependent_required(table: dict[str, Any]) -> Check:
    def check(instance: dict[str, Any]) -> bool:
        for name, needed in table.items():
            if name in instance and not all(each in instance for each in needed):
                return False
        return True

    return check


def _combined(key: str, checks: list[Check]) -> Check:
    if key == "allOf":

        def every(instance: Any) -> bool:
            for each in checks:  # noqa: SIM110  # a loop: all() of a generator is slower
                if not each(instance):
                    return False
            return True

        return every
    if key == "anyOf":
        return lambda instance: any(each(instance) for each in checks)
    return lambda instance: sum(1 for each in checks if each(instance)) == 1


def _conditional(condition: Check, then: Check | None, otherwise: Check | None) -> Check:
    def check(instance: Any) -> bool:
        if condition(instance):
            return then is None or then(instance)
        return otherwise is None or otherwise(instance)

    return check
