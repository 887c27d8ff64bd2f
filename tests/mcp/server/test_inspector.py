"""`McpServer` judged by an outside client: the MCP Inspector's command-line mode (npm
``@modelcontextprotocol/inspector``), listing and calling the fixture toolset's tools over
stdio and over streamable HTTP, in processes of their own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from tests.helpers import NODE, PEERS, ROOT
from tests.mcp.helpers import HttpServer
from tests.mcp.server.auth_helpers import serving
from tests.mcp.server.oidc import OpenIdProvider
from tests.mcp.server_helpers import SERVED, SRC

INSPECTOR = PEERS / "@modelcontextprotocol" / "inspector" / "clients" / "launcher" / "build"
INSPECTOR = INSPECTOR / "index.js"
RUN_TIMEOUT = 60.0


def inspect(*args: str) -> tuple[int, Any, str]:
    """Run the Inspector's CLI with ``args``: its exit status, its JSON output (None if it
    printed none) and its stderr."""
    done = subprocess.run(
        [str(NODE), str(INSPECTOR), "--cli", *args],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": SRC},
    )
    start = done.stdout.find("{")
    output = json.loads(done.stdout[start:]) if start >= 0 else None
    return done.returncode, output, done.stderr


STDIO = (sys.executable, SERVED, "stdio")


def test_the_inspector_lists_the_tools_over_stdio_with_their_schemas_and_hints() -> None:
    status, output, stderr = inspect(*STDIO, "--method", "tools/list")
    assert status == 0, stderr
    tools = {tool["name"]: tool for tool in output["tools"]}
    assert {"add", "describe", "pixel", "wipe"} <= set(tools)
    add = tools["add"]
    assert add["inputSchema"]["required"] == ["a", "b"]
    assert add["inputSchema"]["properties"]["a"]["description"] == "The first."
    assert add["annotations"]["readOnlyHint"] is True
    assert tools["describe"]["outputSchema"]["type"] == "object"


def test_the_inspector_calls_a_tool_over_stdio_and_gets_structured_content() -> None:
    args = ("--method", "tools/call", "--tool-name", "describe", "--tool-arg", "name=Ada")
    status, output, stderr = inspect(*STDIO, *args)
    assert status == 0, stderr
    assert output["isError"] is False
    assert output["structuredContent"] == {"name": "Ada", "letters": 3}


def test_invalid_arguments_reach_the_inspector_as_an_error_result_naming_the_field() -> None:
    args = ("--method", "tools/call", "--tool-name", "add", "--tool-arg", "a=1")
    status, output, _ = inspect(*STDIO, *args)
    assert status != 0  # the Inspector's CLI fails on an error result
    assert output["isError"] is True
    assert "b" in json.dumps(output["content"])


class ServedOverHttp(HttpServer):
    """The fixture toolset served by `McpServer` over streamable HTTP (stateless), in a
    process of its own."""

    def command(self) -> tuple[list[str], dict[str, str]]:
        return [sys.executable, SERVED, "http", str(self.port)], {**os.environ, "PYTHONPATH": SRC}


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    server = ServedOverHttp()
    server.start()
    try:
        yield server.url
    finally:
        server.stop()


def test_the_inspector_lists_and_calls_over_streamable_http(http_url: str) -> None:
    over_http = ("--transport", "http", "--server-url", http_url)
    status, listed, stderr = inspect(*over_http, "--method", "tools/list")
    assert status == 0, stderr
    assert "add" in {tool["name"] for tool in listed["tools"]}
    call = ("--method", "tools/call", "--tool-name", "add")
    status, added, stderr = inspect(*over_http, *call, "--tool-arg", "a=2", "--tool-arg", "b=3")
    assert status == 0, stderr
    assert added["content"] == [{"type": "text", "text": "5"}]


# --- a protected server ------------------------------------------------------------------


@pytest.fixture(scope="module")
def protected_url(openid_provider: OpenIdProvider) -> Iterator[str]:
    """A server needing a token from the real OpenID provider, served in a thread."""
    with serving(openid_provider) as served:
        yield served.url


@pytest.mark.anyio
async def test_the_inspector_calls_a_protected_tool_with_a_bearer_token(
    protected_url: str, openid_provider: OpenIdProvider
) -> None:
    token = await openid_provider.token(protected_url)
    args = ("--transport", "http", "--server-url", protected_url, "--method", "tools/call")
    call = (*args, "--tool-name", "whoami", "--header", f"Authorization: Bearer {token}")
    status, output, stderr = await anyio.to_thread.run_sync(lambda: inspect(*call))
    assert status == 0, stderr
    assert output["structuredContent"] == {"subject": "service", "client": "service"}
    status, _, stderr = await anyio.to_thread.run_sync(
        lambda: inspect(*args, "--tool-name", "whoami")
    )
    # Without one, the 401 sends the Inspector to log in (OAuth), which needs a person.
    assert status != 0
    assert '"auth_required"' in stderr
