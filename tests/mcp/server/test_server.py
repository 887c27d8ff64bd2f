"""`McpServer`: toolsets' tools served to real MCP clients (the SDK's own client in
process and over stdio, and our own `McpToolset`), both protocol eras."""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any

import anyio
import mcp.types as mt
import pytest
from mcp import Client, MCPError, StdioServerParameters
from typing_extensions import TypedDict

import toolsets
from tests.helpers import NODE, PEERS
from tests.mcp.helpers import eventually, fixture_stdio
from tests.mcp.server_helpers import SERVED, SRC, connected, served, texts, uvicorn_thread
from tests.openapi.helpers import ONE_GET, recording_server, secured
from toolsets import AuthConfig, FunctionTool, StaticToolset, ToolContext, ToolDeclaration, tool
from toolsets.mcp import IncomingRequest, McpServer, McpToolset
from toolsets.mcp._convert import convert_result
from toolsets.openapi import OpenApiToolset

pytestmark = pytest.mark.anyio

MODES = pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])


async def test_the_sdk_client_over_stdio_lists_every_page_and_stdout_holds_only_the_protocol() -> (
    None
):
    params = StdioServerParameters(
        command=sys.executable, args=[SERVED, "stdio"], env={"PYTHONPATH": SRC}
    )
    with anyio.fail_after(30):
        async with Client(params) as client:
            names: list[str] = []
            cursor: str | None = None
            pages = 0
            while True:
                page = await client.list_tools(cursor=cursor)
                names += [t.name for t in page.tools]
                pages += 1
                cursor = page.next_cursor
                if not cursor:
                    break
            # A tool printing to stdout while serving does not break the protocol.
            shouted = await client.call_tool("shout", {})
            added = await client.call_tool("add", {"a": 2, "b": 3})
    assert pages == 3  # page_size=3, nine tools
    assert names == ["add", "describe", "pixel", "refuse", "shout", "pid", "count", "wait", "wipe"]
    assert texts(shouted) == ["shouted"]
    assert texts(added) == ["5"]


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
    assert texts(described) == ['{"name": "ada", "letters": 3}']
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
    assert texts(refused) == ["refused: no", '{"code": 7}']
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


async def test_a_gateway_serves_the_upstream_servers_resources_and_prompts() -> None:
    everything = PEERS / "@modelcontextprotocol" / "server-everything"
    upstream = toolsets.mcp.Stdio(
        command=str(NODE), args=[str(everything / "dist" / "index.js"), "stdio"]
    )
    fixture = toolsets.prefixed(McpToolset(fixture_stdio(), confirm="never"), "fx")
    server = McpServer(
        toolsets.combined(McpToolset(upstream), fixture, StaticToolset([served.add]))
    )
    async with connected(server, "legacy") as client:
        resources = (await client.list_resources()).resources
        templates = (await client.list_resource_templates()).resource_templates
        # A URI no listing named goes to the server whose template it fits.
        templated = await client.read_resource("demo://resource/dynamic/text/5")
        with pytest.raises(MCPError) as unknown:
            await client.read_resource("nowhere://at/all")
        first = resources[0]
        read = await client.read_resource(str(first.uri))
        prompts = (await client.list_prompts()).prompts
        simple = next(p for p in prompts if not p.arguments)
        prompt = await client.get_prompt(simple.name)
        completed = await client.complete(
            mt.PromptReference(type="ref/prompt", name="completable-prompt"),
            {"name": "department", "value": "Eng"},
        )
        tools = [t.name for t in (await client.list_tools()).tools]
    assert read.contents
    assert str(read.contents[0].uri) == str(first.uri)
    assert prompt.messages
    assert completed.completion.values == ["Engineering"]
    assert "demo://resource/dynamic/text/{resourceId}" in [t.uri_template for t in templates]
    assert str(templated.contents[0].uri) == "demo://resource/dynamic/text/5"
    assert unknown.value.code == -32602
    assert unknown.value.data == {"uri": "nowhere://at/all"}
    assert "echo" in tools
    assert "add" in tools
    assert "fx_echo" in tools


