"""Whole results kept for the client that made the call: a tool wrapped with
`toolsets.calls.ResultLimit` (``toolsets serve --max-result-bytes``) whose result was
cut keeps the whole of it here, and the call's result links to it (a ``resource_link``
content item, and its URI in the note); the client reads it with ``resources/read``.

- Bounded: at most ``max_bytes`` of results in memory, each for ``ttl`` seconds after
  its call (reading it does not make it last longer); when a new one needs the room,
  the oldest go first — they are the next to expire too. One bigger than
  ``max_bytes`` is not kept (the note then names no URI).
- Unguessable: a URI is ``toolsets://results/`` and 32 random bytes
  (`secrets.token_urlsafe`); ``resources/list`` never shows one.
- Its caller's only: read only by the caller the call came from, as far as the server
  knows them — the identity of its access token (issuer and subject) and its session
  (the MCP session of stateful HTTP, else the ``session_id`` the server's
  ``invocation`` gives). Where it knows neither (stdio: one client; stateless HTTP with
  no authorization and no ``invocation``) the URI itself is the key, as for a link to
  a download.
- In this process: behind a load balancer, a read that reaches another replica than
  the one that made the call gets the same "not found" error as one that expired,
  saying so (the client calls the tool again, or asks for less).
"""

from __future__ import annotations

import secrets
import sys
import time
from collections import OrderedDict
from dataclasses import dataclass

import mcp.types as mt
from mcp import MCPError

from toolsets._context import Invocation
from toolsets._results import clip

__all__ = ["KEPT_RESULT_TTL", "KEPT_RESULTS_BYTES", "KeptResults", "Owner", "owner_of"]

KEPT_RESULTS_BYTES = 64 * 1024 * 1024
"""How much memory the results kept take at most, unless told otherwise."""
KEPT_RESULT_TTL = 900.0
"""Seconds a result is kept after its call, unless told otherwise."""

_PREFIX = "toolsets://results/"

_clock = time.monotonic
"""The clock a kept result's age is read on."""

Owner = tuple[str | None, str | None, str | None]
"""Who may read a kept result: the caller's token issuer and subject, and its session
(None where the server does not know it)."""


def owner_of(invocation: Invocation, session: str | None) -> Owner:
    """The `Owner` of what a request in ``invocation``, in ``session``, keeps."""
    who = invocation.identity
    if who is None:
        return None, None, session
    return who.issuer, who.subject, session


@dataclass(frozen=True, slots=True)
class _Kept:
    owner: Owner
    text: str
    mime_type: str
    tool_name: str
    weight: int
    """The memory it takes (bytes)."""
    until: float
    """When it expires, on `_clock`."""


class KeptResults:
    """The whole results kept for their callers (see the module).

    Args:
        max_bytes: The most memory they take together (0: none is kept).
        ttl: Seconds each is kept after its call.
    """

    def __init__(self, max_bytes: int = KEPT_RESULTS_BYTES, ttl: float = KEPT_RESULT_TTL) -> None:
        if max_bytes < 0:
            raise ValueError(f"max_bytes must not be negative, not {max_bytes}")
        if not ttl > 0:
            raise ValueError(f"ttl must be a positive number of seconds, not {ttl}")
        self.max_bytes = max_bytes
        self.ttl = ttl
        self._kept: OrderedDict[str, _Kept] = OrderedDict()
        """By URI, the oldest first (so the first to expire)."""
        self._weight = 0

    def keep(
        self, owner: Owner, text: str, mime_type: str, tool_name: str
    ) -> mt.ResourceLink | None:
        """Keep ``text`` for ``owner``: the link to it, None when it is too big to keep."""
        weight = sys.getsizeof(text)
        if weight > self.max_bytes:
            return None
        self._expire()
        uri = _PREFIX + secrets.token_urlsafe(32)
        self._kept[uri] = _Kept(owner, text, mime_type, tool_name, weight, _clock() + self.ttl)
        self._weight += weight
        while self._weight > self.max_bytes:
            self._drop(next(iter(self._kept)))
        size = len(text.encode()) if not text.isascii() else len(text)
        return mt.ResourceLink(
            type="resource_link",
            uri=uri,
            name=f"{tool_name} result",
            description=(
                f"The whole result of a call of {tool_name} (it was cut to fit); readable "
                f"by this caller for {self.ttl:.0f} seconds."
            ),
            mime_type=mime_type,
            size=size,
        )

    @staticmethod
    def is_result_uri(uri: str) -> bool:
        """Whether ``uri`` is of the form this server gives a kept result (kept or not;
        behind a gateway, an upstream toolsets server's may be too)."""
        return uri.startswith(_PREFIX)

    @staticmethod
    def shown(uri: str) -> str:
        """``uri`` as a log or an audit record may show it: a kept result's with its key
        cut (where no caller identity guards a result, the URI is what reads it)."""
        return (
            f"{_PREFIX}{uri[len(_PREFIX) : len(_PREFIX) + 4]}…" if uri.startswith(_PREFIX) else uri
        )

    def holds(self, uri: str) -> bool:
        """Whether a result is kept at ``uri`` now (for whichever caller)."""
        self._expire()
        return uri in self._kept

    def read(self, uri: str, owner: Owner) -> mt.ReadResourceResult:
        """The result kept at ``uri``, for ``owner``.

        Raises:
            MCPError: -32602 (the SDK's "resource not found") when none is kept there
                for ``owner``: never kept, expired, dropped for room, kept by another
                replica, or for another caller (each alike: a URI is never confirmed
                to someone it is not theirs).
        """
        self._expire()
        kept = self._kept.get(uri)
        if kept is None or kept.owner != owner:
            raise MCPError(
                mt.INVALID_PARAMS,
                f"Resource not found: no result is kept at {clip(uri, 200)} for this "
                f"caller. A cut result is kept {self.ttl:.0f} seconds for the caller that "
                "made the call, by the server process that answered it (behind a load "
                "balancer, another replica has not got it), and dropped sooner when "
                "newer ones need the room: call the tool again.",
                {"uri": uri},
            )
        content = mt.TextResourceContents(uri=uri, mime_type=kept.mime_type, text=kept.text)
        return mt.ReadResourceResult(contents=[content])

    def _expire(self) -> None:
        now = _clock()
        while self._kept:
            uri, oldest = next(iter(self._kept.items()))
            if oldest.until > now:
                break
            self._drop(uri)

    def _drop(self, uri: str) -> None:
        self._weight -= self._kept.pop(uri).weight
