"""`RateLimit`: calls to an upstream kept under a rate, by a token bucket per upstream
(and per caller, when serving): a call over the rate waits for its turn within its
deadline, or, when its turn would come too late, is not sent and the model is told when
to try again.

The upstream of a call is its OpenAPI operation's host (``api.github.com``), its MCP
server (``mcp:github``), or else the tool's name. The buckets live in this process: each
replica of a served toolset keeps its own.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

import anyio

from toolsets._forwarding import unwrapped
from toolsets._json import JsonValue
from toolsets._results import error_result
from toolsets._tool import Tool
from toolsets.calls._wrapping import CallNext, ToolCall

__all__ = ["RateLimit", "upstream_of"]

MAX_BUCKETS = 10_000
"""Buckets kept at most (one per upstream, or per upstream and caller): past it, the
buckets full again (unused for a while) are dropped."""


def upstream_of(tool: Tool) -> str:
    """What ``tool`` calls: its OpenAPI operation's host, ``mcp:`` and its MCP server's
    name, or else its own name."""
    inner: Any = unwrapped(tool)
    base_url = getattr(inner, "base_url", None)
    if isinstance(base_url, str) and base_url:
        host = urlsplit(base_url).hostname
        if host:
            return host
    server = getattr(getattr(inner, "toolset", None), "name", None)
    if isinstance(server, str) and server:
        return f"mcp:{server}"
    return tool.name


@dataclass
class _Bucket:
    tokens: float
    stamp: float


@dataclass(kw_only=True)
class RateLimit:
    """A `CallWrapper` letting at most ``rate`` calls per ``per`` seconds through to each
    upstream (see the module), in bursts of at most ``burst``.

    Args:
        rate: Calls per ``per`` seconds.
        per: The period, in seconds.
        burst: Calls that may go at once after a quiet while (default: ``rate``, at
            least 1).
        by: What shares a bucket: ``"upstream"`` (default), ``"tool"`` (each tool its
            own), or a function of the call giving its key.
        per_caller: Each caller its own buckets: the identity the served call was
            authorized as (``ctx.identity.subject``), else the context's user.
    """

    rate: float
    per: float = 1.0
    burst: float | None = None
    by: Literal["upstream", "tool"] | Callable[[ToolCall], str] = "upstream"
    per_caller: bool = False
    _buckets: dict[tuple[str, str], _Bucket] = field(default_factory=dict, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def __post_init__(self) -> None:
        if not (self.rate > 0 and math.isfinite(self.rate)):
            raise ValueError(f"rate must be a positive number, not {self.rate!r}")
        if not (self.per > 0 and math.isfinite(self.per)):
            raise ValueError(f"per must be a positive number of seconds, not {self.per!r}")
        if not callable(self.by) and self.by not in ("upstream", "tool"):
            raise ValueError(
                f"by must be 'upstream', 'tool' or a function of the call, not {self.by!r}"
            )
        if self.burst is None:
            self.burst = max(1.0, self.rate)
        elif not self.burst >= 1:
            raise ValueError(f"burst must be at least 1, not {self.burst!r}")

    async def __call__(self, call: ToolCall, call_next: CallNext) -> JsonValue:
        key = self._key(call)
        taken, wait = self._reserve(key, call.time_left())
        if not taken:
            upstream, _ = key
            return error_result(
                f"Not sent: the rate limit of {self.rate:g} calls per {self.per:g} s to "
                f"{upstream} is reached, and this call's turn would come after its time "
                f"is up; try again in {wait:.2f} s.",
                retry_after=round(wait, 3),
            )
        if wait > 0:
            await anyio.sleep(wait)
        return await call_next(call)

    def _key(self, call: ToolCall) -> tuple[str, str]:
        if callable(self.by):
            upstream = self.by(call)
        elif self.by == "tool":
            upstream = call.tool.name
        else:
            upstream = upstream_of(call.tool)
        caller = ""
        if self.per_caller:
            identity = call.ctx.identity
            caller = identity.subject if identity is not None else call.ctx.user_id
        return upstream, caller

    @property
    def _refill(self) -> float:
        """Tokens added a second."""
        return self.rate / self.per

    def _reserve(self, key: tuple[str, str], time_left: float) -> tuple[bool, float]:
        """Take a token for a call under ``key`` if its turn comes within ``time_left``:
        whether it was taken, and the seconds until that turn (0: now)."""
        now = anyio.current_time()
        assert self.burst is not None
        with self._lock:
            bucket = self._buckets.get(key)
            if bucket is None:
                if len(self._buckets) >= MAX_BUCKETS:
                    self._forget_full(now)
                bucket = self._buckets[key] = _Bucket(tokens=self.burst, stamp=now)
            tokens = min(self.burst, bucket.tokens + (now - bucket.stamp) * self._refill)
            wait = max(0.0, (1.0 - tokens) / self._refill)
            if wait > time_left:
                return False, wait
            bucket.tokens, bucket.stamp = tokens - 1.0, now  # may go below zero: queued
            return True, wait

    def _forget_full(self, now: float) -> None:
        """Drop the buckets full again (lock held)."""
        assert self.burst is not None
        full = [
            key
            for key, bucket in self._buckets.items()
            if bucket.tokens + (now - bucket.stamp) * self._refill >= self.burst
        ]
        for key in full:
            del self._buckets[key]
