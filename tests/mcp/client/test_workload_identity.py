"""WorkloadIdentity: a workload's JWT traded for an access token (RFC 7523 JWT bearer grant,
MCP's SEP-1933), in front of the real fixture MCP server.

The network edge plays the authorization server and the MCP server's token check; what
passes the check goes on to the real server. The conformance suite's own scenario
(``auth/wif-jwt-bearer``, tests/mcp/client/test_conformance.py) judges the same flow against its
authorization server.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import anyio
import httpx2
import pytest

from tests.mcp.helpers import HttpServer
from toolsets import AuthError, ConnectionError
from toolsets.mcp import McpToolset, StreamableHttp, WorkloadIdentity

pytestmark = pytest.mark.anyio

ISSUER = "http://localhost:8471"
TOKEN_ENDPOINT = f"{ISSUER}/oauth/token"
JWT = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ3b3JrbG9hZCJ9.c2lnbmVkLWJ5LXRoZS1wbGF0Zm9ybQ"
"""The workload's JWT, as its platform issued it (the authorization server here trusts
it as it is: checking it is that server's job)."""
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
RESOURCE = "http://127.0.0.1:8472/mcp"
"""A protected resource for the tests that need no MCP server behind it."""


class Edge:
    """The network edge: an authorization server that trades the workloads' JWTs for
    tokens, and a check in front of the MCP server that lets through requests bearing
    one of its tokens (to the real fixture server, or answered 200 here)."""

    def __init__(
        self,
        *,
        metadata_issuer: str = ISSUER,
        refusal: dict[str, str] | None = None,
        expires_in: int | None = 3600,
        token_type: str = "Bearer",
        trusted: tuple[str, ...] = (JWT,),
    ) -> None:
        self.metadata_issuer = metadata_issuer
        self.refusal = refusal
        self.expires_in = expires_in
        self.token_type = token_type
        self.trusted = trusted
        self.token_requests: list[dict[str, str]] = []
        self.granted: dict[str, str] = {}  # token → its scope
        self.required_scope: str | None = None
        self.challenges = 0
        self.to_issuer: list[str] = []
        self._real = httpx2.AsyncHTTPTransport()

    async def handle(self, request: httpx2.Request) -> httpx2.Response:
        url = str(request.url)
        if url.startswith(ISSUER):
            self.to_issuer.append(request.url.path)
            return self._authorization_server(request)
        bearer = request.headers.get("authorization", "").removeprefix("Bearer ")
        if bearer not in self.granted:
            self.challenges += 1
            return httpx2.Response(401, headers={"WWW-Authenticate": "Bearer"})
        wanted = self.required_scope
        if wanted is not None and wanted not in self.granted[bearer].split():
            header = f'Bearer error="insufficient_scope", scope="{wanted}"'
            return httpx2.Response(403, headers={"WWW-Authenticate": header})
        if url.startswith(RESOURCE):
            return httpx2.Response(200, json={"ok": True})
        del request.headers["authorization"]
        return await self._real.handle_async_request(request)

    def _authorization_server(self, request: httpx2.Request) -> httpx2.Response:
        if request.url.path == "/.well-known/oauth-authorization-server":
            return httpx2.Response(
                200,
                json={
                    "issuer": self.metadata_issuer,
                    "authorization_endpoint": f"{ISSUER}/authorize",
                    "token_endpoint": TOKEN_ENDPOINT,
                    "grant_types_supported": [JWT_BEARER],
                    "token_endpoint_auth_methods_supported": ["none"],
                },
            )
        if request.method == "POST" and str(request.url) == TOKEN_ENDPOINT:
            form = dict(parse_qsl(request.content.decode()))
            self.token_requests.append(form)
            if self.refusal is not None:
                return httpx2.Response(400, json=self.refusal)
            if form.get("grant_type") != JWT_BEARER or form.get("assertion") not in self.trusted:
                return httpx2.Response(400, json={"error": "invalid_grant"})
            token = f"token-{len(self.token_requests)}"
            self.granted[token] = form.get("scope", "")
            body: dict[str, Any] = {"access_token": token, "token_type": self.token_type}
            if self.expires_in is not None:
                body["expires_in"] = self.expires_in
            return httpx2.Response(200, json=body)
        return httpx2.Response(404)

    @contextlib.asynccontextmanager
    async def client(self, auth: WorkloadIdentity) -> AsyncIterator[httpx2.AsyncClient]:
        async with (
            self._real,
            httpx2.AsyncClient(transport=httpx2.MockTransport(self.handle), auth=auth) as client,
        ):
            yield client


