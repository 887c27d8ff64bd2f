"""Typos in requests: a word no tool has, within one edit of one that some tool has
("refnud" → refund, "reposotory" → repository), is read as that word.

Symmetric deletion (as SymSpell does): every known term and each of its one-letter
deletions point back to the term; a request's word and its deletions are looked up
there. Two words meet when one deletion on each side makes them equal: one insertion,
deletion, substitution or adjacent transposition apart.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

__all__ = ["Spelling", "frequencies"]

MIN_LENGTH = 6
"""Shorter words are not corrected: too many short words are one edit apart, and a
request's everyday word (crash, stale, sign) is no typo of a tool's (cash, sale, spin)."""


def _deletions(word: str) -> set[str]:
    return {word[:i] + word[i + 1 :] for i in range(len(word))}


class Spelling:
    """Corrections toward a vocabulary, the more frequent term first."""

    def __init__(self, frequency: Mapping[str, int]) -> None:
        self._frequency = frequency
        self._near: dict[str, list[str]] = {}
        for term in frequency:
            if len(term) >= MIN_LENGTH - 1 and term.isalpha():
                for key in (term, *_deletions(term)):
                    self._near.setdefault(key, []).append(term)

    def correct(self, word: str) -> str | None:
        """The known term ``word`` is a typo of (the most frequent, if several), or None
        when it is too short or near no known term."""
        if len(word) < MIN_LENGTH or not word.isalpha():
            return None
        found: set[str] = set()
        for key in (word, *_deletions(word)):
            found.update(self._near.get(key, ()))
        found.discard(word)
        if not found:
            return None
        return max(sorted(found), key=lambda term: self._frequency[term])


def frequencies(documents: Iterable[Iterable[str]]) -> dict[str, int]:
    """How many documents each term is in."""
    counts: dict[str, int] = {}
    for document in documents:
        for term in set(document):
            counts[term] = counts.get(term, 0) + 1
    return counts
