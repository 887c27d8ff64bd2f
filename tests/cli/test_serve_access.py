"""``toolsets serve`` as a shared service: ``--access-policy`` (which tools, resources and
prompts each caller may see and use), each user's own credential upstream (``--user-credentials``,
``--token-exchange``; ``--credential`` only as the ``--credential-fallback``), and
``--audit-log``; against the real OpenID provider and a real HTTP server as the API.
Options that cannot work are refused in one line."""

from __future__ import annotations

import json
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client

from tests.cli.helpers import entry_point, environment, error_line, toolsets_command
from tests.cli.test_serve import Served
from tests.mcp.server.oidc import SECRETS, OpenIdProvider
from tests.mcp.server.test_access import ran, upstream
from tests.mcp.server.test_bearer import Gateway, recorded_upstream
from tests.mcp.server.test_bearer_many import TwoGateway, recorded
from tests.mcp.server.test_shared_service import SPEC, calls
from tests.openapi.helpers import recording_server


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the served command, a process of its own, is under test, not this loop


POLICY = "rules:\n  - methods: [DELETE]\n    scopes: [admin]\n"


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    spec = tmp_path / "things.json"
    spec.write_text(json.dumps(SPEC), encoding="utf-8")
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY, encoding="utf-8")
    users = tmp_path / "users.yaml"
    users.write_text("alice:\n  things_auth: alice-api-token\n", encoding="utf-8")
    servers = tmp_path / "servers.json"
    servers.write_text(json.dumps({"mcpServers": CONFIG_SERVERS}), encoding="utf-8")
    return {
        "spec": spec,
        "policy": policy,
        "users": users,
        "audit": tmp_path / "audit.log",
        "servers": servers,
    }


CONFIG_SERVERS = {
    "local": {"command": "python", "args": ["-c", "pass"]},
    "old": {"url": "http://127.0.0.1:1/sse"},
    "notes": {"url": "http://127.0.0.1:1/mcp"},
}
"""An mcpServers file's servers: one started as a process, one over HTTP+SSE, one over
streamable HTTP (none is reached: the command line is refused first)."""


ISSUER = ("--auth-issuer", "https://login.example.com")
LOCAL = ("--http", "127.0.0.1:1")


@pytest.mark.parametrize(
    ("args", "said"),
    [
        ((*LOCAL, "--access-policy", "{policy}"), "--access-policy: for --auth-issuer"),
        ((*LOCAL, "--user-credentials", "{users}"), "--user-credentials: for --auth-issuer"),
        (
            (*LOCAL, *ISSUER, "--user-credentials", "{users}", "--token-exchange", "https://a"),
            "cannot go together",
        ),
        (
            (*LOCAL, *ISSUER, "--token-endpoint", "https://t"),
            "--token-endpoint: for --token-exchange",
        ),
        (
            (*LOCAL, *ISSUER, "--credential-fallback"),
            "--credential-fallback: for --user-credentials",
        ),
        (
            (*LOCAL, *ISSUER, "--user-credentials", "{users}", "--credential", "things_auth=k"),
            "add --credential-fallback",
        ),
        ((*LOCAL, *ISSUER, "--token-exchange", "https://api"), "needs --token-exchange-client"),
        (
            (*LOCAL, *ISSUER, "--token-exchange", "https://api", "--token-exchange-client", "x"),
            "TOOLSETS_TOKEN_EXCHANGE_SECRET",
        ),
        ((*LOCAL, *ISSUER, "--user-credentials", "env:NO_SUCH_VARIABLE"), "not set"),
        (
            (*LOCAL, *ISSUER, "--mcp-url", "http://127.0.0.1:1/mcp", "--user-bearer", "up"),
            "--user-bearer: for --user-credentials or --token-exchange",
        ),
        (
            (*LOCAL, *ISSUER, "--user-credentials", "{users}", "--user-bearer", "up"),
            "--user-bearer up: no HTTP server of an mcpServers file is called so, and no "
            "--mcp-url is given",
        ),
        (
            (
                "{servers}",
                *LOCAL,
                *ISSUER,
                "--user-credentials",
                "{users}",
                "--user-bearer",
                "notez",
            ),
            "--user-bearer notez: no HTTP server of an mcpServers file is called so",
        ),
        (
            (
                "{servers}",
                *LOCAL,
                *ISSUER,
                "--user-credentials",
                "{users}",
                "--user-bearer",
                "local",
            ),
            "--user-bearer local: the server 'local' of",
        ),
        (
            ("{servers}", *LOCAL, *ISSUER, "--user-credentials", "{users}", "--user-bearer", "old"),
            "is reached over HTTP+SSE",
        ),
        (
            (
                *LOCAL,
                *ISSUER,
                "--user-credentials",
                "{users}",
                "--mcp-url",
                "http://127.0.0.1:1/m",
                "--user-bearer",
                "a",
                "--user-bearer",
                "b",
            ),
            "--user-bearer a and b: the --mcp-url servers take one credential name",
        ),
        (
            (*LOCAL, "--token-exchange-audience", "notes=https://n"),
            "--token-exchange-audience: for --auth-issuer",
        ),
        (
            (
                *LOCAL,
                *ISSUER,
                "--token-exchange-audience",
                "a=https://a",
                "--user-bearer",
                "b",
                "--token-exchange-client",
                "gw",
            ),
            "--user-bearer b: no audience to exchange each caller's token for",
        ),
        (
            (*LOCAL, *ISSUER, "--token-exchange-audience", "notes"),
            "--token-exchange-audience takes NAME=AUDIENCE",
        ),
        (
            (
                *LOCAL,
                *ISSUER,
                "--token-exchange-audience",
                "a=https://a",
                "--token-exchange-audience",
                "a=https://b",
            ),
            "--token-exchange-audience names 'a' twice",
        ),
        (
            (
                *LOCAL,
                *ISSUER,
                "--user-credentials",
                "{users}",
                "--token-exchange-audience",
                "a=https://a",
            ),
            "cannot go together",
        ),
    ],
)
def test_shared_service_options_that_cannot_work_are_refused_in_one_line(
    files: dict[str, Path], args: tuple[str, ...], said: str
) -> None:
    given = [arg.format(**{k: str(v) for k, v in files.items()}) for arg in args]
    assert said in error_line(toolsets_command("serve", str(files["spec"]), *given))


