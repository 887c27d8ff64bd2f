"""McpToolset against our fixture server, over real stdio and streamable HTTP."""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import mcp.types as mt
import pytest

from tests.agent.helpers import approve, asked_to_confirm, one_call, response_of
from tests.mcp.helpers import (
    SERVER,
    HttpServer,
    alive,
    eventually,
    fixture_stdio,
    stdio_toolset,
)
from tests.openapi.helpers import recording_server
from toolsets import (
    AuthError,
    ConnectionError,
    FunctionCall,
    ToolCallError,
    ToolContext,
    ToolDefinitionError,
    ToolNotFoundError,
    combined,
    prefixed,
)
from toolsets._auth import MASK
from toolsets._patterns import MATCH_TIMEOUT
from toolsets.agent import LlmAgent, Runner
from toolsets.mcp import McpTool, McpToolset, Sse, Stdio, StreamableHttp
from toolsets.models import ScriptedModel

pytestmark = pytest.mark.anyio


async def was_cancelled(toolset: McpToolset, label: str) -> bool:
    labels = await toolset.call_tool("cancelled_labels", {})
    return label in labels.structured_content["result"]


def http_toolset(server: HttpServer, **options: Any) -> McpToolset:
    transport_options = {k: options.pop(k) for k in ("headers", "header_provider") if k in options}
    return McpToolset(StreamableHttp(url=server.url, **transport_options), **options)


# --- listing ----------------------------------------------------------------------------


async def test_every_tool_is_listed_with_its_schema_output_schema_title_and_hints(
    http_server: HttpServer,
) -> None:
    async with http_toolset(http_server) as toolset:
        tools = {t.name: t for t in await toolset.list_tools()}
    assert {"echo", "add", "delete_file", "media", "crash"} <= set(tools)
    echo = tools["echo"]
    assert isinstance(echo, McpTool)
    decl = echo.declaration()
    assert decl is not None
    assert decl.parameters["properties"]["text"]["type"] == "string"
    assert decl.parameters["required"] == ["text"]
    assert decl.title == "Echo"
    assert echo.description == "Echo the text back."
    assert echo.is_read_only
    assert echo.is_concurrency_safe
    assert decl.annotations.idempotent is True
    add = tools["add"]
    assert add.response_schema is not None
    assert add.response_schema["properties"]["total"]["type"] == "integer"
    assert tools["delete_file"].annotations.destructive is True
    assert not tools["delete_file"].is_concurrency_safe


async def test_tools_listed_in_pages_are_all_listed() -> None:
    env = {"TOOLSETS_FIXTURE_PAGE_SIZE": "3", "TOOLSETS_FIXTURE_EXTRA_TOOLS": "10"}
    async with stdio_toolset(env) as toolset:
        names = [t.name for t in await toolset.list_tools()]
    assert [n for n in names if n.startswith("extra_")] == [f"extra_{i}" for i in range(10)]
    assert len(names) == len(set(names))
    assert "echo" in names


async def test_the_list_is_cached_until_the_server_announces_a_change(
    http_server: HttpServer,
) -> None:
    for mode in ("auto", "legacy"):  # 2026-07-28 announces by listen(), 2025-11-25 by notification
        async with http_toolset(http_server, mode=mode) as toolset:
            first = await toolset.list_tools()
            assert await toolset.list_tools() == first
            added = f"added_{mode}"
            await toolset.call_tool("add_tool", {"name": added})

            async def listed(name: str = added, ts: McpToolset = toolset) -> bool:
                return name in [t.name for t in await ts.list_tools()]

            await eventually(listed)
            await toolset.call_tool("remove_tool", {"name": added})


async def test_get_tool_names_the_available_tools_when_missing(http_server: HttpServer) -> None:
    async with http_toolset(http_server) as toolset:
        with pytest.raises(ToolNotFoundError) as info:
            await toolset.get_tool("ehco")
    assert "echo" in info.value.available


# --- results ----------------------------------------------------------------------------


async def test_results_of_every_content_type_become_json_for_the_model(
    http_server: HttpServer,
) -> None:
    async with http_toolset(http_server) as toolset:
        tools = {t.name: t for t in await toolset.list_tools()}
        ctx = ToolContext()
        assert await tools["add"].run({"a": 2, "b": 3}, ctx) == {"total": 5}
        media = await tools["media"].run({}, ctx)
        failed = await tools["fail"].run({"message": "no way"}, ctx)
        explicit = await tools["error_result"].run({}, ctx)
    assert media == {
        "content": [
            {"type": "text", "text": "hello"},
            {"type": "image", "mime_type": "image/png", "data": "iVBORw=="},
            {"type": "audio", "mime_type": "audio/wav", "data": "UklGRg=="},
            {
                "type": "resource_link",
                "uri": "file:///tmp/x.txt",
                "name": "x",
                "mime_type": "text/plain",
            },
            {"type": "resource", "uri": "mem://a", "mime_type": "text/plain", "text": "A"},
            {
                "type": "resource",
                "uri": "mem://b",
                "mime_type": "application/octet-stream",
                "blob": "Qg==",
            },
        ]
    }
    assert isinstance(failed, dict)
    assert "fail" in str(failed["error"])
    assert explicit == {"error": "bad input: x"}


async def test_meta_passes_through_to_the_server(http_server: HttpServer) -> None:
    async with http_toolset(http_server) as toolset:
        result = await toolset.call_tool("meta", {}, meta={"trace_id": "t-1"})
    assert result.structured_content == {"trace_id": "t-1"}


