"""``toolsets serve``'s authorization: ``--auth-issuer`` (with ``--required-scope``,
``--audience``, ...) makes the served HTTP server a resource server of a real OpenID
provider; beyond this machine, serving without it is refused in one line unless
``--no-auth`` says so; ``--print-config`` says what a client needs."""

from __future__ import annotations

import httpx2
import pytest

from tests.cli.helpers import TIMEOUT, error_line, toolsets_command
from tests.cli.test_serve import Served
from tests.helpers import ROOT
from tests.mcp.server.oidc import OpenIdProvider
from tests.mcp.server_helpers import INITIALIZE

SPEC = str(ROOT / "fixtures" / "openapi" / "bookshop.yaml")
ACCEPT = {"Accept": "application/json, text/event-stream"}


def test_serving_beyond_this_machine_needs_an_issuer_or_no_auth_said_in_one_line() -> None:
    beyond = ("serve", SPEC, "--http", "0.0.0.0:8000", "--allowed-host", "mcp.example.com")
    line = error_line(toolsets_command(*beyond))
    assert "without authorization" in line
    assert "--auth-issuer URL" in line
    assert "--no-auth" in line


def test_no_auth_serves_beyond_this_machine_on_purpose() -> None:
    beyond = ("serve", SPEC, "--http", "0.0.0.0:8123", "--allowed-host", "mcp.example.com")
    done = toolsets_command(*beyond, "--no-auth", "--print-config")
    assert done.returncode == 0, done.stderr
    assert "access token" not in done.stderr


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--auth-issuer", "https://login.example.com"), "are for --http"),
        (("--no-auth",), "are for --http"),
        (("--http", "127.0.0.1:1", "--required-scope", "a"), "--required-scope: for --auth-issuer"),
        (
            ("--http", "127.0.0.1:1", "--auth-issuer", "https://a.example", "--no-auth"),
            "cannot go together",
        ),
        (("--http", "127.0.0.1:1", "--auth-issuer", "login.example.com"), "absolute http(s) URL"),
        (
            (
                "--http",
                "127.0.0.1:1",
                "--auth-issuer",
                "https://a.example",
                "--introspection-client",
                "rs",
            ),
            "TOOLSETS_INTROSPECTION_SECRET",
        ),
    ],
)
def test_authorization_options_that_cannot_work_are_refused_in_one_line(
    args: tuple[str, ...], said: str
) -> None:
    assert said in error_line(toolsets_command("serve", SPEC, *args))


def test_print_config_says_what_a_client_needs_to_get_a_token() -> None:
    done = toolsets_command(
        "serve",
        SPEC,
        "--http",
        "127.0.0.1:8123",
        "--auth-issuer",
        "https://login.example.com/realms/tools",
        "--required-scope",
        "tools:call",
        "--print-config",
    )
    assert done.returncode == 0, done.stderr
    note = done.stderr
    assert "issuer https://login.example.com/realms/tools" in note
    assert "resource http://127.0.0.1:8123/mcp" in note
    assert "http://127.0.0.1:8123/.well-known/oauth-protected-resource/mcp" in note
    assert "scopes tools:call" in note


@pytest.mark.anyio
async def test_a_served_spec_with_an_issuer_answers_a_token_and_refuses_none(
    openid_provider: OpenIdProvider,
) -> None:
    served = Served(
        SPEC,
        "--auth-issuer",
        openid_provider.issuer,
        "--required-scope",
        "tools:call",
        cwd=ROOT,
    )
    served.start()
    try:
        token = await openid_provider.token(served.url)
        async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
            refused = await http.post(served.url, json=INITIALIZE, headers=ACCEPT)
            headers = {**ACCEPT, "Authorization": f"Bearer {token}"}
            answered = await http.post(served.url, json=INITIALIZE, headers=headers)
            metadata = await http.get(
                served.url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")
            )
    finally:
        served.stop()
    assert refused.status_code == 401
    assert "resource_metadata=" in refused.headers["www-authenticate"]
    assert answered.status_code == 200, answered.text
    assert metadata.json()["authorization_servers"] == [openid_provider.issuer]
