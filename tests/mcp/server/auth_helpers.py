"""What the tests of the served side's authorization share: a protected server whose
tool records who called (`protected`, `Served`), a 2026-07-28 call POSTed with a token,
and the parts of the answers."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx2
import pytest
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.shared.auth import OAuthClientMetadata
from pydantic import AnyUrl

from tests.helpers import serve_app
from tests.mcp.server.oidc import SECRETS, Login, OpenIdProvider
from toolsets import Invocation, ToolContext, tool
from toolsets.mcp import Introspection, McpServer, OAuthResourceServer

ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
MODERN = "2026-07-28"
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}
KEPT_CLAIMS = ("email", "groups", "roles")


@dataclass
class Served:
    """A protected server on 127.0.0.1 and what its tool saw."""

    url: str
    config: OAuthResourceServer
    ran: list[Invocation] = field(default_factory=list)

    @property
    def metadata_url(self) -> str:
        return self.url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")


def protected(provider: OpenIdProvider, ran: list[Invocation], **options: Any) -> McpServer:
    @tool
    def whoami(ctx: ToolContext) -> dict[str, Any]:
        """Who is calling, as the server knows."""
        ran.append(ctx.invocation)
        identity = ctx.identity
        assert identity is not None
        return {"subject": identity.subject, "client": identity.client_id}

    config = {
        "issuer": provider.issuer,
        "required_scopes": ["tools:call"],
        "claims": KEPT_CLAIMS,
        "refresh_interval": 0,
        "introspection": Introspection(
            client_id="resource-server", client_secret=SECRETS["resource-server"]
        ),
        **options,
    }
    return McpServer([whoami], name="guarded", auth=OAuthResourceServer(**config))


@contextmanager
def serving(provider: OpenIdProvider, **options: Any) -> Iterator[Served]:
    """A `protected` server (``options`` for its `OAuthResourceServer`) served by uvicorn
    on 127.0.0.1 in a thread."""
    ran: list[Invocation] = []
    server = protected(provider, ran, **options)
    assert isinstance(server.auth, OAuthResourceServer)
    with serve_app(server.http_app, factory=True) as port:
        yield Served(f"http://127.0.0.1:{port}/mcp", server.auth, ran)


REDIRECT_URI = "http://127.0.0.1:9/callback"
"""Where the provider sends the browser back (nothing serves it: `Login` reads the code)."""


def sdk_oauth(url: str, login: Login, storage: TokenStorage) -> OAuthClientProvider:
    """The `mcp` SDK's OAuth client for the server at ``url``: it discovers the issuer,
    registers itself and logs ``login``'s user in (authorization code with PKCE)."""
    return OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            client_name="toolsets tests",
            redirect_uris=[AnyUrl(REDIRECT_URI)],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
        ),
        storage=storage,
        redirect_handler=login.open,
        callback_handler=login.callback,
    )


def modern_call(name: str = "whoami") -> tuple[dict[str, Any], dict[str, str]]:
    """A 2026-07-28 ``tools/call`` (one POST): its body and headers."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, "arguments": {}, "_meta": ENVELOPE},
    }
    headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": name}
    return body, {**ACCEPT, **headers}


async def call(
    url: str, token: str | None = None, headers: Mapping[str, str] | None = None
) -> httpx2.Response:
    """POST a ``whoami`` call to ``url`` with ``token`` as the bearer, if any."""
    body, sent = modern_call()
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    with anyio.fail_after(20):
        async with httpx2.AsyncClient() as http:
            return await http.post(url, json=body, headers={**sent, **(headers or {})})


def challenge(response: httpx2.Response) -> dict[str, str]:
    """The parameters of a ``WWW-Authenticate: Bearer ...`` answer."""
    scheme, _, rest = response.headers["www-authenticate"].partition(" ")
    assert scheme == "Bearer"
    parameters = {}
    for part in rest.split('", '):
        name, _, value = part.partition("=")
        parameters[name.strip()] = value.strip().strip('"')
    return parameters


def result_of(response: httpx2.Response) -> Any:
    """A JSON-RPC answer's result (JSON or the last event of a stream)."""
    if response.headers["content-type"].startswith("text/event-stream"):
        data = [line[5:] for line in response.text.splitlines() if line.startswith("data:")]
        return json.loads([each for each in data if each.strip()][-1])["result"]
    return response.json()["result"]


def assert_nothing_secret_logged(caplog: pytest.LogCaptureFixture, *tokens: str) -> None:
    """No record at any level holds a token, nor its signature (the part that makes it
    usable) — but the test's own client's line about the request it sent (httpx2 logs
    its URL, where a test may have put a token on purpose)."""
    logged = "\n".join(
        message
        for record in caplog.records
        if not (
            (message := record.getMessage()).startswith("HTTP Request: POST") and "/mcp" in message
        )
    )
    for token in tokens:
        assert token not in logged
        signature = token.rsplit(".", 1)[-1]
        assert not signature or signature not in logged
