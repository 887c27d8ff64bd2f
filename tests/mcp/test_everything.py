"""McpToolset against the MCP reference server, @modelcontextprotocol/server-everything
(installed under peers/ by scripts/test.sh), over real stdio and streamable HTTP."""

from __future__ import annotations

import base64
import logging
import os
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.types import TextContent

from tests.helpers import NODE, PEERS
from tests.mcp.helpers import HttpServer
from toolsets import ToolContext
from toolsets.mcp import McpToolset, Sse, Stdio, StreamableHttp, load_mcp_config
from toolsets.models import ScriptedModel

pytestmark = pytest.mark.anyio

EVERYTHING = PEERS / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
ALWAYS = {
    "echo",
    "get-annotated-message",
    "get-env",
    "get-resource-links",
    "get-resource-reference",
    "get-structured-content",
    "get-sum",
    "get-tiny-image",
    "gzip-file-as-resource",
    "toggle-simulated-logging",
    "toggle-subscriber-updates",
    "trigger-long-running-operation",
    "simulate-research-query",
}
WITH_CLIENT_FEATURES = {
    "get-roots-list",
    "trigger-elicitation-request",
    "trigger-url-elicitation",
    "trigger-sampling-request",
}
ARGUMENTS: dict[str, dict[str, Any]] = {
    "echo": {"message": "hello"},
    "get-annotated-message": {"messageType": "success", "includeImage": True},
    "get-resource-links": {"count": 2},
    "get-resource-reference": {"resourceType": "Text", "resourceId": 1},
    "get-structured-content": {"location": "Chicago"},
    "get-sum": {"a": 2, "b": 40},
    # A data URI: the default argument would fetch a file from the internet.
    "gzip-file-as-resource": {
        "name": "hello.txt.gz",
        "data": "data:text/plain;base64," + base64.b64encode(b"hello").decode(),
    },
    "trigger-long-running-operation": {"duration": 0.4, "steps": 2},
    "trigger-url-elicitation": {"url": "https://example.com/confirm"},
    "trigger-sampling-request": {"prompt": "Say hi", "maxTokens": 10},
    "simulate-research-query": {"topic": "tides", "ambiguous": False},
}


def test_the_reference_server_is_installed() -> None:
    assert NODE.exists(), "run scripts/test.sh: it installs the peers with npm ci"
    assert EVERYTHING.exists()
    version = subprocess.run([str(NODE), "--version"], capture_output=True, text=True, check=True)
    assert version.stdout.startswith("v22.")


class EverythingHttpServer(HttpServer):
    """server-everything over streamable HTTP (stateful 2025-11-25 sessions)."""

    def command(self) -> tuple[list[str], dict[str, str]]:
        return [str(NODE), str(EVERYTHING), "streamableHttp"], {
            **os.environ,
            "PORT": str(self.port),
        }


@pytest.fixture(scope="module")
def everything_server() -> Iterator[EverythingHttpServer]:
    server = EverythingHttpServer()
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def everything_http(everything_server: EverythingHttpServer) -> str:
    return everything_server.url


class EverythingSseServer(HttpServer):
    """server-everything over MCP's older HTTP+SSE transport."""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/sse"

    def command(self) -> tuple[list[str], dict[str, str]]:
        return [str(NODE), str(EVERYTHING), "sse"], {**os.environ, "PORT": str(self.port)}


@pytest.fixture(scope="module")
def everything_sse() -> Iterator[str]:
    server = EverythingSseServer()
    server.start()
    yield server.url
    server.stop()