async def test_progress_is_asked_of_the_server_only_when_someone_listens() -> None:
    # A progress token makes the server report progress, and the call keep a handler:
    # a call whose caller hears nothing of it asks for none.
    async def heard(progress: float, total: float | None, message: str | None) -> None:
        pass

    async with stdio_toolset() as toolset:
        meta = await toolset.get_tool("meta")
        unheard = await meta.run({}, ToolContext())
        listening = ToolContext()
        listening.progress = heard
        asked = await meta.run({}, listening)
    assert unheard == {}
    assert isinstance(asked, dict)
    assert set(asked) == {"progress_token"}


@pytest.mark.parametrize("kind", ["async", "plain"])
async def test_progress_notifications_reach_the_caller(http_server: HttpServer, kind: str) -> None:
    seen: list[tuple[str, float, float | None, str | None]] = []

    async def progress(tool: str, done: float, total: float | None, message: str | None) -> None:
        seen.append((tool, done, total, message))

    def plain(tool: str, done: float, total: float | None, message: str | None) -> None:
        seen.append((tool, done, total, message))

    handler = progress if kind == "async" else plain
    async with http_toolset(http_server, progress=handler) as toolset:
        await toolset.call_tool("slow", {"seconds": 0.1})
    assert seen == [("slow", float(i), 4.0, f"step {i}") for i in range(1, 5)]


# --- concurrency, timeouts, cancellation ------------------------------------------------


async def test_concurrent_calls_share_one_session_and_are_not_serialized(
    http_server: HttpServer,
) -> None:
    results: list[Any] = []
    async with http_toolset(http_server) as toolset:

        async def meet(group: str) -> None:
            results.append(await toolset.call_tool("rendezvous", {"group": group, "size": 5}))

        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                for _ in range(5):
                    tg.start_soon(meet, f"g-{anyio.current_time()}"[:0] + "together")
    assert [r.structured_content for r in results] == [{"result": "met"}] * 5


async def test_a_call_over_its_timeout_is_cancelled_on_the_server_and_the_session_survives(
    http_server: HttpServer,
) -> None:
    async with http_toolset(http_server, timeout=0.5) as toolset:
        with anyio.fail_after(5), pytest.raises(TimeoutError, match=r"0\.5 s"):
            await toolset.call_tool("sleep", {"seconds": 30, "label": "timed-out"})
        await eventually(lambda: was_cancelled(toolset, "timed-out"))
        echoed = await toolset.call_tool("echo", {"text": "still here"})
    assert echoed.structured_content == {"result": "still here"}


async def test_cancelling_the_caller_cancels_the_request_on_the_server(
    http_server: HttpServer,
) -> None:
    async with http_toolset(http_server) as toolset:
        with anyio.move_on_after(0.3):
            await toolset.call_tool("sleep", {"seconds": 30, "label": "caller-cancelled"})
        await eventually(lambda: was_cancelled(toolset, "caller-cancelled"))


# --- recovery ---------------------------------------------------------------------------


async def test_a_crashed_stdio_server_fails_the_call_clearly_and_the_next_call_restarts_it() -> (
    None
):
    async with stdio_toolset() as toolset:
        first_pid = (await toolset.call_tool("pid", {})).structured_content["result"]
        with anyio.fail_after(10), pytest.raises(ConnectionError) as info:
            await toolset.call_tool("crash", {})
        assert "not retried" in str(info.value)
        assert info.value.target == fixture_stdio().target
        second_pid = (await toolset.call_tool("pid", {})).structured_content["result"]
    assert second_pid != first_pid
    assert not alive(first_pid)
    assert not alive(second_pid), "shutdown ends the server process"


@pytest.mark.parametrize("transport", [StreamableHttp, Sse])
async def test_an_unreachable_http_server_gives_a_clear_error_not_an_exception_group(
    transport: type[StreamableHttp | Sse],
) -> None:
    toolset = McpToolset(transport(url="http://127.0.0.1:9/mcp"), connect_timeout=5)
    with anyio.fail_after(10), pytest.raises(ConnectionError) as info:
        await toolset.list_tools()
    assert info.value.target == "http://127.0.0.1:9/mcp"
    assert "ConnectError" in str(info.value)
    await toolset.shutdown()


async def test_a_restarted_http_server_is_reconnected_without_user_action() -> None:
    server = HttpServer()
    server.start()
    try:
        # The 2025-11-25 handshake keeps a stateful session the restarted server forgets.
        async with McpToolset(StreamableHttp(url=server.url), mode="legacy") as toolset:
            before = (await toolset.call_tool("pid", {})).structured_content["result"]
            server.restart()
            with anyio.fail_after(20):
                after = (await toolset.call_tool("pid", {})).structured_content["result"]
        assert after != before
    finally:
        server.stop()


async def test_a_toolset_used_without_async_with_opens_on_first_use_and_shuts_down() -> None:
    toolset = stdio_toolset()
    tool = await toolset.get_tool("pid")
    pid = await tool.run({}, ToolContext())
    assert isinstance(pid, dict)
    assert alive(pid["result"])
    await toolset.shutdown()
    await toolset.shutdown()
    assert not alive(pid["result"])


async def test_shutdown_from_another_task_is_clean_and_idempotent(http_server: HttpServer) -> None:
    toolset = http_toolset(http_server)
    async with toolset:
        await toolset.list_tools()
        async with anyio.create_task_group() as tg:
            tg.start_soon(toolset.shutdown)
            tg.start_soon(toolset.shutdown)
        # Used again after a shutdown, it opens a new session.
        assert (await toolset.call_tool("echo", {"text": "again"})).structured_content == {
            "result": "again"
        }


# --- auth headers -----------------------------------------------------------------------


async def test_static_headers_reach_the_server(http_server: HttpServer) -> None:
    async with http_toolset(http_server, headers={"X-Api-Key": "k-1"}) as toolset:
        seen = (await toolset.call_tool("headers", {})).structured_content
    assert seen["x-api-key"] == "k-1"


