"""JSON pointers (RFC 6901) and JSON Schema's keyword tables, for every module that walks
a schema or names a place in a document.

The tables follow draft 2020-12, plus the spellings of drafts 4 to 2019-09 that specs
and servers still send (``definitions``, ``dependencies``, ``additionalItems``, ``items``
as a list). A walker that deliberately takes fewer derives its set from these and says
why.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

__all__ = [
    "DATA_KEYWORDS",
    "DEFINITION_KEYWORDS",
    "PRE_2020_KEYWORDS",
    "SCHEMA_KEYWORDS",
    "SCHEMA_LIST_KEYWORDS",
    "SCHEMA_MAP_KEYWORDS",
    "PointerError",
    "escape",
    "join_pointer",
    "resolve",
    "unescape",
]

SCHEMA_KEYWORDS: Final = frozenset(
    {
        "additionalProperties",
        "unevaluatedProperties",
        "propertyNames",
        "items",  # a list of schemas in drafts 4 to 2019-09 (prefixItems' old form)
        "additionalItems",
        "unevaluatedItems",
        "contains",
        "contentSchema",
        "not",
        "if",
        "then",
        "else",
    }
)
"""Keywords whose value is one schema."""

SCHEMA_LIST_KEYWORDS: Final = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
"""Keywords whose value is a list of schemas."""

SCHEMA_MAP_KEYWORDS: Final = frozenset(
    {
        "properties",
        "patternProperties",
        "dependentSchemas",
        "dependencies",  # drafts 4 to 7: a value is a schema or a list of property names
        "$defs",
        "definitions",
    }
)
"""Keywords whose value maps names (or patterns) to schemas."""

DEFINITION_KEYWORDS: Final = frozenset({"$defs", "definitions"})
"""The schema maps that hold definitions: reached through ``$ref``, never applied where
they stand."""

PRE_2020_KEYWORDS: Final = frozenset({"additionalItems", "dependencies", "definitions"})
"""Keywords of drafts 4 to 2019-09 that draft 2020-12 replaced (by ``items``,
``dependentSchemas``/``dependentRequired`` and ``$defs``)."""

DATA_KEYWORDS: Final = frozenset({"default", "examples", "example", "const", "enum"})
"""Keywords whose values are data, never schemas (``example`` is OpenAPI's)."""


class PointerError(LookupError):
    """A JSON pointer leads to nothing in the document."""

    def __init__(self, pointer: str, walked: str) -> None:
        super().__init__(f"{pointer!r} points at nothing (no {walked!r})")
        self.pointer = pointer
        """The whole pointer."""
        self.walked = walked
        """Its part up to and including the first token that is not there."""


def escape(token: str) -> str:
    """A JSON pointer reference token (RFC 6901): ``~`` → ``~0``, ``/`` → ``~1``."""
    return token.replace("~", "~0").replace("/", "~1")


def unescape(token: str) -> str:
    """A reference token as the key it stands for: ``~1`` → ``/``, ``~0`` → ``~``."""
    return token.replace("~1", "/").replace("~0", "~")


def join_pointer(pointer: str, *tokens: str | int) -> str:
    """``pointer`` extended by ``tokens`` (keys or list indexes), each escaped."""
    for token in tokens:
        text = str(token)
        if "~" in text or "/" in text:
            text = escape(text)
        pointer = f"{pointer}/{text}"
    return pointer


def resolve(document: Any, pointer: str) -> Any:
    """The value at ``pointer`` in ``document`` (``""`` is the whole document).

    Raises:
        PointerError: a token names no key of an object, or no index of an array.
    """
    node = document
    walked = ""
    for raw in pointer.split("/")[1:]:
        walked += f"/{raw}"
        token = unescape(raw)
        if isinstance(node, Mapping):
            if token not in node:
                raise PointerError(pointer, walked)
            node = node[token]
        elif isinstance(node, list | tuple) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            raise PointerError(pointer, walked)
    return node
