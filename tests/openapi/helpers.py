"""What the OpenAPI tests share: the real specs (npm peers) and our fixtures, the rows of
the spec's "Style Examples" table, and a real HTTP/1.1 server on 127.0.0.1 that records
each request's raw bytes and answers with what the test set: the judge of what
`RestApiTool` puts on the wire."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import anyio
import anyio.abc

from tests.helpers import PEERS, ROOT

GITHUB = PEERS / "@octokit" / "openapi" / "generated" / "api.github.com.json"
OAS_EXAMPLES = PEERS / "@readme" / "oas-examples"
FIXTURES = ROOT / "fixtures" / "openapi"


# --- the "Style Examples" table of OpenAPI 3.1.2, location by location -------------------
# Rows by (style, explode); a row's columns are the four VALUES in order.

EMPTY = ""
STRING = "blue"
ARRAY = ["blue", "black", "brown"]
OBJECT = {"R": 100, "G": 200, "B": 150}
VALUES = {"empty": EMPTY, "string": STRING, "array": ARRAY, "object": OBJECT}

REJECTED = object()
"""The spec's table gives a value here that `toolsets.openapi._serialize` refuses (see its
notes)."""

PATH_TABLE = {
    ("matrix", False): (
        ";color",
        ";color=blue",
        ";color=blue,black,brown",
        ";color=R,100,G,200,B,150",
    ),
    ("matrix", True): (
        ";color",
        ";color=blue",
        ";color=blue;color=black;color=brown",
        ";R=100;G=200;B=150",
    ),
    # The table's "." for an empty label value is a dot segment, and its empty simple
    # value an empty segment: both would address another resource.
    ("label", False): (REJECTED, ".blue", ".blue,black,brown", ".R,100,G,200,B,150"),
    ("label", True): (REJECTED, ".blue", ".blue.black.brown", ".R=100.G=200.B=150"),
    ("simple", False): (REJECTED, "blue", "blue,black,brown", "R,100,G,200,B,150"),
    ("simple", True): (REJECTED, "blue", "blue,black,brown", "R=100,G=200,B=150"),
}

HEADER_TABLE = {
    ("simple", False): ("", "blue", "blue,black,brown", "R,100,G,200,B,150"),
    ("simple", True): ("", "blue", "blue,black,brown", "R=100,G=200,B=150"),
}

QUERY_TABLE = {
    ("form", False): ("color=", "color=blue", "color=blue,black,brown", "color=R,100,G,200,B,150"),
    ("form", True): (
        "color=",
        "color=blue",
        "color=blue&color=black&color=brown",
        "R=100&G=200&B=150",
    ),
    ("spaceDelimited", False): (
        "color=",
        "color=blue",
        "color=blue%20black%20brown",
        "color=R%20100%20G%20200%20B%20150",
    ),
    ("pipeDelimited", False): (
        "color=",
        "color=blue",
        "color=blue%7Cblack%7Cbrown",
        "color=R%7C100%7CG%7C200%7CB%7C150",
    ),
    ("deepObject", True): (
        "color=",
        "color=blue",
        "color%5B0%5D=blue&color%5B1%5D=black&color%5B2%5D=brown",
        "color%5BR%5D=100&color%5BG%5D=200&color%5BB%5D=150",
    ),
    # The combinations the table leaves n/a: the module's documented choices.
    ("spaceDelimited", True): (
        "color=",
        "color=blue",
        "color=blue&color=black&color=brown",
        "R=100&G=200&B=150",
    ),
    ("pipeDelimited", True): (
        "color=",
        "color=blue",
        "color=blue&color=black&color=brown",
        "R=100&G=200&B=150",
    ),
    ("deepObject", False): (
        "color=",
        "color=blue",
        "color%5B0%5D=blue&color%5B1%5D=black&color%5B2%5D=brown",
        "color%5BR%5D=100&color%5BG%5D=200&color%5BB%5D=150",
    ),
}

COOKIE_TABLE = {
    ("form", False): ("color=", "color=blue", "color=blue,black,brown", "color=R,100,G,200,B,150"),
    ("form", True): (
        "color=",
        "color=blue",
        "color=blue; color=black; color=brown",
        "R=100; G=200; B=150",
    ),
}


@dataclass
class Recorded:
    """One request as it arrived."""

    head: bytes
    body: bytes

    @property
    def request_line(self) -> str:
        return self.head.split(b"\r\n", 1)[0].decode()

    @property
    def path(self) -> str:
        return self.request_line.split(" ")[1]

    @property
    def headers(self) -> dict[str, str]:
        lines = self.head.decode("latin-1").split("\r\n")[1:]
        pairs = (line.split(":", 1) for line in lines if ":" in line)
        return {name.strip().lower(): value.strip() for name, value in pairs}


@dataclass
class RecordingServer:
    """Answers every request with ``status`` and ``body`` (JSON unless bytes)."""

    port: int = 0
    requests: list[Recorded] = field(default_factory=list)
    status: int = 200
    body: object = field(default_factory=lambda: {"ok": True})
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    """More response headers (e.g. a redirect's Location)."""
    first: list[tuple[int, dict[str, str]]] = field(default_factory=list)
    """Status and headers for the first requests (one each), before ``status``."""
    routes: dict[str, tuple[int, dict[str, str], object]] = field(default_factory=dict)
    """By path: the status, headers and body to answer with instead."""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def _handle(self, stream: anyio.abc.SocketStream) -> None:
        async with stream:
            buffer = b""
            with anyio.fail_after(10):
                while b"\r\n\r\n" not in buffer:
                    buffer += await stream.receive()
                head, _, rest = buffer.partition(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value.strip())
                while len(rest) < length:
                    rest += await stream.receive()
            self.requests.append(Recorded(head=head, body=rest))
            status, headers = self.first.pop(0) if self.first else (self.status, self.headers)
            body = self.body
            if self.requests[-1].path in self.routes:
                status, headers, body = self.routes[self.requests[-1].path]
            payload = body if isinstance(body, bytes) else json.dumps(body).encode()
            extra = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
            await stream.send(
                f"HTTP/1.1 {status} X\r\nContent-Type: {self.content_type}\r\n{extra}"
                f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n".encode()
                + payload
            )


class _Server(Protocol):
    port: int

    async def _handle(self, stream: anyio.abc.SocketStream) -> None: ...


S = TypeVar("S", bound=_Server)


@asynccontextmanager
async def serving(server: S) -> AsyncIterator[S]:
    """``server`` answering connections on a free 127.0.0.1 port (set as its ``port``)
    until the block ends."""
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    server.port = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, server._handle)
        try:
            yield server
        finally:
            tg.cancel_scope.cancel()


@asynccontextmanager
async def recording_server() -> AsyncIterator[RecordingServer]:
    """A started `RecordingServer`, stopped on exit."""
    async with serving(RecordingServer()) as server:
        yield server


ONE_GET: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "t", "version": "1"},
    "paths": {
        "/things/{id}": {
            "get": {
                "operationId": "get_thing",
                "parameters": [
                    {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}
                ],
                "responses": {"200": {"description": "ok"}},
            }
        }
    },
}
"""A spec of one operation, ``get_thing`` (GET /things/{id})."""


def secured(name: str, scheme: dict[str, Any]) -> dict[str, Any]:
    """`ONE_GET` with every operation needing the one security scheme ``scheme``."""
    return {
        **ONE_GET,
        "security": [{name: []}],
        "components": {"securitySchemes": {name: scheme}},
    }


def client_credentials(token_url: str) -> dict[str, Any]:
    """An OAuth2 client-credentials scheme whose tokens come from ``token_url``."""
    return {"type": "oauth2", "flows": {"clientCredentials": {"tokenUrl": token_url, "scopes": {}}}}
