"""What a RestApiTool does with arguments the operation does not take, and with arguments
that are not an object at all: refused with the same ``fields`` map as function tools,
and nothing sent (the recording server on 127.0.0.1 sees every request)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.openapi.helpers import FIXTURES, recording_server
from toolsets import ToolContext, tool
from toolsets._invoke import Done, invoke
from toolsets.openapi import OpenApiToolset

pytestmark = pytest.mark.anyio

BOOKSHOP = FIXTURES / "bookshop.yaml"
BOOK = {"isbn": "9780141439686", "title": "Emma", "author": "Jane Austen", "price": 9.5}

NOTES: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {"title": "Notes", "version": "1"},
    "paths": {
        "/notes": {
            "post": {
                "operationId": "notes/add",
                "parameters": [{"name": "dry_run", "in": "query", "schema": {"type": "boolean"}}],
                "requestBody": {
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "properties": {"text": {"type": "string"}},
                            }
                        }
                    }
                },
                "responses": {"201": {"description": "made"}},
            }
        },
        "/labels": {
            "put": {
                "operationId": "labels/set",
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "properties": {"owner": {"type": "string"}},
                                "additionalProperties": {"type": "string", "maxLength": 20},
                            }
                        }
                    },
                },
                "responses": {"204": {"description": "set"}},
            }
        },
    },
}


def fields(result: object) -> dict[str, str]:
    """The ``fields`` of an invalid-arguments result."""
    assert isinstance(result, dict)
    found = result["fields"]
    assert isinstance(found, dict)
    return found


async def test_a_misspelt_argument_is_refused_naming_it_and_nothing_is_sent() -> None:
    async with (
        recording_server() as server,
        OpenApiToolset(BOOKSHOP, base_url=server.url, credentials={"shop_key": "k"}) as ts,
    ):
        add = await ts.get_tool("books_add")
        result = await add.run({**BOOK, "titel": "typo"}, ToolContext())
        search = await ts.get_tool("books_search")
        searched = await search.run({"q": "austen", "max_prise": 10}, ToolContext())
    assert server.requests == []
    assert list(fields(result)) == ["titel"]
    assert "'title'" in fields(result)["titel"]  # did you mean
    assert list(fields(searched)) == ["max_prise"]


async def test_the_arguments_say_they_take_nothing_else_unless_the_body_takes_more() -> None:
    async with OpenApiToolset(BOOKSHOP, base_url="http://127.0.0.1:9") as ts:
        add = await ts.get_tool("books_add")
        search = await ts.get_tool("books_search")
        labels = await OpenApiToolset(NOTES, base_url="http://127.0.0.1:9").get_tool("labels_set")
    declared = add.declaration()
    assert declared is not None
    assert declared.parameters["additionalProperties"] is False
    assert search.parameters["additionalProperties"] is False
    assert labels.parameters["additionalProperties"] == {"type": "string", "maxLength": 20}


async def test_an_argument_the_tool_does_not_take_is_refused_before_the_user_is_asked() -> None:
    # The call path checks the declared schema before asking for confirmation: closed,
    # it refuses the misspelt name there (the user is never asked about a doomed call).
    async with (
        recording_server() as server,
        OpenApiToolset(BOOKSHOP, base_url=server.url, credentials={"shop_key": "k"}) as ts,
    ):
        remove = await ts.get_tool("books_remove")
        outcome = await invoke(
            remove, {"isbn": "9780141439686", "forse": True}, ToolContext(), default_timeout=5
        )
    assert isinstance(outcome, Done)
    assert list(fields(outcome.result)) == ["forse"]
    assert server.requests == []


async def test_a_body_that_takes_more_properties_gets_them_and_checks_them() -> None:
    async with (
        recording_server() as server,
        OpenApiToolset(NOTES, base_url=server.url) as ts,
    ):
        labels = await ts.get_tool("labels_set")
        assert await labels.run({"owner": "ann", "colour": "red"}, ToolContext()) == {"ok": True}
        too_long = await labels.run({"owner": "ann", "colour": "r" * 21}, ToolContext())
    assert list(fields(too_long)) == ["colour"]
    (request,) = server.requests
    assert json.loads(request.body) == {"owner": "ann", "colour": "red"}


@pytest.mark.parametrize(
    "received",
    ["{not json", [1, 2], None, "", 3, {"_invalid_json": "{not json"}],
    ids=["text", "list", "null", "empty", "number", "invalid-json-marker"],
)
async def test_arguments_that_are_not_an_object_are_refused_as_function_tools_refuse_them(
    received: Any,
) -> None:
    @tool
    def add_note(text: str = "") -> str:
        """Add a note."""
        return text

    expected = await add_note.run(received, ToolContext())
    async with recording_server() as server, OpenApiToolset(NOTES, base_url=server.url) as ts:
        notes = await ts.get_tool("notes_add")
        assert await notes.run({}, ToolContext()) == {"ok": True}  # nothing is required
        result = await notes.run(received, ToolContext())
    assert len(server.requests) == 1  # only the valid call was sent
    assert list(fields(result)) == list(fields(expected))


async def test_null_for_an_optional_argument_means_not_given_as_strict_hosts_send_it() -> None:
    # OpenAI's strict mode declares every optional argument nullable; the model then
    # sends null for "not given". A required one is still refused.
    async with (
        recording_server() as server,
        OpenApiToolset(NOTES, base_url=server.url, confirm="never") as ts,
        OpenApiToolset(BOOKSHOP, base_url=server.url, credentials={"shop_key": "k"}) as shop,
    ):
        add = await ts.get_tool("notes_add")
        sent = await add.run({"dry_run": None, "text": "hi"}, ToolContext())
        add_book = await shop.get_tool("books_add")
        refused = await add_book.run({**BOOK, "title": None}, ToolContext())
    assert not (isinstance(sent, dict) and "error" in sent), sent
    (request,) = server.requests
    assert request.request_line == "POST /notes HTTP/1.1"
    assert json.loads(request.body) == {"text": "hi"}
    assert list(fields(refused)) == ["title"]


# --- formats ----------------------------------------------------------------------------

FORMATTED: dict[str, tuple[str, Any, Any]] = {
    # format: (type, a value that is one, a value that is not), as models have sent them
    "date": ("string", "2024-05-06", "2024-5-6"),
    "date-time": ("string", "2024-05-06T07:08:09Z", "yesterday"),
    "time": ("string", "07:08:09+02:00", "7pm"),
    "uuid": ("string", "123e4567-e89b-12d3-a456-426614174000", "29"),
    "email": ("string", "octo.cat@example.com", "octocat at example"),
    "ipv4": ("string", "192.0.2.1", "192.0.2"),
    "ipv6": ("string", "2001:db8::1", "2001:db8::g"),
    "uri": ("string", "https://example.com/a?b=c", "example.com/a"),
    "hostname": ("string", "api.example.com", "api_example.com"),
    "byte": ("string", "aGVsbG8=", "hello!"),
    "int32": ("integer", 2**31 - 1, 2**31),
    "int64": ("integer", -(2**63), -(2**63) - 1),
    "float": ("number", 1.5e38, 1e39),
    "double": ("number", 1.5e308, json.loads("1e999")),  # what Python reads: infinity
}


def formatted_spec() -> dict[str, Any]:
    """One operation taking a query parameter of each format, and the same in its body."""
    parameters = [
        {
            "name": f"q_{name.replace('-', '_')}",
            "in": "query",
            "schema": {"type": t, "format": name},
        }
        for name, (t, _, _) in FORMATTED.items()
    ]
    body = {
        "type": "object",
        "properties": {
            name.replace("-", "_"): {"type": t, "format": name}
            for name, (t, _, _) in FORMATTED.items()
        },
    }
    return {
        "openapi": "3.0.3",
        "info": {"title": "formats", "version": "1"},
        "paths": {
            "/things": {
                "post": {
                    "operationId": "things_add",
                    "parameters": parameters,
                    "requestBody": {"content": {"application/json": {"schema": body}}},
                    "responses": {"201": {"description": "made"}},
                }
            }
        },
    }


@pytest.mark.parametrize("name", list(FORMATTED))
async def test_a_value_not_of_its_format_is_refused_naming_the_field_and_nothing_is_sent(
    name: str,
) -> None:
    _, valid, invalid = FORMATTED[name]
    field = name.replace("-", "_")
    async with (
        recording_server() as server,
        OpenApiToolset(formatted_spec(), base_url=server.url, confirm="never") as ts,
    ):
        add = await ts.get_tool("things_add")
        in_body = await add.run({field: invalid}, ToolContext())
        in_query = await add.run({f"q_{field}": invalid}, ToolContext())
        assert server.requests == []
        assert await add.run({field: valid, f"q_{field}": valid}, ToolContext()) == {"ok": True}
    assert list(fields(in_body)) == [field]
    assert list(fields(in_query)) == [f"q_{field}"]
    assert f"not a valid {name}" in fields(in_body)[field]
    (request,) = server.requests
    assert json.loads(request.body) == {field: valid}


async def test_a_format_no_standard_defines_one_way_is_not_checked() -> None:
    spec = formatted_spec()
    body = spec["paths"]["/things"]["post"]["requestBody"]["content"]["application/json"]
    body["schema"]["properties"]["colour"] = {"type": "string", "format": "color"}
    async with (
        recording_server() as server,
        OpenApiToolset(spec, base_url=server.url, confirm="never") as ts,
    ):
        add = await ts.get_tool("things_add")
        assert await add.run({"colour": "a warm red"}, ToolContext()) == {"ok": True}
    assert len(server.requests) == 1
