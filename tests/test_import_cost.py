"""What a program that serves a JSON spec imports before its first ``tools/list`` is
answered: not jsonschema, regex, PyYAML nor rich's tables, which only other paths need
(they are imported when first used); and those paths still work."""

from __future__ import annotations

import subprocess
import sys

import pytest

from toolsets import ToolContext
from toolsets.openapi import OpenApiToolset

pytestmark = pytest.mark.anyio

LATER = ("jsonschema", "referencing", "regex", "yaml", "rich.table")
"""Modules imported when first used, never by serving a JSON spec's tool list."""

SPEC = {
    "openapi": "3.1.0",
    "info": {"title": "items", "version": "1"},
    "paths": {
        "/items/{id}": {
            "get": {
                "operationId": "getItem",
                "parameters": [
                    {
                        "name": "id",
                        "in": "path",
                        "required": True,
                        "schema": {"type": "string", "pattern": "^\\p{L}+$"},
                    }
                ],
                "responses": {
                    "200": {
                        "description": "the item",
                        "content": {"application/json": {"schema": {"type": "object"}}},
                    }
                },
            }
        }
    },
}

SERVE_AND_LIST = f"""
import sys, anyio
from mcp import Client
import toolsets.cli._serve
from toolsets.mcp import McpServer
from toolsets.openapi import OpenApiToolset

async def main():
    server = McpServer(OpenApiToolset({SPEC!r}, base_url="http://127.0.0.1:9"))
    async with Client(server.server) as client:
        listed = await client.list_tools()
    print([t.name for t in listed.tools])
    print(sorted(m for m in {LATER!r} if m in sys.modules))

anyio.run(main)
"""


def test_serving_a_json_spec_lists_its_tools_before_importing_what_only_other_paths_need() -> None:
    run = subprocess.run(
        [sys.executable, "-c", SERVE_AND_LIST],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    names, imported = run.stdout.strip().splitlines()
    assert names == "['getItem']"
    assert imported == "[]"


async def test_the_first_check_of_arguments_imports_what_it_needs_and_reads_ecma_patterns() -> None:
    async with OpenApiToolset(SPEC, base_url="http://127.0.0.1:9") as toolset:
        (item,) = await toolset.list_tools()
        refused = await item.run({"id": "123"}, ToolContext())
    assert isinstance(refused, dict)
    assert set(refused["fields"]) == {"id"}


def test_the_ecma_schema_validator_is_made_when_first_asked_for() -> None:
    from toolsets import _patterns
    from toolsets._patterns import SchemaValidator

    checker = SchemaValidator({"type": "string", "pattern": "^\\p{L}+$"})
    assert checker.is_valid("Straße")
    assert not checker.is_valid("123")
    with pytest.raises(AttributeError):
        _patterns.NotThere  # noqa: B018


async def test_a_yaml_spec_is_read_when_first_met() -> None:
    async with OpenApiToolset(
        "openapi: 3.1.0\ninfo: {title: t, version: '1'}\npaths: {}\n"
    ) as toolset:
        assert await toolset.list_tools() == ()


SEARCH_LATER = ("toolsets.search._index", "toolsets.search._lexicon", "toolsets.search._spelling")
"""The search index's modules, imported when a search (or `toolsets.search.ToolIndex`)
first needs them, never by ``import toolsets``."""


def test_importing_toolsets_does_not_load_the_search_index_until_it_is_used() -> None:
    check = (
        "import sys, toolsets\n"
        f"print(sorted(m for m in {SEARCH_LATER!r} if m in sys.modules))\n"
        "from toolsets.search import ToolIndex\n"
        f"print(sorted(m for m in {SEARCH_LATER!r} if m in sys.modules))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", check], capture_output=True, text=True, timeout=120, check=True
    )
    before, after = run.stdout.strip().splitlines()
    assert before == "[]"
    assert after == str(sorted(SEARCH_LATER))