def test_a_policy_file_with_a_mistake_is_one_line_naming_its_key_and_line(
    files: dict[str, Path],
) -> None:
    files["policy"].write_text("rules:\n  - method: [DELETE]\n", encoding="utf-8")
    line = error_line(
        toolsets_command(
            "serve", str(files["spec"]), *LOCAL, *ISSUER, "--access-policy", str(files["policy"])
        )
    )
    assert "line 2" in line
    assert "rules.0.method" in line
    assert "did you mean 'methods'?" in line


class ServedWith(Served):
    """`Served`, with more in its environment."""

    def __init__(self, *args: str, cwd: Path, env: dict[str, str]) -> None:
        super().__init__(*args, cwd=cwd)
        self.env = env

    def command(self) -> tuple[list[str], dict[str, str]]:
        listen = f"127.0.0.1:{self.port}"
        return [*entry_point(), "serve", *self.args, "--http", listen], environment(self.env)


def serve_things(
    files: dict[str, Path], api_url: str, issuer: str, *more: str, env: dict[str, str]
) -> ServedWith:
    """``toolsets serve`` of the things spec for the API at ``api_url``, protected by
    ``issuer``, with ``more`` options, started."""
    served = ServedWith(
        str(files["spec"]),
        "--base-url",
        api_url,
        "--confirm",
        "never",
        "--auth-issuer",
        issuer,
        *more,
        cwd=files["spec"].parent,
        env=env,
    )
    served.start()
    return served


def user_token(provider: OpenIdProvider, url: str, subject: str, scope: str) -> str:
    return provider.sign({"sub": subject, "aud": url, "scope": scope, "client_id": "agent"})


@pytest.mark.anyio
async def test_a_served_spec_with_a_policy_and_token_exchange_sends_each_user_as_themselves(
    files: dict[str, Path], openid_provider: OpenIdProvider
) -> None:
    async with recording_server() as api:
        served = serve_things(
            files,
            api.url,
            openid_provider.issuer,
            "--access-policy",
            str(files["policy"]),
            "--token-exchange",
            api.url,
            "--token-exchange-client",
            "exchanger",
            "--audit-log",
            str(files["audit"]),
            env={"TOOLSETS_TOKEN_EXCHANGE_SECRET": SECRETS["exchanger"]},
        )
        try:
            alice = user_token(openid_provider, served.url, "alice", "tools:call")
            bob = user_token(openid_provider, served.url, "bob", "tools:call admin")
            alice_offered, alice_results = await calls(
                served.url, alice, ("delete_thing", {"id": "1"})
            )
            bob_offered, bob_results = await calls(served.url, bob, ("delete_thing", {"id": "2"}))
        finally:
            served.stop()
    assert alice_offered == ["get_thing"]
    assert alice_results[0]["missing_scopes"] == ["admin"]
    assert bob_offered == ["delete_thing", "get_thing"]
    assert bob_results == [{"ok": True}]
    [request] = api.requests
    assert request.path == "/things/2"
    sent = request.headers["authorization"]
    assert sent.startswith("Bearer ")
    assert bob not in sent
    assert bob.encode() not in request.head + request.body
    audit = [json.loads(line) for line in files["audit"].read_text().splitlines()]
    assert [(a["subject"], a["tool"], a["outcome"]) for a in audit] == [
        ("alice", "delete_thing", "refused"),
        ("bob", "delete_thing", "ok"),
    ]
    assert all("time" in a and a["duration_ms"] >= 0 for a in audit)


