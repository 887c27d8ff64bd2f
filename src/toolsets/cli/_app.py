"""The ``toolsets`` command's commands, and its one error boundary (`run`)."""

from __future__ import annotations

import functools
import importlib
import json
import logging
import sys
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import anyio

from toolsets.cli._needs import missing_cli

try:
    import click
except ImportError as exc:
    raise missing_cli(exc) from exc

from toolsets import __version__
from toolsets._auth import AuthCredential
from toolsets._context import ToolConfirmation, ToolContext
from toolsets._errors import SpecError, ToolDefinitionError, ToolNotFoundError, ToolsetError
from toolsets._gc import collector_paused
from toolsets._invoke import (
    DEFAULT_TOOL_TIMEOUT,
    ConfirmationNeeded,
    CredentialNeeded,
    Done,
    Outcome,
    invoke,
)
from toolsets._json import JsonValue
from toolsets._results import is_error_result
from toolsets._settle import MAX_PAUSES, settle
from toolsets._tool import Tool
from toolsets._toolset import Toolset
from toolsets.cli._describe import (
    broken,
    described,
    first_line,
    hints_of,
    operation_details,
    parameters_in_short,
    parameters_of,
    returns_of,
    success_of,
    unwrapped,
)
from toolsets.cli._example import example_arguments
from toolsets.cli._sources import (
    CONFIRM_POLICIES,
    CREDENTIAL_ENV_PREFIX,
    DEFAULT_CONFIRM,
    SourceOptions,
    Sources,
    pairs,
    read_spec_text,
)
from toolsets.cli._terminal import Bar, Terminal, credential_for, dumps, no_credential

__all__ = [
    "MAX_PAUSES",
    "CommandError",
    "SourceCommand",
    "cli",
    "debug_option",
    "json_option",
    "mcp_server_options",
    "opened",
    "options_of",
    "run",
    "run_async",
    "source_options",
    "source_words",
    "tool_timeout_option",
]

T = TypeVar("T")


class CommandError(ToolsetError):
    """What a command refuses to do, said in one line (exit status 1)."""


# --- options every command that loads sources takes ---------------------------------

_SOURCE_HELP = f"""
\b
A SOURCE is:
  an OpenAPI spec (a path or http(s) URL, JSON or YAML),
  an mcpServers config file (Claude Desktop, Cursor, VS Code),
  module:attribute naming a Python toolset, tool or function (or a list of them);
and --stdio "command args" / --http URL add MCP servers. Several combine.

\b
Credentials for a spec's security schemes: --credential SCHEME=VALUE, or the
environment variable {CREDENTIAL_ENV_PREFIX}<SCHEME> (the scheme's name upper-cased,
every other character than a letter or digit made _): e.g. api_key ->
{CREDENTIAL_ENV_PREFIX}API_KEY. HTTP basic takes user:password.

\b
Confirmation: --confirm destructive (the default) asks before a call of a tool that may
destroy or overwrite (an MCP tool not marked read-only or non-destructive; a DELETE, PUT
or PATCH operation; a Python tool asks only if it says so); --confirm always asks
before every call, --confirm never before none (but a Python tool that asks for
confirmation itself). One policy over every source: a call is confirmed once.
"""


def mcp_server_options(*, http_source: bool = True) -> list[Callable[..., Any]]:
    """The options naming MCP servers: ``--stdio``, ``--mcp-url`` (also ``--http``
    unless not ``http_source``) and ``--mcp-header``."""
    return [
        click.option(
            "--stdio",
            "stdio",
            multiple=True,
            metavar="'COMMAND ARGS'",
            help="An MCP server to start, talking over stdio (repeatable).",
        ),
        click.option(
            "--mcp-url",
            *(("--http",) if http_source else ()),
            "http",
            multiple=True,
            metavar="URL",
            help="An MCP server over streamable HTTP (repeatable).",
        ),
        click.option(
            "--mcp-header",
            "mcp_headers",
            multiple=True,
            metavar="NAME=VALUE",
            help="A header for every request to an MCP server over HTTP (repeatable; never shown).",
        ),
    ]


