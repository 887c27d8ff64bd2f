"""`HttpCache` against a real HTTP server on 127.0.0.1 that serves ``ETag``s,
``Cache-Control: max-age``, ``no-store`` and ``Vary``, answers conditional requests 304,
and counts what arrives: what the cache answers never reaches it."""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx2
import pytest

from tests.helpers import serve_app
from tests.mcp.server_helpers import connected
from tests.telemetry.helpers import Recorded, recorded
from toolsets import AuthCredential, Identity, Invocation, ToolContext, ToolDefinitionError
from toolsets._invoke import Done, invoke
from toolsets.mcp import McpServer, UserCredentials
from toolsets.openapi import HttpCache, OpenApiToolset

pytestmark = pytest.mark.anyio

__all__ = ["recorded"]  # the fixture, used by name

USERS = {"Bearer alice-token-0001": "alice", "Bearer bob-token-000002": "bob"}


@dataclass
class Arrivals:
    """What reached the API: by method and path, each request's headers."""

    seen: dict[str, list[dict[str, str]]] = field(default_factory=dict)

    def count(self, where: str) -> int:
        return len(self.seen.get(where, []))


def api(arrivals: Arrivals) -> Any:
    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        assert scope["type"] == "http"
        method, path = scope["method"], scope["path"]
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        where = f"{method} {path}"
        arrivals.seen.setdefault(where, []).append(headers)
        while (await receive()).get("more_body"):
            pass
        n = arrivals.count(where)
        status, head, body = 200, {"cache-control": "max-age=60"}, {"n": n}
        if path == "/etag":  # always stale: asked again each time, with its ETag
            head = {"cache-control": "max-age=0", "etag": '"v1"'}
            if headers.get("if-none-match") == '"v1"':
                status = 304
        elif path == "/changing":  # stale, and changed each time it is asked for
            head = {"cache-control": "max-age=0", "etag": f'"v{n}"'}
        elif path == "/modified":  # stale, with a date to ask about
            head = {"cache-control": "max-age=0", "last-modified": "Mon, 07 Dec 2026 08:00:00 GMT"}
            if "if-modified-since" in headers:
                status = 304
        elif path == "/nostore":
            head = {"cache-control": "no-store, max-age=60"}
        elif path == "/vary":
            head["vary"] = "X-Lang"
            body["lang"] = headers.get("x-lang", "")
        elif path == "/mine":
            head = {"cache-control": "private, max-age=60"}
            body["user"] = USERS.get(headers.get("authorization", ""), "nobody")
        elif path.startswith("/big/"):
            body["pad"] = "x" * 1000
        elif method == "POST":
            status, body = 201, {"created": n}
        data = b"" if status == 304 else repr(body).replace("'", '"').encode()
        if path == "/gzip":
            data, head["content-encoding"] = gzip.compress(data), "gzip"
        raw = [(k.encode(), v.encode()) for k, v in head.items()]
        raw += [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(data))]
        await send({"type": "http.response.start", "status": status, "headers": raw})
        await send({"type": "http.response.body", "body": data})

    return app


