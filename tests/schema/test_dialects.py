"""The Anthropic, Gemini and OpenAI strict dialects, one rule at a time, and the way back
from each (the judge over thousands of real tools is `test_dialect_judge.py`)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from anthropic.types import ToolParam
from google.genai import types as genai
from pydantic import TypeAdapter

from toolsets import SpecError, ToolDeclaration
from toolsets.schema import (
    GEMINI_RECURSION_DEPTH,
    STRICT_LIMITS,
    DialectSchema,
    ToolCallMap,
    anthropic_input_schema,
    gemini_parameters,
    gemini_parameters_json_schema,
    openai_strict_parameters,
    to_anthropic_tools,
    to_gemini_declarations,
    to_openai_tools,
)


def obj(
    properties: dict[str, Any], required: list[str] | None = None, **more: Any
) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties, **more}
    if required is not None:
        schema["required"] = required
    return schema


def strict(schema: dict[str, Any]) -> DialectSchema:
    converted = openai_strict_parameters(schema)
    assert converted is not None
    return converted


# -- OpenAI strict -------------------------------------------------------------------


def test_strict_mode_requires_every_property_and_makes_optional_ones_nullable() -> None:
    out = strict(obj({"q": {"type": "string"}, "n": {"type": "integer"}}, ["q"])).schema

    assert out == {
        "type": "object",
        "properties": {"q": {"type": "string"}, "n": {"type": ["integer", "null"]}},
        "required": ["q", "n"],
        "additionalProperties": False,
    }


def test_the_null_a_model_sends_for_an_optional_property_is_dropped_on_the_way_back() -> None:
    converted = strict(obj({"q": {"type": "string"}, "n": {"type": "integer"}}, ["q"]))
    sent = {"q": "x", "n": None}

    assert converted.restore(sent) == {"q": "x"}
    assert sent == {"q": "x", "n": None}


def test_a_null_the_tool_itself_accepts_is_kept_where_it_is_required() -> None:
    converted = strict(obj({"n": {"type": ["integer", "null"]}}, ["n"]))

    assert converted.restore({"n": None}) == {"n": None}


def test_an_optional_property_that_accepts_null_keeps_the_schema_out_of_strict_mode() -> None:
    # Strict mode would make the model send null for "leave it out": in a PATCH such as
    # GitHub's "update an issue", that null would clear the milestone on every edit.
    milestone = {"anyOf": [{"type": "integer"}, {"type": "null"}]}
    assert (
        openai_strict_parameters(obj({"milestone": milestone, "title": {"type": "string"}})) is None
    )
    assert openai_strict_parameters(obj({"milestone": milestone}, ["milestone"])) is not None


def test_nested_objects_and_array_items_are_closed_and_restored_too() -> None:
    item = obj({"id": {"type": "string"}, "note": {"type": "string"}}, ["id"])
    converted = strict(obj({"items": {"type": "array", "items": item}}, ["items"]))

    inner = converted.schema["properties"]["items"]["items"]
    assert inner["additionalProperties"] is False
    assert inner["properties"]["note"] == {"type": ["string", "null"]}
    sent = {"items": [{"id": "a", "note": None}, {"id": "b", "note": "hi"}]}
    assert converted.restore(sent) == {"items": [{"id": "a"}, {"id": "b", "note": "hi"}]}


def test_optional_enums_and_references_become_nullable_in_their_own_way() -> None:
    node = obj({"next": {"$ref": "#/$defs/Node"}, "v": {"type": "string"}}, ["v"])
    schema = obj(
        {"unit": {"type": "string", "enum": ["C", "F"]}, "tree": {"$ref": "#/$defs/Node"}},
        **{"$defs": {"Node": node}},
    )

    converted = strict(schema)

    props = converted.schema["properties"]
    assert props["unit"] == {"type": ["string", "null"], "enum": ["C", "F", None]}
    assert props["tree"] == {"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]}
    sent = {"unit": None, "tree": {"v": "a", "next": {"v": "b", "next": None}}}
    assert converted.restore(sent) == {"tree": {"v": "a", "next": {"v": "b"}}}


@pytest.mark.parametrize(
    "schema",
    [
        obj({"meta": {"type": "object"}}),
        obj({"labels": {"type": "object", "additionalProperties": {"type": "string"}}}),
        obj({"x": {"type": "string"}}, additionalProperties=True),
        obj({"m": {"type": "object", "patternProperties": {"^a": {"type": "string"}}}}),
        obj({"any": {}}),
        obj({"t": {"type": "array", "prefixItems": [{"type": "string"}]}}),
        obj({"x": {"type": "string", "if": {"minLength": 1}, "then": {"maxLength": 3}}}),
        obj({"v": {"enum": [{"a": 1}]}}),
        obj({"o": obj({"a": {"type": "string"}}, ["a", "undeclared"])}),
    ],
    ids=[
        "free-form object",
        "map",
        "open root",
        "pattern keys",
        "any value",
        "tuple",
        "conditional",
        "object enum",
        "undeclared required",
    ],
)
def test_a_schema_strict_mode_cannot_say_is_not_made_strict(schema: dict[str, Any]) -> None:
    assert openai_strict_parameters(schema) is None


def test_overlapping_one_of_alternatives_are_not_made_strict_but_disjoint_ones_are() -> None:
    overlapping = obj(
        {"p": {"oneOf": [obj({"a": {"type": "string"}}), obj({"b": {"type": "string"}})]}}
    )
    by_type = obj({"p": {"oneOf": [{"type": "string"}, {"type": "integer"}]}})
    tagged = obj(
        {
            "p": {
                "oneOf": [
                    obj({"kind": {"const": "a"}, "a": {"type": "string"}}, ["kind"]),
                    obj({"kind": {"const": "b"}, "b": {"type": "string"}}, ["kind"]),
                ]
            }
        },
        ["p"],
    )

    assert openai_strict_parameters(overlapping) is None
    assert strict(by_type).schema["properties"]["p"]["anyOf"][0]["type"] == "string"
    assert len(strict(tagged).schema["properties"]["p"]["anyOf"]) == 2


def test_one_of_required_sets_stay_exclusive_as_alternatives_without_the_others() -> None:
    body = obj(
        {"id": {"type": "string"}, "owner": {"type": "string"}, "note": {"type": "string"}},
        oneOf=[{"required": ["id"]}, {"required": ["owner"]}],
    )

    converted = strict(obj({"body": body}, ["body"]))

    first, second = converted.schema["properties"]["body"]["anyOf"]
    assert set(first["properties"]) == {"id", "note"}
    assert set(second["properties"]) == {"owner", "note"}
    # A null sent for an optional property of the chosen alternative is dropped.
    assert converted.restore({"body": {"owner": "o", "note": None}}) == {"body": {"owner": "o"}}


def test_string_lengths_strict_mode_refuses_are_said_as_a_pattern() -> None:
    converted = strict(obj({"s": {"type": "string", "minLength": 2, "maxLength": 5}}, ["s"]))

    assert converted.schema["properties"]["s"] == {"type": "string", "pattern": "^[\\s\\S]{2,5}$"}


def test_keywords_strict_mode_refuses_are_left_out_and_one_of_becomes_any_of() -> None:
    schema = obj(
        {
            "s": {"type": "string", "default": "x", "examples": ["y"], "format": "uri"},
            "d": {"type": "string", "format": "date-time"},
        },
        ["s", "d"],
    )

    props = strict(schema).schema["properties"]

    assert props == {"s": {"type": "string"}, "d": {"type": "string", "format": "date-time"}}


def test_a_schema_past_the_published_limits_is_not_made_strict() -> None:
    many = {f"p{i}": {"type": "string"} for i in range(STRICT_LIMITS["properties"] + 1)}
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(STRICT_LIMITS["depth"] + 1):
        deep = obj({"x": deep}, ["x"])

    assert openai_strict_parameters(obj(many)) is None
    assert openai_strict_parameters(deep) is None
    assert openai_strict_parameters(obj({"x": {"enum": list(range(1001))}}, ["x"])) is None


def test_to_openai_tools_marks_strict_only_the_tools_that_can_be() -> None:
    decls = [
        ToolDeclaration(name="a.b", parameters=obj({"q": {"type": "string"}})),
        ToolDeclaration(name="meta", parameters=obj({"m": {"type": "object"}})),
    ]

    tools, calls = to_openai_tools(decls, strict=True)

    assert tools[0]["function"]["strict"] is True
    assert "strict" not in tools[1]["function"]
    assert tools[1]["function"]["parameters"] == obj({"m": {"type": "object", "properties": {}}})
    assert calls.restore("a_b", {"q": None}) == ("a.b", {})
    assert calls.restore("meta", {"m": {"k": 1}}) == ("meta", {"m": {"k": 1}})


def test_strict_keeps_the_original_schema_untouched() -> None:
    schema = obj({"q": {"type": "string"}, "o": obj({"x": {"type": "integer"}})})
    before = copy.deepcopy(schema)

    strict(schema)

    assert schema == before


# -- Anthropic -----------------------------------------------------------------------


def test_anthropic_tools_have_legal_names_and_validate_as_the_sdk_type() -> None:
    decl = ToolDeclaration(
        name="files/read", description="Read.", parameters=obj({"path": {"type": "string"}})
    )

    tools, calls = to_anthropic_tools([decl])

    assert tools == [
        {
            "name": "files_read",
            "description": "Read.",
            "input_schema": obj({"path": {"type": "string"}}),
        }
    ]
    TypeAdapter(ToolParam).validate_python(tools[0])
    assert calls.restore("files_read", {"path": "/a"}) == ("files/read", {"path": "/a"})


def test_property_names_anthropic_refuses_are_renamed_and_given_back() -> None:
    schema = obj(
        {"$filter": {"type": "string"}, "page[size]": {"type": "integer"}, "ok.name": {}},
        ["$filter"],
    )

    converted = anthropic_input_schema(schema)

    assert list(converted.schema["properties"]) == ["_filter", "page_size_", "ok.name"]
    assert converted.schema["required"] == ["_filter"]
    sent = {"_filter": "a", "page_size_": 2, "ok.name": 1}
    assert converted.restore(sent) == {"$filter": "a", "page[size]": 2, "ok.name": 1}


def test_renamed_properties_inside_arrays_maps_and_alternatives_come_back() -> None:
    inner = obj({"a b": {"type": "string"}})
    schema = obj(
        {
            "list": {"type": "array", "items": inner},
            "map": {"type": "object", "additionalProperties": inner},
            "either": {"anyOf": [inner, {"type": "string"}]},
        }
    )

    converted = anthropic_input_schema(schema)

    sent = {"list": [{"a_b": "1"}], "map": {"k": {"a_b": "2"}}, "either": {"a_b": "3"}}
    assert converted.restore(sent) == {
        "list": [{"a b": "1"}],
        "map": {"k": {"a b": "2"}},
        "either": {"a b": "3"},
    }
    assert converted.restore({"either": "plain"}) == {"either": "plain"}


def test_combinators_at_the_top_level_are_joined_for_anthropic() -> None:
    schema = {
        "type": "object",
        "oneOf": [
            obj({"id": {"type": "string"}}, ["id"]),
            obj({"name": {"type": "string"}}, ["name"]),
        ],
    }

    out = anthropic_input_schema(schema).schema

    assert "oneOf" not in out
    assert set(out["properties"]) == {"id", "name"}
    assert "required" not in out
    assert "exactly one" in out["description"]


# -- Gemini --------------------------------------------------------------------------


def test_gemini_parameters_use_gemini_types_and_validate_as_the_sdk_schema() -> None:
    schema = obj(
        {"q": {"type": "string", "format": "uri"}, "n": {"type": ["integer", "null"]}}, ["q"]
    )

    out = gemini_parameters(schema).schema

    assert out == {
        "type": "OBJECT",
        "properties": {
            "q": {"type": "STRING", "description": "(format: uri)"},
            "n": {"type": "INTEGER", "nullable": True},
        },
        "required": ["q"],
    }
    genai.Schema.model_validate(out)


def test_type_lists_of_several_types_become_any_of() -> None:
    out = gemini_parameters(obj({"v": {"type": ["string", "integer", "null"]}})).schema

    assert out["properties"]["v"] == {
        "anyOf": [{"type": "STRING"}, {"type": "INTEGER"}],
        "nullable": True,
    }


def test_enums_of_other_values_become_strings_and_come_back_as_they_were() -> None:
    schema = obj(
        {
            "size": {"type": "integer", "enum": [1, 2, 3]},
            "flag": {"enum": [True, False, "auto"]},
            "one": {"const": 7},
        }
    )

    converted = gemini_parameters(schema)

    props = converted.schema["properties"]
    assert props["size"] == {"type": "STRING", "enum": ["1", "2", "3"], "format": "enum"}
    assert props["flag"]["enum"] == ["true", "false", "auto"]
    assert props["one"]["enum"] == ["7"]
    sent = {"size": "2", "flag": "false", "one": "7"}
    assert converted.restore(sent) == {"size": 2, "flag": False, "one": 7}


def test_property_names_gemini_refuses_are_renamed_and_given_back() -> None:
    converted = gemini_parameters(obj({"per-page": {"type": "integer"}, "2fa": {"type": "string"}}))

    assert list(converted.schema["properties"]) == ["per_page", "_2fa"]
    assert converted.restore({"per_page": 3.0, "_2fa": "x"}) == {"per-page": 3, "2fa": "x"}


def test_what_gemini_cannot_say_goes_into_the_description() -> None:
    schema = obj(
        {
            "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
            "meta": {"type": "object", "additionalProperties": {"type": "string"}},
            "n": {"type": "integer", "exclusiveMinimum": 0, "multipleOf": 5},
            "x": {"type": "number", "exclusiveMaximum": 1.5},
            "no": {"type": "string", "not": {"const": "a"}},
        }
    )

    props = gemini_parameters(schema).schema["properties"]

    assert props["tags"]["description"] == "(items must be unique)"
    assert props["meta"]["type"] == "ARRAY"  # its entries: `test_gemini.py`
    assert props["n"] == {"type": "INTEGER", "minimum": 1, "description": "(a multiple of 5)"}
    assert props["x"]["description"] == "(less than 1.5)"
    assert props["no"] == {"type": "STRING"}


def test_references_are_inlined_and_recursion_is_cut_at_a_depth() -> None:
    node = obj(
        {"name": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#/$defs/N"}}},
        ["name"],
    )
    schema = obj({"root": {"$ref": "#/$defs/N"}}, ["root"], **{"$defs": {"N": node}})

    out = gemini_parameters(schema).schema

    level = out["properties"]["root"]
    for _ in range(GEMINI_RECURSION_DEPTH - 1):
        level = level["properties"]["children"]["items"]
    cut = level["properties"]["children"]
    # Past the depth, the rest is JSON text (of the array of nodes), read back as it is.
    assert cut["type"] == "STRING"
    assert "JSON text of an array" in cut["description"]
    assert "$defs" not in str(out)
    assert "$ref" not in str(out)
    genai.Schema.model_validate(out)


def test_gemini_declarations_have_legal_names_and_no_parameters_when_there_are_none() -> None:
    decls = [
        ToolDeclaration(name="1password/get", parameters=obj({"id": {"type": "string"}})),
        ToolDeclaration(name="ping"),
    ]

    tools, calls = to_gemini_declarations(decls)

    assert [t["name"] for t in tools] == ["_1password_get", "ping"]
    assert "parameters" not in tools[1]
    for tool in tools:
        genai.FunctionDeclaration.model_validate(tool)
    assert calls.restore("_1password_get", {"id": "a"}) == ("1password/get", {"id": "a"})


def test_the_json_schema_form_keeps_json_schema_and_drops_openapi_annotations() -> None:
    schema = obj(
        {"q": {"type": ["string", "null"], "example": "a", "x-internal": 1, "examples": ["b"]}}
    )
    decl = ToolDeclaration(name="s", parameters=schema)

    [tool], _ = to_gemini_declarations([decl], form="json_schema")

    assert tool["parametersJsonSchema"]["properties"]["q"] == {
        "type": ["string", "null"],
        "examples": ["b"],
    }
    assert gemini_parameters_json_schema(schema).changes_arguments is False
    genai.FunctionDeclaration.model_validate(tool)


def test_an_unknown_gemini_form_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="form"):
        to_gemini_declarations([], form="openapi")  # type: ignore[arg-type]


# -- the way back, whatever the dialect ------------------------------------------------


def test_an_unknown_provider_name_comes_back_with_a_copy_of_its_arguments() -> None:
    _, calls = to_anthropic_tools([ToolDeclaration(name="a")])
    sent = {"x": 1}

    name, arguments = calls.restore("nope", sent)

    assert (name, arguments) == ("nope", {"x": 1})
    assert arguments is not sent
    assert isinstance(calls, ToolCallMap)
    assert calls.schema("a") is not None


def test_every_dialect_names_the_tool_whose_schema_is_broken() -> None:
    broken = ToolDeclaration(name="b", parameters=obj({"x": {"$ref": "#/$defs/Nope"}}))

    for convert in (to_anthropic_tools, to_gemini_declarations):
        with pytest.raises(SpecError) as info:
            convert([broken])
        assert info.value.source == "tool:b"
    with pytest.raises(SpecError):
        to_openai_tools([broken], strict=True)


def test_a_tool_taking_a_free_form_map_keeps_its_parameters_for_gemini() -> None:
    labels = ToolDeclaration(
        name="tag",
        parameters={"type": "object", "additionalProperties": {"type": "string"}},
    )
    bare = ToolDeclaration(name="ping", parameters={"type": "object", "properties": {}})
    (tag, ping), _ = to_gemini_declarations([labels, bare], form="json_schema")
    assert tag["parametersJsonSchema"]["additionalProperties"] == {"type": "string"}
    assert "parametersJsonSchema" not in ping
