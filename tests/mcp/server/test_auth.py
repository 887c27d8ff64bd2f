"""`McpServer` as an OAuth 2.1 resource server, against a real OpenID provider (npm
``oidc-provider``, `tests.mcp.server.oidc`): tokens by client credentials (JWTs checked
against the issuer's keys, opaque ones introspected), the protected resource metadata
(RFC 9728), the ``401``/``403`` challenges, the caller's `Identity` on the tool's context,
and the safe default (no serving beyond this machine without authorization)."""

from __future__ import annotations

import logging
import socket
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
import jwt
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.mcp.client.conformance_client import MemoryStorage
from tests.mcp.server.auth_helpers import (
    REDIRECT_URI,
    Served,
    assert_nothing_secret_logged,
    call,
    challenge,
    modern_call,
    protected,
    result_of,
    sdk_oauth,
    serving,
)
from tests.mcp.server.oidc import (
    ACCESS_TOKEN_TYPE,
    CLAIMS,
    TOKEN_EXCHANGE,
    Login,
    OpenIdProvider,
)
from tests.mcp.server_helpers import INITIALIZE
from toolsets import Identity, Invocation, ToolContext, tool
from toolsets.mcp import IncomingRequest, McpServer, McpToolset, OAuthResourceServer, StreamableHttp

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def served(openid_provider: OpenIdProvider) -> Iterator[Served]:
    with serving(openid_provider) as served:
        yield served


# --- a good token ----------------------------------------------------------------------


async def test_a_client_credentials_token_calls_a_tool_which_sees_who_calls(
    served: Served, openid_provider: OpenIdProvider
) -> None:
    token = await openid_provider.token(served.url)
    before = len(served.ran)
    response = await call(served.url, token)
    assert response.status_code == 200, response.text
    assert result_of(response)["structuredContent"] == {"subject": "service", "client": "service"}
    [invocation] = served.ran[before:]
    identity = invocation.identity
    assert identity is not None
    assert identity.expires_at is not None
    assert identity == Identity(
        subject="service",
        issuer=openid_provider.issuer,
        client_id="service",
        scopes=frozenset({"tools:read", "tools:call", "admin"}),
        claims={name: CLAIMS["service"][name] for name in ("email", "roles")},
        expires_at=identity.expires_at,
    )
    # The default invocation is the caller's: its user, and the scopes the token grants.
    assert invocation.user_id == "service"
    assert invocation.scopes == identity.scopes
    assert token not in repr(invocation)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_sdk_client_with_a_bearer_token_lists_and_calls_in_both_eras(
    served: Served, openid_provider: OpenIdProvider, mode: str
) -> None:
    token = await openid_provider.token(served.url)
    headers = {"Authorization": f"Bearer {token}"}
    with anyio.fail_after(20):
        async with httpx2.AsyncClient(headers=headers) as http:
            transport = streamable_http_client(served.url, http_client=http)
            async with Client(transport, mode=mode) as client:  # type: ignore[arg-type]
                listed = await client.list_tools()
                called = await client.call_tool("whoami", {})
    assert [each.name for each in listed.tools] == ["whoami"]
    assert called.structured_content == {"subject": "service", "client": "service"}


async def test_an_mcp_toolset_with_a_bearer_header_calls_the_protected_server(
    served: Served, openid_provider: OpenIdProvider
) -> None:
    token = await openid_provider.token(served.url)
    transport = StreamableHttp(url=served.url, headers={"Authorization": f"Bearer {token}"})
    with anyio.fail_after(20):
        async with McpToolset(transport) as toolset:
            [whoami] = await toolset.list_tools(ToolContext())
            answer = await whoami.run({}, ToolContext())
    assert answer == {"subject": "service", "client": "service"}


async def test_an_opaque_token_is_introspected_once_then_its_answer_is_kept(
    served: Served, openid_provider: OpenIdProvider
) -> None:
    token = await openid_provider.token(served.url, client="opaque-service")
    assert token.count(".") != 2
    before = (await openid_provider.state())["introspection_requests"]
    first, second = await call(served.url, token), await call(served.url, token)
    assert (first.status_code, second.status_code) == (200, 200)
    assert result_of(second)["structuredContent"]["client"] == "opaque-service"
    assert (await openid_provider.state())["introspection_requests"] == before + 1