def workload(**options: Any) -> WorkloadIdentity:
    return WorkloadIdentity(issuer=ISSUER, **({"assertion": JWT} | options))


async def test_a_workload_trades_its_jwt_for_a_token_and_calls_the_mcp_server(
    http_server: HttpServer,
) -> None:
    edge = Edge()
    auth = workload(client_id="reporting-job")
    async with (
        edge.client(auth) as client,
        McpToolset(StreamableHttp(url=http_server.url, http_client=client)) as toolset,
    ):
        result = await toolset.call_tool("echo", {"text": "as a workload"})
    assert result.structured_content == {"result": "as a workload"}
    assert edge.token_requests == [
        {
            "grant_type": JWT_BEARER,
            "assertion": JWT,
            "resource": http_server.url,
            "client_id": "reporting-job",
        }
    ]
    # Refused once, before the exchange; the token served every request after it.
    assert edge.challenges == 1


async def test_a_refused_assertion_fails_the_connection_once_naming_the_error_never_the_jwt(
    http_server: HttpServer,
) -> None:
    refusal = {"error": "invalid_grant", "error_description": f"untrusted issuer in {JWT}"}
    edge = Edge(refusal=refusal)
    async with edge.client(workload()) as client:
        toolset = McpToolset(StreamableHttp(url=http_server.url, http_client=client))
        with pytest.raises(ConnectionError) as info:
            async with toolset:
                raise AssertionError("not reached")
    message = str(info.value)
    assert "invalid_grant" in message
    assert TOKEN_ENDPOINT in message
    assert JWT not in message
    assert len(edge.token_requests) == 1, "never retried"


async def test_the_token_request_carries_the_scope_and_resource_given() -> None:
    edge = Edge()
    auth = workload(scope="tools:read", resource="https://mcp.example.com/")
    async with edge.client(auth) as client:
        response = await client.get(RESOURCE)
    assert response.status_code == 200
    (form,) = edge.token_requests
    assert (form["scope"], form["resource"]) == ("tools:read", "https://mcp.example.com/")
    assert "client_id" not in form


async def test_a_token_is_reused_until_it_is_about_to_expire_then_replaced_before_it_is_sent() -> (
    None
):
    edge = Edge(expires_in=3600)
    async with edge.client(workload()) as client:
        for _ in range(3):
            assert (await client.get(RESOURCE)).status_code == 200
    assert (len(edge.token_requests), edge.challenges) == (1, 1)

    edge = Edge(expires_in=5)  # within the margin: stale as soon as it arrives
    async with edge.client(workload()) as client:
        for _ in range(3):
            assert (await client.get(RESOURCE)).status_code == 200
    assert (len(edge.token_requests), edge.challenges) == (3, 1)


async def test_a_token_the_server_stops_accepting_is_replaced_and_the_request_sent_again() -> None:
    edge = Edge()
    async with edge.client(workload()) as client:
        assert (await client.get(RESOURCE)).status_code == 200
        edge.granted.clear()  # revoked
        assert (await client.get(RESOURCE)).status_code == 200
        edge.granted.clear()
        edge.refusal = {"error": "invalid_grant"}
        with pytest.raises(AuthError, match="invalid_grant"):
            await client.get(RESOURCE)
    assert (len(edge.token_requests), edge.challenges) == (3, 3)


async def test_an_assertion_file_is_read_again_for_each_exchange(tmp_path: Path) -> None:
    rotated = JWT.replace("c2ln", "bmV3")
    path = tmp_path / "token"
    path.write_text(JWT + "\n")  # as platforms write it
    edge = Edge(expires_in=5, trusted=(JWT, rotated))
    async with edge.client(workload(assertion=path)) as client:
        await client.get(RESOURCE)
        path.write_text(rotated)  # the platform rotated it
        await client.get(RESOURCE)
    assert [form["assertion"] for form in edge.token_requests] == [JWT, rotated]


async def test_an_assertion_source_is_asked_for_a_jwt_for_the_issuer() -> None:
    audiences: list[str] = []

    async def mint(audience: str) -> str:
        audiences.append(audience)
        return JWT

    edge = Edge()
    async with edge.client(workload(assertion=mint)) as client:
        assert (await client.get(RESOURCE)).status_code == 200
    assert audiences == [ISSUER]


async def test_an_insufficient_scope_brings_a_token_with_the_scope_added() -> None:
    edge = Edge()
    async with edge.client(workload(scope="tools:read")) as client:
        assert (await client.get(RESOURCE)).status_code == 200
        edge.required_scope = "tools:write"
        assert (await client.get(RESOURCE)).status_code == 200
    scopes = [form.get("scope") for form in edge.token_requests]
    assert scopes == ["tools:read", "tools:read tools:write"]


