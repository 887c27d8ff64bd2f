"""``headers=``: fixed headers for every request to the API (a token for a spec that
defines no security scheme, as GitHub's), sent to the API's origin only, checked up front,
and never shown in a repr."""

from __future__ import annotations

from typing import Any

import pytest

from tests.openapi.helpers import FIXTURES, recording_server
from toolsets import ToolContext, ToolDefinitionError
from toolsets.openapi import OpenApiToolset

pytestmark = pytest.mark.anyio

TOKEN = "ghp_s3cretT0ken"
BOOKSHOP = FIXTURES / "bookshop.yaml"
NO_SCHEMES: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "repos", "version": "1"},
    "paths": {
        "/repos/{owner}/{repo}": {
            "get": {
                "operationId": "repos/get",
                "parameters": [
                    {"name": "owner", "in": "path", "required": True, "schema": {"type": "string"}},
                    {"name": "repo", "in": "path", "required": True, "schema": {"type": "string"}},
                    {"name": "X-Trace", "in": "header", "schema": {"type": "string"}},
                ],
                "responses": {"200": {"description": "the repository"}},
            }
        }
    },
}
HEADERS = {"Authorization": f"Bearer {TOKEN}", "X-GitHub-Api-Version": "2022-11-28"}


async def test_headers_are_sent_with_every_call_of_a_spec_without_security_schemes() -> None:
    async with (
        recording_server() as server,
        OpenApiToolset(NO_SCHEMES, base_url=server.url, headers=HEADERS) as ts,
    ):
        tool = await ts.get_tool("repos_get")
        await tool.run({"owner": "o", "repo": "r"}, ToolContext())
        await tool.run({"owner": "o", "repo": "r", "X-Trace": "from-the-call"}, ToolContext())
    first, second = server.requests
    assert first.headers["authorization"] == f"Bearer {TOKEN}"
    assert first.headers["x-github-api-version"] == "2022-11-28"
    assert second.headers["authorization"] == f"Bearer {TOKEN}"


async def test_a_call_s_own_header_and_a_scheme_s_credential_win_over_headers() -> None:
    async with (
        recording_server() as server,
        OpenApiToolset(
            BOOKSHOP,
            base_url=server.url,
            credentials={"shop_key": "from-credentials"},
            headers={"X-Shop-Key": "from-headers", "X-Tenant": "t1"},
        ) as ts,
        OpenApiToolset(NO_SCHEMES, base_url=server.url, headers={"x-trace": "fixed"}) as repos,
    ):
        await (await ts.get_tool("books_get")).run({"isbn": "9780141439686"}, ToolContext())
        tool = await repos.get_tool("repos_get")
        await tool.run({"owner": "o", "repo": "r", "X-Trace": "per-call"}, ToolContext())
    shop, repo = server.requests
    assert shop.headers["x-shop-key"] == "from-credentials"
    assert shop.headers["x-tenant"] == "t1"
    assert repo.headers["x-trace"] == "per-call"
    assert repo.head.lower().count(b"x-trace") == 1


@pytest.mark.parametrize("where", ["same-origin", "other-port", "other-host"])
async def test_headers_never_follow_a_redirect_to_another_origin(where: str) -> None:
    async with recording_server() as other, recording_server() as api:
        target = api if where == "same-origin" else other
        host = "localhost" if where == "other-host" else "127.0.0.1"
        api.first.append((302, {"Location": f"http://{host}:{target.port}/elsewhere"}))
        async with OpenApiToolset(NO_SCHEMES, base_url=api.url, headers=HEADERS) as ts:
            tool = await ts.get_tool("repos_get")
            assert await tool.run({"owner": "o", "repo": "r"}, ToolContext()) == {"ok": True}
    first, followed = (
        target.requests if where == "same-origin" else (*api.requests, *other.requests)
    )
    assert first.headers["authorization"] == f"Bearer {TOKEN}"
    if where == "same-origin":
        assert followed.headers["authorization"] == f"Bearer {TOKEN}"
        assert followed.headers["x-github-api-version"] == "2022-11-28"
    else:
        assert "authorization" not in followed.headers
        assert "x-github-api-version" not in followed.headers


@pytest.mark.parametrize(
    ("headers", "named"),
    [
        ({"Authorization": f"Bearer {TOKEN}\r\nX-Evil: 1"}, "Authorization"),
        ({"Authorization": f"Bearer {TOKEN}\n"}, "Authorization"),
        ({"X-Key": f"{TOKEN}\x00"}, "X-Key"),
        ({"X-Key": f"{TOKEN}é"}, "X-Key"),
        ({"X-Key": f" {TOKEN}"}, "X-Key"),
        ({"X Key": TOKEN}, "X Key"),
        ({"": TOKEN}, ""),
        ({"Content-Length": "3"}, "Content-Length"),
        ({"X-Key": 42}, "X-Key"),
    ],
    ids=[
        "crlf",
        "trailing-newline",
        "nul",
        "non-ascii",
        "padded",
        "space-in-name",
        "no-name",
        "framing",
        "not-a-string",
    ],
)
def test_a_header_that_cannot_be_sent_is_refused_up_front_without_its_value(
    headers: dict[str, Any], named: str
) -> None:
    with pytest.raises(ToolDefinitionError) as caught:
        OpenApiToolset(NO_SCHEMES, headers=headers)
    assert caught.value.field == f"headers[{named!r}]"
    assert TOKEN not in str(caught.value)


async def test_header_values_are_kept_out_of_reprs() -> None:
    toolset = OpenApiToolset(NO_SCHEMES, base_url="http://127.0.0.1:9", headers=HEADERS)
    shown = [repr(toolset), repr(vars(toolset)), repr(toolset.headers)]
    async with toolset:
        tool = await toolset.get_tool("repos_get")
        shown += [repr(tool), repr(vars(tool))]
    assert all(TOKEN not in text for text in shown)
    assert TOKEN not in repr(vars(toolset.headers))
    assert "Authorization" in repr(toolset.headers)
    assert dict(toolset.headers) == HEADERS  # the values are there, only not shown


@pytest.mark.parametrize("status", [200, 401])
async def test_a_header_token_the_api_quotes_back_is_masked_in_the_result(status: int) -> None:
    # Only credential headers are secrets: the API version (another header) quoted in
    # the body is data, and stays as it is.
    async with recording_server() as server:
        server.status = status
        server.body = {
            "message": f"bad token {TOKEN}",
            "echo": [f"Bearer {TOKEN}"],
            "created_at": "2022-11-28T10:00:00Z",
        }
        async with OpenApiToolset(NO_SCHEMES, base_url=server.url, headers=HEADERS) as ts:
            result = await (await ts.get_tool("repos_get")).run(
                {"owner": "o", "repo": "r"}, ToolContext()
            )
    assert TOKEN not in repr(result)
    assert "**********" in repr(result)
    assert "2022-11-28T10:00:00Z" in repr(result)
