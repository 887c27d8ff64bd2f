"""How `HttpCache` answers a request: hishel's RFC 9111 state machine (sans-I/O, it
knows no HTTP client), driven here with httpx2 requests and responses, over a store in
memory bounded in bytes (least recently used out first). Imported only when a cache is
made: it needs the ``cache`` extra (``pip install 'toolsets-ai[cache]'``).

Each entry is found by a key made of the identity the request carries and its URL, so
that a response is only ever given back to the caller it was sent to, and an unsafe
request (a POST, PUT, DELETE) finds the entries of its URL to invalidate (RFC 9111 §4.4).
"""

from __future__ import annotations

import hashlib
import threading
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from email.utils import formatdate
from typing import Literal

import httpx2

from toolsets._install import missing_extra

try:
    from hishel import (
        AnyState,
        AsyncBaseStorage,
        CacheMiss,
        CacheOptions,
        CouldNotBeStored,
        Entry,
        FromCache,
        Headers,
        IdleClient,
        InvalidateEntries,
        NeedRevalidation,
        NeedToBeUpdated,
        Request,
        Response,
        StoreAndUse,
    )
except ImportError as exc:
    raise missing_extra(__name__, "cache", exc) from exc

__all__ = ["Engine", "Outcome"]

Outcome = Literal["miss", "hit", "revalidated"]
"""How a response was had: sent for (``miss``), from the cache without asking the API
(``hit``), or from the cache after the API answered a conditional request 304
(``revalidated``)."""

_OPTIONS = CacheOptions(shared=False, supported_methods=["GET"], allow_stale=False)
"""A private cache (each identity has its own entries, so ``private`` responses and
requests with ``Authorization`` may be stored; ``s-maxage`` is for shared caches); GET
only; a stale response is never used without asking the API."""


@dataclass(slots=True)
class _Stored:
    """One response kept: what `Entry` is made from, and its size in the budget."""

    key: str
    request: Request
    status: int
    headers: Headers
    body: bytes
    size: int


class _MemoryStore(AsyncBaseStorage):
    """hishel's storage contract in memory, within ``max_bytes`` (bodies and headers);
    the entries least recently used are dropped first. Thread-safe: the lock is never
    held across an await."""

    def __init__(self, max_bytes: int, max_entry_bytes: int) -> None:
        super().__init__()
        self.max_bytes = max_bytes
        self.max_entry_bytes = max_entry_bytes
        self.size = 0
        self._entries: OrderedDict[uuid.UUID, _Stored] = OrderedDict()
        self._by_key: dict[str, list[uuid.UUID]] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    async def create_entry(
        self,
        request: Request,
        response: Response,
        key: str,
        *,
        ttl: float | None = None,
        tti: float | None = None,
    ) -> Entry:
        """The entry, with a stream that keeps the body as it is read: the entry is
        stored once the whole body was read, if it fits within ``max_entry_bytes``."""
        entry_id = uuid.uuid4()
        kept = _vary_only(request, response.headers)
        stream = response.stream
        assert isinstance(stream, AsyncIterator)

        async def saving() -> AsyncIterator[bytes]:
            chunks: list[bytes] = []
            size = 0
            async for chunk in stream:
                if size <= self.max_entry_bytes:
                    size += len(chunk)
                    chunks.append(chunk)
                yield chunk
            if size <= self.max_entry_bytes:
                self._add(entry_id, key, kept, response.status_code, response.headers, chunks)

        saved = Response(
            status_code=response.status_code, headers=response.headers, stream=saving()
        )
        return Entry(id=entry_id, request=kept, response=saved)

    def _add(
        self,
        entry_id: uuid.UUID,
        key: str,
        request: Request,
        status: int,
        headers: Headers,
        chunks: list[bytes],
    ) -> None:
        body = b"".join(chunks)
        size = len(body) + _headers_size(headers) + _headers_size(request.headers)
        size += len(request.url) + len(key)
        if size > self.max_entry_bytes:
            return
        with self._lock:
            # A newer response replaces the one kept for the same request (the same
            # values of the headers its Vary names), e.g. a 200 to a conditional request.
            for older in list(self._by_key.get(key, ())):
                if self._entries[older].request == request:
                    self._drop(older)
            self._entries[entry_id] = _Stored(key, request, status, headers, body, size)
            self._by_key.setdefault(key, []).append(entry_id)
            self.size += size
            while self.size > self.max_bytes and self._entries:
                oldest = next(iter(self._entries))
                self._drop(oldest)

    def _drop(self, entry_id: uuid.UUID) -> None:
        """Forget an entry (the lock held)."""
        stored = self._entries.pop(entry_id, None)
        if stored is None:
            return
        self.size -= stored.size
        ids = self._by_key.get(stored.key, [])
        if entry_id in ids:
            ids.remove(entry_id)
        if not ids:
            self._by_key.pop(stored.key, None)

    async def get_entries(self, key: str) -> list[Entry]:
        """The entries of ``key``, each now the most recently used."""
        with self._lock:
            found: list[Entry] = []
            for entry_id in self._by_key.get(key, ()):
                stored = self._entries[entry_id]
                self._entries.move_to_end(entry_id)
                response = Response(
                    status_code=stored.status,
                    headers=Headers(_lists(stored.headers)),
                    stream=_once(stored.body),
                )
                found.append(Entry(id=entry_id, request=stored.request, response=response))
            return found

    async def update_headers(self, id: uuid.UUID, headers: Headers) -> None:
        """Replace an entry's response headers (after a 304 freshened it)."""
        with self._lock:
            stored = self._entries.get(id)
            if stored is None:
                return
            grown = _headers_size(headers) - _headers_size(stored.headers)
            stored.headers = headers
            stored.size += grown
            self.size += grown
            while self.size > self.max_bytes and self._entries:
                self._drop(next(iter(self._entries)))

    async def remove_entry(self, id: uuid.UUID) -> None:
        with self._lock:
            self._drop(id)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._by_key.clear()
            self.size = 0


