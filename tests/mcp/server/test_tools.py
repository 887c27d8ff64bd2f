"""Tools (`toolsets.mcp.server._tools`): toolsets' tools served to real MCP clients (the
SDK's own client in process, and our own `McpToolset`), both protocol eras: listed with
their schemas, called through the one call path (results, errors, arguments checked,
confirmation through elicitation, progress, the deadline, cancellation, credentials of
the server's own), paged, results checked against the output schema."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import mcp.types as mt
import pytest
from mcp import Client, MCPError, StdioServerParameters
from typing_extensions import TypedDict

import toolsets
from tests.mcp.helpers import eventually
from tests.mcp.server_helpers import SERVED, SRC, connected, served, texts, uvicorn_thread
from tests.openapi.helpers import ONE_GET, recording_server, secured
from toolsets import AuthConfig, ToolContext, tool
from toolsets.mcp import IncomingRequest, McpServer, McpToolset
from toolsets.openapi import OpenApiToolset

pytestmark = pytest.mark.anyio

MODES = pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])


@MODES
async def test_tools_are_listed_with_their_schemas_titles_and_hints(mode: str) -> None:
    spec = {
        "openapi": "3.0.3",
        "info": {"title": "t", "version": "1"},
        "servers": [{"url": "http://127.0.0.1:9"}],
        "paths": {
            "/things/{id}": {
                "parameters": [
                    {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}
                ],
                "get": {"operationId": "get_thing", "summary": "Get a thing", "responses": {}},
                "delete": {"operationId": "drop_thing", "responses": {}},
            }
        },
    }
    server = McpServer(toolsets.combined(OpenApiToolset(spec), served.make_toolset()))
    async with connected(server, mode) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
    get, drop, describe = listed["get_thing"], listed["drop_thing"], listed["describe"]
    assert get.title == "Get a thing"
    assert get.input_schema["required"] == ["id"]
    assert get.annotations is not None
    assert get.annotations.read_only_hint is True
    assert drop.annotations is not None
    assert drop.annotations.destructive_hint is True
    assert drop.annotations.read_only_hint is False
    assert describe.output_schema is not None
    assert describe.output_schema["type"] == "object"
    assert get.output_schema is None


@MODES
async def test_results_become_structured_content_text_images_and_resources(mode: str) -> None:
    async with connected(served.make_server(), mode) as client:
        await client.list_tools()
        described = await client.call_tool("describe", {"name": "ada"})
        counted = await client.call_tool("add", {"a": 1, "b": 1})
        pictured = await client.call_tool("pixel", {})
    assert described.structured_content == {"name": "ada", "letters": 3}
    assert texts(described) == ['{"name":"ada","letters":3}']  # compact JSON
    assert counted.structured_content is None
    assert texts(counted) == ["2"]
    text, image, resource = pictured.content
    assert isinstance(text, mt.TextContent)
    assert text.text == "one red pixel"
    assert isinstance(image, mt.ImageContent)
    assert image.mime_type == "image/png"
    assert image.data == served.PIXEL
    assert isinstance(resource, mt.EmbeddedResource)
    assert isinstance(resource.resource, mt.TextResourceContents)
    assert resource.resource.text == "hi"


@MODES
async def test_an_error_result_an_unknown_tool_and_bad_arguments_are_is_error_results(
    mode: str,
) -> None:
    async with connected(served.make_server(), mode) as client:
        refused = await client.call_tool("refuse", {"reason": "no"})
        unknown = await client.call_tool("nope", {})
        invalid = await client.call_tool("add", {"a": "x", "b": 1})
    assert refused.is_error
    assert texts(refused) == ["refused: no", '{"code":7}']
    assert unknown.is_error
    assert "'nope'" in texts(unknown)[0]
    assert invalid.is_error
    assert '"a"' in texts(invalid)[1]
    assert '"b"' not in texts(invalid)[1]


async def test_arguments_that_do_not_validate_send_no_request_upstream() -> None:
    async with recording_server() as api:
        spec = {**secured("key", {"type": "apiKey", "in": "header", "name": "X-Key"})}
        server = McpServer(OpenApiToolset(spec, base_url=api.url), credentials={"key": "k"})
        async with connected(server, "legacy") as client:
            invalid = await client.call_tool("get_thing", {"id": 5})
            valid = await client.call_tool("get_thing", {"id": "5"})
    assert invalid.is_error
    assert "id" in texts(invalid)[0]
    assert not valid.is_error
    assert [r.path for r in api.requests] == ["/things/5"]


@MODES
async def test_a_tool_requiring_confirmation_asks_through_elicitation_and_runs_only_if_accepted(
    mode: str,
) -> None:
    answers = iter(["accept", "decline", "cancel"])
    asked: list[str] = []

    async def elicit(ctx: Any, params: mt.ElicitRequestParams) -> mt.ElicitResult:
        asked.append(params.message)
        return mt.ElicitResult(action=next(answers))  # type: ignore[arg-type]

    async with connected(served.make_server(), mode, elicitation_callback=elicit) as client:
        results = [await client.call_tool("wipe", {"target": "disk"}) for _ in range(3)]
    assert asked == ["Really wipe?"] * 3
    assert texts(results[0]) == ["wiped disk"]
    assert not results[0].is_error
    assert results[1].is_error
    assert results[2].is_error
    assert texts(results[1]) == [toolsets._invoke.DECLINED]


@MODES
async def test_without_elicitation_a_tool_requiring_confirmation_is_refused_saying_why(
    mode: str,
) -> None:
    ran: list[str] = []

    @tool(requires_confirmation=True)
    def wipe(target: str) -> str:
        """Wipe."""
        ran.append(target)
        return "wiped"

    async with connected(McpServer([wipe]), mode) as client:
        refused = await client.call_tool("wipe", {"target": "disk"})
    assert refused.is_error
    assert "elicitation" in texts(refused)[0]
    assert ran == []


async def test_an_answer_to_a_confirmation_the_server_never_asked_for_is_refused() -> None:
    async with connected(served.make_server(), "2026-07-28") as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool(
                "wipe",
                {"target": "disk"},
                input_responses={"toolsets/confirm": mt.ElicitResult(action="accept")},
                request_state="toolsets:confirm",
            )
    assert caught.value.code == -32602


@MODES
async def test_progress_a_tool_reports_reaches_the_client(mode: str) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        seen.append((done, total, message))

    async with connected(served.make_server(), mode) as client:
        result = await client.call_tool("count", {"to": 3}, progress_callback=progress)
    assert texts(result) == ["3"]
    assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]


async def test_a_call_longer_than_the_timeout_is_an_error_result() -> None:
    server = McpServer(served.make_toolset(), tool_timeout=0.2)
    async with connected(server, "legacy") as client:
        result = await client.call_tool("wait", {"seconds": 30})
    assert result.is_error
    assert "timed out" in texts(result)[0]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_cancelling_a_call_over_stdio_cancels_the_running_tool(
    mode: str, tmp_path: Path
) -> None:
    mark = tmp_path / "mark"
    params = StdioServerParameters(
        command=sys.executable,
        args=[SERVED, "stdio"],
        env={"PYTHONPATH": SRC, "SERVED_MARK": str(mark)},
    )
    with anyio.fail_after(30):
        async with Client(params, mode=mode) as client:  # type: ignore[arg-type]
            with anyio.move_on_after(1):
                await client.call_tool("wait", {"seconds": 60})
            # The session goes on; the tool was cancelled, not left running.
            added = await client.call_tool("add", {"a": 1, "b": 1})

            async def marked() -> bool:
                return mark.exists()

            await eventually(marked)
    assert mark.read_text() == "cancelled"
    assert texts(added) == ["2"]


async def test_credentials_come_from_the_server_and_the_clients_token_is_never_forwarded() -> None:
    """The round trip: an API's spec served over streamable HTTP by uvicorn, consumed by
    our own `McpToolset` (with the client's bearer token), called through to a real HTTP
    server on 127.0.0.1."""
    asked: list[tuple[str | None, str]] = []

    def credentials(request: IncomingRequest, config: AuthConfig) -> str | None:
        asked.append((request.bearer_token, config.scheme_name))
        return {"alice-token": "alice-api-key"}.get(request.bearer_token or "")

    async with recording_server() as api:
        spec = secured("key", {"type": "apiKey", "in": "header", "name": "X-Key"})
        server = McpServer(OpenApiToolset(spec, base_url=api.url), credentials=credentials)
        async with uvicorn_thread(server.http_app) as url:
            for token in ("alice-token", "mallory-token"):
                headers = {"Authorization": f"Bearer {token}"}
                async with McpToolset(
                    toolsets.mcp.StreamableHttp(url=url, headers=headers)
                ) as gateway:
                    thing = await gateway.get_tool("get_thing")
                    result = await thing.run({"id": "7"}, ToolContext())
                if token == "alice-token":
                    assert result == {"ok": True}
                else:
                    assert isinstance(result, dict)
                    assert "'key'" in result["error"]
    assert [r.headers.get("x-key") for r in api.requests] == ["alice-api-key"]
    assert all("authorization" not in r.headers for r in api.requests)
    assert asked == [("alice-token", "key"), ("mallory-token", "key")]


async def test_a_cursor_the_server_did_not_give_is_an_invalid_params_error() -> None:
    async with connected(served.make_server(), "legacy") as client:
        with pytest.raises(MCPError) as caught:
            await client.list_tools(cursor="not-a-cursor")
    assert caught.value.code == -32602


class _Point(TypedDict):
    x: int
    y: int


def wrong_point() -> _Point:
    """Says it returns a point; returns a string."""
    return "not a point"  # type: ignore[return-value]


def half_point() -> _Point:
    """Says it returns a point; returns half of one."""
    return {"x": 1}  # type: ignore[typeddict-item]


def good_point() -> _Point:
    """Returns a point."""
    return {"x": 1, "y": 2}


@MODES
async def test_a_result_that_does_not_match_the_output_schema_is_an_error_result_keeping_it(
    mode: str,
) -> None:
    server = McpServer([wrong_point, half_point, good_point])
    async with connected(server, mode) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        # The SDK's client checks structured results against the outputSchema: it
        # would raise on a result that does not match.
        wrong = await client.call_tool("wrong_point", {})
        half = await client.call_tool("half_point", {})
        good = await client.call_tool("good_point", {})
    assert listed["half_point"].output_schema is not None
    assert wrong.is_error
    assert wrong.structured_content is not None
    assert wrong.structured_content["pointer"] == ""
    assert wrong.structured_content["result"] == "not a point"
    assert half.is_error
    assert half.structured_content is not None
    assert half.structured_content["pointer"] == "/y"
    assert half.structured_content["result"] == {"x": 1}
    assert "output schema" in texts(half)[0]
    assert '{"x":1}' in texts(half)[1]  # nothing lost
    assert not good.is_error
    assert good.structured_content == {"x": 1, "y": 2}


async def test_an_api_body_missing_a_property_its_spec_requires_reaches_the_client_as_it_is() -> (
    None
):
    # An OpenAPI tool lists no outputSchema (its result is the body as the API sends
    # it, which often does not match the spec): the SDK's client takes any body.
    spec = {
        **ONE_GET,
        "paths": {
            "/things/{id}": {
                "get": {
                    **ONE_GET["paths"]["/things/{id}"]["get"],
                    "responses": {
                        "200": {
                            "description": "ok",
                            "content": {
                                "application/json": {
                                    "schema": {
                                        "type": "object",
                                        "required": ["id", "name"],
                                        "properties": {
                                            "id": {"type": "string"},
                                            "name": {"type": "string"},
                                        },
                                    }
                                }
                            },
                        }
                    },
                }
            }
        },
    }
    async with recording_server() as api:
        api.body = {"id": "5"}
        server = McpServer(OpenApiToolset(spec, base_url=api.url))
        async with connected(server, "2026-07-28") as client:
            listed = (await client.list_tools()).tools
            got = await client.call_tool("get_thing", {"id": "5"})
    assert listed[0].output_schema is None
    assert not got.is_error
    assert got.structured_content == {"id": "5"}


@MODES
async def test_before_tool_runs_once_for_a_call_the_user_confirms_and_its_changes_hold(
    mode: str,
) -> None:
    before: list[dict[str, Any]] = []
    ran: list[str] = []

    def audit(called: Any, args: dict[str, Any], ctx: ToolContext) -> None:
        before.append(dict(args))
        args["target"] = args["target"].upper()  # a rewrite the confirmed call keeps

    @tool(requires_confirmation=True)
    def wipe(target: str) -> str:
        """Wipe."""
        ran.append(target)
        return f"wiped {target}"

    async def elicit(ctx: Any, params: mt.ElicitRequestParams) -> mt.ElicitResult:
        return mt.ElicitResult(action="accept")

    server = McpServer([wipe], callbacks=toolsets.Callbacks(before_tool=[audit]))
    async with connected(server, mode, elicitation_callback=elicit) as client:
        result = await client.call_tool("wipe", {"target": "disk"})
    assert texts(result) == ["wiped DISK"]
    assert before == [{"target": "disk"}]
    assert ran == ["DISK"]


class _SlowRegistry(toolsets.BaseToolset):
    """Tools from a registry that does not answer in time."""

    async def list_tools(self, ctx: ToolContext | None = None) -> list[toolsets.Tool]:
        with anyio.fail_after(0.01):
            await anyio.sleep(5)
        return []


async def test_a_toolset_timing_out_listing_its_tools_is_a_timeout_error_for_the_client() -> None:
    async with connected(McpServer(_SlowRegistry()), "2026-07-28") as client:
        with pytest.raises(MCPError) as listing:
            await client.list_tools()
        with pytest.raises(MCPError) as calling:
            await client.call_tool("anything", {})
    assert listing.value.code == -32001
    assert calling.value.code == -32001
