"""A served gateway over two upstream MCP servers, each reached with each caller's own
token exchanged by the real OpenID provider (`UserBearer`), where the provider refuses
every exchange for one of them (its audience is none it serves): however many times a
caller lists tools, resources and prompts or calls a tool, that refusal costs one
request to the provider's token endpoint and one WARNING, and the caller is offered the
other upstream's tools."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest

from tests.helpers import serve_app
from tests.mcp.server.oidc import SECRETS, OpenIdProvider
from tests.mcp.server.test_bearer import client
from tests.mcp.server.test_bearer_many import TwoGateway, recorded
from toolsets import combined
from toolsets.mcp import (
    McpServer,
    McpToolset,
    OAuthResourceServer,
    StreamableHttp,
    TokenExchange,
    UserBearer,
    UserCredentials,
)

pytestmark = pytest.mark.anyio

LISTINGS = 5


@pytest.fixture(scope="module")
def gateway(openid_provider: OpenIdProvider) -> Iterator[TwoGateway]:
    with ExitStack() as stack:
        upstreams = {name: stack.enter_context(recorded(name)) for name in ("a", "b")}
        # The provider gives tokens for resources on this machine only: b's never.
        audiences = {"a": upstreams["a"].url, "b": "https://elsewhere.example/mcp"}
        exchange = TokenExchange(
            issuer=openid_provider.issuer,
            audience=audiences,
            client_id="exchanger",
            client_secret=SECRETS["exchanger"],
        )
        users = UserCredentials(exchange)

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


async def test_a_refused_upstream_costs_one_exchange_request_however_many_listings(
    gateway: TwoGateway, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="toolsets.mcp")
    provider = gateway.provider
    token = gateway.user_token(f"dave-{uuid.uuid4().hex}")  # nothing kept for them yet
    before = (await provider.state())["token_requests"]
    for _ in range(LISTINGS):
        async with client(gateway.url, token) as connected:
            tools = [t.name for t in (await connected.list_tools()).tools]
            await connected.list_resources()
            await connected.list_prompts()
            called = await connected.call_tool("b_whoami", {})
    assert tools == ["a_whoami"]
    assert called.is_error
    # One exchange for a (kept), one for b (refused, remembered).
    assert (await provider.state())["token_requests"] == before + 2
    refused = [r for r in caplog.records if "refused (the answer for" in r.getMessage()]
    assert len(refused) == 1
    assert refused[0].levelno == logging.WARNING
    assert token not in caplog.text
    assert gateway.upstreams["b"].recorder.seen == []
