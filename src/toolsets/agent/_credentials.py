"""Where credentials obtained through the auth flow are kept between calls.

Credentials are never put in session state or events (which are stored and often
logged): they live in a `CredentialStore`, keyed by app, user and `AuthConfig.key`.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from toolsets._auth import AuthConfig, AuthCredential

__all__ = ["CredentialStore", "InMemoryCredentialStore"]


@runtime_checkable
class CredentialStore(Protocol):
    """Keeps the credentials users supplied, per app, user and auth config."""

    async def get(
        self, *, app_name: str, user_id: str, config: AuthConfig
    ) -> AuthCredential | None:
        """The stored credential, or None."""
        ...

    async def put(
        self, *, app_name: str, user_id: str, config: AuthConfig, credential: AuthCredential
    ) -> None:
        """Store (or replace) a credential."""
        ...


class InMemoryCredentialStore:
    """A `CredentialStore` in this process's memory."""

    def __init__(self) -> None:
        self._credentials: dict[tuple[str, str, str], AuthCredential] = {}

    async def get(
        self, *, app_name: str, user_id: str, config: AuthConfig
    ) -> AuthCredential | None:
        return self._credentials.get((app_name, user_id, config.key))

    async def put(
        self, *, app_name: str, user_id: str, config: AuthConfig, credential: AuthCredential
    ) -> None:
        self._credentials[(app_name, user_id, config.key)] = credential

    def __repr__(self) -> str:
        return f"InMemoryCredentialStore({len(self._credentials)} credentials)"
