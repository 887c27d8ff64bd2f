"""Tool search over big catalogues: `searchable` offers a toolset through one
``search_tools`` tool that loads what it finds; `ToolIndex` ranks a toolset's tools for
a request.

Both need the ``search`` extra: ``pip install 'toolsets-ai[search]'`` (``toolsets-ai`` is
not on PyPI: in a clone of the repository that is ``pip install '.[search]'``).
"""

from typing import TYPE_CHECKING

from toolsets.search._searchable import (
    DEFAULT_MAX_LOADED,
    SEARCH_TOOL_NAME,
    HiddenTool,
    SearchableToolset,
    searchable,
)

if TYPE_CHECKING:  # what `__getattr__` gives, for the type checker
    from toolsets.search._index import IndexEntry, Match, ToolIndex


def __getattr__(name: str) -> object:
    """The index's names, imported when first asked for: ``import toolsets`` (which
    imports `searchable`) does not load the index, its lexicon and spelling tables."""
    if name in _INDEX:
        from toolsets.search import _index

        return getattr(_index, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_INDEX = frozenset({"IndexEntry", "Match", "ToolIndex"})

__all__ = [
    "DEFAULT_MAX_LOADED",
    "SEARCH_TOOL_NAME",
    "HiddenTool",
    "IndexEntry",
    "Match",
    "SearchableToolset",
    "ToolIndex",
    "searchable",
]
