"""The client the MCP conformance suite drives: `McpToolset` through each client scenario.

Run by ``conformance client --command "<python> tests/mcp/client/conformance_client.py"`` (see
tests/mcp/client/test_conformance.py): the suite starts a mock server per scenario, appends its URL
to the command, names the scenario in ``MCP_CONFORMANCE_SCENARIO`` and, for some auth
scenarios, hands over client credentials and keys in ``MCP_CONFORMANCE_CONTEXT`` (JSON).

Every scenario goes through our `McpToolset` (list the tools, call one, answer the server's
questions); the auth scenarios plug one of the SDK's OAuth providers, or our
`WorkloadIdentity`, into ``StreamableHttp(auth=...)``. The suite judges what its server
saw; this script exits 0 when its side ran to the end and 1 with the cause on stderr
otherwise.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Awaitable, Callable, Mapping
from typing import Any
from urllib.parse import parse_qs, urlsplit, urlunsplit

import anyio
import httpx2
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider, OAuthFlowError
from mcp.client.auth.extensions.client_credentials import (
    ClientCredentialsOAuthProvider,
    PrivateKeyJWTOAuthProvider,
    SignedJWTParameters,
)
from mcp.client.auth.extensions.identity_assertion import IdentityAssertionOAuthProvider
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from pydantic import AnyUrl

from toolsets import ToolContext
from toolsets.mcp import McpToolset, StreamableHttp, WorkloadIdentity

logger = logging.getLogger("conformance-client")

SCENARIO_TIMEOUT = 60.0
"""Seconds one scenario may take end to end (the suite is told to wait longer)."""
HTTP_TIMEOUT = 10.0
"""Seconds for each request this script makes itself (authorization, IdP, discovery)."""
REDIRECT_URI = "http://localhost:3000/callback"
"""Where the authorization server sends the browser back; never listened on: the code is
read from the redirect's Location header."""
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"
"""Our client ID metadata document (SEP-991), the URL the CIMD scenario expects."""

TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token"
ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"

Scenario = Callable[[str, httpx2.AsyncClient], Awaitable[None]]


class MemoryStorage:
    """The SDK's `TokenStorage`, in memory: one process, one login."""

    def __init__(self, client_info: OAuthClientInformationFull | None = None) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info = client_info

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


class Browser:
    """Plays the user's browser: opens the authorization URL, and reads the code and state
    from the authorization server's redirect instead of serving the redirect URI."""

    def __init__(self, http: httpx2.AsyncClient) -> None:
        self._http = http
        self._result: AuthorizationCodeResult | None = None

    async def open(self, authorization_url: str) -> None:
        response = await self._http.get(authorization_url, follow_redirects=False)
        location = response.headers.get("location")
        if not response.is_redirect or location is None:
            raise OAuthFlowError(f"authorization gave {response.status_code}, not a redirect")
        query = parse_qs(urlsplit(location).query)
        if "code" not in query:
            raise OAuthFlowError(f"the redirect carries no code: {location}")
        self._result = AuthorizationCodeResult(
            code=query["code"][0],
            state=query.get("state", [None])[0],
            iss=query.get("iss", [None])[0],
        )

    async def callback(self) -> AuthorizationCodeResult:
        result, self._result = self._result, None
        if result is None:
            raise OAuthFlowError("the callback came before any redirect")
        return result


def context() -> dict[str, Any]:
    """What the suite handed over for this scenario (empty when nothing)."""
    raw = os.environ.get("MCP_CONFORMANCE_CONTEXT")
    value: dict[str, Any] = json.loads(raw) if raw else {}
    return value


async def authorization_server(http: httpx2.AsyncClient, url: str) -> str:
    """The issuer the MCP server names in its protected resource metadata (RFC 9728).

    Stands in for configuration: a deployment using client credentials knows which
    authorization server its credentials belong to, and pins it as the provider's
    ``issuer``; the suite only hands over the credentials."""
    parts = urlsplit(url)
    well_known = f"/.well-known/oauth-protected-resource{parts.path.rstrip('/')}"
    response = await http.get(urlunsplit((parts.scheme, parts.netloc, well_known, "", "")))
    response.raise_for_status()
    servers = response.json()["authorization_servers"]
    issuer: str = servers[0]
    return issuer


async def use_server(
    toolset: McpToolset, call: str | None = None, arguments: Mapping[str, Any] | None = None
) -> Any:
    """What an agent does with a server: list its tools, then run one through `McpTool.run`
    (``call``, or the first listed)."""
    async with toolset:
        tools = await toolset.list_tools()
        logger.info("tools: %s", [tool.name for tool in tools])
        name = call if call is not None else (tools[0].name if tools else None)
        if name is None:
            return None
        tool = await toolset.get_tool(name)
        result = await tool.run(dict(arguments or {}), ToolContext(function_call_id="conformance"))
        logger.info("%s answered %r", name, result)
        return result


