"""``toolsets serve``: the tools of some sources as one MCP server, over stdio or
streamable HTTP, and the ``mcpServers`` entry that makes a client start it."""

from __future__ import annotations

import contextlib
import errno
import functools
import ipaddress
import json
import os
import re
import socket
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from toolsets.cli._errors import CommandError, missing_cli

try:
    import click
except ImportError as exc:
    raise missing_cli(exc) from exc

import anyio

from toolsets._auth import AuthConfig, AuthCredential
from toolsets._context import ToolContext
from toolsets._gc import collector_paused, tuned_for_serving
from toolsets._invoke import DEFAULT_TOOL_TIMEOUT
from toolsets._json import JsonValue
from toolsets._toolset import Toolset
from toolsets.cli._catalog import Catalog, catalog_of, catalog_options, check_extras, offered
from toolsets.cli._login import login_words
from toolsets.cli._options import (
    SourceCommand,
    calls_options,
    json_option,
    opened,
    options_of,
    run_async,
    source_options,
    source_words,
    tool_timeout_option,
)
from toolsets.cli._serve_access import (
    Access,
    access_options,
    access_settings,
    audit_to,
    bearer_note,
    for_programs,
    keep_policy_claims,
    restricted_by,
    user_credentials,
)
from toolsets.cli._serve_auth import Settings, auth_note, auth_options, auth_settings, server_auth
from toolsets.cli._sources import (
    DEFAULT_CONFIRM,
    ServedToolset,
    SourceOptions,
    Sources,
    credential_env_name,
    credential_for,
    kind_of,
    pairs,
    read_spec,
    security_scheme_names,
)
from toolsets.cli._terminal import Terminal

if TYPE_CHECKING:
    from toolsets.mcp import McpServer, SpentStates

__all__ = [
    "WORKER_ENV",
    "ServerOptions",
    "client_config",
    "listen_address",
    "serve_command",
    "worker_server",
]

DEFAULT_HOST = "127.0.0.1"
PLACEHOLDER = "<fill in>"
"""What stands in a printed config for a secret given on the command line."""


def listen_address(text: str) -> tuple[str, int]:
    """``HOST:PORT``, ``:PORT`` or ``PORT`` as a host (127.0.0.1 by default) and port.

    Raises:
        click.BadParameter: not one of those, or a port out of range.
    """
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = "", text
    host = host.strip("[]") or DEFAULT_HOST
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise click.BadParameter(f"{text!r} is not HOST:PORT (a port from 1 to 65535)")
    return host, int(port)


def _server_name(sources: Sequence[str]) -> str:
    for source in sources:
        if re.match(r"^[\w.]+:[\w.]+$", source) and not Path(source).exists():
            stem = source.partition(":")[0].rsplit(".", 1)[-1]
        else:
            stem = Path(source.split("?")[0].rstrip("/")).stem
        if stem:
            return re.sub(r"[^A-Za-z0-9_-]", "-", stem)
    return "toolsets"


def _command() -> list[str]:
    """How a client starts this command: the ``toolsets`` script this process runs as,
    by its absolute path (clients start servers with a PATH of their own), else this
    Python with ``-m toolsets.cli``."""
    script = Path(sys.argv[0])
    if script.name in ("toolsets", "toolsets.exe") and script.exists():
        return [str(script.resolve())]
    return [sys.executable, "-m", "toolsets.cli"]


def client_config(
    name: str,
    sources: Sequence[str],
    params: Mapping[str, Any],
    *,
    http: tuple[str, int] | None,
    schemes: Iterable[str] = (),
    tool_timeout: float = DEFAULT_TOOL_TIMEOUT,
    prefixes: Sequence[tuple[str, int, str]] = (),
    catalog: Catalog | None = None,
) -> tuple[dict[str, JsonValue], list[str]]:
    """The ``mcpServers`` object with one entry that runs (or reaches) this server, and
    the names of the secrets left as `PLACEHOLDER` in it.

    Paths are made absolute (a client starts the server in a directory of its own, so
    ``cwd`` is this one when a module or a ``--stdio`` command may need it); a
    ``--credential`` becomes its ``TOOLSETS_CREDENTIAL_*`` variable in ``env`` and a
    ``--header`` keeps its name, each with `PLACEHOLDER` for its value: secrets are
    never printed. Every other scheme of ``schemes`` (those the specs define) gets its
    variable too, holding ``<your SCHEME>``: without it, every tool needing it fails."""
    if http is not None:
        host, port = http
        shown = f"[{host}]" if ":" in host else host
        return {"mcpServers": {name: {"url": f"http://{shown}:{port}/mcp"}}}, []

    def absolute(source: str) -> str:
        if kind_of(source) == "python" or "://" in source:
            return source
        return str(Path(source).resolve())

    args: list[str] = ["serve"]
    args += source_words(sources, params, prefixes, http_option="--mcp-url", source=absolute)
    if params["base_url"]:
        args.append(f"--base-url={params['base_url']}")
    python = any(kind_of(source) == "python" for source in sources)
    env, secrets = _credential_env(params["credentials"], schemes)
    for option, key in (("--header", "headers"), ("--mcp-header", "mcp_headers")):
        for item in params[key]:
            header = item.partition("=")[0].strip()
            args.append(f"{option}={header}={PLACEHOLDER}")
            secrets.append(f"{option} {header}")
    args += _selection_words(params, tool_timeout, catalog)
    words, variables = login_words(params)
    args += words
    for variable in variables:
        env[variable] = PLACEHOLDER
        secrets.append(variable)
    command = _command()
    entry: dict[str, JsonValue] = {"command": command[0], "args": [*command[1:], *args]}
    if env:
        entry["env"] = env
    if python or params["stdio"]:
        # module:attribute is imported from the directory it was named in, and a --stdio
        # command may name files relative to it.
        entry["cwd"] = os.getcwd()
    return {"mcpServers": {name: entry}}, secrets


