"""`searchable`: a huge catalogue behind one ``search_tools(query)`` tool.

The model is offered ``search_tools``, the pinned tools and the tools it has loaded. A
search returns the best matches (name, one-line summary, why it matched) and loads them:
from the next model request on, their full declarations are offered too. The loaded
names are kept per session in the session state (``ctx.state``, one key per tool
under the wrapper's ``state_key``), at most ``max_loaded`` of them: loading one more
drops the least recently used. A call counts as use.

How a tool that is not loaded stays callable (the model never gets stuck: it may call a
tool it knows of without searching first, or after it was dropped): the listing carries
*every* tool of the catalogue. A loaded or pinned tool is listed with its declaration;
an unloaded one is listed as a `HiddenTool`: a passive tool (``declaration()`` is None,
so no consumer offers it to a model, and no declaration is built for it) that still
answers to its name. In the agent loop its ``process_llm_request`` registers it in the
request's ``tools`` without a declaration, so the loop dispatches a call to it as to any
other tool; the MCP server calls it, and the call path checks its arguments, by its
``call_declaration()``. Calling it loads it (the loop's next request declares it) and
runs the tool it hides. A name no tool has gets the usual unknown-tool error.

For a model whose provider searches tools itself (`toolsets.models.AnthropicModel`'s
``tool_search``), the listing says which tools a search finds and which tool searches:
a hidden tool registers itself with `LlmRequest.defer_tool`, a loaded one is declared
and marked in `LlmRequest.deferred` too, and ``search_tools`` names itself the
request's `LlmRequest.local_search`. Such a model sends them all deferred with its
provider's search tool instead of ``search_tools``; any other model reads none of it.

The index (`toolsets.search.ToolIndex`) is built on the first search, in a worker thread
(concurrent searches wait for the one build), from each tool's name, description and
(for OpenAPI tools) operation, never from its declaration; it is built again only when
the wrapped toolset lists other tools (the same tool objects in the same order keep the
index).
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from typing import Any

import anyio
import anyio.to_thread
import sniffio

from toolsets._context import ToolContext
from toolsets._declaration import ToolAnnotations, ToolDeclaration
from toolsets._errors import ToolDefinitionError
from toolsets._forwarding import ForwardingTool
from toolsets._json import JsonValue
from toolsets._results import error_result
from toolsets._tool import BaseTool, LlmRequest, Tool
from toolsets._toolset import Toolset
from toolsets._wrappers import WrapperToolset

__all__ = [
    "DEFAULT_MAX_LOADED",
    "DEFAULT_RESULTS",
    "SEARCH_TOOL_NAME",
    "HiddenTool",
    "SearchableToolset",
    "searchable",
]

SEARCH_TOOL_NAME = "search_tools"
"""The name of the search tool the model is offered."""
DEFAULT_MAX_LOADED = 15
"""How many tools a session keeps loaded unless told otherwise: with ``search_tools``
and up to four pinned tools, a request declares at most 20."""
DEFAULT_RESULTS = 5
"""How many matches a search returns (and loads) unless told otherwise."""
MAX_QUERY = 1000
"""The longest query searched (characters); a longer one is cut."""

ToolPredicate = Callable[[Tool, ToolContext], bool]


def _require_bm25s() -> None:
    """Raise the ImportError naming the ``search`` extra when bm25s or PyStemmer is
    missing (when the wrapper is made, not at its first search). WordLlama's vectors are
    optional: without them the index ranks by words alone."""
    try:
        importlib.import_module("bm25s")  # untyped: imported by name; the index uses it
        importlib.import_module("Stemmer")
    except ImportError as exc:
        from toolsets._install import missing_extra

        raise missing_extra("toolsets.search", "search", exc) from exc


class _Counted(ForwardingTool):
    """A tool of a `searchable` catalogue whose calls count as use (for least recently
    used order; a call of one not loaded loads it)."""

    def __init__(self, tool: Tool, owner: SearchableToolset) -> None:
        super().__init__(tool)
        self._owner = owner

    def run(self, args: Mapping[str, Any], ctx: ToolContext) -> Awaitable[JsonValue]:
        self._owner.use(ctx, [self.name])
        return self.tool.run(args, ctx)


class HiddenTool(_Counted):
    """A tool of a `searchable` catalogue that is not loaded in this session: passive
    (no declaration, so nothing offers it to a model) yet callable by its name; a call
    loads it, then runs it. Its arguments are checked against the hidden tool's
    declaration (`call_declaration`, the hidden tool's own) as a listed tool's are."""

    def declaration(self) -> ToolDeclaration | None:
        """None: the model is not offered it until it is loaded."""
        return None

    async def process_llm_request(self, req: LlmRequest, ctx: ToolContext) -> None:
        """Registers it for dispatch by name, without a declaration, as offered on
        demand (`LlmRequest.defer_tool`): a model whose provider searches tools itself
        offers it deferred, for that search to find."""
        req.defer_tool(self)

    def __repr__(self) -> str:
        return f"HiddenTool({self.tool!r})"


class _LoadedTool(_Counted):
    """A loaded tool: the tool itself, whose calls count as use."""

    async def process_llm_request(self, req: LlmRequest, ctx: ToolContext) -> None:
        """Offers it, and marks it as one a provider's search may find
        (`LlmRequest.deferred`): a model whose provider searches keeps every tool of
        the catalogue deferred, loaded or not, so its list of tools stays the same."""
        await super().process_llm_request(req, ctx)
        req.deferred.setdefault(self.name, self)

    def __repr__(self) -> str:
        return f"loaded({self.tool!r})"


class _SearchTool(BaseTool):
    """``search_tools(query)``: finds tools of the catalogue, and loads them."""

    def __init__(self, owner: SearchableToolset, results: int) -> None:
        super().__init__(
            SEARCH_TOOL_NAME,
            "Search the catalogue of tools for the ones that do what you need, described "
            "in a few words (e.g. 'star a repository', 'refund a payment'). The best "
            f"matches (at most {results}) are returned and become callable: from your next "
            "step on, their full definitions are among your tools. Search again with other "
            "words when none fits.",
            parameters={
                "type": "object",
                "properties": {
                    "query": {
                        "type": "string",
                        "description": "What you want to do, in a few words.",
                    }
                },
                "required": ["query"],
                "additionalProperties": False,
            },
            annotations=ToolAnnotations(read_only=True, idempotent=True, open_world=False),
        )
        self._owner = owner
        self._results = results

    async def process_llm_request(self, req: LlmRequest, ctx: ToolContext) -> None:
        """Offers it as the request's local search (`LlmRequest.local_search`): a model
        whose provider searches the deferred tools itself leaves it out."""
        await super().process_llm_request(req, ctx)
        req.local_search = self.name

    async def run(self, args: Mapping[str, Any], ctx: ToolContext) -> JsonValue:
        query = args.get("query")
        if not isinstance(query, str) or not query.strip():
            return error_result(
                "Give a query: what you want to do, in a few words.",
                fields={"query": "a non-empty string is required"},
            )
        return await self._owner.search(query[:MAX_QUERY], ctx, self._results)


class SearchableToolset(WrapperToolset):
    """A toolset whose tools are found with ``search_tools`` (see `searchable`)."""

    def __init__(
        self,
        toolset: Toolset,
        *,
        pinned: Collection[str] | ToolPredicate = (),
        max_loaded: int = DEFAULT_MAX_LOADED,
        results: int = DEFAULT_RESULTS,
        state_key: str | None = None,
    ) -> None:
        super().__init__(toolset)
        if isinstance(pinned, str):
            raise TypeError("searchable() takes a collection of pinned names, not one string")
        if max_loaded < 1:
            raise ValueError("searchable(): max_loaded must be at least 1")
        if results < 1:
            raise ValueError("searchable(): results must be at least 1")
        self._pinned_names: frozenset[str] | None = None if callable(pinned) else frozenset(pinned)
        self._pinned_predicate: ToolPredicate | None = pinned if callable(pinned) else None
        self._pinned_checked = False
        self.max_loaded = max_loaded
        """How many tools one session keeps loaded at most."""
        self._state_key = state_key or None
        self._search_tool = _SearchTool(self, min(results, max_loaded))
        self._source: tuple[Tool, ...] | None = None
        self._index: Any = None
        """The index of ``_source`` (a `ToolIndex`), made on the first search."""
        self._named: Mapping[str, Tool] = {}
        """The tools of ``_source`` by name (the first of a name)."""
        self._lock: tuple[str, anyio.Lock] | None = None
        self._hidden: dict[int, HiddenTool] = {}
        self._loaded: dict[int, _LoadedTool] = {}
        self._last: tuple[tuple[Tool, ...], frozenset[str], tuple[Tool, ...]] | None = None

    # --- what a session has loaded ----------------------------------------------------

    def loaded(self, ctx: ToolContext | None) -> list[str]:
        """The names loaded in ``ctx``'s session, least recently used first."""
        if ctx is None or self._state_key is None:
            return []
        return self._kept(self._stamps(ctx))

    def use(self, ctx: ToolContext, names: Sequence[str]) -> tuple[list[str], list[str]]:
        """Mark ``names`` as just used in ``ctx``'s session (the last one most recently):
        loaded if they were not, and the least recently used dropped beyond
        ``max_loaded``. Returns the names loaded now and those dropped."""
        stamps = self._stamps(ctx)
        before = self._kept(stamps)
        wanted = list(dict.fromkeys(names))
        now = max((stamp for stamp in stamps.values() if stamp is not None), default=0) + 1
        for offset, name in enumerate(wanted):
            stamps[name] = now + offset
        after = self._kept(stamps)
        state = ctx.state
        for name in wanted:
            if name in after:
                state[self._key(name)] = stamps[name]
        dropped = [name for name in before if name not in after]
        for name in dropped:  # keys cannot be deleted: None marks it dropped
            state[self._key(name)] = None
        return [name for name in wanted if name in after and name not in before], dropped

    @property
    def state_key(self) -> str | None:
        """What the session state keys of the loaded tools start with: the key
        ``<state_key>/<name>`` holds when the tool was last used (a count; None once
        dropped). The one given, else ``toolsets.searchable:<digest>``, the digest of
        the names of the tools the catalogue listed first (None until it has listed):
        the same catalogue gets the same key after a restart, and two `searchable`
        catalogues of other tools in one agent keep their loaded tools apart."""
        return self._state_key

    def _key(self, name: str) -> str:
        return f"{self.state_key}/{name}"

    def _stamps(self, ctx: ToolContext) -> dict[str, int | None]:
        """When each tool was last used in the session (a count; None: dropped), from
        the session state, with this call's own writes over it. Each tool has a key of
        its own, so that calls of one model turn, which each write their own, load
        side by side (one key for all would keep the last call's only)."""
        prefix = f"{self.state_key}/"
        size = len(prefix)
        stamps: dict[str, int | None] = {}
        actions = ctx.actions_set
        layers = [ctx.invocation.state]
        if actions is not None and actions.state_delta:
            layers.append(actions.state_delta)
        for layer in layers:
            for key in layer:  # keys only: other keys' values are none of ours
                if key.startswith(prefix):
                    stamp = layer[key]
                    ok = isinstance(stamp, int) and not isinstance(stamp, bool)
                    stamps[key[size:]] = stamp if ok else None
        return stamps

    def _kept(self, stamps: Mapping[str, int | None]) -> list[str]:
        """The ``max_loaded`` names used last, least recently used first."""
        used = sorted((stamp, name) for name, stamp in stamps.items() if stamp is not None)
        return [name for _, name in used[-self.max_loaded :]]

    # --- listing ----------------------------------------------------------------------

    async def list_tools(self, ctx: ToolContext | None = None) -> Sequence[Tool]:
        """``search_tools``, then the catalogue: pinned and loaded tools as they are,
        the others hidden (callable by name, offered to no model).

        Raises:
            ToolDefinitionError: a pinned name matches no tool (on the first listing),
                or a tool of the catalogue is named ``search_tools``.
        """
        tools = tuple(await self.wrapped.list_tools(ctx))
        if not self._pinned_checked:
            self._check(tools)
        loaded = frozenset(self.loaded(ctx))
        last = self._last
        if (
            self._pinned_predicate is None
            and last is not None
            and last[1] == loaded
            and _same(last[0], tools)
        ):
            return last[2]
        context = ctx if ctx is not None else ToolContext()
        hidden, shown = self._hidden, self._loaded
        out: list[Tool] = [self._search_tool]
        for tool in tools:
            if self._is_pinned(tool, context):
                out.append(tool)
                continue
            # The same tool keeps its wrapper from one listing to the next (what
            # caches by tool, as the MCP server's converted listings, stays warm).
            key = id(tool)
            if tool.name in loaded:
                known = shown.get(key)
                if known is None or known.tool is not tool:
                    known = shown[key] = _LoadedTool(tool, self)
                out.append(known)
            else:
                unknown = hidden.get(key)
                if unknown is None or unknown.tool is not tool:
                    unknown = hidden[key] = HiddenTool(tool, self)
                out.append(unknown)
        if len(hidden) + len(shown) > 4 * len(tools) + 64:  # tools came and went: forget
            alive = {id(t) for t in tools}
            self._hidden = {k: v for k, v in hidden.items() if k in alive}
            self._loaded = {k: v for k, v in shown.items() if k in alive}
        made_tools = tuple(out)
        self._last = (tools, loaded, made_tools)
        return made_tools

    def _is_pinned(self, tool: Tool, ctx: ToolContext) -> bool:
        if self._pinned_predicate is not None:
            return self._pinned_predicate(tool, ctx)
        assert self._pinned_names is not None
        return tool.name in self._pinned_names

    def _check(self, tools: tuple[Tool, ...]) -> None:
        names = {t.name for t in tools}
        if SEARCH_TOOL_NAME in names:
            raise ToolDefinitionError(
                f"searchable(): the catalogue has a tool named {SEARCH_TOOL_NAME!r}, the "
                "name of the search tool; rename or prefix it",
                tool_name=SEARCH_TOOL_NAME,
            )
        unknown = sorted((self._pinned_names or frozenset()) - names)
        if unknown:
            raise ToolDefinitionError(
                f"searchable(): pinned names no tool of the catalogue: {', '.join(unknown)}",
                tool_name=unknown[0],
                field="pinned",
            )
        if self._state_key is None:
            import hashlib  # OpenSSL's: not for every `import toolsets`

            digest = hashlib.sha256("\n".join(sorted(names)).encode()).hexdigest()
            self._state_key = f"toolsets.searchable:{digest[:16]}"
        self._pinned_checked = True

    # --- searching --------------------------------------------------------------------

    async def index(self, tools: Sequence[Tool]) -> Any:
        """The `ToolIndex` of ``tools``: the last one made while the tools are the same
        objects in the same order, else a new one, built in a worker thread (a big
        catalogue takes a while: the event loop goes on meanwhile). Concurrent searches
        wait for one build."""
        listed = tuple(tools)
        index = self._indexed(listed)
        if index is not None:
            return index
        async with self._build_lock():
            index = self._indexed(listed)  # built while this search waited
            if index is None:
                index = await anyio.to_thread.run_sync(_build_index, listed)
                self._index, self._source = index, listed
                self._named = _by_name(listed)
        return index

    def _indexed(self, tools: tuple[Tool, ...]) -> Any:
        """The index made of ``tools``, if it is the last one made."""
        if self._index is not None and self._source is not None and _same(self._source, tools):
            return self._index
        return None

    def _build_lock(self) -> anyio.Lock:
        """The lock builds wait on, made for the running event loop's library (one
        made under asyncio cannot be waited on under trio)."""
        library = sniffio.current_async_library()
        if self._lock is None or self._lock[0] != library:
            self._lock = (library, anyio.Lock())
        return self._lock[1]

    async def search(self, query: str, ctx: ToolContext, limit: int) -> JsonValue:
        """The best ``limit`` matches for ``query`` (as the search tool answers), which
        are loaded in ``ctx``'s session. A tool no model can be offered (an operation
        of a spec built on demand whose schema turns out broken) is skipped, the next
        match in its place."""
        tools = tuple(await self.wrapped.list_tools(ctx))
        if not self._pinned_checked:
            self._check(tools)
        matches, unusable = _usable(await self.index(tools), self._named, query, limit)
        pinned = {t.name for t in tools if self._is_pinned(t, ctx)}
        # Best last: the best ones are the most recently used, so they stay loaded longest.
        _, dropped = self.use(ctx, [m.name for m in reversed(matches) if m.name not in pinned])
        if not matches:
            note = (
                "No tool matched; search again with other words (a verb and the thing it "
                "acts on work best)."
            )
            if unusable:
                note = (
                    f"Only tools that cannot be offered to you matched "
                    f"({', '.join(unusable)}: broken definitions, or tools that only shape "
                    "requests); search again with other words for another way to do it."
                )
            return {"query": query, "matches": [], "note": note}
        found: list[JsonValue] = [
            {"name": m.name, "summary": m.summary, "why": m.why} for m in matches
        ]
        answer: dict[str, JsonValue] = {
            "query": query,
            "matches": found,
            "note": "These tools are now available: call them by name (their full "
            "definitions are among your tools from your next step on).",
        }
        if dropped:
            answer["unloaded"] = list(dropped)
            answer["note"] = (
                f"{answer['note']} To keep at most {self.max_loaded} tools loaded, the "
                "least recently used were unloaded (still callable by name)."
            )
        return answer

    def __repr__(self) -> str:
        return f"searchable({self.wrapped!r}, max_loaded={self.max_loaded})"


def _build_index(tools: tuple[Tool, ...]) -> Any:
    """The `ToolIndex` of ``tools`` (run in a worker thread: it reads each tool's name,
    description and operation, never its declaration)."""
    from toolsets.search._index import IndexEntry, ToolIndex

    return ToolIndex.build(IndexEntry.of(tool) for tool in tools)


def _by_name(tools: Sequence[Tool]) -> dict[str, Tool]:
    named: dict[str, Tool] = {}
    for tool in tools:
        named.setdefault(tool.name, tool)
    return named


def _usable(
    index: Any, tools: Mapping[str, Tool], query: str, limit: int
) -> tuple[list[Any], list[str]]:
    """The best ``limit`` matches of ``index`` for ``query`` that a model can be offered,
    and the names of the better ones it cannot: a tool whose declaration is None, such
    as an operation of a spec built on demand whose schema turns out broken as it is
    built here (the toolset leaves it out of its next listings). The index is asked for
    more matches as long as some are left out and it has more."""
    asked = limit
    while True:
        found = index.search(query, asked)
        usable: list[Any] = []
        unusable: list[str] = []
        for match in found:
            tool = tools.get(match.name)
            if tool is not None and tool.declaration() is None:
                unusable.append(match.name)
            else:
                usable.append(match)
                if len(usable) == limit:
                    return usable, unusable
        if len(found) < asked:
            return usable, unusable
        asked *= 2


def _same(a: tuple[Tool, ...], b: tuple[Tool, ...]) -> bool:
    return a is b or (len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True)))


