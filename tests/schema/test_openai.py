from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest

from toolsets import SpecError, ToolDeclaration, ToolDefinitionError
from toolsets.schema import (
    DROPPED_KEYWORDS,
    ToolNameMap,
    legal_tool_name,
    openai_parameters,
    to_openai_tools,
)

LEGAL = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


# -- names ---------------------------------------------------------------------------


def test_legal_names_are_kept_and_illegal_characters_become_underscores() -> None:
    names = ToolNameMap.build(["get_weather", "files.read", "git:log", "a/b c"])

    assert names.as_dict() == {
        "get_weather": "get_weather",
        "files.read": "files_read",
        "git:log": "git_log",
        "a/b c": "a_b_c",
    }


def test_every_provider_name_is_legal_unique_and_maps_back_exactly() -> None:
    own = [
        "a.b",
        "a_b",
        "a:b",
        "a/b",
        "x" * 64,
        "x" * 65,
        "x" * 100,
        "x" * 100 + ".y",
        "ns/" + "y" * 120,
        "ns:" + "y" * 120,
    ]
    names = ToolNameMap.build(own)

    provider = [names.to_provider(n) for n in own]
    assert all(LEGAL.match(p) for p in provider), provider
    assert len(set(provider)) == len(own)
    assert [names.from_provider(p) for p in provider] == own


def test_a_legal_name_keeps_its_name_even_when_an_earlier_name_sanitizes_to_it() -> None:
    names = ToolNameMap.build(["a.b", "a_b"])

    assert names.to_provider("a_b") == "a_b"
    assert names.to_provider("a.b") != "a_b"
    assert names.to_provider("a.b").startswith("a_b_")


def test_names_that_sanitize_alike_get_distinct_hash_suffixes_deterministically() -> None:
    first = ToolNameMap.build(["a.b", "a:b", "a/b"])
    again = ToolNameMap.build(["a.b", "a:b", "a/b"])

    assert first == again
    assert first.to_provider("a.b") == "a_b"  # the first one keeps the plain form
    assert len({first.to_provider(n) for n in ("a.b", "a:b", "a/b")}) == 3


def test_long_names_are_truncated_with_a_stable_hash_so_shared_prefixes_stay_apart() -> None:
    long_a, long_b = "p" * 70 + "a", "p" * 70 + "b"
    names = ToolNameMap.build([long_a, long_b])

    assert len(names.to_provider(long_a)) == 64
    assert names.to_provider(long_a) != names.to_provider(long_b)
    # The suffix depends only on the name, not on what else is in the map.
    assert ToolNameMap.build([long_a]).to_provider(long_a) == names.to_provider(long_a)


def test_an_unknown_provider_name_comes_back_unchanged() -> None:
    names = ToolNameMap.build(["files.read"])

    assert names.from_provider("no_such_tool") == "no_such_tool"
    assert "files.read" in names
    assert "no_such_tool" not in names
    assert len(names) == 1


def test_an_unknown_own_name_is_made_legal_without_being_recorded() -> None:
    names = ToolNameMap.build(["a"])

    assert names.to_provider("old.tool") == "old_tool"
    assert names.to_provider("z" * 80) == legal_tool_name("z" * 80)
    assert len(names) == 1


def test_a_duplicate_name_is_a_definition_error() -> None:
    with pytest.raises(ToolDefinitionError) as info:
        ToolNameMap.build(["a", "b", "a"])

    assert info.value.tool_name == "a"


# -- parameter schemas ---------------------------------------------------------------


def test_local_refs_into_defs_and_definitions_are_inlined() -> None:
    schema = {
        "type": "object",
        "properties": {
            "address": {"$ref": "#/$defs/Address"},
            "tags": {"$ref": "#/definitions/Tags"},
        },
        "$defs": {
            "Address": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            }
        },
        "definitions": {"Tags": {"type": "array", "items": {"type": "string"}}},
    }

    out = openai_parameters(schema)

    assert out == {
        "type": "object",
        "properties": {
            "address": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
            "tags": {"type": "array", "items": {"type": "string"}},
        },
    }


