"""`ResultLimit` on what a real HTTP server on 127.0.0.1 streams: a 5 MB page of a list
that links to its next page, cut to fit, still JSON of the same shape, with a note saying
what was cut and which arguments fetch the next page; small results and errors untouched.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Iterator
from typing import Any

import anyio
import mcp.types as mt
import pydantic_core
import pytest
from mcp import Client, StdioServerParameters

from tests.cli.helpers import entry_point, environment, toolsets_command
from tests.helpers import serve_app
from toolsets import FunctionTool, ToolContext, error_result
from toolsets._invoke import Done, invoke
from toolsets.calls import BYTES_PER_TOKEN, ResultLimit, wrap_calls
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


def served(making: Any) -> Iterator[str]:
    """The app ``making`` makes of its own URL, served: that URL."""
    base: list[str] = []
    with serve_app(making(base)) as port:
        base.append(f"http://127.0.0.1:{port}")
        yield base[0]


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    yield from served(streaming)


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
    assert "resource" not in result["truncated"]  # outside serving, nowhere to keep it


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


def call_big_page(url: str, tmp_path: Any, *options: str) -> tuple[Any, str]:
    """``toolsets call ... listItems page=1 --json OPTIONS`` on the big page: what it
    printed, parsed and as text."""
    path = tmp_path / "big.json"
    path.write_text(json.dumps(spec()))
    done = toolsets_command(
        "call", str(path), "listItems", "page=1", "--base-url", url, *options, "--json"
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), done.stdout


def test_the_command_line_cuts_a_result_with_max_result_bytes(url: str, tmp_path: Any) -> None:
    said, printed = call_big_page(url, tmp_path, "--max-result-bytes", "20000")
    assert "truncated" in said
    assert len(printed.encode()) < 25_000


async def test_serve_with_max_result_bytes_links_a_cut_result_to_its_whole(
    url: str, tmp_path: Any
) -> None:
    path = tmp_path / "big.json"
    path.write_text(json.dumps(spec()))
    command = entry_point()
    args = [*command[1:], "serve", str(path), "--base-url", url, "--max-result-bytes", "20000"]
    params = StdioServerParameters(command=command[0], args=args, env=environment())
    with anyio.fail_after(60):
        async with Client(params) as client:
            result = await client.call_tool("listItems", {"page": 1})
            (link,) = [b for b in result.content if isinstance(b, mt.ResourceLink)]
            read = await client.read_resource(str(link.uri))
    assert str(link.uri) in (result.structured_content or {})["truncated"]
    (whole,) = read.contents
    assert isinstance(whole, mt.TextResourceContents)
    # The tool's whole result: the API's first megabyte (OpenApiToolset's own limit).
    assert json.loads(whole.text)["text"] == page(1, url)[:1_000_000].decode()


def test_result_limit_refuses_a_limit_too_small_to_say_anything() -> None:
    with pytest.raises(ValueError, match="max_bytes must be at least 1000"):
        ResultLimit(max_bytes=10)


def issues_spec() -> dict[str, Any]:
    """Two operations that page as GitHub's do: the next page in a ``Link`` header only
    (the body a bare list); ``listElsewhere``'s header points to another host."""
    query = [
        {"name": "page", "in": "query", "schema": {"type": "integer"}},
        {"name": "per_page", "in": "query", "schema": {"type": "integer"}},
        {"name": "state", "in": "query", "schema": {"type": "string"}},
    ]
    ok = {"200": {"description": "ok"}}
    return {
        "openapi": "3.1.0",
        "info": {"title": "issues", "version": "1"},
        "paths": {
            "/issues": {"get": {"operationId": "listIssues", "parameters": query, "responses": ok}},
            "/elsewhere": {
                "get": {"operationId": "listElsewhere", "parameters": query, "responses": ok}
            },
        },
    }


