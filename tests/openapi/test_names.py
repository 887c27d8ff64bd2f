"""Finding an OpenAPI tool: by its name or by the spec's own operationId; an unknown name
gets the closest few names, not the whole catalogue (GitHub's: 1,223 tools)."""

from __future__ import annotations

import pytest

from tests.openapi.helpers import FIXTURES, GITHUB
from toolsets import ToolNotFoundError
from toolsets.openapi import OpenApiToolset

pytestmark = pytest.mark.anyio


async def test_get_tool_takes_the_operation_id_as_the_spec_writes_it() -> None:
    async with OpenApiToolset(FIXTURES / "bookshop.yaml") as toolset:
        by_id = await toolset.get_tool("books/search")
        by_name = await toolset.get_tool("books_search")
    assert by_id is by_name
    assert by_id.operation.operation_id == "books/search"


async def test_an_unknown_github_tool_gets_a_short_answer_with_the_closest_names() -> None:
    async with OpenApiToolset(GITHUB) as toolset:
        assert (await toolset.get_tool("repos/get")).name == "repos_get"
        with pytest.raises(ToolNotFoundError) as caught:
            await toolset.get_tool("repos_gett")
    error = caught.value
    assert error.name == "repos_gett"
    assert "repos_get" in error.suggestions
    assert len(error.available) == 1223
    assert len(str(error)) < 300  # was 43,649 characters
