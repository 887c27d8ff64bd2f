"""Build the documentation site: write the pages made from the code, then run Zensical
in strict mode (a warning, a broken link or anchor fails the build).

    python scripts/site.py            # docs/ → build/site (plain files, no service needed)
    python scripts/site.py --pages    # only write the generated pages

Two kinds of page are made here at every build, never by hand (both gitignored), so
they cannot drift from the code:

- ``docs/cli/commands.md``: every command's ``--help``, as the ``toolsets`` command
  prints it (click's own help, in this process);
- ``docs/reference/``: one page per public module, every name of its ``__all__``
  rendered by mkdocstrings from the docstrings (a name another module already renders,
  a re-export, links there instead of rendering twice).

Needs the ``docs`` extra (``pip install '.[docs]'``). The build runs no benchmark: the
benchmarks page shows the charts ``scripts/charts.py`` made and the repository keeps.

Why Zensical (0.1.1, pinned) rather than Material for MkDocs 9.8 + mkdocstrings: Material's
authors put it in maintenance mode (critical fixes and security updates only, then its
end) to build Zensical, and MkDocs 1.x under it is unmaintained, with MkDocs 2.0 dropping
the plugin model Material needs. Zensical reads the same ``mkdocs.yml``, runs
mkdocstrings-python (griffe) for the API reference, validates every internal link and
anchor, and fails on any warning with ``--strict``. What it lacks, MkDocs hooks, is why the
generated pages are written by this script before the build rather than by a hook.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
SITE = ROOT / "build" / "site"
CLI_PAGE = DOCS / "cli" / "commands.md"
REFERENCE = DOCS / "reference"

MODULES = [
    ("toolsets", "The contract, composition, the one call path's values, errors."),
    ("toolsets.agent", "The agent loop: agents, the runner, sessions, events."),
    ("toolsets.models", "The `Llm` protocol and the models: OpenAI-compatible, Anthropic, Gemini."),
    ("toolsets.mcp", "MCP servers as toolsets, and any toolset served as an MCP server."),
    ("toolsets.mcp.client", "The client side of `toolsets.mcp`."),
    ("toolsets.mcp.server", "The served side of `toolsets.mcp`."),
    ("toolsets.openapi", "OpenAPI 3.0 / 3.1 and Swagger 2.0 specs as toolsets."),
    ("toolsets.calls", "Wrappers around every call: retries, rate limits, result limits."),
    ("toolsets.schema", "Declarations in each provider's tool format, calls mapped back."),
    ("toolsets.search", "Tool search over huge catalogues (the `search` extra)."),
    ("toolsets.code", "Code mode: one `run_code` tool (the `code` extra)."),
    ("toolsets.telemetry", "OpenTelemetry traces and metrics (the `otel` extra for the SDK)."),
    ("toolsets.adapters.pydantic_ai", "pydantic-ai (the `pydantic-ai` extra)."),
    ("toolsets.adapters.langchain", "LangChain and LangGraph (the `langchain` extra)."),
    ("toolsets.adapters.openai_agents", "The OpenAI Agents SDK (the `openai-agents` extra)."),
    ("toolsets.adapters.adk", "Google ADK (the `adk` extra)."),
    ("toolsets.adapters.smolagents", "smolagents (the `smolagents` extra)."),
    ("toolsets.cli", "The `toolsets` command's entry point (the `cli` extra)."),
]
"""Every public module with an ``__all__``, in the reference's order; a test checks that
no public module is missing."""


def page_of(module: str) -> str:
    """The reference page of a module, relative to docs/."""
    return f"reference/{module}.md"


def anchor_of(module: str, name: str) -> str:
    """The anchor mkdocstrings gives a name rendered under ``::: module.name``."""
    return f"{module}.{name}"


@dataclass(frozen=True, kw_only=True)
class Entry:
    module: str
    name: str
    rendered_in: str
    """The module whose page renders it (itself, or the first that exports the object)."""
    foreign: str | None = None
    """Where a name another library defines comes from (``pydantic.JsonValue``): its
    docstring is that library's, so the page says where it comes from."""


def reference_entries() -> list[Entry]:
    """Every name of every public module's ``__all__``, and the page that renders it."""
    import griffe

    package = griffe.load("toolsets", search_paths=[str(ROOT / "src")], resolve_aliases=False)
    seen: dict[object, str] = {}
    entries = []
    for module, _ in MODULES:
        namespace = importlib.import_module(module)
        for name in namespace.__all__:
            value = getattr(namespace, name)
            # Classes and functions are rendered once, under the first module exporting
            # them; constants and aliases (values such as ints may be shared) under each.
            key: object = id(value) if callable(value) else (module, name)
            rendered_in = seen.setdefault(key, module)
            entries.append(
                Entry(
                    module=module,
                    name=name,
                    rendered_in=rendered_in,
                    foreign=foreign_target(package[f"{module}.{name}".removeprefix("toolsets.")]),
                )
            )
    return entries