async def test_the_sdk_oauth_client_discovers_the_issuer_and_logs_in_with_pkce(
    served: Served, openid_provider: OpenIdProvider
) -> None:
    login = Login(REDIRECT_URI, user="alice")
    storage = MemoryStorage()
    oauth = sdk_oauth(served.url, login, storage)
    before = len(served.ran)
    with anyio.fail_after(30):
        async with McpToolset(StreamableHttp(url=served.url, auth=oauth)) as toolset:
            [whoami] = await toolset.list_tools(ToolContext())
            answer = await whoami.run({}, ToolContext())
    # Discovery (the 401's metadata URL, then the issuer's), dynamic registration, the
    # user's login and consent, the code exchanged with PKCE for a token for this server.
    assert login.pages == ["login", "consent"]
    assert storage.client_info is not None
    assert answer == {"subject": "alice", "client": storage.client_info.client_id}
    identity = served.ran[before].identity
    assert identity is not None
    assert identity.claims == CLAIMS["alice"]
    assert "tools:call" in identity.scopes
    assert storage.tokens is not None
    claims = jwt.decode(storage.tokens.access_token, options={"verify_signature": False})
    assert claims["aud"] == served.url


async def test_an_invocation_function_gets_the_identity_and_cannot_replace_it(
    openid_provider: OpenIdProvider,
) -> None:
    seen: list[Identity | None] = []

    def invocation(request: IncomingRequest) -> Invocation:
        seen.append(request.identity)
        spoofed = Identity(subject="root", issuer="http://127.0.0.1:1")
        return Invocation(user_id=f"user-{request.identity.subject}", identity=spoofed)  # type: ignore[union-attr]

    ran: list[Invocation] = []
    server = protected(openid_provider, ran)
    server = McpServer(server.toolset, auth=server.auth, invocation=invocation)
    app = server.http_app(stateless=True)
    async with app.router.lifespan_context(app):
        transport = httpx2.ASGITransport(app=app)
        url = "http://127.0.0.1:8000/mcp"
        token = await openid_provider.token(url)
        body, headers = modern_call()
        headers["Authorization"] = f"Bearer {token}"
        async with httpx2.AsyncClient(transport=transport) as http:
            response = await http.post(url, json=body, headers=headers)
    assert response.status_code == 200, response.text
    [identity] = seen
    assert identity is not None
    assert identity.subject == "service"
    [invocation_made] = ran
    assert invocation_made.user_id == "user-service"
    assert invocation_made.identity == identity  # the token's, not the function's


async def test_over_stdio_or_in_process_there_is_no_authorization(
    openid_provider: OpenIdProvider,
) -> None:
    ran: list[Invocation] = []
    server = protected(openid_provider, ran)
    async with Client(server.server) as client:  # the SDK's client in process, as over stdio
        called = await client.call_tool("whoami", {})
    assert called.is_error  # the tool asserts an identity: there is none
    assert ran[0].identity is None


async def test_the_token_check_is_the_mcp_sdks_token_verifier(
    openid_provider: OpenIdProvider,
) -> None:
    from mcp.server.auth.provider import TokenVerifier

    from toolsets.mcp.server._auth._tokens import TokenValidator

    resource = "http://127.0.0.1:8000/mcp"
    config = OAuthResourceServer(issuer=openid_provider.issuer, resource=resource)
    async with httpx2.AsyncClient() as client:

        async def http() -> httpx2.AsyncClient:
            return client

        verifier: TokenVerifier = TokenValidator(config, http)
        token = await openid_provider.token(resource)
        checked = await verifier.verify_token(token)
        other = await verifier.verify_token(await openid_provider.token(resource + "/other"))
    assert checked is not None
    assert (checked.subject, checked.client_id, checked.resource) == (
        "service",
        "service",
        resource,
    )
    assert checked.claims == {"iss": openid_provider.issuer}
    assert other is None


async def test_a_session_opened_with_one_token_refuses_another_principals_token(
    served: Served, openid_provider: OpenIdProvider
) -> None:
    owner = await openid_provider.token(served.url)
    other = await openid_provider.token(served.url, client="opaque-service")
    accept = {"Accept": "application/json, text/event-stream"}
    async with httpx2.AsyncClient(timeout=20) as http:
        opened = await http.post(
            served.url, json=INITIALIZE, headers={**accept, "Authorization": f"Bearer {owner}"}
        )
        session = {**accept, "Mcp-Session-Id": opened.headers["mcp-session-id"]}
        session["MCP-Protocol-Version"] = "2025-11-25"
        listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
        mine = await http.post(
            served.url, json=listing, headers={**session, "Authorization": f"Bearer {owner}"}
        )
        theirs = await http.post(
            served.url, json=listing, headers={**session, "Authorization": f"Bearer {other}"}
        )
    assert mine.status_code == 200
    assert theirs.status_code in (403, 404)  # the SDK binds a session to who opened it
    assert "whoami" not in theirs.text


