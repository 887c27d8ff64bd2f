"""``toolsets serve``'s options for a shared service, beside ``--auth-issuer``: who may
call which tool (``--access-policy FILE``), as whom upstream (each user's own credential:
``--user-credentials FILE`` or ``env:VARIABLE``, or ``--token-exchange AUDIENCE`` and
``--token-exchange-audience NAME=AUDIENCE`` per credential; for the MCP servers behind
the gateway, ``--user-bearer NAME``: the HTTP server ``NAME`` of an ``mcpServers`` file,
or every ``--mcp-url`` server), and an audit line per call (``--audit-log PATH``).

Each user's own credential: the specs are read without ``--credential`` (every secured
operation asks for its caller's), and ``--credential`` (with ``TOOLSETS_CREDENTIAL_*``)
serves only users with none of their own, and only with ``--credential-fallback``: the
server's credential is never anyone's by default."""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

import click

from toolsets._auth import AuthConfig, AuthCredential
from toolsets._context import ToolContext
from toolsets._errors import AuthError, SpecError
from toolsets._toolset import Toolset
from toolsets.cli._errors import CommandError

if TYPE_CHECKING:
    from toolsets import AccessPolicy
    from toolsets.mcp import UserCredentials

__all__ = [
    "ACCESS_PARAMS",
    "TOKEN_EXCHANGE_SECRET_ENV",
    "Access",
    "Audiences",
    "access_options",
    "access_settings",
    "audit_to",
    "bearer_note",
    "for_programs",
    "keep_policy_claims",
    "restricted_by",
    "user_credentials",
]

TOKEN_EXCHANGE_SECRET_ENV = "TOOLSETS_TOKEN_EXCHANGE_SECRET"
"""The environment variable holding ``--token-exchange-client``'s secret (never an
option: a command line is seen by every user of the machine)."""
ACCESS_PARAMS = (
    "access_policy",
    "user_credentials",
    "token_exchange",
    "token_exchange_audience",
    "token_exchange_client",
    "token_endpoint",
    "user_bearer",
    "credential_fallback",
    "audit_log",
)
"""The parameters the options add (`access_settings` takes them out)."""

Access = dict[str, Any]
"""The options as plain values (handed to worker processes as JSON): ``policy`` (a
path), ``users`` (a path or ``env:VARIABLE``), ``exchange`` (`TokenExchange`'s keyword
arguments but the secret, and ``audiences``: ``--token-exchange-audience``'s by name),
``fallback`` (bool), ``audit`` (a path or ``-``); empty: none given. ``--user-bearer``
goes to the sources instead (``params["user_bearer"]``: its ``names`` and the settings of
each user's credentials)."""