# --- the scenarios ----------------------------------------------------------------------


async def initialize(url: str, http: httpx2.AsyncClient) -> None:
    await use_server(McpToolset(StreamableHttp(url=url)))


async def tools_call(url: str, http: httpx2.AsyncClient) -> None:
    result = await use_server(McpToolset(StreamableHttp(url=url)), "add_numbers", {"a": 5, "b": 3})
    if "8" not in json.dumps(result):
        raise AssertionError(f"add_numbers(5, 3) gave {result!r}")


async def elicitation_defaults(url: str, http: httpx2.AsyncClient) -> None:
    toolset = McpToolset(StreamableHttp(url=url), elicitation="defaults")
    await use_server(toolset, "test_client_elicitation_defaults")


async def sse_retry(url: str, http: httpx2.AsyncClient) -> None:
    result = await use_server(McpToolset(StreamableHttp(url=url)), "test_reconnection")
    if "successfully" not in json.dumps(result):
        raise AssertionError(f"test_reconnection gave {result!r}")


async def authorization_code(url: str, http: httpx2.AsyncClient) -> None:
    """The default for ``auth/*``: a user logs in through the browser (PKCE); the client
    registers dynamically, or by its metadata URL (CIMD), or was registered beforehand
    (when the suite hands over a client id)."""
    given = context()
    registered = None
    if "client_id" in given:
        secret = given.get("client_secret")
        registered = OAuthClientInformationFull(
            client_id=given["client_id"],
            client_secret=secret,
            redirect_uris=[AnyUrl(REDIRECT_URI)],
            token_endpoint_auth_method="client_secret_basic" if secret else "none",
        )
    browser = Browser(http)
    provider = OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            client_name="toolsets conformance client",
            redirect_uris=[AnyUrl(REDIRECT_URI)],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
        ),
        storage=MemoryStorage(registered),
        redirect_handler=browser.open,
        callback_handler=browser.callback,
        client_metadata_url=CLIENT_METADATA_URL,
    )
    await use_server(McpToolset(StreamableHttp(url=url, auth=provider)))


async def client_credentials_basic(url: str, http: httpx2.AsyncClient) -> None:
    given = context()
    provider = ClientCredentialsOAuthProvider(
        server_url=url,
        storage=MemoryStorage(),
        client_id=given["client_id"],
        client_secret=given["client_secret"],
        token_endpoint_auth_method="client_secret_basic",
        issuer=await authorization_server(http, url),
    )
    await use_server(McpToolset(StreamableHttp(url=url, auth=provider)))


async def client_credentials_jwt(url: str, http: httpx2.AsyncClient) -> None:
    given = context()
    signing = SignedJWTParameters(
        issuer=given["client_id"],
        subject=given["client_id"],
        signing_key=given["private_key_pem"],
        signing_algorithm=given.get("signing_algorithm", "ES256"),
    )
    provider = PrivateKeyJWTOAuthProvider(
        server_url=url,
        storage=MemoryStorage(),
        client_id=given["client_id"],
        assertion_provider=signing.create_assertion_provider(),
        issuer=await authorization_server(http, url),
    )
    await use_server(McpToolset(StreamableHttp(url=url, auth=provider)))


async def cross_app_access(url: str, http: httpx2.AsyncClient) -> None:
    """SEP-990: the enterprise IdP exchanges the user's ID token for an ID-JAG (RFC 8693),
    which the SDK's provider presents to the MCP authorization server (RFC 7523)."""
    given = context()

    async def id_jag(audience: str, resource: str) -> str:
        response = await http.post(
            given["idp_token_endpoint"],
            data={
                "grant_type": TOKEN_EXCHANGE,
                "subject_token": given["idp_id_token"],
                "subject_token_type": ID_TOKEN,
                "requested_token_type": ID_JAG,
                "audience": audience,
                "resource": resource,
                "client_id": given["idp_client_id"],
            },
        )
        response.raise_for_status()
        token: str = response.json()["access_token"]
        return token

    provider = IdentityAssertionOAuthProvider(
        server_url=url,
        storage=MemoryStorage(),
        client_id=given["client_id"],
        client_secret=given["client_secret"],
        issuer=await authorization_server(http, url),
        assertion_provider=id_jag,
        token_endpoint_auth_method="client_secret_basic",
    )
    await use_server(McpToolset(StreamableHttp(url=url, auth=provider)))


