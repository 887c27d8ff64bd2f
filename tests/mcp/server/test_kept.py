"""Whole results kept for their caller (`toolsets.mcp.server._kept`): a served tool
wrapped with `ResultLimit` whose result is cut links to its whole (a ``resource_link``,
its URI in the note), which that caller reads byte for byte with ``resources/read``
over real streamable HTTP; another session, or an unknown URI, gets a clear "not
found"; nothing of it is listed; memory is bounded and results expire."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
import mcp.types as mt
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client

import toolsets.mcp.server._kept
from tests.helpers import serve_app
from toolsets import Invocation
from toolsets.calls import ResultLimit, wrap_calls
from toolsets.mcp import IncomingRequest, McpServer
from toolsets.mcp.server._kept import KeptResults
from toolsets.openapi import OpenApiToolset

pytestmark = pytest.mark.anyio

ITEMS = [{"id": n, "name": f"item {n}", "notes": "x" * 100} for n in range(500)]
BODY = json.dumps(ITEMS, separators=(",", ":")).encode()
"""What the API answers: about 60 KB of compact JSON (as MCP would send it whole)."""

SPEC = {
    "openapi": "3.1.0",
    "info": {"title": "items", "version": "1"},
    "paths": {
        "/items": {"get": {"operationId": "listItems", "responses": {"200": {"description": "ok"}}}}
    },
}


async def api(scope: dict[str, Any], receive: Any, send: Any) -> None:
    assert scope["type"] == "http"
    head = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(BODY))]
    await send({"type": "http.response.start", "status": 200, "headers": head})
    await send({"type": "http.response.body", "body": BODY})


def by_header(request: IncomingRequest) -> Invocation:
    """The session a (2026-07-28) request says it is of, in a header."""
    return Invocation(session_id=request.headers.get("x-session", "none"))


@pytest.fixture(scope="module")
def api_url() -> Iterator[str]:
    with serve_app(api) as port:
        yield f"http://127.0.0.1:{port}"


def serving(api_url: str, **options: Any) -> Iterator[str]:
    """An `McpServer` (``options``) over the API, its calls cut at 5,000 bytes, served
    by uvicorn: its URL."""

    def make() -> Any:
        limited = wrap_calls(OpenApiToolset(SPEC, base_url=api_url), ResultLimit(max_bytes=5_000))
        return McpServer(limited, **options).http_app()

    with serve_app(make, factory=True) as port:
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.fixture(scope="module")
def url(api_url: str) -> Iterator[str]:
    yield from serving(api_url)


@pytest.fixture(scope="module")
def sessions_url(api_url: str) -> Iterator[str]:
    """A server whose `Invocation` names the session a request says it is of."""
    yield from serving(api_url, invocation=by_header)


@asynccontextmanager
async def session(url: str, mode: str = "legacy", name: str = "") -> AsyncIterator[Client]:
    """A client of its own (2025-11-25: a stateful MCP session; 2026-07-28: saying it
    is of session ``name``)."""
    async with httpx2.AsyncClient(headers={"x-session": name}) as http:
        transport = streamable_http_client(url, http_client=http)
        async with Client(transport, mode=mode) as client:  # type: ignore[arg-type]
            yield client


async def test_a_cut_result_links_to_its_whole_which_its_caller_reads_byte_for_byte(
    url: str,
) -> None:
    with anyio.fail_after(20):
        async with session(url) as client:
            result = await client.call_tool("listItems", {})
            (link,) = [b for b in result.content if isinstance(b, mt.ResourceLink)]
            read = await client.read_resource(str(link.uri))
            listed = await client.list_resources()
    assert not result.is_error
    structured = result.structured_content
    assert structured is not None
    assert str(link.uri) in structured["truncated"]
    assert 0 < len(structured["result"]) < len(ITEMS)
    assert (link.mime_type, link.size) == ("application/json", len(BODY))
    (contents,) = read.contents
    assert isinstance(contents, mt.TextResourceContents)
    assert contents.text.encode() == BODY
    assert contents.mime_type == "application/json"
    assert str(link.uri) not in [str(r.uri) for r in listed.resources]


async def test_the_audit_record_of_a_read_never_holds_the_uri_that_reads_the_result(
    url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="toolsets.audit")
    with anyio.fail_after(20):
        async with session(url) as client:
            result = await client.call_tool("listItems", {})
            (link,) = [b for b in result.content if isinstance(b, mt.ResourceLink)]
            await client.read_resource(str(link.uri))
    uri = str(link.uri)
    [read] = [r for r in caplog.records if getattr(r, "method", None) == "resources/read"]
    assert read.getMessage().count("toolsets://results/") == 1
    assert uri not in read.getMessage()
    assert uri not in json.dumps(vars(read), default=str)


async def test_another_session_cannot_read_it_and_an_unknown_uri_is_a_clear_error(
    url: str,
) -> None:
    with anyio.fail_after(20):
        async with session(url) as client:
            result = await client.call_tool("listItems", {})
            (uri,) = [str(b.uri) for b in result.content if isinstance(b, mt.ResourceLink)]
            async with session(url) as other:
                with pytest.raises(MCPError) as refused:
                    await other.read_resource(uri)
            unknown = uri[:-8] + "AAAAAAAA"
            with pytest.raises(MCPError) as missing:
                await client.read_resource(unknown)
            still = await client.read_resource(uri)  # its caller still can
    assert (refused.value.error.code, refused.value.error.data) == (
        mt.INVALID_PARAMS,
        {"uri": uri},
    )
    assert (missing.value.error.code, missing.value.error.data) == (
        mt.INVALID_PARAMS,
        {"uri": unknown},
    )
    assert "another replica" in missing.value.error.message
    assert isinstance(still.contents[0], mt.TextResourceContents)


async def test_on_2026_07_28_the_session_the_invocation_names_is_the_one_that_reads(
    sessions_url: str,
) -> None:
    url = sessions_url
    with anyio.fail_after(20):
        async with session(url, "2026-07-28", "ada") as ada:
            result = await ada.call_tool("listItems", {})
            (uri,) = [str(b.uri) for b in result.content if isinstance(b, mt.ResourceLink)]
            read = await ada.read_resource(uri)
        async with session(url, "2026-07-28", "bob") as bob:
            with pytest.raises(MCPError) as refused:
                await bob.read_resource(uri)
    assert isinstance(read.contents[0], mt.TextResourceContents)
    assert read.contents[0].text.encode() == BODY
    assert refused.value.error.data == {"uri": uri}


def test_kept_results_stay_within_their_bytes_and_expire(monkeypatch: Any) -> None:
    now = [1000.0]
    monkeypatch.setattr(toolsets.mcp.server._kept, "_clock", lambda: now[0])
    text = "y" * 40_000
    kept = KeptResults(max_bytes=100_000, ttl=60)
    owner = ("issuer", "ada", None)
    first, second, third = (kept.keep(owner, text, "text/plain", "t") for _ in range(3))
    assert first is not None and second is not None and third is not None  # noqa: PT018
    assert not kept.holds(str(first.uri))  # the oldest went to make room
    assert kept.read(str(third.uri), owner).contents[0].text == text  # type: ignore[union-attr]
    assert kept.keep(owner, "z" * 200_000, "text/plain", "t") is None  # too big to keep
    now[0] += 61
    assert not kept.holds(str(second.uri))
    assert not kept.holds(str(third.uri))
    with pytest.raises(MCPError):
        kept.read(str(third.uri), owner)


def test_a_result_kept_for_one_caller_is_not_read_by_another() -> None:
    kept = KeptResults()
    link = kept.keep(("issuer", "ada", None), "secret", "text/plain", "t")
    assert link is not None
    with pytest.raises(MCPError):
        kept.read(str(link.uri), ("issuer", "bob", None))
    with pytest.raises(MCPError):
        kept.read(str(link.uri), ("issuer", "ada", "another session"))
