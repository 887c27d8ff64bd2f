"""Words out of tool names, paths and requests: the tokens the index compares."""

from __future__ import annotations

import re

__all__ = ["words"]

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
