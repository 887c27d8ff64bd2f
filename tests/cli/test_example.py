"""The example call ``toolsets inspect`` shows: arguments made from a parameter schema,
valid for the tool's own checker (or none)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from tests.helpers import ROOT
from toolsets import tool
from toolsets._formats import FORMATS
from toolsets._validation import ArgumentChecker
from toolsets.cli._example import example_arguments
from toolsets.openapi import OpenApiToolset

pytestmark = pytest.mark.anyio


def _valid(schema: dict[str, Any], args: dict[str, Any] | None) -> bool:
    return args is not None and ArgumentChecker(schema, tool_name="t").result(args) is None


def test_only_required_parameters_are_given_each_from_its_example_default_or_bounds() -> None:
    schema = {
        "type": "object",
        "properties": {
            "when": {"type": "string", "format": "date-time"},
            "count": {"type": "integer", "minimum": 5, "multipleOf": 4},
            "ratio": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
            "kind": {"enum": [None, "a", "b"]},
            "name": {"type": "string", "examples": ["Ann"]},
            "size": {"type": "integer", "default": 3},
            "code": {"type": "string", "minLength": 12, "maxLength": 12},
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 2},
            "maybe": {"anyOf": [{"type": "null"}, {"type": "boolean"}]},
            "optional": {"type": "string"},
        },
        "required": ["when", "count", "kind", "name", "size", "code", "tags", "maybe"],
        "additionalProperties": False,
    }
    args = example_arguments(schema)
    assert args == {
        "when": "2025-01-31T12:00:00Z",
        "count": 8,
        "kind": "a",
        "name": "Ann",
        "size": 3,
        "code": "examplexxxxx",
        "tags": ["example", "example"],
        "maybe": True,
    }
    assert _valid(schema, args)


class Address(BaseModel):
    street: str
    number: int


def test_a_function_tools_nested_models_through_refs() -> None:
    @tool
    def ship(to: Address, express: bool = False) -> str:
        """Ship it."""
        return "ok"

    declaration = ship.declaration()
    assert declaration is not None
    args = example_arguments(declaration.parameters)
    assert args == {"to": {"street": "example", "number": 1}}
    assert _valid(dict(declaration.parameters), args)


def test_a_string_is_made_to_match_its_pattern() -> None:
    schema = {
        "type": "object",
        "properties": {
            "isbn": {"type": "string", "pattern": "^[0-9]{13}$"},
            "ref": {"type": "string", "pattern": r"^(heads|tags)/[a-z]\w*-\d{2}$"},
            "code": {"type": "string", "pattern": "^[^0-9]{3}$"},
        },
        "required": ["isbn", "ref", "code"],
    }
    args = example_arguments(schema)
    assert args == {"isbn": "0000000000000", "ref": "heads/a-11", "code": "aaa"}
    assert _valid(schema, args)


def test_no_example_when_what_is_made_does_not_validate() -> None:
    schema = {
        "type": "object",
        # A lookahead no made string can satisfy: what is made falls back, and fails.
        "properties": {"code": {"type": "string", "pattern": "^(?!x)x{3}$"}},
        "required": ["code"],
    }
    assert example_arguments(schema) is None


async def test_every_operation_of_the_fixture_specs_gets_a_valid_example() -> None:
    made = total = 0
    for path in sorted((ROOT / "fixtures" / "openapi").glob("*.yaml")):
        async with OpenApiToolset(path) as toolset:
            for each in await toolset.list_tools():
                declaration = each.declaration()
                assert declaration is not None
                args = example_arguments(declaration.parameters)
                total += 1
                if args is not None:
                    made += 1
                    assert _valid(dict(declaration.parameters), args), each.name
    assert made == total, (made, total)


def test_every_format_a_call_checks_gets_an_example_that_passes_the_check() -> None:
    numeric = {"int32": "integer", "int64": "integer", "float": "number", "double": "number"}
    for name in FORMATS:
        schema = {
            "type": "object",
            "properties": {"x": {"type": numeric.get(name, "string"), "format": name}},
            "required": ["x"],
        }
        args = example_arguments(schema)
        assert args is not None, name
        assert _valid(schema, args), name
