"""The rules of an access policy (`AccessRule`): what each selects (tools by name, and for
OpenAPI operations by tag, HTTP method and path; a served server's resources by URI and
prompts by name) and what a caller must hold to use it (scopes, roles, groups)."""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase

from toolsets._errors import ToolDefinitionError
from toolsets._forwarding import ForwardingTool
from toolsets._tool import Tool

__all__ = [
    "HTTP_METHODS",
    "ITEM_SELECTORS",
    "REQUIREMENTS",
    "SELECTORS",
    "TOOL_SELECTORS",
    "AccessRule",
]

HTTP_METHODS = frozenset(("get", "put", "post", "delete", "options", "head", "patch", "trace"))
"""The methods an OpenAPI operation may have (a rule naming another is a typo)."""
TOOL_SELECTORS = ("tools", "tags", "methods", "paths")
"""The keys of a rule selecting tools."""
ITEM_SELECTORS = ("resources", "prompts")
"""The keys of a rule selecting a served server's resources and prompts."""
SELECTORS = (*TOOL_SELECTORS, *ITEM_SELECTORS)
REQUIREMENTS = ("scopes", "roles", "groups")
"""The keys of a rule saying what a caller must hold."""
_VARIABLE = re.compile(r"\{[^{}]*\}")


@dataclass(frozen=True, kw_only=True)
class AccessRule:
    """One rule of an `AccessPolicy`: the tools, resources and prompts it selects, and
    what a caller must hold to use them.

    It selects a tool when every tool selector given (``tools``, ``tags``, ``methods``,
    ``paths``) matches (within one, any value does); with no selector at all, it selects
    every tool. ``tags``, ``methods`` and ``paths`` match OpenAPI operations only (under
    any wrapper: `prefixed`, `confirmed`, ...). ``resources`` selects the resources and
    resource templates a served `McpServer` offers, ``prompts`` its prompts; a rule with
    only those selects no tool, and a rule without them no resource or prompt.

    Raises:
        ToolDefinitionError: a value is a single string rather than a list, an empty
            string, or a method no HTTP operation has (``field`` names the key).
    """

    tools: Sequence[str] = ()
    """Tool names, or glob patterns over them (``"delete_*"``), as the toolset the
    policy is applied to offers them."""
    tags: Sequence[str] = ()
    """OpenAPI tags, any case."""
    methods: Sequence[str] = ()
    """HTTP methods, any case."""
    paths: Sequence[str] = ()
    """OpenAPI path templates, or glob patterns over them (``"/admin/*"``; ``*``
    matches across ``/``)."""
    resources: Sequence[str] = ()
    """Resource URIs, or glob patterns over them (``"file:///reports/*"``; ``*``
    matches across ``/``). A ``{variable}`` matches as ``*`` does, so a resource
    template's own URI template (``"users://{id}/profile"``) selects the template and
    every URI read through it."""
    prompts: Sequence[str] = ()
    """Prompt names, or glob patterns over them (``"admin_*"``)."""
    scopes: Sequence[str] = ()
    """Scopes the caller must hold, every one."""
    roles: Sequence[str] = ()
    """Roles of which the caller must hold one (in the policy's ``roles_claim``)."""
    groups: Sequence[str] = ()
    """Groups of which the caller must be in one (in the policy's ``groups_claim``)."""

    def __post_init__(self) -> None:
        for key in (*SELECTORS, *REQUIREMENTS):
            given = getattr(self, key)
            if isinstance(given, str):
                raise ToolDefinitionError(
                    f"AccessRule({key}=...) takes a list of strings: [{given!r}]", field=key
                )
            values = tuple(given)
            for value in values:
                if not isinstance(value, str) or not value:
                    raise ToolDefinitionError(
                        f"AccessRule({key}=...): {value!r} is not a non-empty string", field=key
                    )
            object.__setattr__(self, key, values)
        unknown = sorted({m.lower() for m in self.methods} - HTTP_METHODS)
        if unknown:
            raise ToolDefinitionError(
                f"AccessRule(methods=...): {', '.join(unknown)} is not an HTTP method "
                f"({', '.join(sorted(HTTP_METHODS))})",
                field="methods",
            )

    @property
    def selects_tools(self) -> bool:
        """Whether the rule selects tools at all: it names a tool selector, or no
        selector of any kind."""
        return any(getattr(self, key) for key in TOOL_SELECTORS) or not (
            self.resources or self.prompts
        )

    def selects(self, tool: Tool) -> bool:
        """Whether this rule applies to ``tool`` (offered under its name)."""
        if not self.selects_tools:
            return False
        if self.tools and not any(fnmatchcase(tool.name, p) for p in self.tools):
            return False
        if not (self.tags or self.methods or self.paths):
            return True
        operation = _operation(tool)
        if operation is None:
            return False
        method, path, tags = operation
        if self.methods and method.lower() not in {m.lower() for m in self.methods}:
            return False
        if self.paths and not any(fnmatchcase(path, p) for p in self.paths):
            return False
        wanted = {t.casefold() for t in self.tags}
        return not wanted or not wanted.isdisjoint(t.casefold() for t in tags)

    def selects_resource(self, uri: str) -> bool:
        """Whether this rule applies to the resource at ``uri``, or to the resource
        template ``uri`` (its URI template, as listed)."""
        return any(fnmatchcase(uri, _glob(p)) for p in self.resources)

    def selects_prompt(self, name: str) -> bool:
        """Whether this rule applies to the prompt ``name``."""
        return any(fnmatchcase(name, p) for p in self.prompts)


def _operation(tool: Tool) -> tuple[str, str, Sequence[str]] | None:
    """The HTTP method, path template and tags of the OpenAPI operation ``tool`` calls
    (under its wrappers), or None (without importing the OpenAPI source when no spec
    was loaded)."""
    module = sys.modules.get("toolsets.openapi._tool")
    if module is None:
        return None
    while isinstance(tool, ForwardingTool):
        tool = tool.tool
    if not isinstance(tool, module.RestApiTool):
        return None
    operation = tool.operation
    return operation.method, operation.path, operation.tags


def _glob(pattern: str) -> str:
    """A ``resources`` pattern as a glob: each ``{...}`` of a URI template matches as
    ``*`` does."""
    return _VARIABLE.sub("*", pattern) if "{" in pattern else pattern