@MODES
async def test_a_gateway_tells_its_clients_when_the_upstream_tools_change(mode: str) -> None:
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, mt.ToolListChangedNotification):
            changed.set()

    server = McpServer(McpToolset(fixture_stdio(), confirm="never"))
    async with connected(server, mode, message_handler=on_message) as client:
        await client.list_tools()
        if mode == "legacy":
            await client.call_tool("add_tool", {"name": "fresh"})
            with anyio.fail_after(10):
                await changed.wait()
        else:
            async with client.listen(tools_list_changed=True) as events:
                await client.call_tool("add_tool", {"name": "fresh"})
                with anyio.fail_after(10):
                    await events.__anext__()
        names = [t.name for t in (await client.list_tools()).tools]
    assert "fresh" in names


@MODES
async def test_a_gateway_relays_the_progress_an_upstream_tool_reports(mode: str) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        seen.append((done, total, message))

    server = McpServer(McpToolset(fixture_stdio(), confirm="never"))
    async with connected(server, mode) as client:
        result = await client.call_tool("slow", {"seconds": 0}, progress_callback=progress)
    assert result.structured_content == {"result": "done"}  # as the upstream server gave it
    assert seen == [(step, 4, f"step {step}") for step in range(1, 5)]


@MODES
async def test_each_request_runs_as_the_invocation_made_for_it(mode: str) -> None:
    @tool(required_scopes={"admin"})
    def whoami(ctx: ToolContext) -> str:
        """Who is calling."""
        return ctx.user_id

    def invocation(request: IncomingRequest) -> toolsets.Invocation:
        admin = request.client is not None and request.client.name == "admin-console"
        return toolsets.Invocation(user_id="ada", scopes=frozenset({"admin"} if admin else ()))

    server = McpServer([whoami], invocation=invocation)
    admin = mt.Implementation(name="admin-console", version="1")
    async with connected(server, mode, client_info=admin) as client:
        allowed = await client.call_tool("whoami", {})
    async with connected(server, mode) as client:
        refused = await client.call_tool("whoami", {})
    assert texts(allowed) == ["ada"]
    assert refused.is_error
    assert "admin" in texts(refused)[0]


async def test_a_gateway_whose_upstream_server_dies_reports_it_and_serves_on() -> None:
    server = McpServer(McpToolset(fixture_stdio(), confirm="never"))
    async with connected(server, "legacy") as client:
        before = await client.call_tool("pid", {})
        crashed = await client.call_tool("crash", {})
        after = await client.call_tool("pid", {})
    assert crashed.is_error
    assert "ConnectionError" in texts(crashed)[0]
    assert not after.is_error
    assert texts(after) != texts(before)  # a new upstream process


async def test_a_cursor_the_server_did_not_give_is_an_invalid_params_error() -> None:
    async with connected(served.make_server(), "legacy") as client:
        with pytest.raises(MCPError) as caught:
            await client.list_tools(cursor="not-a-cursor")
    assert caught.value.code == -32602


def test_workers_need_a_factory_and_stateless_mode() -> None:
    server = served.make_server()
    with pytest.raises(ValueError, match="factory"):
        server.run_http(port=0, workers=2, stateless=True)
    with pytest.raises(ValueError, match="stateless"):
        server.run_http(port=0, workers=2, factory="served:make_server")
    with pytest.raises(ValueError, match="module:attribute"):
        server.run_http(port=0, workers=2, factory="served", stateless=True)
    with pytest.raises(AttributeError):
        server.run_http(port=0, workers=2, factory="served:nothing", stateless=True)
    with pytest.raises(TypeError):
        server.run_http(port=0, workers=2, factory="served:PIXEL", stateless=True)


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
    assert '{"x": 1}' in texts(half)[1]  # nothing lost
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


