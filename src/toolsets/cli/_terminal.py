"""What the command line shows and asks: results on stdout, everything else (progress,
questions, notes) on stderr, progress and colour on a terminal only."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import TYPE_CHECKING, Any

import anyio.to_thread

from toolsets.cli._errors import missing_cli

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID
    from rich.status import Status  # imports rich.table: only when a status is shown

try:
    from rich.console import Console
except ImportError as exc:
    raise missing_cli(exc) from exc

from toolsets._context import ProgressReporter
from toolsets._json import JsonValue

__all__ = [
    "Bar",
    "Terminal",
    "dumps",
    "progress_text",
]


def dumps(value: Any) -> str:
    """``value`` as JSON for stdout: indented, non-ASCII kept."""
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def progress_text(name: str, progress: float, total: float | None, message: str | None) -> str:
    """A progress report in one line: ``name: 2/4 (50%) step 2``."""
    done = f"{progress:g}/{total:g}" if total else f"{progress:g}"
    if total:
        done += f" ({min(progress / total, 1):.0%})"
    return f"{name}: {done}" + (f" {message}" if message else "")


_PIPED_WIDTH = 160
"""Columns of a table written to a pipe or a file."""
_GAP = "  "
"""Between the columns of a table."""
_RICH_TABLE_ROWS = 500
"""Rows up to which a table is a rich one (laid out to the terminal's width)."""


class Bar:
    """A progress bar's handle: safe to use from any thread (a worker thread building
    what the bar counts); it shows nothing when stderr is not a terminal."""

    def __init__(self, progress: Progress | None = None, task: TaskID | None = None) -> None:
        self._progress = progress
        self._task = task

    def advance(self, steps: int = 1) -> None:
        """``steps`` more are done."""
        if self._progress is not None and self._task is not None:
            self._progress.advance(self._task, steps)

    def update(self, description: str, done: int, total: int | None) -> None:
        """Now ``description``, ``done`` of ``total`` (None: a pulsing bar)."""
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, description=description, completed=done, total=total)


class Terminal:
    """Stdout for results, stderr (a rich console) for the rest."""

    def __init__(self) -> None:
        self.err = Console(stderr=True, highlight=False, soft_wrap=True)
        self.out = Console(highlight=False, soft_wrap=True)
        if not self.out.is_terminal and "COLUMNS" not in os.environ:
            # Piped (to grep, less, a file): rows kept whole rather than wrapped at 80.
            self.out.width = _PIPED_WIDTH

    @property
    def interactive(self) -> bool:
        """Whether a person can answer: stdin is a terminal."""
        return sys.stdin.isatty()

    @asynccontextmanager
    async def progress(self, message: str) -> AsyncIterator[None]:
        """A spinner with ``message`` on stderr while the block runs (on a terminal only)."""
        if not self.err.is_terminal:
            yield
            return
        with self.err.status(message):
            yield

    @asynccontextmanager
    async def call_progress(self, name: str) -> AsyncIterator[ProgressReporter | None]:
        """Where a call of the tool ``name`` reports its progress: a line on stderr,
        ``name: 2/4 (50%) message``, shown from its first report until the block ends
        (on a terminal only; None elsewhere: nothing is shown)."""
        if not self.err.is_terminal:
            yield None
            return
        shown: list[Status] = []

        async def report(progress: float, total: float | None, message: str | None) -> None:
            text = progress_text(name, progress, total, message)
            if shown:
                shown[0].update(text)
                return
            status = self.err.status(text)
            status.start()
            shown.append(status)

        try:
            yield report
        finally:
            for status in shown:
                status.stop()

    @contextmanager
    def bar(self, description: str, total: int | None) -> Iterator[Bar]:
        """A progress bar on stderr while the block runs (on a terminal only; gone when
        it ends): ``description``, and how many of ``total`` are done (None: unknown)."""
        if not self.err.is_terminal:
            yield Bar()
            return
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        columns = (
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
        )
        with Progress(*columns, console=self.err, transient=True) as progress:
            yield Bar(progress, progress.add_task(description, total=total))

    def table(self, headers: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
        """Columns on stdout, the first in bold on a terminal. A few hundred rows are a
        rich table (the last column wrapped to the terminal's width); more are written
        line by line, each cut at the terminal's width (a rich table measures and lays
        out every cell before it prints the first, a long wait on a catalogue of
        thousands of tools). Piped, the lines are whole either way."""
        if len(rows) <= _RICH_TABLE_ROWS:
            from rich.table import Table

            table = Table(box=None, pad_edge=False, show_edge=False)
            for index, header in enumerate(headers):
                table.add_column(header, style="bold" if not index else None, no_wrap=not index)
            for row in rows:
                table.add_row(*row)
            self.out.print(table)
            return
        from rich.cells import cell_len

        widths = [
            max([cell_len(headers[i]), *(cell_len(row[i]) for row in rows)])
            for i in range(len(headers) - 1)
        ]

        def line(row: Sequence[str]) -> tuple[str, str]:
            """The first cell, padded, and the rest of the line."""
            pairs = zip(row[:-1], widths, strict=True)
            padded = [cell + " " * (width - cell_len(cell)) for cell, width in pairs]
            return padded[0], (_GAP + _GAP.join([*padded[1:], row[-1]])).rstrip()

        if not self.out.is_terminal:
            lines = ["".join(line(row)) for row in (headers, *rows)]
            sys.stdout.write("\n".join(lines) + "\n")
            sys.stdout.flush()
            return
        from rich.text import Text

        text = Text()
        for index, row in enumerate((headers, *rows)):
            first, rest = line(row)
            if index:
                text.append("\n")
            text.append(first, style="bold")
            text.append(rest, style="bold" if not index else "")
        self.out.print(text, soft_wrap=False, no_wrap=True, overflow="ellipsis", crop=True)

    def warn(self, text: str) -> None:
        """A warning, one line on stderr: ``toolsets: warning: text``."""
        self.err.print(f"toolsets: warning: {text}", markup=False)

    def note(self, text: str) -> None:
        """A line on stderr (dimmed on a terminal)."""
        self.err.print(text, style="dim", markup=False)

    def result(self, value: JsonValue) -> None:
        """A result on stdout, as JSON."""
        self.line(dumps(value))

    def line(self, text: str) -> None:
        """A line of the result on stdout."""
        sys.stdout.write(text + "\n")
        sys.stdout.flush()

    async def ask(self, question: str) -> bool:
        """The user's yes or no to ``question``, read from stdin (no, at its end)."""
        self.err.print(f"{question} [y/N] ", end="", markup=False)
        line = await anyio.to_thread.run_sync(sys.stdin.readline)
        if not line:
            self.err.print()
        return line.strip().lower() in ("y", "yes")

    async def read_line(self, prompt: str) -> str | None:
        """The next line of stdin (a prompt shown on a terminal), None at its end."""
        if self.interactive:
            self.err.print(prompt, end="", markup=False)
        line = await anyio.to_thread.run_sync(sys.stdin.readline)
        return line.rstrip("\n") if line else None
