"""Calls a tool makes from inside its own run — the program of code mode's ``run_code``
calling the tools it wraps (a `searchable` catalogue's ``search_tools`` and the tools it
finds among them) — as whoever called the outer tool watches them.

A consumer that watches (the MCP server, which audits each of them as a call of its own,
made by the same caller) sets a `NestedWatch` for the outer call (`watching_nested`); the
tool making the calls wraps each in `nested_call`, which says what the call's outcome
was. With no one watching, `nested_call` does nothing but hand back a `NestedCall` to
fill.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    from toolsets._context import ToolContext
    from toolsets._invoke import Outcome
    from toolsets._tool import Tool

__all__ = ["NestedCall", "NestedWatch", "nested_call", "watching_nested"]


@dataclass(slots=True)
class NestedCall:
    """One nested call, as the tool making it tells it."""

    arguments: frozenset[str] = frozenset()
    """The names of the arguments it was called with (never their values)."""
    outcome: Outcome | None = None
    """How it ended (None: it raised, or was cancelled, before it had an outcome)."""


NestedWatch: TypeAlias = Callable[["Tool", "ToolContext"], AbstractContextManager[NestedCall]]
"""Watches one nested call of a tool in a context (the block is the call)."""

_watch: ContextVar[NestedWatch | None] = ContextVar("toolsets_nested_watch", default=None)


@contextlib.contextmanager
def watching_nested(watch: NestedWatch) -> Iterator[None]:
    """While the block runs (in this task and the tasks it starts), the nested calls
    are watched by ``watch``."""
    reset = _watch.set(watch)
    try:
        yield
    finally:
        _watch.reset(reset)


def nested_call(tool: Tool, ctx: ToolContext) -> AbstractContextManager[NestedCall]:
    """The block is a call of ``tool`` made from inside another tool's run: its watcher
    (if any) sees it; fill in the `NestedCall` it gives."""
    watch = _watch.get()
    return contextlib.nullcontext(NestedCall()) if watch is None else watch(tool, ctx)
