"""``--search`` and ``--code-mode`` of ``toolsets run`` and ``serve``: a huge catalogue
offered through one ``search_tools`` tool (`toolsets.searchable`), or one ``run_code``
tool running the model's programs (`toolsets.code_mode`), or both."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from toolsets.cli._errors import CommandError, missing_cli

try:
    import click
except ImportError as exc:
    raise missing_cli(exc) from exc

from toolsets._auth import AuthConfig, AuthCredential
from toolsets._install import install_line
from toolsets._toolset import StaticToolset, Toolset
from toolsets.code import code_mode
from toolsets.search import searchable

__all__ = [
    "CODE_TIMEOUT",
    "MAX_LOADED",
    "MAX_TOOL_CALLS",
    "Catalog",
    "catalog_of",
    "catalog_options",
    "check_extras",
    "offered",
]


def _default(function: Callable[..., Any], name: str) -> Any:
    """The library's default for ``name`` (the command line's is the same)."""
    return inspect.signature(function).parameters[name].default


MAX_LOADED: int = _default(searchable, "max_loaded")
CODE_TIMEOUT: float = _default(code_mode, "timeout")
MAX_TOOL_CALLS: int = _default(code_mode, "max_tool_calls")


@dataclass(frozen=True, kw_only=True)
class Catalog:
    """How the tools are offered: as they are, behind a search, in code mode, or both
    (plain values: `toolsets serve --workers` hands them to its workers as JSON)."""

    search: bool = False
    max_loaded: int = MAX_LOADED
    pinned: tuple[str, ...] = ()
    code_mode: bool = False
    code_timeout: float = CODE_TIMEOUT
    max_tool_calls: int = MAX_TOOL_CALLS

    @property
    def options(self) -> list[str]:
        """The command-line words giving this catalogue again (``--search`` ...)."""
        words: list[str] = []
        if self.search:
            words.append("--search")
            if self.max_loaded != MAX_LOADED:
                words.append(f"--max-loaded={self.max_loaded}")
            words += [f"--pin={name}" for name in self.pinned]
        if self.code_mode:
            words.append("--code-mode")
            if self.code_timeout != CODE_TIMEOUT:
                words.append(f"--code-timeout={self.code_timeout:g}")
            if self.max_tool_calls != MAX_TOOL_CALLS:
                words.append(f"--max-tool-calls={self.max_tool_calls}")
        return words

    @property
    def wraps(self) -> str | None:
        """The option that wraps the sources' toolset, if any (for errors)."""
        if self.search:
            return "--search"
        return "--code-mode" if self.code_mode else None


def catalog_options(function: Callable[..., Any]) -> Callable[..., Any]:
    """``--search`` (``--max-loaded``, ``--pin``) and ``--code-mode``
    (``--code-timeout``, ``--max-tool-calls``)."""
    decorators = [
        click.option(
            "--search",
            is_flag=True,
            help="Offer the tools through one search_tools tool that loads what it finds "
            "(for catalogues too big to send at every step; the search extra).",
        ),
        click.option(
            "--max-loaded",
            type=click.IntRange(min=1),
            default=MAX_LOADED,
            show_default=True,
            metavar="N",
            help="With --search: tools a session keeps loaded at most.",
        ),
        click.option(
            "--pin",
            "pinned",
            multiple=True,
            metavar="NAME",
            help="With --search: a tool always offered (repeatable).",
        ),
        click.option(
            "--code-mode",
            is_flag=True,
            help="Offer one run_code tool: the model writes a Python program calling the "
            "tools, run in a sandbox (the code extra). A call that asks first is refused "
            "in a program (--confirm never lets them run).",
        ),
        click.option(
            "--code-timeout",
            type=click.FloatRange(min=0, min_open=True),
            default=CODE_TIMEOUT,
            show_default=True,
            metavar="SECONDS",
            help="With --code-mode: seconds a program may take, its calls included.",
        ),
        click.option(
            "--max-tool-calls",
            type=click.IntRange(min=1),
            default=MAX_TOOL_CALLS,
            show_default=True,
            metavar="N",
            help="With --code-mode: tool calls one program may make.",
        ),
    ]
    for decorator in reversed(decorators):
        function = decorator(function)
    return function


def catalog_of(params: Mapping[str, Any]) -> Catalog:
    """The catalogue options a command was given.

    Raises:
        click.UsageError: an option of ``--search`` or ``--code-mode`` without it.
    """
    catalog = Catalog(
        search=params["search"],
        max_loaded=params["max_loaded"],
        pinned=tuple(params["pinned"]),
        code_mode=params["code_mode"],
        code_timeout=params["code_timeout"],
        max_tool_calls=params["max_tool_calls"],
    )
    if not catalog.search and (catalog.pinned or catalog.max_loaded != MAX_LOADED):
        raise click.UsageError("--max-loaded and --pin are for --search")
    if not catalog.code_mode and (
        catalog.code_timeout != CODE_TIMEOUT or catalog.max_tool_calls != MAX_TOOL_CALLS
    ):
        raise click.UsageError("--code-timeout and --max-tool-calls are for --code-mode")
    return catalog


def check_extras(catalog: Catalog) -> None:
    """Say now, in one line, when an extra that ``catalog`` needs is missing (before the
    sources are loaded and servers started, not after).

    Raises:
        CommandError: naming the option, the extra and the line that installs it.
    """
    checks: list[tuple[str, str, Callable[[Toolset], Toolset]]] = []
    if catalog.search:
        checks.append(("--search", "search", searchable))
    if catalog.code_mode:
        checks.append(("--code-mode", "code", code_mode))
    for option, extra, wrap in checks:
        try:
            wrap(StaticToolset([]))  # what checks that its packages are installed
        except ImportError as exc:
            missing = f"no module named {exc.name!r}" if exc.name else "a package is missing"
            raise CommandError(
                f"{option} needs the {extra} extra ({missing}): {install_line(extra)}"
            ) from exc


def offered(
    toolset: Toolset,
    catalog: Catalog,
    credential: Callable[[AuthConfig], AuthCredential | None],
    *,
    callers: Callable[[Any, AuthConfig], Any] | None = None,
) -> Toolset:
    """``toolset`` as ``catalog`` offers it: ``code_mode(searchable(toolset))`` with both
    (the program searches, then calls what it found). A tool called from a program that
    needs a credential gets the one ``credential`` finds (``--credential`` or the
    environment), never another; or, given ``callers`` (a function of the call's context
    and the tool's `AuthConfig`), the one of the program's caller."""
    if catalog.search:
        toolset = searchable(toolset, pinned=catalog.pinned, max_loaded=catalog.max_loaded)
    if catalog.code_mode:

        def credentials(ctx: object, config: AuthConfig) -> AuthCredential | None:
            return credential(config)

        toolset = code_mode(
            toolset,
            timeout=catalog.code_timeout,
            max_tool_calls=catalog.max_tool_calls,
            credentials=callers or credentials,
        )
    return toolset
