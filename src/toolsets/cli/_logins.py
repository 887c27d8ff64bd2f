"""``toolsets login`` and ``toolsets logout``: logins to MCP servers over HTTP made now,
or forgotten (`toolsets.cli._login` has the options every command takes)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import anyio.to_thread

from toolsets.cli._errors import missing_cli

try:
    import click
except ImportError as exc:
    raise missing_cli(exc) from exc

from toolsets.cli._login import login_options, login_settings, store_option
from toolsets.cli._options import debug_option, opened, run_async
from toolsets.cli._terminal import Terminal

__all__ = ["login_command", "logout_command"]

_URLS = click.option(
    "--mcp-url",
    "http",
    multiple=True,
    required=True,
    metavar="URL",
    help="An MCP server over streamable HTTP (repeatable).",
)


_NO_OTHER_SOURCES: dict[str, Any] = {
    "base_url": None,
    "credentials": (),
    "headers": (),
    "tags": (),
    "methods": (),
    "paths": (),
    "names": (),
    "stdio": (),
    "confirm": "never",
}
"""The source options ``login`` has not: only ``--mcp-url`` servers."""


def _with(
    decorators: list[Callable[..., Any]],
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def apply(function: Callable[..., Any]) -> Callable[..., Any]:
        for decorator in reversed(decorators):
            function = decorator(function)
        return function

    return apply


@click.command(
    "login",
    epilog="""
\b
Examples:
  toolsets login --mcp-url https://mcp.example.com/mcp
  toolsets login --mcp-url https://mcp.example.com/mcp --no-browser
""",
)
@_URLS
@_with(login_options())
@click.option(
    "--mcp-header",
    "mcp_headers",
    multiple=True,
    metavar="NAME=VALUE",
    help="A header for every request to the server (repeatable; never shown).",
)
@debug_option
def login_command(**params: Any) -> None:
    """Log in to MCP servers over HTTP now (the other commands log in when a server
    asks), and keep the login: later commands use it, refreshed without a browser."""
    terminal = Terminal()
    given = {**_NO_OTHER_SOURCES, **params}

    async def go() -> None:
        async with opened(terminal, (), given, calls=False) as _:
            pass
        where = await anyio.to_thread.run_sync(_store_named, given)
        for url in params["http"]:
            terminal.note(f"logged in to {url} (kept in {where})")

    run_async(go)


@click.command(
    "logout",
    epilog="""
\b
Examples:
  toolsets logout --mcp-url https://mcp.example.com/mcp
""",
)
@_URLS
@store_option
@debug_option
def logout_command(http: Sequence[str], login_store: str) -> None:
    """Forget the logins kept for MCP servers over HTTP (their tokens and client
    registration): the next command that reaches one logs in anew."""
    from toolsets.mcp.client._login import forget_login
    from toolsets.mcp.client._login_store import login_store as store_of

    terminal = Terminal()
    store = store_of(login_store.lower())  # type: ignore[arg-type]

    async def go() -> None:
        for url in http:
            forgot = await forget_login(url, store=store)
            said = "forgot the login to" if forgot else "no login kept for"
            terminal.note(f"{said} {url} (in {store.where})")

    run_async(go)


def _store_named(params: dict[str, Any]) -> str:
    """Where the command's logins are kept, for the note saying so."""
    from toolsets.mcp.client._login_store import login_store

    settings = login_settings(params)
    if settings is None or settings.get("client"):
        return "memory only (a client's secret gets new tokens)"
    return login_store(settings["store"]).where
