"""Gemini's ``parameters`` form for what its OpenAPI subset cannot say as it is: a
free-form object as its entries or as JSON text, a value of any type as JSON text,
``additionalProperties`` in every form; and the way back from each, exactly, with what
cannot be read back named (the judge over thousands of real tools is
`test_dialect_judge.py`)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from google.genai import types as genai

from tests.schema import judge
from toolsets import ToolDeclaration
from toolsets.models import INVALID_JSON_KEY
from toolsets.schema import gemini_parameters, to_gemini_declarations


def obj(properties: dict[str, Any], *required: str, **more: Any) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties, **more}
    if required:
        schema["required"] = list(required)
    return schema


def accepted(parameters: dict[str, Any]) -> None:
    """What the Gemini API takes: its SDK's type and its published rules."""
    genai.FunctionDeclaration.model_validate({"name": "t", "parameters": parameters})
    assert judge.gemini_violations(parameters) == []


def entries(**pairs: Any) -> list[dict[str, Any]]:
    return [{"key": key, "value": value} for key, value in pairs.items()]


# -- free-form objects ------------------------------------------------------------------


def test_an_object_of_typed_values_is_its_entries_each_value_with_its_own_schema() -> None:
    files = {
        "type": "object",
        "description": "The files.",
        "additionalProperties": obj({"content": {"type": "string"}}, "content"),
        "minProperties": 1,
    }
    converted = gemini_parameters(obj({"files": files}, "files"))

    declared = converted.schema["properties"]["files"]
    assert declared == {
        "type": "ARRAY",
        "items": {
            "type": "OBJECT",
            "properties": {
                "key": {"type": "STRING"},
                "value": {
                    "type": "OBJECT",
                    "properties": {"content": {"type": "STRING"}},
                    "required": ["content"],
                },
            },
            "required": ["key", "value"],
        },
        "minItems": 1,
        "description": "The files. (an object given as its entries, each a key and its value)",
    }
    accepted(converted.schema)
    sent = {"files": entries(**{"a.txt": {"content": "hi"}, "b.md": {"content": "#"}})}
    assert converted.restore(sent) == {
        "files": {"a.txt": {"content": "hi"}, "b.md": {"content": "#"}}
    }


def test_keys_that_follow_one_pattern_keep_it_and_values_are_mapped_back_too() -> None:
    headers = {
        "type": "object",
        "patternProperties": {"^x-": {"type": "integer", "enum": [1, 2]}},
        "additionalProperties": False,
    }
    converted = gemini_parameters(obj({"headers": headers}))

    entry = converted.schema["properties"]["headers"]["items"]
    assert entry["properties"]["key"] == {"type": "STRING", "pattern": "^x-"}
    assert entry["properties"]["value"]["enum"] == ["1", "2"]
    assert converted.restore({"headers": entries(**{"x-a": "2"})}) == {"headers": {"x-a": 2}}


@pytest.mark.parametrize(
    "free",
    [
        {"type": "object"},  # an object a declaration budget summarized
        {"type": "object", "additionalProperties": True},
        {"type": "object", "additionalProperties": {}},
        {"type": "object", "patternProperties": {"^a": {}, "^b": {"type": "string"}}},
        {"type": "object", "properties": {}, "additionalProperties": False},  # only {}
    ],
)
def test_an_object_of_any_values_is_json_text_parsed_back(free: dict[str, Any]) -> None:
    converted = gemini_parameters(obj({"meta": {**free, "description": "Meta."}}))

    declared = converted.schema["properties"]["meta"]
    assert declared["type"] == "STRING"
    assert declared["description"].startswith("Meta. (JSON text of an object")
    accepted(converted.schema)
    assert converted.restore({"meta": '{"a": [1, {"b": null}]}'}) == {
        "meta": {"a": [1, {"b": None}]}
    }


def test_a_value_of_any_type_and_an_array_of_them_are_json_text() -> None:
    converted = gemini_parameters(
        obj({"any": {"description": "Anything."}, "list": {"type": "array"}, "yes": True})
    )

    props = converted.schema["properties"]
    assert [props[n]["type"] for n in ("any", "list", "yes")] == ["STRING"] * 3
    assert "a string in quotes" in props["any"]["description"]
    assert "JSON text of an array" in props["list"]["description"]
    accepted(converted.schema)
    sent = {"any": '"text"', "list": '[1, "2", [3]]', "yes": "false"}
    assert converted.restore(sent) == {"any": "text", "list": [1, "2", [3]], "yes": False}


