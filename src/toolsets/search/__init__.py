"""Tool search over big catalogues: `ToolIndex` ranks a toolset's tools for a request
(needs the ``search`` extra: bm25s)."""

from toolsets.search._index import IndexEntry, Match, ToolIndex

__all__ = ["IndexEntry", "Match", "ToolIndex"]
