"""Real MCP fixture servers for the tests: stdio commands and HTTP server processes."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from tests.helpers import ROOT, free_port
from toolsets.mcp import McpToolset, Stdio

SERVER = str(ROOT / "fixtures" / "mcp" / "server.py")
RAW_SERVER = str(ROOT / "fixtures" / "mcp" / "raw_server.py")


def fixture_stdio(env: Mapping[str, str] | None = None) -> Stdio:
    return Stdio(command=sys.executable, args=[SERVER, "stdio"], env=dict(env or {}))


def raw_stdio(mode: str, pid_file: Path | None = None) -> Stdio:
    """The raw JSON-RPC fixture server in one of its misbehaving modes."""
    args = [RAW_SERVER, mode] + ([str(pid_file)] if pid_file is not None else [])
    return Stdio(command=sys.executable, args=args)


def stdio_toolset(env: Mapping[str, str] | None = None, **options: Any) -> McpToolset:
    return McpToolset(fixture_stdio(env), **options)


class HttpServer:
    """The fixture server over streamable HTTP, in its own process, restartable on the
    same port (subclasses serve something else: override `command`)."""

    def __init__(self, *, stateless: bool = False) -> None:
        self.port = free_port()
        self.stateless = stateless
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def command(self) -> tuple[list[str], dict[str, str]]:
        """The command line and environment that serve on ``self.port``."""
        args = [sys.executable, SERVER, "http", str(self.port)]
        if self.stateless:
            args.append("stateless")
        return args, dict(os.environ)

    def spawn(self) -> subprocess.Popen[bytes]:
        """The server's process, started."""
        args, env = self.command()
        return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)

    def start(self) -> None:
        self.process = self.spawn()
        self.wait_started()

    def wait_started(self) -> None:
        """Wait (at most 20 s) until the process spawned accepts connections."""
        assert self.process is not None
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the HTTP server exited with {self.process.returncode}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("the HTTP server did not start within 20 s")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self.process = None

    def restart(self) -> None:
        self.stop()
        self.start()


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (exited, not yet reaped) is not alive either.
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


async def eventually(check: Callable[[], Awaitable[bool]], within: float = 5.0) -> None:
    """Wait until ``check()`` is true (state in another process has no event to wait
    on), polling for at most ``within`` seconds."""
    import anyio

    for _ in range(int(within / 0.02)):
        if await check():
            return
        await anyio.sleep(0.02)
    raise AssertionError(f"not true within {within} s")
