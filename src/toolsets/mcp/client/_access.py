"""What `McpToolset` asks its server besides tools (internal): every page of a list,
resources and resource templates, prompts, completions, the tasks it keeps, who it is;
and the tools that give a model the resources and prompts (``resources_as_tools``,
``prompts_as_tools``)."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal, TypeAlias

import mcp.types as mt
from mcp import Client

from toolsets._auth import redact_json
from toolsets._context import ToolContext
from toolsets._errors import AuthError, ToolCallError
from toolsets._function_tool import FunctionTool
from toolsets._json import JsonValue
from toolsets._tool import Tool
from toolsets.mcp.client._host import Host
from toolsets.mcp.client._sessions import Sessions
from toolsets.mcp.client._tasks import list_tasks_page
from toolsets.mcp.client._withheld import Withheld, header_refusal

__all__ = ["ServerAccess", "access_tools"]


_Kind: TypeAlias = Literal["tools", "resources", "resource_templates", "prompts"]
"""A paginated list of a server's."""
_PAGES: dict[_Kind, tuple[Callable[..., Awaitable[Any]], Callable[[Any], list[Any]]]] = {
    "tools": (Client.list_tools, lambda page: page.tools),
    "resources": (Client.list_resources, lambda page: page.resources),
    "resource_templates": (Client.list_resource_templates, lambda page: page.resource_templates),
    "prompts": (Client.list_prompts, lambda page: page.prompts),
}
"""How a page of each list is asked for (``client.<list>(cursor=...)``), and its items."""


class ServerAccess:
    """The requests of `McpToolset` beyond its tools, each over the session serving its
    caller and bounded by the toolset's ``timeout`` (a base of `McpToolset`, which gives
    it both)."""

    timeout: float
    name: str
    _sessions: Sessions
    _withheld: Withheld

    @property
    def list_hints(self) -> dict[str, tuple[int, Literal["public", "private"]]]:
        """The cache hints (``ttlMs``, ``cacheScope``) of the server's latest answer to
        each list (``"tools"``, ``"resources"``, ...; the shortest and narrowest of its
        pages), when it gave them (protocol 2026-07-28): a gateway serving the list
        passes them on."""
        hints: dict[str, tuple[int, Literal["public", "private"]]]
        hints = self.__dict__.setdefault("_list_hints", {})
        return hints

    async def refusal(self, ctx: ToolContext | None = None) -> AuthError | None:
        """Why this server offers the caller of ``ctx`` nothing: the `AuthError` with
        which the transport's ``header_provider`` refuses them (a `UserBearer` finding
        them no credential of their own), naming the credential; None when it does not
        (or there is no header provider). Nothing is sent to the server."""
        return await header_refusal(self._sessions.transport, ctx)

    async def _offering(self, ctx: ToolContext | None) -> tuple[str, Host] | None:
        """The key and host of the session serving ``ctx``; None when the header provider
        finds its caller no credential: the server offers them nothing (see `Withheld`)."""
        try:
            return await self._sessions.host_for(ctx)
        except AuthError as exc:
            self._withheld.tell(ctx, exc)
            return None

    async def _all_pages(
        self, ctx: ToolContext | None, kind: _Kind, host: Host | None = None
    ) -> list[Any]:
        """Every item of a paginated list (``tools``, ``resources``, ``prompts``), from
        one session (``host``'s, by default the one serving ``ctx``); none for a caller
        the server offers nothing (`Withheld`)."""
        if host is None:
            found = await self._offering(ctx)
            if found is None:
                return []
            host = found[1]
        method, items_of = _PAGES[kind]
        items: list[Any] = []
        cursor: str | None = None
        hints: list[tuple[int, Literal["public", "private"]]] = []
        while True:
            page = await self._sessions.request(
                ctx,
                f"{kind}/list",
                functools.partial(method, cursor=cursor),
                self.timeout,
                host=host,
            )
            items.extend(items_of(page))
            if "ttl_ms" in page.model_fields_set:  # not on 2025-11-25
                hints.append((page.ttl_ms, page.cache_scope))
            cursor = page.next_cursor
            if not cursor:
                break
        if hints:
            scope: Literal["public", "private"] = (
                "private" if any(s == "private" for _, s in hints) else "public"
            )
            self.list_hints[kind] = (min(ttl for ttl, _ in hints), scope)
        else:
            self.list_hints.pop(kind, None)
        return items

    # --- resources and prompts --------------------------------------------------------

    async def list_resources(self, ctx: ToolContext | None = None) -> list[mt.Resource]:
        """Every resource the server lists (all pages)."""
        resources: list[mt.Resource] = await self._all_pages(ctx, "resources")
        return resources

    async def list_resource_templates(
        self, ctx: ToolContext | None = None
    ) -> list[mt.ResourceTemplate]:
        """Every resource template the server offers (all pages)."""
        templates: list[mt.ResourceTemplate] = await self._all_pages(ctx, "resource_templates")
        return templates

    async def read_resource(
        self, uri: str, ctx: ToolContext | None = None
    ) -> list[mt.TextResourceContents | mt.BlobResourceContents]:
        """The contents of a resource."""
        return await self._read_resource(uri, ctx, None)

    async def _read_resource(
        self, uri: str, ctx: ToolContext | None, host: Host | None
    ) -> list[mt.TextResourceContents | mt.BlobResourceContents]:
        result = await self._sessions.request(
            ctx, f"reading {uri!r}", lambda c: c.read_resource(uri), self.timeout, host=host
        )
        contents: list[mt.TextResourceContents | mt.BlobResourceContents] = result.contents
        return contents

    async def list_prompts(self, ctx: ToolContext | None = None) -> list[mt.Prompt]:
        """Every prompt the server offers (all pages)."""
        prompts: list[mt.Prompt] = await self._all_pages(ctx, "prompts")
        return prompts

    async def get_prompt(
        self, name: str, arguments: Mapping[str, str] | None = None, ctx: ToolContext | None = None
    ) -> mt.GetPromptResult:
        """A prompt, filled in with ``arguments``."""
        return await self._get_prompt(name, arguments, ctx, None)

    async def _get_prompt(
        self,
        name: str,
        arguments: Mapping[str, str] | None,
        ctx: ToolContext | None,
        host: Host | None,
    ) -> mt.GetPromptResult:
        args = dict(arguments or {})
        result: mt.GetPromptResult = await self._sessions.request(
            ctx, f"the prompt {name!r}", lambda c: c.get_prompt(name, args), self.timeout, host=host
        )
        return result

    async def complete(
        self,
        ref: mt.PromptReference | mt.ResourceTemplateReference,
        argument: Mapping[str, str],
        context_arguments: Mapping[str, str] | None = None,
        ctx: ToolContext | None = None,
    ) -> mt.CompleteResult:
        """Completions the server suggests for an argument of a prompt or a resource
        template (``argument``: its ``name`` and the ``value`` typed so far)."""
        given = dict(argument)
        context = dict(context_arguments) if context_arguments is not None else None
        result: mt.CompleteResult = await self._sessions.request(
            ctx,
            "completion/complete",
            lambda c: c.complete(ref, given, context),
            self.timeout,
        )
        return result

    # --- what the server keeps and says about itself ----------------------------------

    async def list_tasks(self, ctx: ToolContext | None = None) -> list[mt.Task]:
        """The tasks the server keeps for this session (all pages of ``tasks/list``):
        those of task-augmented calls, with their status."""
        tasks: list[mt.Task] = []
        cursor: str | None = None
        while True:
            page: mt.ListTasksResult = await self._sessions.request(
                ctx, "tasks/list", functools.partial(list_tasks_page, cursor=cursor), self.timeout
            )
            tasks.extend(page.tasks)
            cursor = page.next_cursor
            if not cursor:
                return tasks

    async def server_info(self) -> mt.Implementation:
        """The server's name and version (connecting if needed)."""
        connection = await self._sessions.host(None).connect()
        assert connection.client is not None
        info = connection.client.server_info
        if info is None:
            raise ToolCallError(f"MCP server {self.name} did not say who it is", tool_name="")
        return info

    async def protocol_version(self) -> str:
        """The protocol version negotiated with the server (connecting if needed)."""
        connection = await self._sessions.host(None).connect()
        assert connection.client is not None
        return str(connection.client.protocol_version)


