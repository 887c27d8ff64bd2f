"""Resources and subscriptions: ``resources/list``, ``resources/templates/list`` and
``resources/read`` over the server's own resources (`Catalog`) and, behind a gateway,
its upstream servers' (the server's own come first: an upstream resource at the same URI
is hidden); ``resources/subscribe`` and ``unsubscribe`` (2025-11-25; a 2026-07-28
client listens with ``subscriptions/listen``), and telling subscribers of a change."""

from __future__ import annotations

from collections.abc import Awaitable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import mcp.types as mt
from mcp import MCPError
from mcp.server.subscriptions import ResourceUpdated

from toolsets._consumers import CallsTools
from toolsets._context import Invocation, ToolContext
from toolsets._results import clip
from toolsets.mcp.client._toolset import McpToolset
from toolsets.mcp.server._access import ItemAccess, Viewer, resource_policies
from toolsets.mcp.server._asking import Asking, answering
from toolsets.mcp.server._audit import audited_item
from toolsets.mcp.server._catalog import Catalog
from toolsets.mcp.server._changes import Changes
from toolsets.mcp.server._feature import Registration, bounded, page
from toolsets.mcp.server._gateway import Gateway
from toolsets.mcp.server._request import Context, connection
from toolsets.mcp.server._state import Requests

if TYPE_CHECKING:
    from mcp.server.connection import Connection

__all__ = ["Resources"]

Contents = list[mt.TextResourceContents | mt.BlobResourceContents]