def _credential_env(
    given: Sequence[str], schemes: Iterable[str]
) -> tuple[dict[str, JsonValue], list[str]]:
    """The entry's ``env``: the variable of each ``--credential`` (``given``) holding
    `PLACEHOLDER`, every other scheme's holding ``<your SCHEME>``; and their names."""
    secrets: list[str] = []
    env: dict[str, JsonValue] = {}
    for item in given:
        variable = credential_env_name(item.partition("=")[0].strip())
        env[variable] = PLACEHOLDER
        secrets.append(variable)
    for scheme in sorted(schemes):
        variable = credential_env_name(scheme)
        if variable not in env:
            env[variable] = f"<your {scheme}>"
            secrets.append(variable)
    return env, secrets


def _selection_words(
    params: Mapping[str, Any], tool_timeout: float, catalog: Catalog | None
) -> list[str]:
    """The options giving the same selection, ``--confirm`` and ``--tool-timeout`` (when
    not the defaults), and catalogue again."""
    args: list[str] = []
    for option, key in (("--tag", "tags"), ("--method", "methods"), ("--path", "paths")):
        args += [f"{option}={value}" for value in params[key]]
    args += [f"--name={value}" for value in params["names"]]
    if params["confirm"].lower() != DEFAULT_CONFIRM:
        args.append(f"--confirm={params['confirm'].lower()}")
    if tool_timeout != DEFAULT_TOOL_TIMEOUT:
        args.append(f"--tool-timeout={tool_timeout:g}")
    if catalog is not None:
        args += catalog.options
    return args


_LIMIT_FLAGS = {
    "header_timeout": "--header-timeout",
    "body_timeout": "--body-timeout",
    "keep_alive_timeout": "--keep-alive-timeout",
    "max_connections": "--max-connections",
    "max_header_bytes": "--max-header-bytes",
    "shutdown_timeout": "--shutdown-timeout",
}
"""The options bounding connections over HTTP (`McpServer.serve_http`'s), by flag."""


def _limit_options(function: Any) -> Any:
    """``--header-timeout``, ``--body-timeout``, ``--keep-alive-timeout``,
    ``--max-connections`` and ``--max-header-bytes``: `McpServer.serve_http`'s bounds."""
    seconds = click.FloatRange(min=0, min_open=True)
    decorators = [
        click.option(
            "--header-timeout",
            type=seconds,
            metavar="SECONDS",
            help="Over HTTP: seconds to send a request's head (default 10).",
        ),
        click.option(
            "--body-timeout",
            type=seconds,
            metavar="SECONDS",
            help="Over HTTP: seconds to send a request's body after its head (default 60).",
        ),
        click.option(
            "--keep-alive-timeout",
            type=seconds,
            metavar="SECONDS",
            help="Over HTTP: seconds an idle connection waits for a next request (default 5).",
        ),
        click.option(
            "--max-connections",
            type=click.IntRange(min=1),
            metavar="N",
            help="Over HTTP: connections served at once, the next ones answered 503 "
            "(default: 10000, or fewer within the open-file limit).",
        ),
        click.option(
            "--max-header-bytes",
            type=click.IntRange(min=1),
            metavar="BYTES",
            help="Over HTTP: the largest request head, past it 431 (default 16 KiB).",
        ),
    ]
    decorators.append(
        click.option(
            "--shutdown-timeout",
            type=seconds,
            metavar="SECONDS",
            help="Over HTTP: on SIGTERM, seconds the calls in flight have to finish "
            "(default 30; /readyz says 503 and new connections are refused meanwhile).",
        )
    )
    for decorator in reversed(decorators):
        function = decorator(function)
    return function


