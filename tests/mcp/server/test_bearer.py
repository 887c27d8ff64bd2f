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

from tests.helpers import buffered, refuse, serve_app
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


INVALID = (401, 'Bearer error="invalid_token"')
LACKING = (403, 'Bearer error="insufficient_scope", scope="notes:write"')
"""How the upstream refuses a token (status, ``WWW-Authenticate``)."""


@dataclass
class Recorder:
    """An ASGI app recording the ``Authorization`` header of each HTTP request before
    handing it to ``app`` (the upstream MCP server), or refusing it: a token in
    ``revoked`` is answered as it says, as is the next new token of a subject in
    ``revoke_next`` (which goes into ``revoked``)."""

    app: Any
    seen: list[str | None] = field(default_factory=list)
    methods: list[str] = field(default_factory=list)

    rpc: list[str] = field(default_factory=list)
    """The JSON-RPC method of each POST let through."""
    revoked: dict[str, tuple[int, str]] = field(default_factory=dict)
    revoke_next: dict[str, tuple[int, str]] = field(default_factory=dict)
    refused: list[tuple[str, str]] = field(default_factory=list)
    """The JSON-RPC method (or HTTP method) and subject of each request refused."""
    passed: list[tuple[str, str]] = field(default_factory=list)
    """The same, of each request let through."""
    tokens: dict[str, list[str]] = field(default_factory=dict)
    """Each subject's tokens, in the order first seen."""

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        found = [value.decode() for name, value in scope["headers"] if name == b"authorization"]
        assert len(found) <= 1, "two Authorization headers in one request"
        self.seen.append(found[0] if found else None)
        self.methods.append(scope["method"])
        token = found[0].removeprefix("Bearer ") if found else ""
        subject = self._subject(token)
        refusal = self.revoked.get(token)
        if refusal is not None:
            body, _ = await buffered(receive)
            self.refused.append((_method(body, scope), subject))
            await refuse(send, *refusal)
            return
        # Handed on as it comes (what the app reads is recorded on the way).
        body = bytearray()

        async def recorded() -> Any:
            message = await receive()
            body.extend(message.get("body", b""))
            if message["type"] == "http.request" and not message.get("more_body"):
                self.passed.append((_method(bytes(body), scope), subject))
            return message

        await self.app(scope, recorded, send)
        if body:
            self.rpc.append(_method(bytes(body), scope))

    def _subject(self, token: str) -> str:
        """The token's subject (unchecked: the upstream's check is not under test; an
        opaque token stands for itself); a new token of a subject in ``revoke_next`` is revoked."""
        if not token:
            return ""
        try:
            subject = str(jwt.decode(token, options={"verify_signature": False})["sub"])
        except jwt.DecodeError:  # an opaque token (a mapping's): its own subject
            subject = token
        mine = self.tokens.setdefault(subject, [])
        if token not in mine:
            mine.append(token)
            if subject in self.revoke_next:
                self.revoked[token] = self.revoke_next.pop(subject)
        return subject


def _method(body: bytes, scope: Any) -> str:
    """A request's JSON-RPC method (its HTTP method, without a body)."""
    return str(json.loads(body).get("method", "(an answer)")) if body else scope["method"]


class Resolver:
    """Each user's upstream token by token exchange (dropped from its cache when the
    upstream refuses it), none for `NOBODY`, and one only once for `REVOKED` users."""

    def __init__(self, exchange: TokenExchange) -> None:
        self.exchange = exchange
        self.found: set[str] = set()

    async def __call__(self, identity: Identity, config: AuthConfig) -> Any:
        if identity.subject == NOBODY or identity.subject in self.found:
            return None
        if identity.subject.startswith(REVOKED):
            self.found.add(identity.subject)
        return await self.exchange(identity, config)

    def forget(self, identity: Identity, config: AuthConfig) -> None:
        self.exchange.forget(identity, config)


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

        users = UserCredentials(Resolver(exchange))

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


# --- a token the upstream refuses ------------------------------------------------------


def _new_user(name: str) -> str:
    return f"{name}-{uuid.uuid4().hex[:12]}"