def source_options(function: Callable[..., Any], *, http_source: bool = True) -> Callable[..., Any]:
    """The options that say which tools a command loads (``--http URL`` is
    ``--mcp-url``'s other name, except for ``serve``, where it is where to listen)."""
    decorators = [
        *mcp_server_options(http_source=http_source),
        click.option("--base-url", help="Where a spec's API is, instead of its servers."),
        click.option(
            "--credential",
            "credentials",
            multiple=True,
            metavar="SCHEME=VALUE",
            help="A credential for a spec's security scheme (repeatable).",
        ),
        click.option(
            "--header",
            "headers",
            multiple=True,
            metavar="NAME=VALUE",
            help="A header for every request to a spec's API, and for fetching a spec's "
            "URL (repeatable; never shown).",
        ),
        click.option(
            "--tag", "tags", multiple=True, help="Keep a spec's operations with this tag."
        ),
        click.option(
            "--method", "methods", multiple=True, help="Keep a spec's operations of this method."
        ),
        click.option(
            "--path",
            "paths",
            multiple=True,
            metavar="GLOB",
            help="Keep a spec's operations whose path matches (* matches across /).",
        ),
        click.option(
            "--name",
            "names",
            multiple=True,
            metavar="GLOB",
            help="Keep the tools of this name or glob, from every source.",
        ),
        click.option(
            "--prefix",
            "prefix_names",
            multiple=True,
            metavar="NAME",
            help="Offer the tools of the SOURCE, --stdio or --http just before it as "
            "NAME_tool (repeatable: one per source; for two servers with the same tools).",
        ),
        click.option(
            "--confirm",
            type=click.Choice(CONFIRM_POLICIES, case_sensitive=False),
            default=DEFAULT_CONFIRM,
            show_default=True,
            help="Which calls ask the user first: never, destructive (an MCP tool not "
            "marked read-only or non-destructive; DELETE, PUT, PATCH), or always.",
        ),
        debug_option,
    ]
    for decorator in reversed(decorators):
        function = decorator(function)
    return function


debug_option = click.option(
    "--debug", is_flag=True, expose_value=False, help="Show tracebacks of errors."
)
"""``--debug``, of every command (`run` reads it from the command line itself)."""

json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON, for scripts.")
"""``--json``, of every command that prints results."""

tool_timeout_option = click.option(
    "--tool-timeout",
    "tool_timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=DEFAULT_TOOL_TIMEOUT,
    show_default=True,
    metavar="SECONDS",
    help="Seconds a tool call may take (unless the tool says otherwise).",
)
"""``--tool-timeout SECONDS``, of every command that calls tools."""


_PREFIXES = "toolsets.prefixes"
"""Where `SourceCommand` leaves the ``--prefix`` of each source (in ``ctx.meta``)."""


