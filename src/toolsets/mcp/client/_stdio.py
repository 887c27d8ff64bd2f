"""The stdio transport (internal): a server process spoken to over its stdin and stdout.

The SDK's ``stdio_client`` keeps its process to itself, and we need it twice: a server
that has not finished connecting in time is killed at once (the polite stop — end of
input, 2 s, SIGTERM, 2 s, SIGKILL — would overrun ``connect_timeout`` by up to 4 s), and
a server that exits while idle is noticed when it happens, so that the next call starts a
new one instead of failing. Messages are framed as the SDK frames them (one JSON-RPC
message per line). On Windows the SDK's own transport is used as it is.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
from collections.abc import AsyncIterator, Callable
from types import TracebackType
from typing import Any

import anyio
import mcp.types as mt
from anyio.abc import Process
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from anyio.streams.text import TextReceiveStream
from mcp import StdioServerParameters, stdio_client
from mcp.client.stdio import get_default_environment
from mcp.os.posix.utilities import terminate_posix_process_tree
from mcp.shared.message import SessionMessage

__all__ = ["KILL_GRACE", "STOP_TIMEOUT", "StdioTransport"]

logger = logging.getLogger("toolsets.mcp")

KILL_GRACE = 1.0
"""Seconds a killed server process has to be reaped: a server that does not finish
connecting within ``connect_timeout`` is killed, and the error arrives within
``connect_timeout`` plus this."""

STOP_TIMEOUT = 2.0
"""Seconds a server gets to exit once its input ends, and again after SIGTERM, before it
is killed (the stop sequence of the MCP lifecycle)."""

_POLL = 0.01


class StdioTransport:
    """An async context manager giving the (read, write) streams of a server process it
    starts, and stopping the process on exit.

    Args:
        params: What to run.
        errlog: Where the server's stderr goes (default: ours).
        on_exit: Called as soon as the server closes its output (it exited, or is about
            to), before the session hears of it.
    """

    def __init__(
        self,
        params: StdioServerParameters,
        *,
        errlog: Any = None,
        on_exit: Callable[[], None] = lambda: None,
    ) -> None:
        self.params = params
        self.errlog = errlog
        self.on_exit = on_exit
        self.process: Process | None = None
        """The server process, once started (None on Windows: the SDK owns it)."""
        self._killed = False
        self._cm: contextlib.AbstractAsyncContextManager[Any] | None = None

    async def __aenter__(self) -> Any:
        self._cm = self._run()
        return await self._cm.__aenter__()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        assert self._cm is not None
        return await self._cm.__aexit__(exc_type, exc, tb)

    def kill(self) -> None:
        """SIGKILL the server and everything it started (its process group), now (or as
        soon as it is started)."""
        self._killed = True
        process = self.process
        if process is not None and process.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)

    @contextlib.asynccontextmanager
    async def _run(self) -> AsyncIterator[Any]:
        errlog = self.errlog if self.errlog is not None else sys.stderr
        if sys.platform == "win32":  # pragma: no cover - the SDK handles Windows' details
            async with stdio_client(self.params, errlog=errlog) as streams:
                yield streams
            return
        params = self.params
        process = await anyio.open_process(
            [params.command, *params.args],
            env=get_default_environment() | (params.env or {}),
            stderr=errlog,
            cwd=params.cwd,
            start_new_session=True,  # its own process group: killed with what it started
        )
        self.process = process
        if self._killed:
            self.kill()
        read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)
        stopped = False
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._read, process, read_writer)
                tg.start_soon(self._write, process, write_reader, read_writer)
                try:
                    yield read_stream, write_stream
                finally:
                    read_stream.close()
                    write_stream.close()
                    # The reader keeps draining the server's output while it stops.
                    with anyio.CancelScope(shield=True):
                        await self._stop(process)
                    stopped = True
                    tg.cancel_scope.cancel()
        finally:
            for stream in (read_writer, read_stream, write_stream, write_reader):
                stream.close()
            if not stopped:  # cancelled before the streams were handed out
                with anyio.CancelScope(shield=True):
                    await self._stop(process)

    async def _read(
        self,
        process: Process,
        sink: MemoryObjectSendStream[SessionMessage | Exception],
    ) -> None:
        assert process.stdout is not None
        # Once the session stops listening, output is still read (and dropped): a server
        # blocked on a full pipe could not exit.
        listening = True
        buffer = ""
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            async for chunk in TextReceiveStream(process.stdout, encoding="utf-8"):
                lines = (buffer + chunk).split("\n")
                buffer = lines.pop()
                for line in lines:
                    if not listening or not line.strip():
                        continue
                    try:
                        await sink.send(_parse(line))
                    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                        listening = False
        self.on_exit()
        sink.close()

    async def _write(
        self,
        process: Process,
        source: MemoryObjectReceiveStream[SessionMessage],
        sink: MemoryObjectSendStream[SessionMessage | Exception],
    ) -> None:
        assert process.stdin is not None
        try:
            async with source:
                async for message in source:
                    line = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send((line + "\n").encode())
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            sink.close()  # the session sees the end of the connection

    async def _stop(self, process: Process) -> None:
        """End of input, then SIGTERM, then SIGKILL, each after `STOP_TIMEOUT` (at once
        if the process was killed already); then reap it, for at most `KILL_GRACE`."""
        assert process.stdin is not None
        with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdin.aclose()
        if not await _exited(process, within=STOP_TIMEOUT):
            await terminate_posix_process_tree(process, STOP_TIMEOUT)
        with anyio.move_on_after(KILL_GRACE):
            await process.aclose()


def _parse(line: str) -> SessionMessage | Exception:
    try:
        return SessionMessage(mt.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:  # handed to the session, which reports it
        logger.debug("MCP server sent a line that is not JSON-RPC: %.200r", line)
        return exc


async def _exited(process: Process, within: float) -> bool:
    """Whether the process exits within ``within`` seconds (polled: waiting on it would
    also wait for pipes a child of the server may still hold)."""
    with anyio.move_on_after(within):
        while process.returncode is None:  # noqa: ASYNC110 - no event to wait on
            await anyio.sleep(_POLL)
        return True
    return False
