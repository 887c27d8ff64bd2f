"""Where OAuth logins to MCP servers are kept between runs: the OS keyring when there is
one (the ``keyring`` extra, ``pip install 'toolsets-ai[keyring]'``, and a working
backend), else one file per server, readable by
its owner alone, under the user's config directory.

What a store keeps for a server is a *login record*: the client the authorization server
registered, the tokens it issued, and when the access token expires (an absolute time, so
that a later process knows whether to refresh it). `StoredLogin` presents one server's
record as the `mcp` SDK's ``TokenStorage`` (`toolsets.mcp.client._stored_login`).

A record that cannot be read as ours (corrupt, written by another program, for another
server, owned by another user, or readable by others) is reported once as a warning and
counts as no login: a fresh one replaces it. It never stops the command.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import stat
import sys
from pathlib import Path
from typing import Any, Literal, Protocol, TypeAlias

import anyio.to_thread

from toolsets._errors import AuthError

__all__ = [
    "KEYRING_SERVICE",
    "LOGIN_FORMAT",
    "REFRESH_AHEAD",
    "FileLoginStore",
    "KeyringLoginStore",
    "LoginStore",
    "LoginStoreKind",
    "chosen_store",
    "login_store",
    "logins_folder",
    "lock_path",
]

logger = logging.getLogger("toolsets.mcp.login")

REFRESH_AHEAD = 30.0
"""Seconds before its expiry that a stored access token counts as expired when a later
process reads it back, so that it is refreshed before it is used rather than refused
half-way through a command."""
KEYRING_SERVICE = "toolsets-mcp-login"
"""The keyring service under which each server's login is kept (the user name is the
server's URL)."""
LOGIN_FORMAT = "toolsets-mcp-login/1"
"""The ``format`` of a login record: a file without it is not ours."""
_MAX_RECORD = 1 << 20
"""Bytes of a login file read at most (a record is a few kilobytes)."""

LoginStoreKind: TypeAlias = Literal["auto", "keyring", "file"]
"""Where logins are kept: ``"keyring"`` (the OS keyring; needs the ``keyring`` extra),
``"file"`` (`logins_folder`), ``"auto"`` (the keyring when it works, else the file)."""


class LoginStore(Protocol):
    """Where login records are kept, by server URL."""

    @property
    def where(self) -> str:
        """Where the records are, for messages (never their content)."""
        ...

    async def read(self, server: str) -> dict[str, Any] | None:
        """The record of ``server``, or None (none kept, or none that is ours: warned)."""
        ...

    async def write(self, server: str, record: dict[str, Any]) -> None:
        """Keep ``record`` as ``server``'s, replacing any."""
        ...

    async def forget(self, server: str) -> bool:
        """Drop ``server``'s record; whether there was one."""
        ...


def logins_folder(environ: dict[str, str] | os._Environ[str] | None = None) -> Path:
    """The folder of the login files: ``toolsets/logins`` under the user's config
    directory (``$XDG_CONFIG_HOME`` or ``~/.config`` on Linux and other Unixes,
    ``~/Library/Application Support`` on macOS, ``%APPDATA%`` on Windows)."""
    env = os.environ if environ is None else environ
    if sys.platform == "win32":
        base = Path(env.get("APPDATA") or Path.home() / "AppData" / "Roaming")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    else:
        base = Path(env.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "toolsets" / "logins"


def _checked(server: str, record: object, where: str) -> dict[str, Any] | None:
    """``record`` if it is a login record of ours for ``server``; else None, warned."""
    if not isinstance(record, dict) or record.get("format") != LOGIN_FORMAT:
        why = "not a toolsets login record"
    elif record.get("server") != server:
        why = "the record of another server"
    else:
        return record
    logger.warning("ignoring the login kept in %s (%s): logging in anew", where, why)
    return None


class FileLoginStore:
    """One JSON file per server (named by a hash of its URL) in ``folder``: the folder
    made readable by its owner alone (0700), each file too (0600), written whole (to a
    new file then renamed over the old) so that a reader never sees half a record.

    Args:
        folder: Where the files are (default: `logins_folder`).
    """

    def __init__(self, folder: str | os.PathLike[str] | None = None) -> None:
        self.folder = Path(folder) if folder is not None else logins_folder()

    @property
    def where(self) -> str:
        return str(self.folder)

    def path(self, server: str) -> Path:
        """The file of ``server``'s login."""
        return self.folder / f"{_digest(server)}.json"

    async def read(self, server: str) -> dict[str, Any] | None:
        return await anyio.to_thread.run_sync(self._read, server)

    async def write(self, server: str, record: dict[str, Any]) -> None:
        await anyio.to_thread.run_sync(self._write, server, record)

    async def forget(self, server: str) -> bool:
        return await anyio.to_thread.run_sync(self._forget, server)

    def _read(self, server: str) -> dict[str, Any] | None:
        path = self.path(server)
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except FileNotFoundError:
            return None
        except OSError as exc:
            logger.warning(
                "ignoring the login kept in %s (%s): logging in anew", path, exc.strerror
            )
            return None
        with os.fdopen(fd, "rb") as file:
            why = _not_private(os.fstat(file.fileno()))
            if why is not None:
                logger.warning("ignoring the login kept in %s (%s): logging in anew", path, why)
                return None
            data = file.read(_MAX_RECORD + 1)
        try:
            if len(data) > _MAX_RECORD:
                raise ValueError("too large")
            record = json.loads(data)
        except ValueError:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
            logger.warning(
                "ignoring the login kept in %s (not JSON: a damaged file): logging in anew", path
            )
            return None
        return _checked(server, record, str(path))

    def _write(self, server: str, record: dict[str, Any]) -> None:
        self._folder_made()
        path = self.path(server)
        temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(temporary, flags, 0o600)
        try:
            with os.fdopen(fd, "wb") as file:
                if os.name != "nt":
                    os.fchmod(file.fileno(), 0o600)  # an old temporary's mode is kept
                file.write(json.dumps(record).encode())
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, path)
        except BaseException:
            with contextlib.suppress(OSError):
                temporary.unlink()
            raise

    def _forget(self, server: str) -> bool:
        try:
            self.path(server).unlink()
        except FileNotFoundError:
            return False
        return True

    def _folder_made(self) -> None:
        """The folder, made if need be, readable by its owner alone (its parent, made
        here too, likewise)."""
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        if os.name != "nt":
            for folder in (self.folder.parent, self.folder):
                mode = stat.S_IMODE(folder.stat().st_mode)
                if mode & 0o077 and folder.stat().st_uid == os.geteuid():
                    folder.chmod(mode & 0o700)