@click.command(
    "serve",
    cls=SourceCommand,
    epilog="""
\b
Over stdio by default (what Claude Desktop, Cursor or VS Code start); --http serves
streamable HTTP on HOST:PORT (127.0.0.1 unless a host is given). Upstream MCP servers
over HTTP are given with --mcp-url (their headers with --mcp-header). Beyond this
machine (e.g. --http 0.0.0.0:8000), --allowed-host must name the host name clients use:
requests with another Host header are refused (against DNS rebinding). Every wait on a
client is bounded (--header-timeout, --body-timeout, --keep-alive-timeout), and
connections past --max-connections are answered 503 at once. GET /healthz answers 200
while serving, /readyz 200 once the sources are loaded and until SIGTERM, which lets the
calls in flight finish (--shutdown-timeout) before closing. Beyond this machine, the
server needs --auth-issuer URL (every request then needs a bearer access token that OAuth
2.1 authorization server issued for it: clients discover it from the server's metadata)
or, to serve without authorization on purpose, --no-auth. With --auth-issuer, a shared
service: --access-policy FILE says which tools, resources and prompts each caller may
see and use (by its token's scopes, roles, groups); each caller's own credential goes
upstream, never the client's token (--user-credentials FILE by subject, or
--token-exchange AUDIENCE at the issuer, --token-exchange-audience NAME=AUDIENCE for the
credential NAME; --credential then serves only those with none, given
--credential-fallback); --user-bearer NAME calls the HTTP MCP server NAME of an
mcpServers file (its key there), or else every --mcp-url server, with each caller's own
bearer token, their credential NAME (repeatable; a caller without it is offered none of
that server's tools); --audit-log PATH writes a JSON line per call.

\b
Replicas behind a load balancer share TOOLSETS_MCP_STATE_KEY and --redis URL (each
confirmation answered once across them); 2025-11-25 sessions need the balancer to keep
each on its replica (see docs/serving/deploy.md, and examples/deploy).

\b
A call that --confirm says asks first (by default a destructive one: an MCP tool not
marked read-only or non-destructive, a DELETE, PUT or PATCH operation) asks the user
through the client (MCP elicitation), once, even through a gateway (an upstream
toolsets serve's own confirmation of that very call is answered for it; any other
question of an upstream server is declined); a client that cannot ask gets an error
result and the call does not run. A SOURCE naming an McpServer is served as it is:
--name, --prefix, --confirm always or another source with it are refused. --confirm never lets every
call run unasked (for clients that cannot ask, or that confirm calls themselves);
--confirm always asks before every call.

\b
A catalogue too big to send a client whole: --search serves one search_tools tool that
loads what it finds (a client of a session then lists them: over stdio, or HTTP with
sessions); --code-mode one run_code tool running the client's model's Python programs
in a sandbox; both together, programs that search and call.

\b
--json: with --print-config, the entry (JSON in any case); over HTTP, one JSON line on
stdout once serving: {"server": NAME, "url": URL}.

\b
Examples:
  toolsets serve petstore.yaml --print-config
  toolsets serve petstore.yaml --credential api_key=KEY
  toolsets serve claude_desktop_config.json --http 127.0.0.1:8000 --confirm never
  toolsets serve openapi.json --http 0.0.0.0:8000 --allowed-host 'mcp.example.com:*' \\
      --auth-issuer https://login.example.com --required-scope tools
  toolsets serve openapi.json --http :8000 --auth-issuer https://login.example.com \\
      --access-policy policy.yaml --token-exchange https://api.example.com \\
      --token-exchange-client mcp-gateway --audit-log audit.jsonl
  toolsets serve https://example.com/openapi.json --http :8000 --stateless --workers 4
  TOOLSETS_MCP_STATE_KEY=... toolsets serve openapi.json --http :8001 \\
      --redis redis://127.0.0.1:6379/0    # a replica (examples/deploy)
  toolsets serve github.json --search --code-mode --print-config
""",
)
@click.argument("sources", nargs=-1, metavar="SOURCE…")
@functools.partial(source_options, http_source=False)
@click.option("--http", "listen", metavar="HOST:PORT", help="Serve streamable HTTP here.")
@click.option("--stateless", is_flag=True, help="Over HTTP: no sessions (any worker answers).")
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Over HTTP: worker processes (with --stateless).",
)
@click.option(
    "--redis",
    "redis_url",
    metavar="URL",
    envvar="TOOLSETS_REDIS_URL",
    help="Over HTTP: the Redis that replicas serving the same clients share (the "
    "confirmations taken; redis://[:PASSWORD@]HOST:PORT/DB, or TOOLSETS_REDIS_URL).",
)
@click.option(
    "--allowed-host",
    "allowed_hosts",
    multiple=True,
    metavar="HOST[:PORT|:*]",
    help="Over HTTP: a Host header to accept (repeatable; default: this machine's names).",
)
@click.option(
    "--allowed-origin",
    "allowed_origins",
    multiple=True,
    metavar="ORIGIN",
    help="Over HTTP: an Origin header to accept (repeatable; default: this machine's).",
)
@click.option(
    "--max-body",
    type=click.IntRange(min=1),
    metavar="BYTES",
    help="Over HTTP: the largest request body (default 4 MiB).",
)
@click.option(
    "--max-sessions-per-client",
    type=click.IntRange(min=1),
    metavar="N",
    help="Over HTTP with sessions: how many one client (its token's subject, else its "
    "address) may hold at once (default 100; a new one past it gets 429).",
)
@click.option(
    "--list-ttl",
    type=click.FloatRange(min=0),
    metavar="SECONDS",
    help="How long clients may cache a list every caller is offered alike (default "
    "3600; a gateway's at most 10, a list filtered per caller is private; 0: none).",
)
@click.option(
    "--state-key-file",
    type=click.Path(exists=True, dir_okay=False),
    metavar="PATH",
    help="Over HTTP: the keys sealing a waiting call's state, one a line, the first sealing "
    "(replicas share them; or TOOLSETS_MCP_STATE_KEY, see docs/serving/deploy.md).",
)
@auth_options
@access_options
@_limit_options
@tool_timeout_option
@calls_options
@catalog_options
@click.option("--server-name", metavar="NAME", help="The server's name (default: the source's).")
@click.option(
    "--print-config",
    is_flag=True,
    help="Print the mcpServers entry that runs this server, to paste into a client's "
    "config, and exit.",
)
@json_option
def serve_command(
    sources: tuple[str, ...],
    listen: str | None,
    stateless: bool,
    workers: int,
    redis_url: str | None,
    allowed_hosts: tuple[str, ...],
    allowed_origins: tuple[str, ...],
    max_body: int | None,
    max_sessions_per_client: int | None,
    list_ttl: float | None,
    state_key_file: str | None,
    server_name: str | None,
    print_config: bool,
    as_json: bool,
    **params: Any,
) -> None:
    """Serve the tools of every SOURCE as one MCP server."""
    limits = {key: params.pop(key) for key in _LIMIT_FLAGS}
    http = listen_address(listen) if listen is not None else None
    catalog = catalog_of(params)
    _refuse_misuse(
        http,
        as_json=as_json,
        print_config=print_config,
        stateless=stateless,
        workers=workers,
        allowed_hosts=allowed_hosts,
        allowed_origins=allowed_origins,
        max_body=max_body,
        limits=limits,
        redis_url=redis_url,
    )
    own = any(kind_of(source) == "python" for source in sources)
    auth = auth_settings(params, http, sources, own_servers=own)
    access = access_settings(params, issuer=auth.get("issuer") if isinstance(auth, dict) else None)
    keep_policy_claims(access, auth)
    name = server_name or _server_name(sources)
    terminal = Terminal()
    server = ServerOptions(
        name=name,
        tool_timeout=params["tool_timeout"],
        catalog=catalog,
        auth=auth,
        access=access,
        list_ttl=list_ttl,
        redis=redis_url,
    )
    if print_config:
        _print_config(terminal, sources, params, server, http)
        return
    check_extras(catalog)
    if http is None and (state_key_file is not None or max_sessions_per_client is not None):
        raise click.UsageError("--state-key-file and --max-sessions-per-client are for --http")
    if http is not None:
        _check_state_keys(state_key_file)
    if http is None:
        _serve_stdio(terminal, sources, params, server)
        return
    options: dict[str, Any] = {}
    if stateless:
        options["stateless"] = True
    if allowed_hosts:
        options["allowed_hosts"] = list(allowed_hosts)
    if allowed_origins:
        options["allowed_origins"] = list(allowed_origins)
    if max_body is not None:
        options["max_body_bytes"] = max_body
    if max_sessions_per_client is not None:
        if stateless:
            raise click.UsageError("--max-sessions-per-client is for sessions (not --stateless)")
        options["max_sessions_per_client"] = max_sessions_per_client
    options.update((key, value) for key, value in limits.items() if value is not None)
    _serve_http(
        terminal, sources, params, server, http, workers=workers, as_json=as_json, **options
    )


