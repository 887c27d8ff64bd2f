"""Logins to MCP servers over HTTP from the command line, against a real OpenID provider
(npm ``oidc-provider``, `tests.mcp.server.oidc`) and an `McpServer` requiring its tokens:
a command run against the server logs in (authorization code with PKCE, the test
playing the browser at the printed address), keeps the login (a file readable by the
user alone), and later processes use it without a browser, refreshed once expired;
a damaged or foreign login file is said and replaced by a fresh login; ``toolsets
logout`` forgets it; a machine logs in with client credentials."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import httpx2
import pytest
from mcp import Client, StdioServerParameters

from tests.cli.helpers import (
    TIMEOUT,
    entry_point,
    environment,
    error_line,
    stdout_json,
    toolsets_command,
    toolsets_process,
)
from tests.mcp.client.login_helpers import log_in_as
from tests.mcp.server.auth_helpers import Served, serving
from tests.mcp.server.oidc import SECRETS, OpenIdProvider
from toolsets.mcp.client._login_store import REFRESH_AHEAD, FileLoginStore

Done = subprocess.CompletedProcess[str]
SHORT_TTL = int(REFRESH_AHEAD) - 10
"""Seconds an access token of `short_lived` lasts: a login read back by a later process
counts as expired at once (`REFRESH_AHEAD`), so that it is refreshed with no wait."""


class ShortLivedProvider(OpenIdProvider):
    """The OpenID provider, its access tokens short-lived."""

    def config(self) -> dict[str, Any]:
        return {**super().config(), "access_token_ttl": SHORT_TTL}


@pytest.fixture(scope="module")
def served(openid_provider: OpenIdProvider) -> Iterator[Served]:
    with serving(openid_provider) as served:
        yield served


@pytest.fixture(scope="module")
def short_lived() -> Iterator[tuple[OpenIdProvider, Served]]:
    provider = ShortLivedProvider()
    provider.start()
    try:
        with serving(provider) as served:
            yield provider, served
    finally:
        provider.stop()


@pytest.fixture
def home(tmp_path: Path) -> dict[str, str]:
    """The environment of a user whose config directory is new (logins in files), with
    no browser to open (no display)."""
    return {
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "TOOLSETS_LOGIN_STORE": "file",
        "DISPLAY": "",
        "WAYLAND_DISPLAY": "",
        "BROWSER": "",
    }


def login_file(home: dict[str, str], url: str) -> Path:
    return FileLoginStore(Path(home["XDG_CONFIG_HOME"]) / "toolsets" / "logins").path(url)


def logged_in(
    *args: str, env: dict[str, str]
) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """``toolsets ARGS`` in a process of its own, logging in: the address it prints is
    opened by `log_in_as`. What it did, and the pages the user answered."""
    process = subprocess.Popen(
        [*entry_point(), *args, "--no-browser"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environment(env),
    )
    assert process.stderr is not None
    said: list[str] = []
    try:
        for line in process.stderr:
            said.append(line)
            if line.startswith("  http"):
                break
        else:
            raise AssertionError(f"no address to log in at: {''.join(said)}")
        assert "open this address in a browser" in said[-2], said
        pages = anyio.run(log_in_as, said[-1].strip())
        out, err = process.communicate(timeout=TIMEOUT)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    done = subprocess.CompletedProcess(process.args, process.returncode, out, "".join(said) + err)
    return done, pages


def kept(home: dict[str, str], url: str) -> dict[str, Any]:
    record: dict[str, Any] = json.loads(login_file(home, url).read_text())
    return record


def assert_no_token_shown(record: dict[str, Any], *runs: subprocess.CompletedProcess[str]) -> None:
    secrets = [record["tokens"]["access_token"], record["tokens"]["refresh_token"]]
    secrets.append(record["client"]["client_secret"])
    for run in runs:
        for secret in secrets:
            assert secret not in run.stdout
            assert secret not in run.stderr


# --- a login that lasts ----------------------------------------------------------------


def test_list_logs_in_at_the_printed_address_and_a_second_process_needs_no_browser(
    served: Served, home: dict[str, str], openid_provider: OpenIdProvider
) -> None:
    first, pages = logged_in("list", "--mcp-url", served.url, "--json", env=home)
    assert pages == ["login", "consent"]
    assert [tool["name"] for tool in stdout_json(first)] == ["whoami"]
    path = login_file(home, served.url)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    record = kept(home, served.url)
    assert record["tokens"]["refresh_token"]

    # A new process: the kept token, no browser, no token request (it has not expired).
    before = openid_provider_state(openid_provider)["token_requests"]
    second = toolsets_process("call", "--mcp-url", served.url, "whoami", "--yes", env=home)
    assert second.returncode == 0, second.stderr
    assert json.loads(second.stdout)["subject"] == "alice"
    assert "log in" not in second.stderr
    assert openid_provider_state(openid_provider)["token_requests"] == before
    assert_no_token_shown(record, first, second)


def test_an_expired_login_is_refreshed_by_a_later_process_without_a_browser(
    short_lived: tuple[OpenIdProvider, Served], home: dict[str, str]
) -> None:
    provider, served = short_lived
    first, _ = logged_in("list", "--mcp-url", served.url, env=home)
    assert first.returncode == 0, first.stderr
    old = kept(home, served.url)
    before = openid_provider_state(provider)["token_requests"]

    second = toolsets_process("list", "--mcp-url", served.url, "--json", "--debug", env=home)
    assert [tool["name"] for tool in stdout_json(second)] == ["whoami"]
    assert "log in" not in second.stderr
    # One request to the token endpoint: the refresh (no login, no second request).
    assert openid_provider_state(provider)["token_requests"] == before + 1
    new = kept(home, served.url)
    assert new["tokens"]["access_token"] != old["tokens"]["access_token"]
    assert new["expires_at"] > old["expires_at"]
    assert_no_token_shown(old, first, second)
    assert_no_token_shown(new, second)


def test_processes_refreshing_one_expired_login_at_once_refresh_it_once(
    served: Served, openid_provider: OpenIdProvider, home: dict[str, str]
) -> None:
    first, _ = logged_in("list", "--mcp-url", served.url, env=home)
    assert first.returncode == 0, first.stderr
    old = {**kept(home, served.url), "expires_at": 0}
    login_file(home, served.url).write_text(json.dumps(old))
    before = openid_provider_state(openid_provider)["token_requests"]

    # Three processes read the expired login and refresh it at once: they take turns,
    # and the later ones use the first one's tokens (never its spent refresh token).
    command = [*entry_point(), "list", "--mcp-url", served.url, "--json"]
    running = [
        subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=environment(home),
        )
        for _ in range(3)
    ]
    done = [process.communicate(timeout=TIMEOUT) for process in running]
    for process, (out, err) in zip(running, done, strict=True):
        assert process.returncode == 0, err
        assert [tool["name"] for tool in json.loads(out)] == ["whoami"]
        assert "log in" not in err
    assert openid_provider_state(openid_provider)["token_requests"] == before + 1
    new = kept(home, served.url)
    assert new["tokens"]["access_token"] != old["tokens"]["access_token"]
    assert stat.S_IMODE(login_file(home, served.url).with_suffix(".lock").stat().st_mode) == 0o600


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        ("damaged", "not JSON: a damaged file"),
        ("foreign", "not a toolsets login record"),
        ("another server's", "the record of another server"),
        ("readable by others", "readable by others"),
    ],
)
def test_a_damaged_or_foreign_login_file_is_said_and_a_fresh_login_replaces_it(
    served: Served, home: dict[str, str], damage: str, said: str
) -> None:
    path = login_file(home, served.url)
    path.parent.mkdir(parents=True, mode=0o700)
    if damage == "damaged":
        path.write_bytes(b'{"format": "toolsets-mcp-login/1", "tok\xff')
    elif damage == "foreign":
        path.write_text(json.dumps({"access_token": "someone else's"}))
    elif damage == "another server's":
        record = {"format": "toolsets-mcp-login/1", "server": "http://127.0.0.1:9/mcp"}
        path.write_text(json.dumps(record))
    else:
        path.write_text(json.dumps({"format": "toolsets-mcp-login/1", "server": served.url}))
    path.chmod(0o644 if damage == "readable by others" else 0o600)

    done, pages = logged_in("list", "--mcp-url", served.url, "--json", env=home)
    assert [tool["name"] for tool in stdout_json(done)] == ["whoami"]
    assert pages == ["login", "consent"]
    [warning] = [line for line in done.stderr.splitlines() if "warning" in line]
    assert warning.startswith(f"toolsets: warning: ignoring the login kept in {path} ({said}")
    assert warning.endswith("logging in anew")
    assert "Traceback" not in done.stderr
    assert kept(home, served.url)["server"] == served.url
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_logout_forgets_the_login_and_the_server_then_asks_for_one_again(
    served: Served, home: dict[str, str]
) -> None:
    done, _ = logged_in("login", "--mcp-url", served.url, env=home)
    assert done.returncode == 0, done.stderr
    path = login_file(home, served.url)
    assert f"logged in to {served.url} (kept in {path.parent})" in done.stderr
    # The commands of MCP servers' items use it too.
    prompts = toolsets_command("prompts", "list", "--http", served.url, "--json", env=home)
    assert stdout_json(prompts) == {"prompts": []}
    assert "log in" not in prompts.stderr
    forgot = toolsets_command("logout", "--mcp-url", served.url, env=home)
    assert forgot.returncode == 0, forgot.stderr
    assert f"forgot the login to {served.url}" in forgot.stderr
    assert not path.exists()
    again = toolsets_command("logout", "--mcp-url", served.url, env=home)
    assert f"no login kept for {served.url}" in again.stderr
    # Told not to log in, the server's refusal is the error.
    line = error_line(toolsets_command("list", "--mcp-url", served.url, "--no-login", env=home))
    assert "HTTP 401" in line


def test_with_nobody_to_log_in_and_no_login_kept_the_refusal_comes_at_once(
    served: Served, home: dict[str, str]
) -> None:
    # No terminal, no browser, no --no-browser: a script. It does not wait for a login
    # nobody can make (nor register a client for it).
    done = toolsets_command("list", "--mcp-url", served.url, env=home)
    assert done.returncode == 1
    warning, error = done.stderr.strip().splitlines()
    assert warning == (
        f"toolsets: warning: {served.url} asks for a login, and none is kept: log in "
        "once where a browser or a terminal is at hand"
    )
    assert error.startswith("toolsets: ")
    assert "HTTP 401" in error
    assert not login_file(home, served.url).parent.exists()


def test_a_kept_login_that_cannot_be_refreshed_with_nobody_to_log_in_is_one_error_line(
    served: Served, home: dict[str, str]
) -> None:
    first, _ = logged_in("list", "--mcp-url", served.url, env=home)
    assert first.returncode == 0, first.stderr
    path = login_file(home, served.url)
    record = kept(home, served.url)
    record["tokens"]["refresh_token"] = "revoked-or-expired"
    record["expires_at"] = 0
    path.write_text(json.dumps(record))

    # A script (no terminal, no browser): the provider refuses the refresh, and nobody
    # is here to log in. Said in a warning (the SDK's) and the error line, no traceback.
    done = toolsets_command("list", "--mcp-url", served.url, env=home)
    assert done.returncode == 1
    warning, error = done.stderr.strip().splitlines()
    assert warning == "toolsets: warning: Token refresh failed: 400"
    assert error.startswith(f"toolsets: cannot connect to MCP server {served.url}: ")
    assert f"the login to {served.url} has lapsed and a new one needs a person" in error


@pytest.mark.anyio
async def test_serve_reaches_an_upstream_server_with_the_kept_login(
    served: Served, home: dict[str, str]
) -> None:
    done, _ = await anyio.to_thread.run_sync(
        lambda: logged_in("login", "--mcp-url", served.url, env=home)
    )
    assert done.returncode == 0, done.stderr
    command = entry_point()
    params = StdioServerParameters(
        command=command[0],
        args=[*command[1:], "serve", "--mcp-url", served.url, "--confirm", "never"],
        env=environment(home),
    )
    with anyio.fail_after(TIMEOUT):
        async with Client(params) as client:
            listed = await client.list_tools()
            called = await client.call_tool("whoami", {})
    assert [tool.name for tool in listed.tools] == ["whoami"]
    assert called.structured_content is not None
    assert called.structured_content["subject"] == "alice"


# --- machines ---------------------------------------------------------------------------


def test_a_machine_logs_in_with_client_credentials_its_secret_from_the_environment(
    served: Served, home: dict[str, str], openid_provider: OpenIdProvider
) -> None:
    env = {**home, "TOOLSETS_OAUTH_CLIENT_SECRET": SECRETS["service"]}
    args = ("--oauth-client", "service", "--oauth-issuer", openid_provider.issuer)
    done = toolsets_command("call", "--mcp-url", served.url, *args, "whoami", "--yes", env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"subject": "service", "client": "service"}
    assert SECRETS["service"] not in done.stdout + done.stderr
    assert not login_file(home, served.url).exists()  # a machine's tokens are not kept


@pytest.mark.parametrize(
    ("args", "env", "said"),
    [
        (
            ("--oauth-client", "service", "--oauth-issuer", "http://127.0.0.1:9"),
            {},
            "needs its secret in the environment variable TOOLSETS_OAUTH_CLIENT_SECRET",
        ),
        (("--oauth-client", "service"), {"TOOLSETS_OAUTH_CLIENT_SECRET": "s"}, "--oauth-issuer"),
        (("--oauth-issuer", "http://127.0.0.1:9"), {}, "is for --oauth-client"),
        (("--oauth-client-metadata-url", "http://x.example/c.json"), {}, "an https URL"),
        (("--oauth-client-metadata-url", "https://x.example/"), {}, "with a path"),
    ],
)
def test_login_options_that_cannot_work_are_one_line(
    served: Served, home: dict[str, str], args: tuple[str, ...], env: dict[str, str], said: str
) -> None:
    line = error_line(toolsets_command("list", "--mcp-url", served.url, *args, env={**home, **env}))
    assert said in line


def test_print_config_carries_the_login_options_and_a_placeholder_for_the_secret() -> None:
    done = toolsets_command(
        "serve",
        "--mcp-url",
        "http://127.0.0.1:9/mcp",
        "--login-store",
        "file",
        "--oauth-client",
        "bot",
        "--oauth-issuer",
        "http://127.0.0.1:8/",
        "--print-config",
        env={"TOOLSETS_OAUTH_CLIENT_SECRET": "sekrit-of-the-bot"},
    )
    [entry] = stdout_json(done)["mcpServers"].values()
    for word in ("--login-store=file", "--oauth-client=bot", "--oauth-issuer=http://127.0.0.1:8/"):
        assert word in entry["args"]
    assert entry["env"] == {"TOOLSETS_OAUTH_CLIENT_SECRET": "<fill in>"}
    assert "sekrit" not in done.stdout + done.stderr


def test_the_keyring_asked_for_where_none_works_is_one_error_line(home: dict[str, str]) -> None:
    env = {**home, "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring"}
    url = "http://127.0.0.1:9/mcp"
    done = toolsets_process("logout", "--mcp-url", url, "--login-store", "keyring", env=env)
    line = error_line(done)
    assert line.startswith("toolsets: no OS keyring works here (the OS keyring (fail Keyring))")
    assert line.endswith("keep logins in a file instead")


def openid_provider_state(provider: OpenIdProvider) -> dict[str, Any]:
    with httpx2.Client(timeout=TIMEOUT) as http:
        state: dict[str, Any] = http.get(f"{provider.issuer}/__test__/state").json()
    return state


def test_login_files_are_made_readable_by_their_owner_alone_whatever_the_umask(
    tmp_path: Path,
) -> None:
    # Checked through the store alone: a umask letting everyone read what is made.
    store = FileLoginStore(tmp_path / "config" / "toolsets" / "logins")
    old = os.umask(0)
    try:
        anyio.run(store.write, "http://127.0.0.1:9/mcp", {"format": "x"})
    finally:
        os.umask(old)
    assert stat.S_IMODE(store.folder.stat().st_mode) == 0o700
    assert stat.S_IMODE(store.folder.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(store.path("http://127.0.0.1:9/mcp").stat().st_mode) == 0o600
