"""Tool search over big catalogues: `searchable` offers a toolset through one
``search_tools`` tool that loads what it finds; `ToolIndex` ranks a toolset's tools for
a request.

Both need the ``search`` extra: ``pip install 'toolsets-ai[search]'`` (``toolsets-ai`` is
not on PyPI: in a clone of the repository that is ``pip install '.[search]'``).
"""

from toolsets.search._index import IndexEntry, Match, ToolIndex
from toolsets.search._searchable import (
    DEFAULT_MAX_LOADED,
    SEARCH_TOOL_NAME,
    HiddenTool,
    SearchableToolset,
    hidden_declaration,
    searchable,
)

__all__ = [
    "DEFAULT_MAX_LOADED",
    "SEARCH_TOOL_NAME",
    "HiddenTool",
    "IndexEntry",
    "Match",
    "SearchableToolset",
    "ToolIndex",
    "hidden_declaration",
    "searchable",
]