@dataclass(eq=False)
class Resources:
    """The resources feature (see the module's docstring)."""

    catalog: Catalog
    gateway: Gateway
    requests: Requests
    asking: Asking
    changes: Changes
    calls: CallsTools
    """The server: its ``default_timeout`` bounds reading a resource of its own."""
    page_size: int
    access: ItemAccess
    """The access policies over the resources (see `_access`)."""
    _subscribers: dict[str, set[Connection]] = field(default_factory=dict, init=False)
    """The 2025-11-25 connections subscribed to each resource URI."""

    def handlers(self) -> Iterator[Registration]:
        yield "resources/list", mt.PaginatedRequestParams, self.list
        yield "resources/templates/list", mt.PaginatedRequestParams, self.list_templates
        yield "resources/read", mt.ReadResourceRequestParams, self.read
        yield "resources/subscribe", mt.SubscribeRequestParams, self.subscribe
        yield "resources/unsubscribe", mt.UnsubscribeRequestParams, self.unsubscribe

    async def list(
        self, ctx: Context, params: mt.PaginatedRequestParams | None
    ) -> mt.ListResourcesResult:
        ours = self.catalog.resources
        listing = ToolContext((await self.requests.context(ctx))[1])
        caller, access = Viewer(listing), self.access
        resources = [
            resource.to_mcp()
            for uri, resource in ours.items()
            if caller.may("resource", uri, access.own)
        ]
        owners = self.gateway.resources
        found = await self.gateway.each(listing, "listing the resources", McpToolset.list_resources)
        for source, resource in found:
            uri = str(resource.uri)
            seen = caller.may("resource", uri, access.of(source))
            if uri not in ours and owners.claim(uri, source) and seen:
                resources.append(resource)
        shown, next_cursor = page(resources, params, self.page_size)
        return mt.ListResourcesResult(resources=shown, next_cursor=next_cursor)

    async def list_templates(
        self, ctx: Context, params: mt.PaginatedRequestParams | None
    ) -> mt.ListResourceTemplatesResult:
        ours = self.catalog.templates
        listing = ToolContext((await self.requests.context(ctx))[1])
        caller, access = Viewer(listing), self.access
        templates = [
            template.to_mcp()
            for uri, template in ours.items()
            if caller.may("resource", uri, access.own)
        ]
        what = "listing the resource templates"
        for source, template in await self.gateway.each(
            listing, what, McpToolset.list_resource_templates
        ):
            if template.uri_template in ours:
                continue
            prefix = template.uri_template.split("{", 1)[0]
            self.gateway.templates.claim(prefix, source)
            if caller.may("resource", template.uri_template, access.of(source)):
                templates.append(template)
        shown, next_cursor = page(templates, params, self.page_size)
        return mt.ListResourceTemplatesResult(resource_templates=shown, next_cursor=next_cursor)

    async def read(
        self, ctx: Context, params: mt.ReadResourceRequestParams
    ) -> mt.ReadResourceResult | mt.InputRequiredResult:
        """``resources/read``: a resource of the server's own (which may ask the client,
        as a tool does), else an upstream server's; audited (`_audit`)."""
        uri = str(params.uri)
        _, invocation = await self.requests.context(ctx)
        shown = self.requests.kept.shown(uri)
        with audited_item("resources/read", shown, invocation, ctx.request_id) as answer:
            answer.append(result := await self._read(ctx, params, uri, invocation))
        return result

    async def _read(
        self, ctx: Context, params: mt.ReadResourceRequestParams, uri: str, invocation: Invocation
    ) -> mt.ReadResourceResult | mt.InputRequiredResult:
        kept = self.requests.kept  # the whole results of cut calls: read, never listed
        if kept.is_result_uri(uri) and (kept.holds(uri) or not self.gateway.sources):
            return kept.read(uri, self.requests.owner(ctx, invocation))
        reading = ToolContext(invocation)
        if self.access.active and self.catalog.holds(uri):
            self.access.check("resource", uri, self.access.own, reading, "uri")
        channel = reading.client = await self.asking.channel(ctx, params, uri)
        timeout = self.calls.default_timeout
        work = bounded(f"reading {uri!r}", self.catalog.read(uri, reading), timeout)
        own = await answering(channel, work)
        if isinstance(own, mt.InputRequiredResult):
            return own
        if own is not None:
            return mt.ReadResourceResult(contents=own)

        def read(source: McpToolset) -> Awaitable[Contents]:
            return source.read_resource(uri, reading)

        if self.access.active:
            policies = resource_policies(self.access, self.gateway, uri, own=False)
            self.access.check("resource", uri, policies, reading, "uri")
        found = await self.gateway.routed(f"reading {uri!r}", self.gateway.owner(uri), read)
        if found is None:
            raise MCPError(mt.INVALID_PARAMS, f"Resource not found: {clip(uri, 200)}", {"uri": uri})
        source, contents = found
        self.gateway.resources.claim(uri, source)
        return mt.ReadResourceResult(contents=contents)

    async def subscribe(self, ctx: Context, params: mt.SubscribeRequestParams) -> mt.EmptyResult:
        """``resources/subscribe`` (refused for a resource the caller may not read)."""
        uri = str(params.uri)
        if self.access.active:
            caller = ToolContext((await self.requests.context(ctx))[1])
            policies = resource_policies(self.access, self.gateway, uri, self.catalog.holds(uri))
            self.access.check("resource", uri, policies, caller, "uri")
        on = connection(ctx)
        if on.has_standalone_channel:
            subscribers = self._subscribers.setdefault(uri, set())
            if on not in subscribers:
                subscribers.add(on)
                on.exit_stack.callback(self._forget, uri, on)
        return mt.EmptyResult()

    async def unsubscribe(
        self, ctx: Context, params: mt.UnsubscribeRequestParams
    ) -> mt.EmptyResult:
        self._forget(str(params.uri), connection(ctx))
        return mt.EmptyResult()

    def _forget(self, uri: str, on: Connection) -> None:
        subscribers = self._subscribers.get(uri)
        if subscribers is not None:
            subscribers.discard(on)
            if not subscribers:
                del self._subscribers[uri]

    async def updated(self, uri: str) -> None:
        """Tell the clients subscribed to the resource at ``uri`` that it changed (see
        `McpServer.resource_updated`)."""

        def telling(on: Connection) -> Awaitable[None]:
            return on.send_resource_updated(uri)

        subscribers = self._subscribers.get(uri, ())
        await self.changes.publish(ResourceUpdated(uri=uri), subscribers, telling)
