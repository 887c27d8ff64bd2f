"""What the libraries toolsets drives log while it talks to servers — the `mcp` SDK, httpx2,
httpcore2 — holds no secret of ours, at DEBUG: a URL's user info or credential query
parameters, an API key a redirect's ``Location`` repeats, a session cookie. Real servers
on 127.0.0.1; every record at every level is read as a handler would format it."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest

from tests.helpers import ROOT
from tests.mcp.helpers import HttpServer
from tests.openapi.helpers import recording_server
from tests.openapi.test_security import SECRET, spec
from toolsets import ToolContext
from toolsets._auth import MASK
from toolsets._logs import guard_library_logs
from toolsets.mcp import McpToolset, StreamableHttp
from toolsets.openapi import OpenApiToolset

pytestmark = pytest.mark.anyio

PASSWORD = "pw-0f-alice"
TOKEN = "tok-5ecret-in-query"


@pytest.fixture
def every_record(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    """Every record of every logger, at DEBUG (as a user debugging a connection sets)."""
    caplog.set_level(logging.DEBUG)
    return caplog


def text_of(caplog: pytest.LogCaptureFixture) -> str:
    return "\n".join(f"{r.name} {r.getMessage()}" for r in caplog.records)


async def test_a_secret_a_redirect_repeats_or_a_cookie_is_masked_in_httpcore2s_debug_log(
    every_record: pytest.LogCaptureFixture,
) -> None:
    async with recording_server() as api:
        # The API sends the caller back to itself with the key in the query again, and
        # sets a session cookie: httpcore2 logs both response headers at DEBUG.
        api.first.append(
            (
                302,
                {
                    "Location": f"{api.url}/api/things/2?api%20key=k3y-v%40lue%2F%2B%3D",
                    "Set-Cookie": f"sid={TOKEN}; Path=/",
                },
            )
        )
        credentials = {"query_key": SECRET}
        async with OpenApiToolset(
            spec([{"query_key": []}]), base_url=api.url, credentials=credentials
        ) as ts:
            tool = await ts.get_tool("get_thing")
            assert await tool.run({"id": "1"}, ToolContext()) == {"ok": True}

    logged = text_of(every_record)
    assert "httpcore2" in logged  # the library's records were captured, and read
    assert "Location" in logged or "location" in logged
    for secret in ("k3y", "k3y-v%40lue", TOKEN):
        assert secret not in logged


async def test_user_info_and_credential_query_parameters_are_masked_in_the_mcp_sdks_log(
    http_server: HttpServer, every_record: pytest.LogCaptureFixture
) -> None:
    url = http_server.url.replace("http://", f"http://alice:{PASSWORD}@") + f"?token={TOKEN}"
    async with McpToolset(StreamableHttp(url=url)) as toolset:
        assert await toolset.list_tools()

    logged = text_of(every_record)
    assert "Connecting to StreamableHTTP endpoint" in logged  # the SDK's own line
    assert "mcp.client" in logged
    assert PASSWORD not in logged
    assert TOKEN not in logged
    assert "http://127.0.0.1" in logged or "@127.0.0.1" in logged  # the rest is kept


async def test_a_session_id_the_sdk_names_is_masked(
    http_server: HttpServer, every_record: pytest.LogCaptureFixture
) -> None:
    # With a 2025-11-25 session's id, anyone who reaches the server speaks in it.
    async with McpToolset(StreamableHttp(url=http_server.url), mode="legacy") as toolset:
        assert await toolset.list_tools()

    said = [r.getMessage() for r in every_record.records if "session ID" in r.getMessage()]
    assert said
    assert all(line.endswith(f"session ID: {MASK}") for line in said), said


def test_every_logger_of_the_libraries_gets_one_filter_however_often_it_is_guarded() -> None:
    made_later = logging.getLogger("httpcore2.a_module_imported_later")
    guard_library_logs()
    guard_library_logs()
    record = made_later.makeRecord(
        made_later.name,
        logging.DEBUG,
        __file__,
        1,
        "GET %s",
        (f"https://bob:{PASSWORD}@api.example/x?access_token={TOKEN}&page=2",),
        None,
    )

    assert made_later.filter(record)
    shown = record.getMessage()
    assert PASSWORD not in shown
    assert TOKEN not in shown
    assert "page=2" in shown
    assert "api.example/x" in shown
    assert len(made_later.filters) == 2  # the masking, and the caller's (`calling_as`)
    assert len(logging.getLogger("toolsets.mcp.server").filters) == 1  # the caller's only
    assert not logging.getLogger("someone.else").filters


SESSION_LOGS = """
import logging, sys, anyio
logging.basicConfig(level=logging.DEBUG, stream=sys.stdout, format="%(name)s %(message)s")
from toolsets.mcp import McpToolset, StreamableHttp

async def main():
    async with McpToolset(StreamableHttp(url=sys.argv[1]), mode="legacy") as toolset:
        await toolset.list_tools()

anyio.run(main)
"""


def test_loggers_a_library_makes_after_the_first_connection_are_guarded_too(
    http_server: HttpServer,
) -> None:
    # A fresh process: httpcore2 makes its connection and http11 loggers when its first
    # connection opens, after toolsets guarded what existed (a test process has them all).
    done = subprocess.run(
        [sys.executable, "-c", SESSION_LOGS, http_server.url],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    httpcore2 = [line for line in done.stdout.splitlines() if line.startswith("httpcore2.http11")]
    headers = [line for line in httpcore2 if "mcp-session-id" in line]
    assert headers, "httpcore2 logged the session's response headers"
    assert all(f"mcp-session-id', b'{MASK}'" in line for line in headers), headers[0]
