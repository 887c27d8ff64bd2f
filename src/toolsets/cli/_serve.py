"""``toolsets serve``: the tools of some sources as one MCP server, over stdio or
streamable HTTP, and the ``mcpServers`` entry that makes a client start it."""

from __future__ import annotations

import functools
import importlib
import inspect
import json
import os
import re
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from toolsets.cli._needs import missing_cli

try:
    import click
except ImportError as exc:
    raise missing_cli(exc) from exc

import anyio

from toolsets._auth import AuthConfig, AuthCredential
from toolsets._json import JsonValue
from toolsets._toolset import Toolset
from toolsets.cli._app import CommandError, opened, options_of, run_async, source_options
from toolsets.cli._sources import SourceOptions, Sources, credential_env_name, kind_of
from toolsets.cli._terminal import Terminal, credential_for

__all__ = ["WORKER_ENV", "client_config", "listen_address", "serve_command", "worker_server"]

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


def _server_name(sources: Sequence[str], stdio: Sequence[str]) -> str:
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
) -> tuple[dict[str, JsonValue], list[str]]:
    """The ``mcpServers`` object with one entry that runs (or reaches) this server, and
    the names of the secrets left as `PLACEHOLDER` in it.

    Paths are made absolute (a client starts the server in a directory of its own, so
    ``cwd`` is this one when a module or a ``--stdio`` command may need it); a
    ``--credential`` becomes its ``TOOLSETS_CREDENTIAL_*`` variable in ``env`` and a
    ``--header`` keeps its name, each with `PLACEHOLDER` for its value: secrets are
    never printed."""
    if http is not None:
        host, port = http
        shown = f"[{host}]" if ":" in host else host
        return {"mcpServers": {name: {"url": f"http://{shown}:{port}/mcp"}}}, []
    args: list[str] = ["serve"]
    python = False
    for source in sources:
        kind = kind_of(source)
        python = python or kind == "python"
        args.append(source if kind == "python" or "://" in source else str(Path(source).resolve()))
    secrets: list[str] = []
    env: dict[str, JsonValue] = {}
    for item in params["credentials"]:
        variable = credential_env_name(item.partition("=")[0].strip())
        env[variable] = PLACEHOLDER
        secrets.append(variable)
    for option, key in (("--stdio", "stdio"), ("--mcp-url", "http"), ("--base-url", "base_url")):
        values = params[key] if isinstance(params[key], tuple) else (params[key],)
        args += [f"{option}={value}" for value in values if value]
    for item in params["headers"]:
        header = item.partition("=")[0].strip()
        args.append(f"--header={header}={PLACEHOLDER}")
        secrets.append(f"--header {header}")
    for option, key in (("--tag", "tags"), ("--method", "methods"), ("--path", "paths")):
        args += [f"{option}={value}" for value in params[key]]
    args += [f"--name={value}" for value in params["names"]]
    command = _command()
    entry: dict[str, JsonValue] = {"command": command[0], "args": [*command[1:], *args]}
    if env:
        entry["env"] = env
    if python or params["stdio"]:
        # module:attribute is imported from the directory it was named in, and a --stdio
        # command may name files relative to it.
        entry["cwd"] = os.getcwd()
    return {"mcpServers": {name: entry}}, secrets