def access_options(function: Callable[..., Any]) -> Callable[..., Any]:
    """Add the shared service's options to a command."""
    decorators = [
        click.option(
            "--access-policy",
            metavar="FILE",
            help="With --auth-issuer: which tools, resources and prompts each caller may see "
            "and use, from its token's scopes, roles and groups (a YAML, JSON or TOML policy "
            "file: rules: [{tools|tags|methods|paths|resources|prompts: [...], "
            "scopes|roles|groups: [...]}]).",
        ),
        click.option(
            "--user-credentials",
            metavar="FILE|env:VAR",
            help="With --auth-issuer: each user's own credential for the APIs, by token "
            "subject then security scheme (a YAML, JSON or TOML file, or a variable "
            "holding that JSON).",
        ),
        click.option(
            "--token-exchange",
            metavar="AUDIENCE",
            help="With --auth-issuer: each user's own credential for the APIs is a token "
            "the issuer exchanges theirs for (RFC 8693), for AUDIENCE.",
        ),
        click.option(
            "--token-exchange-audience",
            metavar="NAME=AUDIENCE",
            multiple=True,
            help="Token exchange (RFC 8693) for the credential NAME (a --user-bearer "
            "server's, or a security scheme's) is for AUDIENCE; the others' for "
            "--token-exchange's, or none (repeatable; implies token exchange).",
        ),
        click.option(
            "--token-exchange-client",
            metavar="CLIENT_ID",
            help="For token exchange: this server's client at the issuer (its secret "
            f"in ${TOKEN_EXCHANGE_SECRET_ENV}).",
        ),
        click.option(
            "--token-endpoint",
            metavar="URL",
            help="For token exchange: the issuer's token endpoint (default: from its metadata).",
        ),
        click.option(
            "--user-bearer",
            metavar="NAME",
            multiple=True,
            help="With --user-credentials or token exchange: the HTTP MCP server NAME of an "
            "mcpServers file (its key there), or else every --mcp-url server, is called "
            "with each caller's own bearer token, their credential NAME (a token exchanged "
            "for NAME's audience, or the one under NAME in the file), in a session of their "
            "own; a caller without one is offered none of its tools (repeatable).",
        ),
        click.option(
            "--credential-fallback",
            is_flag=True,
            help="With --user-credentials or --token-exchange: --credential (and "
            "TOOLSETS_CREDENTIAL_*) serve callers who have none of their own.",
        ),
        click.option(
            "--audit-log",
            metavar="PATH",
            help="Write a JSON line per tool call (who, which tool, outcome, duration; no "
            "argument values) to PATH ('-': stderr).",
        ),
    ]
    for decorator in reversed(decorators):
        function = decorator(function)
    return function


def access_settings(params: dict[str, Any], *, issuer: str | None) -> Access:
    """Take the shared service's options out of ``params``: the settings, checked (the
    policy and the users' credentials read now, so a mistake is one line before
    anything is served). Each user's own credentials make the specs read without
    ``--credential`` (``params["spec_credentials"]`` is False).

    Args:
        params: The command's parameters.
        issuer: ``--auth-issuer`` (None: none).

    Raises:
        click.UsageError: an option without the one it needs, two that exclude each
            other, ``--credential`` with each user's own credentials but no
            ``--credential-fallback``, a missing secret, or a file that is not right
            (naming its key and line).
    """
    given = {name: params.pop(name) for name in ACCESS_PARAMS}
    policy, users, audience = (
        given["access_policy"],
        given["user_credentials"],
        given["token_exchange"],
    )
    audiences = _audiences(given["token_exchange_audience"])
    exchanging = bool(audience or audiences)
    needing = [
        flag
        for flag, name in (
            ("--access-policy", "access_policy"),
            ("--user-credentials", "user_credentials"),
            ("--token-exchange", "token_exchange"),
            ("--token-exchange-audience", "token_exchange_audience"),
        )
        if given[name] and issuer is None
    ]
    if needing:
        raise click.UsageError(
            f"{', '.join(needing)}: for --auth-issuer (without it no caller is identified)"
        )
    if users and exchanging:
        raise click.UsageError("--user-credentials and --token-exchange cannot go together")
    for flag, name in (
        ("--token-exchange-client", "token_exchange_client"),
        ("--token-endpoint", "token_endpoint"),
    ):
        if given[name] and not exchanging:
            raise click.UsageError(f"{flag}: for --token-exchange")
    per_user = bool(users or exchanging)
    bearer = given["user_bearer"]
    if bearer and not per_user:
        raise click.UsageError("--user-bearer: for --user-credentials or --token-exchange")
    without = [name for name in bearer if exchanging and not audiences.get(name, audience)]
    if without:
        raise click.UsageError(
            f"--user-bearer {without[0]}: no audience to exchange each caller's token for "
            f"(add --token-exchange-audience {without[0]}=AUDIENCE)"
        )
    if given["credential_fallback"] and not per_user:
        raise click.UsageError("--credential-fallback: for --user-credentials or --token-exchange")
    if per_user and params.get("credentials") and not given["credential_fallback"]:
        raise click.UsageError(
            "--credential gives every caller the same credential, and --user-credentials or "
            "--token-exchange each their own: add --credential-fallback to use it for "
            "callers who have none of their own"
        )
    access: Access = {}
    if policy:
        access["policy"] = policy
    if users:
        access["users"] = users
    if exchanging:
        if not given["token_exchange_client"]:
            raise click.UsageError("--token-exchange needs --token-exchange-client CLIENT_ID")
        exchange: dict[str, Any] = {
            "audience": audience,
            "client_id": given["token_exchange_client"],
        }
        if audiences:
            exchange["audiences"] = audiences
        if given["token_endpoint"]:
            exchange["token_endpoint"] = given["token_endpoint"]
        else:
            exchange["issuer"] = issuer
        access["exchange"] = exchange
    if per_user:
        access["fallback"] = bool(given["credential_fallback"])
        params["spec_credentials"] = False
    if given["audit_log"]:
        access["audit"] = given["audit_log"]
    restricted_by(access, None, policy=True)  # read now: a mistake is one line, before serving
    user_credentials(access, {}, os.environ)
    if bearer:
        kept = {key: access[key] for key in ("users", "exchange", "fallback") if key in access}
        params["user_bearer"] = {"names": list(dict.fromkeys(bearer)), "access": kept}
    return access


