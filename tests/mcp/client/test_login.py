"""`oauth_login`: the `mcp` SDK's OAuth client with a login that lasts, against a real
OpenID provider (npm ``oidc-provider``) and an `McpServer` requiring its tokens. The test
plays the user's browser at the address shown, through the provider's login and consent
pages to the loopback redirect the login serves. The login is kept (a file, or the OS
keyring through the ``keyring`` package's own backend interface), used by a later
toolset without a browser, refreshed once expired at the issuer's token endpoint; the
provider's refusal and a lapsed login with nobody to log in are `AuthError`s."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import anyio
import httpx2
import keyring
import keyring.backend
import keyring.backends.fail
import pytest
from keyring.errors import PasswordDeleteError

from tests.mcp.client.login_helpers import log_in_as
from tests.mcp.server.auth_helpers import Served, serving
from tests.mcp.server.oidc import OpenIdProvider
from toolsets import AuthError, ToolContext
from toolsets.mcp import (
    FileLoginStore,
    KeyringLoginStore,
    LoginStore,
    McpToolset,
    StreamableHttp,
    forget_login,
    oauth_login,
)
from toolsets.mcp.client._login_store import KEYRING_SERVICE, login_store

pytestmark = pytest.mark.anyio

Browser = Callable[[str], Awaitable[None]]


@pytest.fixture(scope="module")
def served(openid_provider: OpenIdProvider) -> Iterator[Served]:
    with serving(openid_provider) as served:
        yield served


async def log_in_as_alice(address: str) -> None:
    await log_in_as(address, "alice")


def redirect_of(address: str) -> str:
    """The redirect URI an authorization address names."""
    return httpx2.URL(address).params["redirect_uri"]


async def whoami(
    url: str, store: LoginStore, browser: Browser | None, **options: Any
) -> tuple[Any, list[str]]:
    """``whoami``'s answer over a toolset logging in with ``store``; the addresses the
    user was shown (each opened by ``browser``: None, none may be shown)."""
    shown: list[str] = []
    async with anyio.create_task_group() as tasks:

        def prompt(server: str, address: str, opened: bool) -> None:
            assert server == url
            assert not opened
            shown.append(address)
            assert browser is not None, "a login was asked for"
            tasks.start_soon(browser, address)

        auth = oauth_login(url, store=store, browser=False, prompt=prompt, **options)
        with anyio.fail_after(30):
            async with McpToolset(StreamableHttp(url=url, auth=auth)) as toolset:
                [tool] = await toolset.list_tools(ToolContext())
                answer = await tool.run({}, ToolContext())
    return answer, shown


async def failure(made: Awaitable[object]) -> BaseException:
    """What ``made`` raised, out of its task groups; the `AuthError` it was caused by
    asserted (the toolset says it could not connect, from it)."""
    try:
        await made
    except BaseException as exc:
        error: BaseException = exc
        while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
            error = error.exceptions[0]
        assert caused_by_auth(error), repr(error)
        return error
    raise AssertionError("no error")


def caused_by_auth(error: BaseException | None) -> bool:
    if error is None:
        return False
    if isinstance(error, AuthError):
        return True
    if isinstance(error, BaseExceptionGroup) and any(map(caused_by_auth, error.exceptions)):
        return True
    return caused_by_auth(error.__cause__)


async def kept_login(url: str, folder: Path) -> tuple[FileLoginStore, dict[str, Any]]:
    """A login to ``url`` kept in files under ``folder``: the store, and its record."""
    store = FileLoginStore(folder / "logins")
    await whoami(url, store, log_in_as_alice)
    record = await store.read(url)
    assert record is not None
    return store, record


async def token_requests(provider: OpenIdProvider) -> int:
    return int((await provider.state())["token_requests"])


async def test_a_login_is_kept_and_a_later_toolset_uses_it_without_a_browser(
    served: Served, openid_provider: OpenIdProvider, tmp_path: Path
) -> None:
    store = FileLoginStore(tmp_path / "logins")
    answer, shown = await whoami(served.url, store, log_in_as_alice)
    assert answer["subject"] == "alice"
    assert len(shown) == 1
    before = await token_requests(openid_provider)
    again, shown = await whoami(served.url, store, None)
    assert again == answer
    assert shown == []
    assert await token_requests(openid_provider) == before  # not even a refresh


async def test_an_expired_kept_token_is_refreshed_at_the_issuers_token_endpoint(
    served: Served, openid_provider: OpenIdProvider, tmp_path: Path
) -> None:
    store, record = await kept_login(served.url, tmp_path)
    await store.write(served.url, {**record, "expires_at": time.time() - 1})
    before = await token_requests(openid_provider)
    answer, shown = await whoami(served.url, store, None)
    assert (answer["subject"], shown) == ("alice", [])
    assert await token_requests(openid_provider) == before + 1
    refreshed = await store.read(served.url)
    assert refreshed is not None
    assert refreshed["tokens"]["access_token"] != record["tokens"]["access_token"]
    assert refreshed["expires_at"] > time.time()


class ReadBeforeAnotherProcessRefreshed:
    """A store as a process sees it when another refreshes the login meanwhile: its
    first read gives the login as it was (an expired token, and a refresh token the
    other's refresh has spent); the store itself holds the other's tokens."""

    def __init__(self, store: FileLoginStore, stale: dict[str, Any]) -> None:
        self.store = store
        self.stale: dict[str, Any] | None = stale
        self.where = store.where

    async def read(self, server: str) -> dict[str, Any] | None:
        stale, self.stale = self.stale, None
        return stale if stale is not None else await self.store.read(server)

    async def write(self, server: str, record: dict[str, Any]) -> None:
        await self.store.write(server, record)

    async def forget(self, server: str) -> bool:
        return await self.store.forget(server)


async def test_a_refresh_refused_after_another_process_refreshed_uses_that_ones_tokens(
    served: Served, openid_provider: OpenIdProvider, tmp_path: Path
) -> None:
    store, record = await kept_login(served.url, tmp_path)
    spent = {**record["tokens"], "access_token": "expired", "refresh_token": "spent"}
    racing = ReadBeforeAnotherProcessRefreshed(store, {**record, "tokens": spent, "expires_at": 0})
    # Nobody to log in: only the other process's tokens can answer.
    answer, shown = await whoami(served.url, racing, None, interactive=False)
    assert (answer["subject"], shown) == ("alice", [])
    assert await store.read(served.url) == record  # nothing written over the other's


async def test_a_process_refreshing_after_another_did_uses_its_tokens_and_sends_no_refresh(
    served: Served, openid_provider: OpenIdProvider, tmp_path: Path
) -> None:
    store, record = await kept_login(served.url, tmp_path)
    stale = {**record, "expires_at": 0}
    await store.write(served.url, stale)
    before = await token_requests(openid_provider)
    await whoami(served.url, FileLoginStore(store.folder), None)  # the first process
    assert await token_requests(openid_provider) == before + 1
    refreshed = await store.read(served.url)
    assert refreshed is not None

    # The second read the login before the first refreshed it; its turn to refresh
    # come, it reads the store again and uses the first one's tokens.
    racing = ReadBeforeAnotherProcessRefreshed(store, stale)
    answer, shown = await whoami(served.url, racing, None, interactive=False)
    assert (answer["subject"], shown) == ("alice", [])
    assert await token_requests(openid_provider) == before + 1  # its refresh never sent
    again = await store.read(served.url)
    assert again is not None
    assert again["tokens"] == refreshed["tokens"]


async def test_a_lapsed_login_with_nobody_to_log_in_is_an_auth_error_at_once(
    served: Served, tmp_path: Path
) -> None:
    store, record = await kept_login(served.url, tmp_path)
    lapsed = {**record["tokens"], "access_token": "lapsed"}
    lapsed.pop("refresh_token")
    await store.write(served.url, {**record, "tokens": lapsed})
    error = await failure(whoami(served.url, store, None, interactive=False))
    assert "has lapsed and a new one needs a person" in str(error)


async def test_a_refusal_at_the_provider_is_an_auth_error_with_its_words(
    served: Served, tmp_path: Path
) -> None:
    async def refuse(address: str) -> None:
        # The user says no: the provider redirects with an error, and the state.
        state = httpx2.URL(address).params["state"]
        said = {"error": "access_denied", "error_description": "the user said no", "state": state}
        async with httpx2.AsyncClient(timeout=10) as browser:
            await browser.get(f"{redirect_of(address)}?{urlencode(said)}")

    error = await failure(whoami(served.url, FileLoginStore(tmp_path / "logins"), refuse))
    assert f"the login to {served.url} failed: the user said no" in str(error)


async def test_the_redirect_address_outlasts_silent_connections_and_answers_404_elsewhere(
    served: Served, tmp_path: Path
) -> None:
    async def wander_then_log_in(address: str) -> None:
        redirect = httpx2.URL(redirect_of(address))
        assert redirect.port is not None
        # A connection that sends nothing (a browser's pre-connect), then a stray page.
        silent = await anyio.connect_tcp("127.0.0.1", redirect.port)
        await silent.aclose()
        async with httpx2.AsyncClient(timeout=10) as browser:
            wrong = await browser.get(str(redirect.copy_with(path="/favicon.ico")))
            assert wrong.status_code == 404
        await log_in_as_alice(address)

    answer, _ = await whoami(served.url, FileLoginStore(tmp_path / "logins"), wander_then_log_in)
    assert answer["subject"] == "alice"


class MemoryKeyring(keyring.backend.KeyringBackend):
    """A keyring backend of ``keyring``'s own interface, keeping passwords in memory."""

    priority = 10

    def __init__(self) -> None:
        super().__init__()
        self.kept: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.kept.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.kept[service, username] = password

    def delete_password(self, service: str, username: str) -> None:
        if self.kept.pop((service, username), None) is None:
            raise PasswordDeleteError(username)


@pytest.fixture
def memory_keyring() -> Iterator[MemoryKeyring]:
    before = keyring.get_keyring()
    made = MemoryKeyring()
    keyring.set_keyring(made)
    try:
        yield made
    finally:
        keyring.set_keyring(before)


async def test_logins_go_to_the_keyring_where_one_works(
    served: Served, memory_keyring: MemoryKeyring
) -> None:
    store = login_store("auto")
    assert isinstance(store, KeyringLoginStore)
    answer, shown = await whoami(served.url, store, log_in_as_alice)
    assert answer["subject"] == "alice"
    assert list(memory_keyring.kept) == [(KEYRING_SERVICE, served.url)]
    again, shown = await whoami(served.url, store, None)
    assert (again, shown) == (answer, [])
    assert await forget_login(served.url, store="keyring")
    assert not memory_keyring.kept
    assert not await forget_login(served.url, store="keyring")


def test_without_a_working_keyring_logins_go_to_a_file() -> None:
    before = keyring.get_keyring()
    keyring.set_keyring(keyring.backends.fail.Keyring())
    try:
        assert isinstance(login_store("auto"), FileLoginStore)
    finally:
        keyring.set_keyring(before)
