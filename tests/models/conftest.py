"""The wire fakes' server: one uvicorn server on 127.0.0.1 for the test session's
model tests, serving every fake of `tests.models.scenarios.WIRES` under its prefix."""

from __future__ import annotations

import re
import socket
import threading
from collections.abc import Iterator

import pytest
import uvicorn
from starlette.applications import Starlette

from tests.models.scenarios import WIRES, WireFake


@pytest.fixture(scope="session")
def wire_server() -> Iterator[str]:
    """The root URL of the server every wire fake is served from."""
    app = Starlette(routes=[route for fake in WIRES for route in fake.routes()])
    # The socket is bound and listening before the thread starts: clients that connect
    # before uvicorn serves wait in the backlog, so no start-up wait is needed.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    config = uvicorn.Config(
        app, lifespan="off", ws="none", http="h11", log_level="warning", access_log=False
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    root = f"http://127.0.0.1:{sock.getsockname()[1]}"
    for fake in WIRES:
        fake.root = root
    try:
        yield root
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
    assert not thread.is_alive()


@pytest.fixture(params=WIRES, ids=lambda fake: fake.name)
def wire(request: pytest.FixtureRequest, wire_server: str) -> WireFake:
    """Each wire fake in turn, served."""
    fake: WireFake = request.param
    return fake


@pytest.fixture
def model_name(request: pytest.FixtureRequest) -> str:
    """A model name unique to this test (and its parameters), which selects its script."""
    return re.sub(r"[^A-Za-z0-9_-]", "-", request.node.name)


@pytest.fixture(autouse=True)
def _no_provider_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for provider in ("OPENAI", "ANTHROPIC"):
        for name in ("API_KEY", "BASE_URL", "MODEL"):
            monkeypatch.delenv(f"{provider}_{name}", raising=False)
