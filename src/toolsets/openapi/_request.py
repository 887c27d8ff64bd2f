"""`RequestBuilder`: the HTTP request for one operation's (checked) arguments, exactly as
the spec says: the path, the query, headers and cookies, the body, the credentials.

Pure: nothing is sent and nothing waited on (the client only builds the request, with its
timeouts and default headers). Sending is `toolsets.openapi._api`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import httpx2

from toolsets._auth import AuthCredential
from toolsets._errors import ToolCallError
from toolsets._http import is_json
from toolsets.openapi._model import Operation, Parameter
from toolsets.openapi._operations import Spec
from toolsets.openapi._schema import Argument, OperationSchema
from toolsets.openapi._security import Requirement, apply_security
from toolsets.openapi._serialize import (
    SerializationError,
    cookie_pairs,
    encode_body,
    encode_json,
    header_value,
    path_value,
    query_pairs,
    split_path_key,
)

__all__ = ["RequestBuilder"]

Follow = Callable[[Mapping[str, Any], str], Mapping[str, Any]]
"""Follows a schema's top-level ``$ref``s (in the document at a base URI)."""


@dataclass
class _Parts:
    """A request being built."""

    path: str
    key_query: list[tuple[str, str]]
    """The query pairs the ``paths`` key itself fixes."""
    query: list[tuple[str, str]] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=dict)
    cookies: list[tuple[str, str]] = field(default_factory=list)
    body: Any = None
    lifted: dict[str, Any] = field(default_factory=dict)
    """Body properties given as arguments of their own."""
    in_url: dict[tuple[str, str], int] = field(default_factory=dict)
    """How much of the URL each argument makes (to blame the longest when it is too long)."""
    content: bytes | None = None


