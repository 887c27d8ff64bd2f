"""A real Redis (Debian's ``redis-server``) on a free 127.0.0.1 port, for the tests of
shared state: started, stopped and started again on the same port."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time

import pytest

from tests.helpers import free_port

START_TIMEOUT = 10.0
"""Seconds Redis may take to start (or stop)."""


def redis_server_command() -> str:
    """``redis-server``'s path; the test is skipped without it (scripts/test.sh installs
    it, as CI runs)."""
    found = shutil.which("redis-server")
    if found is None:
        pytest.skip("redis-server is not installed (scripts/test.sh installs it)")
    return found


class RedisServer:
    """``redis-server`` on 127.0.0.1, without persistence."""

    def __init__(self, port: int | None = None) -> None:
        self.port = port if port is not None else free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        command = [redis_server_command(), "--bind", "127.0.0.1", "--port", str(self.port)]
        self.process = subprocess.Popen(
            [*command, "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for_port(self.port, self.process)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(START_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(START_TIMEOUT)
        self.process = None


def wait_for_port(
    port: int, process: subprocess.Popen[bytes] | None = None, within: float = START_TIMEOUT
) -> None:
    """Wait until something listens on 127.0.0.1:``port`` (``process`` still running).

    Raises:
        RuntimeError: not within ``within`` seconds, or ``process`` ended.
    """
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"{process.args[0]} exited with {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.02)
    raise RuntimeError(f"nothing listened on 127.0.0.1:{port} within {within} s")
