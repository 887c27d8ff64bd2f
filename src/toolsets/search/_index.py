"""`ToolIndex`: the tools of a catalogue ranked for a request in the user's words.

Needs the ``search`` extra (bm25s). Building reads each tool's name, description and,
for an OpenAPI tool, its method, path and tags: never its declaration, so a catalogue
of thousands of operations indexes in a second or two.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from toolsets._tool import Tool
from toolsets.search._text import words

__all__ = ["IndexEntry", "Match", "ToolIndex"]


@dataclass(frozen=True, slots=True)
class Match:
    """One tool found for a request."""

    name: str
    """The tool's name."""
    summary: str
    """One line for the model: what the tool does."""
    why: str
    """Why it matched, short (``name: star; method PUT for 'bookmark'``)."""
    score: float
    """Higher is better; comparable only within one search."""


@dataclass(frozen=True, slots=True)
class IndexEntry:
    """What the index knows of one tool."""

    name: str
    """The tool's name."""
    description: str = ""
    """Summary and description, as the tool has them."""
    method: str | None = None
    """The HTTP method, for an OpenAPI tool (any case)."""
    path: str | None = None
    """The URL path template, for an OpenAPI tool."""
    tags: tuple[str, ...] = ()
    """The operation's tags."""
    summary: str = ""
    """The operation's one-line summary, when it has one apart from the description."""

    @classmethod
    def of(cls, tool: Tool) -> IndexEntry:
        """The entry for ``tool``: an OpenAPI tool's operation (method, path, summary,
        tags) when it is one or wraps one (``prefixed``, ``renamed``...), else its name
        and description. Never builds the tool's declaration."""
        from toolsets.openapi._tool import RestApiTool

        inner: object = tool
        while not isinstance(inner, RestApiTool):
            inner = getattr(inner, "tool", None)
            if inner is None:
                return cls(name=tool.name, description=tool.description)
        op = inner.operation
        return cls(
            name=tool.name,
            description=tool.description,
            method=op.method,
            path=op.path,
            tags=tuple(op.tags),
            summary=op.summary,
        )


def _summary_line(entry: IndexEntry) -> str:
    """The first line of the entry's summary or description, else its method and path."""
    for text in (entry.summary, entry.description):
        line = text.strip().split("\n", 1)[0].strip()
        if line:
            return line[:200]
    if entry.method and entry.path:
        return f"{entry.method.upper()} {entry.path}"
    return ""


def _document(entry: IndexEntry) -> list[str]:
    tokens = words(entry.name)
    if entry.method:
        tokens.append(entry.method.lower())
    if entry.path:
        tokens.extend(words(entry.path))
    for tag in entry.tags:
        tokens.extend(words(tag))
    tokens.extend(words(entry.summary))
    tokens.extend(words(entry.description))
    return tokens


def _bm25() -> Any:
    try:
        bm25s = importlib.import_module("bm25s")  # untyped: imported by name
    except ImportError as exc:
        from toolsets.adapters._extras import missing_extra

        raise missing_extra("toolsets.search", "search", exc) from exc
    return bm25s


class ToolIndex:
    """A catalogue's tools, ranked for requests. Build it once per tool list."""

    def __init__(self, entries: Sequence[IndexEntry], retriever: Any) -> None:
        self._entries = entries
        self._retriever = retriever

    @classmethod
    def build(cls, entries: Iterable[IndexEntry]) -> ToolIndex:
        """The index of ``entries`` (in order; names should be unique)."""
        listed = tuple(entries)
        if not listed:
            return cls(listed, None)
        retriever = _bm25().BM25()
        retriever.index([_document(entry) or [""] for entry in listed], show_progress=False)
        return cls(listed, retriever)

    def __len__(self) -> int:
        return len(self._entries)

    def search(self, query: str, limit: int = 5) -> list[Match]:
        """The best ``limit`` tools for ``query``, best first; none when nothing matches."""
        if self._retriever is None or limit <= 0:
            return []
        tokens = [token for token in words(query) if token in self._retriever.vocab_dict]
        if not tokens:
            return []
        scores = self._retriever.get_scores(tokens)
        order = scores.argsort()[::-1][:limit]
        matches: list[Match] = []
        for i in order:
            score = float(scores[i])
            if score <= 0:
                break
            entry = self._entries[int(i)]
            matched = sorted(set(tokens) & set(_document(entry)))
            matches.append(
                Match(
                    name=entry.name,
                    summary=_summary_line(entry),
                    why="words: " + ", ".join(matched),
                    score=score,
                )
            )
        return matches