class RequestBuilder:
    """How one operation's arguments become its HTTP request.

    Args:
        name: The tool's name (for errors).
        operation: The operation.
        schema: The model's view of it (which argument goes where).
        spec: The spec (its security schemes).
        base_url: Where requests go.
        headers: Headers for every request, unless the call sets one of the same name.
        follow: Follows a body schema's ``$ref``s (for the body encoder).
    """

    def __init__(
        self,
        name: str,
        operation: Operation,
        schema: OperationSchema,
        spec: Spec,
        *,
        base_url: str,
        headers: Mapping[str, str],
        follow: Follow,
    ) -> None:
        self._name = name
        self._operation = operation
        self._schema = schema
        self._spec = spec
        self._base_url = base_url
        self._headers = headers
        self._has_headers = bool(headers)
        self._follow = follow
        by_place: dict[tuple[str, str], Parameter] = {
            (p.location, p.name): p for p in operation.parameters
        }
        self._routing: list[tuple[str, Argument, Parameter | None]] = [
            (key, argument, by_place.get((argument.location, argument.name)))
            for key, argument in schema.arguments.items()
        ]
        """Each argument, where it goes, and its parameter (None for the body)."""
        self._route, self._key_query = split_path_key(operation.path)
        """The path template sent to, and the query pairs the path key itself fixes."""
        media = schema.media_type
        self._json_body = media is not None and is_json(media.content_type)
        """The body is JSON: encoded at once (the other media types need their schema)."""

    def build(
        self,
        args: Mapping[str, Any],
        credentials: Mapping[str, AuthCredential | str],
        requirement: Requirement | None,
        client: httpx2.AsyncClient,
    ) -> httpx2.Request:
        """The request for ``args`` (already checked) with ``credentials`` for
        ``requirement``, built by ``client`` (its timeouts and default headers: some APIs,
        GitHub's among them, refuse requests without a User-Agent).

        Raises:
            SerializationError: a value cannot be sent as the spec says.
            ToolCallError: the base URL is not a URL.
        """
        parts = _Parts(path=self._route, key_query=self._key_query)
        self._place_arguments(args, parts)
        self._encode_body(parts)
        url = self._url(parts, credentials, requirement)
        if parts.cookies:
            parts.headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in parts.cookies)
        self._add_fixed_headers(parts.headers)
        try:
            return client.build_request(
                self._operation.method.upper(), url, headers=parts.headers, content=parts.content
            )
        except httpx2.InvalidURL as error:
            raise self._url_error(error, parts, url) from error

    def argument_of(self, error: SerializationError) -> str:
        """The argument (as the model named it) a value that cannot be sent came from."""
        keys: dict[tuple[str, str], str] = {
            (a.location, a.name): key for key, a in self._schema.arguments.items()
        }
        if error.location != "body":
            return keys.get((error.location, error.field), error.field)
        lifted = keys.get(("body_property", error.field))
        if lifted is not None:
            return lifted
        whole = keys.get(("body", ""), "body")
        return f"{whole}.{error.field}" if error.field else whole

    def _place_arguments(self, args: Mapping[str, Any], parts: _Parts) -> None:
        """Each argument given, in the path, query, a header, a cookie or the body."""
        for key, argument, param in self._routing:
            if key not in args:
                continue
            value = args[key]
            if param is None:  # the body, whole or one lifted property
                if argument.location == "body":
                    parts.body = value
                else:
                    parts.lifted[argument.name] = value
            elif param.location == "path":
                _place_in_path(param, value, parts)
            elif param.location == "query":
                pairs = query_pairs(param, value)
                parts.in_url[param.location, param.name] = sum(
                    len(k) + len(v) + 2 for k, v in pairs
                )
                parts.query.extend(pairs)
            elif param.location == "header":
                parts.headers[param.name] = header_value(param, value)
            else:
                parts.cookies.extend(cookie_pairs(param, value))
        if self._schema.extra_to_body:  # what the body takes besides its properties
            taken = self._schema.arguments
            parts.lifted.update((key, value) for key, value in args.items() if key not in taken)

    def _encode_body(self, parts: _Parts) -> None:
        """The body's bytes and ``Content-Type``, when there is one to send."""
        media = self._schema.media_type
        if media is None:
            return
        body = parts.lifted if parts.lifted else parts.body
        required = self._operation.body is not None and self._operation.body.required
        if body is None and not required:
            return
        if self._json_body:
            parts.content = encode_json(body if body is not None else {})
            parts.headers["Content-Type"] = media.content_type
            return
        follow, base = self._follow, media.base
        encoded = encode_body(
            media, body if body is not None else {}, resolve=lambda schema: follow(schema, base)
        )
        parts.content = encoded.content
        parts.headers["Content-Type"] = encoded.content_type

    def _url(
        self,
        parts: _Parts,
        credentials: Mapping[str, AuthCredential | str],
        requirement: Requirement | None,
    ) -> str:
        """The URL: the base, the path, the query; the credentials go where their
        schemes say (a key in the query is added here, headers and cookies to ``parts``)."""
        query = parts.query
        if parts.key_query:
            given = {name for name, _ in query}
            query[:0] = [pair for pair in parts.key_query if pair[0] not in given]
        url = self._base_url + parts.path
        if query:
            url += "?" + "&".join(f"{k}={v}" for k, v in query)
        if requirement:
            security_query = apply_security(
                requirement, self._spec, credentials, parts.headers, parts.cookies
            )
            if security_query:
                url += ("&" if "?" in url else "?") + "&".join(
                    f"{k}={v}" for k, v in security_query
                )
        return url

    def _add_fixed_headers(self, headers: dict[str, str]) -> None:
        """The toolset's ``headers=``, unless the call set one of the same name."""
        if self._has_headers:
            own = {name.lower() for name in headers}
            headers.update(
                (name, value) for name, value in self._headers.items() if name.lower() not in own
            )

    def _url_error(
        self, error: httpx2.InvalidURL, parts: _Parts, url: str
    ) -> SerializationError | ToolCallError:
        """What to raise for a URL httpx2 will not take: the base URL's fault, or else the
        model's argument that made the URL longest (the one to cut: what a URL built
        from encoded values cannot carry is their length)."""
        if not parts.in_url:
            return ToolCallError(f"invalid URL: {error}", tool_name=self._name)
        location, name = max(parts.in_url, key=parts.in_url.__getitem__)
        reason = (
            f"too long for a URL ({len(url):,} characters)"
            if "too long" in str(error)
            else f"cannot be sent in a URL: {error}"
        )
        return SerializationError(location, name, reason)


def _place_in_path(param: Parameter, value: object, parts: _Parts) -> None:
    text = path_value(param, value)
    parts.in_url[param.location, param.name] = len(text)
    parts.path = parts.path.replace(f"{{{param.name}}}", text)
    if parts.key_query:  # a path key may place a path parameter in its query
        template = quote(f"{{{param.name}}}", safe="")
        parts.key_query = [(k, v.replace(template, text)) for k, v in parts.key_query]
