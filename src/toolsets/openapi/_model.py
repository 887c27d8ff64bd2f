"""The operation model: what one API operation takes and how it is sent, read once from
the spec (OpenAPI 3.0, 3.1 or Swagger 2.0 alike) and then used by the schema builder and
the request builder. Schemas in here are raw spec schemas: ``$ref``s are left in place
and resolved against the `Document` when needed."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "DEFAULT_STYLES",
    "Body",
    "Encoding",
    "HttpMethod",
    "Location",
    "MediaType",
    "Operation",
    "Parameter",
    "Server",
]

Location = Literal["path", "query", "header", "cookie"]
"""Where a parameter goes."""
HttpMethod = Literal["get", "put", "post", "delete", "options", "head", "patch", "trace"]
"""The methods an OpenAPI path item may hold, lower case as in the spec."""

DEFAULT_STYLES: Mapping[str, str] = {
    "path": "simple",
    "query": "form",
    "header": "simple",
    "cookie": "form",
}
"""The ``style`` of a parameter that names none (OpenAPI 3, section 4.8.12.4)."""


@dataclass(frozen=True, kw_only=True)
class Parameter:
    """One path, query, header or cookie parameter, with its serialization rules
    resolved (defaults applied)."""

    name: str
    """The name on the wire (case as in the spec)."""
    location: Location
    """Where it goes."""
    required: bool = False
    """Path parameters are always required."""
    schema: Mapping[str, Any] | None = None
    """Its schema (raw, may hold ``$ref``); None when it has ``content`` instead."""
    style: str = "form"
    """``simple``, ``label``, ``matrix`` (path); ``form``, ``spaceDelimited``,
    ``pipeDelimited``, ``deepObject`` (query); ``form`` (cookie); ``simple`` (header)."""
    explode: bool = True
    """Arrays and objects as separate parameters (or separate pairs)."""
    allow_reserved: bool = False
    """Query only: RFC 3986 reserved characters are sent as they are."""
    content_type: str | None = None
    """Set for a parameter described by ``content``: the value is serialized in this
    media type (e.g. ``application/json``), then encoded for its location."""
    description: str = ""
    """For the model."""
    deprecated: bool = False
    """The API asks clients to stop using it."""
    base: str = ""
    """The URI of the document the parameter is in: its schema's ``$ref``s are relative
    to it (``""``: the spec's own document)."""


@dataclass(frozen=True, kw_only=True)
class Encoding:
    """How one property of a form or multipart body is sent (the ``encoding`` object)."""

    content_type: str | None = None
    """Multipart: the part's media type (default from the property's schema)."""
    headers: Mapping[str, Any] = field(default_factory=dict)
    """Multipart: extra headers of the part, by name (raw header objects)."""
    style: str | None = None
    """Form: the property's style (``form``, ``spaceDelimited``, ``pipeDelimited``,
    ``deepObject``); None means ``form``."""
    explode: bool | None = None
    """Form: explode arrays and objects; None means the style's default."""
    allow_reserved: bool = False
    """Form: reserved characters sent as they are."""


@dataclass(frozen=True, kw_only=True)
class MediaType:
    """One media type a request body may be sent as."""

    content_type: str
    """E.g. ``application/json``, ``application/x-www-form-urlencoded``,
    ``multipart/form-data``, ``application/octet-stream``, ``text/plain``."""
    schema: Mapping[str, Any] | None = None
    """The body's schema (raw, may hold ``$ref``)."""
    encoding: Mapping[str, Encoding] = field(default_factory=dict)
    """Form and multipart bodies: per-property rules."""
    base: str = ""
    """The URI of the document the media type is in: its schema's ``$ref``s are relative
    to it (``""``: the spec's own document)."""


@dataclass(frozen=True, kw_only=True)
class Body:
    """An operation's request body."""

    required: bool = False
    """The request must have a body."""
    description: str = ""
    """For the model."""
    media_types: tuple[MediaType, ...] = ()
    """What it may be sent as, in the spec's order."""


@dataclass(frozen=True, kw_only=True)
class Server:
    """A base URL, possibly with ``{variables}``."""

    url: str
    """The URL template (may be relative to the document's own URL)."""
    variables: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Variable name → ``{"default": ..., "enum": [...], "description": ...}``."""
    description: str = ""


@dataclass(frozen=True, kw_only=True)
class Operation:
    """One operation: a method on a path, with everything needed to call it."""

    method: HttpMethod
    """Lower case."""
    path: str
    """The path template, e.g. ``/repos/{owner}/{repo}``."""
    pointer: str
    """JSON pointer of the operation in its document (for errors)."""
    operation_id: str | None = None
    summary: str = ""
    description: str = ""
    tags: tuple[str, ...] = ()
    deprecated: bool = False
    parameters: tuple[Parameter, ...] = ()
    """Path-item and operation parameters merged (the operation's win)."""
    body: Body | None = None
    servers: tuple[Server, ...] = ()
    """The servers that apply (operation's, else path item's, else the document's)."""
    security: tuple[Mapping[str, tuple[str, ...]], ...] | None = None
    """Alternatives (OR) of requirements (AND: scheme name → scopes); None means the
    document's default; ``()`` means no security."""
    responses: Mapping[str, Any] = field(default_factory=dict)
    """Raw response objects by status code (``"200"``, ``"4XX"``, ``"default"``)."""