async def workload_identity(url: str, http: httpx2.AsyncClient) -> None:
    """SEP-1933: the workload's platform-issued JWT, traded for an access token with the
    JWT bearer grant (RFC 7523); no secret, no registration."""
    given = context()
    auth = WorkloadIdentity(
        issuer=await authorization_server(http, url),
        assertion=given["valid_jwt"],
        client_id=given["client_id"],
    )
    await use_server(McpToolset(StreamableHttp(url=url, auth=auth)))


async def list_and_call(url: str, http: httpx2.AsyncClient) -> None:
    """Scenarios about the wire (headers, request metadata, resources): list the tools,
    then make the calls the suite's context names, or call the first tool."""
    calls = context().get("toolCalls")
    if not calls:
        await use_server(McpToolset(StreamableHttp(url=url)))
        return
    async with McpToolset(StreamableHttp(url=url)) as toolset:
        logger.info("tools: %s", [tool.name for tool in await toolset.list_tools()])
        for call in calls:
            tool = await toolset.get_tool(call["name"])
            arguments = dict(call.get("arguments") or {})
            result = await tool.run(arguments, ToolContext(function_call_id="conformance"))
            logger.info("%s answered %r", call["name"], result)


async def list_only(url: str, http: httpx2.AsyncClient) -> None:
    """The suite checks what the client does with the listed schemas (no dereferencing)."""
    async with McpToolset(StreamableHttp(url=url)) as toolset:
        logger.info("tools: %s", [tool.name for tool in await toolset.list_tools()])


async def schema_preservation(url: str, http: httpx2.AsyncClient) -> None:
    """A JSON Schema 2020-12 input schema reaches the model as the server wrote it: echoed
    back to the server, which compares."""
    async with McpToolset(StreamableHttp(url=url)) as toolset:
        await toolset.list_tools()
        focal = await toolset.get_tool("json_schema_2020_12_tool")
        echo = await toolset.get_tool("json_schema_echo")
        ctx = ToolContext(function_call_id="conformance")
        logger.info("echo answered %r", await echo.run({"schema": focal.parameters}, ctx))


async def request_state(url: str, http: httpx2.AsyncClient) -> None:
    """Multi-round-trip requests (SEP-2322): the server asks for input and the client
    retries with the request state; answered with the elicitation defaults."""
    async with McpToolset(StreamableHttp(url=url), elicitation="defaults") as toolset:
        await toolset.list_tools()
        for name in (
            "test_mrtr_echo_state",
            "test_mrtr_no_state",
            "test_mrtr_unrelated",
            "test_mrtr_no_result_type",
        ):
            tool = await toolset.get_tool(name)
            ctx = ToolContext(function_call_id="conformance")
            logger.info("%s answered %r", name, await tool.run({}, ctx))


async def invalid_tool_headers(url: str, http: httpx2.AsyncClient) -> None:
    """The suite checks which tools the client calls: the valid one, with the argument it
    requires (arguments that do not fit a tool's schema are never sent)."""
    await use_server(McpToolset(StreamableHttp(url=url)), "valid_tool", {"region": "us-east1"})


SCENARIOS: dict[str, Scenario] = {
    "initialize": initialize,
    "tools_call": tools_call,
    "elicitation-sep1034-client-defaults": elicitation_defaults,
    "sse-retry": sse_retry,
    "auth/client-credentials-basic": client_credentials_basic,
    "auth/client-credentials-jwt": client_credentials_jwt,
    "auth/cross-app-access-complete-flow": cross_app_access,  # its name up to 0.1.16
    "auth/enterprise-managed-authorization": cross_app_access,
    "auth/wif-jwt-bearer": workload_identity,
    "json-schema-ref-no-deref": list_only,
    "json-schema-2020-12-preservation": schema_preservation,
    "sep-2322-client-request-state": request_state,
    "http-invalid-tool-headers": invalid_tool_headers,
}


def scenario(name: str) -> Scenario:
    if name in SCENARIOS:
        return SCENARIOS[name]
    if name.startswith("auth/"):
        return authorization_code
    return list_and_call


async def run(name: str, url: str) -> None:
    with anyio.fail_after(SCENARIO_TIMEOUT):
        async with httpx2.AsyncClient(timeout=HTTP_TIMEOUT) as http:
            await scenario(name)(url, http)


def main() -> int:
    logging.basicConfig(
        level=os.environ.get("CONFORMANCE_LOG_LEVEL", "INFO"),
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
        stream=sys.stderr,
    )
    name = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    if len(sys.argv) < 2 or not name:
        sys.stderr.write("usage: MCP_CONFORMANCE_SCENARIO=<name> conformance_client.py <url>\n")
        return 2
    url = sys.argv[-1]
    logger.info("scenario %s against %s", name, url)
    try:
        anyio.run(run, name, url)
    except Exception:  # the script's top-level handler: the cause goes to the suite's log
        logger.exception("scenario %s failed", name)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