class SourceCommand(click.Command):
    """A command taking sources: ``--prefix NAME`` names the source just before it on
    the command line (a SOURCE argument, ``--stdio``, or ``--http``/``--mcp-url``),
    which click's parsing alone does not tell."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta[_PREFIXES] = self._prefixes(args)
        return super().parse_args(ctx, args)

    def _prefixes(self, args: Sequence[str]) -> tuple[tuple[str, int, str], ...]:
        """``(kind, index, NAME)`` for each ``--prefix NAME``: the ``index``-th
        positional argument (kind ``"source"``), ``--stdio`` or ``--http`` option."""
        taking: dict[str, str] = {}  # option -> the parameter it gives a value to
        for param in self.params:
            if isinstance(param, click.Option) and not param.is_flag and param.name:
                for opt in param.opts:
                    taking[opt] = param.name
        counts = {"source": 0, "stdio": 0, "http": 0}
        last: tuple[str, int] | None = None
        found: list[tuple[str, int, str]] = []
        named: set[tuple[str, int]] = set()
        words = iter(args)
        for word in words:
            if word == "--":
                for _ in words:
                    last = ("source", counts["source"])
                    counts["source"] += 1
                break
            option, has_value, value = word.partition("=")
            if not word.startswith("-") or word == "-":
                last = ("source", counts["source"])
                counts["source"] += 1
                continue
            name = taking.get(option)
            if name is None:
                continue
            if not has_value:
                value = next(words, "")
            if name in ("stdio", "http"):
                last = (name, counts[name])
                counts[name] += 1
            elif name == "prefix_names":
                if last is None:
                    raise click.UsageError(
                        f"--prefix {value} names no source: put it after the SOURCE, "
                        "--stdio or --http whose tools it prefixes"
                    )
                if last in named:
                    raise click.UsageError(f"--prefix {value}: that source has a prefix already")
                named.add(last)
                found.append((*last, value))
        return tuple(found)


def _prefixes() -> tuple[tuple[str, int, str], ...]:
    """The ``--prefix`` of each source, as `SourceCommand` found them."""
    ctx = click.get_current_context(silent=True)
    return tuple(ctx.meta.get(_PREFIXES, ())) if ctx is not None else ()


def options_of(params: Mapping[str, Any]) -> SourceOptions:
    """The source options a command was given."""
    return SourceOptions(
        base_url=params["base_url"],
        credentials=pairs(params["credentials"], "--credential"),
        headers=pairs(params["headers"], "--header"),
        mcp_headers=pairs(params["mcp_headers"], "--mcp-header"),
        tags=tuple(params["tags"]),
        methods=tuple(params["methods"]),
        paths=tuple(params["paths"]),
        names=tuple(params["names"]),
        stdio=tuple(params["stdio"]),
        http=tuple(params["http"]),
        tool_timeout=params.get("tool_timeout"),
        debug=_debugging(),
        confirm=params["confirm"].lower(),
        prefixes=_prefixes(),
    )


def _debugging() -> bool:
    """Whether the command runs with ``--debug`` (`run` says so in the context)."""
    ctx = click.get_current_context(silent=True)
    return ctx is not None and bool((ctx.find_root().obj or {}).get("debug"))


@asynccontextmanager
async def opened(
    terminal: Terminal, sources: Sequence[str], params: Mapping[str, Any], *, calls: bool = True
) -> AsyncIterator[tuple[Toolset, Sequence[Tool]]]:
    """Every source's tools (loaded and connected under a progress display), shut down
    when the block ends. ``calls``: the tools are offered for calling (`serve`, `run`),
    so a warning says when operations cannot be (a spec naming no server)."""
    options = options_of(params)
    loading = Sources(sources, options)
    what = "Loading the spec" if loading.has_specs else "Connecting"
    # No collector passes while the sources load and are listed (a big spec is a
    # million long-lived objects, and each pass over them is wasted); then what is
    # loaded is spared the passes for as long as the command runs.
    with collector_paused() as loaded:
        async with terminal.progress(f"{what}…"):
            toolset, tools = await _open(terminal, loading, calls=calls)
        loaded()
    try:
        yield toolset, tools
    finally:
        with anyio.CancelScope(shield=True):
            await toolset.shutdown()


async def _open(
    terminal: Terminal, loading: Sources, *, calls: bool
) -> tuple[Toolset, Sequence[Tool]]:
    """`opened`'s toolset and its tools, with the warnings about them."""
    try:
        toolset = await loading.open()
    except BaseException:
        with anyio.CancelScope(shield=True):
            await loading.shutdown_specs()
        raise
    try:
        try:
            tools = await toolset.list_tools(ToolContext())
        except ToolDefinitionError as exc:
            if exc.tool_name is None or len(loading.parts) < 2:
                raise
            raise CommandError(await loading.same_names(exc.tool_name)) from exc
        for spec in loading.empty:
            terminal.warn(f"{spec} has no operations (no paths): it offers no tools")
        if loading.selects:
            # Said on stderr; the (maybe empty) list is still the result.
            unmatched = await loading.unmatched()
            if not tools and not unmatched:
                unmatched = [f"{loading.selection} together match no tool"]
            if unmatched:
                terminal.warn("; ".join(unmatched))
        if calls:
            _warn_uncallable(terminal, tools)
    except BaseException:
        with anyio.CancelScope(shield=True):
            await toolset.shutdown()
        raise
    return toolset, tools


def run_async(make: Callable[[], Awaitable[T]]) -> T:
    async def call() -> T:
        return await make()

    return anyio.run(call)


def _split_tool(
    arguments: Sequence[str], command: str, params: Mapping[str, Any]
) -> tuple[list[str], str, list[str]]:
    """``SOURCE… TOOL key=value…`` split: the trailing ``key=value`` items, the tool
    before them, the sources before it.

    Raises:
        click.UsageError: no TOOL, or a word after the TOOL that is not ``key=value``
            (it names the word, not a source it would otherwise be taken for).
    """
    end = len(arguments)
    while end > 0 and _is_pair(arguments[end - 1]):
        end -= 1
    if end == 0:
        raise click.UsageError(f"{command} needs the name of a TOOL")
    name = arguments[end - 1]
    if end == 1 and ("://" in name or Path(name).exists()):  # SOURCE given, TOOL forgotten
        raise click.UsageError(f"{command} needs the name of a TOOL after {name}")
    sources = list(arguments[: end - 1])
    first_pair = next((i for i, item in enumerate(sources) if _is_pair(item)), None)
    if first_pair is not None and first_pair > 0:  # TOOL key=value… word key=value…
        stray = next(item for item in arguments[first_pair:] if not _is_pair(item))
        raise _not_a_pair(command, stray, sources[first_pair - 1])
    has_servers = bool(params.get("stdio") or params.get("http"))
    if sources and (len(sources) > 1 or has_servers) and not _looks_like_source(sources[-1]):
        raise _not_a_pair(command, name, sources[-1])  # TOOL word
    return sources, name, list(arguments[end:])


def _is_pair(item: str) -> bool:
    """``key=value`` or ``key:=json`` (not a URL with a query, not a path: their
    part before ``=`` holds a ``/``)."""
    key, sep, _ = item.partition("=")
    return bool(sep) and bool(key) and "/" not in key