def test_keywords_beside_a_ref_override_the_definitions_own() -> None:
    schema = {
        "type": "object",
        "properties": {"unit": {"$ref": "#/$defs/Unit", "description": "Which unit."}},
        "$defs": {"Unit": {"type": "string", "enum": ["C", "F"], "description": "A unit."}},
    }

    out = openai_parameters(schema)

    assert out["properties"]["unit"] == {
        "type": "string",
        "enum": ["C", "F"],
        "description": "Which unit.",
    }


def test_refs_through_chains_of_definitions_and_json_pointers_are_resolved() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"$ref": "#/$defs/A"},
            "b": {"$ref": "#/$defs/A/properties/inner"},
            "c": {"$ref": "#/$defs/We%20ird~1name"},
        },
        "$defs": {
            "A": {"type": "object", "properties": {"inner": {"$ref": "#/$defs/B"}}},
            "B": {"type": "integer", "minimum": 0},
            "We ird/name": {"type": "boolean"},
        },
    }

    out = openai_parameters(schema)

    b = {"type": "integer", "minimum": 0}
    assert out["properties"] == {
        "a": {"type": "object", "properties": {"inner": b}},
        "b": b,
        "c": {"type": "boolean"},
    }
    assert "$defs" not in out


def test_recursive_refs_are_kept_in_a_top_level_defs_block() -> None:
    schema = {
        "type": "object",
        "properties": {"tree": {"$ref": "#/definitions/Node"}},
        "definitions": {
            "Node": {
                "type": "object",
                "properties": {
                    "value": {"type": "string"},
                    "children": {"type": "array", "items": {"$ref": "#/definitions/Node"}},
                },
            }
        },
    }

    out = openai_parameters(schema)

    assert out["properties"]["tree"] == {"$ref": "#/$defs/Node"}
    assert out["$defs"] == {
        "Node": {
            "type": "object",
            "properties": {
                "value": {"type": "string"},
                "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
            },
        }
    }
    assert "definitions" not in out


def test_mutually_recursive_definitions_resolve_to_refs_that_all_exist() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/A"}, "b": {"$ref": "#/$defs/B"}},
        "$defs": {
            "A": {"type": "object", "properties": {"b": {"$ref": "#/$defs/B"}}},
            "B": {"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}},
            "Unused": {"type": "string"},
        },
    }

    out = openai_parameters(schema)

    text = json.dumps(out)
    for ref in re.findall(r'"\$ref": "#/\$defs/([^"]+)"', text):
        assert ref in out["$defs"]
    assert "Unused" not in out["$defs"]


def test_a_reference_to_the_root_stays_one() -> None:
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "next": {"$ref": "#"}},
    }

    out = openai_parameters(schema)

    assert out["properties"]["next"] == {"$ref": "#"}


def test_a_broken_local_ref_is_a_spec_error_naming_where_it_is() -> None:
    schema = {"type": "object", "properties": {"x": {"$ref": "#/$defs/Missing"}}}

    with pytest.raises(SpecError) as info:
        openai_parameters(schema, source="tool:demo")

    assert info.value.pointer == "/properties/x/$ref"
    assert info.value.source == "tool:demo"


def test_references_to_other_documents_are_left_alone() -> None:
    schema = {"type": "object", "properties": {"x": {"$ref": "https://example.com/s.json"}}}

    assert openai_parameters(schema)["properties"]["x"] == {"$ref": "https://example.com/s.json"}


def test_object_schemas_get_properties_and_array_schemas_get_items() -> None:
    schema: dict[str, Any] = {
        "properties": {
            "meta": {"type": "object", "additionalProperties": {"type": "string"}},
            "maybe": {"type": ["object", "null"]},
            "list": {"type": "array"},
            "nested": {"anyOf": [{"type": "object"}, {"type": "array"}]},
        }
    }

    out = openai_parameters(schema)

    assert out["type"] == "object"
    props = out["properties"]
    assert props["meta"] == {
        "type": "object",
        "additionalProperties": {"type": "string"},
        "properties": {},
    }
    assert props["maybe"]["properties"] == {}
    assert props["list"] == {"type": "array", "items": {}}
    assert props["nested"]["anyOf"] == [
        {"type": "object", "properties": {}},
        {"type": "array", "items": {}},
    ]


