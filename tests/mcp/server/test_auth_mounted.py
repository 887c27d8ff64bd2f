"""`McpServer` as a resource server mounted under a path prefix of a bigger app (a
Starlette ``Mount``), against a real OpenID provider: the 401 names metadata that
answers, and the `mcp` SDK's OAuth client discovers the issuer and calls with no route
written by hand."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import anyio
import httpx2
import jwt
import pytest
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Mount, Route

from tests.helpers import serve_app
from tests.mcp.client.conformance_client import MemoryStorage
from tests.mcp.server.auth_helpers import (
    REDIRECT_URI,
    Served,
    call,
    challenge,
    protected,
    result_of,
    sdk_oauth,
)
from tests.mcp.server.oidc import Login, OpenIdProvider
from toolsets import Invocation, ToolContext
from toolsets.mcp import McpServer, McpToolset, OAuthResourceServer, StreamableHttp

pytestmark = pytest.mark.anyio


@dataclass
class Mounted:
    """Two protected servers mounted in one bigger app on 127.0.0.1: at ``/tools`` with
    its metadata route added at the app's root, at ``/bare`` with nothing added."""

    tools: Served
    bare: Served


@pytest.fixture(scope="module")
def mounted(openid_provider: OpenIdProvider) -> Iterator[Mounted]:
    ran: list[Invocation] = []
    tools, bare = protected(openid_provider, ran), protected(openid_provider, ran)

    def app() -> Starlette:
        apps = tools.http_app(), bare.http_app()

        @contextlib.asynccontextmanager
        async def lifespan(_: Starlette) -> AsyncIterator[None]:
            async with contextlib.AsyncExitStack() as stack:
                for each in apps:
                    await stack.enter_async_context(each.router.lifespan_context(each))
                yield

        async def home(_: Any) -> PlainTextResponse:
            return PlainTextResponse("the bigger app")

        routes = [
            Route("/", home),
            *tools.metadata_routes("/tools"),
            Mount("/tools", app=apps[0]),
            Mount("/bare", app=apps[1]),
        ]
        return Starlette(routes=routes, lifespan=lifespan)

    with serve_app(app, factory=True) as port:
        root = f"http://127.0.0.1:{port}"
        config = tools.auth
        assert isinstance(config, OAuthResourceServer)
        yield Mounted(
            Served(f"{root}/tools/mcp", config, ran), Served(f"{root}/bare/mcp", config, ran)
        )


@pytest.mark.parametrize("where", ["tools", "bare"])
async def test_a_mounted_servers_401_names_metadata_that_answers_for_the_mounted_url(
    mounted: Mounted, openid_provider: OpenIdProvider, where: str
) -> None:
    served: Served = getattr(mounted, where)
    response = await call(served.url)
    assert response.status_code == 401
    named = challenge(response)["resource_metadata"]
    async with httpx2.AsyncClient(timeout=20) as http:
        answer = await http.get(named)
    assert answer.status_code == 200, named
    assert answer.json()["resource"] == served.url
    assert answer.json()["authorization_servers"] == [openid_provider.issuer]


async def test_the_routes_added_at_the_root_answer_rfc_9728s_form_for_the_mounted_url(
    mounted: Mounted,
) -> None:
    root = mounted.tools.url.removesuffix("/tools/mcp")
    async with httpx2.AsyncClient(timeout=20) as http:
        answer = await http.get(f"{root}/.well-known/oauth-protected-resource/tools/mcp")
        home = await http.get(root + "/")
    assert answer.status_code == 200
    assert answer.json()["resource"] == mounted.tools.url
    assert home.text == "the bigger app"  # the bigger app's own routes are its own


async def test_a_token_for_the_mounted_url_calls_and_one_for_the_host_root_is_refused(
    mounted: Mounted, openid_provider: OpenIdProvider
) -> None:
    url = mounted.tools.url
    token = await openid_provider.token(url)
    response = await call(url, token)
    assert response.status_code == 200, response.text
    assert result_of(response)["structuredContent"]["subject"] == "service"
    elsewhere = await openid_provider.token(url.replace("/tools/mcp", "/mcp"))
    refused = await call(url, elsewhere)
    assert refused.status_code == 401
    assert challenge(refused)["error"] == "invalid_token"


@pytest.mark.parametrize("where", ["tools", "bare"])
async def test_the_sdk_oauth_client_discovers_the_issuer_of_a_mounted_server_and_calls(
    mounted: Mounted, where: str
) -> None:
    url = getattr(mounted, where).url
    login = Login(REDIRECT_URI, user="alice")
    storage = MemoryStorage()
    oauth = sdk_oauth(url, login, storage)
    with anyio.fail_after(30):
        async with McpToolset(StreamableHttp(url=url, auth=oauth)) as toolset:
            [whoami] = await toolset.list_tools(ToolContext())
            answer = await whoami.run({}, ToolContext())
    assert login.pages == ["login", "consent"]
    assert storage.client_info is not None
    assert answer == {"subject": "alice", "client": storage.client_info.client_id}
    assert storage.tokens is not None
    claims = jwt.decode(storage.tokens.access_token, options={"verify_signature": False})
    assert claims["aud"] == url


def test_metadata_routes_need_a_resource_server_and_paths() -> None:
    with pytest.raises(ValueError, match="not a resource server"):
        McpServer([]).metadata_routes("/tools")
    server = McpServer([], auth=OAuthResourceServer(issuer="https://login.example"))
    for mount in ("tools", "/tools/", ""):
        with pytest.raises(ValueError, match="mount must be a path"):
            server.metadata_routes(mount)
    [route] = server.metadata_routes("/tools", "/rpc")
    assert route.path == "/.well-known/oauth-protected-resource/tools/rpc"


async def test_a_mounted_server_with_its_resource_given_names_the_metadata_under_that_url(
    openid_provider: OpenIdProvider,
) -> None:
    resource = "https://tools.example.com/tools/mcp"
    server = protected(openid_provider, [], resource=resource)
    mcp_app = server.http_app()
    app = Starlette(routes=[Mount("/tools", app=mcp_app)])
    async with mcp_app.router.lifespan_context(mcp_app):
        transport = httpx2.ASGITransport(app=app)
        async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
            refused = await http.post("/tools/mcp", json={})
            metadata = await http.get("/tools/.well-known/oauth-protected-resource/mcp")
    named = challenge(refused)["resource_metadata"]
    assert named == "https://tools.example.com/tools/.well-known/oauth-protected-resource/mcp"
    assert metadata.json()["resource"] == resource