@pytest.mark.anyio
async def test_user_credentials_from_a_file_and_the_fallback_given_on_purpose(
    files: dict[str, Path], openid_provider: OpenIdProvider
) -> None:
    async with recording_server() as api:
        results: dict[str, Any] = {}
        for label, more in (
            ("without", ()),
            ("with", ("--credential", "things_auth=shared-token", "--credential-fallback")),
        ):
            served = serve_things(
                files,
                api.url,
                openid_provider.issuer,
                "--user-credentials",
                str(files["users"]),
                *more,
                env={},
            )
            try:
                for subject in ("alice", "mallory"):
                    token = user_token(openid_provider, served.url, subject, "tools:call")
                    _, [result] = await calls(served.url, token, ("get_thing", {"id": "1"}))
                    results[f"{label} {subject}"] = result
            finally:
                served.stop()
    assert results["without alice"] == {"ok": True}
    assert results["without mallory"]["credential"] == "things_auth"
    assert results["with alice"] == {"ok": True}
    assert results["with mallory"] == {"ok": True}
    sent = [r.headers["authorization"] for r in api.requests]
    assert sent == ["Bearer alice-api-token", "Bearer alice-api-token", "Bearer shared-token"]


@pytest.mark.anyio
@pytest.mark.parametrize("workers", [(), ("--workers", "2", "--stateless")])
async def test_a_served_gateway_with_user_bearer_calls_the_upstream_mcp_server_as_each_user(
    files: dict[str, Path], openid_provider: OpenIdProvider, workers: tuple[str, ...]
) -> None:
    with recorded_upstream() as (upstream_url, recorder):
        served = ServedWith(
            "--mcp-url",
            upstream_url,
            "--auth-issuer",
            openid_provider.issuer,
            "--token-exchange",
            upstream_url,
            "--token-exchange-client",
            "exchanger",
            "--user-bearer",
            "upstream",
            "--confirm",
            "never",
            *workers,
            cwd=files["spec"].parent,
            env={"TOOLSETS_TOKEN_EXCHANGE_SECRET": SECRETS["exchanger"]},
        )
        served.start()
        try:
            gateway = Gateway(served.url, upstream_url, recorder, openid_provider)
            seen = {}
            for subject in ("alice", "bob"):
                recorder.seen.clear()
                token = user_token(openid_provider, served.url, subject, "tools:call")
                offered, [result] = await calls(served.url, token, ("whoami", {}))
                assert offered == ["whoami"]
                assert result is None  # answered "hello", as text (not an error object)
                seen[subject] = gateway.upstream_subjects()
                assert not any(token in str(header) for header in recorder.seen)
        finally:
            served.stop()
    assert {subject: set(subjects) for subject, subjects in seen.items()} == {
        "alice": {"alice"},
        "bob": {"bob"},
    }


@pytest.mark.anyio
async def test_user_bearer_names_servers_of_an_mcpservers_file_each_exchanged_for_its_audience(
    files: dict[str, Path], openid_provider: OpenIdProvider
) -> None:
    static = "Bearer the-servers-own-token-for-c-0123456789"
    with ExitStack() as stack:
        up = {name: stack.enter_context(recorded(name)) for name in ("a", "b", "c")}
        config = {name: {"url": each.url} for name, each in up.items()}
        config["c"]["headers"] = {"Authorization": static}
        files["servers"].write_text(json.dumps({"mcpServers": config}), encoding="utf-8")
        served = ServedWith(
            str(files["servers"]),
            *("--auth-issuer", openid_provider.issuer, "--token-exchange-client", "exchanger"),
            *("--token-exchange-audience", f"a={up['a'].url}"),
            *("--token-exchange-audience", f"b={up['b'].url}"),
            *("--user-bearer", "a", "--user-bearer", "b", "--confirm", "never"),
            cwd=files["spec"].parent,
            env={"TOOLSETS_TOKEN_EXCHANGE_SECRET": SECRETS["exchanger"]},
        )
        served.start()
        try:
            tokens = {
                who: user_token(openid_provider, served.url, who, "tools:call")
                for who in ("alice", "bob")
            }
            for token in tokens.values():
                called = [(f"{name}_{name}_whoami", {}) for name in up]
                offered, results = await calls(served.url, token, *called)
                assert offered == ["a_a_whoami", "b_b_whoami", "c_c_whoami"]
                assert results == [None, None, None]  # each answered its text
        finally:
            served.stop()
        gateway = TwoGateway(served.url, up, openid_provider)
        seen = {name: set(gateway.audiences(name)) for name in ("a", "b")}
    # a and b: each user's own token, exchanged for that server's audience; c: its own
    # header from the file. Never a client's token.
    assert seen == {name: {("alice", up[name].url), ("bob", up[name].url)} for name in ("a", "b")}
    assert set(up["c"].recorder.seen) == {static}
    for each in up.values():
        for header in each.recorder.seen:
            assert not any(token in str(header) for token in tokens.values())