def test_the_top_level_always_is_an_object_with_properties() -> None:
    assert openai_parameters({"type": "object"}) == {"type": "object", "properties": {}}
    assert openai_parameters({}) == {"type": "object", "properties": {}}


def test_identifying_keywords_are_dropped_and_meaningful_ones_kept() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "urn:example",
        "$comment": "internal",
        "type": "object",
        "title": "Args",
        "description": "The arguments.",
        "properties": {
            "q": {
                "type": "string",
                "description": "Query.",
                "default": "x",
                "examples": ["a"],
                "format": "uri",
                "$comment": "dropped too",
            },
            "n": {"type": "integer", "enum": [1, 2]},
            # A *property* named like a dropped keyword is a property, not a keyword.
            "$id": {"type": "string"},
        },
        "required": ["q"],
        "additionalProperties": False,
    }

    out = openai_parameters(schema)

    assert {"$schema", "$id", "$comment"} <= DROPPED_KEYWORDS
    assert out == {
        "type": "object",
        "title": "Args",
        "description": "The arguments.",
        "properties": {
            "q": {
                "type": "string",
                "description": "Query.",
                "default": "x",
                "examples": ["a"],
                "format": "uri",
            },
            "n": {"type": "integer", "enum": [1, 2]},
            "$id": {"type": "string"},
        },
        "required": ["q"],
        "additionalProperties": False,
    }


def test_data_that_looks_like_a_schema_is_copied_as_data() -> None:
    schema = {
        "type": "object",
        "properties": {"cfg": {"type": "object", "default": {"$ref": "#/nowhere", "type": "x"}}},
    }

    out = openai_parameters(schema)

    assert out["properties"]["cfg"]["default"] == {"$ref": "#/nowhere", "type": "x"}


def test_the_input_schema_is_never_mutated_nor_shared_with_the_result() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"$ref": "#/$defs/A", "description": "a"},
            "l": {"type": "array", "default": [1, 2]},
            "o": {"type": "object"},
        },
        "required": ["a"],
        "$defs": {"A": {"type": "object", "enum": [{"k": 1}]}},
    }
    before = copy.deepcopy(schema)

    out = openai_parameters(schema)
    out["properties"]["l"]["default"].append(3)
    out["required"].append("l")
    out["properties"]["a"]["enum"][0]["k"] = 2

    assert schema == before


def test_to_openai_tools_builds_function_tools_with_legal_names() -> None:
    decls = [
        ToolDeclaration(
            name="weather.get",
            description="Weather for a city.",
            parameters={
                "type": "object",
                "properties": {"city": {"$ref": "#/$defs/City"}},
                "$defs": {"City": {"type": "string"}},
            },
        ),
        ToolDeclaration(name="ping"),
    ]

    tools, names = to_openai_tools(decls)

    assert tools == [
        {
            "type": "function",
            "function": {
                "name": "weather_get",
                "description": "Weather for a city.",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
            },
        },
        {
            "type": "function",
            "function": {
                "name": "ping",
                "description": "",
                "parameters": {"type": "object", "properties": {}},
            },
        },
    ]
    assert names.from_provider("weather_get") == "weather.get"


def test_to_openai_tools_names_the_tool_whose_schema_is_broken() -> None:
    decl = ToolDeclaration(
        name="broken",
        parameters={"type": "object", "properties": {"x": {"$ref": "#/$defs/Nope"}}},
    )

    with pytest.raises(SpecError) as info:
        to_openai_tools([decl])

    assert info.value.source == "tool:broken"
    assert info.value.pointer == "/properties/x/$ref"
