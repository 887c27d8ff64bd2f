"""Completion: ``completion/complete``, the values suggested for an argument of a prompt
or a variable of a resource template: from the server's own (its completer), else from
the upstream server that holds it (behind a gateway), else none."""

from __future__ import annotations

from collections.abc import Awaitable, Iterator, Sequence
from dataclasses import dataclass

import mcp.types as mt

from toolsets._consumers import CallsTools
from toolsets._context import ToolContext
from toolsets.mcp.client._toolset import McpToolset
from toolsets.mcp.server._access import ItemAccess, prompt_policies, resource_policies
from toolsets.mcp.server._catalog import Catalog
from toolsets.mcp.server._feature import Registration, bounded
from toolsets.mcp.server._gateway import Gateway
from toolsets.mcp.server._request import Context
from toolsets.mcp.server._state import Requests

__all__ = ["MAX_COMPLETIONS", "Completion"]

MAX_COMPLETIONS = 100
"""Values one ``completion/complete`` answer may hold (MCP's limit)."""


@dataclass(eq=False)
class Completion:
    """The completion feature (see the module's docstring)."""

    catalog: Catalog
    gateway: Gateway
    requests: Requests
    calls: CallsTools
    """The server: its ``default_timeout`` bounds a completer of its own."""
    access: ItemAccess
    """The access policies over the prompts and templates (see `_access`)."""

    def handlers(self) -> Iterator[Registration]:
        yield "completion/complete", mt.CompleteRequestParams, self.complete

    async def complete(self, ctx: Context, params: mt.CompleteRequestParams) -> mt.CompleteResult:
        ref = params.ref
        known = params.context.arguments if params.context is not None else None
        own = (
            self.catalog.prompts.get(ref.name)
            if isinstance(ref, mt.PromptReference)
            else self.catalog.templates.get(ref.uri)
        )
        _, invocation = await self.requests.context(ctx)
        asking = ToolContext(invocation)
        if self.access.active:
            self._check(ref, own is not None, asking)
        if own is not None:
            completing = own.completions(params.argument.name, params.argument.value, known or {})
            values = await bounded("completion", completing, self.calls.default_timeout)
            return mt.CompleteResult(completion=_completion(values))
        if isinstance(ref, mt.PromptReference):
            source = self.gateway.prompt_owner(ref.name)
        else:
            source = self.gateway.owner(ref.uri)
        argument = {"name": params.argument.name, "value": params.argument.value}

        def complete(source: McpToolset) -> Awaitable[mt.CompleteResult]:
            return source.complete(ref, argument, known, asking)

        found = await self.gateway.routed(
            "completion", source, complete, lambda result: bool(result.completion.values)
        )
        if found is None:  # nothing known of it: no suggestions
            return mt.CompleteResult(completion=mt.Completion(values=[]))
        return found[1]

    def _check(
        self, ref: mt.PromptReference | mt.ResourceTemplateReference, own: bool, ctx: ToolContext
    ) -> None:
        """Refuse completing for a prompt or template the caller may not use."""
        if isinstance(ref, mt.PromptReference):
            policies = prompt_policies(self.access, self.gateway, ref.name, own)
            self.access.check("prompt", ref.name, policies, ctx, "name")
        else:
            policies = resource_policies(self.access, self.gateway, ref.uri, own)
            self.access.check("resource", ref.uri, policies, ctx, "uri")


def _completion(values: Sequence[str]) -> mt.Completion:
    """The first `MAX_COMPLETIONS` of ``values``, saying whether there are more."""
    return mt.Completion(
        values=list(values[:MAX_COMPLETIONS]),
        total=len(values),
        has_more=len(values) > MAX_COMPLETIONS,
    )