async def test_per_call_headers_come_from_the_callers_context(http_server: HttpServer) -> None:
    from toolsets import Invocation

    def token(ctx: ToolContext | None) -> Mapping[str, str]:
        return {"Authorization": f"Bearer token-of-{ctx.user_id if ctx else 'nobody'}"}

    async with http_toolset(http_server, header_provider=token) as toolset:
        ann = ToolContext(Invocation(user_id="ann"))
        bob = ToolContext(Invocation(user_id="bob"))
        seen_ann = (await toolset.call_tool("headers", {}, ctx=ann)).structured_content
        seen_bob = (await toolset.call_tool("headers", {}, ctx=bob)).structured_content
    assert seen_ann["authorization"] == "Bearer token-of-ann"
    assert seen_bob["authorization"] == "Bearer token-of-bob"


async def test_a_credential_header_the_server_quotes_back_is_masked_for_the_model(
    http_server: HttpServer,
) -> None:
    sent = {"Authorization": "Bearer tok-SECRET-1234", "X-Client-Version": "2022-11-28"}
    async with http_toolset(http_server, headers=sent) as toolset:
        tools = {t.name: t for t in await toolset.list_tools()}
        seen = await tools["headers"].run({}, ToolContext())
        failed = await tools["error_result"].run(
            {"message": "refused tok-SECRET-1234"}, ToolContext()
        )
        texted = await tools["echo"].run({"text": "token=tok-SECRET-1234"}, ToolContext())
    assert isinstance(seen, dict)
    assert isinstance(failed, dict)
    assert "SECRET" not in repr(seen) + repr(failed) + repr(texted)
    assert seen["authorization"] == MASK
    assert seen["x-client-version"] == "2022-11-28"  # not a credential: data
    assert MASK in str(failed["error"])
    assert texted == {"result": f"token={MASK}"}


async def test_a_per_call_header_the_server_quotes_back_is_masked_for_that_caller(
    http_server: HttpServer,
) -> None:
    def token(ctx: ToolContext | None) -> Mapping[str, str]:
        return {"X-Api-Key": "key-SECRET-of-ann"}

    async with http_toolset(http_server, header_provider=token) as toolset:
        ctx = ToolContext()
        tools = {t.name: t for t in await toolset.list_tools(ctx)}
        seen = await tools["headers"].run({}, ctx)
    assert isinstance(seen, dict)
    assert "SECRET" not in repr(seen)
    assert seen["x-api-key"] == MASK


async def test_a_server_error_quoting_a_credential_header_is_masked_in_the_exception(
    http_server: HttpServer,
) -> None:
    async with http_toolset(http_server, headers={"X-Api-Key": "key-SECRET-42"}) as toolset:
        tool = await toolset.get_tool("reject")
        with pytest.raises(ToolCallError) as caught:
            await tool.run({"message": "unknown key key-SECRET-42"}, ToolContext())
    assert "SECRET" not in str(caught.value) + repr(caught.value)
    assert MASK in str(caught.value)
    assert caught.value.tool_name == "reject"


async def test_a_secret_environment_value_a_stdio_server_quotes_back_is_masked() -> None:
    env = {"SERVICE_API_KEY": "key-SECRET-9876", "REGION": "eu-west-1"}
    async with stdio_toolset(env) as toolset:
        tools = {t.name: t for t in await toolset.list_tools()}
        key = await tools["environment"].run({"name": "SERVICE_API_KEY"}, ToolContext())
        region = await tools["environment"].run({"name": "REGION"}, ToolContext())
        with pytest.raises(ToolCallError) as caught:
            await tools["reject"].run({"message": "bad key-SECRET-9876"}, ToolContext())
    assert key == {"result": MASK}
    assert region == {"result": "eu-west-1"}  # not named like a secret: data
    assert "SECRET" not in str(caught.value)


async def test_a_stdio_server_gets_no_toolsets_variable_copied_from_this_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The CLI hands a server the whole environment, where toolsets keeps credentials
    # (TOOLSETS_CREDENTIAL_*) and keys (TOOLSETS_MCP_STATE_KEY): none reaches it.
    monkeypatch.setenv("TOOLSETS_CREDENTIAL_PETSTORE", "key-of-ours")
    monkeypatch.setenv("TOOLSETS_MCP_STATE_KEY", "k" * 64)
    monkeypatch.setenv("PLAIN_SETTING", "kept")
    env = dict(os.environ) | {"TOOLSETS_FOR_THE_SERVER": "named-for-it"}
    transport = Stdio(command=sys.executable, args=[SERVER, "stdio"], env=env)
    async with McpToolset(transport) as toolset:
        environment = await toolset.get_tool("environment")

        async def value(name: str) -> Any:
            return await environment.run({"name": name}, ToolContext())

        seen = {
            name: await value(name)
            for name in (
                "TOOLSETS_CREDENTIAL_PETSTORE",
                "TOOLSETS_MCP_STATE_KEY",
                "PLAIN_SETTING",
                "TOOLSETS_FOR_THE_SERVER",
            )
        }
    assert seen == {
        "TOOLSETS_CREDENTIAL_PETSTORE": {"result": None},
        "TOOLSETS_MCP_STATE_KEY": {"result": None},
        "PLAIN_SETTING": {"result": "kept"},
        "TOOLSETS_FOR_THE_SERVER": {"result": "named-for-it"},  # named with its own value
    }
    assert "TOOLSETS_MCP_STATE_KEY" not in (transport.env or {})


async def test_results_are_untouched_when_the_session_carries_no_secret(
    http_server: HttpServer,
) -> None:
    async with http_toolset(http_server, headers={"X-Client-Version": "2022-11-28"}) as toolset:
        tool = await toolset.get_tool("echo")
        assert await tool.run({"text": "2022-11-28"}, ToolContext()) == {"result": "2022-11-28"}


