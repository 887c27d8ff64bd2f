"""What every feature of `McpServer` is: a module whose object yields the requests it
answers, ``(method, params type, handler)``, which the server registers on the SDK's
low-level server (whose capabilities follow from what is registered); and the helpers
they share (paging, the deadline of the server's own work)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Protocol, TypeAlias, TypeVar

import anyio
import mcp.types as mt
from mcp import MCPError
from pydantic import BaseModel

from toolsets._results import clip
from toolsets.mcp.server._request import Context

__all__ = ["DEFAULT_PAGE_SIZE", "Feature", "Handler", "Registration", "bounded", "page"]

_T = TypeVar("_T")

DEFAULT_PAGE_SIZE = 1000
"""Tools (resources, prompts) per page of a list answer."""

Handler: TypeAlias = Callable[[Context, Any], Awaitable[Any]]
"""How a request is answered: from the SDK's context and the request's parameters."""
Registration: TypeAlias = tuple[str, type[BaseModel], Handler]
"""A method, the model its parameters are read into, and its handler."""


class Feature(Protocol):
    """A part of the server answering some of the requests."""

    def handlers(self) -> Iterable[Registration]:
        """The requests this feature answers, each with its handler."""
        ...


def page(
    items: list[_T], params: mt.PaginatedRequestParams | None, size: int
) -> tuple[list[_T], str | None]:
    """The page of ``items`` the request's cursor asks for, of at most ``size``, and the
    cursor of the next page (None: the last).

    Raises:
        MCPError: -32602 for a cursor this server did not give.
    """
    cursor = params.cursor if params is not None else None
    start = 0
    if cursor:
        if not cursor.isdigit() or int(cursor) > len(items):
            raise MCPError(mt.INVALID_PARAMS, f"Invalid cursor {clip(cursor, 40)!r}")
        start = int(cursor)
    end = start + size
    return items[start:end], (str(end) if end < len(items) else None)


async def bounded(what: str, work: Awaitable[_T], limit: float) -> _T:
    """What ``work`` (a resource, prompt or completer of the server's own) gives within
    ``limit`` seconds (the server's ``tool_timeout``); past it, the JSON-RPC error
    -32001 (request timeout, as for an upstream server that does not answer in time)."""
    with anyio.move_on_after(limit):
        return await work
    raise MCPError(mt.REQUEST_TIMEOUT, f"{clip(what, 200)} timed out after {limit:g} s")
