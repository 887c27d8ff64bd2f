"""Every security scheme on the wire: API keys, HTTP basic and bearer, AND/OR requirements,
OAuth 2 client credentials (fetched, cached, renewed), OpenID Connect discovery, and the
authorization code flow through the agent's auth pause — against real HTTP servers on
127.0.0.1. Secrets never reach another origin, an error, a log line or a result."""

from __future__ import annotations

import base64
import logging
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx2
import pytest

from tests.agent.helpers import call, collect, response_of, start
from tests.openapi.helpers import recording_server
from tests.openapi.oauth_server import CLIENT_ID, CLIENT_SECRET, OAuthServer, oauth_server
from toolsets import AuthConfig, AuthCredential, AuthError, ToolContext, ToolDefinitionError
from toolsets.agent import CredentialRequest, LlmAgent, Runner
from toolsets.models import ScriptedModel
from toolsets.openapi import AuthorizationCodeFlow, ClientCredentials, OpenApiToolset

pytestmark = pytest.mark.anyio

SECRET = "k3y-v@lue/+="

SCHEMES: dict[str, Any] = {
    "header_key": {"type": "apiKey", "in": "header", "name": "X-Api-Key"},
    "query_key": {"type": "apiKey", "in": "query", "name": "api key"},
    "cookie_key": {"type": "apiKey", "in": "cookie", "name": "session"},
    "basic": {"type": "http", "scheme": "basic"},
    "bearer": {"type": "http", "scheme": "bearer"},
    "custom": {"type": "http", "scheme": "Token"},
    "machine": {
        "type": "oauth2",
        "flows": {"clientCredentials": {"tokenUrl": "/token", "scopes": {"read": "", "w": ""}}},
    },
    "user": {
        "type": "oauth2",
        "flows": {
            "authorizationCode": {
                "authorizationUrl": "/authorize",
                "tokenUrl": "/token",
                "scopes": {"repo": "repositories"},
            }
        },
    },
}


def spec(security: list[dict[str, list[str]]] | None, **schemes: Any) -> dict[str, Any]:
    """A one-operation spec (``GET /api/things/{id}``) needing ``security``."""
    operation: dict[str, Any] = {
        "operationId": "get_thing",
        "parameters": [
            {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}
        ],
        "responses": {"200": {"description": "ok"}},
    }
    if security is not None:
        operation["security"] = security
    return {
        "openapi": "3.1.0",
        "info": {"title": "secured", "version": "1"},
        "paths": {"/api/things/{id}": {"get": operation}},
        "components": {"securitySchemes": {**SCHEMES, **schemes}},
    }


async def call_once(
    security: list[dict[str, list[str]]], credentials: dict[str, Any]
) -> dict[str, str]:
    """The headers (and request line, as ``_line``) of one call sent with ``credentials``."""
    async with (
        recording_server() as server,
        OpenApiToolset(spec(security), base_url=server.url, credentials=credentials) as ts,
    ):
        tool = await ts.get_tool("get_thing")
        assert await tool.run({"id": "1"}, ToolContext()) == {"ok": True}
    (request,) = server.requests
    return {**request.headers, "_line": request.request_line}


# --- API keys and HTTP schemes ----------------------------------------------------------


async def test_an_api_key_goes_in_the_header_the_spec_names() -> None:
    seen = await call_once([{"header_key": []}], {"header_key": SECRET})
    assert seen["x-api-key"] == SECRET
    assert seen["_line"] == "GET /api/things/1 HTTP/1.1"


async def test_an_api_key_in_the_query_is_percent_encoded_name_and_value() -> None:
    seen = await call_once([{"query_key": []}], {"query_key": SECRET})
    assert seen["_line"] == "GET /api/things/1?api%20key=k3y-v%40lue%2F%2B%3D HTTP/1.1"


async def test_an_api_key_in_the_query_is_masked_in_the_http_client_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="httpx2")
    await call_once([{"query_key": []}], {"query_key": SECRET})
    (line,) = [r.getMessage() for r in caplog.records if r.name == "httpx2"]
    assert "/api/things/1?api%20key=**********" in line
    assert "k3y" not in line