def _looks_like_source(item: str) -> bool:
    """What a SOURCE may be: an existing path, a URL, ``module:attribute``, or a path
    of a spec or config file (one that does not exist is said so when it is read)."""
    return (
        "://" in item
        or ":" in item
        or "/" in item
        or item.endswith((".json", ".yaml", ".yml"))
        or Path(item).exists()
    )


def _not_a_pair(command: str, word: str, tool: str) -> click.UsageError:
    if command == "inspect":
        return click.UsageError(
            f"inspect: {word!r} after the tool {tool!r}: inspect takes one TOOL, no arguments"
        )
    return click.UsageError(
        f"{command}: {word!r} after the tool {tool!r} is not an argument: write "
        f"{word.partition('=')[0]}=VALUE (or key:=JSON, or --args JSON)"
    )


def _find(tools: Sequence[Tool], name: str) -> Tool:
    """The tool called ``name``, or else the operation whose operationId is ``name`` as
    the spec writes it (``repos/get`` for ``repos_get``), as `OpenApiToolset` finds it."""
    for tool in tools:
        if tool.name == name:
            return tool
    from toolsets.openapi import RestApiTool

    for tool in tools:
        operation = unwrapped(tool)
        if isinstance(operation, RestApiTool) and operation.operation.operation_id == name:
            return tool
    raise ToolNotFoundError(name, (tool.name for tool in tools))


# --- the group -------------------------------------------------------------------------


class _Commands(click.Group):
    """The commands, ``run``, ``serve``, ``resources`` and ``prompts`` imported only
    when used (the agent loop, the models and the MCP SDK take a while to import)."""

    LATER: ClassVar[dict[str, str]] = {
        "prompts": "toolsets.cli._items:prompts_group",
        "resources": "toolsets.cli._items:resources_group",
        "run": "toolsets.cli._chat:run_command",
        "serve": "toolsets.cli._serve:serve_command",
    }

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *self.LATER])

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        where = self.LATER.get(cmd_name)
        if where is None:
            return super().get_command(ctx, cmd_name)
        module, _, name = where.partition(":")
        command: click.Command = getattr(importlib.import_module(module), name)
        return command


@click.group(
    cls=_Commands,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog="""\b
Examples:
  toolsets list petstore.yaml
  toolsets inspect petstore.yaml getPetById
  toolsets call petstore.yaml getPetById petId=1
  toolsets call --stdio "python server.py" add a=1 b=2
  toolsets validate petstore.yaml
  toolsets serve petstore.yaml --print-config
""",
)
@click.version_option(__version__, "-V", "--version", prog_name="toolsets")
@debug_option
def cli() -> None:
    """Tools from OpenAPI specs, MCP servers and Python functions, from the shell.

    Results go to stdout (JSON with --json); progress and errors to stderr. Errors are
    one line and a non-zero exit status (--debug shows the traceback)."""


# --- list --------------------------------------------------------------------------------


@cli.command(
    "list",
    cls=SourceCommand,
    epilog=_SOURCE_HELP
    + """
\b
Examples:
  toolsets list petstore.yaml --tag pets
  toolsets list https://example.com/openapi.json --method get --json
  toolsets list claude_desktop_config.json
  toolsets list --stdio "npx -y @modelcontextprotocol/server-everything"
  toolsets list myapp.tools:toolset
""",
)
@click.argument("sources", nargs=-1, metavar="SOURCE…")
@source_options
@json_option
@click.option(
    "--schemas",
    is_flag=True,
    help="With --json: each tool's parameter schema too (on a spec of thousands of "
    "operations, every schema is then built: seconds).",
)
def list_command(sources: tuple[str, ...], as_json: bool, schemas: bool, **params: Any) -> None:
    """List the tools of every SOURCE: name, hints, parameters and description (with
    --json: name, description, hints, and an operation's method, path and URL)."""
    if schemas and not as_json:
        raise click.UsageError("--schemas is for --json (the table names the parameters)")
    terminal = Terminal()
    confirm = params["confirm"].lower()

    async def go() -> None:
        async with opened(terminal, sources, params, calls=False) as (_, tools):
            if as_json:
                entries: list[JsonValue] = await _each(
                    terminal,
                    tools,
                    functools.partial(described, confirm=confirm, schemas=schemas),
                    "Reading the schemas" if schemas else None,
                )
                terminal.result(entries)
                return
            if not tools:
                terminal.note("0 tools")
                return

            def row(tool: Tool) -> list[str]:
                hints = str(hints_of(tool, confirm))
                return [tool.name, hints, parameters_in_short(tool), first_line(tool)]

            rows = await _each(terminal, tools, row, "Reading the parameters")
            terminal.table(["tool", "hints", "parameters", "description"], rows)
            terminal.note(_count(len(tools), "tool"))

    run_async(go)


