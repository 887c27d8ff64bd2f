"""Choosing operations: a predicate for ``filtered(toolset, ...)`` by operationId, tag,
method and path pattern."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from fnmatch import fnmatchcase

from toolsets._context import ToolContext
from toolsets._tool import Tool
from toolsets.openapi._tool import RestApiTool

__all__ = ["select_operations"]


def select_operations(
    *,
    ids: Iterable[str] | None = None,
    tags: Iterable[str] | None = None,
    methods: Iterable[str] | None = None,
    paths: Iterable[str] | None = None,
    exclude: Callable[[RestApiTool], bool] | None = None,
) -> Callable[[Tool, ToolContext], bool]:
    """A predicate for ``filtered(toolset, ...)`` keeping the operations that match every
    criterion given (within one criterion, any value matches).

    Args:
        ids: operationIds as the spec writes them (``"repos/get-branch"``) or the tool
            names made from them (``"repos_get_branch"``).
        tags: Tags, any case; an operation with any of them matches.
        methods: HTTP methods, any case.
        paths: Path templates or glob patterns over them (``"/repos/{owner}/{repo}/*"``;
            ``*`` matches across ``/``).
        exclude: Leaves out the operations for which it is true.

    Tools that are not `RestApiTool`s never match.

    Raises:
        TypeError: a criterion is a single string (``methods="get"`` would otherwise be
            read as the letters g, e and t): give a list.
    """
    for name, given in (("ids", ids), ("tags", tags), ("methods", methods), ("paths", paths)):
        if isinstance(given, str):
            raise TypeError(f"select_operations({name}=...) takes a list of strings: [{given!r}]")
    id_set = None if ids is None else frozenset(ids)
    tag_set = None if tags is None else frozenset(t.casefold() for t in tags)
    method_set = None if methods is None else frozenset(m.lower() for m in methods)
    patterns = None if paths is None else tuple(paths)

    def keep(tool: Tool, ctx: ToolContext) -> bool:
        if not isinstance(tool, RestApiTool):
            return False
        op = tool.operation
        if id_set is not None and op.operation_id not in id_set and tool.name not in id_set:
            return False
        if tag_set is not None and tag_set.isdisjoint(t.casefold() for t in op.tags):
            return False
        if method_set is not None and op.method not in method_set:
            return False
        if patterns is not None and not any(fnmatchcase(op.path, p) for p in patterns):
            return False
        return exclude is None or not exclude(tool)

    return keep
