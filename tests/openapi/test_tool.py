"""RestApiTool against a real HTTP server on 127.0.0.1 that records the raw request."""

from __future__ import annotations

import gc
import json
from typing import Any

import anyio
import anyio.abc
import httpx2
import pytest

from tests.agent.helpers import approve, asked_to_confirm, one_call, response_of
from tests.openapi.helpers import FIXTURES, recording_server
from toolsets import (
    ConnectionError,
    FunctionCall,
    ToolCallError,
    ToolContext,
    ToolDefinitionError,
    prefixed,
)
from toolsets.openapi import OpenApiToolset

pytestmark = pytest.mark.anyio

SPEC = FIXTURES / "shapes.yaml"


def live_clients() -> int:
    """How many HTTP clients exist in this process (after a collection): a client made and
    kept is counted, whoever holds it."""
    gc.collect()
    return sum(isinstance(o, httpx2.AsyncClient) for o in gc.get_objects())


async def test_path_and_query_values_are_encoded_never_spliced() -> None:
    async with recording_server() as server, OpenApiToolset(SPEC, base_url=server.url) as ts:
        tool = await ts.get_tool("trees_get_tree")
        result = await tool.run({"id": "a/b c?#", "depth": 2}, ToolContext())
        assert result == {"ok": True}
    (request,) = server.requests
    assert request.request_line == "GET /trees/a%2Fb%20c%3F%23?depth=2 HTTP/1.1"


async def test_body_header_and_path_go_where_the_spec_says() -> None:
    async with recording_server() as server, OpenApiToolset(SPEC, base_url=server.url) as ts:
        tool = await ts.get_tool("trees_replace_tree")
        args = {"id": "t1", "header_id": "h-1", "root": {"label": "x", "children": []}}
        await tool.run(args, ToolContext())
    (request,) = server.requests
    assert request.request_line == "PUT /trees/t1 HTTP/1.1"
    assert request.headers["id"] == "h-1"
    assert request.headers["content-type"] == "application/json"
    assert json.loads(request.body) == {"root": {"label": "x", "children": []}}


async def test_invalid_arguments_name_the_field_and_nothing_is_sent() -> None:
    async with recording_server() as server, OpenApiToolset(SPEC, base_url=server.url) as ts:
        tool = await ts.get_tool("trees_get_tree")
        result = await tool.run({"id": "t", "depth": "deep"}, ToolContext())
    assert isinstance(result, dict)
    assert "depth" in result["fields"]  # type: ignore[operator]
    assert server.requests == []


async def test_an_http_error_goes_back_to_the_model_with_status_and_body() -> None:
    async with recording_server() as server, OpenApiToolset(SPEC, base_url=server.url) as ts:
        server.status, server.body = 404, {"message": "Not Found"}
        tool = await ts.get_tool("trees_get_tree")
        result = await tool.run({"id": "nope"}, ToolContext())
    assert result == {"error": "HTTP 404 X", "status": 404, "body": {"message": "Not Found"}}


async def test_server_variables_default_from_the_spec() -> None:
    async with OpenApiToolset(SPEC, server_variables={"host": "api.test"}) as ts:
        tool = await ts.get_tool("trees_get_tree")
        request = tool.build_request({"id": "x"})
    assert str(request.url) == "https://api.test/v1/trees/x"


async def test_credentials_for_a_scheme_the_spec_lacks_are_refused_not_dropped() -> None:
    toolset = OpenApiToolset(SPEC, credentials={"api_key": "s3cret"})
    with pytest.raises(ToolDefinitionError, match=r"api_key \(it defines: none\)") as caught:
        await toolset.load()
    assert "s3cret" not in str(caught.value)


async def test_a_tool_kept_after_shutdown_says_so_and_the_toolset_starts_again() -> None:
    async with recording_server() as server:
        toolset = OpenApiToolset(SPEC, base_url=server.url)
        kept = await toolset.get_tool("trees_get_tree")
        await toolset.shutdown()
        before = live_clients()
        with pytest.raises(ToolCallError, match="shut down"):
            await kept.run({"id": "a"}, ToolContext())
        assert live_clients() == before  # the kept tool made no new client to leak
        fresh = await toolset.get_tool("trees_get_tree")
        assert await fresh.run({"id": "a"}, ToolContext()) == {"ok": True}
        await toolset.shutdown()
    assert len(server.requests) == 1


async def test_a_request_the_server_never_answers_ends_at_the_toolsets_timeout() -> None:
    # A server that accepts and never answers: the toolset's timeout ends the call.
    silent = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = silent.extra(anyio.abc.SocketAttribute.local_port)

    async def hold(stream: anyio.abc.SocketStream) -> None:
        async with stream:
            await anyio.sleep(30)

    async with silent, anyio.create_task_group() as tg:
        tg.start_soon(silent.serve, hold)
        async with OpenApiToolset(SPEC, base_url=f"http://127.0.0.1:{port}", timeout=0.3) as ts:
            tool = await ts.get_tool("trees_get_tree")
            with anyio.fail_after(10), pytest.raises(ConnectionError, match="no answer in time"):
                await tool.run({"id": "a"}, ToolContext())
        tg.cancel_scope.cancel()