async def test_the_provider_exchanges_a_callers_token_for_an_upstream_apis_rfc_8693(
    served: Served, openid_provider: OpenIdProvider
) -> None:
    """What per-user upstream credentials build on: the caller's token exchanged, by the
    client ``exchanger``, for one of another audience, about the same subject."""
    token = await openid_provider.token(served.url)
    upstream = "http://127.0.0.1:9/api"
    exchanged = await openid_provider.post_token(
        {
            "grant_type": TOKEN_EXCHANGE,
            "subject_token": token,
            "subject_token_type": ACCESS_TOKEN_TYPE,
            "resource": upstream,
            "scope": "tools:read",
        },
        "exchanger",
    )
    assert exchanged["issued_token_type"] == ACCESS_TOKEN_TYPE
    claims = jwt.decode(exchanged["access_token"], options={"verify_signature": False})
    assert (claims["sub"], claims["aud"], claims["scope"]) == ("service", upstream, "tools:read")
    assert claims["act"] == {"sub": "exchanger"}


# --- the metadata and the challenges ---------------------------------------------------


async def test_the_protected_resource_metadata_names_the_resource_issuer_and_scopes(
    served: Served, openid_provider: OpenIdProvider
) -> None:
    root = served.url.removesuffix("/mcp")
    async with httpx2.AsyncClient(timeout=20) as http:
        for url in (served.metadata_url, f"{root}/.well-known/oauth-protected-resource"):
            response = await http.get(url)
            assert response.status_code == 200
            assert response.json() == {
                "resource": served.url,
                "authorization_servers": [openid_provider.issuer],
                "scopes_supported": ["tools:call"],
                "bearer_methods_supported": ["header"],
                "resource_name": "guarded",
            }


async def test_a_request_without_a_token_is_answered_401_naming_the_metadata(
    served: Served,
) -> None:
    before = len(served.ran)
    response = await call(served.url)
    assert response.status_code == 401
    parameters = challenge(response)
    assert parameters["resource_metadata"] == served.metadata_url
    assert parameters["scope"] == "tools:call"
    assert "error" not in parameters  # RFC 6750: no error code when no token came
    assert response.json()["error_description"].startswith("this server needs an access token")
    assert served.ran[before:] == []


async def test_a_token_without_a_required_scope_is_answered_403_insufficient_scope(
    served: Served, openid_provider: OpenIdProvider
) -> None:
    token = await openid_provider.token(served.url, scope="tools:read")
    before = len(served.ran)
    response = await call(served.url, token)
    assert response.status_code == 403
    parameters = challenge(response)
    assert parameters["error"] == "insufficient_scope"
    assert parameters["scope"] == "tools:call"
    assert "tools:call" in response.json()["error_description"]
    assert served.ran[before:] == []


# --- the safe default --------------------------------------------------------------------


def unprotected(auth: Any = None) -> McpServer:
    return McpServer([], auth=auth)


async def test_serving_beyond_this_machine_without_authorization_is_refused() -> None:
    with pytest.raises(ValueError, match="without authorization") as raised:
        await unprotected().serve_http("0.0.0.0", 0)
    assert "auth=OAuthResourceServer" in str(raised.value)
    assert "auth='none'" in str(raised.value)
    with pytest.raises(ValueError, match="without authorization"):
        unprotected().run_http("::", 0)


async def test_a_socket_bound_beyond_this_machine_counts_as_the_address_served() -> None:
    with socket.socket() as sock:
        sock.bind(("0.0.0.0", 0))
        with pytest.raises(ValueError, match="without authorization"):
            await unprotected().serve_http(sock=sock)


def test_auth_none_serves_beyond_this_machine_on_purpose_and_loopback_needs_nothing() -> None:
    from toolsets.mcp.server._auth import check_exposure

    check_exposure("none", "0.0.0.0")
    for host in ("127.0.0.1", "localhost", "::1", "[::1]", "127.0.0.2"):
        check_exposure(None, host)
    with pytest.raises(TypeError, match="auth must be"):
        unprotected(auth="open")


async def test_nothing_about_the_token_is_logged_when_a_good_one_is_used(
    served: Served, openid_provider: OpenIdProvider, caplog: pytest.LogCaptureFixture
) -> None:
    token = await openid_provider.token(served.url)
    with caplog.at_level(logging.DEBUG):
        response = await call(served.url, token)
    assert response.status_code == 200
    assert_nothing_secret_logged(caplog, token)


# --- the caller in every log line about a call -----------------------------------------

SERVER_LOGGER = logging.getLogger("toolsets.mcp.server")