def test_print_config_tells_where_each_callers_token_for_each_user_bearer_server_comes_from(
    files: dict[str, Path],
) -> None:
    done = toolsets_command(
        "serve",
        str(files["servers"]),
        *(*LOCAL, *ISSUER, "--token-exchange", "https://default", "--print-config"),
        *("--token-exchange-client", "gw", "--user-bearer", "notes", "--user-bearer", "other"),
        *("--token-exchange-audience", "notes=https://notes.example.com/mcp"),
        env={"TOOLSETS_TOKEN_EXCHANGE_SECRET": "s3cret-not-printed"},
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["mcpServers"]  # what the client needs, as before
    assert (
        "upstream, each caller's own bearer token: notes (exchanged for the audience "
        "https://notes.example.com/mcp); other (exchanged for the audience https://default)"
    ) in done.stderr
    assert "s3cret" not in done.stdout + done.stderr


def test_the_shared_service_settings_reach_worker_processes_as_they_were_given(
    files: dict[str, Path],
) -> None:
    from toolsets.cli._serve import ServerOptions

    access = {
        "policy": str(files["policy"]),
        "users": str(files["users"]),
        "fallback": True,
        "audit": "-",
    }
    server = ServerOptions(name="things", access=access)
    assert ServerOptions.from_plain(json.loads(json.dumps(server.plain()))) == server


@pytest.mark.anyio
async def test_the_claims_a_policy_reads_are_kept_without_naming_them_again(
    files: dict[str, Path], openid_provider: OpenIdProvider
) -> None:
    files["policy"].write_text(
        "rules:\n  - {tools: [get_*], roles: [reader]}\n  - {tools: [delete_*], groups: [ops]}\n",
        encoding="utf-8",
    )
    async with recording_server() as api:
        served = serve_things(
            files, api.url, openid_provider.issuer, "--access-policy", str(files["policy"]), env={}
        )
        try:
            token = await openid_provider.token(served.url)  # the client "service": roles reader
            offered, _ = await calls(served.url, token)
        finally:
            served.stop()
    assert offered == ["get_thing"]


GATEWAY_POLICY = """\
rules:
  - resources: ["file:///reports/*", "users://{id}/profile"]
    scopes: [reports:read]
  - prompts: ["admin_*"]
    roles: [admin]
"""


@pytest.mark.anyio
async def test_a_policy_files_resource_and_prompt_rules_guard_a_served_gateway(
    files: dict[str, Path], openid_provider: OpenIdProvider
) -> None:
    files["policy"].write_text(GATEWAY_POLICY, encoding="utf-8")
    ran.clear()
    async with upstream() as source:
        served = ServedWith(
            "--mcp-url",
            source.transport.url,  # type: ignore[attr-defined]
            "--auth-issuer",
            openid_provider.issuer,
            "--access-policy",
            str(files["policy"]),
            cwd=files["spec"].parent,
            env={},
        )
        served.start()
        try:
            seen = {}
            for scope in ("tools:call", "tools:call reports:read"):
                token = user_token(openid_provider, served.url, "bob", scope)
                seen[scope] = await listed_as(served.url, token)
        finally:
            served.stop()
    assert seen["tools:call"] == (["file:///readme"], ["hello"], "missing_scopes")
    assert seen["tools:call reports:read"] == (
        ["file:///reports/q1", "file:///readme"],
        ["hello"],  # admin_reset needs the role admin, which bob does not have
        "q1 figures",
    )
    assert ran == ["q1"]  # read once: for the caller holding the scope


async def listed_as(url: str, token: str) -> tuple[list[str], list[str], str]:
    """The resources and prompts the caller of ``token`` is listed, and what reading the
    first quarter's report gives it (its text, or the refusal's field)."""
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx2.AsyncClient(timeout=30, headers=headers) as http:
        transport = streamable_http_client(url, http_client=http)
        async with Client(transport) as client:  # type: ignore[arg-type]
            resources = [str(r.uri) for r in (await client.list_resources()).resources]
            prompts = [p.name for p in (await client.list_prompts()).prompts]
            try:
                read = await client.read_resource("file:///reports/q1")
            except MCPError as exc:
                return resources, prompts, next(k for k in exc.data if k.startswith("missing"))
    return resources, prompts, read.contents[0].text  # type: ignore[union-attr]
