"""``toolsets serve``'s authorization options: ``--auth-issuer URL`` (and ``--audience``,
``--required-scope``, ``--auth-claim``, ``--resource``, ``--introspection-client``) make
the HTTP server an OAuth 2.1 resource server (`OAuthResourceServer`); ``--no-auth``
serves beyond this machine without one, on purpose. Beyond this machine, one or the other
is needed: the command refuses in one line otherwise."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import click

from toolsets._urls import is_loopback

__all__ = [
    "AUTH_PARAMS",
    "Settings",
    "INTROSPECTION_SECRET_ENV",
    "auth_note",
    "auth_options",
    "auth_settings",
    "server_auth",
]

INTROSPECTION_SECRET_ENV = "TOOLSETS_INTROSPECTION_SECRET"
"""The environment variable holding ``--introspection-client``'s secret (never an option:
a command line is seen by every user of the machine)."""
AUTH_PARAMS = (
    "auth_issuer",
    "audience",
    "required_scopes",
    "auth_claims",
    "resource",
    "introspection_client",
    "no_auth",
)
"""The parameters the options add (`auth_settings` takes them out)."""

Settings = dict[str, Any] | str | None
"""The authorization as plain values (handed to worker processes as JSON): the keyword
arguments of `OAuthResourceServer` (the introspection client as ``introspection``), the
string ``"none"``, or None."""


def auth_options(function: Callable[..., Any]) -> Callable[..., Any]:
    """Add the authorization options to a command."""
    decorators = [
        click.option(
            "--auth-issuer",
            metavar="URL",
            help="Over HTTP: every request needs a bearer access token this OAuth 2.1 "
            "authorization server issued for this server (JWTs checked against its keys).",
        ),
        click.option(
            "--audience",
            metavar="AUD",
            multiple=True,
            help="With --auth-issuer: what a token's aud must hold (repeatable; default: "
            "the server's resource URL).",
        ),
        click.option(
            "--required-scope",
            "required_scopes",
            metavar="SCOPE",
            multiple=True,
            help="With --auth-issuer: a scope every token needs (repeatable).",
        ),
        click.option(
            "--auth-claim",
            "auth_claims",
            metavar="CLAIM",
            multiple=True,
            help="With --auth-issuer: a token claim the tools see on ctx.identity "
            "(repeatable; e.g. email, groups).",
        ),
        click.option(
            "--resource",
            metavar="URL",
            help="With --auth-issuer: the URL clients reach the MCP endpoint at, when a "
            "proxy stands in front (default: the URL each request came to).",
        ),
        click.option(
            "--introspection-client",
            metavar="CLIENT_ID",
            help="With --auth-issuer: check opaque tokens by introspection as this client "
            f"(its secret in ${INTROSPECTION_SECRET_ENV}).",
        ),
        click.option(
            "--no-auth",
            is_flag=True,
            help="Over HTTP beyond this machine: serve without authorization, on purpose.",
        ),
    ]
    for decorator in reversed(decorators):
        function = decorator(function)
    return function


def auth_settings(
    params: dict[str, Any],
    http: tuple[str, int] | None,
    sources: Sequence[str],
    *,
    own_servers: bool = False,
) -> Settings:
    """Take the authorization options out of ``params``: the settings, checked.

    Args:
        params: The command's parameters.
        http: Where it serves over HTTP (None: stdio).
        sources: The sources (for the message).
        own_servers: A source is an `McpServer` of its own (``module:attribute``), which
            may carry its own authorization: serving it beyond this machine is left to
            its check.

    Raises:
        click.UsageError: an option that needs another, ``--no-auth`` with
            ``--auth-issuer``, authorization over stdio, or HTTP beyond this machine
            with neither ``--auth-issuer`` nor ``--no-auth``.
    """
    given = {name: params.pop(name) for name in AUTH_PARAMS}
    issuer, no_auth = given["auth_issuer"], given["no_auth"]
    needing = [
        flag
        for flag, name in (
            ("--audience", "audience"),
            ("--required-scope", "required_scopes"),
            ("--auth-claim", "auth_claims"),
            ("--resource", "resource"),
            ("--introspection-client", "introspection_client"),
        )
        if given[name]
    ]
    if needing and issuer is None:
        raise click.UsageError(f"{', '.join(needing)}: for --auth-issuer")
    if issuer is not None and no_auth:
        raise click.UsageError("--auth-issuer and --no-auth cannot go together")
    if http is None and (issuer is not None or no_auth):
        raise click.UsageError(
            "--auth-issuer and --no-auth are for --http: over stdio the client started the "
            "server, there is no one else to authorize"
        )
    if no_auth:
        return "none"
    if issuer is None:
        if http is not None and not is_loopback(http[0]) and not own_servers:
            raise click.UsageError(
                f"serving on {http[0]} without authorization lets anyone who reaches it "
                "call the tools with this server's credentials: add --auth-issuer URL (an "
                "OAuth 2.1 authorization server), or --no-auth to serve so on purpose"
            )
        return None
    settings: dict[str, Any] = {"issuer": issuer}
    if given["audience"]:
        settings["audience"] = list(given["audience"])
    for key, name in (("required_scopes", "required_scopes"), ("claims", "auth_claims")):
        if given[name]:
            settings[key] = list(given[name])
    if given["resource"]:
        settings["resource"] = given["resource"]
    if given["introspection_client"]:
        settings["introspection"] = given["introspection_client"]
    server_auth(settings, os.environ)  # a bad URL or scope is a usage error, now
    return settings


def server_auth(settings: Settings, environ: Mapping[str, str]) -> Any:
    """What `McpServer` takes as ``auth`` for ``settings``.

    Raises:
        click.UsageError: a value `OAuthResourceServer` refuses (a bad URL, a scope with
            a space), or ``--introspection-client`` without its secret.
    """
    if not isinstance(settings, dict):
        return settings
    from toolsets.mcp import Introspection, OAuthResourceServer

    options = dict(settings)
    client = options.pop("introspection", None)
    try:
        if client is not None:
            secret = environ.get(INTROSPECTION_SECRET_ENV)
            if not secret:
                raise click.UsageError(
                    f"--introspection-client needs its secret in ${INTROSPECTION_SECRET_ENV}"
                )
            options["introspection"] = Introspection(client_id=client, client_secret=secret)
        return OAuthResourceServer(**options)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc


def auth_note(settings: Settings, url: str) -> str | None:
    """What a client needs to know to get a token for the server at ``url`` (for
    ``--print-config``), None when it needs none."""
    if not isinstance(settings, dict):
        return None
    from toolsets.mcp.server._auth._guard import metadata_url

    resource = settings.get("resource") or url
    scopes = " ".join(settings.get("required_scopes", ())) or "(none required)"
    return (
        f"clients need an OAuth access token: issuer {settings['issuer']}, resource "
        f"{resource} (the token's audience: {', '.join(settings.get('audience', [resource]))}), "
        f"scopes {scopes}; they discover it all at {metadata_url(resource)}"
    )
