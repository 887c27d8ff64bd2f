"""The quick walk of a schema against JSON Schema 2020-12's meta-schema never vouches for
a schema jsonschema's own check refuses (and vouches for the valid ones it meets):
judged against jsonschema over random schemas."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest
from jsonschema import Draft202012Validator, SchemaError

from toolsets._metaschema import surely_valid

VALUES: list[Any] = [
    None, True, False, 0, 1, -1, 2.0, 2.5, -0.5, "", "x", "string", "#a", "a#", "a#b", "_a",
    "1a", "a\n", [], ["a"], ["a", "a"], ["string", "integer"], ["string", "string"], [1],
    [{}], {}, {"a": 1}, {"a": {}}, {"a": ["b"]}, {"a": True}, {"type": "string"},
]  # fmt: skip
KEYS = [
    "type", "enum", "const", "examples", "multipleOf", "maximum", "exclusiveMinimum",
    "minLength", "maxItems", "minContains", "required", "dependentRequired", "uniqueItems",
    "deprecated", "pattern", "title", "format", "$ref", "$id", "$anchor", "$dynamicAnchor",
    "$vocabulary", "items", "prefixItems", "allOf", "anyOf", "oneOf", "not", "if",
    "properties", "patternProperties", "$defs", "definitions", "dependencies",
    "additionalProperties", "contentSchema", "unknownKeyword", "$comment", "$schema",
    "$recursiveAnchor", "default", "readOnly", "propertyNames", "unevaluatedProperties",
    "dependentSchemas", "$dynamicRef",
]  # fmt: skip
ONE = ("items", "not", "if", "additionalProperties", "contentSchema", "propertyNames")
MAP = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
LIST = ("allOf", "anyOf", "oneOf", "prefixItems")


def schema_of(pick: random.Random, depth: int = 0) -> Any:
    if depth > 3 or pick.random() < 0.2:
        return pick.choice([True, False, {}, {"type": "string"}])
    schema: dict[str, Any] = {}
    for _ in range(pick.randint(0, 4)):
        key = pick.choice(KEYS)
        shaped = pick.random() < 0.6
        if key in ONE and shaped:
            schema[key] = schema_of(pick, depth + 1)
        elif key in MAP and shaped:
            schema[key] = {f"p{i}": schema_of(pick, depth + 1) for i in range(pick.randint(0, 2))}
        elif key in LIST and shaped:
            schema[key] = [schema_of(pick, depth + 1) for _ in range(pick.randint(0, 2))]
        else:
            schema[key] = copy.deepcopy(pick.choice(VALUES))
    return schema


@pytest.mark.parametrize("seed", range(3))
def test_the_walk_vouches_only_for_schemas_jsonschema_accepts(seed: int) -> None:
    pick = random.Random(seed)
    vouched = valid = 0
    for _ in range(1500):
        schema = schema_of(pick)
        try:
            Draft202012Validator.check_schema(schema, format_checker=None)  # type: ignore[call-arg]
        except SchemaError:
            assert not surely_valid(schema), schema
            continue
        valid += 1
        vouched += surely_valid(schema)
    assert vouched == valid  # and it knows every valid one it met
