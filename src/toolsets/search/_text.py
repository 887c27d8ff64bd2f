"""Words out of tool names, paths and requests: the terms the index compares, stemmed
(Snowball's English stemmer, PyStemmer), with the stop words left out."""

from __future__ import annotations

import importlib
import re
from typing import Any

from toolsets.search._lexicon import STOPWORDS

__all__ = ["Terms", "words"]

_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
"""One word, identifiers split at case changes: ``PostCustomersCustomerSources`` → Post,
Customers, Customer, Sources; ``getHTTPResponse`` → get, HTTP, Response."""


def words(text: str) -> list[str]:
    """The lower-case words of ``text``, identifiers split at case changes, ``_``, ``-``,
    ``/`` and ``.`` (``issues_list_for_repo`` → issues, list, for, repo)."""
    return [word.lower() for word in _WORD.findall(text)]


class Terms:
    """Text to terms: its words less the stop words, stemmed (``Repositories of a user``
    → repositori, user). Remembers the texts and words it has seen, since a catalogue
    repeats them (paths, summaries shared by sibling operations)."""

    def __init__(self) -> None:
        # The search extra's PyStemmer (untyped: imported by name).
        self._stemmer: Any = importlib.import_module("Stemmer").Stemmer("english")
        self._stems: dict[str, str] = {}
        self._texts: dict[str, tuple[str, ...]] = {}
        self._learning = True

    def freeze(self) -> None:
        """Remember nothing more: what requests bring is computed and forgotten, so that
        a long-lived index does not grow with every request it is asked."""
        self._learning = False
        self._texts.clear()

    def stem(self, word: str) -> str:
        """The stem of a lower-case word (``repositories`` → ``repositori``)."""
        found = self._stems.get(word)
        if found is None:
            found = str(self._stemmer.stemWord(word))
            if self._learning:
                self._stems[word] = found
        return found

    def known(self) -> dict[str, str]:
        """Every word seen while building (before `freeze`), to its stem."""
        return self._stems

    def __call__(self, text: str) -> tuple[str, ...]:
        found = self._texts.get(text)
        if found is None:
            stem = self.stem
            found = tuple(stem(word) for word in words(text) if word not in STOPWORDS)
            if self._learning and len(text) < 200:  # names, paths, summaries repeat
                self._texts[text] = found
        return found