def _check_state_keys(state_key_file: str | None) -> None:
    """The keys sealing a waiting call's state, from ``--state-key-file`` or the
    environment, checked now (each `McpServer` made reads them, in workers too).

    Raises:
        click.UsageError: a malformed key, or both the file and the variable.
    """
    from toolsets.mcp.server._keys import STATE_KEY_FILE_VARIABLE, state_keys_from

    if state_key_file is not None:
        os.environ[STATE_KEY_FILE_VARIABLE] = state_key_file
    try:
        state_keys_from(os.environ)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc


def _refuse_misuse(
    http: tuple[str, int] | None,
    *,
    as_json: bool,
    print_config: bool,
    stateless: bool,
    workers: int,
    allowed_hosts: tuple[str, ...],
    allowed_origins: tuple[str, ...],
    max_body: int | None,
    limits: Mapping[str, Any],
    redis_url: str | None,
) -> None:
    """Raises:
    click.UsageError: options that cannot work together (``--json`` over stdio, an
        HTTP option without ``--http``, ``--workers`` without ``--stateless``), or
        serving beyond this machine with no ``--allowed-host``."""
    if http is None and redis_url and not print_config:
        raise click.UsageError("--redis is for --http (a stdio server has one client)")
    if as_json and http is None and not print_config:
        raise click.UsageError(
            "--json is for --http or --print-config: over stdio, stdout carries the protocol"
        )
    if http is None and (stateless or workers > 1):
        raise click.UsageError("--stateless and --workers are for --http")
    if http is None and (allowed_hosts or allowed_origins or max_body is not None):
        raise click.UsageError("--allowed-host, --allowed-origin and --max-body are for --http")
    given_limits = [_LIMIT_FLAGS[key] for key, value in limits.items() if value is not None]
    if http is None and given_limits:
        raise click.UsageError(f"{', '.join(given_limits)}: for --http")
    if workers > 1 and not stateless:
        raise click.UsageError("--workers needs --stateless (sessions live in one process)")
    if http is not None and not allowed_hosts and not _loopback(http[0]):
        raise click.UsageError(
            f"serving on {http[0]} reaches beyond this machine: name the host clients use "
            "with --allowed-host (e.g. 'mcp.example.com:*'), or every request is refused"
        )
    _check_patterns(allowed_hosts, allowed_origins)


