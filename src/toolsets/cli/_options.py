"""What every command that loads sources shares: their options (``--stdio``,
``--credential``, ``--prefix``...), the sources opened under a progress display, the
``SOURCE… TOOL`` arguments split and the tool found, and the words giving the same
sources again."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import anyio

from toolsets.cli._errors import CommandError, missing_cli

try:
    import click
except ImportError as exc:
    raise missing_cli(exc) from exc

from toolsets._context import ToolContext
from toolsets._errors import ToolDefinitionError, ToolNotFoundError
from toolsets._gc import collector_paused
from toolsets._invoke import DEFAULT_TOOL_TIMEOUT
from toolsets._tool import Tool
from toolsets._toolset import Toolset
from toolsets.cli._describe import counted, unwrapped
from toolsets.cli._login import login_options, login_prompt, login_settings
from toolsets.cli._sources import (
    CONFIRM_POLICIES,
    CREDENTIAL_ENV_PREFIX,
    DEFAULT_CONFIRM,
    SourceOptions,
    Sources,
    pairs,
)
from toolsets.cli._terminal import Terminal

__all__ = [
    "SOURCE_HELP",
    "SourceCommand",
    "debug_option",
    "find_tool",
    "given_prefixes",
    "json_option",
    "mcp_server_options",
    "opened",
    "options_of",
    "run_async",
    "source_options",
    "source_words",
    "split_tool",
    "tool_timeout_option",
    "calls_options",
]

T = TypeVar("T")

SOURCE_HELP = f"""
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
    unless not ``http_source``) and ``--mcp-header``; and how to log in to those over
    HTTP (`login_options`)."""
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
        *login_options(),
    ]


def source_options(function: Callable[..., Any], *, http_source: bool = True) -> Callable[..., Any]:
    """The options that say which tools a command loads (``--http URL`` is
    ``--mcp-url``'s other name, except for ``serve``, where it is where to listen)."""
    decorators = [
        *mcp_server_options(http_source=http_source),
        *_spec_options(),
        *_selection_options(),
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


def _spec_options() -> list[Callable[..., Any]]:
    """``--base-url``, ``--credential`` and ``--header``: how a spec's API is called."""
    return [
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
    ]


def _selection_options() -> list[Callable[..., Any]]:
    """``--tag``, ``--method``, ``--path``, ``--name`` and ``--prefix``: which tools are
    kept, and under which names."""
    return [
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
    ]


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


_PERIODS = {"s": 1.0, "sec": 1.0, "min": 60.0, "m": 60.0, "h": 3600.0, "hour": 3600.0}


class RateType(click.ParamType):  # type: ignore[type-arg]  # generic from click 8.5 only
    """``--rate-limit``'s value: ``N/s``, ``N/min`` or ``N/h`` (``N`` alone: per second),
    as ``(calls, seconds)``."""

    name = "rate"

    def convert(self, value: Any, param: Any, ctx: Any) -> tuple[float, float]:
        if isinstance(value, tuple):
            return value
        count, _, unit = str(value).strip().partition("/")
        period = _PERIODS.get(unit.strip().lower() or "s")
        try:
            calls = float(count)
        except ValueError:
            calls = -1.0
        if period is None or not calls > 0 or calls == float("inf"):
            self.fail(f"{value!r} is not a rate: say e.g. 10/s, 600/min or 5000/h", param, ctx)
        return calls, period


_UNITS = {"": 1, "b": 1, "k": 1024, "kb": 1024, "m": 1024**2, "mb": 1024**2}
_UNITS |= {"g": 1024**3, "gb": 1024**3, "kib": 1024, "mib": 1024**2, "gib": 1024**3}


class SizeType(click.ParamType):  # type: ignore[type-arg]  # generic from click 8.5 only
    """A size in bytes: ``1048576``, ``512K``, ``64M``, ``1G`` (powers of 1,024)."""

    name = "size"

    def convert(self, value: Any, param: Any, ctx: Any) -> int:
        if isinstance(value, int):
            return value
        text = str(value).strip().lower()
        digits = text.rstrip("abegikmt")
        unit = _UNITS.get(text[len(digits) :].strip())
        try:
            number = float(digits)
        except ValueError:
            number = -1.0
        size = int(number * unit) if unit is not None and 0 < number < float("inf") else 0
        if size <= 0:
            self.fail(f"{value!r} is not a size: say e.g. 64M, 512K or 1G", param, ctx)
        return size


def calls_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--retries N``, ``--rate-limit RATE``, ``--max-result-bytes N``,
    ``--max-result-tokens N``, ``--cache`` and
    ``--cache-size SIZE``, of every command that calls tools."""
    command = click.option(
        "--cache-size",
        "cache_size",
        type=SizeType(),
        default=None,
        metavar="SIZE",
        help="With --cache (which it turns on): what the cache holds at most (64M, 512K, "
        "1G) [default: 32M].",
    )(command)
    command = click.option(
        "--cache",
        "cache",
        is_flag=True,
        help="Keep the APIs' responses to GET requests in memory and answer calls from "
        "them as their Cache-Control and ETag allow (a stale one is checked with "
        "If-None-Match), each caller's apart from every other's.",
    )(command)
    command = click.option(
        "--max-result-tokens",
        "max_result_tokens",
        type=click.IntRange(min=250),  # ResultLimit's MIN_MAX_TOKENS (not imported here)
        default=None,
        metavar="N",
        help="Cut a result over N tokens to fit, as --max-result-bytes does (both hold "
        "when both are given). Tokens are estimated at 2.5 bytes of JSON a "
        "token, the note saying so: 1.4 times OpenAI's count on typical API results, "
        "below it for about 6% (base64, long numbers: at worst half).",
    )(command)
    command = click.option(
        "--max-result-bytes",
        "max_result_bytes",
        type=click.IntRange(min=1000),
        default=None,
        metavar="N",
        help="Cut a result over N bytes of JSON to fit (lists keep their first items, "
        "long texts their beginning), with a note saying how to get the rest.",
    )(command)
    command = click.option(
        "--rate-limit",
        "rate_limit",
        type=RateType(),
        default=None,
        metavar="RATE",
        help="At most RATE calls to each API host or MCP server (10/s, 600/min, 5000/h); "
        "a call over it waits its turn within its deadline, else is not sent and the "
        "model is told when to try again.",
    )(command)
    return click.option(
        "--retries",
        "retries",
        type=click.IntRange(min=0),
        default=0,
        show_default=True,
        metavar="N",
        help="Send a call again up to N times when the API answers 429 or 503 (after "
        "the wait its Retry-After asks) or the connection failed before anything was "
        "sent; only calls safe to repeat (reads, PUT and DELETE, a POST whose operation "
        "takes an Idempotency-Key).",
    )(command)


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


def given_prefixes() -> tuple[tuple[str, int, str], ...]:
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
        prefixes=given_prefixes(),
        spec_credentials=params.get("spec_credentials", True),
        user_bearer=params.get("user_bearer"),
        oauth=login_settings(params),
        retries=params.get("retries", 0),
        rate_limit=params.get("rate_limit"),
        max_result_bytes=params.get("max_result_bytes"),
        max_result_tokens=params.get("max_result_tokens"),
        cache_bytes=_cache_bytes(params),
    )


def _cache_bytes(params: Mapping[str, Any]) -> int | None:
    """``--cache``/``--cache-size``: the cache's budget, None for no cache."""
    size: int | None = params.get("cache_size")
    if size is not None:
        return size
    if params.get("cache"):
        from toolsets.openapi._cache import DEFAULT_CACHE_BYTES

        return DEFAULT_CACHE_BYTES
    return None


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
    loading = Sources(sources, options, login_prompt=login_prompt(terminal))
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
    if loading.options.user_bearer is not None:
        # `serve --user-bearer`: the servers it names answer each caller with their own
        # token, and nobody's is here to list them with now (the first caller does).
        return toolset, ()
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
            f"{counted(len(stuck), 'operation')} cannot be called (e.g. {stuck[0]}): the "
            "spec names no server, or a relative one; give the API's URL with --base-url URL"
        )


def run_async(make: Callable[[], Awaitable[T]]) -> T:
    async def call() -> T:
        return await make()

    return anyio.run(call)


def split_tool(
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


def find_tool(tools: Sequence[Tool], name: str) -> Tool:
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