def linking(base: list[str]) -> Any:
    """Answers a list of ``per_page`` issues and a ``Link`` header naming the next page
    (on its own host for /api/issues, on another for /api/elsewhere)."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    def issues(request: Request) -> JSONResponse:
        page = int(request.query_params.get("page", "1"))
        per_page = int(request.query_params.get("per_page", "30"))
        items = [{"number": n, "title": "y" * 200} for n in range(per_page)]
        host = base[0] if request.url.path == "/api/issues" else "http://elsewhere.example"
        state = request.query_params.get("state", "open")
        key = request.query_params.get("api_key", "")  # echoed, as some APIs do
        following = f"{host}/api/issues?state={state}&page={page + 1}&per_page={per_page}"
        following += f"&api_key={key}" if key else ""
        links = f'<{following}>; rel="next", <{host}/api/issues?page=9>; rel="last"'
        return JSONResponse(items, headers={"Link": links})

    routes = [Route("/api/issues", issues), Route("/api/elsewhere", issues)]
    return Starlette(routes=routes)


@pytest.fixture(scope="module")
def issues_url() -> Iterator[str]:
    yield from served(linking)


async def call_issues(url: str, name: str, args: dict[str, Any]) -> Any:
    toolset = wrap_calls(OpenApiToolset(issues_spec(), base_url=url + "/api"), ResultLimit())
    async with toolset:
        tool = {each.name: each for each in await toolset.list_tools()}[name]
        limited = wrap_calls(tool, ResultLimit(max_bytes=5_000))
        outcome = await invoke(limited, args, ToolContext(), default_timeout=30)
    assert isinstance(outcome, Done)
    return outcome.result


async def test_the_next_page_a_link_header_names_is_said_as_the_tools_arguments(
    issues_url: str,
) -> None:
    result = await call_issues(issues_url, "listIssues", {"page": 3, "per_page": 100})
    assert len(pydantic_core.to_json(result)) <= 5_000
    assert 0 < len(result["result"]) < 100  # the same bare list, its first items
    note = result["truncated"]
    expected = '{"page":4,"per_page":100,"state":"open"}'
    assert f"call listIssues again with {expected}" in note, note


async def test_a_credential_the_next_link_quotes_back_is_never_an_argument(
    issues_url: str,
) -> None:
    # The API key goes in the query; the API echoes it in its next link, and a state
    # the model asked for that happens to hold it too.
    key = "s3cret-key-1234"
    spec = issues_spec()
    spec["components"] = {
        "securitySchemes": {"key": {"type": "apiKey", "in": "query", "name": "api_key"}}
    }
    spec["security"] = [{"key": []}]
    api = OpenApiToolset(spec, base_url=issues_url + "/api", credentials={"key": key})
    async with api:
        tool = {each.name: each for each in await api.list_tools()}["listIssues"]
        limited = wrap_calls(tool, ResultLimit(max_bytes=5_000))
        args = {"page": 1, "per_page": 100, "state": f"open{key}"}
        outcome = await invoke(limited, args, ToolContext(), default_timeout=30)
    assert isinstance(outcome, Done)
    note = outcome.result["truncated"]  # type: ignore[index, call-overload]
    assert 'again with {"page":2,"per_page":100}' in note
    assert key not in note


async def test_a_link_header_to_another_host_is_never_given_as_arguments(
    issues_url: str,
) -> None:
    result = await call_issues(issues_url, "listElsewhere", {"page": 3, "per_page": 100})
    note = result["truncated"]
    assert "again with" not in note
    assert "elsewhere.example" not in note
    assert "listElsewhere's arguments page, per_page" in note  # the paging arguments


async def test_a_result_under_the_limit_is_the_body_alone_link_header_or_not(
    issues_url: str,
) -> None:
    result = await call_issues(issues_url, "listIssues", {"page": 1, "per_page": 2})
    assert result == [{"number": n, "title": "y" * 200} for n in range(2)]


def words(text: str) -> int:
    """A tokenizer written here, deterministic: each run of word characters, and each
    other character but a space, is a token."""
    return len(re.findall(r"\w+|[^\w\s]", text))


class Counting:
    """`words`, recording the length of each text it counted and whether it ran on the
    event loop's thread."""

    def __init__(self) -> None:
        self.lengths: list[int] = []
        self.on_loop: list[bool] = []
        self.loop = threading.get_ident()

    def __call__(self, text: str) -> int:
        self.lengths.append(len(text))
        self.on_loop.append(threading.get_ident() == self.loop)
        return words(text)


async def limited(tool: Any, limit: ResultLimit, args: dict[str, Any]) -> Any:
    outcome = await invoke(wrap_calls(tool, limit), args, ToolContext(), default_timeout=30)
    assert isinstance(outcome, Done)
    return outcome.result


async def test_a_5_mb_page_is_cut_to_the_tokens_the_counter_counts_counting_it_once(
    url: str,
) -> None:
    api = OpenApiToolset(spec(), base_url=url, max_response_bytes=10_000_000)
    counter = Counting()
    async with api:
        (tool,) = await api.list_tools()
        whole = await limited(tool, ResultLimit(max_bytes=10_000_000), {"page": 1})
        result = await limited(tool, ResultLimit(max_tokens=3_000, tokens=counter), {"page": 1})
    assert words(pydantic_core.to_json(result).decode()) <= 3_000
    cut = result["result"]
    assert set(cut) == {"items", "total", "next"}
    assert 0 < len(cut["items"]) < ITEMS
    note = result["truncated"]
    counted = words(pydantic_core.to_json(whole).decode())
    assert f"The result was {counted:,} tokens (" in note
    assert "over the 3,000 tokens this call may return" in note
    assert "estimated" not in note
    assert 'call listItems again with {"page":"2","per_page":"5000"}' in note
    # The whole body counted once, off the event loop; the cuts a few times at most.
    assert [length > 1_000_000 for length in counter.lengths].count(True) == 1
    assert len(counter.lengths) <= 4
    assert counter.on_loop[0] is False


