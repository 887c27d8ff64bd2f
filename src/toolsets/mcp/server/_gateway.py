"""Gateway routing: the upstream MCP servers behind a served toolset (an `McpToolset`,
alone, wrapped or combined), and which of them each resource, template and prompt is
routed to: the one that listed it, or whose template it fits; when none is known yet (a
request before any listing: another worker's client, a restart, a URI a client kept),
each is asked in turn."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Protocol, TypeVar, runtime_checkable

import mcp.types as mt
from mcp import MCPError

from toolsets._context import ToolContext
from toolsets._errors import AuthError, ToolsetError
from toolsets._toolset import Toolset
from toolsets.mcp.client._toolset import McpToolset

__all__ = [
    "MAX_ROUTES",
    "AnnouncesChanges",
    "Gateway",
    "Owners",
    "composition",
    "protocol_error",
]

_T = TypeVar("_T")

MAX_ROUTES = 10_000
"""Resource URIs, templates and prompt names a gateway remembers the upstream server of
(the least recently used are forgotten; a name not remembered is asked of each)."""


@runtime_checkable
class AnnouncesChanges(Protocol):
    """A toolset that tells when its tools change (`StaticToolset`, `McpToolset`): see
    `Toolset`."""

    def on_tools_changed(self, listener: Callable[[], None]) -> Callable[[], None]: ...


@runtime_checkable
class _Wraps(Protocol):
    """A toolset over another (`WrapperToolset`, or one of the user's alike)."""

    wrapped: object


@runtime_checkable
class _Combines(Protocol):
    """A toolset over several (``combined``, or one of the user's alike)."""

    toolsets: Sequence[object]


def composition(toolset: Toolset) -> list[object]:
    """``toolset`` and every toolset inside it (through wrappers and ``combined``),
    once each, outermost first."""
    found: list[object] = []

    def walk(candidate: object) -> None:
        if any(candidate is seen for seen in found):
            return
        found.append(candidate)
        if isinstance(candidate, _Wraps) and isinstance(candidate.wrapped, Toolset):
            walk(candidate.wrapped)
        if isinstance(candidate, _Combines) and isinstance(candidate.toolsets, tuple | list):
            for each in candidate.toolsets:
                walk(each)

    walk(toolset)
    return found


def protocol_error(what: str, exc: BaseException) -> MCPError:
    """A fault behind the server (an upstream server, the toolset) as the protocol
    error the client gets: an upstream server's own code when it sent one. A caller
    without the credential an upstream server needs (`AuthError`: nothing was sent) is
    told which, in the error's data (``credential``)."""
    if isinstance(exc, AuthError):
        data = {"credential": exc.scheme_name}
        return MCPError(mt.INVALID_REQUEST, f"{what} was refused: {exc}", data)
    cause = exc.__cause__
    if isinstance(cause, MCPError) and cause.error.code != mt.REQUEST_TIMEOUT:
        return MCPError(cause.error.code, f"{what} failed: {exc}")
    if isinstance(exc, TimeoutError):
        return MCPError(mt.REQUEST_TIMEOUT, f"{what} timed out: {exc}")
    return MCPError(mt.INTERNAL_ERROR, f"{what} failed: {exc}")


class Owners:
    """Which upstream server each name (a resource's URI, a prompt's) belongs to, for
    the `MAX_ROUTES` names most recently used."""

    def __init__(self) -> None:
        self._owners: OrderedDict[str, McpToolset] = OrderedDict()

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._owners))

    def get(self, name: str) -> McpToolset | None:
        source = self._owners.get(name)
        if source is not None:
            self._owners.move_to_end(name)
        return source

    def claim(self, name: str, source: McpToolset) -> bool:
        """Whether ``name`` is ``source``'s: it is, unless another server has it."""
        owner = self.get(name)
        if owner is not None:
            return owner is source
        self._owners[name] = source
        if len(self._owners) > MAX_ROUTES:
            self._owners.popitem(last=False)
        return True


class Gateway:
    """The upstream servers behind ``toolset`` and the routes to them."""

    def __init__(self, toolset: Toolset) -> None:
        self.sources = [each for each in composition(toolset) if isinstance(each, McpToolset)]
        """The MCP servers behind the toolset, once each, in order."""
        self.resources = Owners()
        self.templates = Owners()
        """By the URI template before its first ``{``."""
        self.prompts = Owners()

    async def each(
        self,
        ctx: ToolContext,
        what: str,
        listing: Callable[[McpToolset, ToolContext], Awaitable[list[_T]]],
    ) -> list[tuple[McpToolset, _T]]:
        """What ``listing`` lists of each upstream server, with the server.

        Raises:
            MCPError: a server failed to answer (see `protocol_error`).
        """
        found: list[tuple[McpToolset, _T]] = []
        for source in self.sources:
            try:
                items = await listing(source, ctx)
            except (ToolsetError, TimeoutError) as exc:
                raise protocol_error(what, exc) from exc
            found.extend((source, item) for item in items)
        return found

    async def withheld(self, ctx: ToolContext) -> list[AuthError]:
        """Why each upstream server that offers the caller of ``ctx`` nothing does so:
        its header provider finds them no credential (see `Withheld`). Nothing is sent."""
        found: list[AuthError] = []
        for source in self.sources:
            refused = await source.refusal(ctx)
            if refused is not None:
                found.append(refused)
        return found

    def owner(self, uri: str) -> McpToolset | None:
        """The upstream server a resource's URI belongs to: the one that listed it, or
        whose template it fits (the longest match), or the only one."""
        source = self.resources.get(uri)
        if source is not None:
            return source
        fits = [prefix for prefix in self.templates if prefix and uri.startswith(prefix)]
        if fits:
            return self.templates.get(max(fits, key=len))
        return self.sources[0] if len(self.sources) == 1 else None

    def prompt_owner(self, name: str) -> McpToolset | None:
        """The upstream server that listed the prompt ``name``, or the only one."""
        source = self.prompts.get(name)
        return source if source is not None or len(self.sources) != 1 else self.sources[0]

    async def routed(
        self,
        what: str,
        known: McpToolset | None,
        ask: Callable[[McpToolset], Awaitable[_T]],
        answers: Callable[[_T], bool] = lambda _: True,
    ) -> tuple[McpToolset, _T] | None:
        """What ``ask`` gets from ``known`` (the upstream server known to hold the
        item), or when none is known, from each server in turn: the first whose answer
        ``answers``. A server answering with an error is taken to say "not mine"; one
        that cannot be reached is the error when no other answers. None: every server
        said no."""
        failure: ToolsetError | TimeoutError | None = None
        for source in [known] if known is not None else self.sources:
            try:
                answer = await ask(source)
            except (ToolsetError, TimeoutError) as exc:
                if known is not None:
                    raise protocol_error(what, exc) from exc
                if failure is None and not _refused(exc):
                    failure = exc
                continue
            if known is not None or answers(answer):
                return source, answer
        if failure is not None:
            raise protocol_error(what, failure) from failure
        return None


def _refused(exc: BaseException) -> bool:
    """Whether an upstream server answered a request with an error (rather than not
    answering): a server asked for a resource or prompt it does not hold says so."""
    cause = exc.__cause__
    return isinstance(cause, MCPError) and cause.error.code != mt.REQUEST_TIMEOUT