@click.command(
    "serve",
    epilog="""
\b
Over stdio by default (what Claude Desktop, Cursor or VS Code start); --http serves
streamable HTTP on HOST:PORT (127.0.0.1 unless a host is given). Upstream MCP servers
over HTTP are given with --mcp-url.

\b
Examples:
  toolsets serve petstore.yaml --print-config
  toolsets serve petstore.yaml --credential api_key=KEY
  toolsets serve claude_desktop_config.json --http 127.0.0.1:8000
  toolsets serve https://example.com/openapi.json --http :8000 --stateless --workers 4
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
@click.option("--server-name", metavar="NAME", help="The server's name (default: the source's).")
@click.option(
    "--print-config",
    is_flag=True,
    help="Print the mcpServers entry that runs this server, to paste into a client's "
    "config, and exit.",
)
def serve_command(
    sources: tuple[str, ...],
    listen: str | None,
    stateless: bool,
    workers: int,
    server_name: str | None,
    print_config: bool,
    **params: Any,
) -> None:
    """Serve the tools of every SOURCE as one MCP server."""
    http = listen_address(listen) if listen is not None else None
    if http is None and (stateless or workers > 1):
        raise click.UsageError("--stateless and --workers are for --http")
    if workers > 1 and not stateless:
        raise click.UsageError("--workers needs --stateless (sessions live in one process)")
    name = server_name or _server_name(sources, params["stdio"])
    terminal = Terminal()
    if print_config:
        config, secrets = client_config(name, sources, params, http=http)
        terminal.result(config)
        if secrets:
            terminal.note(f"fill in: {', '.join(secrets)}")
        return
    server_class = getattr(importlib.import_module("toolsets.mcp"), "McpServer", None)
    if server_class is None:
        raise CommandError("serving needs toolsets.mcp.McpServer, which this build lacks")

    options: dict[str, Any] = {}
    if http is not None:
        options = {"host": http[0], "port": http[1]}
        if stateless:
            options["stateless"] = True

    loading_options = options_of(params)

    async def go() -> None:
        async with opened(terminal, sources, params) as (toolset, _):
            server = _server(server_class, toolset, name, loading_options)
            if http is None:
                await server.run_stdio()
            else:
                terminal.note(f"serving {name} on http://{http[0]}:{http[1]}/mcp")
                await server.run_http(**options)

    if http is None or inspect.iscoroutinefunction(server_class.run_http):
        run_async(go)
        return
    if workers > 1:
        # Each worker process builds its own server (`worker_server`) from what this
        # command was given, handed down in the environment it inherits.
        os.environ[WORKER_ENV] = json.dumps(
            {"name": name, "sources": list(sources), "options": _plain(loading_options)}
        )
        options.update(workers=workers, factory=f"{__name__}:worker_server")
    # A runner that starts its own event loop (uvicorn's): the sources are read here
    # first (a broken spec fails now, in one line), and connected in the server's loop.
    toolset = run_async(Sources(sources, loading_options).open)
    terminal.note(f"serving {name} on http://{http[0]}:{http[1]}/mcp")
    try:
        _server(server_class, toolset, name, loading_options).run_http(**options)
    finally:
        os.environ.pop(WORKER_ENV, None)
        run_async(toolset.shutdown)


def _server(server_class: Any, toolset: Toolset, name: str, options: SourceOptions) -> Any:
    """The `McpServer` of ``toolset``: a tool that asks for a credential (beyond the
    specs', given when they were read) gets the one ``--credential`` or
    ``TOOLSETS_CREDENTIAL_<SCHEME>`` gives, never the client's own token."""
    given = dict(options.credentials)

    def credentials(request: object, config: AuthConfig) -> AuthCredential | None:
        return credential_for(config, given)

    return server_class(toolset, name=name, credentials=credentials)


WORKER_ENV = "TOOLSETS_CLI_SERVE"
"""Where ``toolsets serve --workers N`` hands its sources and options to its workers."""


def _plain(options: SourceOptions) -> dict[str, Any]:
    return {
        key: dict(value) if isinstance(value, Mapping) else value
        for key, value in vars(options).items()
        if key != "environ"
    }


def worker_server() -> Any:
    """The server of one worker process of ``toolsets serve --workers N`` (the factory
    `McpServer.run_http` imports in each): the sources of the command, read anew."""
    given = json.loads(os.environ[WORKER_ENV])
    plain: dict[str, Any] = {
        key: tuple(value) if isinstance(value, list) else value
        for key, value in given["options"].items()
    }
    options = SourceOptions(**plain)
    loading = Sources(given["sources"], options)
    # Read in a thread with its own event loop: uvicorn may call this inside its loop.
    made: list[Toolset] = []
    thread = threading.Thread(target=lambda: made.append(anyio.run(loading.open)))
    thread.start()
    thread.join()
    if not made:
        raise RuntimeError(f"the sources of {given['name']} could not be read")
    server_class = importlib.import_module("toolsets.mcp").McpServer
    return _server(server_class, made[0], given["name"], options)