@pytest.mark.parametrize(
    ("headers", "named"),
    [
        ({"Authorization": "Bearer tok-SECRET\n"}, "Authorization"),
        ({"Authorization": "Bearer tök-SECRET"}, "Authorization"),
        ({"Authorization": "\ttok-SECRET"}, "Authorization"),
        ({"Authorization": " tok-SECRET "}, "Authorization"),
        ({"X Key": "tok-SECRET"}, "X Key"),
        ({"Content-Length": "12"}, "Content-Length"),
        ({"X-Key": 42}, "X-Key"),
    ],
    ids=["newline", "non-ascii", "tab", "padded", "space-in-name", "framing", "not-a-string"],
)
@pytest.mark.parametrize("transport", [StreamableHttp, Sse])
def test_a_header_no_request_can_carry_is_refused_naming_the_header_not_the_value(
    headers: dict[str, Any], named: str, transport: type[StreamableHttp | Sse]
) -> None:
    # The same rule as an OpenAPI toolset's headers= (toolsets._auth.header_problem).
    with pytest.raises(AuthError) as caught:
        transport(url="http://127.0.0.1:1/mcp", headers=headers)
    assert caught.value.scheme_name == named
    assert "SECRET" not in str(caught.value) + repr(caught.value)
    assert caught.value.__cause__ is None


def test_a_stdio_transports_repr_hides_a_secret_argument() -> None:
    stdio = Stdio(command="srv", args=["--token", "tok-SECRET", "--api-key=tok-SECRET", "-v"])
    assert "SECRET" not in repr(stdio)
    assert repr(stdio) == f"Stdio(command='srv --token {MASK} --api-key={MASK} -v', cwd=None)"


def test_the_secrets_a_transport_carries_are_what_its_repr_hides_and_credential_headers() -> None:
    stdio = Stdio(
        command="srv",
        args=["--token", "tok-SECRET-1", "--api-key=key-SECRET-2", "-v", "--region", "eu-west-1"],
        env={"GITHUB_TOKEN": "ghp-SECRET-3", "REGION": "eu-west-1", "API_KEY": "short"},
    )
    assert sorted(stdio.secrets) == ["ghp-SECRET-3", "key-SECRET-2", "tok-SECRET-1"]
    http = StreamableHttp(
        url="http://me:pw-SECRET-4@127.0.0.1:1/mcp?api_key=key-SECRET-5&page=200000",
        headers={"Authorization": "Bearer tok-SECRET-6", "X-Client-Version": "2022-11-28"},
    )
    assert sorted(http.secrets) == [
        "Bearer tok-SECRET-6",
        "key-SECRET-5",
        "pw-SECRET-4",
        "tok-SECRET-6",
    ]


