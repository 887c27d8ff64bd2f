"""`McpServer` over stdio: one client, on this process's stdin and stdout."""

from __future__ import annotations

import contextlib
import sys
from typing import Any

from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server

__all__ = ["ServesStdio"]


class ServesStdio:
    """What serves `McpServer` over stdio (its method ``run_stdio``): the SDK's
    ``server``."""

    server: Server[Any]

    async def run_stdio(self) -> None:
        """Serve one client over this process's stdin and stdout until it closes them.
        While serving, anything else written to stdout goes to stderr: only the
        protocol is on stdout."""
        sys.stdout.flush()
        # The SDK points file descriptor 1 elsewhere while serving; Python's own stdout
        # buffers and would write what a tool prints once serving ends, on the wire.
        async with stdio_server() as (read, write):
            with contextlib.redirect_stdout(sys.stderr):
                await self.server.run(read, write, self.server.create_initialization_options())
