"""``toolsets inspect``: one tool, its description, parameter schema, what it returns,
an operation's request, and an example call."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from toolsets.cli._errors import CommandError, missing_cli

try:
    import click
except ImportError as exc:
    raise missing_cli(exc) from exc

from toolsets._errors import SpecError
from toolsets._json import JsonValue
from toolsets.cli._describe import (
    broken,
    described,
    hints_of,
    operation_details,
    parameters_of,
    returns_of,
    success_of,
)
from toolsets.cli._example import example_arguments
from toolsets.cli._options import (
    SOURCE_HELP,
    SourceCommand,
    find_tool,
    given_prefixes,
    json_option,
    opened,
    run_async,
    source_options,
    source_words,
    split_tool,
)
from toolsets.cli._terminal import Terminal, dumps

__all__ = ["inspect_command"]


@click.command(
    "inspect",
    cls=SourceCommand,
    epilog=SOURCE_HELP
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
    sources, name, rest = split_tool(arguments, "inspect", params)
    if rest:
        raise click.UsageError(f"inspect takes no key=value arguments: {rest[0].split('=')[0]}")
    terminal = Terminal()
    confirm = params["confirm"].lower()

    async def go() -> None:
        async with opened(terminal, sources, params, calls=False) as (_, tools):
            tool = find_tool(tools, name)
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

    words = ["toolsets", "call", *source_words(sources, params, given_prefixes())]
    if params["base_url"]:
        words += ["--base-url", params["base_url"]]
    words.append(name)
    command = " ".join(shlex.quote(word) for word in words)
    return f"{command} --args {shlex.quote(json.dumps(example, ensure_ascii=False))}"