def searchable(
    toolset: Toolset,
    *,
    pinned: Collection[str] | ToolPredicate = (),
    max_loaded: int = DEFAULT_MAX_LOADED,
    results: int = DEFAULT_RESULTS,
    state_key: str | None = None,
) -> SearchableToolset:
    """A huge toolset offered through one ``search_tools(query)`` tool.

    The model sees ``search_tools``, the pinned tools and the tools loaded in its
    session. A search answers the best matches (name, one-line summary, why it matched)
    and loads them: their declarations are offered from the next model request on (a
    tool no model can be offered, such as an operation found broken as it is built, is
    skipped for the next match). Each
    session (the agent loop's session; an MCP client's session) keeps its own loaded
    tools in its state, at most ``max_loaded``, the least recently used dropped first (a
    call counts as use). A tool not loaded can still be called by name: the call loads
    it. With a model whose provider searches tools itself (`AnthropicModel`'s
    ``tool_search``), that search is used instead of ``search_tools``: the catalogue's
    tools but the pinned ones are sent deferred. Needs the ``search`` extra (bm25s).

    Wrap the whole catalogue once, outermost: ``searchable(combined(github, stripe))``
    (two would offer two tools named ``search_tools``; under ``prefixed`` the matches
    would be named without the prefix).

    Where the loaded tools live, per consumer: the agent loop's session state; an
    `McpServer`'s MCP session (2025-11-25 stdio or stateful HTTP: the client is sent
    ``notifications/tools/list_changed`` when a search loads tools; a 2026-07-28 client
    has no session, so its listing stays ``search_tools`` and the pinned tools, and it
    calls what it found by name); pydantic-ai's run (`PydanticAIToolset` lists at each
    step; a new run starts with none loaded unless its ``context`` hook gives a lasting
    state); `to_openai_agents`' list, updated in place after a call that loads tools,
    listed in that call's invocation (one list per session: see `to_openai_agents`). A
    framework only calls the tools it lists, so there a tool not loaded is unknown until
    a search loads it.

    Args:
        toolset: The catalogue (an OpenAPI spec, MCP servers, ``combined`` ones, ...).
        pinned: Tools always offered: names, or a predicate ``(tool, ctx) -> bool``.
        max_loaded: How many tools a session keeps loaded at most.
        results: How many matches a search answers (and loads), at most.
        state_key: What the session state keys of the loaded tools start with. By
            default ``toolsets.searchable:<digest>``, the digest of the names of the
            tools the catalogue lists first: stable across restarts for the same
            catalogue, and distinct for catalogues of other tools (two `searchable`
            catalogues in one agent keep their loaded tools apart). Give one when the
            catalogue's tools change over time and sessions are stored, and to two
            `searchable` wrappers of the same catalogue, which would otherwise share it.

    Raises:
        ImportError: bm25s is not installed; the message names the install line.
        ValueError: ``max_loaded`` or ``results`` below 1.
        ToolDefinitionError: (when listing) a pinned name matches no tool, or a tool is
            named ``search_tools``.
    """
    _require_bm25s()
    return SearchableToolset(
        toolset, pinned=pinned, max_loaded=max_loaded, results=results, state_key=state_key
    )
