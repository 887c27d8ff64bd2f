"""`ResultLimit` on what a real HTTP server on 127.0.0.1 streams: a 5 MB page of a list
that links to its next page, cut to fit, still JSON of the same shape, with a note saying
what was cut and which arguments fetch the next page; small results and errors untouched.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pydantic_core
import pytest

from tests.cli.helpers import toolsets_command
from tests.helpers import serve_app
from toolsets import FunctionTool, ToolContext, error_result
from toolsets._invoke import Done, invoke
from toolsets.calls import ResultLimit, wrap_calls
from toolsets.openapi import OpenApiToolset

pytestmark = pytest.mark.anyio

ITEMS = 5000
"""Items of the big page: about 5 MB of JSON."""


def page(number: int, base: str) -> bytes:
    items = [{"id": i, "name": f"item {i}", "notes": "x" * 1000} for i in range(ITEMS)]
    following = f"{base}/items?page={number + 1}&per_page={ITEMS}"
    return json.dumps({"items": items, "total": ITEMS * 3, "next": following}).encode()


def streaming(base: list[str]) -> Any:
    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        assert scope["type"] == "http"
        body = page(1, base[0])
        head = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
        await send({"type": "http.response.start", "status": 200, "headers": head})
        for start in range(0, len(body), 65536):  # streamed in chunks
            chunk = body[start : start + 65536]
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b""})

    return app


def spec() -> dict[str, Any]:
    number = {"type": "integer"}
    query = [
        {"name": "page", "in": "query", "schema": number},
        {"name": "per_page", "in": "query", "schema": number},
    ]
    operation = {"operationId": "listItems", "parameters": query}
    operation["responses"] = {"200": {"description": "ok"}}
    return {
        "openapi": "3.1.0",
        "info": {"title": "big", "version": "1"},
        "paths": {"/items": {"get": operation}},
    }


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    base: list[str] = []
    with serve_app(streaming(base)) as port:
        base.append(f"http://127.0.0.1:{port}")
        yield base[0]


async def test_a_5_mb_page_is_cut_to_fit_and_says_how_to_get_the_next(url: str) -> None:
    api = OpenApiToolset(spec(), base_url=url, max_response_bytes=10_000_000)
    toolset = wrap_calls(api, ResultLimit(max_bytes=50_000))
    async with toolset:
        (tool,) = await toolset.list_tools()
        outcome = await invoke(tool, {"page": 1}, ToolContext(), default_timeout=30)
    assert isinstance(outcome, Done)
    result = outcome.result
    assert isinstance(result, dict)
    assert len(pydantic_core.to_json(result)) <= 50_000
    cut = result["result"]
    assert set(cut) == {"items", "total", "next"}  # the same shape, every key kept
    assert 10 < len(cut["items"]) < ITEMS
    assert cut["items"][0] == {"id": 0, "name": "item 0", "notes": "x" * 1000}
    note = result["truncated"]
    assert f"items: {len(cut['items']):,} of {ITEMS:,}" in note
    assert 'call listItems again with {"page":"2","per_page":"5000"}' in note


async def test_a_long_text_keeps_its_beginning_and_the_tools_paging_arguments_are_named() -> None:
    def report(limit: int = 10) -> str:
        """A report.

        Args:
            limit: Lines at most.
        """
        return "line\n" * 100_000

    tool = wrap_calls(FunctionTool(report), ResultLimit(max_bytes=5_000))
    outcome = await invoke(tool, {}, ToolContext(), default_timeout=5)
    assert isinstance(outcome, Done)
    result = outcome.result
    assert isinstance(result, dict)
    assert result["result"].startswith("line\nline\n")
    assert result["result"].endswith("…")
    assert "1 long text(s) keep their beginning" in result["truncated"]
    assert "report's arguments limit" in result["truncated"]


async def test_small_results_and_error_results_are_left_as_they_are() -> None:
    def small() -> dict[str, int]:
        """Small."""
        return {"a": 1}

    def failing() -> Any:
        """Failing."""
        return error_result("x" * 50_000)

    limit = ResultLimit(max_bytes=1_000)
    for function, expected in ((small, {"a": 1}), (failing, error_result("x" * 50_000))):
        outcome = await invoke(
            wrap_calls(FunctionTool(function), limit), {}, ToolContext(), default_timeout=5
        )
        assert isinstance(outcome, Done)
        assert outcome.result == expected


def test_the_command_line_cuts_a_result_with_max_result_bytes(url: str, tmp_path: Any) -> None:
    path = tmp_path / "big.json"
    path.write_text(json.dumps(spec()))
    done = toolsets_command(
        "call", str(path), "listItems", "page=1", "--base-url", url,
        "--max-result-bytes", "20000", "--json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout)
    assert "truncated" in said
    assert len(done.stdout.encode()) < 25_000


def test_result_limit_refuses_a_limit_too_small_to_say_anything() -> None:
    with pytest.raises(ValueError, match="max_bytes must be at least 1000"):
        ResultLimit(max_bytes=10)
