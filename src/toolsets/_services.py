"""The services a tool can reach through its context: artifacts and memory.

Each is a Protocol, so any storage can back it; the in-memory versions here serve tests,
examples and single-process use.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from toolsets._content import Content, Part

__all__ = [
    "ArtifactService",
    "InMemoryArtifactService",
    "InMemoryMemoryService",
    "MemoryEntry",
    "MemoryService",
]

USER_PREFIX = "user:"


@runtime_checkable
class ArtifactService(Protocol):
    """Versioned file storage, scoped to a session (or to the user, for names starting
    with ``user:``). Versions count from 0."""

    async def save_artifact(
        self, *, app_name: str, user_id: str, session_id: str, filename: str, artifact: Part
    ) -> int:
        """Store a new version of ``filename``; return its version number."""
        ...

    async def load_artifact(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        filename: str,
        version: int | None = None,
    ) -> Part | None:
        """The given version (default: the latest), or None if there is none."""
        ...

    async def list_artifact_keys(
        self, *, app_name: str, user_id: str, session_id: str
    ) -> list[str]:
        """The file names visible from this session (its own and the user's), sorted."""
        ...

    async def list_versions(
        self, *, app_name: str, user_id: str, session_id: str, filename: str
    ) -> list[int]:
        """The versions stored for ``filename``, ascending."""
        ...

    async def delete_artifact(
        self, *, app_name: str, user_id: str, session_id: str, filename: str
    ) -> None:
        """Remove every version of ``filename`` (no error if there is none)."""
        ...


class InMemoryArtifactService:
    """An `ArtifactService` that keeps everything in this process's memory."""

    def __init__(self) -> None:
        self._store: dict[tuple[str, str, str, str], list[Part]] = {}

    @staticmethod
    def _key(
        app_name: str, user_id: str, session_id: str, filename: str
    ) -> tuple[str, str, str, str]:
        scope = "" if filename.startswith(USER_PREFIX) else session_id
        return (app_name, user_id, scope, filename)

    async def save_artifact(
        self, *, app_name: str, user_id: str, session_id: str, filename: str, artifact: Part
    ) -> int:
        if not filename:
            raise ValueError("an artifact needs a non-empty filename")
        key = self._key(app_name, user_id, session_id, filename)
        versions = self._store.setdefault(key, [])
        versions.append(artifact)
        return len(versions) - 1

    async def load_artifact(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        filename: str,
        version: int | None = None,
    ) -> Part | None:
        versions = self._store.get(self._key(app_name, user_id, session_id, filename), [])
        if not versions:
            return None
        if version is None:
            return versions[-1]
        if 0 <= version < len(versions):
            return versions[version]
        return None

    async def list_artifact_keys(
        self, *, app_name: str, user_id: str, session_id: str
    ) -> list[str]:
        return sorted(
            filename
            for (app, user, scope, filename) in self._store
            if app == app_name and user == user_id and scope in ("", session_id)
        )

    async def list_versions(
        self, *, app_name: str, user_id: str, session_id: str, filename: str
    ) -> list[int]:
        versions = self._store.get(self._key(app_name, user_id, session_id, filename), [])
        return list(range(len(versions)))

    async def delete_artifact(
        self, *, app_name: str, user_id: str, session_id: str, filename: str
    ) -> None:
        self._store.pop(self._key(app_name, user_id, session_id, filename), None)


@dataclass(frozen=True, kw_only=True)
class MemoryEntry:
    """One remembered piece of content."""

    content: Content
    """What was said."""
    author: str | None = None
    """Who said it (a user or an agent name)."""
    timestamp: float = field(default_factory=time.time)
    """When it was said (Unix time)."""
    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    """A unique id."""


@runtime_checkable
class MemoryService(Protocol):
    """Long-term memory a tool can search, scoped to an app and a user."""

    async def search_memory(
        self, *, app_name: str, user_id: str, query: str
    ) -> Sequence[MemoryEntry]:
        """The entries relevant to ``query``, most relevant first."""
        ...


_WORD = re.compile(r"\w+")


def _words(text: str) -> set[str]:
    return {w.casefold() for w in _WORD.findall(text)}


class _SessionEvent(Protocol):
    @property
    def author(self) -> str: ...
    @property
    def content(self) -> Content | None: ...
    @property
    def timestamp(self) -> float: ...
    @property
    def id(self) -> str: ...


class _Session(Protocol):
    @property
    def app_name(self) -> str: ...
    @property
    def user_id(self) -> str: ...
    @property
    def events(self) -> Sequence[_SessionEvent]: ...


class InMemoryMemoryService:
    """A `MemoryService` in this process's memory, ranking entries by shared words."""

    def __init__(self) -> None:
        self._entries: dict[tuple[str, str], list[MemoryEntry]] = {}
        self._seen: set[str] = set()

    async def add_session_to_memory(self, session: _Session) -> int:
        """Remember the text of a session's events (a `toolsets.agent.Session`); events
        remembered before are skipped, so calling it after every run is fine.

        Returns:
            How many entries were added.
        """
        added = [
            MemoryEntry(
                content=event.content, author=event.author, timestamp=event.timestamp, id=event.id
            )
            for event in session.events
            if event.content is not None and event.content.text and event.id not in self._seen
        ]
        self._seen.update(entry.id for entry in added)
        await self.add_entries(app_name=session.app_name, user_id=session.user_id, entries=added)
        return len(added)

    async def add_entries(
        self, *, app_name: str, user_id: str, entries: Iterable[MemoryEntry]
    ) -> None:
        """Remember ``entries`` for this app and user."""
        self._entries.setdefault((app_name, user_id), []).extend(entries)

    async def search_memory(
        self, *, app_name: str, user_id: str, query: str
    ) -> Sequence[MemoryEntry]:
        wanted = _words(query)
        if not wanted:
            return []
        scored = []
        for order, entry in enumerate(self._entries.get((app_name, user_id), [])):
            overlap = len(wanted & _words(entry.content.text))
            if overlap:
                scored.append((-overlap, order, entry))
        scored.sort(key=lambda item: (item[0], item[1]))
        return [entry for _, _, entry in scored]