def spec() -> dict[str, Any]:
    answer = {"200": {"description": "ok"}, "201": {"description": "made"}}
    lang = {"name": "X-Lang", "in": "header", "schema": {"type": "string"}}
    name = {"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}
    return {
        "openapi": "3.1.0",
        "info": {"title": "cached", "version": "1"},
        "components": {"securitySchemes": {"token": {"type": "http", "scheme": "bearer"}}},
        "paths": {
            "/fresh": {"get": {"operationId": "fresh", "responses": answer}},
            "/etag": {"get": {"operationId": "etag", "responses": answer}},
            "/nostore": {"get": {"operationId": "nostore", "responses": answer}},
            "/modified": {"get": {"operationId": "modified", "responses": answer}},
            "/changing": {"get": {"operationId": "changing", "responses": answer}},
            "/gzip": {"get": {"operationId": "gzipped", "responses": answer}},
            "/vary": {"get": {"operationId": "vary", "parameters": [lang], "responses": answer}},
            "/big/{name}": {
                "get": {"operationId": "big", "parameters": [name], "responses": answer}
            },
            "/mine": {
                "get": {"operationId": "mine", "security": [{"token": []}], "responses": answer}
            },
            "/items": {
                "get": {"operationId": "listItems", "responses": answer},
                "post": {"operationId": "addItem", "responses": answer},
            },
        },
    }


@pytest.fixture(scope="module")
def arrivals() -> Arrivals:
    return Arrivals()


@pytest.fixture(scope="module")
def base_url(arrivals: Arrivals) -> Iterator[str]:
    with serve_app(api(arrivals)) as port:
        yield f"http://127.0.0.1:{port}"


@pytest.fixture(autouse=True)
def fresh(arrivals: Arrivals) -> None:
    arrivals.seen.clear()


async def called(
    toolset: OpenApiToolset,
    name: str,
    args: dict[str, Any] | None = None,
    user: AuthCredential | None = None,
) -> Any:
    tool = next(t for t in await toolset.list_tools() if t.name == name)
    outcome = await invoke(tool, args or {}, ToolContext(), default_timeout=10, credential=user)
    assert isinstance(outcome, Done)
    return outcome.result


def cached(base_url: str, cache: HttpCache, **options: Any) -> OpenApiToolset:
    return OpenApiToolset(spec(), base_url=base_url, confirm="never", cache=cache, **options)


async def test_a_second_get_within_max_age_never_reaches_the_api(
    base_url: str, arrivals: Arrivals
) -> None:
    cache = HttpCache()
    async with cached(base_url, cache) as toolset:
        first = await called(toolset, "fresh")
        second = await called(toolset, "fresh")
    assert first == second == {"n": 1}
    assert arrivals.count("GET /fresh") == 1
    assert (cache.hits, cache.misses, len(cache)) == (1, 1, 1)


async def test_a_compressed_response_is_kept_as_sent_and_given_back_decoded(
    base_url: str, arrivals: Arrivals
) -> None:
    cache = HttpCache()
    async with cached(base_url, cache) as toolset:
        assert await called(toolset, "gzipped") == {"n": 1}
        assert await called(toolset, "gzipped") == {"n": 1}
    assert arrivals.count("GET /gzip") == 1


async def test_a_response_a_given_clients_transport_had_read_already_is_kept() -> None:
    sent: list[httpx2.Request] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        sent.append(request)
        return httpx2.Response(200, json={"n": len(sent)}, headers={"cache-control": "max-age=60"})

    client = httpx2.AsyncClient(transport=httpx2.MockTransport(answer))
    async with client, cached("https://api.example", HttpCache(), client=client) as toolset:
        assert await called(toolset, "fresh") == {"n": 1}
        assert await called(toolset, "fresh") == {"n": 1}
    assert len(sent) == 1


async def test_a_stale_response_is_asked_for_with_if_none_match_and_a_304_gives_the_kept_body(
    base_url: str, arrivals: Arrivals
) -> None:
    cache = HttpCache()
    async with cached(base_url, cache) as toolset:
        first = await called(toolset, "etag")
        second = await called(toolset, "etag")
    assert first == second == {"n": 1}  # the server sent no body the second time
    sent = arrivals.seen["GET /etag"]
    assert [h.get("if-none-match") for h in sent] == [None, '"v1"']
    assert (cache.revalidated, cache.misses) == (1, 1)


async def test_a_stale_response_with_last_modified_is_asked_for_with_if_modified_since(
    base_url: str, arrivals: Arrivals
) -> None:
    cache = HttpCache()
    async with cached(base_url, cache) as toolset:
        assert await called(toolset, "modified") == {"n": 1}
        assert await called(toolset, "modified") == {"n": 1}
    sent = arrivals.seen["GET /modified"]
    asked = [h.get("if-modified-since") for h in sent]
    assert asked == [None, "Mon, 07 Dec 2026 08:00:00 GMT"]
    assert cache.revalidated == 1


async def test_a_changed_response_replaces_the_one_kept(base_url: str, arrivals: Arrivals) -> None:
    cache = HttpCache()
    async with cached(base_url, cache) as toolset:
        for n in (1, 2, 3):
            assert await called(toolset, "changing") == {"n": n}
    sent = arrivals.seen["GET /changing"]
    assert [h.get("if-none-match") for h in sent] == [None, '"v1"', '"v2"']
    assert len(cache) == 1


async def test_a_no_store_response_is_never_kept(base_url: str, arrivals: Arrivals) -> None:
    cache = HttpCache()
    async with cached(base_url, cache) as toolset:
        assert await called(toolset, "nostore") == {"n": 1}
        assert await called(toolset, "nostore") == {"n": 2}
    assert arrivals.count("GET /nostore") == 2
    assert len(cache) == 0


async def test_users_served_with_their_own_credentials_never_share_a_cached_response(
    base_url: str, arrivals: Arrivals
) -> None:
    cache = HttpCache()
    alice = AuthCredential.bearer("alice-token-0001")
    bob = AuthCredential.bearer("bob-token-000002")
    async with cached(base_url, cache) as toolset:
        assert await called(toolset, "mine", user=alice) == {"n": 1, "user": "alice"}
        assert await called(toolset, "mine", user=bob) == {"n": 2, "user": "bob"}
        assert await called(toolset, "mine", user=alice) == {"n": 1, "user": "alice"}
        assert await called(toolset, "mine", user=bob) == {"n": 2, "user": "bob"}
    assert arrivals.count("GET /mine") == 2
    assert cache.hits == 2


async def test_a_server_giving_each_user_their_own_credentials_keeps_their_responses_apart(
    base_url: str, arrivals: Arrivals
) -> None:
    users = UserCredentials.from_mapping(
        {"alice": {"token": "alice-token-0001"}, "bob": {"token": "bob-token-000002"}}
    )
    cache = HttpCache()
    toolset = cached(base_url, cache)

    def serving(subject: str) -> McpServer:
        identity = Identity(subject=subject, issuer="https://id.example", client_id="app")
        invocation = Invocation(identity=identity, scopes=frozenset(), session_id=subject)
        return McpServer(toolset, credentials=users, invocation=invocation)

    seen = []
    async with toolset:
        for subject in ("alice", "bob", "alice", "bob"):
            async with connected(serving(subject), "2026-07-28") as client:
                seen.append((await client.call_tool("mine", {})).structured_content)
    assert seen == [
        {"n": 1, "user": "alice"},
        {"n": 2, "user": "bob"},
        {"n": 1, "user": "alice"},
        {"n": 2, "user": "bob"},
    ]
    assert arrivals.count("GET /mine") == 2


async def test_toolsets_sharing_a_cache_with_other_keys_or_headers_do_not_share_responses(
    base_url: str, arrivals: Arrivals
) -> None:
    cache = HttpCache()
    keyed = [
        (cached(base_url, cache, credentials={"token": "alice-token-0001"}), "mine"),
        (cached(base_url, cache, credentials={"token": "bob-token-000002"}), "mine"),
        (cached(base_url, cache, headers={"X-Api-Key": "one-key-0001"}), "fresh"),
        (cached(base_url, cache, headers={"X-Api-Key": "two-key-0002"}), "fresh"),
    ]
    for toolset, name in keyed:
        async with toolset:
            first = await called(toolset, name)
            assert await called(toolset, name) == first
    assert (arrivals.count("GET /mine"), arrivals.count("GET /fresh")) == (2, 2)
    assert cache.hits == 4


async def test_vary_keeps_one_response_per_value_of_the_header_it_names(
    base_url: str, arrivals: Arrivals
) -> None:
    async with cached(base_url, HttpCache()) as toolset:
        assert await called(toolset, "vary", {"X-Lang": "fr"}) == {"n": 1, "lang": "fr"}
        assert await called(toolset, "vary", {"X-Lang": "de"}) == {"n": 2, "lang": "de"}
        assert await called(toolset, "vary", {"X-Lang": "fr"}) == {"n": 1, "lang": "fr"}
        assert await called(toolset, "vary", {"X-Lang": "de"}) == {"n": 2, "lang": "de"}
    assert arrivals.count("GET /vary") == 2


async def test_the_byte_budget_drops_the_least_recently_used_response(
    base_url: str, arrivals: Arrivals
) -> None:
    # two bodies of 1 KB and their headers, not three
    cache = HttpCache(max_bytes=3000, max_entry_bytes=1500)
    async with cached(base_url, cache) as toolset:
        for name in ("a", "b", "a", "c"):  # a used again: b is the least recently used
            await called(toolset, "big", {"name": name})
        assert cache.size <= 3000
        assert len(cache) == 2
        await called(toolset, "big", {"name": "a"})
        await called(toolset, "big", {"name": "c"})
        await called(toolset, "big", {"name": "b"})
    assert [arrivals.count(f"GET /big/{name}") for name in "abc"] == [1, 2, 1]


async def test_a_response_beyond_max_entry_bytes_is_given_but_not_kept(
    base_url: str, arrivals: Arrivals
) -> None:
    cache = HttpCache(max_bytes=10_000, max_entry_bytes=500)
    async with cached(base_url, cache) as toolset:
        for _ in range(2):
            assert (await called(toolset, "big", {"name": "a"}))["pad"] == "x" * 1000
    assert arrivals.count("GET /big/a") == 2
    assert len(cache) == 0


async def test_a_response_cut_at_max_response_bytes_is_not_kept(
    base_url: str, arrivals: Arrivals
) -> None:
    cache = HttpCache()
    async with cached(base_url, cache, max_response_bytes=100) as toolset:
        for _ in range(2):
            assert (await called(toolset, "big", {"name": "a"}))["truncated"] is True
    assert arrivals.count("GET /big/a") == 2
    assert len(cache) == 0


async def test_a_post_is_never_cached_and_invalidates_the_cached_get_of_its_url(
    base_url: str, arrivals: Arrivals
) -> None:
    cache = HttpCache()
    async with cached(base_url, cache) as toolset:
        assert await called(toolset, "listItems") == {"n": 1}
        assert await called(toolset, "listItems") == {"n": 1}
        assert await called(toolset, "addItem") == {"created": 1}
        assert await called(toolset, "addItem") == {"created": 2}
        assert await called(toolset, "listItems") == {"n": 2}
    assert (arrivals.count("GET /items"), arrivals.count("POST /items")) == (2, 2)


async def test_a_hit_sends_no_request_and_says_so_on_the_calls_span(
    base_url: str, recorded: Recorded
) -> None:
    async with cached(base_url, HttpCache()) as toolset:
        for name in ("fresh", "fresh", "etag", "etag"):
            await called(toolset, name)
    spans = recorded.spans()
    sent = [
        (s.name, (s.attributes or {})["http.response.status_code"])
        for s in spans
        if s.name.startswith("GET ")
    ]
    assert sent == [("GET /fresh", 200), ("GET /etag", 200), ("GET /etag", 304)]
    calls = [
        (s.attributes or {}).get("toolsets.http.cache")
        for s in spans
        if s.name.startswith("execute_tool")
    ]
    assert calls == [None, "hit", None, "revalidated"]


def test_a_cache_size_must_be_a_whole_number_of_bytes_above_zero() -> None:
    for wrong in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="max_bytes"):
            HttpCache(max_bytes=wrong)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_entry_bytes"):
        HttpCache(max_entry_bytes=0)


def test_a_toolset_refuses_a_cache_that_is_not_an_http_cache() -> None:
    with pytest.raises(ToolDefinitionError) as raised:
        OpenApiToolset(spec(), cache={"max_bytes": 10})  # type: ignore[arg-type]
    assert raised.value.field == "cache"
