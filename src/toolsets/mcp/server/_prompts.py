"""Prompts: ``prompts/list`` and ``prompts/get`` over the server's own prompts (`Catalog`)
and, behind a gateway, its upstream servers' (the server's own come first: an upstream
prompt of the same name is hidden). Rendering a prompt of the server's own may ask the
client, as a tool's call does."""

from __future__ import annotations

from collections.abc import Awaitable, Iterator
from dataclasses import dataclass

import mcp.types as mt
from mcp import MCPError

from toolsets._consumers import CallsTools
from toolsets._context import Invocation, ToolContext
from toolsets._results import clip
from toolsets.mcp.client._toolset import McpToolset
from toolsets.mcp.server._access import ItemAccess, Viewer, prompt_policies
from toolsets.mcp.server._asking import Asking, answering
from toolsets.mcp.server._audit import audited_item
from toolsets.mcp.server._catalog import Catalog
from toolsets.mcp.server._feature import Registration, bounded, page
from toolsets.mcp.server._gateway import Gateway
from toolsets.mcp.server._request import Context
from toolsets.mcp.server._state import Requests

__all__ = ["Prompts"]


@dataclass(eq=False)
class Prompts:
    """The prompts feature (see the module's docstring)."""

    catalog: Catalog
    gateway: Gateway
    requests: Requests
    asking: Asking
    calls: CallsTools
    """The server: its ``default_timeout`` bounds rendering a prompt of its own."""
    page_size: int
    access: ItemAccess
    """The access policies over the prompts (see `_access`)."""

    def handlers(self) -> Iterator[Registration]:
        yield "prompts/list", mt.PaginatedRequestParams, self.list
        yield "prompts/get", mt.GetPromptRequestParams, self.get

    async def list(
        self, ctx: Context, params: mt.PaginatedRequestParams | None
    ) -> mt.ListPromptsResult:
        ours = self.catalog.prompts
        listing = ToolContext((await self.requests.context(ctx))[1])
        caller, access = Viewer(listing), self.access
        prompts = [
            prompt.to_mcp()
            for name, prompt in ours.items()
            if caller.may("prompt", name, access.own)
        ]
        owners = self.gateway.prompts
        found = await self.gateway.each(listing, "listing the prompts", McpToolset.list_prompts)
        for source, prompt in found:
            seen = caller.may("prompt", prompt.name, access.of(source))
            if prompt.name not in ours and owners.claim(prompt.name, source) and seen:
                prompts.append(prompt)
        shown, next_cursor = page(prompts, params, self.page_size)
        return mt.ListPromptsResult(prompts=shown, next_cursor=next_cursor)

    async def get(
        self, ctx: Context, params: mt.GetPromptRequestParams
    ) -> mt.GetPromptResult | mt.InputRequiredResult:
        """``prompts/get``: a prompt of the server's own, else an upstream server's;
        audited (`_audit`)."""
        _, invocation = await self.requests.context(ctx)
        with audited_item("prompts/get", params.name, invocation, ctx.request_id) as answer:
            answer.append(result := await self._get(ctx, params, invocation))
        return result

    async def _get(
        self, ctx: Context, params: mt.GetPromptRequestParams, invocation: Invocation
    ) -> mt.GetPromptResult | mt.InputRequiredResult:
        name = params.name
        asking = ToolContext(invocation)
        own = self.catalog.prompts.get(name)
        if self.access.active:
            policies = prompt_policies(self.access, self.gateway, name, own is not None)
            self.access.check("prompt", name, policies, asking, "name")
        if own is not None:
            asking.client = channel = await self.asking.channel(ctx, params, name)
            rendering = own.get(params.arguments, asking)
            timeout = self.calls.default_timeout
            return await answering(channel, bounded(f"the prompt {name!r}", rendering, timeout))

        def get(source: McpToolset) -> Awaitable[mt.GetPromptResult]:
            return source.get_prompt(name, params.arguments, asking)

        owner = self.gateway.prompt_owner(name)
        found = await self.gateway.routed(f"the prompt {name!r}", owner, get)
        if found is None:
            raise MCPError(mt.INVALID_PARAMS, f"Unknown prompt {clip(name, 100)!r}")
        self.gateway.prompts.claim(name, found[0])
        return found[1]
