"""`restricted`: a toolset under an `AccessPolicy`, offering each caller the tools it may
use; the others are passive (no model and no ``tools/list`` sees them), yet known by
name: a call to one is refused before anything else is done, with an error result
naming what the caller lacks (see `toolsets._access`)."""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Awaitable, Mapping, Sequence
from typing import Any

from toolsets._access import AccessPolicy, Grant
from toolsets._concurrency import Ready
from toolsets._context import ToolContext
from toolsets._errors import ToolDefinitionError
from toolsets._forwarding import ForwardingTool
from toolsets._json import JsonValue
from toolsets._tool import LlmRequest, Tool
from toolsets._toolset import BaseToolset, ListingVaries, Toolset
from toolsets._wrappers import WrapperToolset

__all__ = ["MAX_GRANTS", "restricted"]

MAX_GRANTS = 256
"""Distinct callers' grants (scopes, roles, groups) whose listings a `restricted`
toolset keeps made (the least recently used are made again when next asked for)."""


class _GuardedTool(ForwardingTool):
    """A tool under an access policy, as one caller's listing offers it: declared when
    that caller may use it; otherwise known by name but passive, and a call refused."""

    def __init__(self, tool: Tool, policy: AccessPolicy, *, offered: bool) -> None:
        super().__init__(tool)
        self._policy = policy
        self._offered = offered

    def declaration(self) -> Any:
        return super().declaration() if self._offered else None

    async def process_llm_request(self, req: LlmRequest, ctx: ToolContext) -> None:
        if self._offered:
            await super().process_llm_request(req, ctx)
        else:  # callable, not offered: a call gets the refusal, not "no such tool"
            req.tools.setdefault(self.name, self)

    @property
    def required_scopes(self) -> frozenset[str]:
        """The wrapped tool's, and those the policy asks for it."""
        return self.tool.required_scopes | self._policy.required_scopes(self.tool)

    def refusal(self, args: Mapping[str, Any], ctx: ToolContext) -> JsonValue | None:
        refused = self._policy.refusal(self.tool, ctx, name=ctx.tool_name or self.name)
        return refused if refused is not None else super().refusal(args, ctx)

    def run(self, args: Mapping[str, Any], ctx: ToolContext) -> Awaitable[JsonValue]:
        # Checked again here: a wrapper of the caller's own that does not forward
        # ``refusal`` must not let a refused call through.
        refused = self._policy.refusal(self.tool, ctx, name=ctx.tool_name or self.name)
        return Ready(refused) if refused is not None else super().run(args, ctx)

    def __repr__(self) -> str:
        return f"_GuardedTool({self.tool!r}, offered={self._offered})"


class _Restricted(WrapperToolset):
    keeps_names = True
    listing_varies: ListingVaries = "caller"  # by the caller's scopes and claims

    def __init__(self, toolset: Toolset, policy: AccessPolicy) -> None:
        super().__init__(toolset)
        if not isinstance(policy, AccessPolicy):
            raise ToolDefinitionError(
                f"restricted() takes an AccessPolicy, not a {type(policy).__name__}",
                field="policy",
            )
        self.policy = policy
        """The policy applied."""
        self._guards: weakref.WeakKeyDictionary[Tool, dict[bool, _GuardedTool]] = (
            weakref.WeakKeyDictionary()
        )
        self._listings: OrderedDict[Grant, tuple[tuple[Tool, ...], tuple[Tool, ...]]] = (
            OrderedDict()
        )
        """Per grant: the wrapped listing's tools, and what was made of them for it."""

    def _guarded(self, tool: Tool, offered: bool) -> _GuardedTool:
        """The same guard of ``tool`` from one listing to the next (so what keeps a
        tool's listing by the tool, as the MCP server does, keeps it)."""
        try:
            known = self._guards.get(tool)
        except TypeError:  # not a weak key: a new guard each time
            return _GuardedTool(tool, self.policy, offered=offered)
        if known is None:
            known = self._guards[tool] = {}
        guard = known.get(offered)
        if guard is None:
            guard = known[offered] = _GuardedTool(tool, self.policy, offered=offered)
        return guard

    async def list_tools(self, ctx: ToolContext | None = None) -> Sequence[Tool]:
        tools = await self.wrapped.list_tools(ctx)
        grant = self.policy.grant(ctx if ctx is not None else ToolContext())
        kept = self._listings.get(grant)
        if kept is not None and (kept[0] is tools or _same(tools, kept[0])):
            # The same tools for the same grant: what was made is given back as it was
            # (what indexes a listing by identity, as the server does, indexes it once).
            self._listings.move_to_end(grant)
            return kept[1]
        made: tuple[Tool, ...] = tuple(
            self._guarded(t, self.policy.allows(t, grant)) for t in tools
        )
        # A copy of a list's items: a list may change in place.
        self._listings[grant] = (tools if isinstance(tools, tuple) else tuple(tools), made)
        self._listings.move_to_end(grant)
        while len(self._listings) > MAX_GRANTS:
            self._listings.popitem(last=False)
        return made

    def __repr__(self) -> str:
        return f"restricted({self.wrapped!r}, {self.policy!r})"


def _same(tools: Sequence[Tool], kept: tuple[Tool, ...]) -> bool:
    """Whether ``tools`` are the very tools of ``kept``, in order (a toolset may list
    the same tools in a new tuple each time)."""
    return len(tools) == len(kept) and all(a is b for a, b in zip(tools, kept, strict=True))


def restricted(toolset: Toolset, policy: AccessPolicy) -> BaseToolset:
    """``toolset`` under ``policy``: each caller is offered the tools it may use; the
    others are passive (no model and no ``tools/list`` sees them), and a call to one is
    refused before anything else is done, with an error result naming the scopes,
    roles or groups the caller lacks (see the module's docstring).

    Apply it beneath what calls tools from inside (`code_mode`) or loads them
    (`searchable`): ``code_mode(restricted(api, policy))`` checks each call a program
    makes; the other way round, only ``run_code`` itself would be.

    Raises:
        ToolDefinitionError: ``toolset`` is not a toolset, or ``policy`` not an
            `AccessPolicy` (``field`` says which).
    """
    return _Restricted(toolset, policy)
