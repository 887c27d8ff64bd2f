"""What every HTTP request to the served app passes first: Host and Origin compared
exactly (never by prefix), in their odd forms; and a client leaving mid-body dropped
with one debug line instead of a traceback."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from starlette.types import Message

from tests.mcp.server_helpers import ACCEPT, INITIALIZE, http_client, served
from toolsets.mcp.server._app import LOCAL_HOSTS, LOCAL_ORIGINS
from toolsets.mcp.server._checks import Pattern, RequestChecks, parse_authority

# --- Host and Origin, exactly -----------------------------------------------------------

REFUSED_HOSTS = [
    "localhost:80@evil.example",  # userinfo-like: starts with an allowed "localhost:"
    "user@localhost:80",
    "localhost:80.evil.example",
    "localhost.evil.example",
    "localhost:",  # an empty port
    "localhost:0",
    "localhost:65536",
    "localhost:8o",
    "localhost:8000:1",
    "localhost..",
    "local host",
    "localhost/",
    "localhost%2e",
    "::1",  # IPv6 without brackets
    "[::1",
    "[::1]8000",
    "[fe80::1%eth0]:8000",
    "[::2]:8000",
    "127.0.0.1.evil.example",
    "",
]
ADMITTED_HOSTS = [
    "localhost",
    "localhost:8000",
    "LOCALHOST:8000",
    "localhost.:8000",  # the same name, fully qualified
    "127.0.0.1:1",
    "[::1]:8000",
    "[0:0:0:0:0:0:0:1]:8000",
    "[::1]",
]


@pytest.mark.parametrize("host", REFUSED_HOSTS)
def test_a_host_that_only_starts_like_an_allowed_one_is_refused(host: str) -> None:
    checks = RequestChecks(_never, allowed_hosts=LOCAL_HOSTS, allowed_origins=(), max_body_bytes=1)
    assert checks._refusal(_scope(host=host)) is not None


@pytest.mark.parametrize("host", ADMITTED_HOSTS)
def test_this_machines_names_are_admitted_in_any_case_port_or_spelling(host: str) -> None:
    checks = RequestChecks(_never, allowed_hosts=LOCAL_HOSTS, allowed_origins=(), max_body_bytes=1)
    assert checks._refusal(_scope(host=host)) is None


@pytest.mark.parametrize(
    ("origin", "admitted"),
    [
        ("http://localhost:1@evil.example", False),
        ("http://127.0.0.1:80.evil.example", False),
        ("http://user@localhost:3000", False),
        ("http://localhost:3000/", False),
        ("http://localhost:3000/path", False),
        ("http://localhost:3000?x", False),
        ("http://evil.example", False),
        ("ftp://localhost:21", False),
        ("localhost:3000", False),
        ("null", False),
        ("", False),
        ("http://localhost:3000", True),
        ("HTTP://LOCALHOST:3000", True),
        ("http://localhost", True),
        ("https://[::1]:8443", True),
        ("http://localhost.:3000", True),
    ],
)
def test_an_origin_is_compared_by_scheme_name_and_port(origin: str, admitted: bool) -> None:
    checks = RequestChecks(
        _never, allowed_hosts=LOCAL_HOSTS, allowed_origins=LOCAL_ORIGINS, max_body_bytes=1
    )
    refusal = checks._refusal(_scope(host="localhost:8000", origin=origin))
    assert (refusal is None) is admitted
    if not admitted:
        assert refusal is not None
        assert refusal[0] == 403


@pytest.mark.parametrize(
    ("pattern", "host", "scheme", "admitted"),
    [
        ("mcp.example.com", "mcp.example.com", "http", True),
        ("mcp.example.com", "mcp.example.com:80", "http", True),  # the default port
        ("mcp.example.com", "mcp.example.com:443", "https", True),
        ("mcp.example.com", "mcp.example.com:8000", "http", False),
        ("mcp.example.com:8000", "mcp.example.com:8000", "http", True),
        ("mcp.example.com:8000", "mcp.example.com:8001", "http", False),
        ("mcp.example.com:8000", "mcp.example.com", "http", False),
        ("mcp.example.com:*", "mcp.example.com", "http", True),
        ("mcp.example.com:*", "mcp.example.com:1", "http", True),
        ("mcp.example.com:*", "mcp.example.com.evil.example:1", "http", False),
        ("MCP.Example.COM.", "mcp.example.com", "http", True),
    ],
)
def test_a_named_host_admits_its_port_exactly(
    pattern: str, host: str, scheme: str, admitted: bool
) -> None:
    checks = RequestChecks(_never, allowed_hosts=[pattern], allowed_origins=(), max_body_bytes=1)
    assert (checks._refusal(_scope(host=host, scheme=scheme)) is None) is admitted


def test_several_host_or_origin_headers_are_a_bad_request() -> None:
    checks = RequestChecks(
        _never, allowed_hosts=LOCAL_HOSTS, allowed_origins=LOCAL_ORIGINS, max_body_bytes=1
    )
    two_hosts = {"type": "http", "headers": [(b"host", b"localhost"), (b"host", b"localhost")]}
    no_host = {"type": "http", "headers": []}
    two_origins = _scope(host="localhost", origin="http://localhost")
    two_origins["headers"].append((b"origin", b"http://localhost"))
    assert checks._refusal(two_hosts) == (400, "Exactly one Host header is required")
    assert checks._refusal(no_host) == (400, "Exactly one Host header is required")
    assert checks._refusal(two_origins) == (400, "At most one Origin header is allowed")


def test_a_null_origin_is_admitted_only_when_named() -> None:
    checks = RequestChecks(
        _never, allowed_hosts=LOCAL_HOSTS, allowed_origins=["null"], max_body_bytes=1
    )
    assert checks._refusal(_scope(host="localhost", origin="null")) is None
    assert checks._refusal(_scope(host="localhost", origin="http://localhost")) is not None


@pytest.mark.parametrize(
    ("option", "pattern"),
    [
        ("allowed_hosts", "user@mcp.example.com"),
        ("allowed_hosts", "mcp.example.com:99999"),
        ("allowed_hosts", "mcp.example.com:8000:*"),
        ("allowed_hosts", "http://mcp.example.com"),
        ("allowed_origins", "mcp.example.com"),
        ("allowed_origins", "https://mcp.example.com/"),
    ],
)
def test_a_malformed_pattern_is_refused_naming_its_option(option: str, pattern: str) -> None:
    with pytest.raises(ValueError, match=option) as raised:
        served.make_server().http_app(**{option: [pattern]})
    assert repr(pattern) in str(raised.value)


def test_authorities_are_normalised() -> None:
    assert parse_authority("[0:0::1]:80") == parse_authority("[::1]:80")
    assert parse_authority("Example.COM.") == parse_authority("example.com")
    assert Pattern.parse("[::1]:*", origin=False, option="o").host == "[::1]"


@pytest.mark.anyio
async def test_the_served_app_refuses_the_prefix_forms_the_sdk_admitted() -> None:
    async with http_client(served.make_server()) as http:

        async def status(**headers: str) -> int:
            response = await http.post("/mcp", json=INITIALIZE, headers={**ACCEPT, **headers})
            return response.status_code

        assert await status(Host="localhost:80@evil.example") == 400
        assert await status(Host="evil.example") == 421
        assert await status(Origin="http://localhost:1@evil.example") == 403
        assert await status(Origin="http://127.0.0.1:80.evil.example") == 403
        assert await status(Host="[::1]:8000", Origin="http://[::1]:3000") == 200
        assert await status(Host="127.0.0.1:8000", Origin="http://localhost:3000") == 200


# --- a client leaving mid-body ------------------------------------------------------------


@pytest.mark.anyio
async def test_a_client_leaving_mid_body_is_one_debug_line_and_never_reaches_the_endpoint(
    caplog: pytest.LogCaptureFixture,
) -> None:
    app = served.make_server().http_app()
    sent: list[Message] = []
    body = json.dumps(INITIALIZE).encode()
    arriving: list[Message] = [
        {"type": "http.request", "body": body[:10], "more_body": True},
        {"type": "http.disconnect"},
    ]

    async def receive() -> Message:
        return arriving.pop(0)

    async def send(message: Message) -> None:
        sent.append(message)

    scope = _scope(host="127.0.0.1:8000", method="POST")
    scope["headers"] += [(k.lower().encode(), v.encode()) for k, v in ACCEPT.items()]
    async with app.router.lifespan_context(app):
        with caplog.at_level(logging.DEBUG):
            await app(scope, receive, send)
    assert sent == []
    records = [r for r in caplog.records if r.levelno >= logging.DEBUG and "left" in r.message]
    assert [r.levelname for r in records] == ["DEBUG"]
    assert "10 bytes" in records[0].message
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING or r.exc_info]


async def _never(scope: Any, receive: Any, send: Any) -> None:
    raise AssertionError("not reached")


def _scope(
    *, host: str, origin: str | None = None, scheme: str = "http", method: str = "GET"
) -> dict[str, Any]:
    headers = [(b"host", host.encode())]
    if origin is not None:
        headers.append((b"origin", origin.encode()))
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": scheme,
        "path": "/mcp",
        "raw_path": b"/mcp",
        "root_path": "",
        "query_string": b"",
        "headers": headers,
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
    }
