"""Access to the resources, resource templates and prompts a server serves: the access
policies within the served toolset (each `restricted` in it) applied to them, as they
are to its tools.

A policy applies to the upstream servers (`McpToolset`) it wraps: ``restricted(
combined(a, b), policy)`` to the resources and prompts of ``a`` and ``b``,
``combined(restricted(a, policy), b)`` to ``a``'s only. One applied to the whole served
toolset (through wrappers only) applies to the server's own resources and prompts too.
Rules of a policy select them by URI glob (a template by its URI template) and by name
(`AccessRule`'s ``resources`` and ``prompts``); a policy without such rules leaves them
open (see `toolsets._access`).

A caller not allowed an item does not see it listed, and reading, getting, subscribing
to or completing it anyway is refused before anything runs or is sent upstream: a
JSON-RPC error -32602 (as for an unknown item), its message and ``data`` naming what the
caller lacks (``missing_scopes``, ``missing_roles``, ``missing_groups`` or
``denied_by_default``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import mcp.types as mt
from mcp import MCPError

from toolsets._access import AccessPolicy, Grant, ItemKind
from toolsets._context import ToolContext
from toolsets._toolset import Toolset
from toolsets.mcp.client._toolset import McpToolset
from toolsets.mcp.server._gateway import Gateway

__all__ = ["ItemAccess", "Viewer", "prompt_policies", "resource_policies"]

Policies = tuple[AccessPolicy, ...]


class ItemAccess:
    """The policies over the server's own items and over each upstream server's."""

    def __init__(self, toolset: Toolset) -> None:
        self.own: Policies = ()
        """The policies applied to the whole served toolset."""
        self._upstream: dict[int, Policies] = {}
        self._sources: list[McpToolset] = []
        self._walk(toolset, (), top=True)
        self.active = bool(self.own) or any(self._upstream.values())
        """Whether any policy governs resources or prompts (else nothing is checked)."""

    def _walk(self, candidate: object, above: Policies, *, top: bool) -> None:
        policy = getattr(candidate, "policy", None)
        if isinstance(policy, AccessPolicy) and (
            policy.governs_resources or policy.governs_prompts
        ):
            above = (*above, policy)
            if top:
                self.own = above
        if isinstance(candidate, McpToolset):
            if id(candidate) not in self._upstream:
                self._sources.append(candidate)  # kept: the ids stay theirs
            self._upstream[id(candidate)] = (*self._upstream.get(id(candidate), ()), *above)
        inner = getattr(candidate, "wrapped", None)
        if isinstance(inner, Toolset):
            self._walk(inner, above, top=top)
        parts = getattr(candidate, "toolsets", None)
        if isinstance(parts, tuple | list):
            for part in parts:
                if isinstance(part, Toolset):
                    self._walk(part, above, top=False)

    def of(self, source: McpToolset | None) -> Policies:
        """The policies over ``source``'s items (None: the server's own)."""
        return self.own if source is None else self._upstream.get(id(source), ())

    def of_any(self, sources: Iterable[McpToolset]) -> Policies:
        """The policies over items that any of ``sources`` may hold (one not known yet
        is asked of each upstream server: each one's policies apply)."""
        found: list[AccessPolicy] = []
        for source in sources:
            found.extend(p for p in self.of(source) if all(p is not f for f in found))
        return tuple(found)

    def check(
        self, kind: ItemKind, name: str, policies: Policies, ctx: ToolContext, field: str
    ) -> None:
        """Refuse the caller of ``ctx`` the item ``name`` unless every policy of
        ``policies`` allows it.

        Raises:
            MCPError: -32602, the message and ``data`` naming what the caller lacks
                (``field``: the key naming the item in ``data``, ``uri`` or ``name``).
        """
        for policy in policies:
            refused = policy.item_refusal(kind, name, ctx)
            if refused is not None:
                message = str(refused.pop("error"))
                raise MCPError(mt.INVALID_PARAMS, message, {field: name, **refused})


class Viewer:
    """Who views a listing: what it holds under each policy, worked out once a listing."""

    def __init__(self, ctx: ToolContext) -> None:
        self.ctx = ctx
        self._grants: dict[int, Grant] = {}

    def may(self, kind: ItemKind, name: str, policies: Sequence[AccessPolicy]) -> bool:
        """Whether every policy of ``policies`` lets the caller see the item ``name``."""
        for policy in policies:
            grant = self._grants.get(id(policy))
            if grant is None:
                grant = self._grants[id(policy)] = policy.grant(self.ctx)
            if not policy.allows_item(kind, name, grant):
                return False
        return True


def prompt_policies(access: ItemAccess, gateway: Gateway, name: str, own: bool) -> Policies:
    """The policies over the prompt ``name``: the server's own (``own``: it has one of
    that name), else those of the upstream server that listed it, or of each."""
    if own:
        return access.own
    owner = gateway.prompt_owner(name)
    return access.of_any([owner] if owner is not None else gateway.sources)


def resource_policies(access: ItemAccess, gateway: Gateway, uri: str, own: bool) -> Policies:
    """The policies over the resource (template) ``uri``: the server's own (``own``: it
    holds one there), else those of the upstream server it belongs to, or of each."""
    if own:
        return access.own
    owner = gateway.owner(uri)
    return access.of_any([owner] if owner is not None else gateway.sources)
