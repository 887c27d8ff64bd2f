"""A served gateway over two upstream MCP servers, each reached with each caller's own
token (`UserBearer`, exchanged by the real OpenID provider for that upstream's
audience), where a caller has a credential for one of them only: they are offered that
one's tools, resources and prompts, and nothing of the other's; a call of the other's
tool by name is an error result naming the credential, and that upstream sees nothing."""

from __future__ import annotations

import json
import logging
import socket
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any

import jwt
import pytest
from mcp import MCPError
from mcp.types import INTERNAL_ERROR

from tests.helpers import serve_app
from tests.mcp.server.oidc import SECRETS, OpenIdProvider, public_jwk
from tests.mcp.server.test_bearer import Recorder, client
from toolsets import AuthConfig, Identity, StaticToolset, combined, tool
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

ONLY_A = "bob-"
"""Users (named so) the gateway has a credential for upstream ``a`` only."""


@dataclass
class Upstream:
    url: str
    recorder: Recorder


@dataclass
class TwoGateway:
    url: str
    upstreams: dict[str, Upstream]
    provider: OpenIdProvider

    def user_token(self, subject: str) -> str:
        return self.provider.sign(
            {"sub": subject, "aud": self.url, "scope": "tools:call", "client_id": "agent-app"}
        )

    def audiences(self, name: str) -> list[tuple[str, str]]:
        """The subject and audience of the bearer token of each request upstream
        ``name`` received, verified with the provider's key."""
        key = jwt.algorithms.RSAAlgorithm.from_jwk(json.dumps(public_jwk(self.provider.key)))
        seen = []
        for header in self.upstreams[name].recorder.seen:
            assert header is not None
            scheme, _, token = header.partition(" ")
            assert scheme == "Bearer"
            claims = jwt.decode(
                token,
                key,  # type: ignore[arg-type]
                algorithms=["RS256"],
                options={"verify_aud": False},
            )
            seen.append((claims["sub"], claims["aud"]))
        return seen

    def clear(self) -> None:
        for upstream in self.upstreams.values():
            upstream.recorder.seen.clear()
            upstream.recorder.rpc.clear()


@contextmanager
def recorded(name: str) -> Iterator[Upstream]:
    """A real MCP server whose tool, resource and prompt are named for ``name``."""

    @tool(name=f"{name}_whoami")
    def whoami() -> str:
        """Say hello."""
        return f"hello from {name}"

    @resource(f"note://{name}")
    def note() -> str:
        return f"a note of {name}"

    @prompt(name=f"{name}_greet")
    def greet() -> str:
        """A greeting."""
        return "say hello"

    upstream = McpServer(StaticToolset([whoami]), name=name, resources=[note], prompts=[greet])
    recorder = Recorder(None)

    def make() -> Any:
        recorder.app = upstream.http_app()
        return recorder

    with serve_app(make, factory=True) as port:
        yield Upstream(f"http://127.0.0.1:{port}/mcp", recorder)


@pytest.fixture(scope="module")
def two(openid_provider: OpenIdProvider) -> Iterator[TwoGateway]:
    with ExitStack() as stack:
        upstreams = {name: stack.enter_context(recorded(name)) for name in ("a", "b")}
        exchange = TokenExchange(
            issuer=openid_provider.issuer,
            audience={name: up.url for name, up in upstreams.items()},
            client_id="exchanger",
            client_secret=SECRETS["exchanger"],
        )

        async def resolve(identity: Identity, config: AuthConfig) -> Any:
            if identity.subject.startswith(ONLY_A) and config.scheme_name != "a":
                return None
            return await exchange(identity, config)

        users = UserCredentials(resolve)

        def make() -> Any:
            sources = [
                McpToolset(
                    StreamableHttp(url=up.url, header_provider=UserBearer(users, name=name)),
                    confirm="never",
                )
                for name, up in upstreams.items()
            ]
            return McpServer(
                combined(*sources),
                name="gateway",
                auth=OAuthResourceServer(issuer=openid_provider.issuer),
                credentials=users,
            ).http_app()

        port = stack.enter_context(serve_app(make, factory=True))
        yield TwoGateway(f"http://127.0.0.1:{port}/mcp", upstreams, openid_provider)