_BAR_FROM = 200
"""Tools from which a progress bar shows while their schemas are read."""


async def _each(
    terminal: Terminal,
    tools: Sequence[Tool],
    make: Callable[[Tool], T],
    building: str | None,
) -> list[T]:
    """``make`` of each tool, in order. ``building``: it may build the tools' schemas
    (a spec of thousands of operations builds each on first need), so it runs in a
    worker thread, under a progress bar saying ``building`` when the tools are many."""
    if building is None:
        return [make(tool) for tool in tools]

    def each(bar: Bar) -> list[T]:
        made = []
        for tool in tools:
            made.append(make(tool))
            bar.advance()
        return made

    if len(tools) < _BAR_FROM:
        return await anyio.to_thread.run_sync(each, Bar())
    with terminal.bar(building, len(tools)) as bar:
        return await anyio.to_thread.run_sync(each, bar, abandon_on_cancel=True)


# --- inspect ---------------------------------------------------------------------------


@cli.command(
    "inspect",
    cls=SourceCommand,
    epilog=_SOURCE_HELP
    + """
\b
Examples:
  toolsets inspect petstore.yaml getPetById
  toolsets inspect --stdio "python server.py" add --json
""",
)
@click.argument("arguments", nargs=-1, required=True, metavar="SOURCE… TOOL")
@source_options
@json_option
def inspect_command(arguments: tuple[str, ...], as_json: bool, **params: Any) -> None:
    """Show one tool: its description, full parameter schema, what it returns, an
    OpenAPI operation's method, path and URL, and an example call."""
    sources, name, rest = _split_tool(arguments, "inspect", params)
    if rest:
        raise click.UsageError(f"inspect takes no key=value arguments: {rest[0].split('=')[0]}")
    terminal = Terminal()
    confirm = params["confirm"].lower()

    async def go() -> None:
        async with opened(terminal, sources, params, calls=False) as (_, tools):
            tool = _find(tools, name)
            loader = logging.getLogger("toolsets.openapi")
            loader.disabled = True  # the problem is the error below: not logged too
            try:
                problem = broken(tool)
            finally:
                loader.disabled = False
            if problem is not None:
                raise CommandError(f"{tool.name} cannot be offered or called: {problem}")
            described_ = described(tool, confirm, schemas=True)
            schema = parameters_of(tool)
            example = example_arguments(schema, tool_name=tool.name)
            success = success_of(tool)
            if isinstance(success, SpecError):
                terminal.warn(f"what {tool.name} returns cannot be shown: {success}")
                success = None
            returns = returns_of(tool, success)
            operation = operation_details(tool, success)
            if as_json:
                shown = dict(returns) if returns is not None else None
                if operation is not None:
                    described_["operation"] = operation
                terminal.result({**described_, "returns": shown, "example": example})
                return
            out = terminal.out
            out.print(f"[bold]{tool.name}[/bold]  {hints_of(tool, confirm)}".rstrip())
            if operation is not None:
                out.print(_request_line(operation), markup=False)
            if tool.description:
                out.print(tool.description.strip(), markup=False)
            out.print("\n[bold]Parameters[/bold]")
            out.print(dumps(dict(schema)), markup=False)
            response = operation.get("response") if operation is not None else None
            if returns is not None or response:
                out.print(f"\n[bold]Returns[/bold]{_response_line(response)}")
                if returns is not None:
                    out.print(dumps(dict(returns)), markup=False)
            out.print("\n[bold]Example[/bold]")
            if example is None:
                out.print("(no example could be made from the schema)")
            else:
                out.print(_example_call(sources, params, tool.name, example), markup=False)

    run_async(go)


def _request_line(operation: Mapping[str, JsonValue]) -> str:
    """``GET https://api.example.com/pets/{petId}`` (the path alone when the spec names
    no absolute server), and the operationId."""
    where = operation["url"] or operation["path"]
    line = f"{operation['method']} {where}"
    if operation["url"] is None:
        line += " (no server URL: give --base-url to call it)"
    if operation["operation_id"]:
        line += f"  (operationId {operation['operation_id']})"
    return line


def _response_line(response: JsonValue) -> str:
    """`` (200 application/json: the pet)`` for the Returns heading, or ``""``."""
    if not isinstance(response, Mapping):
        return ""
    said = [str(response["status"])]
    if response.get("content_type"):
        said.append(str(response["content_type"]))
    text = " ".join(said)
    description = " ".join(str(response.get("description") or "").split())
    return f" ({text}: {description})" if description else f" ({text})"


def _example_call(
    sources: Sequence[str], params: Mapping[str, Any], name: str, example: Mapping[str, Any]
) -> str:
    import shlex

    words = ["toolsets", "call", *source_words(sources, params, _prefixes())]
    if params["base_url"]:
        words += ["--base-url", params["base_url"]]
    words.append(name)
    command = " ".join(shlex.quote(word) for word in words)
    return f"{command} --args {shlex.quote(json.dumps(example, ensure_ascii=False))}"


