"""Worker processes that share the load: each worker listens on a socket of its own, all
bound to one address with ``SO_REUSEPORT``, so that the kernel spreads new connections
over them (by a hash of each connection's addresses and ports).

uvicorn's own supervisor hands every worker one shared socket. A burst of connections
then goes to whichever worker wakes first (asyncio accepts all that wait, up to the
backlog, in one go), and clients keep their connection: one worker did all the work while
the others idled. Here a worker that dies is replaced on its own socket: the connections
the kernel queued there meanwhile wait for the replacement (instead of being reset), and
new ones reach it as before.

Where the platform does not spread connections over such sockets (only Linux does, for
TCP), or the socket handed in was bound without ``SO_REUSEPORT``, the workers share it.
"""

from __future__ import annotations

import logging
import socket
import sys
from collections.abc import Callable

import uvicorn
from uvicorn.config import STARTUP_FAILURE
from uvicorn.supervisors import Multiprocess
from uvicorn.supervisors.multiprocess import Process

from toolsets.mcp.server._draining import DrainingServer

__all__ = ["SpreadingSupervisor", "can_spread", "listening_sockets", "reuse_port_socket"]

logger = logging.getLogger("toolsets.mcp.server")


def can_spread() -> bool:
    """Whether the kernel spreads connections over sockets sharing a port (Linux)."""
    return sys.platform.startswith("linux") and hasattr(socket, "SO_REUSEPORT")


def _family(host: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def reuse_port_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host``:``port`` (not listening yet) that further sockets
    may bind to as well (`listening_sockets`), inheritable by worker processes.

    A port another program listens on, even one sharing its port the same way, is
    refused (``OSError`` with ``EADDRINUSE``): the address is first bound without
    ``SO_REUSEPORT``, which only a free port allows.

    Raises:
        OSError: the address cannot be bound.
    """
    family = _family(host)
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind((host, port))
        port = probe.getsockname()[1]  # port 0: the one the kernel chose, kept below
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def _shares_port(sock: socket.socket) -> bool:
    try:
        return bool(sock.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT))
    except (AttributeError, OSError):
        return False


def _sibling(first: socket.socket) -> socket.socket:
    """One more socket on ``first``'s address (bound with ``SO_REUSEPORT`` as it is)."""
    sock = socket.socket(first.family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind(first.getsockname())
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def listening_sockets(
    host: str, port: int, workers: int, given: socket.socket | None
) -> tuple[list[socket.socket], Callable[[], socket.socket]]:
    """A socket for each of ``workers`` (the first ``given`` if any), and how to make one
    more (a worker added later): sockets of their own on one address where the kernel
    spreads connections over them, else ``given`` (or one bound here) shared by all.

    Raises:
        OSError: the address cannot be bound (``EADDRINUSE``: another program serves
            there).
    """
    if given is None:
        if can_spread():
            given = reuse_port_socket(host, port)
        else:
            given = socket.socket(_family(host), socket.SOCK_STREAM)
            given.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            given.bind((host, port))
            given.set_inheritable(True)
    first = given
    if not (can_spread() and _shares_port(first)):
        return [first] * workers, lambda: first
    made = [first]
    try:
        made += [_sibling(first) for _ in range(workers - 1)]
    except OSError:
        for sock in made[1:]:
            sock.close()
        raise
    return made, lambda: _sibling(first)


class _Worker(Process):
    """A worker process serving with `DrainingServer`: told to stop, it says not ready
    at once and lets its answers in flight, SSE ones included, finish."""

    @property
    def server(self) -> uvicorn.Server:
        if self._server is None:
            self._server = DrainingServer(self.config)
        return self._server


class SpreadingSupervisor(Multiprocess):
    """uvicorn's supervisor of worker processes, each worker on a socket of its own
    (``slots``, from `listening_sockets`): a worker that dies, or is restarted (SIGHUP),
    is replaced on the same socket; SIGTTIN adds a worker on a new one (``more``),
    SIGTTOU retires the last."""

    def __init__(
        self,
        config: uvicorn.Config,
        slots: list[socket.socket],
        more: Callable[[], socket.socket],
    ) -> None:
        super().__init__(config, sockets=slots[:1])
        self.slots = list(slots)
        self._more = more

    def _started(self, slot: int) -> Process:
        process = _Worker(self.config, [self.slots[slot]])
        process.start()
        return process

    def init_processes(self) -> None:
        self.processes = [self._started(slot) for slot in range(self.processes_num)]

    def keep_subprocess_alive(self) -> None:
        for slot, process in enumerate(self.processes):
            if self.should_exit.is_set():
                return  # stopping: the workers are ended, not replaced
            if process.is_alive(timeout=self.config.timeout_worker_healthcheck):
                continue
            process.kill()  # gone, or hung: it no longer answers the health check
            process.join()
            if process.exitcode == STARTUP_FAILURE:
                # It failed before serving: its replacement would fail alike.
                logger.error("worker [%s] failed to start; stopping", process.pid)
                self.should_exit.set()
                return
            logger.warning("worker [%s] ended; a new one takes its connections", process.pid)
            self.processes[slot] = self._started(slot)

    def restart_all(self) -> None:
        for slot, old in enumerate(self.processes):
            if self.should_exit.is_set():
                return
            new = self._started(slot)
            timeout = self.config.timeout_worker_healthcheck
            if not new.wait_until_ready(timeout, self.should_exit):
                new.kill()
                new.join()
                if not self.should_exit.is_set():
                    logger.error(
                        "new worker [%s] was not ready in time; worker [%s] serves on",
                        new.pid,
                        old.pid,
                    )
                return
            old.terminate()
            old.join()
            self.processes[slot] = new

    def handle_ttin(self) -> None:
        try:
            sock = self._more()
        except OSError as exc:
            logger.error("cannot add a worker: %s", exc)
            return
        self.slots.append(sock)
        self.processes_num += 1
        self.processes.append(self._started(len(self.slots) - 1))

    def handle_ttou(self) -> None:
        if self.processes_num <= 1:
            logger.info("one worker left: not retiring it")
            return
        self.processes_num -= 1
        process = self.processes.pop()
        process.terminate()
        process.join()
        sock = self.slots.pop()
        if all(sock is not other for other in self.slots):
            sock.close()  # its own socket: the kernel stops handing it connections
