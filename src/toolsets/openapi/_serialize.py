"""Argument values to wire text: parameters in every OpenAPI style, and request bodies.

Pure functions (no I/O; the multipart boundary is the one random input). They follow
OpenAPI 3.1.2, "Style Values", "Style Examples" and Appendices C-E, which build on
RFC 6570 (URI templates), RFC 3986 (percent-encoding) and RFC 7578 (multipart/form-data).
Where the specification leaves a choice, this module makes it as follows.

Values
    Strings are sent as they are, booleans as ``true``/``false``, ``None`` as the empty
    string (the table's *undefined* column: ``;color``, ``.``, ``color=``). A float that
    is a whole number is sent as an integer (``5.0`` -> ``5``): JSON Schema counts
    ``5.0`` as an integer, and servers that parse integers reject ``"5.0"``. Arrays and
    objects nested inside an array or object, which RFC 6570 cannot express, are sent
    as compact JSON, except under ``deepObject``, which nests brackets.

Percent-encoding
    UTF-8, then every byte outside RFC 3986's unreserved set (``A-Z a-z 0-9 - . _ ~``)
    becomes ``%XX`` (upper case), in names and values alike; only the delimiters a style
    itself introduces (``,`` ``;`` ``=`` ``.`` ``&``) stay literal. The spec's own
    delimiters that RFC 3986 does not allow in a query are encoded like data: space
    (``%20``), ``|`` (``%7C``), and ``deepObject``'s brackets (``%5B`` ``%5D``), as in
    the spec's table. Form bodies encode ``~`` too (``%7E``), the spec's advice for
    ``application/x-www-form-urlencoded``; spaces are ``%20`` everywhere.

allowReserved
    Reserved expansion as the spec defines it: RFC 3986 reserved characters and
    existing ``%XX`` triples pass unchanged, but ``[ ] #`` (not allowed in a query)
    and ``& = +`` (form-urlencoded delimiters) are still encoded, so a value can never
    split into another parameter. A ``%`` not starting a triple becomes ``%25``.

Path
    ``.`` and ``..`` as the whole value (which includes an empty ``label`` value, the
    table's ``.``) are rejected: a client would normalize them away and call another
    resource. So is a value that expands to nothing (the table's empty ``simple``
    value, an empty array): ``DELETE /users/{id}`` with ``id=""`` would address the
    whole collection.

Path keys with a query or a fragment
    APIs.guru tells apart operations that share a path by a query or a fragment in the
    path key (``/jobs?op=LIST``, ``/#Action=AssumeRole``). The fragment is never sent
    (a client does not send one); the key's query pairs are sent before the
    parameters', except those a parameter of the same name also sends; a path
    parameter's ``{name}`` there is replaced like one in the path.

Query
    ``deepObject`` nests objects as ``name[a][b]=x`` and arrays by index,
    ``name[a][0]=x`` (Stripe, qs, PHP; unlike ``name[a][]=x`` it is unambiguous for
    arrays of objects); a scalar is sent as ``name=x`` (Stripe's ``metadata=``), and
    ``explode: false``, undefined by the spec, behaves like ``true``.
    ``spaceDelimited`` and ``pipeDelimited`` with ``explode: true`` (undefined) and
    scalars behave like ``form``. Empty arrays and objects send nothing (RFC 6570's
    *undefined*), so a required parameter cannot be empty: it is refused.

Swagger 2.0 collection formats
    ``csv``, ``ssv``, ``pipes`` and ``multi`` are OpenAPI 3's ``form`` (``simple`` in a
    path or a header), ``spaceDelimited`` and ``pipeDelimited`` styles; ``tsv`` is a style
    of this module's, ``tabDelimited``: the items joined by a tab (``%09`` in a URL). In
    a path or a header, where OpenAPI 3 has none of them, ``ssv``, ``tsv`` and ``pipes``
    join the items by their delimiter all the same: percent-encoded in a path (``%20``,
    ``%09``, ``%7C``), as they are in a header (a space or a tab inside a field value is
    legal HTTP).

Headers
    Never percent-encoded (the spec: headers pass through unchanged). Leading and
    trailing spaces are dropped, as every HTTP recipient would; line breaks, other
    control characters and non-ASCII characters are rejected (RFC 9110 field values are
    visible ASCII; obs-text has no defined charset, and HTTP clients refuse it).

Cookies
    ``form`` style, percent-encoded like a query (so ``;``, ``,``, spaces and controls
    never reach the header raw); exploded arrays and objects become separate pairs.
    A ``content``-typed cookie is the spec's way out of percent-encoding: a ``text/*``
    value is sent as it is and rejected if it holds anything outside RFC 6265's
    cookie-octets; a JSON value is percent-encoded.

Form bodies (``application/x-www-form-urlencoded``)
    A property whose Encoding Object sets ``style``, ``explode`` or ``allowReserved``
    is serialized like a query parameter of that style; one that sets only
    ``contentType`` is serialized in that media type (JSON for JSON types) and
    percent-encoded. Without an Encoding Object, scalars are ``name=value``, arrays of
    scalars repeat the name (``form``, ``explode: true``), and objects, or arrays that
    hold objects, use ``deepObject`` brackets (``metadata[key]=value``). (OpenAPI 3.1.1
    would send such objects as JSON text; brackets are what Rails, PHP, Express and
    Stripe parse.) A top-level property set to ``None`` is left out. Where the spec
    declares the body as a string, the model writes the form's text, sent as it is.

Multipart bodies (``multipart/*``)
    One ``Content-Disposition: form-data; name="..."`` part per property, in the
    value's order; an array repeats the part once per item (RFC 7578, section 4.3),
    unless its declared type is JSON. A part's kind follows its Encoding Object's
    ``contentType``, else its schema (after ``resolve``):

    - JSON (an object, or a JSON ``contentType``): compact JSON, ``application/json``.
    - A file (``format: binary``, a ``contentMediaType`` without ``contentEncoding``,
      or a schema that says nothing about the value's type): the value is text (sent as
      UTF-8), ``bytes``, or a *file object* ``{"content": text}`` or
      ``{"content_base64": base64}``, each with an optional ``"filename"`` and
      ``"content_type"``. The part has a ``filename`` (the property name by default)
      and a ``Content-Type`` (the file's, which must fall within the declared ones,
      else the first declared, else ``application/octet-stream``).
    - Base64 text (``format: byte``, ``contentEncoding``): the string as it is.
    - Anything else is a text field, without a ``Content-Type`` unless one is declared.

    ``style``/``explode`` turn a property into text fields named like query pairs
    (``file_link_data[create]``), without percent-encoding; files (and arrays of files)
    have no style: they stay files. Part headers declared in
    ``encoding.headers`` are sent when their schema fixes a value (``const``,
    ``default``, a one-value ``enum``). Names and filenames escape ``"``, CR and LF as
    ``%22``, ``%0D``, ``%0A`` (the HTML standard's rule); other control characters and
    lone surrogates are refused. A file's ``content_type`` must be a media type in
    visible ASCII (no line break: it becomes a header). A top-level ``None`` property
    is left out.

Other bodies
    JSON types (``application/json``, ``*/*+json``): compact UTF-8 JSON. Anything else:
    a string encoded in the type's ``charset`` (UTF-8 by default; ``text/*`` types get
    ``; charset=utf-8`` added), ``bytes`` as they are, or a file object as above.
"""

