"""``toolsets validate``: a spec checked against the OpenAPI specification and loaded,
every problem with its JSON pointer."""

from __future__ import annotations

import logging
import sys

from toolsets.cli._errors import missing_cli

try:
    import click
except ImportError as exc:
    raise missing_cli(exc) from exc

from toolsets.cli._describe import counted
from toolsets.cli._options import debug_option, run_async
from toolsets.cli._sources import pairs, read_spec_text
from toolsets.cli._terminal import Terminal

__all__ = ["validate_command"]


@click.command(
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
                f"toolsets: {spec}: {counted(len(problems), 'problem')}", markup=False
            )
            return 1
        if not as_json:
            terminal.line(f"{spec}: valid, {counted(operations, 'operation')}")
        return 0

    status = run_async(go)
    if status:
        sys.exit(status)
