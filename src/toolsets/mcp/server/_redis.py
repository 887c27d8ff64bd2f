"""The request states taken, shared by replicas through Redis. Needs the ``redis``
extra: ``pip install 'toolsets-ai[redis]'``.

Replicas behind a load balancer share the key that seals a waiting call's state
(``TOOLSETS_MCP_STATE_KEY``), so a confirmation asked by one is answered through any;
they must share the ids of the states taken too, or answers sent twice — to two
replicas — would run a confirmed call twice. `RedisSpentStates` takes each id with one
``SET key 1 NX PX ttl``: atomic in Redis, so of two replicas taking the same id at once
one is told it was fresh.

Redis is reached with the ``redis`` library's blocking client, each command in a worker
thread (``anyio.to_thread``): it works on any event loop anyio runs on, and never
blocks one. A Redis that cannot be reached refuses the request (`ToolsetError`, which the
server answers as an error naming the store; nothing runs), and the next request after it
is back is served: the client connects anew.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import anyio.to_thread

from toolsets._errors import ToolsetError
from toolsets._install import missing_extra

if TYPE_CHECKING:
    import redis

__all__ = ["DEFAULT_REDIS_PREFIX", "DEFAULT_REDIS_TIMEOUT", "RedisSpentStates"]

logger = logging.getLogger("toolsets.mcp.server")

DEFAULT_REDIS_TIMEOUT = 2.0
"""Seconds to connect to Redis, and for it to answer a command."""
DEFAULT_REDIS_PREFIX = "toolsets:spent:"
"""What the keys of the states taken start with."""


class RedisSpentStates:
    """The request states taken (see `SpentStates`), remembered in Redis so that every
    process sharing it takes each state once between them. Each id is a key,
    ``<prefix><id>``, that expires with its state's lifetime: Redis holds no more than
    the states taken within one lifetime (600 s by default), about 100 bytes each.

    Pass it to every replica, with the same state key::

        McpServer(toolset, spent_states=RedisSpentStates("redis://redis.internal:6379/0"))

    (``toolsets serve --http ... --redis URL`` does this.)

    Args:
        url: ``redis://[[user]:password@]host[:port][/db]``, ``rediss://`` (TLS) or
            ``unix://path``. A password in it never appears in logs or errors.
        prefix: What the keys start with (to share one Redis with other uses).
        timeout: Seconds to connect, and for Redis to answer a command.
        client: A ``redis.Redis`` client of your own, instead of ``url`` (closed by
            you, not by `close`).

    Raises:
        ImportError: the ``redis`` extra is not installed.
        ValueError: neither ``url`` nor ``client``, or both; a timeout not positive.
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        prefix: str = DEFAULT_REDIS_PREFIX,
        timeout: float = DEFAULT_REDIS_TIMEOUT,
        client: redis.Redis | None = None,
    ) -> None:
        if (url is None) == (client is None):
            raise ValueError("give RedisSpentStates a url or a client (one of them)")
        if not timeout > 0:
            raise ValueError(f"timeout must be positive, not {timeout!r}")
        self.prefix = prefix
        self.timeout = timeout
        self.where = _where(url) if url is not None else repr(client)
        """Where Redis is (the URL without its credentials), as errors name it."""
        self._errors = _redis_errors()
        self._own = client is None
        self._client = client if client is not None else _client(url or "", timeout)
        self._down = False
        self._lock = threading.Lock()

    async def spend(self, state_id: str, ttl: float) -> bool:
        """Take ``state_id`` for ``ttl`` seconds (Redis keeps it in whole milliseconds,
        one at least): True when no process sharing this Redis took it before.

        Raises:
            ToolsetError: Redis cannot be reached or refused the command (its cause
                chained); nothing is taken.
        """
        key = f"{self.prefix}{state_id}"
        lifetime = max(1, round(ttl * 1000))
        taken = await self._run(lambda: self._client.set(key, b"1", nx=True, px=lifetime))
        return bool(taken)

    async def ping(self) -> None:
        """Check that Redis answers.

        Raises:
            ToolsetError: it does not (its cause chained).
        """
        await self._run(self._client.ping)

    def close(self) -> None:
        """Close the connections to Redis (of a client this store made)."""
        if self._own:
            self._client.close()

    async def _run(self, command: Any) -> Any:
        """``command()`` in a worker thread; Redis' errors as one `ToolsetError`."""
        try:
            answer = await anyio.to_thread.run_sync(command)
        except self._errors as exc:
            self._note(down=True, cause=exc)
            raise ToolsetError(
                f"the shared store of request states (Redis at {self.where}) cannot be "
                f"reached: {type(exc).__name__}: {exc}"
            ) from exc
        self._note(down=False)
        return answer

    def _note(self, *, down: bool, cause: BaseException | None = None) -> None:
        """Log once when Redis stops answering, and once when it is back."""
        with self._lock:
            changed, self._down = self._down != down, down
        if changed and down:
            logger.warning("Redis at %s cannot be reached: %s", self.where, cause)
        elif changed:
            logger.warning("Redis at %s answers again", self.where)

    def __repr__(self) -> str:
        return f"RedisSpentStates({self.where!r})"


def _redis_errors() -> type[Exception]:
    """The base of the ``redis`` library's errors.

    Raises:
        ImportError: the ``redis`` extra is not installed (saying how to install it).
    """
    try:
        import redis
    except ImportError as exc:
        raise missing_extra(__name__, "redis", exc) from exc
    return redis.RedisError


def _client(url: str, timeout: float) -> redis.Redis:
    """A client of the Redis at ``url``: bounded waits, one retry on a fresh
    connection (a pooled one may have gone with a Redis restart), no backoff."""
    import redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    try:
        return redis.Redis.from_url(
            url,
            socket_connect_timeout=timeout,
            socket_timeout=timeout,
            retry=Retry(NoBackoff(), 1),
        )
    except ValueError:
        # Not chained: the library's message may hold the URL, password and all.
        raise ValueError(
            f"not a Redis URL (redis://, rediss:// or unix://): {_where(url)!r}"
        ) from None


def _where(url: str) -> str:
    """``url`` without the user and password in it."""
    parts = urlsplit(url)
    if parts.password is None and parts.username is None:
        return url
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port is not None else host
    return parts._replace(netloc=netloc).geturl()
