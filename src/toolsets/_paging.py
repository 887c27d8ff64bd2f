"""The next page a call's response names beside its body (an HTTP ``Link: <...>;
rel="next"`` header), as the called tool's own arguments, for a wrapper that asks.

The model's result is the response's body alone: a header never reaches it. A wrapper
that wants the next page (`toolsets.calls.ResultLimit`, saying how to get the rest of a
result it cut) opens a `NextPage` around the call (`listening`); a tool that reads such a
header and is the one the wrapper wraps fills it in. Nobody listening costs a tool one
context-variable lookup.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from toolsets._forwarding import ForwardingTool
from toolsets._tool import Tool

__all__ = ["NextPage", "listening", "next_page_for"]


@dataclass(eq=False, kw_only=True)
class NextPage:
    """What one call's response says of the next page."""

    tool: Tool
    """The tool the listener wraps: only its own response fills this in (not that of a
    tool it calls from inside, such as `code_mode`'s)."""
    url: str | None = None
    """The next page's URL, as the response named it (None: it named none the tool
    may take: see the tool)."""
    arguments: dict[str, Any] = field(default_factory=dict)
    """The tool's arguments that fetch the next page (empty: none named)."""


_listening: ContextVar[NextPage | None] = ContextVar("toolsets_next_page", default=None)


@contextlib.contextmanager
def listening(tool: Tool) -> Iterator[NextPage]:
    """A `NextPage` the call of ``tool`` run within fills in (the inner calls of
    another tool in this task leave it alone): the one a wrapper around this one
    listens with already, if any."""
    outer = next_page_for(tool)
    if outer is not None:
        yield outer
        return
    page = NextPage(tool=tool)
    token = _listening.set(page)
    try:
        yield page
    finally:
        _listening.reset(token)


def next_page_for(tool: Tool) -> NextPage | None:
    """The `NextPage` a wrapper listens with for ``tool``'s response (None: nobody
    listens for it). ``tool`` is the innermost tool; the listener may wrap it in
    forwarding tools (`wrap_calls`, ``prefixed``, ...)."""
    page = _listening.get()
    if page is None:
        return None
    outer = page.tool
    while outer is not tool:
        if not isinstance(outer, ForwardingTool):
            return None
        outer = outer.tool
    return page