async def test_cookies_an_api_sets_are_not_sent_on_later_calls() -> None:
    # One pooled client serves every user: a session cookie set for one must not leak.
    async with recording_server() as server, OpenApiToolset(spec(None), base_url=server.url) as ts:
        server.first.append((200, {"Set-Cookie": "sid=user-a; Path=/"}))
        tool = await ts.get_tool("get_thing")
        for _ in range(2):
            assert await tool.run({"id": "1"}, ToolContext()) == {"ok": True}
        assert not list(ts.client.cookies.jar)  # nor kept, to pile up per user
    assert [r.headers.get("cookie") for r in server.requests] == [None, None]


async def test_an_api_key_cookie_is_sent_as_a_cookie() -> None:
    seen = await call_once([{"cookie_key": []}], {"cookie_key": AuthCredential.api_key(SECRET)})
    assert seen["cookie"] == "session=k3y-v%40lue%2F%2B%3D"


@pytest.mark.parametrize(
    "credential", ["ann:pa:ss", AuthCredential.basic("ann", "pa:ss")], ids=["string", "object"]
)
async def test_http_basic_encodes_user_and_password(credential: Any) -> None:
    seen = await call_once([{"basic": []}], {"basic": credential})
    assert seen["authorization"] == "Basic " + base64.b64encode(b"ann:pa:ss").decode()


async def test_bearer_and_other_http_schemes_send_the_token() -> None:
    assert (await call_once([{"bearer": []}], {"bearer": "t0k"}))["authorization"] == "Bearer t0k"
    assert (await call_once([{"custom": []}], {"custom": "t0k"}))["authorization"] == "Token t0k"


async def test_an_and_requirement_sends_every_credential_of_it() -> None:
    seen = await call_once(
        [{"header_key": [], "bearer": []}], {"header_key": "k", "bearer": "t", "basic": "a:b"}
    )
    assert (seen["x-api-key"], seen["authorization"]) == ("k", "Bearer t")


async def test_the_first_alternative_we_hold_every_credential_for_is_used() -> None:
    # The first alternative lacks its bearer token: the second one is used, alone.
    seen = await call_once(
        [{"header_key": [], "bearer": []}, {"basic": []}], {"header_key": "k", "basic": "a:b"}
    )
    assert seen["authorization"].startswith("Basic ")
    assert "x-api-key" not in seen


async def test_optional_security_sends_nothing_and_asks_for_nothing() -> None:
    async with OpenApiToolset(spec([{}, {"bearer": []}]), base_url="http://127.0.0.1:9") as ts:
        tool = await ts.get_tool("get_thing")
        assert tool.auth_config is None


# --- redirects ------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["same-origin", "other-port", "other-host"])
async def test_credentials_never_follow_a_redirect_to_another_origin(where: str) -> None:
    security = [{"bearer": [], "query_key": [], "cookie_key": []}]
    credentials = {"bearer": SECRET, "query_key": SECRET, "cookie_key": SECRET}
    async with recording_server() as other, recording_server() as api:
        target = api if where == "same-origin" else other
        host = "localhost" if where == "other-host" else "127.0.0.1"
        api.first.append((302, {"Location": f"http://{host}:{target.port}/elsewhere?keep=1"}))
        async with OpenApiToolset(spec(security), base_url=api.url, credentials=credentials) as ts:
            tool = await ts.get_tool("get_thing")
            assert await tool.run({"id": "1"}, ToolContext()) == {"ok": True}
    first, followed = (
        target.requests if where == "same-origin" else (*api.requests, *other.requests)
    )
    assert first.headers["authorization"] == f"Bearer {SECRET}"
    assert "api%20key=" in first.request_line
    if where == "same-origin":
        assert followed.headers["authorization"] == f"Bearer {SECRET}"
        assert "cookie" in followed.headers
    else:
        assert "authorization" not in followed.headers
        assert "cookie" not in followed.headers
        assert followed.request_line == "GET /elsewhere?keep=1 HTTP/1.1"