async def test_without_a_counter_tokens_are_estimated_and_the_note_says_so(url: str) -> None:
    api = OpenApiToolset(spec(), base_url=url, max_response_bytes=10_000_000)
    async with api:
        (tool,) = await api.list_tools()
        result = await limited(tool, ResultLimit(max_tokens=2_000), {"page": 1})
    assert len(pydantic_core.to_json(result)) <= 2_000 * BYTES_PER_TOKEN
    assert 0 < len(result["result"]["items"]) < ITEMS
    note = result["truncated"]
    assert "The result was about " in note
    assert f"tokens estimated at {BYTES_PER_TOKEN} bytes a token" in note
    assert "over the 2,000 tokens this call may return" in note


def dense_and_sparse() -> dict[str, list[str]]:
    """A result whose first items are denser in tokens than the whole: 40 items of
    many short words, and 400 long words (a token each by `words`)."""
    return {"dense": ["a b c d e f g h " * 20] * 40, "sparse": ["x" * 2_000] * 400}


async def test_a_cut_denser_in_tokens_than_the_whole_is_cut_again_until_it_fits() -> None:
    def report() -> dict[str, list[str]]:
        """A report."""
        return dense_and_sparse()

    counter = Counting()
    limit = ResultLimit(max_tokens=1_000, tokens=counter)
    result = await limited(FunctionTool(report), limit, {})
    assert words(pydantic_core.to_json(result).decode()) <= 1_000
    assert len(counter.lengths) >= 3  # the whole, a first cut over the limit, the next
    assert len(counter.lengths) <= 4
    assert "over the 1,000 tokens" in result["truncated"]


async def test_both_limits_hold_when_both_are_given() -> None:
    def report() -> dict[str, list[str]]:
        """A report."""
        return dense_and_sparse()

    whole = pydantic_core.to_json(dense_and_sparse())
    bytes_said = f"The result was {len(whole):,} bytes of JSON, over the 5,000 this"
    tokens_said = f"The result was {words(whole.decode()):,} tokens ({len(whole):,} bytes"
    for max_bytes, max_tokens, said in (
        (5_000, 100_000, bytes_said),
        (1_000_000, 300, tokens_said),
    ):
        limit = ResultLimit(max_bytes=max_bytes, max_tokens=max_tokens, tokens=words)
        result = await limited(FunctionTool(report), limit, {})
        text = pydantic_core.to_json(result)
        assert len(text) <= max_bytes
        assert words(text.decode()) <= max_tokens
        assert said in result["truncated"]


async def test_a_counter_that_fails_is_logged_and_the_result_cut_by_the_estimate(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def report() -> str:
        """A report."""
        return "line\n" * 100_000

    def broken(text: str) -> int:
        raise RuntimeError("the tokenizer is gone")

    limit = ResultLimit(max_tokens=1_000, tokens=broken)
    with caplog.at_level(logging.WARNING, logger="toolsets.calls"):
        result = await limited(FunctionTool(report), limit, {})
    assert len(pydantic_core.to_json(result)) <= 1_000 * BYTES_PER_TOKEN
    assert result["result"].startswith("line\nline\n")
    assert "estimated at 2.5 bytes a token" in result["truncated"]
    (record,) = caplog.records
    assert "report's result" in record.getMessage()
    assert record.exc_info is not None
    assert "the tokenizer is gone" in str(record.exc_info[1])


async def test_a_result_shorter_in_bytes_than_max_tokens_is_never_counted() -> None:
    def small() -> dict[str, str]:
        """Small."""
        return {"a": "b" * 500}

    counter = Counting()
    result = await limited(FunctionTool(small), ResultLimit(max_tokens=1_000, tokens=counter), {})
    assert result == {"a": "b" * 500}
    assert counter.lengths == []


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"max_tokens": 10}, "max_tokens must be at least 250"),
        ({"tokens": words}, "tokens counts against max_tokens"),
        ({"max_tokens": 1_000, "tokens": 3}, "tokens must be a callable"),
        ({"max_bytes": 10, "max_tokens": 1_000}, "max_bytes must be at least 1000"),
    ],
)
def test_result_limit_refuses_a_token_limit_that_makes_no_sense(
    arguments: dict[str, Any], named: str
) -> None:
    with pytest.raises(ValueError, match=named):
        ResultLimit(**arguments)


def test_result_limit_limits_bytes_by_default_and_tokens_alone_when_only_they_are_given() -> None:
    by_default, in_tokens = ResultLimit(), ResultLimit(max_tokens=500)
    assert (by_default.max_bytes, by_default.max_tokens) == (100_000, None)
    assert (in_tokens.max_bytes, in_tokens.max_tokens) == (None, 500)


def test_the_command_line_cuts_a_result_with_max_result_tokens(url: str, tmp_path: Any) -> None:
    said, _ = call_big_page(url, tmp_path, "--max-result-tokens", "4000")
    assert "over the 4,000 tokens this call may return" in said["truncated"]
    assert "estimated at 2.5 bytes a token" in said["truncated"]
    assert len(json.dumps(said, separators=(",", ":")).encode()) <= 4_000 * BYTES_PER_TOKEN


def test_the_command_lines_help_says_how_tokens_are_estimated() -> None:
    done = toolsets_command("call", "--help")
    assert done.returncode == 0, done.stderr
    assert f"estimated at {BYTES_PER_TOKEN} bytes of JSON" in " ".join(done.stdout.split())
