"""How long, and how widely, a client may cache the server's lists (``ttlMs`` and
``cacheScope`` on ``tools/list``, ``resources/list``, ``resources/templates/list`` and
``prompts/list``, protocol 2026-07-28), told truthfully from what is served:

- a list every caller is offered alike (an OpenAPI spec, functions, the server's own
  resources and prompts): ``public``, for ``list_ttl`` (changes are announced, and a
  listening client lists again at once);
- a list filtered per caller (an `AccessPolicy` through `restricted`, each caller's
  own upstream credentials: `UserCredentials`, a ``header_provider``): ``private``;
- a gateway over MCP servers, whose lists change when they say so: at most
  `GATEWAY_LIST_TTL`, and no longer, nor wider, than the upstream servers' own hints;
- a list that may differ from one request to the next (a `searchable` catalogue, a
  ``filtered`` predicate, code mode, a toolset that says nothing of its listing, see
  `BaseToolset.listing_varies`): ``private`` and ``0`` (not to be reused).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

import mcp.types as mt

from toolsets._toolset import Toolset
from toolsets.mcp.client._toolset import McpToolset
from toolsets.mcp.server._feature import Handler
from toolsets.mcp.server._gateway import composition
from toolsets.mcp.server._request import Context
from toolsets.mcp.server._upstream import ServerCredentials, UserCredentials

__all__ = ["GATEWAY_LIST_TTL", "LIST_TTL", "ListCaching"]

LIST_TTL = 3600.0
"""Seconds a client may keep a list every caller is offered alike (a static toolset)."""
GATEWAY_LIST_TTL = 10.0
"""The most seconds a client may keep a list that upstream MCP servers make."""

Scope: TypeAlias = Literal["public", "private"]
_Kind: TypeAlias = Literal["tools", "resources", "resource_templates", "prompts"]
_LISTS: dict[str, _Kind] = {
    "tools/list": "tools",
    "resources/list": "resources",
    "resources/templates/list": "resource_templates",
    "prompts/list": "prompts",
}


def check_list_ttl(seconds: float) -> float:
    """``seconds`` as a list's time to live.

    Raises:
        ValueError: not a finite number of seconds, at least 0.
    """
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        raise ValueError(f"list_ttl must be a number of seconds, not {seconds!r}")
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"list_ttl must be a finite number of seconds, at least 0, not {seconds}")
    return float(seconds)


@dataclass(frozen=True)
class _Hint:
    ttl_ms: int
    scope: Scope


class ListCaching:
    """The cache hints of a server's lists (see the module's docstring)."""

    def __init__(self, toolset: Toolset, credentials: ServerCredentials, ttl: float) -> None:
        """``credentials``: the server's (`UserCredentials`: each caller's own);
        ``ttl``: the seconds a static list may be kept.

        Raises:
            ValueError: ``ttl`` is not a finite number of seconds, at least 0.
        """
        ttl = check_list_ttl(ttl)
        per_caller = isinstance(credentials, UserCredentials)
        parts = composition(toolset)
        varies = {_varies(each) for each in parts}
        self._sources = [each for each in parts if isinstance(each, McpToolset)]
        self._long = round(ttl * 1000)
        self._short = min(self._long, round(GATEWAY_LIST_TTL * 1000))
        caller = per_caller or "caller" in varies
        if "request" in varies:
            self._tools = _Hint(0, "private")
        else:
            self._tools = _Hint(self._long, "private" if caller else "public")
        # Resources and prompts are the server's own and its upstream servers': per
        # caller only when those are reached with each caller's credentials.
        upstream_per_caller = per_caller or any(_varies(each) == "caller" for each in self._sources)
        self._others = _Hint(self._long, "private" if upstream_per_caller else "public")

    def on(self, method: str, handler: Handler) -> Handler:
        """``handler``, whose answers carry their cache hints when ``method`` is a
        list."""
        kind = _LISTS.get(method)
        if kind is None:
            return handler
        hint = self._tools if kind == "tools" else self._others

        async def hinted(ctx: Context, params: Any) -> Any:
            result = await handler(ctx, params)
            if isinstance(result, mt.CacheableResult):
                self._hint(result, hint, kind)
            return result

        return hinted

    def _hint(self, result: mt.CacheableResult, hint: _Hint, kind: _Kind) -> None:
        ttl, scope = hint.ttl_ms, hint.scope
        if self._sources and ttl:
            ttl = min(ttl, self._short)
            for ttl_ms, said in _upstream(self._sources, kind):
                ttl = min(ttl, ttl_ms)
                scope = "private" if said == "private" else scope
        result.ttl_ms = ttl
        result.cache_scope = scope


def _varies(toolset: object) -> str:
    """What ``toolset``'s listing depends on (`BaseToolset.listing_varies`): for an MCP
    server's, the caller when each has a session of their own (a ``header_provider``)."""
    if isinstance(toolset, McpToolset):
        per_caller = getattr(toolset.transport, "header_provider", None) is not None
        return "caller" if per_caller else "never"
    return str(getattr(toolset, "listing_varies", "request"))


def _upstream(sources: Sequence[McpToolset], kind: _Kind) -> list[tuple[int, Scope]]:
    """The hints the upstream servers gave with their latest answer to ``kind``."""
    return [each.list_hints[kind] for each in sources if kind in each.list_hints]