# --- OAuth 2 client credentials ---------------------------------------------------------


def machine_toolset(server: OAuthServer, **options: Any) -> OpenApiToolset:
    credentials = ClientCredentials(client_id=CLIENT_ID, client_secret=CLIENT_SECRET, **options)
    return OpenApiToolset(
        spec([{"machine": ["read"]}]), base_url=server.url, credentials={"machine": credentials}
    )


async def test_client_credentials_get_one_token_shared_by_concurrent_calls() -> None:
    with oauth_server() as server:
        async with machine_toolset(server) as ts:
            tool = await ts.get_tool("get_thing")
            assert tool.auth_config is None  # nothing to ask the user for
            results: list[Any] = []

            async def one(i: int) -> None:
                results.append(await tool.run({"id": str(i)}, ToolContext()))

            async with anyio.create_task_group() as tg:
                for i in range(10):
                    tg.start_soon(one, i)
            assert all(r["ok"] for r in results)
            assert results[0]["scopes"] == ["read"]
        (token_request,) = server.requests_to("/token")
        assert token_request.form["grant_type"] == ["client_credentials"]
        assert token_request.form["scope"] == ["read"]
        assert "client_secret" not in token_request.form  # basic authentication
        assert token_request.headers["authorization"].startswith("Basic ")


async def test_client_credentials_can_go_in_the_form_with_the_scopes_and_fields_given() -> None:
    with oauth_server() as server:
        options = {"auth_method": "client_secret_post", "scopes": ("w",), "extra": {"aud": "x"}}
        async with machine_toolset(server, **options) as ts:
            tool = await ts.get_tool("get_thing")
            assert (await tool.run({"id": "1"}, ToolContext()))["scopes"] == ["w"]
        (token_request,) = server.requests_to("/token")
        assert token_request.form["client_secret"] == [CLIENT_SECRET]
        assert (token_request.form["scope"], token_request.form["aud"]) == (["w"], ["x"])
        assert "authorization" not in token_request.headers


@pytest.mark.parametrize("lifetime", [10, "10"], ids=["number", "numeric-string"])
async def test_an_expired_token_is_renewed_before_the_call(lifetime: int | str) -> None:
    with oauth_server() as server:
        server.expires_in = lifetime  # within the expiry margin: expired as soon as issued
        async with machine_toolset(server) as ts:
            tool = await ts.get_tool("get_thing")
            for _ in range(3):
                assert (await tool.run({"id": "1"}, ToolContext()))["ok"]
        assert len(server.requests_to("/token")) == 3


async def test_a_token_the_api_refuses_is_renewed_once_and_the_call_retried() -> None:
    with oauth_server() as server:
        async with machine_toolset(server) as ts:
            tool = await ts.get_tool("get_thing")
            assert (await tool.run({"id": "1"}, ToolContext()))["ok"]
            server.revoke_all()
            assert (await tool.run({"id": "2"}, ToolContext()))["ok"]
        assert len(server.requests_to("/token")) == 2
        assert [s.path for s in server.seen if s.path.startswith("/api")] == [
            "/api/things/1",
            "/api/things/2",
            "/api/things/2",
        ]