class Engine:
    """Answers requests from the cache or by sending them (`send`)."""

    def __init__(self, max_bytes: int, max_entry_bytes: int) -> None:
        self.store = _MemoryStore(max_bytes, max_entry_bytes)

    async def send(
        self,
        request: httpx2.Request,
        identity: bytes,
        send: Callable[[httpx2.Request], Awaitable[httpx2.Response]],
    ) -> tuple[httpx2.Response, Outcome]:
        """The response to ``request`` (sent with ``send`` if the cache cannot answer),
        and how it was had. ``identity`` is a digest of the credentials it carries."""
        url = str(request.url)  # built from the spec: never a fragment
        key = hashlib.sha256(identity + b" " + url.encode()).hexdigest()
        asked = Request(method=request.method, url=url, headers=_from_httpx2(request.headers))
        store = self.store
        upstream: httpx2.Response | None = None
        outcome: Outcome = "miss"
        state: AnyState = IdleClient(options=_OPTIONS).next(asked, await store.get_entries(key))
        while True:
            if isinstance(state, CacheMiss | NeedRevalidation):
                revalidating = isinstance(state, NeedRevalidation)
                response = await send(_with_headers(request, state.request.headers))
                if revalidating and response.status_code == 304:
                    await response.aread()  # the stored body is given: this one is done
                    await response.aclose()
                    outcome = "revalidated"
                else:
                    upstream = response
                    outcome = "miss"
                state = state.next(_to_internal(response))
            elif isinstance(state, StoreAndUse):
                entry = await store.create_entry(asked, state.response, key)
                return _to_httpx2(entry.response, request, upstream), outcome
            elif isinstance(state, CouldNotBeStored):
                return _to_httpx2(state.response, request, upstream), outcome
            elif isinstance(state, FromCache):
                return _to_httpx2(state.entry.response, request, upstream), (
                    "hit" if outcome == "miss" else outcome
                )
            elif isinstance(state, NeedToBeUpdated):
                for updating in state.updating_entries:
                    await store.update_headers(updating.id, updating.response.headers)
                state = state.next()
            elif isinstance(state, InvalidateEntries):
                for entry_id in state.entry_ids:
                    await store.remove_entry(entry_id)
                state = state.next()
            else:  # pragma: no cover - IdleClient comes first only
                raise AssertionError(f"unexpected cache state {state!r}")


