"""Where an MCP server is: a command to run (stdio) or a URL (streamable HTTP, or the
older HTTP+SSE)."""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, TypeAlias
from urllib.parse import parse_qsl, urlsplit

import httpx2

from toolsets._auth import MASK, MIN_MASKED, SECRET_NAME, Secret, check_headers, header_secrets
from toolsets._context import ToolContext
from toolsets._urls import safe_url

__all__ = ["HeaderProvider", "Sse", "StderrTarget", "Stdio", "StreamableHttp", "Transport"]


StderrTarget: TypeAlias = "logging.Logger | str | os.PathLike[str] | IO[Any] | int | None"
"""Where a stdio server's stderr goes: a logger (each line a record at INFO), a path (the
file is appended to), an open file or file descriptor (``subprocess.DEVNULL`` drops it,
``sys.stderr`` is the terminal), or None for the ``toolsets.mcp.stderr`` logger."""

HeaderProvider: TypeAlias = Callable[
    [ToolContext | None], "Mapping[str, str] | Awaitable[Mapping[str, str]]"
]
"""Headers computed for each request from the caller's context (e.g. a user's token)."""


@dataclass(frozen=True, kw_only=True, repr=False)
class Stdio:
    """A server started as a subprocess, spoken to over its stdin and stdout.

    Args:
        command: The program, e.g. ``"npx"`` or ``"python"``.
        args: Its arguments.
        env: Extra environment variables (added to a minimal safe environment, as the
            SDK does; pass what the server needs, e.g. an API key). Variables named
            ``TOOLSETS_*`` hold toolsets' own secrets (``TOOLSETS_CREDENTIAL_*``, the
            key sealing a served call's state, a worker's options): one is passed only
            when ``env`` gives it a value of its own, never when ``env`` copies it
            from this process's environment (``env=dict(os.environ)`` passes every
            other variable, and none of toolsets').
        cwd: The working directory.
        stderr: Where the server's stderr goes: a ``logging.Logger`` (one record per
            line, at INFO, beginning with the server's name), a path (appended to), an
            open file or descriptor (``sys.stderr`` for the terminal,
            ``subprocess.DEVNULL`` to drop it). By default, the ``toolsets.mcp.stderr``
            logger: the terminal is not flooded with a server's chatter, and nothing is
            lost either — configure logging to see it, and a server that fails to start
            has its last lines in the `ConnectionError`.
    """

    command: str
    args: Sequence[str] = ()
    env: Mapping[str, str] | None = field(default=None, repr=False)
    cwd: str | Path | None = None
    stderr: StderrTarget = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.command:
            raise ValueError("Stdio needs a command")
        if self.env is not None:  # values are often keys: hidden from vars() too
            env = {k: Secret(v) for k, v in self.env.items() if not _ours(k, v)}
            object.__setattr__(self, "env", env)

    def __repr__(self) -> str:
        # The command line as `target` shows it: an argument's secret is hidden here too.
        return f"Stdio(command={self.target!r}, cwd={self.cwd!r})"

    @property
    def target(self) -> str:
        """The command line, for errors and logs: no environment, and the value of any
        argument that looks like a secret (``--token X``, ``--api-key=X``) hidden."""
        return " ".join([self.command, *self._arguments()[0]])

    @property
    def secrets(self) -> list[str]:
        """What a server could quote back that is a secret (masked in what it sends):
        the values of environment variables named like one (``GITHUB_TOKEN``,
        ``API_KEY``) and of the secret arguments `target` hides."""
        hidden = [arg for arg in self._arguments()[1] if len(arg) >= MIN_MASKED]
        return header_secrets(self.env or {}) + hidden

    def _arguments(self) -> tuple[list[str], list[str]]:
        """The arguments as shown (secret values hidden), and the hidden values."""
        shown: list[str] = []
        hidden: list[str] = []
        hide_next = False
        for arg in self.args:
            if hide_next:
                shown.append(MASK)
                hidden.append(arg)
                hide_next = False
            elif SECRET_NAME.search(arg) and "=" in arg:
                name, value = arg.split("=", 1)
                shown.append(f"{name}={MASK}")
                hidden.append(value)
            else:
                shown.append(arg)
                hide_next = arg.startswith("-") and bool(SECRET_NAME.search(arg))
        return shown, hidden


_OURS = "TOOLSETS_"
"""The prefix of toolsets' own environment variables (credentials, keys)."""


