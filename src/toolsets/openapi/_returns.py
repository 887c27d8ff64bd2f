"""What a successful call of an operation returns, as its spec describes it: for people
reading about a tool (``toolsets inspect``), not for the model.

It is not the tool's ``response_schema``: that would be declared to the model and, served
over MCP, become the tool's ``outputSchema``, which every result would then have to
match, while real APIs often answer beyond what their specs say.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from toolsets.openapi._document import Resolver, join_pointer
from toolsets.openapi._model import Operation

__all__ = ["MAX_REFERENCES_FOLLOWED", "MAX_SCHEMA_NODES", "SuccessResponse", "success_response"]

MAX_REFERENCES_FOLLOWED = 2
"""``$ref``s followed on the way down from the response's schema (a list of issues: the
issue, then its user and labels); deeper ones are kept as the spec writes them."""
MAX_SCHEMA_NODES = 2000
"""Schema objects shown at most; past them, ``$ref``s are kept as the spec writes them
(Microsoft Graph's user refers to a hundred entities, each to more)."""

_VALUES = frozenset(("example", "examples", "enum", "const", "default", "required"))
"""Keywords whose value is data, not a schema: a ``$ref`` in it is not followed."""
_SUCCESS = re.compile(r"^2\d\d$")
_JSON = re.compile(r"^application/(.+\+)?json$|^\*/\*$")


@dataclass(frozen=True, kw_only=True)
class SuccessResponse:
    """The response a successful call gets, as the spec declares it."""

    status: str
    """The status code as the spec keys it: ``"200"``, ``"2XX"`` or ``"default"``."""
    description: str = ""
    content_type: str | None = None
    """The media type whose schema this is (JSON first); None for Swagger 2.0, whose
    responses have one schema for every type the operation ``produces``, or when the
    response has no body."""
    schema: Mapping[str, Any] | None = None
    """The body's schema as the spec writes it (its dialect: OpenAPI 3.0's ``nullable``,
    say), ``$ref``s replaced by what they name down to `MAX_REFERENCES_FOLLOWED` and
    within `MAX_SCHEMA_NODES` (a recursive one is kept); None when it declares none."""


def success_response(op: Operation, resolver: Resolver, *, swagger: bool) -> SuccessResponse | None:
    """The response of ``op`` for success: its lowest 2xx one, else ``2XX``, else
    ``default``; None when the spec declares none of them.

    Raises:
        SpecError: a ``$ref`` on the way cannot be followed.
    """
    responses = op.responses
    # By their text: YAML reads an unquoted 200 as a number, a quoted one as a string.
    codes = sorted((key for key in responses if _SUCCESS.match(str(key))), key=str)
    codes += [key for key in ("2XX", "2xx", "default") if key in responses]
    if not codes:
        return None
    status = str(codes[0])
    base = resolver.root.uri
    where = join_pointer(op.pointer, "responses", status)
    response, base, where = resolver.resolve(responses[codes[0]], base, where)
    if not isinstance(response, Mapping):
        return SuccessResponse(status=status)
    description = response.get("description")
    told = description if isinstance(description, str) else ""
    content_type: str | None = None
    if swagger:
        node = response.get("schema")
        where = join_pointer(where, "schema")
    else:
        content = response.get("content")
        if not isinstance(content, Mapping) or not content:
            return SuccessResponse(status=status, description=told)
        content_type = next((str(t) for t in content if _JSON.match(str(t).lower())), None)
        content_type = content_type or str(next(iter(content)))
        media = content[content_type]
        node = media.get("schema") if isinstance(media, Mapping) else None
        where = join_pointer(where, "content", content_type, "schema")
    if node is None:
        return SuccessResponse(status=status, description=told, content_type=content_type)
    schema = _Inliner(resolver).inline(node, base, where, 0, ())
    shown = schema if isinstance(schema, Mapping) else {"const": schema}
    return SuccessResponse(status=status, description=told, content_type=content_type, schema=shown)


class _Inliner:
    """A schema with its ``$ref``s replaced by what they name, within the bounds."""

    def __init__(self, resolver: Resolver) -> None:
        self._resolver = resolver
        self._left = MAX_SCHEMA_NODES

    def inline(
        self, node: Any, base: str, pointer: str, followed: int, on_the_way: tuple[str, ...]
    ) -> Any:
        if isinstance(node, list):
            return [
                self.inline(item, base, f"{pointer}/{i}", followed, on_the_way)
                for i, item in enumerate(node)
            ]
        if not isinstance(node, Mapping):
            return node
        self._left -= 1
        ref = node.get("$ref")
        if isinstance(ref, str):
            target, target_base, document, target_pointer = self._resolver.locate(
                node, base, pointer
            )
            where = f"{document}#{target_pointer}"
            if followed >= MAX_REFERENCES_FOLLOWED or self._left <= 0 or where in on_the_way:
                return dict(node)
            inlined = self.inline(
                target, target_base, target_pointer, followed + 1, (*on_the_way, where)
            )
            if isinstance(inlined, dict):
                siblings = {k: v for k, v in node.items() if k != "$ref"}
                return {**inlined, **siblings}
            return inlined
        base = self._resolver.inner_base(node, base)
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in _VALUES or key.startswith("x-"):
                out[key] = value  # values (or extensions), not schemas
            elif key in ("properties", "patternProperties", "$defs", "definitions"):
                out[key] = (
                    {
                        name: self.inline(
                            sub, base, join_pointer(pointer, key, name), followed, on_the_way
                        )
                        for name, sub in value.items()
                    }
                    if isinstance(value, Mapping)
                    else value
                )
            else:
                out[key] = self.inline(
                    value, base, join_pointer(pointer, key), followed, on_the_way
                )
        return out