async def test_an_error_result_with_details_round_trips_through_two_servers_exactly() -> None:
    async with recording_server() as api:
        api.status = 404
        api.content_type = "text/html"
        api.body = b"<html>\n<h1>Not Found</h1>\n</html>"
        rest = OpenApiToolset(ONE_GET, base_url=api.url)
        async with rest:
            direct = await (await rest.get_tool("get_thing")).run({"id": "7"}, ToolContext())
        async with uvicorn_thread(
            McpServer(OpenApiToolset(ONE_GET, base_url=api.url)).http_app
        ) as url:
            upstream = McpToolset(toolsets.mcp.StreamableHttp(url=url))
            async with upstream:
                relayed = await (await upstream.get_tool("get_thing")).run(
                    {"id": "7"}, ToolContext()
                )
            gateway = McpServer(McpToolset(toolsets.mcp.StreamableHttp(url=url)))
            async with connected(gateway, "2026-07-28") as client:
                called = await client.call_tool("get_thing", {"id": "7"})
    assert direct == {
        "error": "HTTP 404 X",
        "status": 404,
        "body": "<html>\n<h1>Not Found</h1>\n</html>",
    }
    assert relayed == direct
    assert called.is_error
    assert convert_result(called) == direct


class _CountedTool(FunctionTool):
    """A function tool counting how often it is asked for its declaration."""

    asked = 0

    def declaration(self) -> ToolDeclaration | None:
        type(self).asked += 1
        return super().declaration()


async def test_listing_a_tool_asks_for_its_declaration_once() -> None:
    counted = _CountedTool(good_point)
    async with connected(McpServer([counted]), "2026-07-28") as client:
        _CountedTool.asked = 0
        await client.list_tools()
    assert _CountedTool.asked == 1


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


async def test_a_gateway_finds_a_resource_or_prompt_no_listing_named_among_its_upstreams(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Another worker, a restart, a client's cached URI: a read before any list.
    monkeypatch.setattr(toolsets.mcp.server._server, "MAX_ROUTES", 2)
    everything = PEERS / "@modelcontextprotocol" / "server-everything"
    first = toolsets.mcp.Stdio(
        command=str(NODE), args=[str(everything / "dist" / "index.js"), "stdio"]
    )
    server = McpServer(
        toolsets.combined(McpToolset(first), McpToolset(fixture_stdio(), confirm="never"))
    )
    async with connected(server, "2026-07-28") as client:
        read = await client.read_resource("mem://greeting")  # the second upstream's
        prompt = await client.get_prompt("review", {"code": "x = 1"})
        with pytest.raises(MCPError) as unknown:
            await client.read_resource("nowhere://at/all")
        with pytest.raises(MCPError) as no_prompt:
            await client.get_prompt("no-such-prompt")
        listed = (await client.list_resources()).resources
        again = await client.read_resource("mem://greeting")  # forgotten: asked again
    assert len(listed) > 2
    assert len(list(server._resource_owner)) == 2  # the most recently used only
    assert again.contents == read.contents
    assert [c.text for c in read.contents if isinstance(c, mt.TextResourceContents)] == [
        "hello resource"
    ]
    assert isinstance(prompt.messages[0].content, mt.TextContent)
    assert "x = 1" in prompt.messages[0].content.text
    assert unknown.value.code == -32602
    assert unknown.value.data == {"uri": "nowhere://at/all"}
    assert no_prompt.value.code == -32602


async def test_a_sync_invocation_function_runs_off_the_event_loop() -> None:
    # It may block (a database, a token introspection call): never on the loop.
    loop_thread = threading.get_ident()
    threads: list[int] = []

    def invocation(request: IncomingRequest) -> toolsets.Invocation:
        threads.append(threading.get_ident())
        return toolsets.Invocation(user_id="ada")

    async with connected(McpServer([good_point], invocation=invocation), "legacy") as client:
        result = await client.call_tool("good_point", {})
    assert not result.is_error
    assert threads
    assert loop_thread not in threads


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


class Unreferenceable:
    """A tool with ``__slots__`` and no ``__weakref__`` (as a ``dataclass(slots=True)``
    is): it cannot be a weak key."""

    __slots__ = ("_tool",)

    def __init__(self, tool: Any) -> None:
        self._tool = tool

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tool, name)


def shout(text: str) -> str:
    """Say it louder."""
    return text.upper()


@pytest.mark.anyio
async def test_a_tool_that_cannot_be_weakly_referenced_is_listed_and_called() -> None:
    server = McpServer(StaticToolset([Unreferenceable(FunctionTool(shout))]))
    async with connected(server, "legacy") as client:
        for _ in range(2):
            listed = await client.list_tools()
            assert [t.name for t in listed.tools] == ["shout"]
        result = await client.call_tool("shout", {"text": "hi"})
    assert texts(result) == ["HI"]
