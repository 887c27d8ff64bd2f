"""``toolsets serve --http`` as replicas of one deployment, each a real process on
127.0.0.1: a confirmation asked by one (2026-07-28: ``input_required`` with a sealed
request state) is answered to another sharing the key, through a key rotation; a
forged, stale or unknown-key state is refused and nothing runs."""

from __future__ import annotations

import json
import secrets
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp.types as mt
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from mcp.server.request_state import AESGCMRequestStateCodec

from tests.cli.helpers import entry_point, environment, error_line, toolsets_process
from tests.mcp.helpers import HttpServer
from toolsets._ids import new_id

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"
CONFIRM = "toolsets/confirm"
ACCEPT = mt.ElicitResult(action="accept", content={})
OLD = secrets.token_hex(32)
NEW = secrets.token_hex(32)
TOOLS = '''
from pathlib import Path

RUNS = Path(__file__).with_name("runs.txt")


def wipe(target: str) -> str:
    """Wipe something.

    Args:
        target: What.
    """
    with RUNS.open("a") as runs:
        runs.write(target + "\\n")
    return f"wiped {target}"


tools = [wipe]
'''


class Replica(HttpServer):
    """``toolsets serve tools:tools --http 127.0.0.1:PORT --confirm always ARGS`` with
    ``env`` added to its environment, its output in a file."""

    def __init__(self, folder: Path, env: dict[str, str], *args: str) -> None:
        super().__init__()
        self.folder, self.env, self.args = folder, env, args
        self.log = folder / f"serve-{self.port}.log"

    def command(self) -> tuple[list[str], dict[str, str]]:
        listen = f"127.0.0.1:{self.port}"
        args = ["serve", "tools:tools", "--http", listen, "--confirm", "always", *self.args]
        return [*entry_point(), *args], environment(self.env)

    def spawn(self) -> subprocess.Popen[bytes]:
        args, env = self.command()
        with self.log.open("wb") as log:
            return subprocess.Popen(
                args, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=self.folder
            )


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("deploy")
    (folder / "tools.py").write_text(TOOLS)
    (folder / "new.key").write_text(f"{NEW}\n")
    return folder


@pytest.fixture(scope="module")
def replicas(folder: Path) -> Iterator[dict[str, Replica]]:
    """Three replicas mid-rotation: ``old`` seals with the old key; ``rotated`` seals
    with the new one and still accepts the old; ``new`` knows the new key only (from a
    file)."""
    made = {
        "old": Replica(folder, {"TOOLSETS_MCP_STATE_KEY": OLD}),
        "rotated": Replica(
            folder, {"TOOLSETS_MCP_STATE_KEY": NEW, "TOOLSETS_MCP_STATE_KEY_PREVIOUS": OLD}
        ),
        "new": Replica(folder, {}, "--state-key-file", str(folder / "new.key")),
    }
    try:
        for replica in made.values():
            replica.process = replica.spawn()
        for replica in made.values():
            replica.wait_started()
        yield made
    finally:
        for replica in made.values():
            replica.stop()


def runs(folder: Path) -> list[str]:
    file = folder / "runs.txt"
    return file.read_text().splitlines() if file.exists() else []


async def ask(url: str, target: str) -> mt.InputRequiredResult:
    """``wipe(target)`` called at ``url``: the confirmation it asks, with its state."""
    async with _client(url) as client:
        asked = await client.session.call_tool(
            "wipe", {"target": target}, allow_input_required=True
        )
    assert isinstance(asked, mt.InputRequiredResult)
    assert list(asked.input_requests or {}) == [CONFIRM]
    return asked


async def answer(url: str, target: str, state: str | None) -> mt.CallToolResult:
    """``wipe(target)`` called again at ``url``, confirmed, with ``state``."""
    done = await answering(url, target, state)
    assert isinstance(done, mt.CallToolResult), done
    return done


async def refusal(url: str, target: str, state: str | None) -> MCPError:
    """The error answering ``wipe(target)`` at ``url`` with ``state`` gets."""
    refused = await answering(url, target, state)
    assert isinstance(refused, MCPError), refused
    return refused


