"""Logins to MCP servers over HTTP from the command line: the options every command that
reaches such a server takes (``--no-browser``, ``--login-store``, ``--oauth-client``...),
the auth each server is reached with (`login_auth`: a kept, refreshed login, or a
machine's client credentials), and how the terminal shows where to log in (``toolsets
login`` and ``toolsets logout`` are in `toolsets.cli._logins`).

The OAuth itself is the `mcp` SDK's (`toolsets.mcp.client._login`)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from toolsets.cli._errors import SourceError, missing_cli

try:
    import click
except ImportError as exc:
    raise missing_cli(exc) from exc

if TYPE_CHECKING:
    import httpx2

    from toolsets.cli._terminal import Terminal
    from toolsets.mcp import McpToolset, Transport

__all__ = [
    "CLIENT_ID_ENV",
    "CLIENT_SECRET_ENV",
    "ISSUER_ENV",
    "LOGIN_STORE_ENV",
    "STORE_KINDS",
    "authorized",
    "login_options",
    "login_prompt",
    "login_settings",
    "login_words",
    "logged_in_toolset",
    "login_auth",
    "store_option",
]

CLIENT_ID_ENV = "TOOLSETS_OAUTH_CLIENT"
"""The environment variable ``--oauth-client`` is read from when not given."""
CLIENT_SECRET_ENV = "TOOLSETS_OAUTH_CLIENT_SECRET"
"""The environment variable holding the ``--oauth-client``'s secret (never an option: a
command line is seen by every user of the machine)."""
ISSUER_ENV = "TOOLSETS_OAUTH_ISSUER"
"""The environment variable ``--oauth-issuer`` is read from when not given."""
LOGIN_STORE_ENV = "TOOLSETS_LOGIN_STORE"
"""The environment variable ``--login-store`` is read from when not given."""
STORE_KINDS = ("auto", "keyring", "file")


store_option = click.option(
    "--login-store",
    type=click.Choice(STORE_KINDS, case_sensitive=False),
    default="auto",
    show_default=True,
    envvar=LOGIN_STORE_ENV,
    help="Where logins are kept: the OS keyring (the keyring extra), a file readable by "
    "you alone under your config directory, or auto (the keyring where it works, else "
    f"the file). Also {LOGIN_STORE_ENV}.",
)
"""``--login-store``: where logins to MCP servers are kept."""


def login_options() -> list[Callable[..., Any]]:
    """The options saying how a command logs in to MCP servers over HTTP."""
    return [
        click.option(
            "--no-login",
            "no_login",
            is_flag=True,
            help="Never log in to an MCP server over HTTP: one asking for a login is an error.",
        ),
        click.option(
            "--no-browser",
            "no_browser",
            is_flag=True,
            help="To log in, print the address to open instead of opening a browser.",
        ),
        store_option,
        click.option(
            "--oauth-client-metadata-url",
            metavar="URL",
            help="An https URL of this client's metadata document, its client id where "
            "the authorization server takes one (else it registers itself).",
        ),
        click.option(
            "--oauth-client",
            "oauth_client",
            metavar="ID",
            envvar=CLIENT_ID_ENV,
            help="Log in as this client, for machines (OAuth client credentials): its "
            f"secret in {CLIENT_SECRET_ENV}, its --oauth-issuer given. Also {CLIENT_ID_ENV}.",
        ),
        click.option(
            "--oauth-issuer",
            metavar="URL",
            envvar=ISSUER_ENV,
            help="The authorization server of --oauth-client (its secret goes there only). "
            f"Also {ISSUER_ENV}.",
        ),
    ]


def login_settings(params: Mapping[str, Any]) -> dict[str, Any] | None:
    """How the command logs in to MCP servers over HTTP (plain values: a ``serve``
    worker gets them as JSON), or None (``--no-login``).

    Raises:
        click.UsageError: ``--oauth-client`` without its issuer, ``--oauth-issuer``
            without it, or a ``--oauth-client-metadata-url`` that
            cannot be a client's id.
    """
    if params.get("no_login"):
        return None
    client = params.get("oauth_client")
    issuer = params.get("oauth_issuer")
    if client:
        if not issuer:
            raise click.UsageError(
                f"--oauth-client needs --oauth-issuer URL (or {ISSUER_ENV}): the "
                "authorization server its secret is for"
            )
    elif issuer:
        raise click.UsageError("--oauth-issuer is for --oauth-client")
    metadata_url = params.get("oauth_client_metadata_url")
    if metadata_url is not None and not _https_with_a_path(metadata_url):
        raise click.UsageError(
            "--oauth-client-metadata-url takes an https URL with a path (the client "
            "metadata document's, which is the client's id)"
        )
    return {
        "browser": not params.get("no_browser", False),
        "store": str(params.get("login_store") or "auto").lower(),
        "client_metadata_url": metadata_url,
        "client": client or None,
        "issuer": issuer or None,
    }


def _https_with_a_path(url: str) -> bool:
    """Whether ``url`` can be a client's id as its metadata document (as the SDK checks
    it: https, a path other than ``/``)."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return parts.scheme == "https" and bool(parts.netloc) and parts.path not in ("", "/")


