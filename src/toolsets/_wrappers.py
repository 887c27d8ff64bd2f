"""Composition by wrapping: filter, prefix, rename and combine toolsets.

Each wrapper is itself a toolset; ``async with`` and ``shutdown`` reach the wrapped ones.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
from collections.abc import Callable, Collection, Mapping, Sequence
from types import TracebackType
from typing import Self

import anyio

from toolsets._concurrency import gather
from toolsets._context import ToolContext
from toolsets._declaration import ToolDeclaration
from toolsets._errors import ToolDefinitionError
from toolsets._forwarding import ForwardingTool
from toolsets._tool import Tool
from toolsets._toolset import BaseToolset, ListingVaries, Toolset, list_each

__all__ = [
    "checked_toolset",
    "LastListing",
    "ManyToolsets",
    "RenamedTool",
    "WrapperToolset",
    "combined",
    "filtered",
    "prefixed",
    "renamed",
]

logger = logging.getLogger("toolsets")

ToolPredicate = Callable[[Tool, ToolContext], bool]


class RenamedTool(ForwardingTool):
    """A tool offered under another name; everything else is the wrapped tool's."""

    def __init__(self, tool: Tool, name: str) -> None:
        super().__init__(tool)
        self._name = name
        # Validate the new name now, not when the model first sees it.
        self.declaration()

    @property
    def name(self) -> str:
        """The name the tool is offered under."""
        return self._name

    @property
    def original_name(self) -> str:
        """The wrapped tool's own name."""
        return self.tool.name

    def _offered_as(self, declaration: ToolDeclaration) -> ToolDeclaration:
        return dataclasses.replace(declaration, name=self.name)

    def __repr__(self) -> str:
        return f"RenamedTool({self.tool!r}, name={self.name!r})"


def checked_toolset(candidate: object) -> Toolset:
    """``candidate``, if it is a toolset (a wrapper is built over one, not over tools).

    Raises:
        ToolDefinitionError: naming what was given instead (``.field`` is
            ``"toolset"``); tools or functions go in a `StaticToolset` first.
    """
    if isinstance(candidate, Toolset):
        return candidate
    raise ToolDefinitionError(
        f"expected a toolset, got {type(candidate).__name__}: put tools or functions in "
        f"StaticToolset([...]) first",
        field="toolset",
    )


class LastListing:
    """A wrapper's last listing, and what it made of it: given back as it is (the same
    tuple) while the wrapped toolset lists the very same tuple again, so what indexes a
    listing by identity (a served call's lookup by name) indexes it once. A list is
    never taken as unchanged (it may have changed in place)."""

    def __init__(self) -> None:
        self._source: tuple[Tool, ...] | None = None
        self._made: tuple[Tool, ...] = ()

    def made_of(self, tools: Sequence[Tool]) -> tuple[Tool, ...] | None:
        """What the last listing made, if ``tools`` is that very listing."""
        return self._made if tools is self._source else None

    def keep(self, tools: Sequence[Tool] | None, made: tuple[Tool, ...]) -> tuple[Tool, ...]:
        """``made``, remembered as what ``tools`` make (None: what depends on more than
        one listing, or on the context); the last output instead when that holds the
        very same tools in the same order."""
        last = self._made
        if len(made) == len(last) and all(a is b for a, b in zip(made, last, strict=True)):
            made = last
        self._source = tools if isinstance(tools, tuple) else None
        self._made = made
        return made


class WrapperToolset(BaseToolset):
    """A toolset over one other; entering and shutting down reach the wrapped one."""

    keeps_names = False
    """The wrapper offers the tools it wraps under their names (and hides none)."""

    def __init__(self, toolset: Toolset) -> None:
        self.wrapped = checked_toolset(toolset)
        """The toolset underneath."""

    async def shutdown(self) -> None:
        await self.wrapped.shutdown()

    async def __aenter__(self) -> Self:
        await self.wrapped.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.wrapped.__aexit__(exc_type, exc, tb)