def _print_config(
    terminal: Terminal,
    sources: Sequence[str],
    params: Mapping[str, Any],
    server: ServerOptions,
    http: tuple[str, int] | None,
) -> None:
    """``--print-config``: the ``mcpServers`` entry on stdout, and the secrets to fill
    in on stderr."""
    schemes: set[str] = set()
    if http is None:
        headers = pairs(params["headers"], "--header")
        for source in sources:
            if kind_of(source) == "spec":
                document, _ = run_async(functools.partial(read_spec, source, headers))
                schemes |= security_scheme_names(document)
    config, secrets = client_config(
        server.name,
        sources,
        params,
        http=http,
        schemes=schemes,
        tool_timeout=server.tool_timeout,
        prefixes=options_of(params).prefixes,
        catalog=server.catalog,
    )
    terminal.result(config)
    if secrets:
        terminal.note(f"fill in: {', '.join(secrets)}")
    if http is not None:
        for note in (auth_note(server.auth, _url(http)), bearer_note(params.get("user_bearer"))):
            if note is not None:
                terminal.note(note)


def _serve_stdio(
    terminal: Terminal, sources: Sequence[str], params: Mapping[str, Any], server: ServerOptions
) -> None:
    """Serve over stdio until the client ends the input."""
    loading = options_of(params)
    with _stdout_for_the_protocol_only() as wire:

        async def serve_stdio() -> None:
            # No collector passes while the sources load (the SDK's import makes many
            # long-lived objects, and each pass over them is wasted); then what is
            # loaded (a big spec: a million objects) is spared them while the tool
            # list is answered.
            with collector_paused() as loaded:
                async with opened(terminal, sources, params) as (toolset, _):
                    made = _server(toolset, server, loading)
                    loaded()
                    tuned_for_serving()
                    if terminal.interactive:
                        # A person ran it: nothing would say what it waits for.
                        terminal.note(
                            f"serving {server.name} over stdio: waiting for an MCP client "
                            "on stdin (clients such as Claude Desktop start this command "
                            "themselves: see --print-config); Ctrl-C stops it"
                        )
                    with contextlib.redirect_stdout(wire):
                        await made.run_stdio()

        run_async(serve_stdio)