def bearer_note(given: Mapping[str, Any] | None) -> str | None:
    """What ``--print-config`` tells of ``--user-bearer`` (``params["user_bearer"]``):
    each name, and where each caller's token for it comes from (None: not given)."""
    if not given:
        return None
    exchange = given["access"].get("exchange")
    told = []
    for name in given["names"]:
        if exchange is None:
            how = f"the one under {name!r} in --user-credentials"
        else:
            audience = exchange.get("audiences", {}).get(name, exchange["audience"])
            how = f"exchanged for the audience {audience}"
        told.append(f"{name} ({how})")
    return "upstream, each caller's own bearer token: " + "; ".join(told)


def _audiences(given: tuple[str, ...]) -> dict[str, str]:
    """``--token-exchange-audience NAME=AUDIENCE`` values by name.

    Raises:
        click.UsageError: one is not NAME=AUDIENCE, or names a credential twice.
    """
    found: dict[str, str] = {}
    for item in given:
        name, sep, audience = (part.strip() for part in item.partition("="))
        if not sep or not name or not audience:
            raise click.UsageError(
                f"--token-exchange-audience takes NAME=AUDIENCE, not {item[:80]!r}"
            )
        if name in found:
            raise click.UsageError(f"--token-exchange-audience names {name!r} twice")
        found[name] = audience
    return found


class Audiences(Mapping[str, str]):
    """`TokenExchange`'s ``audience`` from the command line: each credential's own
    (``--token-exchange-audience``), else ``--token-exchange``'s (None: a credential
    named in neither gets an error result)."""

    def __init__(self, named: Mapping[str, str], default: str | None) -> None:
        self.named = dict(named)
        self.default = default

    def __getitem__(self, name: str) -> str:
        found = self.named.get(name, self.default)
        if found is None:
            raise KeyError(name)
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self.named)

    def __len__(self) -> int:
        return len(self.named)

    def __repr__(self) -> str:
        return f"Audiences({self.named!r}, default={self.default!r})"


def keep_policy_claims(access: Access, auth: Any) -> None:
    """Have the resource server's settings (``auth``, `auth_settings`'s) keep the claims
    ``--access-policy`` reads (its roles and groups), beside ``--auth-claim``'s: without
    them on the caller's `Identity`, every rule needing a role would refuse."""
    found = restricted_by(access, None, policy=True)
    if isinstance(auth, dict) and found is not None:
        auth["claims"] = sorted({*auth.get("claims", ()), *found.claims})


@overload
def restricted_by(access: Access, toolset: Toolset) -> Toolset: ...
@overload
def restricted_by(access: Access, toolset: None, *, policy: bool) -> AccessPolicy | None: ...
def restricted_by(
    access: Access, toolset: Toolset | None, *, policy: bool = False
) -> Toolset | AccessPolicy | None:
    """``toolset`` under ``--access-policy`` (as it is without one); with ``policy``, the
    policy itself (None without one).

    Raises:
        click.UsageError: the policy file is not right (its key and line named).
    """
    path = access.get("policy")
    if path is None:
        return toolset
    from toolsets import AccessPolicy, restricted

    try:
        read = AccessPolicy.from_file(path)
    except SpecError as exc:
        raise click.UsageError(f"--access-policy {exc}") from exc
    return read if toolset is None else restricted(toolset, read)