async def test_a_user_with_one_upstreams_credential_is_offered_that_ones_tools_alone(
    two: TwoGateway, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="toolsets.mcp")
    two.clear()
    bob = f"{ONLY_A}{uuid.uuid4().hex}"  # not yet logged about
    token = two.user_token(bob)
    for _ in range(2):
        async with client(two.url, token) as connected:
            tools = [t.name for t in (await connected.list_tools()).tools]
            resources = [str(r.uri) for r in (await connected.list_resources()).resources]
            prompts = [p.name for p in (await connected.list_prompts()).prompts]
            called = await connected.call_tool("a_whoami", {})
    assert tools == ["a_whoami"]
    assert resources == ["note://a"]
    assert prompts == ["a_greet"]
    assert not called.is_error
    assert set(two.audiences("a")) == {(bob, two.upstreams["a"].url)}
    assert two.upstreams["b"].recorder.seen == []
    # Logged once (however many listings), naming the credential and never a secret.
    told = [r for r in caplog.records if "offers the caller" in r.getMessage()]
    assert len(told) == 1
    assert "'b'" in told[0].getMessage()
    assert bob in told[0].getMessage()
    assert told[0].levelno == logging.INFO
    assert token not in caplog.text


async def test_calling_the_other_upstreams_tool_anyway_is_an_error_naming_it_and_nothing_is_sent(
    two: TwoGateway,
) -> None:
    two.clear()
    async with client(two.url, two.user_token(ONLY_A)) as connected:
        called = await connected.call_tool("b_whoami", {})
    assert called.is_error
    assert called.structured_content is not None
    assert called.structured_content["credential"] == "b"
    assert "'b'" in called.structured_content["error"]
    assert two.upstreams["b"].recorder.seen == []
    assert "tools/call" not in two.upstreams["a"].recorder.rpc


async def test_a_user_with_both_credentials_is_offered_both_each_with_its_own_audience(
    two: TwoGateway,
) -> None:
    two.clear()
    async with client(two.url, two.user_token("alice")) as connected:
        tools = [t.name for t in (await connected.list_tools()).tools]
        resources = sorted(str(r.uri) for r in (await connected.list_resources()).resources)
        called = await connected.call_tool("b_whoami", {})
    assert tools == ["a_whoami", "b_whoami"]
    assert resources == ["note://a", "note://b"]
    assert not called.is_error
    for name in ("a", "b"):
        assert set(two.audiences(name)) == {("alice", two.upstreams[name].url)}


async def test_each_callers_listing_is_their_own_and_never_shown_to_another(
    two: TwoGateway,
) -> None:
    for who, offered in [("alice", ["a_whoami", "b_whoami"]), (ONLY_A, ["a_whoami"])] * 2:
        async with client(two.url, two.user_token(who)) as connected:
            tools = [t.name for t in (await connected.list_tools()).tools]
        assert tools == offered


async def test_reading_the_other_upstreams_resource_or_prompt_is_refused_naming_the_credential(
    two: TwoGateway,
) -> None:
    two.clear()
    async with client(two.url, two.user_token(ONLY_A)) as connected:
        with pytest.raises(MCPError) as read:
            await connected.read_resource("note://b")
        with pytest.raises(MCPError) as got:
            await connected.get_prompt("b_greet")
    for refused in (read.value, got.value):
        assert refused.error.data == {"credential": "b"}
        assert "'b'" in refused.error.message
    assert two.upstreams["b"].recorder.seen == []


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_an_upstream_that_is_down_fails_the_listing_as_ever_unless_it_offers_nothing(
    openid_provider: OpenIdProvider,
) -> None:
    """Down is not withheld: a caller who has a credential for it gets the listing's
    protocol error (as a gateway over one server down did before); one who has none is
    offered the others' tools, since nothing would be sent to it."""
    down = f"http://127.0.0.1:{closed_port()}/mcp"
    with recorded("a") as up:
        users = UserCredentials.from_mapping(
            {"alice": {"a": "alice-a", "b": "alice-b"}, "bob-only-a": {"a": "bob-a"}}
        )

        def make() -> Any:
            sources = [
                McpToolset(
                    StreamableHttp(url=url, header_provider=UserBearer(users, name=name)),
                    confirm="never",
                    connect_timeout=5,
                )
                for name, url in (("a", up.url), ("b", down))
            ]
            return McpServer(
                combined(*sources),
                auth=OAuthResourceServer(issuer=openid_provider.issuer),
                credentials=users,
            ).http_app()

        with serve_app(make, factory=True) as port:
            url = f"http://127.0.0.1:{port}/mcp"
            gateway = TwoGateway(url, {"a": up}, openid_provider)
            async with client(url, gateway.user_token("alice")) as connected:
                with pytest.raises(MCPError) as failed:
                    await connected.list_tools()
            async with client(url, gateway.user_token("bob-only-a")) as connected:
                tools = [t.name for t in (await connected.list_tools()).tools]
    assert failed.value.error.code == INTERNAL_ERROR
    assert "listing the tools failed" in failed.value.error.message
    assert tools == ["a_whoami"]