from __future__ import annotations

import base64
import json
import math
import os
import re
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import quote_from_bytes, unquote

from toolsets._http import essence, is_json
from toolsets.openapi._model import Encoding, MediaType, Parameter

__all__ = [
    "EncodedBody",
    "SerializationError",
    "cookie_pairs",
    "encode_body",
    "encode_json",
    "header_value",
    "is_file",
    "is_raw",
    "path_value",
    "query_pairs",
    "split_path_key",
]

Resolve = Callable[[Mapping[str, Any]], Mapping[str, Any]]
"""Returns a schema with its top-level ``$ref`` followed."""

_PLACES: Final = {
    "path": "path parameter",
    "query": "query parameter",
    "header": "header",
    "cookie": "cookie",
    "body": "body property",
}


class SerializationError(ValueError):
    """A value that cannot be sent as the operation describes it.

    The model gave it, so the model can fix it: callers hand it back as a result.
    """

    def __init__(self, location: str, field: str, reason: str) -> None:
        self.location = location
        """``path``, ``query``, ``header``, ``cookie`` or ``body``."""
        self.field = field
        """The parameter's name, or the body's property ("" for the body as a whole)."""
        self.reason = reason
        """What is wrong with the value."""
        where = "body" if location == "body" and not field else f"{_PLACES[location]} {field!r}"
        super().__init__(f"{where}: {reason}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.location, self.field, self.reason))


@dataclass(frozen=True, kw_only=True)
class EncodedBody:
    """A request body, ready to send."""

    content: bytes
    """The body's bytes."""
    content_type: str
    """The whole ``Content-Type`` header value (a multipart one carries its boundary)."""


class _Invalid(Exception):
    """Raised inside this module; the public function adds where the value was going."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.field: str | None = None


class _failing_as:  # lower case: used as a function, with _failing_as(...)
    """Errors inside are a `SerializationError` of this argument (a class, not a
    generator: it runs for every parameter of every call)."""

    __slots__ = ("field", "location")

    def __init__(self, location: str, field: str) -> None:
        self.location = location
        self.field = field

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, exc: BaseException | None, tb: object) -> None:
        if isinstance(exc, _Invalid):
            name = self.field if exc.field is None else exc.field
            raise SerializationError(self.location, name, exc.reason) from None


@contextmanager
def _blame(field: str) -> Iterator[None]:
    """Errors inside belong to this body property."""
    try:
        yield
    except _Invalid as exc:
        exc.field = field
        raise


# -- values ------------------------------------------------------------------------------


def _scalar(value: object) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _Invalid(f"{value!r} is not a number that can be sent")
        if value.is_integer() and abs(value) < 2**53:
            return str(int(value))
        return repr(value)
    raise _Invalid(f"a value of type {type(value).__name__} cannot be sent here")


def _item(value: object) -> str:
    """An array item or object value, where RFC 6570 allows only scalars."""
    if isinstance(value, Mapping | list | tuple):
        return _json(value)
    return _scalar(value)


def _json(value: object, *, ascii_only: bool = False) -> str:
    try:
        return json.dumps(value, ensure_ascii=ascii_only, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise _Invalid(f"cannot be written as JSON ({exc})") from None


def _entries(value: Mapping[Any, Any]) -> list[tuple[str, object]]:
    entries: list[tuple[str, object]] = []
    for key, item in value.items():
        if not isinstance(key, str):
            raise _Invalid(f"object keys must be strings, not {type(key).__name__}")
        entries.append((key, item))
    return entries


def _encode_text(text: str, charset: str = "utf-8") -> bytes:
    try:
        return text.encode(charset)
    except LookupError:
        raise _Invalid(f"the declared charset {charset!r} is unknown") from None
    except UnicodeEncodeError as exc:
        raise _Invalid(
            f"{exc.object[exc.start : exc.end]!r} cannot be encoded in {charset}"
        ) from None


# -- media types -------------------------------------------------------------------------


def _charset(content_type: str) -> str | None:
    for piece in content_type.split(";")[1:]:
        key, _, value = piece.partition("=")
        if key.strip().lower() == "charset":
            return value.strip().strip('"')
    return None


def _alternatives(content_types: str) -> list[str]:
    """An Encoding Object's ``contentType``: a comma-separated list of media ranges."""
    return [piece.strip() for piece in content_types.split(",") if piece.strip()]


def _within(content_type: str, media_range: str) -> bool:
    kind, _, subtype = essence(content_type).partition("/")
    range_kind, _, range_subtype = essence(media_range).partition("/")
    return range_kind == "*" or (range_kind == kind and range_subtype in ("*", subtype))


def _content_text(content_type: str, value: object, *, ascii_only: bool = False) -> str:
    """A value serialized in a parameter's or property's media type."""
    if is_json(content_type):
        return _json(value, ascii_only=ascii_only)
    if isinstance(value, Mapping | list | tuple):
        return _json(value, ascii_only=ascii_only)
    return _scalar(value)


# -- percent-encoding --------------------------------------------------------------------

_TRIPLE: Final = re.compile(r"%[0-9A-Fa-f]{2}")
_RESERVED_PASSED: Final = ":/?@!$'()*,;"
"""RFC 3986 reserved characters minus those a query cannot hold (``[]#``) or that
delimit form-urlencoded data (``&=+``)."""


def _pct(text: str) -> str:
    return quote_from_bytes(_encode_text(text), safe="")


def _pct_form(text: str) -> str:
    return _pct(text).replace("~", "%7E")


def _reserved(text: str, *, tilde: bool) -> str:
    pieces: list[str] = []
    start = 0
    for match in _TRIPLE.finditer(text):
        pieces.append(_reserved_run(text[start : match.start()], tilde=tilde))
        pieces.append(match.group())
        start = match.end()
    pieces.append(_reserved_run(text[start:], tilde=tilde))
    return "".join(pieces)


def _reserved_run(text: str, *, tilde: bool) -> str:
    encoded = quote_from_bytes(_encode_text(text), safe=_RESERVED_PASSED)
    return encoded.replace("~", "%7E") if tilde else encoded


def _pct_reserved(text: str) -> str:
    return _reserved(text, tilde=False)


def _pct_form_reserved(text: str) -> str:
    return _reserved(text, tilde=True)


def _same(text: str) -> str:
    return text


@dataclass(frozen=True)
class _Codec:
    """How data is escaped: ``value`` for values, ``name`` for names, object keys that
    become names, and the delimiters RFC 3986 does not allow as they are."""

    value: Callable[[str], str]
    name: Callable[[str], str]


_URL: Final = _Codec(_pct, _pct)
_URL_RESERVED: Final = _Codec(_pct_reserved, _pct)
_FORM: Final = _Codec(_pct_form, _pct_form)
_FORM_RESERVED: Final = _Codec(_pct_form_reserved, _pct_form)
_RAW: Final = _Codec(_same, _same)
"""Headers and multipart fields: no percent-encoding."""


# -- styles ------------------------------------------------------------------------------

_PATH_STYLES: Final = {"simple": ("", ","), "label": (".", "."), "matrix": (";", ";")}
"""Style -> (prefix, separator of exploded items)."""
_QUERY_DELIMITERS: Final = {
    "form": ",",
    "spaceDelimited": " ",
    "pipeDelimited": "|",
    "tabDelimited": "\t",
}
"""Style -> the delimiter of items not exploded. ``tabDelimited`` is Swagger 2.0's
``collectionFormat: tsv``, which OpenAPI 3 has no style for."""
_QUERY_STYLES: Final = frozenset({*_QUERY_DELIMITERS, "deepObject"})
_DELIMITED: Final = frozenset(("spaceDelimited", "pipeDelimited", "tabDelimited"))
"""Swagger 2.0's ``ssv``, ``pipes`` and ``tsv``, which it allows in a path and a header
too (OpenAPI 3's styles do not)."""


def _named(name: str, text: str) -> str:
    """RFC 6570's ``;`` operator drops the ``=`` of an empty value."""
    return f"{name}={text}" if text else name


def _expand(style: str, explode: bool, name: str, value: object, codec: _Codec) -> str:
    """``simple``, ``label`` or ``matrix`` expansion (RFC 6570 sections 3.2.2, 5, 7)."""
    prefix, separator = _PATH_STYLES[style]
    matrix = style == "matrix"
    label = f"{codec.name(name)}=" if matrix else ""
    if isinstance(value, Mapping):
        entries = [(codec.name(key), codec.value(_item(item))) for key, item in _entries(value)]
        if not entries:
            return ""
        if explode:
            pairs = [_named(key, text) if matrix else f"{key}={text}" for key, text in entries]
            return prefix + separator.join(pairs)
        return prefix + label + ",".join(part for entry in entries for part in entry)
    if isinstance(value, list | tuple):
        items = [codec.value(_item(item)) for item in value]
        if not items:
            return ""
        if explode and matrix:
            return "".join(";" + _named(codec.name(name), text) for text in items)
        return prefix + label + (separator if explode else ",").join(items)
    text = codec.value(_scalar(value))
    return ";" + _named(codec.name(name), text) if matrix else prefix + text


def _pairs(
    style: str, explode: bool, name: str, value: object, codec: _Codec
) -> list[tuple[str, str]]:
    """``form``, ``spaceDelimited``, ``pipeDelimited``, ``tabDelimited`` or
    ``deepObject`` pairs."""
    if style == "deepObject":
        return _deep(codec.name(name), value, codec)
    if explode and isinstance(value, Mapping):
        return [(codec.name(key), codec.value(_item(item))) for key, item in _entries(value)]
    if explode and isinstance(value, list | tuple):
        return [(codec.name(name), codec.value(_item(item))) for item in value]
    text = _joined(style, value, codec)
    return [(codec.name(name), text)] if text is not None else []


def _joined(style: str, value: object, codec: _Codec) -> str | None:
    """An array's items (an object's keys and values) joined by the style's delimiter,
    or a scalar: the text of one ``form`` (or delimited) value not exploded. None for
    an empty array or object (RFC 6570's *undefined*)."""
    delimiter = _QUERY_DELIMITERS[style]
    # "," is RFC 6570's own delimiter and stays literal; " ", "|" and a tab are not
    # allowed in a URI, so they are escaped like names (a header keeps them as they are).
    joiner = delimiter if delimiter == "," else codec.name(delimiter)
    if isinstance(value, Mapping):
        flat = [codec.value(part) for key, item in _entries(value) for part in (key, _item(item))]
        return joiner.join(flat) if flat else None
    if isinstance(value, list | tuple):
        items = [codec.value(_item(item)) for item in value]
        return joiner.join(items) if items else None
    return codec.value(_scalar(value))


def _deep(prefix: str, value: object, codec: _Codec) -> list[tuple[str, str]]:
    """``prefix[key][0]=...``: objects by key, arrays by index, at any depth."""
    opening, closing = codec.name("["), codec.name("]")
    if isinstance(value, Mapping):
        keyed = [(codec.name(key), item) for key, item in _entries(value)]
    elif isinstance(value, list | tuple):
        keyed = [(str(index), item) for index, item in enumerate(value)]
    else:
        return [(prefix, codec.value(_scalar(value)))]
    pairs: list[tuple[str, str]] = []
    for key, item in keyed:
        pairs.extend(_deep(f"{prefix}{opening}{key}{closing}", item, codec))
    return pairs


def _check_style(style: str, allowed: Collection[str], where: str) -> None:
    if style not in allowed:
        raise _Invalid(f"style {style!r} is not defined for {where}")


# -- parameters --------------------------------------------------------------------------


def path_value(param: Parameter, value: object) -> str:
    """The text that replaces ``{name}`` in the path template, percent-encoded.

    Raises:
        SerializationError: the value cannot be sent (see the module's notes: empty
            values and ``.``/``..`` are refused, since they would change the path).
    """
    with _failing_as("path", param.name):
        if param.content_type is not None:
            text = _pct(_content_text(param.content_type, value))
        elif param.style in _DELIMITED:  # Swagger 2.0's ssv, tsv, pipes
            text = _joined(param.style, value, _URL) or ""
        else:
            _check_style(param.style, tuple(_PATH_STYLES), "path parameters")
            text = _expand(param.style, param.explode, param.name, value, _URL)
        if not text:
            raise _Invalid("is empty, which would change the path")
        if text in (".", ".."):
            raise _Invalid(f"expands to {text!r}, which would change the path")
        return text


def split_path_key(key: str) -> tuple[str, list[tuple[str, str]]]:
    """A ``paths`` key as the path template it is sent to and the query pairs it fixes
    (percent-encoded like parameters'): ``/jobs?op=LIST#x`` -> ``/jobs``, ``[("op",
    "LIST")]``. See the module's notes."""
    key = key.split("#", 1)[0]
    template, _, query = key.partition("?")
    pairs: list[tuple[str, str]] = []
    for piece in query.split("&"):
        name, _, text = piece.partition("=")
        if name:
            pairs.append((_pct(unquote(name)), _pct(unquote(text))))
    return template or "/", pairs


def query_pairs(param: Parameter, value: object) -> list[tuple[str, str]]:
    """Percent-encoded ``(name, value)`` pairs, in order, to be joined as
    ``"&".join(f"{k}={v}" for k, v in pairs)``.

    Raises:
        SerializationError: the value cannot be sent.
    """
    with _failing_as("query", param.name):
        if param.content_type is not None:
            return [(_pct(param.name), _pct(_content_text(param.content_type, value)))]
        _check_style(param.style, _QUERY_STYLES, "query parameters")
        codec = _URL_RESERVED if param.allow_reserved else _URL
        pairs = _pairs(param.style, param.explode, param.name, value, codec)
        if not pairs and param.required:
            raise _Invalid("is required, and an empty array or object sends nothing")
        return pairs


_NOT_FIELD_TEXT: Final = re.compile(r"[^\t\x20-\x7e]")
_NOT_COOKIE_OCTET: Final = re.compile(r"[^\x21\x23-\x2b\x2d-\x3a\x3c-\x5b\x5d-\x7e]")


def _field_text(text: str) -> str:
    """A header field value: visible ASCII, spaces and tabs, trimmed (RFC 9110 5.5)."""
    bad = _NOT_FIELD_TEXT.search(text)
    if bad is not None:
        char = bad.group()
        if char in "\r\n":
            raise _Invalid("contains a line break")
        if char < " " or char == "\x7f":
            raise _Invalid(f"contains the control character U+{ord(char):04X}")
        raise _Invalid(f"contains {char!r}, which is not ASCII; header values are ASCII")
    return text.strip(" \t")


def header_value(param: Parameter, value: object) -> str:
    """The header's value (``simple`` style), never percent-encoded.

    Raises:
        SerializationError: the value holds a line break, another control character or
            a non-ASCII character.
    """
    with _failing_as("header", param.name):
        if param.content_type is not None:
            text = _content_text(param.content_type, value, ascii_only=True)
        elif param.style in _DELIMITED:  # Swagger 2.0's ssv, tsv, pipes
            text = _joined(param.style, value, _RAW) or ""
        else:
            _check_style(param.style, ("simple",), "headers")
            text = _expand("simple", param.explode, param.name, value, _RAW)
        return _field_text(text)


def cookie_pairs(param: Parameter, value: object) -> list[tuple[str, str]]:
    """``(name, value)`` pairs for the ``Cookie`` header, to be joined as
    ``"; ".join(f"{k}={v}" for k, v in pairs)``.

    Raises:
        SerializationError: the value cannot be sent.
    """
    with _failing_as("cookie", param.name):
        if param.content_type is not None:
            text = _content_text(param.content_type, value)
            if is_json(param.content_type):
                return [(_pct(param.name), _pct(text))]
            bad = _NOT_COOKIE_OCTET.search(text)
            if bad is not None:
                raise _Invalid(f"contains {bad.group()!r}, which a cookie value cannot hold")
            return [(_pct(param.name), text)]
        _check_style(param.style, ("form",), "cookies")
        return _pairs("form", param.explode, param.name, value, _URL)


# -- bodies ------------------------------------------------------------------------------


def is_raw(content_type: str) -> bool:
    """Whether a body of this media type is sent as the text or file the model gives
    (anything but JSON, form and multipart types, which are built from a JSON value)."""
    kind = essence(content_type)
    return not (
        is_json(kind)
        or kind == "application/x-www-form-urlencoded"
        or kind.startswith("multipart/")
    )


def encode_body(media: MediaType, value: object, *, resolve: Resolve | None = None) -> EncodedBody:
    """The request body for ``value`` sent as ``media``.

    Args:
        media: The media type the body is sent as, with its schema and encodings.
        value: The body, as the model gave it (``bytes`` also accepted for binary data).
        resolve: Follows a schema's top-level ``$ref``; needed for form and multipart
            bodies whose schemas use references. None: schemas are used as they are.

    Raises:
        SerializationError: the value cannot be sent as this media type.
    """
    kind = essence(media.content_type)
    if is_json(kind):
        return EncodedBody(content=encode_json(value), content_type=media.content_type)
    with _failing_as("body", ""):
        if kind == "application/x-www-form-urlencoded":
            return _form_body(media, value)
        if kind.startswith("multipart/"):
            return _multipart_body(media, value, _Schemas(resolve))
        return _other_body(media.content_type, value)


def encode_json(value: object) -> bytes:
    """A JSON body's bytes for ``value`` (compact UTF-8), as `encode_body` sends any JSON
    media type.

    Raises:
        SerializationError: the value cannot be written as JSON.
    """
    with _failing_as("body", ""):
        return _encode_text(_json(value))


def _properties(value: object, media_type: str) -> list[tuple[str, object]]:
    if not isinstance(value, Mapping):
        raise _Invalid(f"must be an object to be sent as {essence(media_type)}")
    return [(name, item) for name, item in _entries(value) if item is not None]


def _styled(encoding: Encoding) -> bool:
    """Whether the Encoding Object asks for RFC 6570-style serialization."""
    return encoding.style is not None or encoding.explode is not None or encoding.allow_reserved


def _style_of(encoding: Encoding) -> tuple[str, bool]:
    style = encoding.style or "form"
    _check_style(style, _QUERY_STYLES, "body properties")
    return style, encoding.explode if encoding.explode is not None else style == "form"


def _form_body(media: MediaType, value: object) -> EncodedBody:
    if isinstance(value, str):  # the form's text itself (a spec declaring a string)
        return EncodedBody(content=_encode_text(value), content_type=media.content_type)
    pairs: list[tuple[str, str]] = []
    for name, item in _properties(value, media.content_type):
        with _blame(name):
            pairs.extend(_form_property(name, item, media.encoding.get(name)))
    content = "&".join(f"{key}={text}" for key, text in pairs)
    return EncodedBody(content=content.encode("ascii"), content_type=media.content_type)


def _form_property(name: str, value: object, encoding: Encoding | None) -> list[tuple[str, str]]:
    if encoding is not None and _styled(encoding):
        style, explode = _style_of(encoding)
        codec = _FORM_RESERVED if encoding.allow_reserved else _FORM
        return _pairs(style, explode, name, value, codec)
    if encoding is not None and encoding.content_type:
        content_type = _alternatives(encoding.content_type)[0]
        return [(_pct_form(name), _pct_form(_content_text(content_type, value)))]
    if isinstance(value, list | tuple) and not any(
        isinstance(item, Mapping | list | tuple) for item in value
    ):
        return _pairs("form", True, name, value, _FORM)
    return _deep(_pct_form(name), value, _FORM)


def _other_body(content_type: str, value: object) -> EncodedBody:
    kind = essence(content_type)
    declared = [] if kind == "*/*" else [content_type]
    if isinstance(value, bytes | Mapping):
        file = _file(value)
        return EncodedBody(content=file.content, content_type=_pick_type(file, declared))
    if isinstance(value, list | tuple):
        raise _Invalid(f"must be a string to be sent as {kind}, not an array")
    if "*" not in kind:
        chosen = content_type
    else:
        chosen = "text/plain" if kind.startswith("text/") else "application/octet-stream"
    charset = _charset(chosen)
    if charset is None and kind.startswith("text/"):
        chosen += "; charset=utf-8"
    return EncodedBody(
        content=_encode_text(_scalar(value), charset or "utf-8"), content_type=chosen
    )


# -- files -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _File:
    content: bytes
    filename: str | None = None
    content_type: str | None = None


_FILE_KEYS: Final = frozenset({"content", "content_base64", "filename", "content_type"})
_FILE_SHAPE: Final = (
    "a file is text or an object with 'content' (text) or 'content_base64',"
    " and optionally 'filename' and 'content_type'"
)
_MEDIA_TYPE: Final = re.compile(
    r"[!#$%&'*+.^_`|~0-9A-Za-z-]+/[!#$%&'*+.^_`|~0-9A-Za-z-]+([ \t]*;[\t\x20-\x7e]*)?"
)
"""A media type as a header value carries it: visible ASCII, spaces and tabs (never a
line break, which would start another header)."""


def _file(value: object) -> _File:
    if isinstance(value, bytes):
        return _File(value)
    if not isinstance(value, Mapping):
        return _File(_encode_text(_scalar(value)))
    unknown = sorted(str(key) for key in value if key not in _FILE_KEYS)
    if unknown:
        raise _Invalid(f"{_FILE_SHAPE}; unexpected: {', '.join(unknown)}")
    text, encoded = value.get("content"), value.get("content_base64")
    if (text is None) == (encoded is None):
        raise _Invalid(f"{_FILE_SHAPE}; give exactly one of 'content' and 'content_base64'")
    if isinstance(text, str):
        content = _encode_text(text)
    elif isinstance(encoded, str):
        content = _unbase64(encoded)
    else:
        raise _Invalid(f"{_FILE_SHAPE}; the content must be a string")
    filename = value.get("filename")
    content_type = value.get("content_type")
    if not isinstance(filename, str | None) or not isinstance(content_type, str | None):
        raise _Invalid(f"{_FILE_SHAPE}; 'filename' and 'content_type' must be strings")
    if content_type is not None and not _MEDIA_TYPE.fullmatch(content_type):
        raise _Invalid(f"content_type {content_type!r} is not a media type")
    return _File(content, filename, content_type)


def _unbase64(text: str) -> bytes:
    # Accept what models write: line breaks, missing padding, the URL-safe alphabet.
    compact = "".join(text.split()).replace("-", "+").replace("_", "/")
    compact += "=" * (-len(compact) % 4)
    try:
        return base64.b64decode(compact, validate=True)
    except ValueError:  # binascii.Error, or non-ASCII text
        raise _Invalid("content_base64 is not valid base64") from None


def _pick_type(file: _File, declared: Sequence[str]) -> str:
    """The file's own type if the operation accepts it, else the first concrete
    declared one, else ``application/octet-stream``."""
    if file.content_type is not None:
        if not declared or any(_within(file.content_type, media) for media in declared):
            return file.content_type
        raise _Invalid(
            f"content_type {file.content_type!r} is not accepted here ({', '.join(declared)})"
        )
    concrete = [media for media in declared if "*" not in media]
    return concrete[0] if concrete else "application/octet-stream"


# -- multipart ---------------------------------------------------------------------------


class _Schemas:
    """Property schemas of a body, with top-level ``$ref``s followed."""

    def __init__(self, resolve: Resolve | None) -> None:
        self._resolve = resolve

    def follow(self, schema: object) -> Mapping[str, Any] | None:
        if not isinstance(schema, Mapping):
            return None
        return self._resolve(schema) if self._resolve is not None else schema

    def properties(self, schema: object, depth: int = 0) -> dict[str, object]:
        """``properties``, merged over ``allOf`` members."""
        followed = self.follow(schema)
        found: dict[str, object] = {}
        if followed is None or depth > 8:
            return found
        members = followed.get("allOf")
        for member in members if isinstance(members, list) else ():
            found.update(self.properties(member, depth + 1))
        own = followed.get("properties")
        found.update(own if isinstance(own, Mapping) else {})
        return found


_TYPE_KEYWORDS: Final = frozenset(
    {
        "type", "enum", "const", "properties", "additionalProperties", "patternProperties",
        "required", "items", "prefixItems", "contains", "anyOf", "oneOf", "allOf", "not",
        "$ref", "$dynamicRef", "if", "pattern", "minimum", "maximum", "exclusiveMinimum",
        "exclusiveMaximum", "multipleOf", "minItems", "maxItems", "uniqueItems",
        "minProperties", "maxProperties", "format", "contentEncoding",
    }
)  # fmt: skip
"""Keywords that say what JSON value a schema holds; a schema with none of them (or
``contentMediaType`` alone) describes raw binary data (the spec's *absent* type)."""


def is_file(schema: Mapping[str, Any]) -> bool:
    """Whether a multipart part or a raw body with this schema (``$ref`` followed) is a
    file: raw bytes, which the model gives as a file object. The one rule: the tool's
    declaration asks for a file object exactly where this says so, and the encoder sends
    raw bytes exactly there. Bytes in a ``contentEncoding`` (base64, ...) are text on the
    wire, which the model writes: never a file, even with ``format: binary``."""
    if "contentEncoding" in schema:
        return False
    if schema.get("format") == "binary":
        return True
    return "contentMediaType" in schema or not _TYPE_KEYWORDS.intersection(schema)


def _is_base64(schema: Mapping[str, Any]) -> bool:
    return schema.get("format") == "byte" or "contentEncoding" in schema


@dataclass(frozen=True)
class _Part:
    name: str
    content: bytes
    content_type: str | None = None
    filename: str | None = None
    headers: tuple[tuple[str, str], ...] = ()

    def head(self) -> bytes:
        disposition = f'form-data; name="{_quoted(self.name)}"'
        if self.filename is not None:
            disposition += f'; filename="{_quoted(self.filename)}"'
        lines = [f"Content-Disposition: {disposition}"]
        if self.content_type is not None:
            lines.append(f"Content-Type: {self.content_type}")
        lines.extend(f"{key}: {text}" for key, text in self.headers)
        return "".join(line + "\r\n" for line in lines).encode()


def _quoted(text: str) -> str:
    """A name or filename inside a quoted-string, escaped as browsers do (WHATWG HTML
    "multipart/form-data encoding algorithm")."""
    for char in text:
        if (char < " " and char not in "\t\r\n") or char == "\x7f":
            raise _Invalid(f"the name {text!r} contains the control character U+{ord(char):04X}")
        if "\ud800" <= char <= "\udfff":
            raise _Invalid(f"the name {text!r} contains a lone surrogate, which is not text")
    return text.replace('"', "%22").replace("\r", "%0D").replace("\n", "%0A")


def _multipart_body(media: MediaType, value: object, schemas: _Schemas) -> EncodedBody:
    declared = schemas.properties(media.schema)
    boundary = "toolsets-" + os.urandom(16).hex()
    delimiter = f"--{boundary}\r\n".encode()
    chunks: list[bytes] = []
    for name, item in _properties(value, media.content_type):
        with _blame(name):
            schema = schemas.follow(declared.get(name))
            for part in _parts(name, item, schema, media.encoding.get(name), schemas):
                chunks.extend((delimiter, part.head(), b"\r\n", part.content, b"\r\n"))
    chunks.append(f"--{boundary}--\r\n".encode())
    content = b"".join(chunks)
    params = [
        piece.strip()
        for piece in media.content_type.split(";")
        if not piece.strip().lower().startswith("boundary=")
    ]
    return EncodedBody(content=content, content_type="; ".join([*params, f"boundary={boundary}"]))


def _parts(
    name: str,
    value: object,
    schema: Mapping[str, Any] | None,
    encoding: Encoding | None,
    schemas: _Schemas,
) -> list[_Part]:
    items = schemas.follow(schema.get("items")) if schema is not None else None
    files = schema is not None and (is_file(schema) or (items is not None and is_file(items)))
    if encoding is not None and _styled(encoding) and not files:  # a file has no style
        style, explode = _style_of(encoding)
        pairs = _pairs(style, explode, name, value, _RAW)
        return [_Part(key, _encode_text(text)) for key, text in pairs]
    declared = _alternatives(encoding.content_type) if encoding and encoding.content_type else []
    headers = _part_headers(encoding, schemas) if encoding is not None else ()
    if isinstance(value, list | tuple) and not (declared and is_json(declared[0])):
        return [_part(name, item, items, declared, headers) for item in value]
    return [_part(name, value, schema, declared, headers)]


def _part(
    name: str,
    value: object,
    schema: Mapping[str, Any] | None,
    declared: list[str],
    headers: tuple[tuple[str, str], ...],
) -> _Part:
    first = declared[0] if declared else None
    concrete = first if first is not None and "*" not in first else None
    if first is not None and is_json(first):
        return _Part(name, _encode_text(_json(value)), first, headers=headers)
    if schema is not None and _is_base64(schema):
        # The base64 text is what goes on the wire; bytes (from Python callers) get encoded.
        if isinstance(value, bytes):
            urlsafe = schema.get("contentEncoding") == "base64url"
            wire = (base64.urlsafe_b64encode if urlsafe else base64.b64encode)(value)
        else:
            wire = _encode_text(_scalar(value))
        return _Part(name, wire, concrete or "application/octet-stream", headers=headers)
    if (schema is not None and is_file(schema)) or isinstance(value, bytes):
        file = _file(value)
        media_type = schema.get("contentMediaType") if schema is not None else None
        accepted = declared or ([media_type] if isinstance(media_type, str) else [])
        return _Part(name, file.content, _pick_type(file, accepted), file.filename or name, headers)
    if first is None and isinstance(value, Mapping | list | tuple):
        return _Part(name, _encode_text(_json(value)), "application/json", headers=headers)
    text = _content_text(first or "text/plain", value)
    charset = _charset(concrete) if concrete is not None else None
    return _Part(name, _encode_text(text, charset or "utf-8"), concrete, headers=headers)


_TOKEN: Final = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_UNSET: Final = object()


def _part_headers(encoding: Encoding, schemas: _Schemas) -> tuple[tuple[str, str], ...]:
    """The declared part headers whose schema fixes their value; the model has no way
    to give the others."""
    headers: list[tuple[str, str]] = []
    for header_name, declared in encoding.headers.items():
        header = schemas.follow(declared)
        if header is None or header_name.lower() in ("content-type", "content-disposition"):
            continue
        schema = schemas.follow(header.get("schema")) or {}
        fixed = schema.get("const", schema.get("default", _UNSET))
        enum = schema.get("enum")
        if fixed is _UNSET and isinstance(enum, list) and len(enum) == 1:
            fixed = enum[0]
        if fixed is _UNSET:
            continue
        if not _TOKEN.fullmatch(header_name):
            raise _Invalid(f"the part header name {header_name!r} is not a valid header name")
        text = _expand("simple", header.get("explode") is True, header_name, fixed, _RAW)
        headers.append((header_name, _field_text(text)))
    return tuple(headers)
