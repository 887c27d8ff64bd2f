"""``/healthz`` and ``/readyz`` of `McpServer`'s HTTP app: live while serving, ready once
its lifespan started (the toolset entered), answered before the Host, Origin and
authorization checks (a load balancer sends no token), revealing nothing else."""

from __future__ import annotations

import signal
from collections.abc import Iterator

import anyio
import httpx2
import pytest

from tests.helpers import serve_app
from tests.mcp.server.auth_helpers import serving
from tests.mcp.server.oidc import OpenIdProvider
from tests.mcp.server_helpers import ACCEPT, BASE, INITIALIZE, served
from toolsets.mcp import McpServer
from toolsets.mcp.server._draining import DrainingServer
from toolsets.mcp.server._limits import ConnectionLimits
from toolsets.mcp.server._uvicorn import BoundedConfig

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    """A server on 127.0.0.1 (uvicorn, its lifespan run): its base URL."""
    with serve_app(lambda: McpServer([served.add]).http_app(), factory=True) as port:
        yield f"http://127.0.0.1:{port}"


async def get(url: str, path: str, **options: object) -> httpx2.Response:
    with anyio.fail_after(20):
        async with httpx2.AsyncClient() as http:
            return await http.request(options.pop("method", "GET"), url + path, **options)  # type: ignore[arg-type]


async def test_a_started_server_is_live_and_ready(url: str) -> None:
    live, ready = await get(url, "/healthz"), await get(url, "/readyz")
    assert (live.status_code, live.text) == (200, "ok\n")
    assert (ready.status_code, ready.text) == (200, "ready\n")
    assert ready.headers["cache-control"] == "no-store"


async def test_an_app_whose_lifespan_has_not_started_is_live_but_not_ready() -> None:
    app = McpServer([served.add]).http_app()
    transport = httpx2.ASGITransport(app=app)  # the lifespan never runs
    async with httpx2.AsyncClient(transport=transport, base_url=BASE) as http:
        live, ready = await http.get("/healthz"), await http.get("/readyz")
    assert live.status_code == 200
    assert (ready.status_code, ready.text) == (503, "starting\n")


async def test_the_checks_answer_whatever_the_host_and_origin(url: str) -> None:
    headers = {"Host": "evil.example", "Origin": "http://evil.example"}
    assert (await get(url, "/readyz", headers=headers)).status_code == 200
    refused = await get(url, "/mcp", method="POST", json=INITIALIZE, headers={**ACCEPT, **headers})
    assert refused.status_code in (403, 421)  # the MCP endpoint still refuses them


async def test_only_get_and_head_are_answered(url: str) -> None:
    posted = await get(url, "/healthz", method="POST", content=b"{}")
    assert posted.status_code == 405
    assert posted.headers["allow"] == "GET, HEAD"
    head = await get(url, "/readyz", method="HEAD")
    assert (head.status_code, head.content) == (200, b"")


async def test_a_protected_server_answers_them_without_a_token(
    openid_provider: OpenIdProvider,
) -> None:
    with serving(openid_provider) as protected:
        base = protected.url.removesuffix("/mcp")
        live, ready = await get(base, "/healthz"), await get(base, "/readyz")
        mcp = await get(base, "/mcp", method="POST", json=INITIALIZE, headers=ACCEPT)
    assert (live.status_code, ready.status_code) == (200, 200)
    assert mcp.status_code == 401
    assert "www-authenticate" not in live.headers


@pytest.fixture
def sse_status() -> Iterator[None]:
    """sse-starlette's process-wide shutdown flags put back as they were: told to stop,
    the server turns its automatic draining off until its shutdown (which this test does
    not reach), and while it is off or ``should_exit`` set, the SSE answers of the later
    tests' servers in this process would not end, or end at once."""
    from sse_starlette.sse import AppStatus

    drains, exiting = AppStatus.enable_automatic_graceful_drain, AppStatus.should_exit
    yield
    AppStatus.enable_automatic_graceful_drain, AppStatus.should_exit = drains, exiting


@pytest.mark.usefixtures("sse_status")
async def test_told_to_stop_a_server_says_it_is_not_ready_before_anything_else() -> None:
    app = McpServer([served.add]).http_app()
    readiness = app.state.readiness
    readiness.started = True  # as its lifespan's start-up leaves it
    server = DrainingServer(BoundedConfig(app, limits=ConnectionLimits()), readiness)
    server.handle_exit(signal.SIGTERM, None)
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=BASE) as http:
        ready = await http.get("/readyz")
    assert server.should_exit
    assert (ready.status_code, ready.text) == (503, "shutting down\n")


@pytest.mark.usefixtures("sse_status")
async def test_a_server_not_given_the_readiness_finds_it_under_the_middleware_uvicorn_added() -> (
    None
):
    # A worker process's server is made before its app (built from the factory once the
    # worker starts): the readiness is the loaded app's, under uvicorn's wrappers.
    app = McpServer([served.add]).http_app()
    app.state.readiness.started = True
    config = BoundedConfig(app, limits=ConnectionLimits(), proxy_headers=True)
    config.load()
    assert config.loaded_app is not app  # wrapped (ProxyHeadersMiddleware)
    server = DrainingServer(config)
    server.handle_exit(signal.SIGTERM, None)
    assert server.readiness is app.state.readiness
    assert app.state.readiness.state == "shutting down"
