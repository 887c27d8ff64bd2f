"""Checking responses against the spec (optional): the JSON body of a response against the
schema the operation declares for its status and media type.

The spec's schemas are used as they are — no translation — with JSON Schema 2020-12 for
OpenAPI 3.1 and draft 4 (plus ``nullable`` / ``x-nullable``) for OpenAPI 3.0 and Swagger
2.0, whose schema dialects are draft 4's. ``$ref``s resolve across the spec's documents.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from typing import Any
from urllib.parse import quote

from jsonschema import Draft4Validator, ValidationError, validators
from jsonschema.protocols import Validator
from referencing import Registry, Resource
from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT4, DRAFT202012

from toolsets._http import essence
from toolsets._patterns import ECMA_KEYWORDS, SchemaValidator
from toolsets.openapi._document import Resolver, join_pointer
from toolsets.openapi._model import Operation

__all__ = ["ResponseChecker"]

logger = logging.getLogger("toolsets.openapi")

ROOT_URI = "urn:toolsets:spec"
"""The root document's URI when it has none (a spec given as a dict or text)."""


def _or_null(keyword: str) -> Callable[..., Iterator[ValidationError]]:
    """Draft 4's ``keyword`` check, passing ``null`` where the schema is nullable."""
    check = Draft4Validator.VALIDATORS[keyword]

    def or_null(
        validator: Any, value: Any, instance: Any, schema: Mapping[str, Any]
    ) -> Iterator[ValidationError]:
        if instance is None and (
            schema.get("nullable") is True or schema.get("x-nullable") is True
        ):
            return
        yield from check(validator, value, instance, schema)

    return or_null


OpenApi30Validator = validators.extend(  # type: ignore[no-untyped-call]
    Draft4Validator, {"type": _or_null("type"), "enum": _or_null("enum"), **ECMA_KEYWORDS}
)
"""Draft 4 with OpenAPI 3.0's ``nullable`` (and Swagger's ``x-nullable``), and ECMA-262
patterns."""


class ResponseChecker:
    """Checks response bodies of one spec's operations; validators are made once each."""

    def __init__(self, resolver: Resolver, *, version: str) -> None:
        self._resolver = resolver
        self._v31 = version.startswith("3.1") or version.startswith("3.2")
        self._v2 = version == "2.0"
        self._cls: Callable[..., Validator] = SchemaValidator if self._v31 else OpenApi30Validator
        self._specification = DRAFT202012 if self._v31 else DRAFT4
        self._registry: Registry[Any] = Registry(retrieve=self._retrieve)  # type: ignore[call-arg]
        self._validators: dict[tuple[str, str, str], Validator | None] = {}

    def _uri(self, uri: str) -> str:
        return uri or ROOT_URI

    def _retrieve(self, uri: str) -> Resource[Any]:
        contents = self._resolver.retrieve("" if uri == ROOT_URI else uri)
        return Resource.from_contents(contents, default_specification=self._specification)

    def problems(
        self, op: Operation, status: int, content_type: str, value: Any
    ) -> list[tuple[str, str]] | None:
        """What is wrong with ``value`` (field path, message); None when the spec declares
        no schema for this response."""
        media = essence(content_type)
        key = (op.pointer, str(status), media)
        if key not in self._validators:
            self._validators[key] = self._validator(op, status, media)
        validator = self._validators[key]
        if validator is None:
            return None
        try:
            errors = sorted(validator.iter_errors(value), key=lambda e: list(e.path))
        except Unresolvable as error:  # a $ref that cannot (or may not) be followed
            logger.warning("%s: the HTTP %d response is not checked: %s", op.pointer, status, error)
            self._validators[key] = None
            return None
        return [(".".join(str(p) for p in error.absolute_path), error.message) for error in errors]

    def _validator(self, op: Operation, status: int, media: str) -> Validator | None:
        found = self._schema_pointer(op, status, media)
        if found is None:
            return None
        uri, pointer = found
        ref = f"{self._uri(uri)}#{quote(pointer, safe='/~')}"
        return self._cls({"$ref": ref}, registry=self._registry)

    def _schema_pointer(self, op: Operation, status: int, media: str) -> tuple[str, str] | None:
        responses = op.responses
        code = str(status)
        wildcard = f"{code[0]}XX"
        key = next(
            (k for k in (code, wildcard, wildcard.lower(), "default") if k in responses), None
        )
        if key is None:
            return None
        base = self._resolver.root.uri
        where = join_pointer(op.pointer, "responses", key)
        response, base, where = self._resolver.resolve(responses[key], base, where)
        if not isinstance(response, Mapping):
            return None
        if self._v2:
            return (base, join_pointer(where, "schema")) if "schema" in response else None
        content = response.get("content")
        if not isinstance(content, Mapping):
            return None
        chosen = _match(media, list(content))
        if chosen is None or not isinstance(content[chosen], Mapping):
            return None
        if "schema" not in content[chosen]:
            return None
        return base, join_pointer(where, "content", chosen, "schema")


def _match(media: str, declared: list[str]) -> str | None:
    """The declared media type range that best matches ``media``."""
    lowered = {essence(d): d for d in declared}
    major = media.split("/")[0]
    for candidate in (media, f"{major}/*", "*/*"):
        if candidate in lowered:
            return lowered[candidate]
    if not media and len(declared) == 1:
        return declared[0]
    return None