def foreign_target(found: Any) -> str | None:
    """The path of what a griffe object stands for when another library defines it."""
    import griffe

    while found.is_alias:
        try:
            found = found.target
        except griffe.AliasResolutionError:
            return str(found.target_path)
    return None


def reference_pages() -> dict[Path, str]:
    entries = reference_entries()
    pages = {}
    index = [
        "# API reference\n",
        "Every public name of toolsets, from its docstring. Private modules (`_name`) "
        "are not part of the API; import from the modules below.\n",
        "| module | what |",
        "| --- | --- |",
    ]
    for module, what in MODULES:
        index.append(f"| [`{module}`]({module}.md) | {what} |")
        lines = [f"# `{module}`\n", f"{what}\n"]
        # Names rendered elsewhere (re-exports) are one table at the end, each row with
        # the name's anchor here: a search for the name finds its full section first.
        also = [
            "## Also here\n",
            "Exported by this module too, and documented where another module exports them.\n",
            "| name | documented as |",
            "| --- | --- |",
        ]
        for entry in (e for e in entries if e.module == module):
            anchor = f'<span id="{anchor_of(module, entry.name)}"></span>`{entry.name}`'
            if entry.foreign is not None:
                also.append(f"| {anchor} | `{entry.foreign}` (another library's) |")
            elif entry.rendered_in == module:
                lines.append(f"::: {module}.{entry.name}\n")
            else:
                target = f"{entry.rendered_in}.md#{anchor_of(entry.rendered_in, entry.name)}"
                also.append(f"| {anchor} | [`{entry.rendered_in}.{entry.name}`]({target}) |")
        if len(also) > 4:
            lines.append("\n".join(also) + "\n")
        pages[DOCS / page_of(module)] = "\n".join(lines)
    pages[REFERENCE / "index.md"] = "\n".join(index) + "\n"
    return pages


def cli_page() -> str:
    """Every command's help, as ``toolsets COMMAND --help`` prints it."""
    import click

    from toolsets.cli._app import cli

    out = [
        "# Command reference\n",
        "Made from the `toolsets` command's own `--help` at every build of this site "
        "(`scripts/site.py`). The [command line guide](index.md) says how the commands "
        "work together.\n",
    ]

    def walk(command: click.Command, path: list[str], parent: click.Context | None) -> None:
        name = " ".join(path)
        context = click.Context(command, info_name=path[-1], parent=parent, max_content_width=88)
        context.terminal_width = 88
        heading = "##" if len(path) <= 2 else "###"
        out.append(f"{heading} `{name}`\n")
        out.append(f"```text\n{command.get_help(context).rstrip()}\n```\n")
        if isinstance(command, click.Group):
            for sub in command.list_commands(context):
                found = command.get_command(context, sub)
                if found is not None and not found.hidden:
                    walk(found, [*path, sub], context)

    walk(cli, ["toolsets"], None)
    return "\n".join(out)


def write_pages() -> list[Path]:
    pages = {CLI_PAGE: cli_page(), **reference_pages()}
    REFERENCE.mkdir(parents=True, exist_ok=True)
    for stale in set(REFERENCE.glob("*.md")) - set(pages):
        stale.unlink()
    for path, text in pages.items():
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
    return sorted(pages)


def build() -> subprocess.CompletedProcess[str]:
    """Write the generated pages, then build the site in strict mode into build/site."""
    write_pages()
    zensical = Path(sys.executable).with_name("zensical")
    env = {**os.environ, "NO_COLOR": "1"}
    done = subprocess.run(
        [str(zensical), "build", "--strict", "--clean", "-f", str(ROOT / "mkdocs.yml")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=300,
    )
    # Griffe's warnings (a docstring naming a parameter the signature lacks, ...) are
    # logged, not counted by Zensical's strict mode: here they fail the build too.
    logged = [line for line in done.stderr.splitlines() if line.startswith("griffe:")]
    if done.returncode == 0 and logged:
        done.returncode = 1
        done.stderr += f"\n{len(logged)} docstring warning(s): strict mode fails on them\n"
    return done


def main() -> int:
    if sys.argv[1:] == ["--pages"]:
        for path in write_pages():
            print(path.relative_to(ROOT))
        return 0
    done = build()
    print(done.stdout, end="")
    print(done.stderr, end="", file=sys.stderr)
    if done.returncode == 0:
        print(f"site built in {SITE.relative_to(ROOT)}")
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