def _plain(item: Any) -> dict[str, Any]:
    """An SDK model as JSON, without the fields it leaves unset."""
    dumped: dict[str, Any] = item.model_dump(mode="json", exclude_none=True)
    return dumped


def access_tools(toolset: ServerAccess, resources: bool, prompts: bool) -> list[Tool]:
    """Tools giving the model the server's resources and prompts (a secret of the
    session the server quotes back is masked, as in a tool's result)."""
    tools: list[Tool] = []
    if resources:

        async def list_resources(ctx: ToolContext) -> list[dict[str, Any]]:
            """List the resources (documents, files, data) this server offers."""
            _, host = await toolset._sessions.host_for(ctx)  # one header_provider call per call
            listed = await toolset._all_pages(ctx, "resources", host)
            return redact_json([_plain(r) for r in listed], host.secrets)

        async def read_resource(uri: str, ctx: ToolContext) -> JsonValue:
            """Read one of this server's resources.

            Args:
                uri: The resource's URI, as listed by list_resources.
            """
            _, host = await toolset._sessions.host_for(ctx)
            contents = await toolset._read_resource(uri, ctx, host)
            shown: JsonValue = [_plain(c) for c in contents]
            return redact_json(shown, host.secrets)

        listing = FunctionTool(list_resources, read_only=True)
        reading = FunctionTool(read_resource, read_only=True)
        tools += [listing, reading]
    if prompts:

        async def list_prompts(ctx: ToolContext) -> list[dict[str, Any]]:
            """List the prompt templates this server offers."""
            _, host = await toolset._sessions.host_for(ctx)
            listed = await toolset._all_pages(ctx, "prompts", host)
            return redact_json([_plain(p) for p in listed], host.secrets)

        async def get_prompt(
            name: str, ctx: ToolContext, arguments: dict[str, str] | None = None
        ) -> JsonValue:
            """Fill in one of this server's prompt templates.

            Args:
                name: The prompt's name, as listed by list_prompts.
                arguments: Values for the prompt's arguments.
            """
            _, host = await toolset._sessions.host_for(ctx)
            result = await toolset._get_prompt(name, arguments, ctx, host)
            messages: JsonValue = [_plain(message) for message in result.messages]
            return redact_json(messages, host.secrets)

        prompt_list = FunctionTool(list_prompts, read_only=True)
        prompt_get = FunctionTool(get_prompt, read_only=True)
        tools += [prompt_list, prompt_get]
    return tools