def everything_toolset(transport: str, url: str, *, features: bool, **options: Any) -> McpToolset:
    if features:
        options.update(
            sampling=ScriptedModel(respond=lambda request: "Hi!", name="tiny"),
            elicitation="defaults",
            roots=[Path("/tmp")],
        )
    if transport == "stdio":
        return McpToolset(Stdio(command=str(NODE), args=[str(EVERYTHING), "stdio"]), **options)
    return McpToolset(StreamableHttp(url=url), **options)


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_without_client_features_the_basic_tools_are_offered(
    transport: str, everything_http: str
) -> None:
    async with everything_toolset(transport, everything_http, features=False) as toolset:
        names = {t.name for t in await toolset.list_tools()}
    assert names == ALWAYS


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_every_tool_of_the_reference_server_can_be_called(
    transport: str, everything_http: str
) -> None:
    progress: dict[str, list[float]] = {}

    async def on_progress(tool: str, done: float, total: float | None, message: str | None) -> None:
        progress.setdefault(tool, []).append(done)

    async with everything_toolset(
        transport, everything_http, features=True, progress=on_progress
    ) as toolset:
        tools = {t.name: t for t in await toolset.list_tools()}
        assert set(tools) == ALWAYS | WITH_CLIENT_FEATURES
        results: dict[str, Any] = {}
        for name, tool in sorted(tools.items()):
            results[name] = await tool.run(ARGUMENTS.get(name, {}), ToolContext())

    for name, result in results.items():
        assert not (isinstance(result, Mapping) and "error" in result), (name, result)
    # A task-augmented call (the tool requires it), followed to its end.
    assert "# Research Report: tides" in results["simulate-research-query"]
    # URL elicitations (a page the user must open) are declined, and the server says so.
    assert "declined" in str(results["trigger-url-elicitation"])
    assert "hello" in str(results["echo"])
    assert "42" in str(results["get-sum"])
    assert "Hi!" in str(results["trigger-sampling-request"])
    assert "file:///tmp" in str(results["get-roots-list"])
    image = results["get-tiny-image"]["content"]
    assert any(block["type"] == "image" and block["mime_type"] == "image/png" for block in image)
    links = [b for b in results["get-resource-links"]["content"] if b["type"] == "resource_link"]
    assert len(links) == 2
    gz = [
        b
        for b in results["gzip-file-as-resource"]["content"]
        if b["type"] in ("resource", "resource_link")
    ]
    assert gz, results["gzip-file-as-resource"]
    assert progress.pop("trigger-long-running-operation") == [1.0, 2.0]
    # The research task's status updates, counted.
    updates = progress.pop("simulate-research-query")
    assert updates == [float(n) for n in range(1, len(updates) + 1)]
    assert not progress


RESEARCH = "simulate-research-query"


async def test_a_tool_that_requires_a_task_runs_as_one_and_reports_its_stages_as_progress(
    everything_http: str,
) -> None:
    updates: list[tuple[str, float, str | None]] = []

    async def on_progress(tool: str, done: float, total: float | None, message: str | None) -> None:
        updates.append((tool, done, message))

    toolset = everything_toolset("http", everything_http, features=False, progress=on_progress)
    async with toolset:
        research = await toolset.get_tool(RESEARCH)
        with anyio.fail_after(30):
            report = await research.run({"topic": "tides"}, ToolContext())
    assert isinstance(report, str)
    assert report.startswith("# Research Report: tides")
    assert {tool for tool, _, _ in updates} == {RESEARCH}
    assert [done for _, done, _ in updates] == [float(n) for n in range(1, len(updates) + 1)]
    assert updates[0][2] == "Gathering sources..."
    assert updates[-1][2] == "Generating report..."


async def test_a_task_that_needs_the_users_input_asks_through_the_elicitation_handler(
    everything_http: str,
) -> None:
    asked: list[str] = []

    async def answer(message: str, schema: Mapping[str, Any]) -> Mapping[str, Any]:
        asked.append(message)
        return {"interpretation": "historical"}

    async with McpToolset(StreamableHttp(url=everything_http), elicitation=answer) as toolset:
        research = await toolset.get_tool(RESEARCH)
        with anyio.fail_after(30):
            report = await research.run({"topic": "tides", "ambiguous": True}, ToolContext())
    assert len(asked) == 1
    assert isinstance(report, str)
    assert report.startswith("# Research Report: tides (historical)")


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_cancelling_a_task_augmented_call_cancels_the_task_on_the_server(
    transport: str, everything_http: str
) -> None:
    created = anyio.Event()

    async def on_progress(tool: str, done: float, total: float | None, message: str | None) -> None:
        created.set()

    toolset = everything_toolset(transport, everything_http, features=False, progress=on_progress)
    async with toolset:
        research = await toolset.get_tool(RESEARCH)
        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                tg.start_soon(research.run, {"topic": "tides"}, ToolContext())
                await created.wait()
                tg.cancel_scope.cancel()
            tasks = await toolset.list_tasks()
    assert [task.status for task in tasks] == ["cancelled"]


