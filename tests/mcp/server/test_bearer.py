"""Each user's own bearer token for an upstream MCP server behind a served gateway
(`UserBearer`), end to end against the real OpenID provider (npm ``oidc-provider``): a
protected `McpServer` in front of a real MCP server over streamable HTTP on 127.0.0.1
that records the ``Authorization`` header of every request it receives; each user's
token obtained by RFC 8693 token exchange for the upstream's audience."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx2
import jwt
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client

from tests.helpers import serve_app
from tests.mcp.server.oidc import SECRETS, OpenIdProvider, public_jwk
from toolsets import AuthConfig, Identity, StaticToolset, tool
from toolsets.mcp import (
    McpServer,
    McpToolset,
    OAuthResourceServer,
    StreamableHttp,
    TokenExchange,
    UserBearer,
    UserCredentials,
    prompt,
    resource,
)

pytestmark = pytest.mark.anyio

NOBODY = "carol"
"""The user the gateway has no upstream credential for."""
REVOKED = "erin-"
"""Users (named so) whose upstream credential is found once, then no more (revoked
between the listing a call starts with and the call itself)."""


@tool
def whoami() -> str:
    """Say hello."""
    return "hello"


@resource("note://today")
def today() -> str:
    return "a note"


@prompt
def greet() -> str:
    """A greeting."""
    return "say hello"


@dataclass
class Recorder:
    """An ASGI app recording the ``Authorization`` header of each HTTP request before
    handing it to ``app`` (the upstream MCP server)."""

    app: Any
    seen: list[str | None] = field(default_factory=list)
    methods: list[str] = field(default_factory=list)

    rpc: list[str] = field(default_factory=list)
    """The JSON-RPC method of each POST."""

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        found = [value.decode() for name, value in scope["headers"] if name == b"authorization"]
        assert len(found) <= 1, "two Authorization headers in one request"
        self.seen.append(found[0] if found else None)
        self.methods.append(scope["method"])
        body = bytearray()

        async def recorded() -> Any:
            message = await receive()
            body.extend(message.get("body", b""))
            return message

        await self.app(scope, recorded, send)
        if body:
            self.rpc.append(json.loads(body).get("method", "(an answer)"))


@dataclass
class Gateway:
    url: str
    """The protected gateway's MCP endpoint."""
    upstream_url: str
    recorder: Recorder
    provider: OpenIdProvider

    def user_token(self, subject: str) -> str:
        return self.provider.sign(
            {"sub": subject, "aud": self.url, "scope": "tools:call", "client_id": "agent-app"}
        )

    def upstream_subjects(self) -> list[str]:
        """The subject of the bearer token each upstream request carried, verified with
        the provider's key for the upstream's audience (every request carried one)."""
        key = jwt.algorithms.RSAAlgorithm.from_jwk(json.dumps(public_jwk(self.provider.key)))
        subjects = []
        for header in self.recorder.seen:
            assert header is not None
            scheme, _, token = header.partition(" ")
            assert scheme == "Bearer"
            claims = jwt.decode(token, key, algorithms=["RS256"], audience=self.upstream_url)  # type: ignore[arg-type]
            assert claims["act"] == {"sub": "exchanger"}
            subjects.append(claims["sub"])
        return subjects


@contextmanager
def recorded_upstream() -> Iterator[tuple[str, Recorder]]:
    """A real MCP server (a tool, a resource, a prompt) over streamable HTTP on
    127.0.0.1: its URL, and what records the ``Authorization`` header of each request."""
    upstream = McpServer(
        StaticToolset([whoami]), name="upstream", resources=[today], prompts=[greet]
    )
    recorder = Recorder(None)

    def make_upstream() -> Any:
        recorder.app = upstream.http_app()
        return recorder

    with serve_app(make_upstream, factory=True) as upstream_port:
        yield f"http://127.0.0.1:{upstream_port}/mcp", recorder


@contextmanager
def served_gateway(
    provider: OpenIdProvider,
    mode: str,
    *,
    max_sessions: int = 64,
    headers: dict[str, str] | None = None,
) -> Iterator[Gateway]:
    """A recorded upstream MCP server, and a gateway in front of it (served with
    authorization by ``provider``) that reaches it in protocol era ``mode`` with each
    caller's own token, exchanged for the upstream's audience (none for `NOBODY`), and
    ``headers`` besides."""
    with recorded_upstream() as (upstream_url, recorder):
        exchange = TokenExchange(
            issuer=provider.issuer,
            audience={"upstream": upstream_url},
            client_id="exchanger",
            client_secret=SECRETS["exchanger"],
        )

        found: set[str] = set()

        async def resolve(identity: Identity, config: AuthConfig) -> Any:
            if identity.subject == NOBODY or identity.subject in found:
                return None
            if identity.subject.startswith(REVOKED):
                found.add(identity.subject)
            return await exchange(identity, config)

        users = UserCredentials(resolve)

        def make() -> Any:
            bearer = UserBearer(users, name="upstream")
            source = McpToolset(
                StreamableHttp(url=upstream_url, headers=headers or {}, header_provider=bearer),
                confirm="never",
                max_sessions=max_sessions,
                mode=mode,  # type: ignore[arg-type]
            )
            return McpServer(
                source,
                name="gateway",
                auth=OAuthResourceServer(issuer=provider.issuer),
                credentials=users,
            ).http_app()

        with serve_app(make, factory=True) as port:
            yield Gateway(f"http://127.0.0.1:{port}/mcp", upstream_url, recorder, provider)