class _Unmatched:
    """Warns, once per name, about names a wrapper was given that match no tool.

    A name missing from one context's listing may be hidden there by a per-context
    filter (``filtered(toolset, predicate)``) and offered in another: it is warned about
    only when it is also missing with every such filter inside the wrapped toolset lifted
    (see `_names_in_any_context`). A toolset of your own that answers per context is
    taken as it answers.
    """

    def __init__(self, label: str) -> None:
        self._label = label
        self._done: set[str] = set()
        """Names warned about, or known to exist in some context."""

    async def check(
        self,
        wanted: Collection[str],
        tools: Sequence[Tool],
        wrapped: Toolset,
        ctx: ToolContext | None,
    ) -> None:
        missing = set(wanted) - {t.name for t in tools} - self._done
        if not missing:
            return
        # Tools can come and go (MCP list changes); a typo should still be visible.
        missing -= await _names_in_any_context(wrapped, ctx)
        if missing:
            logger.warning("%s(): no tools named %s", self._label, ", ".join(sorted(missing)))
        self._done |= set(wanted) - {t.name for t in tools}


async def _names_in_any_context(toolset: Toolset, ctx: ToolContext | None) -> set[str]:
    """The names ``toolset`` offers in ``ctx``, and those the per-context filters inside
    it hide there (a filter by predicate is lifted; names, prefixes and renames apply)."""
    if isinstance(toolset, _Filtered):
        inner = await _names_in_any_context(toolset.wrapped, ctx)
        return inner if toolset._names is None else inner & toolset._names
    if isinstance(toolset, _Renamed):
        return {toolset._new_name(n) for n in await _names_in_any_context(toolset.wrapped, ctx)}
    if isinstance(toolset, WrapperToolset) and toolset.keeps_names:
        return await _names_in_any_context(toolset.wrapped, ctx)
    if isinstance(toolset, _Combined):
        listed = await gather(
            [functools.partial(_names_in_any_context, t, ctx) for t in toolset.toolsets]
        )
        return set().union(*listed)
    return {t.name for t in await toolset.list_tools(ctx)}


class _Filtered(WrapperToolset):
    listing_varies: ListingVaries = "never"

    def __init__(self, toolset: Toolset, keep: Collection[str] | ToolPredicate) -> None:
        super().__init__(toolset)
        self._names: frozenset[str] | None = None
        self._predicate: ToolPredicate | None = None
        if callable(keep):
            self._predicate = keep
            self.listing_varies = "request"  # a predicate of the context
        elif isinstance(keep, str):
            raise TypeError("filtered() takes a collection of names, not one string")
        else:
            self._names = frozenset(keep)
        self._unmatched = _Unmatched("filtered")
        self._last = LastListing()

    async def list_tools(self, ctx: ToolContext | None = None) -> Sequence[Tool]:
        tools = await self.wrapped.list_tools(ctx)
        if self._predicate is not None:  # answers per context: kept when the same
            context = ctx if ctx is not None else ToolContext()
            return self._last.keep(None, tuple(t for t in tools if self._predicate(t, context)))
        made = self._last.made_of(tools)
        if made is not None:
            return made
        assert self._names is not None
        await self._unmatched.check(self._names, tools, self.wrapped, ctx)
        return self._last.keep(tools, tuple(t for t in tools if t.name in self._names))

    def __repr__(self) -> str:
        keep = self._predicate if self._predicate is not None else sorted(self._names or ())
        return f"filtered({self.wrapped!r}, {keep!r})"


class _Renamed(WrapperToolset):
    """Renames by a prefix (a string) or by a mapping of old to new names."""

    listing_varies: ListingVaries = "never"

    def __init__(self, toolset: Toolset, rename: str | dict[str, str], label: str) -> None:
        super().__init__(toolset)
        self._rename = rename
        self._label = label
        self._unmatched = _Unmatched("renamed")
        self._last = LastListing()
        self._made: dict[int, RenamedTool] = {}
        """The last listing's renamed tools, by the id of the tool each renames."""

    def _new_name(self, name: str) -> str:
        if isinstance(self._rename, str):
            return self._rename + name
        return self._rename.get(name, name)

    async def list_tools(self, ctx: ToolContext | None = None) -> Sequence[Tool]:
        tools = await self.wrapped.list_tools(ctx)
        listed = self._last.made_of(tools)
        if listed is not None:
            return listed
        if isinstance(self._rename, dict):
            await self._unmatched.check(self._rename, tools, self.wrapped, ctx)
        out: list[Tool] = []
        seen: set[str] = set()
        made: dict[int, RenamedTool] = {}
        for t in tools:
            new_name = self._new_name(t.name)
            if new_name in seen:
                raise ToolDefinitionError(
                    f"{self._label}: two tools would be named {new_name!r}",
                    tool_name=new_name,
                )
            seen.add(new_name)
            if new_name == t.name:
                out.append(t)
                continue
            # The same tool keeps its renamed tool from one listing to the next.
            known = self._made.get(id(t))
            if known is None or known.tool is not t or known.name != new_name:
                known = RenamedTool(t, new_name)
            made[id(t)] = known
            out.append(known)
        self._made = made
        return self._last.keep(tools, tuple(out))

    def __repr__(self) -> str:
        return f"{self._label}({self.wrapped!r})"