def user_credentials(
    access: Access,
    given: Mapping[str, str],
    environ: Mapping[str, str],
    credential_for: Callable[[AuthConfig, Mapping[str, str]], AuthCredential | None] | None = None,
) -> UserCredentials | None:
    """Each user's own credentials, as ``--user-credentials`` or ``--token-exchange``
    say (None: neither given), ``--credential`` (``given``, found by ``credential_for``)
    as their fallback with ``--credential-fallback``.

    Raises:
        click.UsageError: the file or variable is not right, or the token exchange's
            secret is not in `TOKEN_EXCHANGE_SECRET_ENV`, or its URL is not https.
    """
    from toolsets.mcp import TokenExchange, UserCredentials

    fallback = None
    if access.get("fallback") and credential_for is not None:

        def fallback(config: AuthConfig) -> AuthCredential | None:
            return credential_for(config, given)

    users = access.get("users")
    try:
        if users is not None:
            if users.startswith("env:"):
                return UserCredentials.from_env(users[4:], fallback=fallback)
            return UserCredentials.from_file(users, fallback=fallback)
        exchange = access.get("exchange")
        if exchange is None:
            return None
        secret = environ.get(TOKEN_EXCHANGE_SECRET_ENV)
        if not secret:
            raise click.UsageError(
                f"--token-exchange-client needs its secret in ${TOKEN_EXCHANGE_SECRET_ENV}"
            )
        given_exchange = {key: value for key, value in exchange.items() if key != "audiences"}
        if "audiences" in exchange:
            given_exchange["audience"] = Audiences(exchange["audiences"], exchange["audience"])
        return UserCredentials(
            TokenExchange(**given_exchange, client_secret=secret), fallback=fallback
        )
    except SpecError as exc:
        raise click.UsageError(f"--user-credentials {exc}") from exc
    except ValueError as exc:
        raise click.UsageError(f"--token-exchange: {exc}") from exc


def for_programs(credentials: UserCredentials) -> Callable[[ToolContext, AuthConfig], Any]:
    """What `code_mode` takes as ``credentials``: a program's call gets its caller's own
    credential too (None when there is none: the call's result says it was not given)."""

    async def credential(ctx: ToolContext, config: AuthConfig) -> AuthCredential | None:
        try:
            return await credentials.credential(ctx.identity, config)
        except AuthError:
            return None

    return credential


class _JsonLines(logging.Formatter):
    """An audit record as one JSON line: its time, then its fields."""

    def format(self, record: logging.LogRecord) -> str:
        audit = getattr(record, "audit", None)
        fields = asdict(audit) if audit is not None else {"message": record.getMessage()}
        return json.dumps({"time": self.formatTime(record), **fields}, default=str)


def audit_to(access: Access) -> None:
    """Send the audit records to ``--audit-log`` (once per process; nothing without it).

    Raises:
        CommandError: the file cannot be opened for appending.
    """
    where = access.get("audit")
    if where is None:
        return
    from toolsets.mcp import AUDIT_LOGGER

    logger = logging.getLogger(AUDIT_LOGGER)
    name = f"toolsets-audit-log:{where}"
    if any(each.get_name() == name for each in logger.handlers):
        return
    handler: logging.Handler
    if where == "-":
        handler = logging.StreamHandler(sys.stderr)
    else:
        try:
            handler = logging.FileHandler(Path(where), encoding="utf-8")
        except OSError as exc:
            raise CommandError(f"--audit-log {where}: {exc.strerror or exc}") from exc
    handler.set_name(name)
    handler.setFormatter(_JsonLines())
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False  # its lines go there, not among the command's warnings
