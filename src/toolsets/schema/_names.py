"""Tool names a provider accepts, mapped exactly to and from the tools' own names."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Self

from toolsets._errors import ToolDefinitionError
from toolsets._names import HASH_LENGTH, PROVIDER_TOOL_NAMES, NameRule

__all__ = ["ToolNameMap", "legal_names", "legal_tool_name"]

_DEFAULT_MAX_LENGTH = 64


@functools.lru_cache(maxsize=16)
def _provider_rule(max_length: int) -> NameRule:
    return dataclasses.replace(PROVIDER_TOOL_NAMES, max_length=max_length)


def legal_tool_name(name: str, *, max_length: int = _DEFAULT_MAX_LENGTH) -> str:
    """``name`` made legal for providers that accept ``^[A-Za-z0-9_-]{1,max_length}$``.

    A legal name comes back unchanged. Otherwise every illegal character becomes ``_``,
    and a name that is too long is cut short and given a hash of the original, so two
    long names that share a prefix stay apart. Distinct names can still meet (``a.b``
    and ``a:b``); `ToolNameMap` resolves that for a whole set of names.
    """
    return _provider_rule(max_length).legal(name)


def legal_names(names: Sequence[str], rule: NameRule) -> dict[str, str]:
    """``{name: legal name}`` for distinct ``names``, in their order: legal names are
    kept, the others made legal by ``rule`` and unique among all."""
    if all(rule.is_legal(n) for n in names):
        return {n: n for n in names}
    # Legal names are claimed first, so a legal name never changes because some other
    # name happens to sanitize to it.
    legal = {n: n for n in names if rule.is_legal(n)}
    taken = set(legal)
    for name in names:
        if name not in legal:
            legal[name] = rule.unique(name, taken)
            taken.add(legal[name])
    return {n: legal[n] for n in names}


@dataclass(frozen=True, kw_only=True)
class ToolNameMap:
    """A one-to-one map between tools' own names and names a provider accepts.

    Build one with `build`. Names that are already legal keep their name; the others
    get `legal_tool_name`, plus a hash suffix when that would clash with another name.
    The result depends only on the names and their order, so the same declarations
    always give the same provider names.
    """

    _to_provider: Mapping[str, str] = field(default_factory=dict)
    _from_provider: Mapping[str, str] = field(default_factory=dict)
    max_length: int = _DEFAULT_MAX_LENGTH
    """The longest name the provider accepts."""
    _rule: NameRule = field(default=PROVIDER_TOOL_NAMES, repr=False, compare=False)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.as_dict()!r}, max_length={self.max_length})"

    @classmethod
    def build(cls, names: Iterable[str], *, max_length: int = _DEFAULT_MAX_LENGTH) -> Self:
        """Map ``names`` (the tools' own, distinct names) to provider-legal ones.

        Args:
            names: The tools' names, in declaration order.
            max_length: The provider's limit (64 for OpenAI and Anthropic).

        Raises:
            ToolDefinitionError: a name occurs twice.
            ValueError: ``max_length`` leaves no room for a hash suffix.
        """
        if max_length <= HASH_LENGTH + 1:
            raise ValueError(f"max_length must be over {HASH_LENGTH + 1}, got {max_length}")
        return cls._build(names, _provider_rule(max_length))

    @classmethod
    def _build(cls, names: Iterable[str], rule: NameRule) -> Self:
        ordered = list(names)
        seen: set[str] = set()
        for name in ordered:
            if name in seen:
                raise ToolDefinitionError(f"two tools are named {name!r}", tool_name=name)
            seen.add(name)
        ordered_map = legal_names(ordered, rule)
        return cls(
            _to_provider=MappingProxyType(ordered_map),
            _from_provider=MappingProxyType({v: k for k, v in ordered_map.items()}),
            max_length=rule.max_length or _DEFAULT_MAX_LENGTH,
            _rule=rule,
        )

    def to_provider(self, name: str) -> str:
        """The provider name for the tool ``name``.

        A name outside the map (a tool from earlier in the conversation that is no
        longer offered) is made legal with `legal_tool_name` but not recorded.
        """
        mapped = self._to_provider.get(name)
        if mapped is not None:
            return mapped
        return self._rule.legal(name)

    def from_provider(self, name: str) -> str:
        """The tool's own name for a provider name; an unknown name comes back unchanged,
        so the agent can tell the model that no such tool exists."""
        return self._from_provider.get(name, name)

    def as_dict(self) -> dict[str, str]:
        """``{own name: provider name}`` for every tool, in declaration order."""
        return dict(self._to_provider)

    def __len__(self) -> int:
        return len(self._to_provider)

    def __contains__(self, name: object) -> bool:
        return name in self._to_provider