def _digest(server: str) -> str:
    """A server's name in the folder (its login file's, its lock's)."""
    return hashlib.sha256(server.encode()).hexdigest()[:32]


def lock_path(store: LoginStore, server: str) -> Path:
    """The lock file processes refreshing ``server``'s login in ``store`` take turns
    with: next to the login files (the file store's folder, else `logins_folder`)."""
    chosen = store._store if isinstance(store, _Chosen) else store
    folder = chosen.folder if isinstance(chosen, FileLoginStore) else logins_folder()
    FileLoginStore(folder)._folder_made()
    return folder / f"{_digest(server)}.lock"


def _not_private(status: os.stat_result) -> str | None:
    """Why a login file cannot be trusted as ours (None: it can)."""
    if os.name == "nt":
        return None
    if not stat.S_ISREG(status.st_mode):
        return "not a regular file"
    if status.st_uid != os.geteuid():
        return "owned by another user"
    if stat.S_IMODE(status.st_mode) & 0o077:
        return "readable by others: its tokens may have been seen"
    return None


class KeyringLoginStore:
    """Each server's login as one entry of the OS keyring (service `KEYRING_SERVICE`,
    user name the server's URL), through the ``keyring`` package (the ``keyring`` extra).

    Raises:
        ImportError: ``keyring`` is not installed (the line that installs it named).
    """

    def __init__(self) -> None:
        try:
            import keyring
        except ImportError as exc:
            from toolsets._install import missing_extra

            raise missing_extra(__name__, "keyring", exc) from exc
        self._keyring = keyring

    @property
    def where(self) -> str:
        backend = self._keyring.get_keyring()
        return f"the OS keyring ({getattr(backend, 'name', type(backend).__name__)})"

    async def read(self, server: str) -> dict[str, Any] | None:
        text = await anyio.to_thread.run_sync(self._keyring.get_password, KEYRING_SERVICE, server)
        if text is None:
            return None
        try:
            record = json.loads(text)
        except ValueError:
            logger.warning(
                "ignoring the login kept in %s (not JSON: a damaged entry): logging in anew",
                self.where,
            )
            return None
        return _checked(server, record, self.where)

    async def write(self, server: str, record: dict[str, Any]) -> None:
        text = json.dumps(record)
        await anyio.to_thread.run_sync(self._keyring.set_password, KEYRING_SERVICE, server, text)

    async def forget(self, server: str) -> bool:
        from keyring.errors import PasswordDeleteError

        try:
            await anyio.to_thread.run_sync(self._keyring.delete_password, KEYRING_SERVICE, server)
        except PasswordDeleteError:
            return False
        return True


def _keyring_works() -> bool:
    """Whether ``keyring`` is installed and has a backend that keeps passwords (not its
    ``fail`` or ``null`` stand-ins, which a machine without a keyring gets)."""
    try:
        import keyring
    except ImportError:
        return False
    backend = keyring.get_keyring()
    priority = getattr(backend, "priority", 0)
    module = type(backend).__module__
    return module not in ("keyring.backends.fail", "keyring.backends.null") and priority > 0


def login_store(kind: LoginStoreKind = "auto") -> LoginStore:
    """The store of ``kind`` (``"auto"``: the keyring where it works, else the file).

    Raises:
        ImportError: ``"keyring"`` without the ``keyring`` extra installed.
        AuthError: ``"keyring"``, and no keyring backend that keeps passwords (a
            machine without a keyring service).
    """
    if kind == "auto":
        return KeyringLoginStore() if _keyring_works() else FileLoginStore()
    if kind == "keyring":
        made = KeyringLoginStore()
        if not _keyring_works():
            raise AuthError(
                f"no OS keyring works here ({made.where}): keep logins in a file instead",
                scheme_name="oauth",
            )
        return made
    return FileLoginStore()


class _Chosen:
    """The store of a `LoginStoreKind`, chosen when first used, in a worker thread:
    finding whether a keyring works imports and asks its backends (a noticeable wait),
    which the event loop is not kept waiting for."""

    def __init__(self, kind: LoginStoreKind) -> None:
        self.kind = kind
        self._store: LoginStore | None = None

    async def _chosen(self) -> LoginStore:
        if self._store is None:
            self._store = await anyio.to_thread.run_sync(login_store, self.kind)
        return self._store

    @property
    def where(self) -> str:
        return self._store.where if self._store is not None else f"the {self.kind} store"

    async def read(self, server: str) -> dict[str, Any] | None:
        return await (await self._chosen()).read(server)

    async def write(self, server: str, record: dict[str, Any]) -> None:
        await (await self._chosen()).write(server, record)

    async def forget(self, server: str) -> bool:
        return await (await self._chosen()).forget(server)


def chosen_store(store: LoginStore | LoginStoreKind) -> LoginStore:
    """``store``, or the store of that kind (`login_store`), chosen when first used."""
    return _Chosen(store) if isinstance(store, str) else store