async def answering(url: str, target: str, state: str | None) -> mt.CallToolResult | MCPError:
    async with _client(url) as client:
        try:
            done = await client.session.call_tool(
                "wipe",
                {"target": target},
                input_responses={CONFIRM: ACCEPT},
                request_state=state,
                allow_input_required=True,
            )
        except MCPError as exc:
            return exc
    assert not isinstance(done, mt.InputRequiredResult)
    return done


class _client:
    """An SDK client on 2026-07-28 at ``url`` that can ask its user, for at most 20 s."""

    def __init__(self, url: str) -> None:
        self.url = url

    async def __aenter__(self) -> Client:
        async def elicit(ctx: Any, params: mt.ElicitRequestParams) -> mt.ElicitResult:
            return ACCEPT

        self._scope = anyio.fail_after(20)
        self._scope.__enter__()
        self._http = httpx2.AsyncClient()
        await self._http.__aenter__()
        transport = streamable_http_client(self.url, http_client=self._http)
        self._client = Client(transport, mode=MODERN, elicitation_callback=elicit)  # type: ignore[arg-type]
        return await self._client.__aenter__()

    async def __aexit__(self, *exc: Any) -> None:
        await self._client.__aexit__(*exc)
        await self._http.__aexit__(*exc)
        self._scope.__exit__(*exc)


async def test_a_confirmation_asked_by_one_replica_is_answered_to_another(
    replicas: dict[str, Replica], folder: Path
) -> None:
    for asker, answerer in (("old", "rotated"), ("rotated", "new")):
        target = new_id()
        asked = await ask(replicas[asker].url, target)
        done = await answer(replicas[answerer].url, target, asked.request_state)
        assert not done.is_error, (asker, answerer, done)
        assert [block.text for block in done.content if isinstance(block, mt.TextContent)] == [
            f"wiped {target}"
        ]
        assert runs(folder).count(target) == 1


async def test_a_state_sealed_with_a_key_no_longer_listed_is_refused_and_nothing_runs(
    replicas: dict[str, Replica], folder: Path
) -> None:
    target = new_id()
    asked = await ask(replicas["old"].url, target)
    refused = await refusal(replicas["new"].url, target, asked.request_state)
    assert refused.code == -32602
    assert "Invalid or expired requestState" in str(refused)
    assert target not in runs(folder)


async def test_a_forged_state_is_refused_and_nothing_runs(
    replicas: dict[str, Replica], folder: Path
) -> None:
    target = new_id()
    await ask(replicas["rotated"].url, target)
    for forged in ("v1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "not a state", "{}"):
        assert (await refusal(replicas["rotated"].url, target, forged)).code == -32602
    assert target not in runs(folder)


async def test_a_stale_state_is_refused_and_nothing_runs(
    replicas: dict[str, Replica], folder: Path
) -> None:
    target = new_id()
    asked = await ask(replicas["old"].url, target)
    assert asked.request_state is not None
    # What the replica sealed, as it would be once its ten minutes have passed.
    codec = AESGCMRequestStateCodec([OLD])
    claims = json.loads(codec.unseal(asked.request_state))
    claims["iat"], claims["exp"] = time.time() - 700, time.time() - 100
    stale = codec.seal(json.dumps(claims).encode())
    assert (await refusal(replicas["rotated"].url, target, stale)).code == -32602
    assert target not in runs(folder)
    # The same state, fresh, is taken.
    done = await answer(replicas["rotated"].url, target, asked.request_state)
    assert not done.is_error


@pytest.mark.parametrize(
    ("env", "args", "said"),
    [
        ({"TOOLSETS_MCP_STATE_KEY": "short"}, (), "TOOLSETS_MCP_STATE_KEY: key #1 is 5"),
        ({"TOOLSETS_MCP_STATE_KEY": NEW}, ("--state-key-file", "tools.py"), "not both"),
        ({}, ("--state-key-file", "tools.py"), "TOOLSETS_MCP_STATE_KEY_FILE: key #1"),
    ],
)
def test_a_malformed_state_key_is_one_line_before_serving(
    folder: Path, env: dict[str, str], args: tuple[str, ...], said: str
) -> None:
    done = toolsets_process(
        "serve", "tools:tools", "--http", "127.0.0.1:9", *args, env=env, cwd=folder
    )
    assert done.returncode == 2
    assert said in error_line(done)
    assert NEW not in done.stderr
