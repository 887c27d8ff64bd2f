"""How the tools feature lists a tool: its MCP definition made once per declaration (a
big catalogue is converted once, not on every ``tools/list``), the check of its results
against the ``outputSchema``, finding a tool of a listing by name, and whether two
listings offer the same tools."""

from __future__ import annotations

import contextlib
import functools
import weakref
from collections.abc import Sequence
from dataclasses import dataclass

import mcp.types as mt
from mcp import MCPError
from mcp.shared.inbound import (
    find_invalid_x_mcp_header,
    validate_mcp_param_headers,
    x_mcp_header_map,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from toolsets._declaration import ToolDeclaration
from toolsets._tool import FirstTime, Tool
from toolsets._validation import ArgumentChecker
from toolsets.mcp._convert import tool_to_mcp
from toolsets.mcp.server._request import Context, headers_of

__all__ = [
    "ByName",
    "Listing",
    "Listings",
    "check_param_headers",
    "checked_when_called",
    "offered",
    "same_offer",
]


@dataclass(frozen=True, eq=False)
class Listing:
    """A tool as a server lists it, with the declaration it was made from."""

    declaration: ToolDeclaration
    tool: mt.Tool
    output: ArgumentChecker | None
    """Checks results against the ``outputSchema`` (None: the tool lists none)."""

    @functools.cached_property
    def parameter_names(self) -> frozenset[str]:
        """The names of the tool's parameters (its ``inputSchema``'s properties)."""
        properties = self.tool.input_schema.get("properties")
        return frozenset(properties) if isinstance(properties, dict) else frozenset()

    @functools.cached_property
    def routed(self) -> bool:
        """Whether arguments of the tool are mirrored in ``Mcp-Param-*`` headers (its
        ``inputSchema`` marks properties ``x-mcp-header``, validly: a client drops a
        tool whose marks are not, and sends no such header for it)."""
        schema = self.tool.input_schema
        return bool(x_mcp_header_map(schema)) and find_invalid_x_mcp_header(schema) is None


class Listings:
    """The listing of each tool, made once per declaration."""

    def __init__(self) -> None:
        self._listings: weakref.WeakKeyDictionary[Tool, Listing] = weakref.WeakKeyDictionary()
        self._listed = FirstTime()
        """The tools listed before (see `make`)."""

    async def make(self, tools: Sequence[Tool]) -> dict[int, Listing | None]:
        """Make the listings of the tools not listed before, in a worker thread when
        they are many (`FirstTime`): the declarations of a huge OpenAPI spec are
        built on demand, which the event loop does not wait on. Returns them by the
        tool's ``id`` (None: passive); `of` finds them made."""
        made: dict[int, Listing | None] = {}
        for tool, listing in await self._listed.make(tools, _listed):
            made[id(tool)] = listing
            if listing is not None:
                with contextlib.suppress(TypeError):  # no weak key: made every time
                    self._listings[tool] = listing
        return made

    def of(self, tool: Tool, *, called: bool = False) -> Listing | None:
        """``tool`` as this server lists it (None: a passive tool), made once per
        declaration. ``called``: as it is called, which a tool listed hidden
        (`HiddenTool`, one a `searchable` search has not loaded) is too."""
        declaration = tool.declaration()
        if declaration is None and called:
            declaration = tool.call_declaration()
        if declaration is None:
            return None
        try:
            made = self._listings.get(tool)
        except TypeError:  # a tool that cannot be a weak key: made every time
            made = None
        if made is not None and (
            made.declaration is declaration or made.declaration == declaration
        ):
            return made
        made = _made_listing(tool, declaration)
        with contextlib.suppress(TypeError):
            self._listings[tool] = made
        return made


class ByName:
    """Finds a tool of a listing by name: through an index of the latest listing when it
    is a tuple (a toolset that lists the same tuple each time, as an OpenAPI toolset
    does, is indexed once: a call to one of a thousand tools does not go through them
    all), else by going through it."""

    def __init__(self) -> None:
        self._tools: Sequence[Tool] | None = None
        self._index: dict[str, Tool] = {}

    def find(self, tools: Sequence[Tool], name: str) -> Tool | None:
        """The first tool of ``tools`` called ``name``."""
        if tools is not self._tools:
            if not isinstance(tools, tuple):  # a list may change under an index
                return next((tool for tool in tools if tool.name == name), None)
            index: dict[str, Tool] = {}
            for tool in tools:
                index.setdefault(tool.name, tool)
            self._tools, self._index = tools, index
        return self._index.get(name)


def checked_when_called(name: str) -> None:
    """The SDK's lookup of a tool's input schema before a 2026-07-28 ``tools/call`` is
    served, to check its ``Mcp-Param-*`` headers: none (nothing to check there). Without
    one the SDK runs the whole ``tools/list`` on every call with arguments to find that
    schema; the call checks the headers itself, against the tool as its own caller is
    offered it (`check_param_headers`), which the SDK's lookup, made before the server
    knows the caller, cannot see."""
    return None


def check_param_headers(ctx: Context, params: mt.CallToolRequestParams, listing: Listing) -> None:
    """Refuse a 2026-07-28 call over HTTP whose ``Mcp-Param-*`` headers do not mirror
    its arguments as the tool's ``inputSchema`` marks them (``x-mcp-header``): a proxy
    may route on a header, and the tool must not run on other values than those.

    Raises:
        MCPError: -32020 (header mismatch: HTTP 400), naming the header.
    """
    if not listing.routed or ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        return
    headers = headers_of(ctx)
    if headers is None:  # not over HTTP: no headers to mirror anything
        return
    rejection = validate_mcp_param_headers(
        listing.tool.input_schema, params.arguments or {}, headers
    )
    if rejection is not None:
        raise MCPError(rejection.code, rejection.message, rejection.data)


def _made_listing(tool: Tool, declaration: ToolDeclaration) -> Listing:
    listed = tool_to_mcp(tool, declaration)
    assert listed is not None  # it has a declaration
    schema = listed.output_schema
    output = (
        ArgumentChecker(schema, tool_name=tool.name, checks="results", formats=False)
        if schema is not None
        else None
    )
    return Listing(declaration, listed, output)


def _listed(tool: Tool) -> Listing | None:
    """``tool`` as a server lists it, None when it is passive (from any thread)."""
    declaration = tool.declaration()
    return None if declaration is None else _made_listing(tool, declaration)


def offered(tools: Sequence[Tool]) -> list[str]:
    """The names of the tools a listing offers (passive ones are not)."""
    return [t.name for t in tools if t.declaration() is not None]


def same_offer(before: Sequence[Tool], after: Sequence[Tool]) -> bool:
    """Whether two listings offer the same tools under the same declarations (a name,
    a description or parameters changed is a change: `code_mode`'s ``run_code``
    describes the tools a search loaded). A toolset that did not change lists the same
    tuple again (the wrappers keep theirs), which is not gone through."""
    if before is after:
        return True
    was, now = _declarations(before), _declarations(after)
    return len(was) == len(now) and all(a is b or a == b for a, b in zip(was, now, strict=True))


def _declarations(tools: Sequence[Tool]) -> list[ToolDeclaration]:
    """The declarations a listing offers, in order (passive tools offer none)."""
    return [d for d in (tool.declaration() for tool in tools) if d is not None]
