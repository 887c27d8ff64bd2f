"""Where a stdio server's stderr goes (internal): a logger (one record per line), a file,
or anything a subprocess can write to; and its last lines, which explain a server that
fails to start."""

from __future__ import annotations

import collections
import contextlib
import logging
import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any, TextIO

import anyio
import anyio.to_thread
from mcp.client._transport import TransportStreams

from toolsets.mcp.client._transports import StderrTarget

__all__ = ["STDERR_LOGGER", "ServerStderr"]

STDERR_LOGGER = "toolsets.mcp.stderr"
"""The logger a stdio server's stderr lines go to by default (at INFO)."""

DRAIN_TIMEOUT = 2.0
"""Seconds to wait, after the server has exited, for the last of its stderr."""
_LONGEST_LINE = 16_384
StartServer = Callable[[Any], AbstractAsyncContextManager[TransportStreams]]
"""Starts the server process with its stderr going to the given file or descriptor."""
_TAIL_LINES = 8
_TAIL_LINE_CHARS = 300


class ServerStderr:
    """The stderr of one server process: where it goes, and its last lines.

    Args:
        target: See `StderrTarget`.
        name: The server's name, which begins each logged line.
    """

    def __init__(self, target: StderrTarget, name: str) -> None:
        self._target = target
        self._name = name
        self._tail: collections.deque[str] = collections.deque(maxlen=_TAIL_LINES)

    def tail(self) -> str:
        """The last lines the server wrote (when they went to a logger), for an error
        saying why it stopped; empty when there are none."""
        if not self._tail:
            return ""
        return "; its stderr ended with: " + " | ".join(self._tail)

    @contextlib.asynccontextmanager
    async def client(self, start: StartServer) -> AsyncIterator[TransportStreams]:
        """The server's streams from ``start``, with its stderr sent where it should go."""
        target = self._target
        if target is None:
            target = logging.getLogger(STDERR_LOGGER)
        if isinstance(target, logging.Logger):
            if sys.platform == "win32":  # no waiting on a pipe there: left to the terminal
                target = sys.stderr
            else:
                async with self._logged(start, target) as streams:
                    yield streams
                return
        if isinstance(target, str | os.PathLike):
            path = Path(target)
            file = await anyio.to_thread.run_sync(_append, path)
            try:
                async with start(file) as streams:
                    yield streams
            finally:
                file.close()
            return
        errlog: Any = target  # an open file, or a descriptor (subprocess passes both on)
        async with start(errlog) as streams:
            yield streams

    @contextlib.asynccontextmanager
    async def _logged(
        self, start: StartServer, logger: logging.Logger
    ) -> AsyncIterator[TransportStreams]:
        read_end, write_end = os.pipe()
        os.set_blocking(read_end, False)
        writer = os.fdopen(write_end, "w")
        drained = anyio.Event()
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._pump, read_end, logger, drained)
                try:
                    async with start(writer) as streams:
                        # The process has its own copy now: ours must go, or the pipe
                        # would never reach its end.
                        writer.close()
                        yield streams
                finally:
                    writer.close()
                    # What the server wrote before it exited is still read, even on the
                    # way out of a failure (bounded: a process it left behind may hold
                    # the pipe open).
                    with anyio.move_on_after(DRAIN_TIMEOUT, shield=True):
                        await drained.wait()
                    tg.cancel_scope.cancel()
        finally:
            os.close(read_end)

    async def _pump(self, fd: int, logger: logging.Logger, drained: anyio.Event) -> None:
        pending = b""
        try:
            while True:
                await anyio.wait_readable(fd)
                try:
                    chunk = os.read(fd, 65536)
                except BlockingIOError:
                    continue
                if not chunk:
                    break
                *lines, pending = (pending + chunk).split(b"\n")
                if len(pending) > _LONGEST_LINE:
                    lines.append(pending)
                    pending = b""
                for line in lines:
                    self._emit(logger, line)
        finally:
            if pending:
                self._emit(logger, pending)
            drained.set()

    def _emit(self, logger: logging.Logger, raw: bytes) -> None:
        line = raw.decode("utf-8", "replace").rstrip("\r")
        if not line.strip():
            return
        self._tail.append(line[:_TAIL_LINE_CHARS])
        logger.info("%s: %s", self._name, line)


def _append(path: Path) -> TextIO:
    return path.open("a", encoding="utf-8")