async def test_requests_carry_the_clients_default_user_agent() -> None:
    async with recording_server() as server, OpenApiToolset(SPEC, base_url=server.url) as ts:
        tool = await ts.get_tool("trees_get_tree")
        await tool.run({"id": "a"}, ToolContext())
    assert server.requests[0].headers["user-agent"].startswith("python-httpx")


async def test_the_confirmation_hint_names_the_operation_and_its_arguments() -> None:
    async with OpenApiToolset(SPEC, base_url="http://127.0.0.1:9", confirm="always") as ts:
        tool = await ts.get_tool("trees_get_tree")
        assert tool.requires_confirmation({"id": "a"})
        assert tool.confirmation_hint({"id": "a", "depth": 2}) == (
            'Allow GET /trees/{id} (the tool \'trees_get_tree\') with {"depth": 2, "id": "a"}?'
        )


LONG_URL_SPEC = {
    "openapi": "3.0.3",
    "info": {"title": "t", "version": "1"},
    "paths": {
        "/items/{id}": {
            "get": {
                "operationId": "get_item",
                "parameters": [
                    {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}},
                    {"name": "q", "in": "query", "schema": {"type": "string"}},
                ],
                "responses": {"200": {"description": "ok"}},
            }
        }
    },
}


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ({"id": "a" * 100_000}, "id"),  # a path value
        ({"id": "t", "q": "b" * 70_000}, "q"),  # a query value, with a short path
        ({"id": "t" * 40_000, "q": "\u00e9" * 20_000}, "q"),  # each fits; "é" is 6 in a URL
    ],
)
async def test_a_value_too_long_for_a_url_names_its_field_and_nothing_is_sent(
    args: dict[str, object], field: str
) -> None:
    async with (
        recording_server() as server,
        OpenApiToolset(LONG_URL_SPEC, base_url=server.url) as ts,
    ):
        tool = await ts.get_tool("get_item")
        result = await tool.run(args, ToolContext())
    assert isinstance(result, dict)
    assert list(result["fields"]) == [field]  # type: ignore[call-overload]
    assert server.requests == []


async def test_by_default_delete_put_and_patch_wait_for_approval_and_reads_and_posts_do_not() -> (
    None
):
    async with OpenApiToolset(SPEC, base_url="http://127.0.0.1:1") as ts:
        tools = {t.name: t for t in await ts.list_tools()}
    assert ts.confirm == "destructive"
    delete, put, get = (tools[f"trees_{verb}_tree"] for verb in ("delete", "replace", "get"))
    post = next(t for name, t in tools.items() if name.startswith("a_very_long"))
    assert delete.requires_confirmation({"id": "t"})
    assert put.requires_confirmation({"id": "t"}), "a PUT overwrites what was there"
    assert put.declaration().annotations.destructive  # type: ignore[union-attr]
    assert not get.requires_confirmation({"id": "t"})
    assert not post.requires_confirmation({}), "a POST adds: not destructive (use 'writes')"
    assert post.declaration().annotations.destructive is False  # type: ignore[union-attr]


@pytest.mark.parametrize("confirm", [None, "never"])
async def test_in_an_agent_a_delete_pauses_for_approval_unless_opted_out(
    confirm: str | None,
) -> None:
    options: dict[str, Any] = {} if confirm is None else {"confirm": confirm}
    async with recording_server() as server:
        toolset = OpenApiToolset(SPEC, base_url=server.url, **options)
        async with toolset:
            delete = FunctionCall(name="trees_delete_tree", args={"id": "t1"})
            runner, session_id, events = await one_call(toolset, delete, "Deleted.")
            if confirm is None:
                request = asked_to_confirm(events)
                assert request.hint.startswith("Allow DELETE /trees/{id}")
                assert "the tool 'trees_delete_tree'" in request.hint
                assert server.requests == [], "nothing was sent unasked"
                events = await approve(runner, session_id, request)
    assert [r.request_line for r in server.requests] == ["DELETE /trees/t1 HTTP/1.1"]
    assert response_of(events, "trees_delete_tree") == {"ok": True}
    assert events[-1].text == "Deleted."


async def test_a_response_nested_deeper_than_python_reads_comes_back_as_its_text() -> None:
    # json.loads raises RecursionError (not ValueError) on 100,000 nested arrays.
    async with recording_server() as server:
        server.body = b"[" * 100_000 + b"]" * 100_000
        async with OpenApiToolset(LONG_URL_SPEC, base_url=server.url) as ts:
            tool = await ts.get_tool("get_item")
            result = await tool.run({"id": "t"}, ToolContext())
    assert isinstance(result, str)
    assert result.startswith("[[[")


async def test_the_approval_hint_names_the_tool_as_the_user_knows_it_under_a_prefix() -> None:
    async with OpenApiToolset(SPEC, base_url="https://api.test") as toolset:
        (delete,) = [
            t
            for t in await prefixed(toolset, "acme").list_tools()
            if t.name == "acme_trees_delete_tree"
        ]
        hint = delete.confirmation_hint({"id": "t1"})
    assert (
        hint == 'Allow DELETE /trees/{id} (the tool \'acme_trees_delete_tree\') with {"id": "t1"}?'
    )
