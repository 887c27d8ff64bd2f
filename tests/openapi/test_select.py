"""Selecting operations of GitHub's spec with ``filtered(toolset, select_operations(...))``,
counted against the spec read independently (plain JSON)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from fnmatch import fnmatchcase
from typing import Any

import anyio
import pytest

from tests.openapi.helpers import GITHUB
from toolsets import StaticToolset, ToolContext, filtered, tool
from toolsets.openapi import OpenApiToolset, RestApiTool, select_operations

pytestmark = pytest.mark.anyio

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


@pytest.fixture(scope="module")
def raw() -> list[tuple[str, str, dict[str, Any]]]:
    spec = json.loads(GITHUB.read_text())
    return [
        (method, path, op)
        for path, item in spec["paths"].items()
        for method, op in item.items()
        if method in METHODS
    ]


@pytest.fixture(scope="module")
def github() -> Iterator[OpenApiToolset]:
    toolset = OpenApiToolset(GITHUB)
    yield toolset
    anyio.run(toolset.shutdown)


async def names(toolset: Any) -> list[str]:
    return [t.name for t in await toolset.list_tools(ToolContext())]


async def test_by_tag_and_method_together(
    github: OpenApiToolset, raw: list[tuple[str, str, dict[str, Any]]]
) -> None:
    kept = await names(filtered(github, select_operations(tags=["repos"], methods=["GET"])))
    expected = [op for m, _, op in raw if m == "get" and "repos" in op.get("tags", [])]
    assert len(kept) == len(expected) > 100
    assert "repos_get_branch" in kept
    assert "repos_delete" not in kept


async def test_by_operation_id_as_written_or_as_named(github: OpenApiToolset) -> None:
    chosen = select_operations(ids=["repos/get-branch", "issues_create", "no/such-thing"])
    assert sorted(await names(filtered(github, chosen))) == ["issues_create", "repos_get_branch"]


async def test_by_path_pattern_with_an_exclusion(
    github: OpenApiToolset, raw: list[tuple[str, str, dict[str, Any]]]
) -> None:
    pattern = "/repos/{owner}/{repo}/branches*"
    chosen = select_operations(paths=[pattern], exclude=lambda t: t.operation.method == "delete")
    kept = await names(filtered(github, chosen))
    expected = [op for m, p, op in raw if fnmatchcase(p, pattern) and m != "delete"]
    assert len(kept) == len(expected) > 5
    tools = {t.name: t for t in await github.list_tools()}
    assert all(isinstance(tools[n], RestApiTool) for n in kept)
    assert all(tools[n].operation.path.startswith("/repos/{owner}/{repo}/branches") for n in kept)


@tool
def ping() -> str:
    """Not an API operation."""
    return "pong"


async def test_tools_that_are_not_operations_never_match() -> None:
    assert await names(filtered(StaticToolset([ping]), select_operations())) == []


def test_a_single_string_where_a_list_belongs_is_refused_not_read_letter_by_letter() -> None:
    with pytest.raises(TypeError, match=r"methods=\.\.\.\) takes a list of strings: \['get'\]"):
        select_operations(methods="get")