def _lists(headers: Headers) -> dict[str, list[str]]:
    return {name: list(headers.get_list(name) or []) for name in headers}


def _headers_size(headers: Headers) -> int:
    return sum(len(name) + sum(len(v) for v in headers.get_list(name) or []) for name in headers)


def _vary_only(request: Request, response_headers: Headers) -> Request:
    """``request`` as the entry keeps it: only the headers the response's ``Vary``
    names (what matching a later request needs), so that no credential header is kept
    beyond the one call unless the API varies on it."""
    named = {name.strip().lower() for name in response_headers.get("vary", "").split(",")}
    kept = {name: values for name, values in _lists(request.headers).items() if name in named}
    return Request(method=request.method, url=request.url, headers=Headers(kept))


def _from_httpx2(headers: httpx2.Headers) -> Headers:
    grouped: dict[str, list[str]] = {}
    for name, value in headers.multi_items():
        grouped.setdefault(name.lower(), []).append(value)
    return Headers(grouped)


def _with_headers(request: httpx2.Request, wanted: Headers) -> httpx2.Request:
    """``request``, with the headers the state machine added (``If-None-Match``,
    ``If-Modified-Since`` of a conditional request): a new request, the caller's own is
    left as it was."""
    added = [
        (name.encode(), value.encode())
        for name in wanted
        for value in wanted.get_list(name) or []
        if request.headers.get(name) != value
    ]
    if not added:
        return request
    names = {name for name, _ in added}
    kept = [(name, value) for name, value in request.headers.raw if name.lower() not in names]
    return httpx2.Request(
        request.method,
        request.url,
        headers=[*kept, *added],
        stream=request.stream,
        extensions=request.extensions,
    )


def _to_internal(response: httpx2.Response) -> Response:
    """An API's response for the state machine: its body read as it arrives (still
    encoded as sent), a ``Date`` added if it has none (RFC 9110 §6.6.1: a cache records
    when it received it, and the age of what it keeps is counted from it)."""
    headers = _from_httpx2(response.headers)
    headers.pop("transfer-encoding", None)  # the body is kept whole
    if "date" not in headers:
        headers["date"] = formatdate(usegmt=True)
    if not response.is_stream_consumed:
        return Response(
            status_code=response.status_code, headers=headers, stream=response.aiter_raw()
        )
    # Read already (a transport that answers with its body in hand: httpx2.MockTransport,
    # a client's event hook), and decoded: kept as it now is.
    headers.pop("content-encoding", None)
    headers.pop("content-length", None)
    headers["content-length"] = str(len(response.content))
    return Response(
        status_code=response.status_code, headers=headers, stream=_once(response.content)
    )


def _to_httpx2(
    response: Response, request: httpx2.Request, upstream: httpx2.Response | None
) -> httpx2.Response:
    stream = response.stream
    assert isinstance(stream, AsyncIterator)
    return httpx2.Response(
        status_code=response.status_code,
        headers=[
            (n.encode(), v.encode())
            for n in response.headers
            for v in response.headers.get_list(n) or []
        ],
        stream=_Body(stream, upstream),
        request=request,
    )


class _Body(httpx2.AsyncByteStream):
    """A body from the cache or from the API (read through the store, which keeps it);
    closing it closes the API's response."""

    def __init__(self, chunks: AsyncIterator[bytes], upstream: httpx2.Response | None) -> None:
        self._chunks = chunks
        self._upstream = upstream

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._chunks:
            yield chunk

    async def aclose(self) -> None:
        close = getattr(self._chunks, "aclose", None)
        if close is not None:
            await close()
        if self._upstream is not None:
            await self._upstream.aclose()


async def _once(body: bytes) -> AsyncIterator[bytes]:
    yield body
