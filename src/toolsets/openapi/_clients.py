"""The HTTP clients an `OpenApiToolset` sends with: one per event loop.

A pooled ``httpx2.AsyncClient`` keeps connections open, and a connection belongs to the
event loop that opened it: sent on from another loop it fails (``Event loop is closed``).
Callers that run each call in a loop of its own are common (a synchronous framework's
``invoke``, ``anyio.run`` per call, a test runner's loop per test), so each loop gets a
client of its own, pooled within that loop.

A loop's client is closed when that loop ends: an async generator holds it, and both
asyncio (``asyncio.run``, ``anyio.run``) and trio close the async generators still alive
when a run ends, while the loop can still do the closing. (A weak reference to the loop
would not do: the client's connections refer to their loop, which would then never be
collected; and once a loop is closed, its connections can no longer be closed properly.)
An asyncio loop closed by hand without ``loop.shutdown_asyncgens()`` leaves its client to
the garbage collector; it is dropped when another loop makes its client.

`LoopClients.aclose` closes every loop's client, from any loop or thread: its own loop's
directly, a running loop's in that loop, all at once, waiting at most `CLOSE_TIMEOUT`
seconds in all. An asyncio loop that is alive but not running (a synchronous caller's
loop between two ``loop.run_until_complete`` calls) would run nothing sent to it, so it
keeps its client, still held: it closes it as it ends (``loop.shutdown_asyncgens()``,
which ``asyncio.run`` and ``anyio.run`` do), or on a later `aclose` made while it runs.
Its connections are not closed from outside: they belong to that loop, whose closing
steps run only when it runs.

The same registry keeps each loop's lock for reading the spec (`LoopClients.lock`),
held weakly: a loop that only loaded a spec given as a dict made no client to close.

Settings are shared: the TLS context is made once (loading the certificates reads files,
so in a worker thread) and every client is made with it.
"""

from __future__ import annotations

import contextlib
import functools
import ssl
import threading
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from http.cookiejar import CookieJar, DefaultCookiePolicy

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
import httpx2

from toolsets._concurrency import LoopLocks
from toolsets._logs import guard_library_logs

__all__ = ["CLOSE_TIMEOUT", "ApiClients", "LoopClients", "new_client"]

CLOSE_TIMEOUT = 5.0
"""Seconds `LoopClients.aclose` waits for the clients to close (each in its loop)."""


@dataclass(eq=False)
class _Held:
    """One loop's client and the async generator that closes it when the loop ends."""

    client: httpx2.AsyncClient
    token: anyio.lowlevel.EventLoopToken
    keeper: AsyncGenerator[None, None]

    async def aclose(self) -> None:
        """Close the client (in its own loop): the keeper's ``finally`` does it."""
        await self.keeper.aclose()


class LoopClients:
    """Clients made by ``make(tls_context)``, one per event loop, closed with their loop.

    Thread-safe: loops in several threads may use one instance at once.
    """

    def __init__(self, make: Callable[[ssl.SSLContext], httpx2.AsyncClient]) -> None:
        self._make = make
        self._tls: ssl.SSLContext | None = None
        self._held: dict[object, _Held] = {}
        """By the loop's native token (the asyncio loop, or trio's run token): held
        strongly, until the loop ends (see the module's notes)."""
        self.lock = LoopLocks()
        """The running loop's lock, for work done once at a time in each loop (reading
        the spec); loops in other threads have their own. Held weakly: a loop that only
        took its lock (loading a spec given as a dict makes no client) is not kept alive
        by it."""
        self._guard = threading.Lock()  # never held across an await

    @property
    def has_tls(self) -> bool:
        """Whether the TLS context is made (`current` then never loads certificates)."""
        return self._tls is not None

    async def get(self) -> httpx2.AsyncClient:
        """The running loop's client, made the first time (the TLS context is made in a
        worker thread the first time of all)."""
        if self._tls is None:
            tls = await anyio.to_thread.run_sync(_tls_context)
            with self._guard:
                if self._tls is None:
                    self._tls = tls
        return self.current()

    def current(self) -> httpx2.AsyncClient:
        """The running loop's client, made now if it has none yet (outside `get`, the
        certificates may be loaded on the event loop, the first time of all)."""
        token = anyio.lowlevel.current_token()
        held = self._held.get(token.native_token)
        if held is not None:
            return held.client
        with self._guard:  # other threads' loops may be adding theirs
            if self._tls is None:
                self._tls = _tls_context()
            self._drop_closed_loops()
            client = self._make(self._tls)
            keeper = _keep(client, functools.partial(self._forget, token.native_token, client))
            self._held[token.native_token] = _Held(client=client, token=token, keeper=keeper)
        # The loop's async generator hooks take the keeper in when it first runs, which
        # must happen in the loop; it awaits nothing before its first ``yield``.
        _start_now(keeper)
        return client

    def _forget(self, native: object, client: httpx2.AsyncClient) -> None:
        with self._guard:
            held = self._held.get(native)
            if held is not None and held.client is client:  # not a newer one of that loop
                del self._held[native]

    def _drop_closed_loops(self) -> None:
        """Forget the clients of asyncio loops closed without finalizing their async
        generators (their connections cannot be closed any more: the collector takes
        them). Called with the guard held."""
        for native in [n for n in self._held if _is_closed(n)]:
            del self._held[native]

    async def aclose(self) -> None:
        """Close every running loop's client, concurrently; a client whose loop has
        ended is forgotten, one whose loop is idle is left to that loop to close."""
        with self._guard:
            idle = {native: one for native, one in self._held.items() if _is_idle(native)}
            held = [one for native, one in self._held.items() if native not in idle]
            self._held = idle
        here = _native_token()
        with anyio.move_on_after(CLOSE_TIMEOUT, shield=True):
            async with anyio.create_task_group() as group:
                for one in held:
                    if one.token.native_token is here:
                        group.start_soon(one.aclose)
                    elif not _is_closed(one.token.native_token):
                        group.start_soon(_close_in_its_loop, one)


