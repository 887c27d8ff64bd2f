"""Words out of tool names, paths and requests: the terms the index compares, stemmed
(Snowball's English stemmer, PyStemmer), with the stop words left out."""

from __future__ import annotations

import importlib
import re
from functools import lru_cache
from typing import Any

__all__ = ["stem", "words"]

_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
"""One word of an identifier: ``PostCustomersCustomerSources`` → Post, Customers,
Customer, Sources; ``getHTTPResponse`` → get, HTTP, Response."""
_RUN = re.compile(r"[A-Za-z0-9]+")


def words(text: str) -> list[str]:
    """The lower-case words of ``text``, identifiers split at case changes, ``_``, ``-``,
    ``/`` and ``.`` (``issues_list_for_repo`` → issues, list, for, repo)."""
    out: list[str] = []
    for run in _RUN.findall(text):
        out.extend(part.lower() for part in _CAMEL.findall(run))
    return out


@lru_cache(maxsize=1)
def _english() -> Any:
    # The search extra's PyStemmer (untyped: imported by name).
    return importlib.import_module("Stemmer").Stemmer("english")


def stem(word: str) -> str:
    """The stem of a lower-case word (``repositories`` → ``repositori``)."""
    result: str = _english().stemWord(word)
    return result
