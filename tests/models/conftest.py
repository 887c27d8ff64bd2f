"""The wire fakes' server: one uvicorn server on 127.0.0.1 for the test session's
model tests, serving every fake of `tests.models.scenarios.WIRES` under its prefix."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from starlette.applications import Starlette

from tests.models.scenarios import WIRES, WireFake, serve


@pytest.fixture(scope="session")
def wire_server() -> Iterator[str]:
    """The root URL of the server every wire fake is served from."""
    app = Starlette(routes=[route for fake in WIRES for route in fake.routes()])
    with serve(app) as root:
        for fake in WIRES:
            fake.root = root
        yield root


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
    for provider in ("OPENAI", "ANTHROPIC", "GEMINI", "GOOGLE"):
        for name in ("API_KEY", "BASE_URL", "MODEL"):
            monkeypatch.delenv(f"{provider}_{name}", raising=False)