class ManyToolsets(BaseToolset):
    """A toolset over several: entering it enters each (in order, and leaves those
    entered if one fails); shutting it down shuts down each. Subclasses set
    ``toolsets``."""

    label = "toolsets"
    """How errors name it (the function that makes it)."""
    toolsets: tuple[Toolset, ...]
    _stack: contextlib.AsyncExitStack | None = None

    async def shutdown(self) -> None:
        # Every toolset gets its chance to release its resources, even when an earlier
        # one fails or the caller is being cancelled (hence the shield: each toolset
        # bounds its own shutdown); the failures are raised together afterwards.
        errors: list[Exception] = []
        with anyio.CancelScope(shield=True):
            for toolset in self.toolsets:
                try:
                    await toolset.shutdown()
                except Exception as exc:  # collected, re-raised below
                    errors.append(exc)
        if len(errors) == 1:
            raise errors[0]
        if errors:
            raise ExceptionGroup(f"{self.label}(): several toolsets failed to shut down", errors)

    async def __aenter__(self) -> Self:
        async with contextlib.AsyncExitStack() as stack:
            for toolset in self.toolsets:
                await stack.enter_async_context(toolset)
            self._stack = stack.pop_all()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        stack, self._stack = self._stack, None
        if stack is not None:
            await stack.__aexit__(exc_type, exc, tb)
        else:
            await self.shutdown()


class _Combined(ManyToolsets):
    label = "combined"
    listing_varies: ListingVaries = "never"

    def __init__(self, toolsets: Sequence[Toolset]) -> None:
        self.toolsets = tuple(checked_toolset(toolset) for toolset in toolsets)
        """The combined toolsets, in order."""
        self._last = LastListing()

    async def list_tools(self, ctx: ToolContext | None = None) -> Sequence[Tool]:
        results = await list_each(self.toolsets, ctx)
        out: list[Tool] = []
        owner: dict[str, int] = {}
        for index, tools in enumerate(results):
            for t in tools:
                if t.name in owner:
                    raise ToolDefinitionError(
                        f"combined(): toolsets #{owner[t.name]} and #{index} both offer "
                        f"{t.name!r}; wrap one in prefixed() or renamed()",
                        tool_name=t.name,
                    )
                owner[t.name] = index
                out.append(t)
        return self._last.keep(None, tuple(out))

    def __repr__(self) -> str:
        return f"combined({', '.join(repr(t) for t in self.toolsets)})"


def filtered(toolset: Toolset, keep: Collection[str] | ToolPredicate) -> BaseToolset:
    """Only the tools named in ``keep``, or for which ``keep(tool, ctx)`` is true.

    The predicate sees the listing context, so the selection can differ per user.
    Names that match no tool in any context are logged as a warning (once each; a tool
    that a per-context ``filtered`` inside hides from this context is not warned about).
    """
    return _Filtered(toolset, keep)


def prefixed(toolset: Toolset, prefix: str, *, separator: str = "_") -> BaseToolset:
    """Every tool renamed to ``prefix + separator + name``."""
    if not prefix:
        raise ValueError("prefixed() needs a non-empty prefix")
    return _Renamed(toolset, f"{prefix}{separator}", f"prefixed[{prefix}]")


def renamed(toolset: Toolset, names: Mapping[str, str]) -> BaseToolset:
    """Tools renamed by ``names`` (old → new); the others keep their names. Old names
    that match no tool in any context are logged as a warning (once each; a tool that a
    per-context ``filtered`` inside hides from this context is not warned about).

    Raises (when listing):
        ToolDefinitionError: two tools would end up with the same name.
    """
    return _Renamed(toolset, dict(names), "renamed")


def combined(*toolsets: Toolset) -> BaseToolset:
    """All tools of several toolsets, in order; they are listed concurrently.

    Raises (when listing):
        ToolDefinitionError: two toolsets offer the same name (prefix one of them).
    """
    return _Combined(toolsets)