def test_json_text_keeps_the_default_and_a_null_the_tool_allows() -> None:
    maybe = {"type": ["object", "null"], "additionalProperties": True, "default": {"a": 1}}
    converted = gemini_parameters(obj({"meta": maybe}))

    declared = converted.schema["properties"]["meta"]
    assert (declared["type"], declared["nullable"], declared["default"]) == (
        "STRING",
        True,
        '{"a":1}',
    )
    assert converted.restore({"meta": None}) == {"meta": None}


def test_alternatives_a_string_could_stand_for_become_one_json_text() -> None:
    converted = gemini_parameters(
        obj(
            {
                "any": {"anyOf": [{"type": "string"}, {}]},
                "map_or_name": {"anyOf": [{"type": "string"}, {"type": "object"}]},
                "map_or_blank": {
                    "anyOf": [
                        {"type": "object", "additionalProperties": {"type": "string"}},
                        {"type": "string", "enum": [""]},
                    ]
                },
            }
        )
    )

    props = converted.schema["properties"]
    assert props["any"]["type"] == props["map_or_name"]["type"] == "STRING"
    # Entries and a string are told apart: both alternatives stay.
    assert [b["type"] for b in props["map_or_blank"]["anyOf"]] == ["ARRAY", "STRING"]
    accepted(converted.schema)
    sent = {"any": '"x"', "map_or_name": '{"a": 1}', "map_or_blank": entries(a="b")}
    assert converted.restore(sent) == {
        "any": "x",
        "map_or_name": {"a": 1},
        "map_or_blank": {"a": "b"},
    }
    assert converted.restore({"map_or_blank": ""}) == {"map_or_blank": ""}


def test_only_null_is_a_nullable_string_and_counts_go_only_beside_their_type() -> None:
    converted = gemini_parameters(
        obj(
            {
                "none": {"type": "null"},
                "n": {"type": "integer", "minLength": 2, "maxItems": 3},
                "s": {"type": ["string", "integer"], "minLength": 2},
            }
        )
    )

    props = converted.schema["properties"]
    assert props["none"] == {"type": "STRING", "nullable": True, "description": "(always null)"}
    assert props["n"] == {"type": "INTEGER"}
    assert props["s"]["anyOf"][0] == {"type": "STRING", "minLength": 2}
    accepted(converted.schema)
    assert converted.restore({"none": "anything"}) == {"none": None}


# -- the arguments object itself --------------------------------------------------------


def test_arguments_that_are_a_free_form_object_are_one_property_holding_them() -> None:
    typed = ToolDeclaration(
        name="tag", parameters={"type": "object", "additionalProperties": {"type": "string"}}
    )
    free = ToolDeclaration(
        name="put", parameters={"type": "object", "additionalProperties": True, "minProperties": 1}
    )
    bare = ToolDeclaration(name="ping", parameters={"type": "object"})
    closed = ToolDeclaration(
        name="pong", parameters={"type": "object", "additionalProperties": False}
    )

    (tag, put, ping, pong), calls = to_gemini_declarations(
        [typed, free, bare, closed], form="parameters"
    )

    assert tag["parameters"]["properties"]["arguments"]["type"] == "ARRAY"
    assert put["parameters"]["properties"]["arguments"]["type"] == "STRING"
    assert put["parameters"]["required"] == ["arguments"]
    assert "parameters" not in ping  # it takes none
    assert "parameters" not in pong
    for tool in (tag, put):
        accepted(tool["parameters"])
    assert calls.restore("tag", {"arguments": entries(a="b")}) == ("tag", {"a": "b"})
    assert calls.restore("put", {"arguments": '{"a": [1]}'}) == ("put", {"a": [1]})
    assert calls.restore("put", {"arguments": "[1]"}) == (
        "put",
        {INVALID_JSON_KEY: {"arguments": "the arguments must be an object"}},
    )


