"""The served side as a shared service, end to end, against the real OpenID provider
(npm ``oidc-provider``, `tests.mcp.server.oidc`): a protected `McpServer` (an OAuth 2.1
resource server) serving an OpenAPI spec under an access policy, each user's upstream
credential obtained by RFC 8693 token exchange at the same provider, and a real HTTP
server on 127.0.0.1 as the upstream API, recording what it receives.

The held-out check of issue 27: a client whose token lacks a scope neither sees nor can
call the tool it guards; a user's call reaches the upstream REST server with that user's
own credential and never the client's token (checked on the wire)."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import httpx2
import jwt
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.helpers import serve_app
from tests.mcp.server.oidc import SECRETS, OpenIdProvider, public_jwk
from tests.openapi.helpers import RecordingServer, recording_server
from toolsets import AccessPolicy, AccessRule, Invocation, restricted, tool
from toolsets.mcp import (
    McpServer,
    OAuthResourceServer,
    TokenExchange,
    UserCredentials,
)
from toolsets.openapi import OpenApiToolset

pytestmark = pytest.mark.anyio

SPEC: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "things", "version": "1"},
    "security": [{"things_auth": []}],
    "components": {
        "securitySchemes": {
            "things_auth": {
                "type": "oauth2",
                "flows": {
                    "authorizationCode": {
                        "authorizationUrl": "https://id.example/authorize",
                        "tokenUrl": "https://id.example/token",
                        "scopes": {},
                    }
                },
            }
        }
    },
    "paths": {
        "/things/{id}": {
            "parameters": [
                {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}
            ],
            "get": {"operationId": "get_thing", "tags": ["things"], "responses": {"200": {}}},
            "delete": {
                "operationId": "delete_thing",
                "tags": ["things"],
                "responses": {"200": {}},
            },
        }
    },
}
"""An API of two operations, each needing an OAuth token of its own audience."""
POLICY = AccessPolicy([AccessRule(methods=["DELETE"], scopes=["admin"])])
"""Deleting needs the ``admin`` scope."""


@dataclass
class Shared:
    url: str
    """The protected MCP endpoint (the resource tokens are for)."""
    api: RecordingServer
    """The upstream REST API."""
    provider: OpenIdProvider

    def user_token(self, subject: str, scope: str) -> str:
        """A user's access token for this server, signed by the provider's own key (as
        an authorization code flow would have it issued)."""
        return self.provider.sign(
            {"sub": subject, "aud": self.url, "scope": scope, "client_id": "agent-app"}
        )

    def upstream_tokens(self) -> list[dict[str, Any]]:
        """The claims of the bearer token each upstream request carried, verified with the
        provider's key for the upstream API's audience."""
        key = jwt.algorithms.RSAAlgorithm.from_jwk(json.dumps(public_jwk(self.provider.key)))
        found = []
        for request in self.api.requests:
            scheme, _, token = request.headers["authorization"].partition(" ")
            assert scheme == "Bearer"
            found.append(
                jwt.decode(token, key, algorithms=["RS256"], audience=self.api.url)  # type: ignore[arg-type]
            )
        return found

    def assert_no_client_token_upstream(self, *tokens: str) -> None:
        for request in self.api.requests:
            raw = request.head + request.body
            for token in tokens:
                assert token.encode() not in raw
                assert token.rsplit(".", 1)[-1].encode() not in raw  # not even its signature


@asynccontextmanager
async def shared(provider: OpenIdProvider, **server: Any) -> AsyncIterator[Shared]:
    """The protected server, its upstream API and the provider, for one test."""
    async with recording_server() as api:
        exchange = TokenExchange(
            issuer=provider.issuer,
            audience=api.url,
            client_id="exchanger",
            client_secret=SECRETS["exchanger"],
        )

        def make() -> Any:
            made = McpServer(
                restricted(OpenApiToolset(SPEC, base_url=api.url, confirm="never"), POLICY),
                name="things",
                auth=OAuthResourceServer(
                    issuer=provider.issuer,
                    required_scopes=["tools:call"],
                    claims=["groups", "roles"],
                ),
                credentials=UserCredentials(exchange),
                **server,
            )
            return made.http_app()

        with serve_app(make, factory=True) as port:
            yield Shared(f"http://127.0.0.1:{port}/mcp", api, provider)


async def calls(url: str, token: str, *called: tuple[str, dict[str, Any]]) -> Any:
    """What ``token``'s client is offered, and what each of ``called`` answers it (the
    structured content: an error result's whole object), through the SDK's client."""
    with anyio.fail_after(30):
        async with httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {token}"}, timeout=30
        ) as http:
            transport = streamable_http_client(url, http_client=http)
            async with Client(transport) as client:  # type: ignore[arg-type]
                offered = sorted(t.name for t in (await client.list_tools()).tools)
                results = [
                    (await client.call_tool(name, args)).structured_content for name, args in called
                ]
    return offered, results


async def test_the_held_out_check_a_scope_hides_a_tool_and_each_user_goes_upstream_as_themselves(
    openid_provider: OpenIdProvider, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="toolsets.audit")
    async with shared(openid_provider) as service:
        alice = service.user_token("alice", "tools:read tools:call")
        bob = service.user_token("bob", "tools:read tools:call admin")
        alice_offered, alice_results = await calls(
            service.url, alice, ("get_thing", {"id": "1"}), ("delete_thing", {"id": "1"})
        )
        bob_offered, bob_results = await calls(
            service.url, bob, ("delete_thing", {"id": "2"}), ("get_thing", {"id": "3"})
        )
    # A token lacking the scope: the tool is neither listed nor callable, and the
    # refusal names the scope; nothing of that call went upstream.
    assert alice_offered == ["get_thing"]
    assert alice_results[0] == {"ok": True}
    refused = alice_results[1]
    assert refused["missing_scopes"] == ["admin"]
    assert "admin" in refused["error"]
    assert bob_offered == ["delete_thing", "get_thing"]
    assert bob_results == [{"ok": True}, {"ok": True}]
    # Each call reached the API with its user's own token, exchanged for the API's
    # audience, never the client's.
    assert [(r.request_line.split()[0], r.path) for r in service.api.requests] == [
        ("GET", "/things/1"),
        ("DELETE", "/things/2"),
        ("GET", "/things/3"),
    ]
    upstream = service.upstream_tokens()
    assert [claims["sub"] for claims in upstream] == ["alice", "bob", "bob"]
    assert all(claims["act"] == {"sub": "exchanger"} for claims in upstream)
    assert all(claims["iss"] == openid_provider.issuer for claims in upstream)
    service.assert_no_client_token_upstream(alice, bob)
    # Bob's token was exchanged once for his two calls.
    tokens = [r.headers["authorization"] for r in service.api.requests]
    assert tokens[1] == tokens[2]
    assert tokens[0] != tokens[1]
    # Every call was audited, the refusal saying why.
    audited = [
        (r.subject, r.tool, r.outcome)  # type: ignore[attr-defined]
        for r in caplog.records
        if r.name == "toolsets.audit"
    ]
    assert audited == [
        ("alice", "get_thing", "ok"),
        ("alice", "delete_thing", "refused"),
        ("bob", "delete_thing", "ok"),
        ("bob", "get_thing", "ok"),
    ]


async def test_a_client_credentials_token_from_the_provider_goes_upstream_exchanged(
    openid_provider: OpenIdProvider,
) -> None:
    async with shared(openid_provider) as service:
        token = await openid_provider.token(service.url)  # sub: the client, "service"
        offered, results = await calls(service.url, token, ("delete_thing", {"id": "9"}))
    assert offered == ["delete_thing", "get_thing"]  # its token has every scope
    assert results == [{"ok": True}]
    [claims] = service.upstream_tokens()
    assert claims["sub"] == "service"
    service.assert_no_client_token_upstream(token)


async def test_roles_and_groups_from_the_providers_token_claims_open_tools(
    openid_provider: OpenIdProvider,
) -> None:
    policy = AccessPolicy(
        [
            AccessRule(tools=["get_*"], roles=["reader"]),
            AccessRule(tools=["delete_*"], groups=["ops"]),
        ]
    )
    async with recording_server() as api:

        def make() -> Any:
            made = McpServer(
                restricted(OpenApiToolset(SPEC, base_url=api.url, confirm="never"), policy),
                auth=OAuthResourceServer(issuer=openid_provider.issuer, claims=["roles", "groups"]),
                credentials=UserCredentials.from_mapping({"service": {"things_auth": "svc-token"}}),
            )
            return made.http_app()

        with serve_app(make, factory=True) as port:
            url = f"http://127.0.0.1:{port}/mcp"
            token = await openid_provider.token(url)  # roles: ["reader"], no groups
            offered, results = await calls(url, token, ("delete_thing", {"id": "1"}))
    assert offered == ["get_thing"]
    assert results[0]["missing_groups"] == ["ops"]
    assert api.requests == []


async def test_a_served_tool_reads_the_callers_validated_token_where_the_sdk_keeps_it(
    openid_provider: OpenIdProvider,
) -> None:
    """The one place the raw token is read (token exchange's): the `mcp` SDK's
    ``get_access_token()``, inside a request the resource server let through."""
    from mcp.server.auth.middleware.auth_context import get_access_token

    seen: list[str | None] = []

    @tool
    def peek() -> str:
        """Whether the request's token is there."""
        token = get_access_token()
        seen.append(None if token is None else token.token)
        return "ok"

    def make() -> Any:
        return McpServer([peek], auth=OAuthResourceServer(issuer=openid_provider.issuer)).http_app()

    with serve_app(make, factory=True) as port:
        url = f"http://127.0.0.1:{port}/mcp"
        token = await openid_provider.token(url)
        await calls(url, token, ("peek", {}))
    assert seen == [token]


async def test_a_server_given_an_invocation_of_its_own_still_grants_the_tokens_scopes(
    openid_provider: OpenIdProvider,
) -> None:
    async with shared(openid_provider, invocation=Invocation(app_name="things")) as service:
        bob = service.user_token("bob", "tools:call admin")
        offered, results = await calls(service.url, bob, ("delete_thing", {"id": "4"}))
    assert offered == ["delete_thing", "get_thing"]
    assert results == [{"ok": True}]