def logging_server(provider: OpenIdProvider) -> McpServer:
    """A protected server whose tool logs on toolsets' own logger and calls an upstream
    API with httpx2 (the network edge mocked), which logs the request."""

    async def upstream(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, json={"ok": True})

    @tool
    async def fetch_notes() -> str:
        """Fetch the notes upstream."""
        SERVER_LOGGER.debug("fetching %s", "the notes")
        async with httpx2.AsyncClient(transport=httpx2.MockTransport(upstream)) as http:
            await http.get("https://api.example/notes")
        return "notes"

    auth = OAuthResourceServer(issuer=provider.issuer, required_scopes=["tools:call"])
    return McpServer([fetch_notes], name="logged", auth=auth)


IN_PROCESS = "http://127.0.0.1/mcp"


@asynccontextmanager
async def in_process(provider: OpenIdProvider) -> AsyncIterator[httpx2.AsyncClient]:
    """A client of a `logging_server` served in this process, on the test's backend
    (httpx2's ASGI transport), sending a bearer token for `IN_PROCESS`."""
    app = logging_server(provider).http_app()
    token = await provider.token(IN_PROCESS)
    async with (
        app.router.lifespan_context(app),
        httpx2.AsyncClient(
            transport=httpx2.ASGITransport(app), headers={"Authorization": f"Bearer {token}"}
        ) as http,
    ):
        yield http


async def test_every_log_line_about_a_protected_call_names_the_caller_never_the_token(
    openid_provider: OpenIdProvider, caplog: pytest.LogCaptureFixture
) -> None:
    body, headers = modern_call("fetch_notes")
    caplog.set_level(logging.DEBUG)
    with anyio.fail_after(20):
        async with in_process(openid_provider) as http:
            caplog.clear()
            response = await http.post(IN_PROCESS, json=body, headers=headers)
    token = http.headers["authorization"].removeprefix("Bearer ")
    assert response.status_code == 200, response.text
    assert result_of(response)["content"][0]["text"] == "notes"
    records = [r for r in caplog.records if r.name.split(".")[0] in {"toolsets", "mcp", "httpx2"}]
    authorized = next(i for i, r in enumerate(records) if r.getMessage().startswith("authorized"))
    answered = next(i for i, r in enumerate(records) if r.name == "toolsets.audit")
    during = records[authorized + 1 : answered + 1]
    said = {r.name: r.getMessage() for r in during}
    assert said["toolsets.mcp.server"] == "fetching the notes [caller service, client service]"
    assert said["httpx2"].startswith("HTTP Request: GET https://api.example/notes")
    assert said["httpx2"].endswith(" [caller service, client service]")
    audit = during[-1]
    assert "by service (client service): ok" in audit.getMessage()
    assert not audit.getMessage().endswith("]")  # the audit line names the caller itself
    for record in during:
        fields: Any = record
        assert (fields.subject, fields.client_id) == ("service", "service"), record.name
    # the test's own client's line about its POST: not in the call, left as it is
    posted = next(r for r in records[answered:] if r.getMessage().startswith("HTTP Request: POST"))
    assert not hasattr(posted, "subject")
    assert posted.getMessage().endswith('"HTTP/1.1 200 OK"')
    assert_nothing_secret_logged(caplog, token)
    assert all(token not in repr(vars(r)) for r in caplog.records)


async def test_a_line_logged_outside_a_served_call_is_left_as_it_is(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="toolsets.mcp.server")
    SERVER_LOGGER.debug("between calls")
    (record,) = [r for r in caplog.records if r.name == "toolsets.mcp.server"]
    assert record.getMessage() == "between calls"
    assert not hasattr(record, "subject")


async def test_in_a_session_the_lines_of_a_call_name_the_caller_who_opened_it(
    openid_provider: OpenIdProvider, caplog: pytest.LogCaptureFixture
) -> None:
    # 2025-11-25: the call is answered in a task of the session, not of its HTTP request.
    caplog.set_level(logging.DEBUG, logger="toolsets.mcp.server")
    with anyio.fail_after(20):
        async with (
            in_process(openid_provider) as http,
            Client(streamable_http_client(IN_PROCESS, http_client=http), mode="legacy") as client,  # type: ignore[arg-type]
        ):
            called = await client.call_tool("fetch_notes", {})
    assert not called.is_error
    (record,) = [r for r in caplog.records if r.name == "toolsets.mcp.server"]
    fields: Any = record
    assert (fields.subject, fields.client_id) == ("service", "service")
    assert record.getMessage() == "fetching the notes [caller service, client service]"
