"""Request states taken once (protocol 2026-07-28).

A 2026-07-28 call that asks its client (a confirmation above all) ends with
``input_required`` and a sealed request state; the client calls again with the answers
and that state. The seal (the SDK's `RequestStateBoundary`) proves the state is the
server's own, bound to the tool and its arguments, for its lifetime (600 s by default):
it does not stop the same state and answers from being sent twice, which would run a
confirmed destructive call twice. So each state `McpServer` issues carries an id, and
the server takes each id once: a `SpentStates` store remembers the ids taken, each for
the state's lifetime (past it the seal refuses the state anyway).

`MemorySpentStates` (the default) remembers them in this process: processes that serve
the same clients (workers, replicas behind a load balancer) and share the state key
should share a store too, since a replay may reach another one: `RedisSpentStates`
(``toolsets.mcp.server._redis``) keeps them in Redis.
"""

from __future__ import annotations

import heapq
import logging
import time
from typing import Protocol, runtime_checkable

from toolsets._errors import ToolsetError

__all__ = ["MAX_SPENT_STATES", "MemorySpentStates", "SpentStates"]

logger = logging.getLogger("toolsets.mcp.server")

MAX_SPENT_STATES = 100_000
"""How many taken request states a `MemorySpentStates` remembers by default (about
200 bytes each)."""


@runtime_checkable
class SpentStates(Protocol):
    """Where a server remembers the request states it took (see the module's docstring).

    A store shared by several processes (Redis' ``SET id 1 NX EX ttl``, a database's
    unique key) makes a state taken by one refused by all.
    """

    async def spend(self, state_id: str, ttl: float) -> bool:
        """Take ``state_id``: remember it for ``ttl`` seconds at least, and say whether
        it was not taken before. Atomic: of two requests taking the same id at once,
        one is told True.

        Raises:
            ToolsetError: the store cannot remember it (full, unreachable): the request
                is refused, rather than taken without being remembered.
        """
        ...


class MemorySpentStates:
    """The request states taken, in this process's memory: at most ``limit`` ids at a
    time, each forgotten when its lifetime is over. Full (``limit`` ids taken within a
    state's lifetime), it refuses to take more until the oldest expire rather than
    forget one that could then be taken again.

    Args:
        limit: The most ids remembered at once.
    """

    def __init__(self, limit: int = MAX_SPENT_STATES) -> None:
        if limit < 1:
            raise ValueError("limit must be at least 1")
        self.limit = limit
        self._until: dict[str, float] = {}
        """Each id taken, and until when it is remembered."""
        self._expiring: list[tuple[float, str]] = []
        """The same, as a heap: the first to be forgotten first."""

    def __len__(self) -> int:
        self._expire(time.monotonic())
        return len(self._until)

    async def spend(self, state_id: str, ttl: float) -> bool:
        # No await before the id is written: two requests cannot both take it.
        now = time.monotonic()
        self._expire(now)
        if state_id in self._until:
            return False
        if len(self._until) >= self.limit:
            logger.warning(
                "refused a request state: %d were taken within their lifetime, the most "
                "this server remembers (MemorySpentStates' limit)",
                self.limit,
            )
            raise ToolsetError(
                f"this server takes at most {self.limit} request states within their "
                "lifetime, and has; try again in a while"
            )
        until = now + ttl
        self._until[state_id] = until
        heapq.heappush(self._expiring, (until, state_id))
        return True

    def _expire(self, now: float) -> None:
        expiring = self._expiring
        while expiring and expiring[0][0] <= now:
            _, state_id = heapq.heappop(expiring)
            del self._until[state_id]

    def __repr__(self) -> str:
        return f"MemorySpentStates(limit={self.limit})"
