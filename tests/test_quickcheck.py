"""The quick check answers as jsonschema's 2020-12 validator does (ECMA-262 patterns and
our formats included), or says it cannot tell: judged against jsonschema itself over
random schemas and values, non-JSON values among them."""

from __future__ import annotations

import copy
import decimal
import random
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from referencing import Registry

from toolsets._formats import FORMATS, format_checker
from toolsets._patterns import with_ecma_patterns
from toolsets._quickcheck import KEYWORDS, QuickCheck, Unsure

VALIDATOR = with_ecma_patterns(Draft202012Validator)


class Text(str):
    """Not a JSON type: jsonschema reads it as a string, the quick check must not guess."""


VALUES: list[Any] = [
    None, True, False, 0, 1, -1, 2, 2.0, 2.5, -0.5, 3e9, "", "a", "ab", "abc",
    "2024-05-06", "2024-05-06T07:08:09Z", "yesterday", "123e4567-e89b-12d3-a456-426614174000",
    "29", "aGVsbG8=", "x@y.z", [], [1], [1, 1], [1, 1.0], [True, 1], ["a", "b"], ["a", "a"],
    {}, {"a": 1}, {"a": "x", "b": 2}, {"b": None}, {"c": [1, {"a": 1}]}, {"ab": 1, "x": "q"},
    (1, 2), Text("ab"), decimal.Decimal("1.5"), float("nan"), float("inf"), {1: "a"},
]  # fmt: skip
KEYWORD_CHOICES = [
    "type", "type", "enum", "const", "minimum", "maximum", "exclusiveMinimum",
    "exclusiveMaximum", "multipleOf", "minLength", "maxLength", "pattern", "format", "format",
    "minItems", "maxItems", "uniqueItems", "items", "prefixItems", "contains", "minContains",
    "maxContains", "properties", "properties", "required", "additionalProperties",
    "patternProperties", "propertyNames", "minProperties", "maxProperties",
    "dependentRequired", "dependentSchemas", "allOf", "anyOf", "oneOf", "not", "if", "then",
    "else", "$ref", "description",
]  # fmt: skip


TYPES: list[Any] = [
    *("string", "integer", "number", "object", "array", "boolean", "null"),
    ["string", "null"],
    ["integer", "string"],
]
ONE_SCHEMA = ("items", "contains", "additionalProperties", "propertyNames", "not", "if")
ONE_SCHEMA += ("then", "else")


class Maker:
    def __init__(self, seed: int) -> None:
        self.random = random.Random(seed)

    def value(self, depth: int = 0) -> Any:
        pick = self.random
        if depth < 2 and pick.random() < 0.3:
            if pick.random() < 0.5:
                return [self.value(depth + 1) for _ in range(pick.randint(0, 3))]
            return {pick.choice("abcx"): self.value(depth + 1) for _ in range(pick.randint(0, 3))}
        return copy.copy(pick.choice(VALUES))

    def schema(self, depth: int = 0, refs: bool = True) -> Any:
        pick = self.random
        if depth > 3 or pick.random() < 0.15:
            leaves: list[Any] = [True, False, {}, {"type": "string"}]
            return pick.choice([*leaves, {"$ref": "#/$defs/d"}] if refs else leaves)
        schema: dict[str, Any] = {}
        for _ in range(pick.randint(1, 4)):
            key = pick.choice(KEYWORD_CHOICES)
            sub = lambda: self.schema(depth + 1, refs)  # noqa: E731
            if key == "type":
                schema[key] = pick.choice(TYPES)
            elif key in ("enum",):
                schema[key] = [self.value(2) for _ in range(pick.randint(1, 3))]
            elif key == "const":
                schema[key] = self.value(1)
            elif key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
                schema[key] = pick.choice([0, 1, 2.5, -1, 3e9])
            elif key == "multipleOf":
                schema[key] = pick.choice([1, 2, 0.5, 0.1, 3])
            elif key.startswith(("min", "max")):
                schema[key] = pick.choice([0, 1, 2, 3])
            elif key == "pattern":
                schema[key] = pick.choice(["^a", "b$", "\\p{L}", "^[0-9]+$", "x"])
            elif key == "format":
                schema[key] = pick.choice([*sorted(FORMATS), "color"])
            elif key == "uniqueItems":
                schema[key] = pick.choice([True, False])
            elif key in ONE_SCHEMA:
                schema[key] = sub()
            elif key in ("prefixItems", "allOf", "anyOf", "oneOf"):
                schema[key] = [sub() for _ in range(pick.randint(1, 3))]
            elif key == "properties":
                schema[key] = {name: sub() for name in pick.sample("abcx", pick.randint(0, 3))}
            elif key == "patternProperties":
                schema[key] = {pick.choice(["^a", "b", "\\p{L}"]): sub()}
            elif key == "dependentSchemas":
                schema[key] = {pick.choice("abc"): sub()}
            elif key == "required":
                schema[key] = pick.sample("abcx", pick.randint(0, 2))
            elif key == "dependentRequired":
                schema[key] = {pick.choice("abc"): pick.sample("abcx", pick.randint(0, 2))}
            elif key == "$ref":
                schema[key] = pick.choice(["#/$defs/d", "#/$defs/e"]) if refs else "#/$defs/e"
            else:
                schema[key] = "text"
        return schema


def test_the_keywords_read_are_those_jsonschema_applies() -> None:
    assert frozenset(Draft202012Validator.VALIDATORS) == KEYWORDS


@pytest.mark.parametrize("seed", range(4))
def test_the_quick_check_answers_as_jsonschema_or_not_at_all(seed: int) -> None:
    maker = Maker(seed)
    compared = unsure = 0
    for _ in range(150):
        schema = maker.schema()
        if not isinstance(schema, dict):
            schema = {"allOf": [schema]}
        schema["$defs"] = {
            "d": maker.schema(2, refs=False),
            "e": {"type": "object", "properties": {"a": {"$ref": "#/$defs/e"}}},
        }
        for formats in (True, False):
            validator = VALIDATOR(
                schema, registry=Registry(), format_checker=format_checker() if formats else None
            )
            quick = QuickCheck(schema, formats=FORMATS if formats else None)
            for _ in range(6):
                value = maker.value()
                try:
                    expected = validator.is_valid(value)
                except (TypeError, ValueError, OverflowError):  # jsonschema's own limits
                    continue
                try:
                    answer = quick(value)
                except Unsure:
                    unsure += 1
                    continue
                compared += 1
                assert answer == expected, (schema, value, formats)
    assert compared > 10 * unsure  # it nearly always can tell


def test_a_schema_that_recurses_without_end_is_left_to_jsonschema() -> None:
    quick = QuickCheck({"$ref": "#/$defs/a", "$defs": {"a": {"$ref": "#/$defs/a"}}}, formats=None)
    with pytest.raises(Unsure):
        quick(1)


def test_a_huge_schema_is_read_only_where_values_take_it() -> None:
    # A broken corner of a schema no value reaches costs nothing, and is never read.
    schema = {
        "type": "object",
        "properties": {"used": {"type": "string"}, "unused": {"$dynamicRef": "#x"}},
        "$defs": {f"d{n}": {"type": "object", "properties": {"x": {"$ref": "#/$defs/d0"}}}
                  for n in range(5000)},
    }  # fmt: skip
    quick = QuickCheck(schema, formats=None)
    assert quick({"used": "a"}) is True
    with pytest.raises(Unsure):
        quick({"unused": 1})
