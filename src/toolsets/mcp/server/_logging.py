"""Logging: ``logging/setLevel`` (2025-11-25), the lowest level of the log messages the
calls of a connection send their client (``ctx.log``). A 2026-07-28 request says its
level in its own ``_meta`` instead (see `McpChannel.log`)."""

from __future__ import annotations

import weakref
from collections.abc import Iterator
from typing import TYPE_CHECKING

import mcp.types as mt

from toolsets._client_channel import LogLevel
from toolsets.mcp.server._feature import Registration
from toolsets.mcp.server._request import Context, connection

if TYPE_CHECKING:
    from mcp.server.connection import Connection

__all__ = ["DEFAULT_LOG_LEVEL", "Logging"]

DEFAULT_LOG_LEVEL: LogLevel = "info"
"""The lowest level of the log messages a tool sends a 2025-11-25 client that did not
say (with ``logging/setLevel``)."""


class Logging:
    """The log level each connection asked for."""

    def __init__(self) -> None:
        self._levels: weakref.WeakKeyDictionary[Connection, LogLevel] = weakref.WeakKeyDictionary()

    def handlers(self) -> Iterator[Registration]:
        # Registered, not passed to the SDK's server: that warns that logging is
        # deprecated (it is, on 2026-07-28, where the SDK answers it as unknown).
        yield "logging/setLevel", mt.SetLevelRequestParams, self.set_level

    async def set_level(self, ctx: Context, params: mt.SetLevelRequestParams) -> mt.EmptyResult:
        """``logging/setLevel``: the lowest level of the log messages the session's
        calls send."""
        self._levels[connection(ctx)] = params.level
        return mt.EmptyResult()

    def level(self, ctx: Context) -> LogLevel:
        """The lowest level of the log messages to send the client of ``ctx``."""
        level = self._levels.get(connection(ctx))
        return level if level is not None else DEFAULT_LOG_LEVEL
