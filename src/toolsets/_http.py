"""httpx2's errors, mapped once into the tree of `toolsets._errors`.

Every place that sends with httpx2 (an OpenAPI call, a spec fetch, OpenID Connect
discovery, a token request, a model's API) wraps the send in `map_http_errors`: a request
that fails in transport (no connection, no answer in time, a broken protocol, a body that
cannot be decoded) becomes a `ConnectionError` naming the server, with httpx2's exception
as its ``__cause__``. Like httpx's own ``map_httpcore_exceptions``, it is one table,
most specific class first; a test checks that every request error httpx2 defines has its
row.

Messages never carry what a URL may hide a secret in (user info, query, fragment: see
`safe_url`), and httpx2's own text is shown with the given secrets masked.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Iterable
from typing import Final

import httpx2

from toolsets._auth import redact
from toolsets._errors import ConnectionError
from toolsets._urls import safe_url

__all__ = [
    "HTTP_ERRORS",
    "NOT_SENT",
    "essence",
    "is_json",
    "is_text",
    "map_http_errors",
    "retry_after",
]

HTTP_ERRORS: Final[tuple[tuple[type[httpx2.RequestError], str], ...]] = (
    (httpx2.ConnectTimeout, "no answer in time (connecting)"),
    (httpx2.ReadTimeout, "no answer in time"),
    (httpx2.WriteTimeout, "no answer in time (sending)"),
    (httpx2.PoolTimeout, "no answer in time (waiting for a free connection)"),
    (httpx2.TimeoutException, "no answer in time"),
    (httpx2.ConnectError, "cannot connect"),
    (httpx2.ReadError, "the connection broke while reading"),
    (httpx2.WriteError, "the connection broke while sending"),
    (httpx2.CloseError, "the connection failed to close"),
    (httpx2.NetworkError, "a network error"),
    (httpx2.LocalProtocolError, "the request cannot be sent as HTTP"),
    (httpx2.RemoteProtocolError, "the server broke the HTTP protocol"),
    (httpx2.ProtocolError, "an HTTP protocol error"),
    (httpx2.ProxyError, "the proxy failed"),
    (httpx2.UnsupportedProtocol, "not an http(s) URL"),
    (httpx2.SSEError, "a malformed event stream"),
    (httpx2.TransportError, "a transport error"),
    (httpx2.DecodingError, "the answer's content encoding is broken"),
    (httpx2.TooManyRedirects, "too many redirects"),
    (httpx2.RequestError, "the request failed"),
)
"""httpx2's request errors, each with what went wrong in words, most specific first
(the first row whose class matches is used)."""

NOT_SENT: Final = (httpx2.ConnectError, httpx2.ConnectTimeout, httpx2.PoolTimeout)
"""httpx2's errors raised before a request's first byte was sent (no connection)."""

MAX_DETAIL = 200
"""Characters of httpx2's own message kept in ours."""


def essence(content_type: str) -> str:
    """A media type's ``type/subtype``, lower case, without parameters (a ``Content-Type``
    header's value, or a media type a spec declares): the one parser of media types."""
    return content_type.split(";", 1)[0].strip().lower()


def is_json(content_type: str) -> bool:
    """Whether the media type is JSON (``*/json`` or ``*/*+json``)."""
    subtype = essence(content_type).partition("/")[2]
    return subtype == "json" or subtype.endswith("+json")


def is_text(content_type: str) -> bool:
    """Whether the media type is text a person or a model reads: ``text/*``, JSON or XML
    (``*/xml``, ``*/*+xml``)."""
    kind = essence(content_type)
    subtype = kind.partition("/")[2]
    return kind.startswith("text/") or is_json(kind) or subtype == "xml" or subtype.endswith("+xml")


def _reason(error: httpx2.RequestError) -> str:
    for kind, reason in HTTP_ERRORS:
        if isinstance(error, kind):
            return reason
    raise AssertionError("httpx2.RequestError ends the table")  # pragma: no cover


class map_http_errors:  # lower case: used as a function, with map_http_errors(...)
    """Raise httpx2's request errors from inside as `ConnectionError`.

    The message reads ``"{what} {safe_url(url)}: {reason} ({ExceptionName}: {detail})"``,
    e.g. ``"GET https://api.example/v1/items: no answer in time (ReadTimeout: timed
    out)"``; httpx2's own text (``detail``) is cut at `MAX_DETAIL` characters, with
    ``secrets`` masked (as is, percent-encoded or JSON-escaped). (A class rather than a
    generator: it wraps every request of every call.)

    Args:
        what: What was being done or asked, e.g. ``"GET"``, ``"the token endpoint"``.
        url: Where the request went.
        target: The error's ``target`` (the server, as errors name it); by default
            `safe_url` of ``url``.
        secrets: What the request carried that httpx2's text must not show (a key, a
            client secret).
    """

    __slots__ = ("secrets", "target", "url", "what")

    def __init__(
        self,
        what: str,
        url: str | httpx2.URL,
        *,
        target: str | None = None,
        secrets: Iterable[str | None] = (),
    ) -> None:
        self.what = what
        self.url = url
        self.target = target
        self.secrets = secrets

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, error: BaseException | None, tb: object) -> None:
        if not isinstance(error, httpx2.RequestError):
            return
        name = type(error).__name__
        detail = redact(str(error), self.secrets)[:MAX_DETAIL]
        cause = f"{name}: {detail}" if detail and detail != name else name
        shown = safe_url(self.url)
        raise ConnectionError(
            f"{self.what} {shown}: {_reason(error)} ({cause})",
            target=self.target if self.target is not None else shown,
        ) from error


_MAX_RETRY_AFTER: Final = 24 * 3600.0
"""A wait longer than this, asked by a server, is taken as nonsense (ignored)."""


def retry_after(headers: httpx2.Headers) -> float | None:
    """Seconds the server asks to wait: ``retry-after-ms`` (OpenAI), else
    ``Retry-After`` as seconds or as an HTTP date (RFC 9110 §10.2.3; a date past is no
    wait); None when absent, unreadable or beyond a day."""
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) * scale
        except ValueError:
            when = _http_date(value)
            if when is None:
                continue
            seconds = when - time.time()
        if seconds == seconds and 0 <= seconds <= _MAX_RETRY_AFTER:  # not NaN
            return seconds
        if seconds < 0:
            return 0.0
    return None


def _http_date(value: str) -> float | None:
    try:
        return email.utils.parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError):
        return None
