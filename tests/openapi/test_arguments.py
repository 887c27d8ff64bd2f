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
