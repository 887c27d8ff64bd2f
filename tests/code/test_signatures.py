"""The Python signatures written from tools' JSON Schemas for a program's author."""

from __future__ import annotations

from typing import Any

from toolsets import ToolDeclaration
from toolsets.code._signatures import python_names, write_stubs


def _stub(parameters: dict[str, Any], response: dict[str, Any] | None = None) -> str:
    declaration = ToolDeclaration(
        name="op", description="Do it.\n\nMore text.", parameters=parameters, response=response
    )
    return write_stubs([("op", lambda: declaration)], budget=10_000).text


def test_scalars_enums_arrays_unions_and_nullables_are_typed() -> None:
    text = _stub(
        {
            "type": "object",
            "properties": {
                "state": {"type": "string", "enum": ["open", "closed"]},
                "labels": {"type": "array", "items": {"type": "string"}},
                "limit": {"type": ["integer", "null"]},
                "since": {"anyOf": [{"type": "string"}, {"type": "number"}]},
                "anything": {},
            },
            "required": ["state"],
        }
    )
    assert (
        "async def op(*, state: Literal['open', 'closed'], labels: list[str] | None = None, "
        "limit: int | None = None, since: str | float | None = None, "
        "anything: Any | None = None) -> Any:"
    ) in text
    assert '    """Do it."""' in text


def test_a_recursive_reference_is_named_not_expanded_forever() -> None:
    text = _stub(
        {
            "type": "object",
            "properties": {"tree": {"$ref": "#/$defs/Node"}},
            "$defs": {
                "Node": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                    },
                }
            },
        }
    )
    assert "OpNode = TypedDict('OpNode', {'name': NotRequired[str], " in text
    assert "'children': NotRequired[list[\"OpNode\"]]" in text


def test_parameters_that_are_no_identifiers_are_passed_in_a_dict() -> None:
    text = _stub({"type": "object", "properties": {"per-page": {"type": "integer"}}})
    assert "async def op(**more: Any) -> Any:" in text
    assert "Also takes 'per-page'" in text


def test_every_stub_is_valid_python() -> None:
    import ast

    text = _stub(
        {
            "type": "object",
            "properties": {
                "per-page": {"type": "integer"},
                "q": {"type": "string"},
                "tree": {"$ref": "#/$defs/Node"},
            },
            "required": ["q"],
            "$defs": {"Node": {"type": "object", "properties": {"n": {"$ref": "#/$defs/Node"}}}},
        }
    )
    ast.parse(text)


def test_a_response_schema_is_the_return_type() -> None:
    text = _stub(
        {"type": "object", "properties": {}},
        response={"type": "object", "additionalProperties": {"type": "integer"}},
    )
    assert "async def op() -> dict[str, int]:" in text


def test_python_names_are_identifiers_and_unique() -> None:
    assert python_names(["list-items", "list_items", "class", "1st"]) == {
        "list-items": "list_items",
        "list_items": "list_items_2",
        "class": "class_",
        "1st": "_1st",
    }