def _person_here(settings: Mapping[str, Any]) -> bool:
    """Whether a person can log in: the command runs on a terminal, or a browser can be
    opened, or ``--no-browser`` asks for the address to be printed (to open elsewhere).
    Else (a script, a CI job) a server asking for a login is an error at once rather
    than a wait for nobody."""
    import sys

    from toolsets.mcp.client._login import browser_present

    if not settings["browser"] or sys.stdin.isatty() or sys.stderr.isatty():
        return True
    return browser_present()


def login_auth(
    url: str,
    settings: Mapping[str, Any],
    prompt: Callable[[str, str, bool], None] | None,
) -> httpx2.Auth:
    """How the server at ``url`` is reached (`login_settings`'s ``settings``): as the
    ``--oauth-client`` (client credentials), or else with the user's kept login,
    logging in when the server asks (``prompt`` shows where).

    Raises:
        SourceError: ``--oauth-client`` without its secret in the environment.
    """
    from toolsets.mcp.client._login import oauth_client_credentials, oauth_login

    if settings.get("client"):
        secret = os.environ.get(CLIENT_SECRET_ENV)
        if not secret:
            raise SourceError(
                f"--oauth-client {settings['client']} needs its secret in the environment "
                f"variable {CLIENT_SECRET_ENV}",
                source="--oauth-client",
            )
        return oauth_client_credentials(
            url, client_id=settings["client"], client_secret=secret, issuer=settings["issuer"]
        )
    return oauth_login(
        url,
        store=settings["store"],
        browser=settings["browser"],
        prompt=prompt,
        client_metadata_url=settings.get("client_metadata_url"),
        interactive=_person_here(settings),
    )


def authorized(
    transport: Transport,
    settings: Mapping[str, Any] | None,
    prompt: Callable[[str, str, bool], None] | None,
) -> tuple[Transport, float | None]:
    """``transport`` reaching its server as `login_auth` says, when it is an HTTP one
    sending no credential of its own (an ``Authorization`` header, per-caller headers,
    an auth or a client of its own); and the seconds its connection may take (None:
    the default), which a login by a person needs more of.

    Args:
        settings: `login_settings`'s (None: no login).
    """
    from dataclasses import replace

    from toolsets.mcp import DEFAULT_CONNECT_TIMEOUT, Sse, StreamableHttp
    from toolsets.mcp.client._login import LOGIN_TIMEOUT

    if settings is None or not isinstance(transport, StreamableHttp | Sse):
        return transport, None
    if transport.auth is not None or any(k.lower() == "authorization" for k in transport.headers):
        return transport, None
    if isinstance(transport, StreamableHttp) and (
        transport.header_provider is not None or transport.http_client is not None
    ):
        return transport, None
    made = replace(transport, auth=login_auth(transport.url, settings, prompt))
    by_person = not settings.get("client")
    return made, DEFAULT_CONNECT_TIMEOUT + LOGIN_TIMEOUT if by_person else None


def logged_in_toolset(
    transport: Transport,
    settings: Mapping[str, Any] | None,
    prompt: Callable[[str, str, bool], None] | None,
    **options: Any,
) -> McpToolset:
    """The `McpToolset` (made with ``options``) of the server ``transport`` reaches,
    logging in to it as `authorized` says, given time for the login if a person may
    make it."""
    from toolsets.mcp import McpToolset

    transport, connect_timeout = authorized(transport, settings, prompt)
    if connect_timeout is not None:
        options["connect_timeout"] = connect_timeout
    return McpToolset(transport, **options)


def login_words(params: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """The login options of a command line given again (``serve --print-config``), and
    the environment variables it needs holding secrets (the ``--oauth-client``'s)."""
    words: list[str] = []
    if params.get("no_login"):
        words.append("--no-login")
    if params.get("no_browser"):
        words.append("--no-browser")
    store = str(params.get("login_store") or "auto").lower()
    if store != "auto":
        words.append(f"--login-store={store}")
    for option, key in (
        ("--oauth-client-metadata-url", "oauth_client_metadata_url"),
        ("--oauth-client", "oauth_client"),
        ("--oauth-issuer", "oauth_issuer"),
    ):
        if params.get(key):
            words.append(f"{option}={params[key]}")
    return words, [CLIENT_SECRET_ENV] if params.get("oauth_client") else []


def login_prompt(terminal: Terminal) -> Callable[[str, str, bool], None]:
    """Shows where to log in on the terminal's stderr: a line, then the address alone
    on the next (to copy)."""

    def prompt(server: str, url: str, opened: bool) -> None:
        if opened:
            said = f"log in to {server} in the browser just opened, or open:"
        else:
            said = f"to log in to {server}, open this address in a browser:"
        terminal.err.print(f"toolsets: {said}", markup=False)
        terminal.err.print(f"  {url}", markup=False, soft_wrap=True, overflow="ignore")

    return prompt
