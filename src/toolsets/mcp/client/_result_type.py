"""A result without ``resultType`` is complete, as protocol 2026-07-28 says (internal).

The 2026-07-28 revision tags every result with ``resultType`` and tells clients to take
an absent one as ``"complete"`` (SEP-2322); the SDK's 2026-07-28 schema requires the
field, so a server that leaves it out would make every call fail as malformed. The
session's read stream passes through `CompleteByDefault`, which fills in the default
before the SDK reads the result — once the session speaks 2026-07-28 (the 2025-11-25
era has no such field, and its results pass untouched). Nothing else is changed: a
result that is malformed in any other way is still refused by the SDK.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import AsyncIterator
from types import TracebackType
from typing import Any

from mcp.client import Transport
from mcp.shared.message import SessionMessage
from mcp_types import JSONRPCResponse
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

__all__ = ["CompleteByDefault", "speaks_result_types"]

RESULT_TYPE = "resultType"
COMPLETE = "complete"


def speaks_result_types(protocol_version: str | None) -> bool:
    """Whether results of a session on ``protocol_version`` carry ``resultType``."""
    return protocol_version in MODERN_PROTOCOL_VERSIONS


class CompleteByDefault:
    """Wraps a transport: results read from it get ``resultType: "complete"`` when they
    have none, from the moment `active` is set (when the handshake chose 2026-07-28)."""

    def __init__(self, transport: Transport) -> None:
        self._transport = transport
        self.active = False

    @contextlib.asynccontextmanager
    async def streams(self) -> AsyncIterator[tuple[_Reader, Any]]:
        """The transport's streams, the read one amended (the SDK's `Transport`)."""
        async with self._transport as (read, write):
            yield _Reader(read, self), write

    def amend(self, item: SessionMessage | Exception) -> SessionMessage | Exception:
        if (
            self.active
            and isinstance(item, SessionMessage)
            and isinstance(item.message, JSONRPCResponse)
            and RESULT_TYPE not in item.message.result
        ):
            # The message was just decoded for this session alone: filled in place.
            item.message.result[RESULT_TYPE] = COMPLETE
        return item


class _Reader:
    """The transport's read stream (the SDK's `ReadStream`), amended by its owner."""

    __slots__ = ("_inner", "_owner")

    def __init__(self, inner: Any, owner: CompleteByDefault) -> None:
        self._inner = inner
        self._owner = owner

    @property
    def last_context(self) -> contextvars.Context | None:
        # The SDK restores the sender's context from here when the stream carries one.
        context: contextvars.Context | None = getattr(self._inner, "last_context", None)
        return context

    async def receive(self) -> SessionMessage | Exception:
        return self._owner.amend(await self._inner.receive())

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> _Reader:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        return self._owner.amend(await self._inner.__anext__())

    async def __aenter__(self) -> _Reader:
        await self._inner.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> bool | None:
        result: bool | None = await self._inner.__aexit__(exc_type, exc_val, exc_tb)
        return result
