"""``toolsets list``: the tools of every source, a table or JSON."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import anyio

from toolsets.cli._errors import missing_cli

try:
    import click
except ImportError as exc:
    raise missing_cli(exc) from exc

from toolsets._json import JsonValue
from toolsets._tool import Tool
from toolsets.cli._describe import (
    counted,
    described,
    first_line,
    hints_of,
    parameters_in_short,
)
from toolsets.cli._options import (
    SOURCE_HELP,
    SourceCommand,
    json_option,
    opened,
    run_async,
    source_options,
)
from toolsets.cli._terminal import Bar, Terminal

__all__ = ["list_command"]

T = TypeVar("T")


@click.command(
    "list",
    cls=SourceCommand,
    epilog=SOURCE_HELP
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
            terminal.note(counted(len(tools), "tool"))

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