async def test_a_per_call_header_no_request_can_carry_is_refused_before_anything_is_sent(
    http_server: HttpServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    for name in ("httpx2", "httpcore2", "mcp"):
        caplog.set_level(logging.DEBUG, logger=name)

    def token(ctx: ToolContext | None) -> Mapping[str, str]:
        return {"Authorization": "Bearer tok-SECRET\n"}

    async with http_toolset(http_server, header_provider=token) as toolset:
        with pytest.raises(AuthError) as caught:
            await toolset.call_tool("headers", {}, ctx=ToolContext())
    assert caught.value.scheme_name == "Authorization"
    chain: list[BaseException] = []
    link: BaseException | None = caught.value
    while link is not None:
        chain.append(link)
        link = link.__cause__ or link.__context__
    assert "SECRET" not in "".join(str(e) + repr(e) for e in chain)
    assert "SECRET" not in caplog.text


# --- confirmation -----------------------------------------------------------------------


async def test_destructive_tools_can_be_made_to_require_confirmation(
    http_server: HttpServer,
) -> None:
    async with http_toolset(http_server, confirm="destructive") as toolset:
        tools = {t.name: t for t in await toolset.list_tools()}
    assert tools["delete_file"].requires_confirmation({"path": "a"})
    assert not tools["echo"].requires_confirmation({"text": "a"})
    assert not tools["append_line"].requires_confirmation({"line": "a"})
    assert tools["slow"].requires_confirmation({}), "no hints: destructive by MCP's defaults"
    with pytest.raises(ToolDefinitionError) as info:
        http_toolset(http_server, confirm="sometimes")  # type: ignore[arg-type]
    assert info.value.field == "confirm"


async def test_by_default_tools_not_marked_safe_wait_for_the_users_approval(
    http_server: HttpServer,
) -> None:
    async with http_toolset(http_server) as toolset:
        tools = {t.name: t for t in await toolset.list_tools()}
    assert toolset.confirm == "destructive"
    assert tools["delete_file"].requires_confirmation({"path": "a"})
    assert tools["slow"].requires_confirmation({}), "no hints: destructive by MCP's defaults"
    assert not tools["add"].requires_confirmation({"a": 1, "b": 2}), "read-only"
    assert not tools["append_line"].requires_confirmation({"line": "a"}), "not destructive"


@pytest.mark.parametrize("confirm", [None, "never"])
async def test_in_an_agent_a_destructive_mcp_call_pauses_for_approval_unless_opted_out(
    confirm: str | None,
) -> None:
    options = {} if confirm is None else {"confirm": confirm}
    async with stdio_toolset(**options) as toolset:
        delete = FunctionCall(name="delete_file", args={"path": "notes.txt"})
        runner, session_id, events = await one_call(toolset, delete, "Deleted.")
        if confirm is None:
            request = asked_to_confirm(events)
            assert await received(toolset) == ["calls_received"], "it did not run unasked"
            events = await approve(runner, session_id, request)
        asked_before = ["calls_received"] if confirm is None else []
        assert await received(toolset) == [*asked_before, "delete_file", "calls_received"]
    assert response_of(events, "delete_file") == {"result": "deleted notes.txt"}
    assert events[-1].text == "Deleted."


# --- client features --------------------------------------------------------------------


async def test_sampling_requests_are_answered_by_a_model(http_server: HttpServer) -> None:
    model = ScriptedModel(["4"], name="tiny")
    async with http_toolset(http_server, sampling=model) as toolset:
        answer = await toolset.call_tool("ask_model", {})
    assert answer.structured_content == {"result": "tiny says 4"}
    assert model.requests[0].contents[0].text == "What is 2+2?"


async def test_elicitation_fills_in_the_schemas_defaults_or_declines(
    http_server: HttpServer,
) -> None:
    asked: list[str] = []

    async def pick(message: str, schema: Mapping[str, Any]) -> Mapping[str, Any] | None:
        asked.append(message)
        return {"color": "red"}

    async with http_toolset(http_server, elicitation=pick) as toolset:
        answer = await toolset.call_tool("ask_user", {})
    assert answer.structured_content == {"result": "color=red count=3"}
    assert asked == ["Your preferences?"]
    async with http_toolset(http_server, elicitation="defaults") as toolset:
        answer = await toolset.call_tool("ask_user", {})
    assert answer.structured_content == {"result": "color=blue count=3"}


async def test_roots_are_listed_for_the_server(http_server: HttpServer, tmp_path: Any) -> None:
    async with http_toolset(http_server, roots=[tmp_path, "file:///data"]) as toolset:
        listed = (await toolset.call_tool("roots", {})).structured_content["result"]
    assert listed == [tmp_path.resolve().as_uri(), "file:///data"]


async def test_server_log_messages_go_to_python_logging(
    http_server: HttpServer, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="toolsets.mcp.server"):
        async with http_toolset(http_server) as toolset:
            await toolset.call_tool("log", {"message": "disk almost full"})

            async def logged() -> bool:
                return any("disk almost full" in r.getMessage() for r in caplog.records)

            await eventually(logged)
    record = next(r for r in caplog.records if "disk almost full" in r.getMessage())
    assert record.levelno == logging.WARNING
    # The server's name first: the line is not read as the client's own.
    assert record.getMessage().startswith(f"{toolset.name}: disk almost full")
    assert record.mcp_server == toolset.name


async def test_resources_and_prompts_are_reachable(http_server: HttpServer) -> None:
    async with http_toolset(http_server) as toolset:
        resources = await toolset.list_resources()
        contents = await toolset.read_resource("mem://greeting")
        prompts = await toolset.list_prompts()
        prompt = await toolset.get_prompt("review", {"code": "x = 1"})
    assert [str(r.uri) for r in resources] == ["mem://greeting"]
    assert [getattr(c, "text", None) for c in contents] == ["hello resource"]
    assert [p.name for p in prompts] == ["review"]
    assert "x = 1" in str(prompt.messages[0].content)


# --- with the agent and the wrappers ----------------------------------------------------


async def test_an_agent_calls_mcp_tools_through_a_prefixed_combined_toolset(
    http_server: HttpServer,
) -> None:
    async with combined(prefixed(http_toolset(http_server), "fx")) as toolset:
        model = ScriptedModel(
            [FunctionCall(name="fx_add", args={"a": 20, "b": 22}), "The answer is 42."]
        )
        runner = Runner(LlmAgent("assistant", model, tools=[toolset]))
        session = await runner.create_session(user_id="u")
        events = [e async for e in runner.run(user_id="u", session_id=session.id, message="add")]
    assert events[1].function_responses[0].response == {"total": 42}
    assert events[-1].text == "The answer is 42."
    assert "fx_echo" in model.requests[0].declarations


async def test_a_wrong_command_fails_at_async_with_and_leaves_the_task_clean() -> None:
    from toolsets.mcp import Stdio

    toolset = McpToolset(Stdio(command="no-such-command-for-toolsets"), connect_timeout=5)
    with anyio.fail_after(10), pytest.raises(ConnectionError) as info:
        async with toolset:
            raise AssertionError("not reached")
    assert info.value.target == "no-such-command-for-toolsets"
    assert "FileNotFoundError" in str(info.value) or "No such file" in str(info.value)
    # The task's cancel scopes are intact: timeouts still work here.
    with anyio.move_on_after(0.01) as scope:
        await anyio.sleep(1)
    assert scope.cancelled_caught


async def test_resources_and_prompts_can_also_be_offered_as_tools(http_server: HttpServer) -> None:
    async with http_toolset(http_server, resources_as_tools=True, prompts_as_tools=True) as toolset:
        tools = {t.name: t for t in await toolset.list_tools()}
        ctx = ToolContext()
        listed = await tools["list_resources"].run({}, ctx)
        read = await tools["read_resource"].run({"uri": "mem://greeting"}, ctx)
        prompts = await tools["list_prompts"].run({}, ctx)
        prompt = await tools["get_prompt"].run(
            {"name": "review", "arguments": {"code": "x = 1"}}, ctx
        )
    assert [r["uri"] for r in listed] == ["mem://greeting"]  # type: ignore[index,union-attr]
    assert read[0]["text"] == "hello resource"  # type: ignore[index]
    assert [p["name"] for p in prompts] == ["review"]  # type: ignore[index,union-attr]
    assert "x = 1" in str(prompt)
    assert tools["read_resource"].is_read_only
    async with http_toolset(http_server) as plain:
        assert "read_resource" not in {t.name for t in await plain.list_tools()}


async def test_a_resource_or_prompt_tool_asks_the_header_provider_once_per_call(
    http_server: HttpServer,
) -> None:
    # Once for the request and the secrets to mask alike: a provider may mint a token.
    asked: list[object] = []

    def token(ctx: ToolContext | None) -> Mapping[str, str]:
        asked.append(ctx)
        return {"Authorization": "Bearer token-1"}

    options: dict[str, Any] = {"resources_as_tools": True, "prompts_as_tools": True}
    async with http_toolset(http_server, header_provider=token, **options) as toolset:
        tools = {t.name: t for t in await toolset.list_tools()}
        ctx = ToolContext()
        for name, args in [
            ("list_resources", {}),
            ("read_resource", {"uri": "mem://greeting"}),
            ("list_prompts", {}),
            ("get_prompt", {"name": "review", "arguments": {"code": "x = 1"}}),
        ]:
            asked.clear()
            await tools[name].run(args, ctx)
            assert asked == [ctx], name


async def test_a_prompt_offered_as_a_tool_quoting_a_credential_is_masked(
    http_server: HttpServer,
) -> None:
    sent = {"X-Api-Key": "key-SECRET-42"}
    async with http_toolset(http_server, headers=sent, prompts_as_tools=True) as toolset:
        tool = await toolset.get_tool("get_prompt")
        prompt = await tool.run(
            {"name": "review", "arguments": {"code": "key = 'key-SECRET-42'"}}, ToolContext()
        )
    assert "SECRET" not in repr(prompt)
    assert f"key = '{MASK}'" in str(prompt)


# --- lifecycle edge cases (from review) -------------------------------------------------


async def test_shutdown_while_a_lazy_first_call_is_connecting_ends_it_promptly(
    tmp_path: Path,
) -> None:
    from toolsets.mcp import Stdio

    # A "server" that never answers the handshake: the call is connecting until shut down.
    # It writes its process id first, so the test knows when it runs.
    pid_file = tmp_path / "pid"
    script = f'echo $$ > "{pid_file}.new" && mv "{pid_file}.new" "{pid_file}" && exec sleep 60'
    toolset = McpToolset(Stdio(command="sh", args=["-c", script]), connect_timeout=50)
    outcome: list[BaseException] = []

    async def first_call() -> None:
        try:
            await toolset.call_tool("echo", {"text": "x"})
        except ConnectionError as error:
            outcome.append(error)

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            tg.start_soon(first_call)
            # The server runs, so the call is connecting (a state in another process,
            # with no event to wait on: polled).
            await eventually(lambda: anyio.Path(pid_file).exists())
            await toolset.shutdown()
    assert len(outcome) == 1
    assert not alive(int(pid_file.read_text()))


async def test_a_toolset_used_lazily_and_then_entered_runs_its_session_in_the_task_group(
    http_server: HttpServer,
) -> None:
    toolset = http_toolset(http_server)
    assert (await toolset.call_tool("echo", {"text": "lazy"})).structured_content
    async with toolset:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                for n in range(10):
                    tg.start_soon(toolset.call_tool, "echo", {"text": str(n)})


async def test_entering_from_a_second_task_while_entered_is_a_clear_error(
    http_server: HttpServer,
) -> None:
    toolset = http_toolset(http_server)
    errors: list[BaseException] = []

    async def enter_too() -> None:
        try:
            async with toolset:
                pass
        except RuntimeError as error:
            errors.append(error)

    async with toolset, anyio.create_task_group() as tg:
        tg.start_soon(enter_too)
    assert "another task" in str(errors[0])


async def test_the_tool_list_is_fetched_again_after_a_reconnect() -> None:
    async with stdio_toolset() as toolset:
        before = await toolset.list_tools()
        with pytest.raises(ConnectionError):
            await toolset.call_tool("crash", {})
        await toolset.call_tool("echo", {"text": "new session"})
        after = await toolset.list_tools()
    assert [t.name for t in after] == [t.name for t in before]
    assert after[0] is not before[0], "listed again on the new session"


# --- a stdio server's stderr ------------------------------------------------------------

CHATTER = {"TOOLSETS_FIXTURE_STDERR": "starting up|ready on stdio"}


def chatter(records: list[logging.LogRecord], logger: str) -> list[str]:
    return [r.getMessage() for r in records if r.name == logger]


async def test_by_default_a_servers_stderr_goes_to_a_logger_one_record_per_line(
    caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    with caplog.at_level(logging.INFO, logger="toolsets.mcp.stderr"):
        async with stdio_toolset(CHATTER, name="fixture") as toolset:
            await toolset.list_tools()
    assert chatter(caplog.records, "toolsets.mcp.stderr") == [
        "fixture: starting up",
        "fixture: ready on stdio",
    ]
    assert "starting up" not in capfd.readouterr().err, "not on the terminal"


async def test_a_servers_stderr_can_go_to_a_file_or_a_logger_of_ones_own(
    tmp_path: Any, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "server.log"
    to_file = Stdio(command=sys.executable, args=[SERVER, "stdio"], env=CHATTER, stderr=path)
    mine = logging.getLogger("my.servers")
    to_mine = Stdio(command=sys.executable, args=[SERVER, "stdio"], env=CHATTER, stderr=mine)
    with caplog.at_level(logging.INFO, logger="my.servers"):
        for transport in (to_file, to_file, to_mine):
            async with McpToolset(transport, name="fx") as toolset:
                await toolset.list_tools()
    assert path.read_text().splitlines() == ["starting up", "ready on stdio"] * 2
    assert chatter(caplog.records, "my.servers") == ["fx: starting up", "fx: ready on stdio"]


async def test_a_server_that_fails_to_start_has_its_last_stderr_lines_in_the_error() -> None:
    env = {
        "TOOLSETS_FIXTURE_STDERR": "config error: no such directory /nope",
        "TOOLSETS_FIXTURE_EXIT": "3",
    }
    with anyio.fail_after(20), pytest.raises(ConnectionError) as info:
        async with stdio_toolset(env, connect_timeout=10):
            pass
    assert "config error: no such directory /nope" in str(info.value)


async def test_a_secret_in_the_stderr_of_a_server_that_fails_to_start_is_masked() -> None:
    env = {
        "SERVICE_TOKEN": "tok-SECRET-77",
        "TOOLSETS_FIXTURE_STDERR": "refused token tok-SECRET-77",
        "TOOLSETS_FIXTURE_EXIT": "3",
    }
    with anyio.fail_after(20), pytest.raises(ConnectionError) as info:
        async with stdio_toolset(env, connect_timeout=10):
            pass
    assert "SECRET" not in str(info.value)
    assert f"refused token {MASK}" in str(info.value)


# --- arguments checked before sending --------------------------------------------------


async def received(toolset: McpToolset) -> list[str]:
    """The tools the fixture server was asked to call (this question included)."""
    result = await toolset.call_tool("calls_received", {})
    assert result.structured_content is not None
    names: list[str] = result.structured_content["result"]
    return names


async def test_arguments_that_do_not_fit_the_input_schema_are_refused_naming_each_field() -> None:
    async with stdio_toolset() as toolset:
        add = await toolset.get_tool("add")
        ctx = ToolContext()
        wrong = await add.run({"a": "x", "c": 3}, ctx)  # (extra arguments are allowed)
        not_an_object = await add.run([1, 2], ctx)  # type: ignore[arg-type]
        assert await received(toolset) == ["calls_received"], "nothing was sent"
        right = await add.run({"a": 1, "b": 2}, ctx)
    assert isinstance(wrong, dict)
    assert set(wrong["fields"]) == {"a", "b"}  # type: ignore[arg-type]
    assert wrong["fields"]["b"] == "Field required"  # type: ignore[index,call-overload]
    assert isinstance(not_an_object, dict)
    assert set(not_an_object["fields"]) == {"(arguments)"}  # type: ignore[arg-type]
    assert right == {"total": 3}


async def test_a_tool_says_it_takes_nothing_else_only_where_its_server_says_so() -> None:
    # toolsets refuses an unknown argument only where the server's schema does: the
    # declaration is the server's, closed or open (the draft-04 test below: closed).
    async with stdio_toolset() as toolset:
        add = await toolset.get_tool("add")
        declaration = add.declaration()
        result = await add.run({"a": 1, "b": 2, "c": 3}, ToolContext())
        assert await received(toolset) == ["add", "calls_received"], "sent"
    assert declaration is not None
    assert "additionalProperties" not in declaration.parameters
    assert result == {"total": 3}


async def test_null_for_an_optional_parameter_means_not_given_and_is_left_out() -> None:
    # Hosts in strict mode declare optional parameters nullable and send null for them.
    async with stdio_toolset() as toolset:
        sleep = await toolset.get_tool("sleep")
        args = {"seconds": 0, "label": None}
        result = await sleep.run(args, ToolContext())
        required_null = await sleep.run({"seconds": None}, ToolContext())
    assert args == {"seconds": 0, "label": None}, "the caller's arguments are not changed"
    assert not (isinstance(result, dict) and "error" in result), result
    assert isinstance(required_null, dict)
    assert set(required_null["fields"]) == {"seconds"}  # type: ignore[arg-type]


async def test_the_schemas_own_dialect_decides_how_arguments_are_checked() -> None:
    draft4 = {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "type": "object",
        "properties": {"a": {"type": "integer", "minimum": 0, "exclusiveMinimum": True}},
        "additionalProperties": False,
    }
    async with stdio_toolset() as toolset:
        add = McpTool(toolset, mt.Tool(name="add", input_schema=draft4))
        result = await add.run({"a": 0, "b": 1}, ToolContext())
        assert await received(toolset) == ["calls_received"]
    assert isinstance(result, dict)
    assert set(result["fields"]) == {"a", "b"}  # type: ignore[arg-type]
    assert result["fields"]["b"] == "Extra inputs are not permitted"  # type: ignore[index,call-overload]


@pytest.mark.parametrize(
    "properties",
    [
        {"text": {"type": "strng"}},  # not a JSON Schema
        {"text": {"$ref": "#/$defs/missing"}},  # a reference to nowhere
    ],
)
async def test_a_schema_that_cannot_be_used_is_logged_once_and_calls_go_unchecked(
    properties: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    schema = {"type": "object", "properties": properties}
    async with stdio_toolset() as toolset:
        echo = McpTool(toolset, mt.Tool(name="echo", input_schema=schema))
        with caplog.at_level(logging.WARNING, logger="toolsets"):
            first = await echo.run({"text": "one"}, ToolContext())
            second = await echo.run({"text": "two"}, ToolContext())
        assert await received(toolset) == ["echo", "echo", "calls_received"]
    assert (first, second) == ({"result": "one"}, {"result": "two"})
    unusable = [r for r in caplog.records if "cannot be used to check" in r.getMessage()]
    assert len(unusable) == 1
    assert "'echo'" in unusable[0].getMessage()


async def test_a_schema_referring_to_a_url_never_makes_us_fetch_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A server's schema must not make the client request whatever URL it names (nor
    # block the event loop on it): the reference is not followed, the call unchecked.
    async with recording_server() as internal:
        where = f"{internal.url}/internal/schema"
        schema = {"type": "object", "properties": {"text": {"$ref": where}}}
        async with stdio_toolset() as toolset:
            echo = McpTool(toolset, mt.Tool(name="echo", input_schema=schema))
            with caplog.at_level(logging.WARNING, logger="toolsets"):
                result = await echo.run({"text": "one"}, ToolContext())
        assert internal.requests == []
    assert result == {"result": "one"}
    assert any("cannot be used to check" in r.getMessage() for r in caplog.records)


async def test_an_ecma_262_pattern_is_checked_as_javascript_reads_it() -> None:
    # JSON Schema's patterns are ECMA-262: \\p{L} (which Python's re refuses) is a letter.
    schema = {"type": "object", "properties": {"text": {"type": "string", "pattern": "^\\p{L}+$"}}}
    async with stdio_toolset() as toolset:
        echo = McpTool(toolset, mt.Tool(name="echo", input_schema=schema))
        fits = await echo.run({"text": "Zoë"}, ToolContext())
        refused = await echo.run({"text": "R2D2"}, ToolContext())
        assert await received(toolset) == ["echo", "calls_received"]
    assert fits == {"result": "Zoë"}
    assert isinstance(refused, dict)
    assert list(refused["fields"]) == ["text"]  # type: ignore[call-overload]


async def test_an_argument_not_of_its_format_is_refused_before_it_is_sent() -> None:
    # The server would check the types only (the SDK's validation asserts no format).
    schema = {
        "type": "object",
        "properties": {"text": {"type": "string", "format": "date-time"}},
        "required": ["text"],
    }
    async with stdio_toolset() as toolset:
        echo = McpTool(toolset, mt.Tool(name="echo", input_schema=schema))
        refused = await echo.run({"text": "yesterday"}, ToolContext())
        fits = await echo.run({"text": "2024-05-06T07:08:09Z"}, ToolContext())
        assert await received(toolset) == ["echo", "calls_received"]
    assert fits == {"result": "2024-05-06T07:08:09Z"}
    assert isinstance(refused, dict)
    assert list(refused["fields"]) == ["text"]  # type: ignore[call-overload]
    assert "not a valid date-time" in refused["fields"]["text"]  # type: ignore[index,call-overload]


async def test_a_pattern_too_slow_to_match_is_given_up_after_one_short_timeout(
    anyio_backend: str, caplog: pytest.LogCaptureFixture
) -> None:
    # ^(a|aa)+$ backtracks exponentially on "aaa…!": each value would take seconds, on
    # the event loop. The pattern is tried once for MATCH_TIMEOUT, then never again.
    # (The pattern is given up for the process: each backend's run has one of its own.)
    pattern = f"^(a|aa)+$|^{anyio_backend}$"
    tags = {"type": "array", "items": {"type": "string", "pattern": pattern}}
    schema = {"type": "object", "properties": {"text": {"type": "string"}, "tags": tags}}
    slow = ["a" * 40 + "!"] * 5
    async with stdio_toolset() as toolset:
        echo = McpTool(toolset, mt.Tool(name="echo", input_schema=schema))
        with caplog.at_level(logging.WARNING, logger="toolsets"):
            started = time.perf_counter()
            first = await echo.run({"text": "one", "tags": slow}, ToolContext())
            first_took = time.perf_counter() - started
            started = time.perf_counter()
            second = await echo.run({"text": "two", "tags": slow}, ToolContext())
            second_took = time.perf_counter() - started
    assert (first, second) == ({"result": "one"}, {"result": "two"})  # sent unchecked
    # A pattern tried to the end would take far longer than any bound here (2**40 ways
    # to split the a's); the bounds are loose, as the machine may be busy: the warning
    # logged once is what shows the pattern was not tried again.
    assert first_took < MATCH_TIMEOUT + 10, first_took
    assert second_took < first_took + 10, second_took
    given_up = [r for r in caplog.records if "took over" in r.getMessage()]
    assert len(given_up) == 1


def test_credentials_in_a_url_or_arguments_never_reach_the_target() -> None:
    from toolsets.mcp import Stdio

    http = StreamableHttp(url="https://user:pw@example.com/mcp?token=SECRET")
    assert http.target == "https://example.com/mcp"
    stdio = Stdio(command="srv", args=["--token", "SECRET", "--api-key=SECRET", "--verbose"])
    assert "SECRET" not in stdio.target
    assert stdio.target == f"srv --token {MASK} --api-key={MASK} --verbose"


def test_header_and_environment_values_are_in_no_repr_or_vars() -> None:
    from toolsets.mcp import Stdio

    http = StreamableHttp(url="http://127.0.0.1:1/mcp", headers={"X-Api-Key": "k-SECRET"})
    stdio = Stdio(command="srv", env={"API_KEY": "k-SECRET"})
    for transport in (http, stdio):
        assert "SECRET" not in repr(transport) + repr(vars(transport))
    assert http.headers["X-Api-Key"] == "k-SECRET"
    assert stdio.env == {"API_KEY": "k-SECRET"}


@pytest.mark.parametrize("transport", [StreamableHttp, Sse])
def test_the_repr_of_an_http_transport_hides_credentials_in_its_url(
    transport: type[StreamableHttp | Sse],
) -> None:
    http = transport(url="https://user:pw@example.com:8443/mcp?token=SECRET&v=2")
    shown = repr(http)
    assert "SECRET" not in shown
    assert "pw" not in shown
    assert "user" not in shown
    assert "https://example.com:8443/mcp" in shown
    assert repr(transport(url="http://127.0.0.1:1/mcp")).startswith(
        f"{transport.__name__}(url='http://127.0.0.1:1/mcp'"
    )


def test_an_injected_http_client_cannot_be_combined_with_headers_or_auth() -> None:
    import httpx2

    with pytest.raises(ValueError, match="http_client"):
        StreamableHttp(
            url="http://127.0.0.1:1/mcp", http_client=httpx2.AsyncClient(), headers={"a": "b"}
        )
