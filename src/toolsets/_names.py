"""Tool names made legal for one audience, by one set of parameters per audience.

MCP listing, OpenAPI operation names, provider name maps, server prefixes and the names
under a schema's ``$defs`` differ only in the `NameRule` they pass: which characters are
replaced, how long a name may be, whether a changed name always carries a hash of the
original, and how clashes are settled. Hashes are of the original name (SHA-256, not
Python's ``hash()``): the same names give the same legal names in every process, so a
stored conversation maps back in the next one.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Container
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "HASH_LENGTH",
    "MCP_TOOL_NAMES",
    "OPENAPI_TOOL_NAMES",
    "PREFIX_NAMES",
    "PROVIDER_TOOL_NAMES",
    "NameRule",
]

HASH_LENGTH = 8
"""Hex digits of SHA-256 in a hash suffix (``_`` and these follow the shortened name)."""


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:HASH_LENGTH]


@dataclass(frozen=True, kw_only=True)
class NameRule:
    """How one audience's tool names must look, and how a name is made to."""

    illegal: re.Pattern[str]
    """What is replaced by one ``_``: a character (``[^A-Za-z0-9_-]``) or a run of them
    (``[^A-Za-z0-9]+``)."""
    max_length: int | None = None
    """The longest legal name; None for no limit."""
    fallback: str = "_"
    """The name when nothing is left of the original (a call may pass its own)."""
    strip: bool = False
    """Whether ``_`` is trimmed from both ends, and from a shortened name before its hash."""
    hash_changed: bool = False
    """Whether every changed name carries a hash of the original (so two names that clean
    to the same text never meet), or only a name cut short."""
    dedupe: Literal["hash", "number"] = "hash"
    """How `unique` settles a clash: a hash suffix (of the name, then of ``name#1``,
    ``name#2``... while that is taken too), or ``_2``, ``_3``... in order."""
    first: re.Pattern[str] | None = None
    """What the first character must match (e.g. ``[A-Za-z_]`` for Python identifiers);
    ``_`` is put in front of a name that starts otherwise."""
    reserved: frozenset[str] = frozenset()
    """Names that are legal in form but taken by the audience (e.g. Python's keywords):
    ``_`` is put after them."""

    def is_legal(self, name: str) -> bool:
        """Whether ``name`` is a legal name as it is (`legal` returns it unchanged)."""
        if not name or (self.max_length is not None and len(name) > self.max_length):
            return False
        return self._clean(name, self.fallback) == name

    def legal(self, name: str, *, fallback: str | None = None) -> str:
        """``name`` made legal: illegal characters replaced, and shortened to fit with a
        hash of the original after it (a hash also after any change, with
        `hash_changed`). A legal name comes back as it is.

        Args:
            name: The original name.
            fallback: The name when nothing legal is left (default: the rule's own).
        """
        base = self._clean(name, self.fallback if fallback is None else fallback)
        too_long = self.max_length is not None and len(base) > self.max_length
        if too_long or (self.hash_changed and base != name):
            return self._hashed(base, name, 0)
        return base

    def unique(self, name: str, taken: Container[str], *, fallback: str | None = None) -> str:
        """`legal`'s name, made different from every name in ``taken`` as `dedupe` says.

        Args:
            name: The original name.
            taken: The legal names already given.
            fallback: The name when nothing legal is left (default: the rule's own).
        """
        candidate = self.legal(name, fallback=fallback)
        if candidate not in taken:
            return candidate
        if self.dedupe == "number":
            base, suffix = candidate, 2
            while candidate in taken:
                tail = f"_{suffix}"
                kept = base if self.max_length is None else base[: self.max_length - len(tail)]
                candidate = kept + tail
                suffix += 1
            return candidate
        base = self._clean(name, self.fallback if fallback is None else fallback)
        attempt = 0
        while candidate in taken:
            candidate = self._hashed(base, name, attempt)
            attempt += 1
        return candidate

    def _clean(self, name: str, fallback: str) -> str:
        base = self.illegal.sub("_", name)
        if self.strip:
            base = base.strip("_")
        base = base or fallback
        if self.first is not None and not self.first.match(base):
            base = "_" + base
        if base in self.reserved:
            base += "_"
        return base

    def _hashed(self, base: str, name: str, attempt: int) -> str:
        suffix = "_" + _digest(name if attempt == 0 else f"{name}#{attempt}")
        kept = base if self.max_length is None else base[: self.max_length - len(suffix)]
        if self.strip:
            kept = kept.rstrip("_")
        return kept + suffix


MCP_TOOL_NAMES = NameRule(
    illegal=re.compile(r"[^A-Za-z0-9_.:/-]"), max_length=128, fallback="tool", hash_changed=True
)
"""MCP tool names as listed to agents: MCP's own character set (SEP-986) and length; a
changed name always carries a hash, so two server names never become one."""

OPENAPI_TOOL_NAMES = NameRule(
    illegal=re.compile(r"[^A-Za-z0-9]+"), max_length=64, strip=True, dedupe="number"
)
"""OpenAPI operation names: letters and digits joined by single ``_``, legal for every
major provider; clashes numbered in document order (``_2``, ``_3``...)."""

PROVIDER_TOOL_NAMES = NameRule(illegal=re.compile(r"[^A-Za-z0-9_-]"), max_length=64)
"""Names OpenAI and Anthropic accept (``^[a-zA-Z0-9_-]{1,64}$``); clashes get a hash."""

PREFIX_NAMES = NameRule(illegal=re.compile(r"[^A-Za-z0-9_-]"), fallback="server")
"""Prefixes made of server names (``github`` in ``github_create_issue``)."""