@pytest.fixture(scope="module", params=["2026-07-28", "legacy"])
def gateway(openid_provider: OpenIdProvider, request: pytest.FixtureRequest) -> Iterator[Gateway]:
    """A gateway (in each protocol era towards the upstream) shared by the module's tests
    (each clears what the upstream saw)."""
    with served_gateway(openid_provider, request.param) as made:
        yield made


@asynccontextmanager
async def client(url: str, token: str) -> AsyncIterator[Client]:
    with anyio.fail_after(30):
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http:
            transport = streamable_http_client(url, http_client=http)
            async with Client(transport) as connected:  # type: ignore[arg-type]
                yield connected


async def test_each_users_requests_reach_the_upstream_with_their_own_exchanged_token(
    gateway: Gateway,
) -> None:
    """Calls, listings, resources and prompts: every request upstream carries it."""
    gateway.recorder.seen.clear()
    tokens = {who: gateway.user_token(who) for who in ("alice", "bob")}
    for who in ("alice", "bob", "alice"):
        async with client(gateway.url, tokens[who]) as connected:
            tools = [t.name for t in (await connected.list_tools()).tools]
            called = await connected.call_tool("whoami", {})
            read = await connected.read_resource("note://today")
            prompts = [p.name for p in (await connected.list_prompts()).prompts]
        assert tools == ["whoami"]
        assert not called.is_error
        assert read.contents
        assert prompts == ["greet"]
        subjects = gateway.upstream_subjects()
        assert subjects
        assert set(subjects) == {who}
        # Never the client's own token, nor any part of it.
        for header in gateway.recorder.seen:
            assert header is not None
            assert tokens[who] not in header
            assert tokens[who].rsplit(".", 1)[-1] not in header
        gateway.recorder.seen.clear()


async def test_a_user_without_a_credential_gets_an_error_result_naming_it_and_nothing_is_sent(
    gateway: Gateway,
) -> None:
    gateway.recorder.seen.clear()
    async with client(gateway.url, gateway.user_token(NOBODY)) as connected:
        called = await connected.call_tool("whoami", {})
        tools = (await connected.list_tools()).tools
        prompts = (await connected.list_prompts()).prompts
        with pytest.raises(MCPError) as read:
            await connected.read_resource("note://today")
    # The upstream offers them nothing (its listings are empty, not failed), and what
    # is asked of it anyway is refused, naming the credential.
    assert tools == []
    assert prompts == []
    assert read.value.error.data == {"credential": "upstream"}
    assert called.is_error
    assert called.structured_content is not None
    assert called.structured_content["credential"] == "upstream"
    assert "no credential" not in called.structured_content["error"]  # says what, plainly
    assert "upstream" in called.structured_content["error"]
    assert "upstream" in read.value.error.message
    assert gateway.recorder.seen == []


async def test_a_credential_gone_between_the_listing_and_the_call_is_an_error_result(
    gateway: Gateway,
) -> None:
    erin = f"{REVOKED}{uuid.uuid4().hex}"
    async with client(gateway.url, gateway.user_token(erin)) as connected:
        gateway.recorder.seen.clear()
        gateway.recorder.rpc.clear()
        called = await connected.call_tool("whoami", {})
    assert called.is_error
    assert called.structured_content is not None
    assert called.structured_content["credential"] == "upstream"
    # The listing the call began with went upstream as Erin; the call itself did not.
    assert set(gateway.upstream_subjects()) == {erin}
    assert "tools/list" in gateway.recorder.rpc
    assert "tools/call" not in gateway.recorder.rpc


async def test_the_sessions_per_user_are_bounded_and_the_one_dropped_is_closed_as_its_user(
    openid_provider: OpenIdProvider,
) -> None:
    with served_gateway(openid_provider, "legacy", max_sessions=2) as gateway:
        for who in ("alice", "bob", "dave"):
            async with client(gateway.url, gateway.user_token(who)) as connected:
                await connected.call_tool("whoami", {})
        said = list(zip(gateway.recorder.methods, gateway.upstream_subjects(), strict=True))
    # Dave's session would make three: Alice's, the least recently used, was ended (a
    # DELETE of its session, with her own token); Bob's and Dave's stay open.
    assert [each for each in said if each[0] == "DELETE"] == [("DELETE", "alice")]
    last_of_bob = max(i for i, (_, who) in enumerate(said) if who == "bob")
    assert said.index(("DELETE", "alice")) > last_of_bob  # when Dave came
    assert {who for _, who in said} == {"alice", "bob", "dave"}


async def test_the_servers_own_authorization_header_is_replaced_by_the_callers_never_sent_beside(
    openid_provider: OpenIdProvider,
) -> None:
    server_default = "Bearer the-servers-own-token-0123456789"
    headers = {"authorization": server_default}  # named in another case than the user's
    with served_gateway(openid_provider, "2026-07-28", headers=headers) as gateway:
        async with client(gateway.url, gateway.user_token("alice")) as connected:
            called = await connected.call_tool("whoami", {})
        nobody_at_all = gateway.user_token(NOBODY)
        async with client(gateway.url, nobody_at_all) as connected:
            refused = await connected.call_tool("whoami", {})
        assert not called.is_error
        assert refused.is_error
        assert set(gateway.upstream_subjects()) == {"alice"}  # one Authorization each
        assert server_default not in gateway.recorder.seen