async def test_a_refused_token_request_is_an_auth_error_without_the_secret(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    with oauth_server() as server:
        credentials = ClientCredentials(client_id=CLIENT_ID, client_secret="wrong-" + SECRET)
        async with OpenApiToolset(
            spec([{"machine": []}]), base_url=server.url, credentials={"machine": credentials}
        ) as ts:
            tool = await ts.get_tool("get_thing")
            with pytest.raises(AuthError) as caught:
                await tool.run({"id": "1"}, ToolContext())
    assert caught.value.scheme_name == "machine"
    assert "invalid_client" in str(caught.value)
    assert SECRET not in str(caught.value)
    assert SECRET not in caplog.text
    assert SECRET not in repr(credentials)


async def test_client_secrets_are_not_sent_over_plain_http_to_a_remote_host() -> None:
    remote = {"type": "oauth2", "flows": {"clientCredentials": {"tokenUrl": "http://a.invalid/t"}}}
    credentials = {"remote": ClientCredentials(client_id="a", client_secret="b")}
    async with OpenApiToolset(
        spec([{"remote": []}], remote=remote),
        base_url="http://127.0.0.1:9",
        credentials=credentials,
    ) as ts:
        tool = await ts.get_tool("get_thing")
        with pytest.raises(AuthError, match="must be an https URL"):
            await tool.run({"id": "1"}, ToolContext())


@pytest.mark.parametrize(
    ("scheme", "message"),
    [("header_key", "not oauth2 or openIdConnect"), ("user", "no clientCredentials flow")],
)
async def test_client_credentials_for_a_scheme_without_a_token_grant_are_refused(
    scheme: str, message: str
) -> None:
    credentials = {scheme: ClientCredentials(client_id="a", client_secret="b")}
    toolset = OpenApiToolset(spec(None), base_url="http://127.0.0.1:9", credentials=credentials)
    with pytest.raises(ToolDefinitionError, match=message):
        await toolset.list_tools()
    await toolset.shutdown()


# --- OpenID Connect -----------------------------------------------------------------


def oidc_spec(server: OAuthServer) -> dict[str, Any]:
    oidc = {"type": "openIdConnect", "openIdConnectUrl": "/.well-known/openid-configuration"}
    return spec([{"oidc": ["profile"]}], oidc=oidc)


async def test_openid_connect_discovery_finds_the_token_endpoint_once() -> None:
    with oauth_server() as server:
        credentials = {"oidc": ClientCredentials(client_id=CLIENT_ID, client_secret=CLIENT_SECRET)}
        async with OpenApiToolset(
            oidc_spec(server), base_url=server.url, credentials=credentials
        ) as ts:
            tool = await ts.get_tool("get_thing")
            for i in range(2):
                assert (await tool.run({"id": str(i)}, ToolContext()))["scopes"] == ["profile"]
        assert len(server.requests_to("/.well-known/openid-configuration")) == 1
        assert len(server.requests_to("/token")) == 1


async def test_a_discovery_document_naming_another_issuer_is_refused() -> None:
    with oauth_server() as server:
        server.issuer = "https://evil.example"
        credentials = {"oidc": ClientCredentials(client_id=CLIENT_ID, client_secret=CLIENT_SECRET)}
        async with OpenApiToolset(
            oidc_spec(server), base_url=server.url, credentials=credentials
        ) as ts:
            tool = await ts.get_tool("get_thing")
            with pytest.raises(AuthError, match="names the issuer"):
                await tool.run({"id": "1"}, ToolContext())
        assert not server.requests_to("/token")


# --- the authorization code flow, through the agent -----------------------------------------


async def visit(url: str) -> str:
    """What a user's browser does: open ``url`` and land where it redirects."""
    async with httpx2.AsyncClient(follow_redirects=False, trust_env=False) as client:
        response = await client.get(url)
    assert response.status_code == 302
    return response.headers["location"]


@pytest.mark.parametrize("scheme", ["user", "oidc"])
async def test_the_agent_pauses_for_the_user_to_sign_in_and_resumes_with_the_token(
    scheme: str,
) -> None:
    redirect_uri = "https://app.example/callback"
    with oauth_server() as server:
        security = [{scheme: ["repo"]}]
        oidc = {"type": "openIdConnect", "openIdConnectUrl": "/.well-known/openid-configuration"}
        toolset = OpenApiToolset(spec(security, oidc=oidc), base_url=server.url)
        model = ScriptedModel([call("get_thing", id="7"), "done", call("get_thing", id="8"), "ok"])
        runner = Runner(LlmAgent("assistant", model, tools=[toolset]))
        session_id, events = await start(runner, "fetch thing 7")
        (request,) = events[-1].pending
        assert isinstance(request, CredentialRequest)
        config = request.auth_config
        assert (config.scheme_name, config.scopes) == (scheme, ("repo",))

        flow = AuthorizationCodeFlow(
            config,
            client_id=CLIENT_ID,
            client_secret=CLIENT_SECRET,
            redirect_uri=redirect_uri,
            base_url=server.url,
        )
        try:
            landed = await visit(await flow.start())
            assert landed.startswith(redirect_uri + "?code=")
            credential = await flow.finish(landed)
        finally:
            await flow.aclose()
        assert credential.refresh_token is not None
        assert credential.scopes == (("openid", "repo") if scheme == "oidc" else ("repo",))

        resumed = await collect(
            runner.resume(
                user_id="u",
                session_id=session_id,
                credentials={request.function_call_id: credential},
            )
        )
        assert response_of(resumed, "get_thing") == {
            "ok": True,
            "path": "/api/things/7",
            "scopes": list(credential.scopes),
        }
        # The stored credential serves the next call: no second sign-in.
        again = await collect(runner.run(user_id="u", session_id=session_id, message="and 8"))
        assert not again[-1].pending
        assert again[-1].text == "ok"
        await toolset.shutdown()
        (authorize,) = server.requests_to("/authorize")
        assert authorize.query["code_challenge_method"] == ["S256"]
        assert credential.secret not in repr(resumed + again)


async def test_a_refused_user_token_asks_the_user_again() -> None:
    with oauth_server() as server:
        toolset = OpenApiToolset(spec([{"user": []}]), base_url=server.url)
        model = ScriptedModel([call("get_thing", id="1"), "never"])
        runner = Runner(LlmAgent("assistant", model, tools=[toolset]))
        session_id, events = await start(runner, "go")
        (first,) = events[-1].pending
        revoked = AuthCredential.oauth2("at-revoked")
        resumed = await collect(
            runner.resume(
                user_id="u", session_id=session_id, credentials={first.function_call_id: revoked}
            )
        )
        (second,) = resumed[-1].pending
        assert isinstance(second, CredentialRequest)
        assert second.auth_config.scheme_name == "user"
        await toolset.shutdown()


async def test_an_expired_user_token_asks_again_without_sending_it() -> None:
    with oauth_server() as server:
        toolset = OpenApiToolset(spec([{"user": []}]), base_url=server.url)
        tool = await toolset.get_tool("get_thing")
        expired = AuthCredential.oauth2("at-old", expires_at=1.0)
        ctx = ToolContext(function_call_id="c1", auth_credential=expired)
        result = await tool.run({"id": "1"}, ctx)
        assert "has expired" in str(result)
        assert ctx.actions.requested_auth_configs["c1"] == tool.auth_config
        assert not server.seen
        await toolset.shutdown()


async def test_the_flow_checks_state_reports_refusals_and_refreshes_tokens() -> None:
    with oauth_server() as server:
        config = AuthConfig(scheme_name="user", scheme=SCHEMES["user"], scopes=("repo",))
        flow = AuthorizationCodeFlow(
            config,
            client_id=CLIENT_ID,
            client_secret=CLIENT_SECRET,
            redirect_uri="https://app.example/cb",
            base_url=server.url,
        )
        try:
            url = await flow.start()
            with pytest.raises(AuthError, match="state does not match"):
                await flow.finish("https://app.example/cb?code=x&state=forged")
            state = parse_qs(urlsplit(url).query)["state"][0]
            with pytest.raises(AuthError, match="refused: access_denied: no thanks"):
                await flow.finish(
                    f"https://app.example/cb?error=access_denied&error_description=no+thanks&state={state}"
                )
            credential = await flow.finish(await visit(await flow.start()))
            fresh = await flow.refresh(credential)
            assert fresh.secret != credential.secret
            assert fresh.refresh_token == credential.refresh_token  # kept: none was issued
            assert fresh.expires_at is not None
        finally:
            await flow.aclose()
        grants = [s.form["grant_type"][0] for s in server.requests_to("/token")]
        assert grants == ["authorization_code", "refresh_token"]


def test_a_flow_needs_a_scheme_with_an_authorization_code_flow() -> None:
    with pytest.raises(AuthError, match="no authorization code flow"):
        AuthorizationCodeFlow(
            AuthConfig(scheme_name="machine", scheme=SCHEMES["machine"]),
            client_id="a",
            redirect_uri="https://app.example/cb",
        )


# --- malformed credentials, and secrets in errors, logs and reprs ----------------------

LEAKY = "tok-SECRET-4711"


def exceptions_of(error: BaseException) -> list[BaseException]:
    """``error`` and every exception chained to it."""
    chain: list[BaseException] = []
    found: BaseException | None = error
    while found is not None and found not in chain:
        chain.append(found)
        found = found.__cause__ or found.__context__
    return chain


def assert_hidden(secret: str, error: BaseException, caplog: pytest.LogCaptureFixture) -> None:
    for link in exceptions_of(error):
        assert secret not in str(link), link
        assert secret not in repr(link), link
    for record in caplog.records:
        assert secret not in record.getMessage(), record
        assert secret not in repr(record.args), record


@pytest.fixture
def debug_logs(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.DEBUG)
    for name in ("httpx2", "httpcore2", "httpcore2.http11", "httpcore2.connection"):
        caplog.set_level(logging.DEBUG, logger=name)
    return caplog


MALFORMED = [
    *(
        (scheme, bad, "control character")
        for scheme in ("bearer", "header_key", "query_key", "basic", "custom")
        for bad in (LEAKY + "\n", LEAKY + "\r\nX-Evil: 1", "\t" + LEAKY)
    ),
    *((scheme, "ö" + LEAKY, "non-ASCII") for scheme in ("bearer", "header_key", "custom")),
]


@pytest.mark.parametrize(("scheme", "bad", "says"), MALFORMED)
async def test_a_credential_no_request_can_carry_is_refused_up_front_naming_the_scheme(
    scheme: str, bad: str, says: str, debug_logs: pytest.LogCaptureFixture
) -> None:
    async with recording_server() as server:
        toolset = OpenApiToolset(
            spec([{scheme: []}]), base_url=server.url, credentials={scheme: bad}
        )
        with pytest.raises(AuthError) as caught:
            await toolset.list_tools()
        await toolset.shutdown()
    assert caught.value.scheme_name == scheme
    assert says in str(caught.value)
    assert server.requests == []
    assert_hidden(LEAKY, caught.value, debug_logs)


@pytest.mark.parametrize("scheme", ["query_key", "cookie_key", "basic"])
async def test_a_non_ascii_credential_that_is_encoded_on_the_wire_is_sent(scheme: str) -> None:
    credential: Any = "ann:pässwörd" if scheme == "basic" else "kéy"
    seen = await call_once([{scheme: []}], {scheme: credential})
    assert seen["_line"].startswith("GET /api/things/1")


async def test_a_users_credential_with_a_newline_is_asked_for_again_and_never_sent(
    debug_logs: pytest.LogCaptureFixture,
) -> None:
    async with recording_server() as server:
        toolset = OpenApiToolset(spec([{"bearer": []}]), base_url=server.url)
        model = ScriptedModel([call("get_thing", id="1"), "never"])
        runner = Runner(LlmAgent("assistant", model, tools=[toolset]))
        session_id, events = await start(runner, "go")
        (first,) = events[-1].pending
        pasted = AuthCredential.bearer(LEAKY + "\n")
        resumed = await collect(
            runner.resume(
                user_id="u", session_id=session_id, credentials={first.function_call_id: pasted}
            )
        )
        await toolset.shutdown()
    (second,) = resumed[-1].pending
    assert isinstance(second, CredentialRequest)
    assert second.auth_config.scheme_name == "bearer"
    assert server.requests == []
    assert LEAKY not in repr(resumed)
    (warned,) = [r for r in debug_logs.records if r.levelno == logging.WARNING]
    assert "control character" in warned.getMessage()
    for record in debug_logs.records:
        assert LEAKY not in record.getMessage()


async def test_a_token_endpoint_quoting_the_secret_does_not_put_it_in_the_error(
    debug_logs: pytest.LogCaptureFixture,
) -> None:
    with oauth_server() as server:
        server.quote_secret = True
        for method in ("client_secret_basic", "client_secret_post"):
            given = ClientCredentials(
                client_id=CLIENT_ID, client_secret=LEAKY + "/+=", auth_method=method
            )
            async with OpenApiToolset(
                spec([{"machine": []}]), base_url=server.url, credentials={"machine": given}
            ) as ts:
                tool = await ts.get_tool("get_thing")
                with pytest.raises(AuthError) as caught:
                    await tool.run({"id": "1"}, ToolContext())
            assert "is not valid for this client" in str(caught.value)
            assert_hidden(LEAKY, caught.value, debug_logs)


def shown(value: object, depth: int = 3) -> str:
    """What a debugger or an error tracker prints of an object: its repr and its fields'
    (and theirs, a few levels down)."""
    text = repr(value)
    fields = getattr(value, "__dict__", None)
    if not isinstance(fields, dict) or depth == 0:
        return text
    inner = [*fields.values()]
    inner += [
        v
        for f in fields.values()
        if isinstance(f, dict | list | tuple | set)
        for v in (f.values() if isinstance(f, dict) else f)
    ]
    return text + repr(fields) + "".join(shown(v, depth - 1) for v in inner)


async def test_no_repr_or_vars_shows_a_credential() -> None:
    from toolsets.models import OpenAIChatModel

    secrets = {
        "header_key": "hk-SECRET",
        "query_key": "qk-SECRET",
        "basic": AuthCredential.basic("ann", "pw-SECRET"),
        "bearer": AuthCredential.oauth2("at-SECRET", refresh_token="rt-SECRET"),
        "machine": ClientCredentials(client_id=CLIENT_ID, client_secret=CLIENT_SECRET),
    }
    with oauth_server() as server:
        async with OpenApiToolset(
            spec([{key: [] for key in secrets}]), base_url=server.url, credentials=secrets
        ) as ts:
            tool = await ts.get_tool("get_thing")
            await tool.run({"id": "1"}, ToolContext())
            objects: list[object] = [
                ts,
                tool,
                *(v for v in secrets.values() if not isinstance(v, str)),
            ]
            flow = AuthorizationCodeFlow(
                AuthConfig(scheme_name="user", scheme=SCHEMES["user"]),
                client_id=CLIENT_ID,
                client_secret=CLIENT_SECRET,
                redirect_uri="http://127.0.0.1/cb",
            )
            objects.append(flow)
            objects.append(OpenAIChatModel("m", api_key="sk-SECRET", base_url=server.url))
            for value in objects:
                text = shown(value)
                assert "SECRET" not in text, text
                assert CLIENT_SECRET not in text, text
            await flow.aclose()


@pytest.mark.parametrize("status", [200, 401])
@pytest.mark.parametrize(
    ("scheme", "credential", "quoted"),
    [
        ("header_key", SECRET, SECRET),
        ("query_key", SECRET, "k3y-v%40lue%2F%2B%3D"),
        ("bearer", AuthCredential.bearer(LEAKY), LEAKY),
        ("basic", "ann:" + LEAKY, LEAKY),
        ("basic", "ann:" + LEAKY, base64.b64encode(f"ann:{LEAKY}".encode()).decode()),
    ],
)
async def test_a_credential_the_api_quotes_back_is_masked_in_the_result(
    scheme: str, credential: Any, quoted: str, status: int
) -> None:
    async with recording_server() as server:
        server.status = status
        server.body = {"message": f"bad credential {quoted!r}", "echo": [quoted]}
        async with OpenApiToolset(
            spec([{scheme: []}]), base_url=server.url, credentials={scheme: credential}
        ) as ts:
            tool = await ts.get_tool("get_thing")
            result = await tool.run({"id": "1"}, ToolContext())
    assert quoted not in repr(result)
    assert "**********" in repr(result)