def _serve_http(
    terminal: Terminal,
    sources: Sequence[str],
    params: Mapping[str, Any],
    server: ServerOptions,
    http: tuple[str, int],
    *,
    workers: int,
    as_json: bool,
    **options: Any,
) -> None:
    """Serve streamable HTTP on ``http`` (``options``: `McpServer.serve_http`'s), in
    this process or in ``workers`` processes, until stopped."""
    loading = options_of(params)
    host, port = http
    # Bound now, before the sources load: a port in use is one line and nothing is
    # served; the socket is handed to uvicorn, so no one takes the port in between.
    # It listens once the sources are loaded (a client connecting meanwhile is refused,
    # not kept waiting).
    sock = _bound(host, port, shared=workers > 1)
    where = _url(http)

    def serving(workers_said: str = "") -> None:
        # Listening from now on: a client that connects is answered once uvicorn has
        # started (its connection waits in the queue), so this is no claim ahead of time.
        sock.listen(_BACKLOG)
        if as_json:  # one line: a script reads it as soon as it comes
            terminal.line(json.dumps({"server": server.name, "url": where}))
        else:
            terminal.note(f"serving {server.name} on {where}{workers_said}")

    with sock:
        if workers == 1:

            async def serve_http() -> None:
                # Opened and listed first, as over stdio: a source that cannot be
                # reached fails here in one line, before anything is served.
                with collector_paused() as loaded:
                    async with opened(terminal, sources, params) as (toolset, _):
                        made = _server(toolset, server, loading)
                        loaded()
                        tuned_for_serving()
                        _check_exposure(made, host)
                        serving()
                        await made.serve_http(host, port, sock=sock, **options)

            run_async(serve_http)
            return

        _serve_workers(terminal, sources, params, server, http, sock, workers, serving, **options)


def _serve_workers(
    terminal: Terminal,
    sources: Sequence[str],
    params: Mapping[str, Any],
    server: ServerOptions,
    http: tuple[str, int],
    sock: socket.socket,
    workers: int,
    serving: Callable[[str], None],
    **options: Any,
) -> None:
    """Serve on ``http`` (bound to ``sock``) in ``workers`` processes, each building its
    own server (`worker_server`): the sources are checked here first (a broken spec or
    an unreachable server fails now, in one line), then read anew in every worker.
    ``serving`` says so once they are."""
    loading = options_of(params)

    async def check() -> Toolset:
        async with opened(terminal, sources, params) as (toolset, _):
            return toolset

    toolset = run_async(check)
    host, port = http
    with _worker_config(server.name, sources, loading, server):
        made = _server(toolset, server, loading)
        _check_exposure(made, host)
        serving(f" ({workers} workers)")
        made.run_http(
            host,
            port,
            workers=workers,
            factory=f"{__name__}:worker_server",
            sock=sock,
            **options,
        )


def _check_exposure(made: McpServer, host: str) -> None:
    """Raises:
    CommandError: an McpServer of a module, without authorization, would be served
        beyond this machine."""
    from toolsets.mcp.server._auth import check_exposure

    try:
        check_exposure(made.auth, host)
    except ValueError as exc:
        raise CommandError(f"{exc} (on the command line: --auth-issuer URL or --no-auth)") from exc


def _url(http: tuple[str, int]) -> str:
    """The MCP endpoint's URL when served on ``http``."""
    host, port = http
    return f"http://{f'[{host}]' if ':' in host else host}:{port}/mcp"


_BACKLOG = 2048
"""Connections waiting to be accepted at most (uvicorn's default)."""


def _bound(host: str, port: int, *, shared: bool = False) -> socket.socket:
    """A TCP socket bound to ``host``:``port`` (not listening yet), as uvicorn binds
    its own (``SO_REUSEADDR``: a port left in TIME_WAIT by the last run can be taken
    again, one another process listens on cannot); ``shared``: the first of the
    workers' sockets, which the others bind beside (``SO_REUSEPORT``, where the kernel
    spreads connections over them).

    Raises:
        CommandError: the port is in use, the address is not this machine's, or the
            host name cannot be resolved (one line, nothing served).
    """
    from toolsets.mcp.server._workers import can_spread, reuse_port_socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        if shared and can_spread():
            sock = reuse_port_socket(host, port)
        else:
            sock = socket.socket(family, socket.SOCK_STREAM)
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.bind((host, port))
            except OSError:
                sock.close()
                raise
    except OSError as exc:
        shown = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        if exc.errno == errno.EADDRINUSE:
            why = "the port is in use (another server listens there)"
        elif exc.errno == errno.EADDRNOTAVAIL:
            why = "the address is not one of this machine's"
        elif exc.errno == errno.EACCES:
            why = "permission denied (ports below 1024 need privileges)"
        else:
            why = exc.strerror or str(exc)
        raise CommandError(f"cannot serve on {shown}: {why}") from exc
    sock.set_inheritable(True)  # --workers: uvicorn's worker processes inherit it
    return sock


