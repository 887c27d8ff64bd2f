"""``toolsets call``: one tool called through the one call path, its pauses answered
on the terminal (or by ``--yes`` and the credentials given), its result printed."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from toolsets.cli._errors import CommandError, missing_cli

try:
    import click
except ImportError as exc:
    raise missing_cli(exc) from exc

from toolsets._auth import AuthCredential
from toolsets._context import ToolConfirmation, ToolContext
from toolsets._invoke import (
    ConfirmationNeeded,
    CredentialNeeded,
    Done,
    Outcome,
    invoke,
)
from toolsets._json import JsonValue
from toolsets._results import is_error_result
from toolsets._settle import settle
from toolsets._tool import Tool
from toolsets.cli._describe import parameters_of, unwrapped
from toolsets.cli._options import (
    SOURCE_HELP,
    SourceCommand,
    calls_options,
    find_tool,
    opened,
    run_async,
    source_options,
    split_tool,
    tool_timeout_option,
)
from toolsets.cli._sources import credential_for, no_credential, pairs
from toolsets.cli._terminal import Terminal

__all__ = ["call_command"]


@click.command(
    "call",
    cls=SourceCommand,
    epilog=SOURCE_HELP
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
@calls_options
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
    sources, name, pairs_given = split_tool(arguments, "call", params)
    if args_json is not None and pairs_given:
        raise click.UsageError("give the arguments as key=value or as --args, not both")
    terminal = Terminal()

    async def go() -> int:
        async with opened(terminal, sources, params, calls=False) as (_, tools):
            tool = find_tool(tools, name)
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