def _ours(name: str, value: str) -> bool:
    """Whether ``name=value`` is one of toolsets' own variables copied from this
    process's environment (which a started server must not get)."""
    return name.startswith(_OURS) and os.environ.get(name) == value


class _AtUrl:
    """What transports to a URL share: a target and a repr without the URL's secrets."""

    url: str
    headers: Mapping[str, str]

    @property
    def target(self) -> str:
        """The URL without user:password and query (either may carry a secret)."""
        return safe_url(self.url)

    @property
    def secrets(self) -> list[str]:
        """What a server could quote back that is a secret (masked in what it sends):
        the values of headers named like a credential (see `header_secrets`), and the
        URL's password and values of query parameters named like a secret."""
        headers = self.headers
        parts = urlsplit(self.url)
        named = [value for name, value in parse_qsl(parts.query) if SECRET_NAME.search(name)]
        if parts.password:
            named.append(parts.password)
        return header_secrets(headers) + [value for value in named if len(value) >= MIN_MASKED]

    def _check_url(self) -> None:
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"{type(self).__name__} needs an http(s) URL, got {self.target!r}")

    def __repr__(self) -> str:
        shown = [
            f"{f.name}={self.target if f.name == 'url' else getattr(self, f.name)!r}"
            for f in dataclasses.fields(self)  # type: ignore[arg-type]
            if f.repr
        ]
        return f"{type(self).__name__}({', '.join(shown)})"


@dataclass(frozen=True, kw_only=True, repr=False)
class StreamableHttp(_AtUrl):
    """A server reached over MCP's streamable HTTP transport.

    Args:
        url: The endpoint, e.g. ``http://127.0.0.1:8000/mcp``.
        headers: Headers sent with every request (e.g. an API key); a value no request
            can carry (a control character, non-ASCII) raises `AuthError` naming the
            header, never the value.
        header_provider: Headers computed per call from the caller's `ToolContext`.
        auth: An ``httpx2.Auth`` (e.g. the SDK's OAuth providers).
        http_client: A client to use instead of our own (left open on shutdown). A
            call whose connection it could not make mid-session is taken as one that
            may have run (our own client tells it apart: never sent, sent again).
        timeout: Seconds to wait for the server to accept a connection and answer an
            HTTP request (a call's own timeout is the toolset's).
    """

    url: str
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    header_provider: HeaderProvider | None = None
    auth: httpx2.Auth | None = field(default=None, repr=False)
    http_client: httpx2.AsyncClient | None = field(default=None, repr=False)
    timeout: float = 30.0

    def __post_init__(self) -> None:
        if self.http_client is not None and (self.headers or self.auth or self.header_provider):
            raise ValueError(
                "StreamableHttp: with http_client=, set headers and auth on that client; "
                "header_provider needs toolsets to make its own clients (drop http_client)"
            )
        self._check_url()
        _secret_headers(self)


@dataclass(frozen=True, kw_only=True, repr=False)
class Sse(_AtUrl):
    """A server reached over MCP's older HTTP+SSE transport (a GET event stream and
    POSTed messages), which MCP replaced by streamable HTTP; for servers that still speak
    only it (``"type": "sse"`` in config files).

    Args:
        url: The event stream's endpoint, e.g. ``http://127.0.0.1:3001/sse``.
        headers: Headers sent with every request (e.g. an API key); a value no request
            can carry (a control character, non-ASCII) raises `AuthError` naming the
            header, never the value.
        auth: An ``httpx2.Auth`` (e.g. the SDK's OAuth providers).
        timeout: Seconds to wait for the server to accept a connection and answer an
            HTTP request (a call's own timeout is the toolset's).
        read_timeout: Seconds the event stream may stay silent before it counts as lost.
    """

    url: str
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    auth: httpx2.Auth | None = field(default=None, repr=False)
    timeout: float = 30.0
    read_timeout: float = 300.0

    def __post_init__(self) -> None:
        self._check_url()
        _secret_headers(self)


def _secret_headers(transport: StreamableHttp | Sse) -> None:
    """Refuse a header value no request can carry (a token pasted with its newline:
    refused, not quoted by an HTTP layer's error), and hide every value from vars() too
    (they are often credentials)."""
    check_headers(transport.headers)
    object.__setattr__(transport, "headers", {k: Secret(v) for k, v in transport.headers.items()})


Transport: TypeAlias = Stdio | StreamableHttp | Sse
"""A way of reaching a server."""