async def test_concurrent_first_requests_share_one_exchange() -> None:
    edge = Edge()
    statuses: list[int] = []
    async with edge.client(workload()) as client:

        async def get() -> None:
            statuses.append((await client.get(RESOURCE)).status_code)

        async with anyio.create_task_group() as tg:
            for _ in range(5):
                tg.start_soon(get)
    assert statuses == [200] * 5
    assert len(edge.token_requests) == 1


def test_one_workload_identity_serves_one_event_loop_after_another() -> None:
    # A script's anyio.run calls, or a toolset's portal thread and the caller's loop.
    edge = Edge(expires_in=5)  # each request takes the lock, to exchange
    auth = workload()
    statuses: list[int] = []

    async def get() -> None:
        async with edge.client(auth) as client:
            statuses.append((await client.get(RESOURCE)).status_code)

    for backend in ("trio", "asyncio", "trio"):
        anyio.run(get, backend=backend)
    assert statuses == [200] * 3


async def test_a_token_got_for_one_mcp_server_is_never_presented_to_another() -> None:
    # One WorkloadIdentity for two servers of the same authorization server: each token
    # names the server it was asked for (``resource``), and goes to that server only.
    other = "https://other.example/mcp"
    edge = Edge()
    presented: dict[str, set[str]] = {RESOURCE: set(), other: set()}

    async def handle(request: httpx2.Request) -> httpx2.Response:
        bearer = request.headers.get("authorization")
        where = str(request.url)
        if where in presented and bearer is not None:
            presented[where].add(bearer.removeprefix("Bearer "))
        if where == other:
            request.url = httpx2.URL(RESOURCE)  # the edge checks its tokens alike
        return await edge.handle(request)

    transport = httpx2.MockTransport(handle)
    async with httpx2.AsyncClient(transport=transport, auth=workload()) as client:
        for url in (RESOURCE, other, RESOURCE, other):
            assert (await client.get(url)).status_code == 200
    assert [form["resource"] for form in edge.token_requests] == [RESOURCE, other]
    assert presented == {RESOURCE: {"token-1"}, other: {"token-2"}}


async def test_metadata_naming_another_issuer_is_refused_before_the_jwt_is_sent() -> None:
    edge = Edge(metadata_issuer="http://localhost:8471/evil")
    async with edge.client(workload()) as client:
        with pytest.raises(AuthError) as info:
            await client.get(RESOURCE)
    assert info.value.scheme_name == "workload identity"
    assert "issuer mismatch" in str(info.value)
    assert edge.token_requests == []


async def test_an_issuer_over_plain_http_to_another_machine_is_never_sent_anything() -> None:
    edge = Edge()
    auth = WorkloadIdentity(issuer="http://auth.example.com", assertion=JWT)
    async with edge.client(auth) as client:
        with pytest.raises(AuthError) as info:
            await client.get(RESOURCE)
    assert "not https" in str(info.value)
    assert edge.to_issuer == []


@pytest.mark.parametrize("token_type", ["DPoP", "MAC"])
async def test_a_token_that_is_not_a_bearer_token_is_refused_without_quoting_it(
    token_type: str,
) -> None:
    edge = Edge(token_type=token_type)
    async with edge.client(workload()) as client:
        with pytest.raises(AuthError) as info:
            await client.get(RESOURCE)
    assert "no usable bearer token" in str(info.value)
    assert "token-1" not in str(info.value)


async def test_an_unreadable_or_empty_assertion_file_is_an_auth_error(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.write_text("\n")
    for path, why in ((tmp_path / "missing", "cannot read"), (empty, "is empty")):
        async with Edge().client(workload(assertion=path)) as client:
            with pytest.raises(AuthError, match=why):
                await client.get(RESOURCE)


async def test_neither_the_jwt_nor_the_token_shows_in_a_repr() -> None:
    auth = workload(client_id="job")
    async with Edge().client(auth) as client:
        await client.get(RESOURCE)
    shown = repr(auth) + repr(vars(auth))
    assert JWT not in shown
    assert "token-1" not in shown


def test_arguments_that_cannot_work_are_refused() -> None:
    auth = workload(client_id="job")
    with pytest.raises(ValueError, match="issuer"):
        WorkloadIdentity(issuer="auth.example.com", assertion=JWT)
    with pytest.raises(ValueError, match="empty"):
        WorkloadIdentity(issuer=ISSUER, assertion="")
    with pytest.raises(TypeError, match="AsyncClient"):
        httpx2.Client(auth=auth).get(RESOURCE)
