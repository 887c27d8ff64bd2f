"""One MCP server's login record in a `LoginStore`, as the `mcp` SDK's ``TokenStorage``
(`StoredLogin`): the tokens read back with the time they have left."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import anyio.to_thread
import filelock
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import ValidationError

from toolsets.mcp.client._login_store import LOGIN_FORMAT, REFRESH_AHEAD, LoginStore, lock_path

__all__ = ["REFRESH_LOCK_TIMEOUT", "StoredLogin"]

logger = logging.getLogger("toolsets.mcp.login")

REFRESH_LOCK_TIMEOUT = 30.0
"""Seconds a process waits for another refreshing the same login (`StoredLogin.
refreshing`) before it refreshes anyway, warned."""


class StoredLogin:
    """One server's login in a `LoginStore`, as the `mcp` SDK's ``TokenStorage``.

    Tokens read back carry the time left before their expiry (less `REFRESH_AHEAD`) as
    their ``expires_in``, so that a later process refreshes an expired access token
    instead of sending it.

    Args:
        store: Where the login is kept.
        server: The MCP server's URL.
    """

    def __init__(self, store: LoginStore, server: str) -> None:
        self.store = store
        self.server = server
        self.discovered: Callable[[], dict[str, Any]] | None = None
        """What the OAuth client discovered about the server and its authorization
        server (their metadata), kept with the tokens: a later process refreshes them
        at the authorization server's token endpoint without discovering it first."""
        self._record: dict[str, Any] | None = None
        self._read = False

    async def _current(self) -> dict[str, Any]:
        if not self._read:
            self._record = await self.store.read(self.server)
            self._read = True
        if self._record is None:
            self._record = {"format": LOGIN_FORMAT, "server": self.server}
        return self._record

    async def get_tokens(self) -> OAuthToken | None:
        record = await self._current()
        kept = record.get("tokens")
        if kept is None:
            return None
        try:
            tokens = OAuthToken.model_validate(kept)
        except ValidationError:
            logger.warning(
                "ignoring the tokens kept in %s (not tokens): logging in anew", self.store.where
            )
            return None
        expires_at = record.get("expires_at")
        if isinstance(expires_at, int | float):
            left = expires_at - time.time() - REFRESH_AHEAD
            tokens.expires_in = max(int(left), 0)
        return tokens

    async def kept_elsewhere(self) -> OAuthToken | None:
        """The tokens the store holds now, if another process has put others there
        since this one last read or wrote them (it refreshed the login first: with an
        authorization server that rotates refresh tokens, the one this process holds is
        spent); else None."""
        seen = (self._record or {}).get("tokens") or {}
        self._read = False
        now = await self.get_tokens()
        if now is None or now.access_token == seen.get("access_token"):
            return None
        return now

    async def refreshing(self) -> Callable[[], None]:
        """Hold the lock that processes refreshing this login take turns with (a file
        lock next to the login files, `lock_path`); the function that releases it (once,
        whatever the calls).

        Holding it, a process reads the store again before it refreshes (`kept_elsewhere`):
        if another refreshed meanwhile, its tokens are used and the spent refresh token
        is never sent (an authorization server that rotates refresh tokens may take a
        spent one for a stolen one and revoke the login). After `REFRESH_LOCK_TIMEOUT`
        seconds the lock is given up on, warned, and the refresh goes ahead.
        """

        def acquire() -> filelock.FileLock | None:
            lock = filelock.FileLock(
                lock_path(self.store, self.server),
                timeout=REFRESH_LOCK_TIMEOUT,
                mode=0o600,
                thread_local=False,  # taken in a worker thread, released in the loop's
            )
            try:
                lock.acquire()
            except filelock.Timeout:
                logger.warning(
                    "another process has been refreshing the login to %s for %g s: "
                    "refreshing it here too",
                    self.server,
                    REFRESH_LOCK_TIMEOUT,
                )
                return None
            return lock

        held = await anyio.to_thread.run_sync(acquire)

        def release() -> None:
            nonlocal held
            lock, held = held, None
            if lock is not None:
                lock.release()

        return release

    async def set_tokens(self, tokens: OAuthToken) -> None:
        record = await self._current()
        kept = tokens.model_dump(mode="json", exclude_none=True)
        if _same(record.get("tokens"), kept):
            return  # the tokens another process kept (`refreshing`): kept as they are
        record["tokens"] = kept
        expires_in = tokens.expires_in
        record["expires_at"] = time.time() + int(expires_in) if expires_in is not None else None
        if self.discovered is not None:
            record["discovered"] = self.discovered()
        await self.store.write(self.server, record)

    async def get_discovered(self) -> dict[str, Any]:
        """What `discovered` said when the tokens were kept (empty: nothing)."""
        kept = (await self._current()).get("discovered")
        return kept if isinstance(kept, dict) else {}

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        record = await self._current()
        kept = record.get("client")
        if kept is None:
            return None
        try:
            return OAuthClientInformationFull.model_validate(kept)
        except ValidationError:
            logger.warning(
                "ignoring the client kept in %s (not a client registration): logging in anew",
                self.store.where,
            )
            return None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        record = await self._current()
        record["client"] = client_info.model_dump(mode="json", exclude_none=True)
        record.pop("tokens", None)  # a new client's login starts afresh
        record.pop("expires_at", None)
        await self.store.write(self.server, record)

    async def kept(self) -> bool:
        """Whether a login is kept (a client registration or tokens)."""
        record = await self._current()
        return "client" in record or "tokens" in record

    async def forget(self) -> bool:
        """Drop the login; whether one was kept."""
        self._record, self._read = None, True
        return await self.store.forget(self.server)


def _same(kept: object, tokens: dict[str, Any]) -> bool:
    """Whether ``kept`` (a record's tokens) are ``tokens`` (their lifetime aside)."""
    if not isinstance(kept, dict):
        return False
    return {**kept, "expires_in": None} == {**tokens, "expires_in": None}
