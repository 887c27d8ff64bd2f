"""What the tests of `McpServer` share: the served fixture toolset, a client in process,
and uvicorn in a thread."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio
import httpx2
import mcp.types as mt
from mcp import Client

import toolsets
from tests.helpers import ROOT
from tests.mcp.helpers import eventually
from toolsets.mcp import McpServer

SERVED = str(ROOT / "fixtures" / "mcp" / "served.py")
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
"""A raw 2025-11-25 ``initialize`` request, for tests that speak JSON-RPC themselves."""
BASE = "http://127.0.0.1:8000"
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
"""The headers of a streamable HTTP POST."""


def load_fixture(name: str) -> ModuleType:
    """The fixture module ``fixtures/mcp/<name>.py``, loaded from its file (its own
    processes import it as ``name`` from fixtures/mcp, which uvicorn's workers find on
    PYTHONPATH)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "fixtures" / "mcp" / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, module)
    spec.loader.exec_module(module)
    return module


served = load_fixture("served")
SRC = str(Path(toolsets.__file__).resolve().parent.parent)


@asynccontextmanager
async def connected(
    server: McpServer, mode: str, *, within: float = 20, **options: Any
) -> AsyncIterator[Client]:
    """The SDK's client talking to ``server`` in this process, for at most ``within``
    seconds."""
    with anyio.fail_after(within):
        async with Client(server.server, mode=mode, **options) as client:  # type: ignore[arg-type]
            yield client


@asynccontextmanager
async def http_client(server: McpServer, **options: Any) -> AsyncIterator[httpx2.AsyncClient]:
    """An HTTP client talking to ``server``'s app in this process (its lifespan run)."""
    app = server.http_app(**options)
    async with app.router.lifespan_context(app):
        transport = httpx2.ASGITransport(app=app)
        async with httpx2.AsyncClient(transport=transport, base_url=BASE) as client:
            yield client


def texts(result: mt.CallToolResult) -> list[str]:
    return [block.text for block in result.content if isinstance(block, mt.TextContent)]


@asynccontextmanager
async def uvicorn_thread(make_app: Any) -> AsyncIterator[str]:
    """The app ``make_app`` makes (in the thread: its locks belong to that loop), served
    by uvicorn on a free 127.0.0.1 port in a thread with its own (asyncio) event loop,
    whatever this test's backend: the URL of its MCP endpoint."""
    import threading

    import uvicorn

    server = uvicorn.Server(
        uvicorn.Config(make_app, factory=True, host="127.0.0.1", port=0, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()

    async def started() -> bool:
        return server.started

    try:
        await eventually(started, within=20)
        port = server.servers[0].sockets[0].getsockname()[1]
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.should_exit = True
        # A timeout of join's own: a thread cannot be cancelled.
        await anyio.to_thread.run_sync(thread.join, 20)
        assert not thread.is_alive(), "uvicorn did not stop within 20 s"