def source_words(
    sources: Sequence[str],
    params: Mapping[str, Any],
    prefixes: Sequence[tuple[str, int, str]],
    *,
    http_option: str = "--http",
    source: Callable[[str], str] = str,
) -> list[str]:
    """The command-line words giving the same sources again: each SOURCE (as ``source``
    writes it), ``--stdio=COMMAND`` and ``http_option=URL``, each followed by the
    ``--prefix=NAME`` it was given (``prefixes``: see `SourceOptions.prefixes`)."""
    prefix = {(kind, index): named for kind, index, named in prefixes}
    words: list[str] = []

    def add(kind: str, index: int, word: str) -> None:
        words.append(word)
        named = prefix.get((kind, index))
        if named is not None:
            words.append(f"--prefix={named}")

    for index, value in enumerate(sources):
        add("source", index, source(value))
    for index, command in enumerate(params["stdio"]):
        add("stdio", index, f"--stdio={command}")
    for index, url in enumerate(params["http"]):
        add("http", index, f"{http_option}={url}")
    return words


# --- call ------------------------------------------------------------------------------


@cli.command(
    "call",
    cls=SourceCommand,
    epilog=_SOURCE_HELP
    + """
\b
Arguments: key=value (read as JSON unless the parameter is a string: n=3, tags=["a"],
flag=true), key:=JSON (always JSON), or --args with one JSON object.

\b
Examples:
  toolsets call petstore.yaml getPetById petId=1
  toolsets call api.yaml create_note --args '{"title": "hi"}' --credential api_key=KEY
  toolsets call --stdio "python server.py" delete_file path=/tmp/x --yes
""",
)
@click.argument("arguments", nargs=-1, required=True, metavar="SOURCE… TOOL [KEY=VALUE…]")
@source_options
@click.option("--args", "args_json", metavar="JSON", help="The arguments as one JSON object.")
@click.option("--yes", "-y", is_flag=True, help="Confirm calls that ask, without asking.")
@tool_timeout_option
@click.option(
    "--json", "as_json", is_flag=True, help="Print JSON, for scripts (the result is JSON always)."
)
def call_command(
    arguments: tuple[str, ...],
    args_json: str | None,
    yes: bool,
    as_json: bool,
    **params: Any,
) -> None:
    """Call one tool and print its result (JSON); exit status 1 if it is an error.

    A tool that requires confirmation asks on the terminal (--yes confirms without
    asking; with no terminal and no --yes the call is refused)."""
    sources, name, pairs_given = _split_tool(arguments, "call", params)
    if args_json is not None and pairs_given:
        raise click.UsageError("give the arguments as key=value or as --args, not both")
    terminal = Terminal()

    async def go() -> int:
        async with opened(terminal, sources, params, calls=False) as (_, tools):
            tool = _find(tools, name)
            args = _json_args(args_json) if args_json is not None else {}
            args.update(_pairs_args(tool, pairs_given))
            return await _call(
                terminal, tool, args, yes=yes, timeout=params["tool_timeout"], params=params
            )

    # A server that exits during the call: the error result says so, in one line.
    with _dropped(logging.getLogger("toolsets.mcp"), "server_exited"):
        status = run_async(go)
    if status:
        sys.exit(status)


@contextmanager
def _dropped(logger: logging.Logger, marker: str) -> Iterator[None]:
    """``logger``'s records marked ``marker`` (in their ``extra``) dropped in the block."""

    def keep(record: logging.LogRecord) -> bool:
        return not getattr(record, marker, False)

    logger.addFilter(keep)
    try:
        yield
    finally:
        logger.removeFilter(keep)


