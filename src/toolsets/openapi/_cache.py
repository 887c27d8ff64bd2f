"""`HttpCache`: an HTTP cache for the GET requests of OpenAPI tools (RFC 9111, private,
per identity, in memory).

The rules are hishel's (its sans-I/O RFC 9111 core; the ``cache`` extra), as a private
cache would apply them, GET only:

- A response is kept when its status is one a cache understands (200, 203, 204, 300,
  301, 308, 404, 405, 410, 414, 501 — with a freshness lifetime or a validator), unless
  it says ``Cache-Control: no-store``; ``private`` ones are kept (each identity has its
  own entries), ``s-maxage`` is for shared caches and is not read.
- It is fresh for ``max-age`` seconds (else until ``Expires``; else, for a response
  with ``Last-Modified``, a tenth of its age, the heuristic of RFC 9111 §4.2.2), counted
  from its ``Date`` (added when it has none). A fresh response answers the call without
  asking the API; ``Cache-Control: no-cache`` makes it ask every time.
- A stale response with an ``ETag`` or ``Last-Modified`` is checked with a conditional
  request (``If-None-Match`` / ``If-Modified-Since``): a 304 gives the kept body back
  (its headers freshened), anything else replaces it.
- ``Vary`` is honoured: the request headers it names must match those of the request
  that was answered (``Vary: *`` never matches).
- A request that is not safe (POST, PUT, PATCH, DELETE) answered with a success
  invalidates what is kept for its URL, for that identity (§4.4).

Entries are kept by identity and URL: the identity is a digest of the credentials a
request carries (those given to the toolset or by the user served, ``headers=``, and the
request's own ``Authorization``, ``Cookie`` and key-like headers), so one caller's
response is never given to another — two users served with their own credentials each
have their own entries. The credentials are not kept, only their digest (and a request
header the response varies on). What a ``client=`` of yours adds as it sends (its
``auth=``) is not seen: toolsets given clients with different ``auth=`` need caches of
their own.

The cache holds at most ``max_bytes`` (bodies and headers): beyond, the entries least
recently used go first. A body cut at the toolset's ``max_response_bytes`` is not kept,
nor one larger than ``max_entry_bytes``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING

import httpx2

from toolsets import _telemetry
from toolsets._auth import SECRET_NAME, AuthCredential

if TYPE_CHECKING:
    from toolsets.openapi._cached import Engine, Outcome

__all__ = ["CACHE_ATTRIBUTE", "DEFAULT_CACHE_BYTES", "HttpCache", "identity"]

DEFAULT_CACHE_BYTES = 32 * 1024 * 1024
"""`HttpCache`'s default budget: 32 MiB."""

CACHE_ATTRIBUTE = "toolsets.http.cache"
"""Noted on the call's span when the cache answered it: ``hit`` (no request was sent) or
``revalidated`` (a conditional request was answered 304)."""


class HttpCache:
    """An HTTP cache for the GET requests of OpenAPI tools: private, per identity, in
    memory, at most ``max_bytes``. Give it to `OpenApiToolset` (``cache=``); several
    toolsets may share one (entries are kept by URL).

    Args:
        max_bytes: What the cache holds at most (bodies and headers); the entries least
            recently used are dropped first.
        max_entry_bytes: The largest response kept (by default, a quarter of
            ``max_bytes``).

    Raises:
        ImportError: the ``cache`` extra is not installed.
        ValueError: a size is not a whole number above 0.
    """

    def __init__(self, max_bytes: int = DEFAULT_CACHE_BYTES, *, max_entry_bytes: int | None = None):
        _check_size("max_bytes", max_bytes)
        if max_entry_bytes is None:
            max_entry_bytes = max(1, max_bytes // 4)
        _check_size("max_entry_bytes", max_entry_bytes)
        from toolsets.openapi._cached import Engine  # needs the cache extra

        self.max_bytes = max_bytes
        self.max_entry_bytes = min(max_entry_bytes, max_bytes)
        self._engine: Engine = Engine(max_bytes, self.max_entry_bytes)
        self.hits = 0
        """Calls answered from the cache without a request sent."""
        self.revalidated = 0
        """Calls answered from the cache after a 304."""
        self.misses = 0
        """Requests that went to the API and were answered in full."""

    @property
    def size(self) -> int:
        """The bytes held now."""
        return self._engine.store.size

    def __len__(self) -> int:
        """The responses held now."""
        return len(self._engine.store)

    def clear(self) -> None:
        """Forget every response kept."""
        self._engine.store.clear()

    def __repr__(self) -> str:
        return f"HttpCache(max_bytes={self.max_bytes}, held={self.size}, responses={len(self)})"

    async def send(
        self,
        request: httpx2.Request,
        identity: bytes,
        send: Callable[[httpx2.Request], Awaitable[httpx2.Response]],
    ) -> httpx2.Response:
        """The response to ``request``: from the cache, or ``send``'s (kept when it may
        be). ``identity``: `identity`'s digest of the credentials it carries."""
        response, outcome = await self._engine.send(request, identity, send)
        self._count(outcome)
        return response

    def _count(self, outcome: Outcome) -> None:
        if outcome == "miss":
            self.misses += 1
            return
        if outcome == "hit":
            self.hits += 1
        else:
            self.revalidated += 1
        if _telemetry.current is not None:
            from opentelemetry import trace

            trace.get_current_span().set_attribute(CACHE_ATTRIBUTE, outcome)


def identity(
    request: httpx2.Request,
    credentials: Mapping[str, AuthCredential | str],
    headers: Mapping[str, str],
) -> bytes:
    """A digest of what identifies the caller of ``request``: the ``credentials`` it is
    sent with (by scheme name), the toolset's ``headers``, and the request's own headers
    that carry credentials (``Authorization``, ``Cookie``, key-like names)."""
    digest = hashlib.sha256()
    for name, credential in sorted(credentials.items()):
        if isinstance(credential, AuthCredential):
            parts = [credential.kind, credential.username or "", credential.secret]
        else:
            parts = [credential]
        digest.update(repr((name, *parts)).encode())
    for name, value in sorted(headers.items()):
        digest.update(repr(("header", name.lower(), value)).encode())
    for raw_name, raw_value in request.headers.raw:
        name = raw_name.decode("latin-1")
        if SECRET_NAME.search(name):
            digest.update(repr(("sent", name.lower(), raw_value)).encode())
    return digest.digest()


def _check_size(field: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{field} must be a whole number of bytes above 0, not {value!r}")