def new_client(timeout: float, tls: ssl.SSLContext | None) -> httpx2.AsyncClient:
    """A client as an API's requests need it: ``timeout`` seconds per phase, no redirects
    followed (we follow them, stripping credentials across origins), no settings from the
    environment, and no cookie kept; certificates verified with ``tls`` (None only for
    a template, which never connects, so loads no certificates)."""
    guard_library_logs()  # httpx2 and httpcore2 log URLs and headers an API repeats
    return httpx2.AsyncClient(
        verify=tls if tls is not None else False,
        timeout=timeout,
        follow_redirects=False,
        trust_env=False,
        # One client serves every user of the toolset: cookies an API sets for one
        # must never be sent for another. Cookie parameters are sent per call.
        cookies=CookieJar(policy=DefaultCookiePolicy(allowed_domains=[])),
    )


class ApiClients:
    """The clients an API's requests go out with: the one given (never closed here), or
    each event loop's own (`LoopClients`); and a template to build requests with.

    Args:
        given: The caller's client, used from every loop as it is.
        loops: Makes and holds each loop's client, when none is given.
        make: Makes a client like every loop's (for the template).
    """

    def __init__(
        self,
        given: httpx2.AsyncClient | None,
        loops: LoopClients,
        make: Callable[[ssl.SSLContext | None], httpx2.AsyncClient],
    ) -> None:
        self.given = given
        self._loops = loops
        self._make = make
        self._template: httpx2.AsyncClient | None = None

    async def get(self) -> httpx2.AsyncClient:
        """The client to send with from the running loop (made off the event loop the
        first time: loading certificates takes a while)."""
        if self.given is not None:
            return self.given
        return await self._loops.get()

    def ready(self) -> httpx2.AsyncClient | None:
        """`get`'s client when it needs no waiting (the one given, or the running loop's
        once the certificates are loaded); None: await `get`."""
        if self.given is not None:
            return self.given
        return self._loops.current() if self._loops.has_tls else None

    def current(self) -> httpx2.AsyncClient:
        """`get`, without waiting (the certificates may be loaded on the event loop, the
        first time of all)."""
        if self.given is not None:
            return self.given
        return self._loops.current()

    @property
    def template(self) -> httpx2.AsyncClient:
        """A client to build requests with: the one given, or one like every loop's (it
        never sends, so it belongs to no loop and holds nothing to close)."""
        if self.given is not None:
            return self.given
        if self._template is None:
            self._template = self._make(None)
        return self._template

    def lock(self) -> anyio.Lock:
        """The running loop's lock (`LoopClients.lock`)."""
        return self._loops.lock()

    async def aclose(self) -> None:
        """Close every loop's client (a given one is left open)."""
        if self.given is None:
            await self._loops.aclose()


async def _keep(
    client: httpx2.AsyncClient, forget: Callable[[], None]
) -> AsyncGenerator[None, None]:
    """Holds ``client`` until closed, or finalized by its loop as the loop ends."""
    try:
        yield
    finally:
        forget()
        # trio finalizes in a cancelled scope; the connections must all be closed.
        with anyio.move_on_after(CLOSE_TIMEOUT, shield=True):
            await client.aclose()


def _start_now(keeper: AsyncGenerator[None, None]) -> None:
    """Run ``keeper`` to its first ``yield`` (it awaits nothing before), so that the
    running loop's async generator hooks take it in."""
    step = keeper.asend(None)
    try:
        step.send(None)
    except StopIteration:
        return
    raise AssertionError("the keeper waited before its first yield")  # pragma: no cover


async def _close_in_its_loop(held: _Held) -> None:
    """Close ``held`` in its own (running) loop, from a worker thread."""
    await anyio.to_thread.run_sync(_close_from_thread, held, abandon_on_cancel=True)


def _close_from_thread(held: _Held) -> None:
    # A loop that has ended took its connections with it.
    with contextlib.suppress(anyio.RunFinishedError):
        anyio.from_thread.run(held.aclose, token=held.token)


def _native_token() -> object:
    return anyio.lowlevel.current_token().native_token


def _is_idle(native: object) -> bool:
    """Whether ``native`` is an asyncio loop alive but not running (trio's run token
    stands for a run, which runs until it ends)."""
    is_running = getattr(native, "is_running", None)
    return callable(is_running) and not is_running() and not _is_closed(native)


def _is_closed(native: object) -> bool:
    is_closed = getattr(native, "is_closed", None)  # an asyncio loop; trio's token has none
    return bool(is_closed()) if callable(is_closed) else False


def _tls_context() -> ssl.SSLContext:
    return httpx2.create_ssl_context(trust_env=False)