def _check_patterns(hosts: Sequence[str], origins: Sequence[str]) -> None:
    """Raises:
    click.UsageError: an ``--allowed-host`` or ``--allowed-origin`` that is malformed."""
    from toolsets.mcp.server._checks import Pattern

    for flag, values in (("--allowed-host", hosts), ("--allowed-origin", origins)):
        for value in values:
            try:
                Pattern.parse(value, origin=flag == "--allowed-origin", option=flag)
            except ValueError as exc:
                raise click.UsageError(str(exc)) from exc


def _loopback(host: str) -> bool:
    """Whether ``host`` is an address (or the name) of this machine only."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@contextlib.contextmanager
def _stdout_for_the_protocol_only() -> Iterator[TextIO]:
    """The real stdout, for the protocol only, while everything else written to stdout
    (a module printing as it is imported, a library's banner, a child process) goes to
    stderr: file descriptor 1 points at stderr and ``sys.stdout`` is stderr until the
    block ends."""
    sys.stdout.flush()
    wire_fd = os.dup(1)
    os.dup2(2, 1)
    wire = os.fdopen(wire_fd, "w", encoding="utf-8")
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield wire
    finally:
        wire.flush()
        os.dup2(wire_fd, 1)
        wire.close()


@dataclass(frozen=True, kw_only=True)
class ServerOptions:
    """What the served `McpServer` is made with, besides its toolset."""

    name: str
    """The server's name, as clients see it."""
    tool_timeout: float = DEFAULT_TOOL_TIMEOUT
    """Seconds a call may take, unless the tool says otherwise."""
    catalog: Catalog = field(default_factory=Catalog)
    """``--search`` and ``--code-mode``."""
    auth: Settings = None
    """``--auth-issuer`` and its options, or ``--no-auth`` (`auth_settings`)."""
    access: Access = field(default_factory=dict)
    """``--access-policy``, each user's credentials, ``--audit-log`` (`access_settings`)."""
    list_ttl: float | None = None
    """``--list-ttl``: seconds a client may keep a list every caller is offered alike
    (None: `McpServer`'s default)."""
    redis: str | None = None
    """``--redis``: the URL of the Redis the replicas share."""

    def plain(self) -> dict[str, Any]:
        """As JSON values (for the workers: `from_plain` reads them back)."""
        return {**vars(self), "catalog": vars(self.catalog)}

    @classmethod
    def from_plain(cls, plain: Mapping[str, Any]) -> ServerOptions:
        catalog = dict(plain.get("catalog") or {})
        catalog["pinned"] = tuple(catalog.get("pinned", ()))
        return cls(**{**plain, "catalog": Catalog(**catalog)})


def _server(toolset: Toolset, server: ServerOptions, options: SourceOptions) -> McpServer:
    """The `McpServer` of ``toolset`` (offered as ``--search`` and ``--code-mode``
    say): a tool that asks for a credential (beyond the specs', given when they were
    read) gets the one ``--credential`` or ``TOOLSETS_CREDENTIAL_<SCHEME>`` gives, never
    the client's own token."""
    from toolsets.mcp import LIST_TTL, McpServer

    wraps = server.catalog.wraps
    auth = server_auth(server.auth, os.environ)
    audit_to(server.access)
    if isinstance(toolset, ServedToolset) and (
        {"policy", "users", "exchange"} & server.access.keys()
    ):
        raise CommandError(
            "--access-policy, --user-credentials and --token-exchange cannot apply to an "
            "McpServer (module:attribute): it is served with its own toolset and credentials"
        )
    if isinstance(toolset, ServedToolset) and wraps is None:
        # module:attribute naming an McpServer: as it is, with its own authorization
        # unless the command line gives one.
        if auth is not None:
            if toolset.server.auth is not None:
                raise CommandError(
                    "--auth-issuer and --no-auth cannot apply to an McpServer "
                    "(module:attribute) that has its own auth"
                )
            toolset.server.auth = auth
        if server.redis:
            raise CommandError(
                "--redis cannot apply to an McpServer (module:attribute): make it with "
                "spent_states=RedisSpentStates(URL)"
            )
        return toolset.server
    if _holds_served(toolset):
        raise CommandError(
            f"{wraps or _wrapping(options)} cannot apply to an McpServer (module:attribute): "
            "it is served as it is, with its own callbacks, credentials, resources and prompts"
        )
    given = dict(options.credentials)

    def credential(config: AuthConfig) -> AuthCredential | None:
        return credential_for(config, given)

    def credentials(request: object, config: AuthConfig) -> AuthCredential | None:
        return credential(config)

    # Each user's own credentials, when given: the specs asked for none (see access).
    users = user_credentials(server.access, given, os.environ, credential_for)
    guarded = restricted_by(server.access, toolset)
    callers = for_programs(users) if users is not None else None
    return McpServer(
        offered(guarded, server.catalog, credential, callers=callers),
        name=server.name,
        credentials=users if users is not None else credentials,
        tool_timeout=server.tool_timeout,
        auth=auth,
        list_ttl=LIST_TTL if server.list_ttl is None else server.list_ttl,
        spent_states=_spent_states(server.redis),
    )


def _spent_states(url: str | None) -> SpentStates | None:
    """``--redis``: the request states taken, in the Redis at ``url`` (None: in memory).

    Raises:
        CommandError: the ``redis`` extra is missing, or ``url`` is not a Redis URL.
    """
    if not url:
        return None
    from toolsets.mcp import RedisSpentStates

    try:
        return RedisSpentStates(url)
    except (ImportError, ValueError) as exc:
        raise CommandError(f"--redis: {exc}") from exc


def _holds_served(toolset: Toolset) -> bool:
    """Whether an `McpServer` source is within ``toolset`` (under a wrapper, or combined)."""
    if isinstance(toolset, ServedToolset):
        return True
    inner = getattr(toolset, "wrapped", None)
    if isinstance(inner, Toolset) and _holds_served(inner):
        return True
    return any(_holds_served(part) for part in getattr(toolset, "toolsets", ()))


def _wrapping(options: SourceOptions) -> str:
    """The option that made an `McpServer` source into another toolset."""
    if options.names:
        return "--name"
    if options.prefixes:
        return "--prefix"
    if options.confirm == "always":
        return "--confirm always"
    return "another source"


WORKER_ENV = "TOOLSETS_CLI_SERVE"
"""The environment variable naming the file where ``toolsets serve --workers N`` hands
its sources and options to its workers (only the path: the options hold secrets, and
the environment is inherited by every child process)."""
WORKER_LOAD_TIMEOUT = 120.0
"""Seconds a worker process may take to read the sources."""


@contextlib.contextmanager
def _worker_config(
    name: str, sources: Sequence[str], options: SourceOptions, server: ServerOptions
) -> Iterator[None]:
    """The workers' configuration in a file only this user can read (created with mode
    0600), its path in `WORKER_ENV`, both gone when the block ends."""
    given = {
        "server": server.plain(),
        "sources": list(sources),
        "options": {
            key: dict(value) if isinstance(value, Mapping) else value
            for key, value in vars(options).items()
            if key != "environ"
        },
    }
    handle, path = tempfile.mkstemp(prefix="toolsets-serve-", suffix=".json")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            json.dump(given, file)
        os.environ[WORKER_ENV] = path
        yield
    finally:
        os.environ.pop(WORKER_ENV, None)
        os.unlink(path)


def worker_server() -> McpServer:
    """The server of one worker process of ``toolsets serve --workers N`` (the factory
    `McpServer.run_http` imports in each): the sources of the command, read anew.

    Raises:
        CommandError: the sources could not be read (the cause chained), or not within
            `WORKER_LOAD_TIMEOUT`.
    """
    given = json.loads(Path(os.environ[WORKER_ENV]).read_text(encoding="utf-8"))
    plain: dict[str, Any] = {
        key: tuple(value) if isinstance(value, list) else value
        for key, value in given["options"].items()
    }
    plain["prefixes"] = tuple(tuple(each) for each in plain.get("prefixes", ()))
    options = SourceOptions(**plain)
    server = ServerOptions.from_plain(given["server"])
    loading = Sources(given["sources"], options)

    async def read() -> Toolset:
        with anyio.fail_after(WORKER_LOAD_TIMEOUT):
            toolset = await loading.open()
            if options.user_bearer is None:  # as `opened` does: nobody's to list with
                await toolset.list_tools(ToolContext())
            return toolset

    # Read in a thread with its own event loop: uvicorn calls this inside its loop.
    made: list[Toolset] = []
    failed: list[BaseException] = []

    def run() -> None:
        try:
            made.append(anyio.run(read))
        except BaseException as exc:  # handed to the waiting thread, which raises it
            failed.append(exc)

    # Loaded and listed as one process does it (`opened`): the collector paused, then
    # what was made frozen, so that no pass of the collector goes over it again while
    # the worker serves (a big spec is a million objects: each pass cost every call).
    with collector_paused() as loaded:
        thread = threading.Thread(target=run, name="toolsets-serve-worker", daemon=True)
        thread.start()
        thread.join(WORKER_LOAD_TIMEOUT + 5)
        if made:
            served = _server(made[0], server, options)
            loaded()
            tuned_for_serving()
    if failed:
        raise CommandError(
            f"a worker could not read the sources of {server.name}: {failed[0]}"
        ) from failed[0]
    if not made:
        raise CommandError(
            f"a worker did not read the sources of {server.name} within {WORKER_LOAD_TIMEOUT:g} s"
        )
    return served
