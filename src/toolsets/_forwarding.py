"""`ForwardingTool`: a tool that is another tool with a member or two changed.

Every `Tool` member is forwarded here, in one place, so a wrapper (`RenamedTool`,
`ConfirmedTool`) states only what it changes and a member added to the protocol is
forwarded by every wrapper at once.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from typing import Any

from toolsets._auth import AuthConfig
from toolsets._context import ToolContext
from toolsets._declaration import ToolDeclaration
from toolsets._json import JsonValue
from toolsets._tool import LlmRequest, Tool

__all__ = ["ForwardingTool", "unwrapped"]


class ForwardingTool:
    """The wrapped tool, member for member; subclasses override what they change.

    A subclass that offers the tool under another declaration overrides `_offered_as`
    (`declaration`, `call_declaration` and `process_llm_request` all go through it).
    One that overrides `declaration` itself says what calls are made under too
    (`call_declaration`), unless they are made under the wrapped tool's.
    """

    def __init__(self, tool: Tool) -> None:
        self.tool = tool
        """The wrapped tool."""

    @property
    def name(self) -> str:
        return self.tool.name

    @property
    def description(self) -> str:
        return self.tool.description

    def _offered_as(self, declaration: ToolDeclaration) -> ToolDeclaration:
        """The declaration this tool is offered under, given the wrapped tool's."""
        return declaration

    def declaration(self) -> ToolDeclaration | None:
        inner = self.tool.declaration()
        return None if inner is None else self._offered_as(inner)

    def call_declaration(self) -> ToolDeclaration | None:
        """The wrapped tool's call declaration (a fuller one than it offers, maybe) as
        this wrapper offers it: a renamed tool is called under its new name, listed or
        hidden."""
        inner = self.tool.call_declaration()
        return None if inner is None else self._offered_as(inner)

    def run(self, args: Mapping[str, Any], ctx: ToolContext) -> Awaitable[JsonValue]:
        # The wrapped tool's awaitable as it is (not awaited in a coroutine of our own):
        # a function tool's result ready at once stays ready for the call path.
        return self.tool.run(args, ctx)

    @property
    def is_long_running(self) -> bool:
        return self.tool.is_long_running

    def requires_confirmation(self, args: Mapping[str, Any]) -> bool:
        return self.tool.requires_confirmation(args)

    def confirmation_hint(self, args: Mapping[str, Any], *, name: str | None = None) -> str:
        """The wrapped tool's hint, given the name the model and the user see the tool
        by (a hint that does not name the tool ignores it)."""
        return self.tool.confirmation_hint(args, name=name or self.name)

    @property
    def auth_config(self) -> AuthConfig | None:
        return self.tool.auth_config

    @property
    def is_read_only(self) -> bool:
        return self.tool.is_read_only

    @property
    def is_concurrency_safe(self) -> bool:
        return self.tool.is_concurrency_safe

    @property
    def required_scopes(self) -> frozenset[str]:
        return self.tool.required_scopes

    @property
    def response_schema(self) -> Mapping[str, Any] | None:
        return self.tool.response_schema

    @property
    def timeout(self) -> float | None:
        """The wrapped tool's own timeout."""
        return self.tool.timeout

    def refusal(self, args: Mapping[str, Any], ctx: ToolContext) -> JsonValue | None:
        """The wrapped tool's refusal of this call (see `Tool.refusal`)."""
        return self.tool.refusal(args, ctx)

    async def process_llm_request(self, req: LlmRequest, ctx: ToolContext) -> None:
        # The wrapped tool prepares a scratch copy of the request, so that whatever else
        # it does (instructions, contents, other tools) is kept while its own declaration
        # is offered as this wrapper's: the model's calls then reach the wrapper.
        scratch = LlmRequest(
            model=req.model,
            contents=list(req.contents),
            system_instruction=req.system_instruction,
            config=dict(req.config),
            server_tools=dict(req.server_tools),
            local_search=req.local_search,
        )
        await self.tool.process_llm_request(scratch, ctx)
        local_search = scratch.local_search
        for name, declaration in scratch.declarations.items():
            offered = scratch.tools[name]
            if offered is self.tool:
                own = self._offered_as(declaration)
                req.add_tool(self, own)
                if name == local_search:  # the search tool, offered under this name
                    local_search = own.name
            else:
                req.add_tool(offered, declaration)
        for name, offered in scratch.tools.items():
            if name not in scratch.declarations:  # callable, not offered (see `phased`)
                if offered is self.tool:
                    req.tools.setdefault(self.name, self)
                else:
                    req.tools.setdefault(name, offered)
        for name, offered in scratch.deferred.items():  # offered on demand (`searchable`)
            if offered is self.tool:
                req.deferred.setdefault(self.name, self)
            else:
                req.deferred.setdefault(name, offered)
        req.local_search = local_search
        req.contents = scratch.contents
        req.system_instruction = scratch.system_instruction
        req.config = scratch.config
        req.server_tools = scratch.server_tools

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.tool!r})"


def unwrapped(tool: Tool) -> Tool:
    """The tool under the wrappers around ``tool`` (each a `ForwardingTool`)."""
    while isinstance(tool, ForwardingTool):
        tool = tool.tool
    return tool