async def test_a_task_augmented_call_past_its_timeout_cancels_the_task(
    everything_http: str,
) -> None:
    toolset = everything_toolset("http", everything_http, features=False, timeout=1.5)
    async with toolset:
        research = await toolset.get_tool(RESEARCH)
        with anyio.fail_after(20):
            with pytest.raises(TimeoutError):
                await research.run({"topic": "tides"}, ToolContext())
            tasks = await toolset.list_tasks()
    assert [task.status for task in tasks] == ["cancelled"]


async def test_a_restarted_reference_http_server_is_reinitialized_and_the_call_sent_again(
    everything_server: EverythingHttpServer,
) -> None:
    # The restarted server answers the stale session id with HTTP 400 (not the spec's
    # 404): the call never ran, so it is sent again on a new session.
    async with McpToolset(StreamableHttp(url=everything_server.url)) as toolset:
        first = await toolset.call_tool("echo", {"message": "before"})
        everything_server.restart()
        with anyio.fail_after(20):
            second = await toolset.call_tool("echo", {"message": "after"})
            third = await toolset.call_tool("echo", {"message": "again"})
    assert [first.is_error, second.is_error, third.is_error] == [False, False, False]
    assert isinstance(second.content[0], TextContent)
    assert second.content[0].text == "Echo: after"


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_arguments_that_do_not_fit_the_reference_servers_schemas_come_back_with_fields(
    transport: str, everything_http: str
) -> None:
    # Its schemas are JSON Schema draft-07 (by their $schema); a refused call is never
    # sent, so the fields come from us, not from the server's own -32602 message.
    async with everything_toolset(transport, everything_http, features=False) as toolset:
        get_sum = await toolset.get_tool("get-sum")
        echo = await toolset.get_tool("echo")
        wrong_type = await get_sum.run({"a": "two", "b": 40}, ToolContext())
        missing = await echo.run({}, ToolContext())
        right = await get_sum.run({"a": 2, "b": 40}, ToolContext())
    assert isinstance(wrong_type, dict)
    assert set(wrong_type["fields"]) == {"a"}
    assert "'number'" in wrong_type["fields"]["a"]
    assert isinstance(missing, dict)
    assert missing["fields"] == {"message": "Field required"}
    assert "42" in str(right)


async def test_a_server_on_the_older_sse_transport_is_reached_with_sse(everything_sse: str) -> None:
    async with McpToolset(Sse(url=everything_sse)) as toolset:
        names = {t.name for t in await toolset.list_tools()}
        get_sum = await toolset.get_tool("get-sum")
        result = await get_sum.run({"a": 2, "b": 40}, ToolContext())
    assert names == ALWAYS
    assert "42" in str(result)


async def test_an_sse_entry_of_a_config_file_loads(everything_sse: str) -> None:
    config = {"mcpServers": {"everything": {"type": "sse", "url": everything_sse}}}
    async with load_mcp_config(config) as toolset:
        echo = await toolset.get_tool("everything_echo")
        result = await echo.run({"message": "over sse"}, ToolContext())
    assert "over sse" in str(result)


async def test_the_reference_servers_stderr_banner_is_logged_not_printed(
    caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    with caplog.at_level(logging.INFO, logger="toolsets.mcp.stderr"):
        async with everything_toolset("stdio", "", features=False, name="everything") as toolset:
            await toolset.list_tools()
    logged = [r.getMessage() for r in caplog.records if r.name == "toolsets.mcp.stderr"]
    assert "everything: Starting default (STDIO) server..." in logged
    assert "Starting default" not in capfd.readouterr().err
