"""``toolsets inspect``: one tool's description, parameter schema and what it returns,
an OpenAPI operation's request (its URL without the base URL's password), and an example
call that runs."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from tests.adapters.helpers import NotesApi
from tests.cli.helpers import (
    FIXTURE_STDIO,
    stdout_json,
    toolsets_command,
)
from tests.helpers import ROOT


def test_inspect_shows_the_description_the_schema_and_an_example_call(
    sources: dict[str, Path],
) -> None:
    done = toolsets_command("inspect", str(sources["notes"]), "create_note")
    assert done.returncode == 0, done.stderr
    assert "Create a note" in done.stdout
    assert '"minLength": 1' in done.stdout  # the full schema
    example = done.stdout.splitlines()[-1]
    assert example.startswith(f"toolsets call {sources['notes']} create_note --args ")


def test_the_example_call_inspect_makes_is_valid_and_runs(
    sources: dict[str, Path], api: NotesApi
) -> None:
    spec = str(sources["notes"])
    described = stdout_json(toolsets_command("inspect", spec, "create_note", "--json"))
    example = described["example"]
    assert example == {"title": "example"}
    done = toolsets_command(
        "call", spec, "create_note", "--base-url", api.url, "--args", json.dumps(example)
    )
    assert stdout_json(done)["title"] == "example"


def test_an_operation_is_found_by_its_operation_id_as_the_spec_writes_it(tmp_path: Path) -> None:
    spec = tmp_path / "ids.yaml"
    spec.write_text(
        "openapi: 3.1.0\ninfo: {title: ids, version: '1'}\npaths:\n  /r:\n    get:\n"
        "      operationId: repos/get\n      responses: {'200': {description: ok}}\n"
    )
    described = stdout_json(toolsets_command("inspect", str(spec), "repos/get", "--json"))
    assert described["name"] == "repos_get"


def test_inspect_shows_an_operations_request_and_what_it_returns() -> None:
    spec = str(ROOT / "fixtures" / "openapi" / "bookshop.yaml")
    described = stdout_json(toolsets_command("inspect", spec, "books_get", "--json"))
    assert described["operation"] == {
        "method": "GET",
        "path": "/books/{isbn}",
        "url": "https://bookshop.example/api/v1/books/{isbn}",
        "operation_id": "books/get",
        "response": {
            "status": "200",
            "content_type": "application/json",
            "description": "The book.",
        },
    }
    returns = described["returns"]  # the spec's Book, its $ref followed
    assert set(returns["allOf"][0]["properties"]) == {"isbn", "title", "author", "price", "year"}
    text = toolsets_command("inspect", spec, "books_get")
    assert text.returncode == 0, text.stderr
    assert "GET https://bookshop.example/api/v1/books/{isbn}  (operationId books/get)" in (
        text.stdout
    )
    assert "Returns (200 application/json: The book.)" in text.stdout
    assert '"isbn": {' in text.stdout.partition("Returns")[2]


def test_the_url_an_operation_is_sent_to_is_shown_without_the_base_urls_password() -> None:
    spec = str(ROOT / "fixtures" / "openapi" / "bookshop.yaml")
    base = ["--base-url", "https://alice:s3cret-pw@api.example.com/v1"]
    listed = stdout_json(toolsets_command("list", spec, *base, "--json"))
    text = toolsets_command("inspect", spec, "books_get", *base)
    assert text.returncode == 0, text.stderr
    assert {tool["operation"]["url"] for tool in listed} >= {
        "https://api.example.com/v1/books/{isbn}"
    }
    request_line = next(line for line in text.stdout.splitlines() if line.startswith("GET "))
    assert request_line.startswith("GET https://api.example.com/v1/books/{isbn}")
    assert "s3cret-pw" not in json.dumps(listed)


def test_inspect_says_when_an_operation_has_no_server_to_send_to(
    sources: dict[str, Path],
) -> None:
    text = toolsets_command("inspect", str(sources["notes"]), "get_note")
    assert text.returncode == 0, text.stderr
    assert "GET /notes/{note_id} (no server URL: give --base-url to call it)" in text.stdout
    assert "Returns (200: the note)" in text.stdout  # no body declared: no schema


def test_a_success_response_that_cannot_be_read_is_a_warning_and_the_rest_is_shown(
    tmp_path: Path,
) -> None:
    spec = tmp_path / "gone.json"
    missing = {"$ref": "#/components/schemas/Gone"}
    ok = {"description": "ok", "content": {"application/json": {"schema": missing}}}
    spec.write_text(
        json.dumps(
            {
                "openapi": "3.0.3",
                "info": {"title": "gone", "version": "1"},
                "paths": {"/r": {"get": {"operationId": "get_r", "responses": {"200": ok}}}},
            }
        )
    )
    done = toolsets_command("inspect", str(spec), "get_r", "--json")
    assert done.returncode == 0, done.stderr
    described = json.loads(done.stdout)
    assert described["returns"] is None
    assert described["operation"]["method"] == "GET"
    assert done.stderr.startswith("toolsets: warning: what get_r returns cannot be shown: ")
    assert "Gone" in done.stderr


def test_inspect_of_a_tool_on_an_mcp_server(sources: dict[str, Path]) -> None:
    described = stdout_json(toolsets_command("inspect", "--stdio", FIXTURE_STDIO, "add", "--json"))
    assert described["parameters"]["required"] == ["a", "b"]
    assert described["example"] == {"a": 1, "b": 1}
    assert described["returns"]["required"] == ["total"]  # the tool's output schema


def test_the_example_call_of_a_prefixed_tool_keeps_the_prefix_and_runs(
    sources: dict[str, Path],
) -> None:
    shown = toolsets_command(
        "inspect",
        str(sources["notes"]),
        "--prefix",
        "n",
        "--stdio",
        FIXTURE_STDIO,
        "--prefix",
        "fx",
        "fx_add",
        "--base-url",
        "http://127.0.0.1:9",
    )
    assert shown.returncode == 0, shown.stderr
    example = shlex.split(shown.stdout.strip().splitlines()[-1])
    assert example[:2] == ["toolsets", "call"]
    assert stdout_json(toolsets_command(*example[1:])) == {"total": 2}