async def test_a_token_the_upstream_refuses_is_an_error_result_and_the_next_call_exchanges_anew(
    gateway: Gateway,
) -> None:
    frank = _new_user("frank")
    recorder = gateway.recorder
    async with client(gateway.url, gateway.user_token(frank)) as connected:
        first = await connected.call_tool("whoami", {})
        (token,) = recorder.tokens[frank]
        recorder.revoked[token] = INVALID  # revoked early, at the upstream
        before = len(recorder.passed)
        refused = await connected.call_tool("whoami", {})
        refused_at = len(recorder.passed)
        again = await connected.call_tool("whoami", {})
    assert not first.is_error
    assert refused.is_error
    assert refused.structured_content is not None
    assert refused.structured_content["credential"] == "upstream"
    error = refused.structured_content["error"]
    assert "refused the credential 'upstream'" in error
    assert "HTTP 401 invalid_token" in error
    assert token not in error
    # Nothing of the refused call ran upstream; the next went with a new exchanged token.
    assert ("tools/call", frank) in recorder.refused
    assert recorder.passed[before:refused_at] == []
    assert ("tools/call", frank) in recorder.passed[refused_at:]
    assert len(recorder.tokens[frank]) == 2
    assert not again.is_error
    assert frank in gateway.upstream_subjects()


async def test_a_token_refused_again_is_an_error_result_again_with_one_exchange_per_call(
    gateway: Gateway,
) -> None:
    grace = _new_user("grace")
    recorder = gateway.recorder
    recorder.revoke_next[grace] = INVALID
    async with client(gateway.url, gateway.user_token(grace)) as connected:
        refused = [await connected.call_tool("whoami", {})]
        recorder.revoke_next[grace] = INVALID  # the fresh one is refused too
        refused.append(await connected.call_tool("whoami", {}))
        after = await connected.call_tool("whoami", {})
    # Each refused call met its new session refused (a new user's first token, then a
    # fresh one): an error result each time, never a loop of exchanges.
    for each in refused:
        assert each.is_error
        assert each.structured_content is not None
        assert each.structured_content["credential"] == "upstream"
    assert len(recorder.tokens[grace]) == 3
    assert [what for what, who in recorder.passed if who == grace].count("tools/call") == 1
    assert not after.is_error


async def test_a_listing_whose_token_the_upstream_refuses_is_a_clear_error_then_recovers(
    gateway: Gateway,
) -> None:
    heidi = _new_user("heidi")
    gateway.recorder.revoke_next[heidi] = INVALID
    async with client(gateway.url, gateway.user_token(heidi)) as connected:
        with pytest.raises(MCPError) as listing:
            await connected.list_tools()
        tools = [t.name for t in (await connected.list_tools()).tools]
    message = listing.value.error.message
    assert "refused the credential 'upstream'" in message
    assert "HTTP 401" in message
    assert "cannot connect" not in message
    assert tools == ["whoami"]
    assert len(gateway.recorder.tokens[heidi]) == 2


async def test_another_users_session_is_untouched_when_one_users_token_is_refused(
    gateway: Gateway,
) -> None:
    ivan, judy = _new_user("ivan"), _new_user("judy")
    recorder = gateway.recorder
    async with (
        client(gateway.url, gateway.user_token(ivan)) as as_ivan,
        client(gateway.url, gateway.user_token(judy)) as as_judy,
    ):
        await as_ivan.call_tool("whoami", {})
        await as_judy.call_tool("whoami", {})
        recorder.revoked[recorder.tokens[judy][0]] = INVALID
        before = len(recorder.passed)
        refused = await as_judy.call_tool("whoami", {})
        called = await as_ivan.call_tool("whoami", {})
        judy_again = await as_judy.call_tool("whoami", {})
    assert refused.is_error
    assert not called.is_error
    assert not judy_again.is_error
    # Ivan's call went over his open session, with his one token.
    assert [each for each in recorder.passed[before:] if each[1] == ivan] == [("tools/call", ivan)]
    assert len(recorder.tokens[ivan]) == 1


async def test_a_token_lacking_a_scope_the_upstream_asks_for_is_an_error_result_naming_it(
    gateway: Gateway,
) -> None:
    mallory = _new_user("mallory")
    recorder = gateway.recorder
    async with client(gateway.url, gateway.user_token(mallory)) as connected:
        await connected.call_tool("whoami", {})
        recorder.revoked[recorder.tokens[mallory][0]] = LACKING
        refused = await connected.call_tool("whoami", {})
    assert refused.is_error
    assert refused.structured_content is not None
    assert refused.structured_content["credential"] == "upstream"
    error = refused.structured_content["error"]
    assert "HTTP 403 insufficient_scope, which asks for the scope 'notes:write'" in error
    assert ("tools/call", mallory) in recorder.refused
