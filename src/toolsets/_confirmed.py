"""Confirmation by wrapping: `confirmed(toolset, policy)` and the one `ConfirmPolicy`.

A policy reads the tool's own hints (``is_read_only``, the ``destructive`` annotation),
so the same policy means the same thing for function tools, MCP tools and API
operations. ``McpToolset(confirm=...)`` and ``OpenApiToolset(confirm=...)`` apply the
same policy through the same check (`confirm_rule`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, TypeAlias

from toolsets._context import ToolContext
from toolsets._errors import ToolDefinitionError
from toolsets._forwarding import ForwardingTool
from toolsets._tool import Tool
from toolsets._toolset import BaseToolset, ListingVaries, Toolset
from toolsets._wrappers import LastListing, WrapperToolset

__all__ = ["ConfirmPolicy", "ConfirmedTool", "confirm_rule", "confirmed", "may_be_destructive"]

ConfirmRule: TypeAlias = Callable[[Tool, Mapping[str, Any]], bool]
"""Whether a call of the tool with the arguments needs the user's approval."""

ConfirmPolicy: TypeAlias = Literal["never", "writes", "destructive", "always"] | ConfirmRule
"""When calls need the user's approval, from the tool's own hints:

- ``"destructive"`` (the sources' default): calls of a tool that may be destructive,
  that is one not read-only and not marked non-destructive (MCP's defaults: a tool
  that says nothing has not said it is safe). For an OpenAPI operation: DELETE, PUT and
  PATCH, which remove or overwrite (a POST is taken to add).
- ``"writes"``: calls of any tool not read-only (for OpenAPI: all but GET, HEAD and
  OPTIONS).
- ``"always"``, ``"never"``.
- A function of the tool and the call's arguments, deciding per call. It is given the
  tool as the wrapper receives it: through ``prefixed`` or ``renamed``, a `RenamedTool`
  (its ``.tool`` is the one below); read the hints and ``declaration()`` to stay
  independent of what wraps what.
"""


def may_be_destructive(tool: Tool) -> bool:
    """The tool is not read-only and is not marked non-destructive (MCP's defaults:
    ``destructiveHint`` is true unless ``readOnlyHint`` is)."""
    if tool.is_read_only:
        return False
    declaration = tool.declaration()
    return declaration is None or declaration.annotations.destructive is not False


def _never(tool: Tool, args: Mapping[str, Any]) -> bool:
    return False


def _writes(tool: Tool, args: Mapping[str, Any]) -> bool:
    return not tool.is_read_only


def _destructive(tool: Tool, args: Mapping[str, Any]) -> bool:
    return may_be_destructive(tool)


def _always(tool: Tool, args: Mapping[str, Any]) -> bool:
    return True


_RULES: dict[str, ConfirmRule] = {
    "never": _never,
    "writes": _writes,
    "destructive": _destructive,
    "always": _always,
}


def confirm_rule(policy: ConfirmPolicy) -> ConfirmRule:
    """The check a policy stands for.

    Raises:
        ToolDefinitionError: ``policy`` is none of the policies (``.field`` is
            ``"confirm"``; the message quotes the value).
    """
    if callable(policy):
        return policy
    rule = _RULES.get(policy) if isinstance(policy, str) else None
    if rule is None:
        raise ToolDefinitionError(
            f"confirm must be never, writes, destructive, always or a function, not {policy!r}",
            field="confirm",
        )
    return rule


class ConfirmedTool(ForwardingTool):
    """A tool whose calls need the user's approval where its policy says so (and
    wherever the tool itself asks for it); everything else is the wrapped tool's."""

    def __init__(self, tool: Tool, policy: ConfirmPolicy) -> None:
        super().__init__(tool)
        self.policy = policy
        """The policy, as given."""
        self._rule = confirm_rule(policy)

    def requires_confirmation(self, args: Mapping[str, Any]) -> bool:
        """The tool's own answer, or else the policy's (which sees the wrapped tool)."""
        return self.tool.requires_confirmation(args) or self._rule(self.tool, args)

    def __repr__(self) -> str:
        return f"ConfirmedTool({self.tool!r}, policy={self.policy!r})"


class _Confirmed(WrapperToolset):
    listing_varies: ListingVaries = "never"
    keeps_names = True

    def __init__(self, toolset: Toolset, policy: ConfirmPolicy) -> None:
        super().__init__(toolset)
        self.policy = policy
        confirm_rule(policy)  # an invalid policy fails here, not at the first call
        self._made: dict[int, ConfirmedTool] = {}
        """The last listing's tools, by the id of the tool each wraps."""
        self._last = LastListing()

    async def list_tools(self, ctx: ToolContext | None = None) -> Sequence[Tool]:
        tools = await self.wrapped.list_tools(ctx)
        made_before = self._last.made_of(tools)
        if made_before is not None:
            return made_before
        # The same tool gets the same wrapper from one listing to the next: what keeps
        # a tool by identity (a server's converted listing, say) keeps it through this.
        made = self._made
        out = []
        for tool in tools:
            known = made.get(id(tool))
            out.append(
                known
                if known is not None and known.tool is tool
                else ConfirmedTool(tool, self.policy)
            )
        self._made = {id(each.tool): each for each in out}
        return self._last.keep(tools, tuple(out))

    def __repr__(self) -> str:
        return f"confirmed({self.wrapped!r}, {self.policy!r})"


def confirmed(toolset: Toolset, policy: ConfirmPolicy = "destructive") -> BaseToolset:
    """The toolset's tools, their calls waiting for the user's approval (in an agent)
    where ``policy`` says so; see `ConfirmPolicy`.

    The policy only adds: a tool that asks for confirmation itself still does. Calls go
    to the same tools; the confirmation hint names each tool as the model sees it
    (through `prefixed` and `renamed`, in any order).

    Raises:
        ToolDefinitionError: ``policy`` is not a policy (``.field == "confirm"``).
    """
    return _Confirmed(toolset, policy)
