"""``additionalProperties: false`` in every dialect: the tools say it where toolsets refuses
unknown arguments (OpenAPI operations, function tools, an optional body taken whole), and
each provider's form of such a declaration stays one it accepts."""

from __future__ import annotations

from typing import Any

from anthropic.types import ToolParam
from google.genai import types as genai
from openai.types.chat import ChatCompletionFunctionToolParam
from pydantic import TypeAdapter

from tests.schema.judge import walk
from toolsets import ToolDeclaration
from toolsets.schema import (
    to_anthropic_tools,
    to_gemini_declarations,
    to_openai_tools,
)

CLOSED: dict[str, Any] = {
    "type": "object",
    "properties": {
        "q": {"type": "string"},
        "body": {
            "type": "object",
            "properties": {"code": {"type": "string"}, "note": {"type": "string"}},
            "required": ["code"],
            "additionalProperties": False,
        },
    },
    "required": ["q"],
    "additionalProperties": False,
}
DECLARATION = ToolDeclaration(name="open", description="Open.", parameters=CLOSED)
NOTHING = ToolDeclaration(
    name="ping", parameters={"type": "object", "properties": {}, "additionalProperties": False}
)
ARGUMENTS = {"q": "a", "body": {"code": "x"}}


def test_openai_and_anthropic_say_it_where_the_tool_does() -> None:
    (plain, ping), plain_calls = to_openai_tools([DECLARATION, NOTHING])
    (strict, _), strict_calls = to_openai_tools([DECLARATION, NOTHING], strict=True)
    (anthropic, _), anthropic_calls = to_anthropic_tools([DECLARATION, NOTHING])

    for parameters in (plain["function"]["parameters"], anthropic["input_schema"]):
        assert parameters["additionalProperties"] is False
        assert parameters["properties"]["body"]["additionalProperties"] is False
    assert strict["function"]["strict"] is True
    assert ping["function"]["parameters"]["additionalProperties"] is False
    for tool in (plain, strict, ping):
        TypeAdapter(ChatCompletionFunctionToolParam).validate_python(tool)
    TypeAdapter(ToolParam).validate_python(anthropic)
    for calls in (plain_calls, strict_calls, anthropic_calls):
        assert calls.restore("open", ARGUMENTS) == ("open", ARGUMENTS)


def test_gemini_parameters_leave_it_unsaid_and_the_json_schema_form_says_it() -> None:
    # Gemini's Schema takes only the properties it lists; the Developer API refuses
    # additionalProperties in it (Vertex alone takes it): closed needs no keyword there.
    (tool, ping), calls = to_gemini_declarations([DECLARATION, NOTHING])
    (json_tool, json_ping), json_calls = to_gemini_declarations(
        [DECLARATION, NOTHING], form="json_schema"
    )

    assert all("additionalProperties" not in schema for _, schema in walk(tool["parameters"]))
    assert tool["parameters"]["properties"]["body"]["required"] == ["code"]
    assert json_tool["parametersJsonSchema"]["additionalProperties"] is False
    assert json_tool["parametersJsonSchema"]["properties"]["body"]["additionalProperties"] is False
    assert "parameters" not in ping
    assert "parametersJsonSchema" not in json_ping
    for declaration in (tool, ping, json_tool, json_ping):
        genai.FunctionDeclaration.model_validate(declaration)
    for back in (calls, json_calls):
        assert back.restore("open", ARGUMENTS) == ("open", ARGUMENTS)