def test_arguments_that_are_one_of_several_objects_are_one_object_saying_which() -> None:
    either = obj(
        {"id": {"type": "integer"}, "owner": {"type": "string"}, "repo": {"type": "string"}},
        oneOf=[{"required": ["id"]}, {"required": ["owner", "repo"]}],
    )

    converted = gemini_parameters(either)

    assert set(converted.schema["properties"]) == {"id", "owner", "repo"}
    assert "required" not in converted.schema
    assert converted.schema["description"].endswith(
        "(give one of these sets of properties: [id]; [owner, repo])"
    )
    accepted(converted.schema)
    assert converted.restore({"id": 7.0}) == {"id": 7}


# -- additionalProperties, in both forms ------------------------------------------------


@pytest.mark.parametrize("extra", [False, {"type": "string"}, True])
def test_additional_properties_is_never_in_parameters_and_kept_in_json_schema(
    extra: bool | dict[str, Any],
) -> None:
    schema = obj(
        {
            "q": {"type": "string"},
            "nested": obj({"a": {"type": "integer"}}, additionalProperties=extra),
        },
        "q",
        additionalProperties=extra,
    )
    decl = ToolDeclaration(name="s", parameters=schema)

    [plain], calls = to_gemini_declarations([decl], form="parameters")
    [json_form], _ = to_gemini_declarations([decl], form="json_schema")

    assert "additionalProperties" not in json.dumps(plain)
    accepted(plain["parameters"])
    nested = plain["parameters"]["properties"]["nested"]
    assert ("other keys allowed" in nested.get("description", "")) == (extra is not False)
    declared = json_form["parametersJsonSchema"]
    assert (
        declared["additionalProperties"]
        == declared["properties"]["nested"]["additionalProperties"]
        == extra
    )
    genai.FunctionDeclaration.model_validate(json_form)
    assert calls.restore("s", {"q": "x", "nested": {"a": 2.0}}) == (
        "s",
        {"q": "x", "nested": {"a": 2}},
    )


# -- what cannot be read back, and the way there ----------------------------------------


def test_what_cannot_be_read_back_is_named_by_the_field_the_model_wrote() -> None:
    schema = obj(
        {
            "meta": {"type": "object"},
            "per-page": {"type": "object", "additionalProperties": {"type": "string"}},
            "items": {"type": "array", "items": obj({"data": {}})},
            "n": {"type": "number"},
        }
    )
    converted = gemini_parameters(schema)
    sent = {
        "meta": '{"a": 1',
        "per_page": [{"key": "a", "value": "b"}, {"key": "a", "value": "c"}, {"key": "b"}, "x"],
        "items": [{"data": '"ok"'}, {"data": "NaN"}],
        "n": 1.5,
    }

    restored = converted.restore(sent)

    assert restored == {
        INVALID_JSON_KEY: {
            "meta": "not valid JSON (Expecting ',' delimiter at character 7); "
            "write an object as JSON text",
            "per_page.1": "the key 'a' is given twice",
            "per_page.2": "the entry of the key 'b' has no value",
            "per_page.3": "each entry must be an object with a key (a string)",
            "items.1.data": "not valid JSON (NaN is not JSON); write the value as JSON text",
        }
    }
    assert sent["meta"] == '{"a": 1'  # the model's arguments are left as they were


def test_a_model_that_sends_the_object_itself_is_taken_at_its_word() -> None:
    converted = gemini_parameters(
        obj(
            {
                "meta": {"type": "object"},
                "labels": {"type": "object", "additionalProperties": {"type": "integer"}},
            }
        )
    )

    sent = {"meta": {"a": 1}, "labels": {"x": 2.0}}
    restored = converted.restore(sent)

    assert restored == {"meta": {"a": 1}, "labels": {"x": 2}}
    assert isinstance(restored["labels"]["x"], int)


def test_encoding_is_the_inverse_of_restoring() -> None:
    schema = obj(
        {
            "per-page": {"type": "integer", "enum": [10, 50]},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "meta": {"type": "object"},
            "either": {"anyOf": [{"type": "integer", "enum": [1]}, {"type": "boolean"}]},
        }
    )
    own = {"per-page": 50, "labels": {"a": "b"}, "meta": {"x": [1]}, "either": True}
    converted = gemini_parameters(schema)

    sent = converted.encode(own)

    assert sent == {
        "per_page": "50",
        "labels": [{"key": "a", "value": "b"}],
        "meta": '{"x":[1]}',
        "either": True,
    }
    assert converted.restore(sent) == own