def _json_args(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CommandError(f"--args is not JSON: {exc.msg} at character {exc.pos}") from exc
    if not isinstance(value, dict):
        raise CommandError("--args must be a JSON object")
    return value


def _accepts_string(schema: object) -> bool:
    if not isinstance(schema, Mapping):
        return True
    kind = schema.get("type")
    if isinstance(kind, str):
        return kind == "string"
    if isinstance(kind, list):
        return "string" in kind
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return any(isinstance(item, str) for item in enum)
    return False


def _pairs_args(tool: Tool, given: Sequence[str]) -> dict[str, Any]:
    """``key=value`` and ``key:=json`` items as arguments: a value is read as JSON unless
    the parameter takes a string (what is not JSON stays a string: the checker names a
    wrong one)."""
    properties = parameters_of(tool).get("properties") or {}
    args: dict[str, Any] = {}
    for item in given:
        key, _, raw = item.partition("=")
        if key.endswith(":"):
            key = key[:-1]
            try:
                args[key] = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise CommandError(f"{key}:= takes JSON: {exc.msg} at character {exc.pos}") from exc
            continue
        if _accepts_string(properties.get(key)):
            args[key] = raw
            continue
        try:
            args[key] = json.loads(raw)
        except json.JSONDecodeError:
            args[key] = raw
    return args


async def _call(
    terminal: Terminal,
    tool: Tool,
    args: dict[str, Any],
    *,
    yes: bool,
    timeout: float,  # noqa: ASYNC109 (the tool's deadline, which invoke enforces)
    params: Mapping[str, Any],
) -> int:
    """Call ``tool`` through the one call path, answering its pauses; print the result.
    The exit status: 0, or 1 for an error result."""
    credentials = pairs(params["credentials"], "--credential")
    _check_base_url(tool)
    ctx = ToolContext(function_call_id="toolsets-cli")

    async def run(
        args: dict[str, Any],
        confirmation: ToolConfirmation | None = None,
        credential: AuthCredential | None = None,
        *,
        resumed: bool = True,
    ) -> Outcome:
        async with terminal.call_progress(tool.name) as report:
            ctx.progress = report
            return await invoke(
                tool,
                args,
                ctx,
                default_timeout=timeout,
                confirmation=confirmation,
                credential=credential,
                resumed=resumed,
            )

    async def confirm(needed: ConfirmationNeeded) -> ToolConfirmation:
        if yes:
            return ToolConfirmation(confirmed=True)
        if not terminal.interactive:
            raise CommandError(
                f"{tool.name} needs confirmation ({needed.hint}): pass --yes, or run it on a "
                "terminal"
            )
        return ToolConfirmation(confirmed=await terminal.ask(needed.hint))

    async def lookup(needed: CredentialNeeded) -> AuthCredential:
        found = credential_for(needed.auth_config, credentials)
        if found is None:
            raise CommandError(no_credential(tool.name, needed.auth_config))
        return found

    first = await run(args, resumed=False)
    outcome = await settle(first, resume=run, confirm=confirm, lookup=lookup)
    result = outcome.result if isinstance(outcome, Done) else outcome.interim
    terminal.result(result)
    if is_error_result(result):
        terminal.err.print(f"toolsets: {tool.name}: {_error_line(result)}", markup=False)
        return 1
    return 0


def _warn_uncallable(terminal: Terminal, tools: Sequence[Tool]) -> None:
    """A warning when operations cannot be called: their spec says nowhere absolute
    where its API is (and no ``--base-url`` was given)."""
    from toolsets.openapi import RestApiTool

    stuck = [
        tool.name
        for tool in tools
        if isinstance(operation := unwrapped(tool), RestApiTool) and operation.base_url is None
    ]
    if stuck:
        terminal.warn(
            f"{_count(len(stuck), 'operation')} cannot be called (e.g. {stuck[0]}): the "
            "spec names no server, or a relative one; give the API's URL with --base-url URL"
        )


def _check_base_url(tool: Tool) -> None:
    """Raise, naming ``--base-url``, when ``tool`` is an operation of a spec that says
    nowhere absolute where its API is.

    Raises:
        CommandError: saying so (nothing is sent).
    """
    from toolsets.openapi import RestApiTool

    operation = unwrapped(tool)
    if not isinstance(operation, RestApiTool) or operation.base_url is not None:
        return
    servers = operation.operation.servers
    where = f"its server URL {servers[0].url!r} is relative" if servers else "names no server"
    raise CommandError(f"{tool.name}: the spec {where}: give the API's URL with --base-url URL")


def _error_line(result: JsonValue) -> str:
    """An error result in one line: its fields' problems, else its message."""
    assert isinstance(result, Mapping)
    fields = result.get("fields")
    if isinstance(fields, Mapping) and fields:
        line = "invalid arguments: " + "; ".join(f"{k}: {v}" for k, v in fields.items())
    else:
        line = str(result.get("error"))
    return " ".join(line.split())


# --- validate --------------------------------------------------------------------------


@cli.command(
    "validate",
    epilog="""
\b
Examples:
  toolsets validate petstore.yaml
  toolsets validate https://example.com/openapi.json --json
""",
)
@click.argument("spec")
@click.option("--json", "as_json", is_flag=True, help="Print JSON, for scripts.")
@click.option("--max-errors", type=int, default=1000, show_default=True)
@click.option(
    "--header",
    "headers",
    multiple=True,
    metavar="NAME=VALUE",
    help="A header for fetching SPEC's URL (repeatable; never shown).",
)
@debug_option
def validate_command(spec: str, as_json: bool, max_errors: int, headers: tuple[str, ...]) -> None:
    """Check SPEC (a path or URL) against the OpenAPI specification and load it: every
    problem with its JSON pointer; exit status 1 if there is any."""
    from toolsets.openapi import OpenApiToolset

    terminal = Terminal()
    sent = pairs(headers, "--header")

    async def go() -> int:
        # The operations loading leaves out are problems listed below: not logged too.
        loader = logging.getLogger("toolsets.openapi")
        async with terminal.progress(f"Reading {spec}…"):
            text, uri = await read_spec_text(spec, sent)
        with terminal.bar("Validating: loading", None) as bar:

            def progress(phase: str, done: int, total: int | None) -> None:
                bar.update(f"Validating: {phase}", done, total)

            # Text, not the parsed document: the toolset parses it once (it would walk a
            # parsed one for references to other documents).
            toolset = OpenApiToolset(text, spec_url=uri)
            loader.disabled = True
            try:
                problems = await toolset.validate(max_errors=max_errors, progress=progress)
                operations = len(await toolset.list_tools()) if not problems else 0
            finally:
                loader.disabled = False
                await toolset.shutdown()
        if as_json:
            terminal.result(
                [{"pointer": p.pointer, "message": str(p), "source": p.source} for p in problems]
            )
        else:
            for problem in problems:
                terminal.line(str(problem))
        if problems:
            terminal.err.print(
                f"toolsets: {spec}: {_count(len(problems), 'problem')}", markup=False
            )
            return 1
        if not as_json:
            terminal.line(f"{spec}: valid, {_count(operations, 'operation')}")
        return 0

    status = run_async(go)
    if status:
        sys.exit(status)


def _count(number: int, thing: str) -> str:
    """``1 tool``, ``2 tools``."""
    return f"{number} {thing}{'' if number == 1 else 's'}"


# --- the error boundary ----------------------------------------------------------------


def run(argv: Sequence[str]) -> int:
    """Run the command line on ``argv``; the exit status. Every error is one line on
    stderr naming its cause (with ``--debug``, the traceback too)."""
    debug = "--debug" in argv
    terminal = Terminal()
    _log_warnings_as_lines()

    def fail(message: str, status: int = 1) -> int:
        terminal.err.print(f"toolsets: {' '.join(message.split())}", markup=False)
        return status

    try:
        try:
            cli.main(list(argv), prog_name="toolsets", standalone_mode=False, obj={"debug": debug})
        except BaseExceptionGroup as group:  # a task group's: its first error is the cause
            raise _leaf(group) from group
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.exceptions.NoArgsIsHelpError as exc:  # a bare `toolsets`: the help
        terminal.err.print(exc.ctx.get_help(), markup=False)
        return 2
    except click.exceptions.Abort:
        return fail("aborted", 130)
    except click.ClickException as exc:
        if debug:
            traceback.print_exc()
        context = exc.ctx if isinstance(exc, click.UsageError) else None
        where = context.command_path if context is not None else "toolsets"
        return fail(f"{exc.format_message()} (see {where} --help)", exc.exit_code)
    except KeyboardInterrupt:
        return fail("interrupted", 130)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 1
    except (ToolsetError, OSError) as exc:
        if debug:
            traceback.print_exc()
        return fail(_explained(exc))
    except Exception as exc:  # the command line's top-level handler
        if debug:
            traceback.print_exc()
            return fail(f"{type(exc).__name__}: {exc}")
        return fail(f"{type(exc).__name__}: {exc} (--debug shows the traceback)")
    return 0


class _OneLine(logging.Formatter):
    """A log record as the command's other lines: ``toolsets: warning: …``, one line;
    an MCP server's own log message begins with the server's name instead, as it
    comes: ``NAME: warning: …``."""

    def format(self, record: logging.LogRecord) -> str:
        text = " ".join(record.getMessage().split())
        level = record.levelname.lower()
        server = getattr(record, "mcp_server", None)
        if isinstance(server, str):
            return f"{server}: {level}: {text.removeprefix(f'{server}: ')}"
        return f"toolsets: {level}: {text}"


def _log_warnings_as_lines() -> None:
    """toolsets' warnings (an operation a spec's loader left out, say) on stderr as
    one line each, unless the program configured logging itself."""
    logger = logging.getLogger("toolsets")
    if logger.handlers or logging.getLogger().handlers:
        return
    handler = logging.StreamHandler()  # sys.stderr
    handler.setLevel(logging.WARNING)
    handler.setFormatter(_OneLine())
    logger.addHandler(handler)


def _explained(error: BaseException) -> str:
    if isinstance(error, ToolsetError):
        return str(error) or type(error).__name__
    return f"{type(error).__name__}: {error}"


def _leaf(error: BaseException) -> BaseException:
    """The first error inside (nested) exception groups: what the user must see."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error
