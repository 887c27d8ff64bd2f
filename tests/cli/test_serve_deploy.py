"""``toolsets serve --http`` as replicas of one deployment, each a real process on
127.0.0.1: a confirmation asked by one (2026-07-28: ``input_required`` with a sealed
request state) is answered to another sharing the key, through a key rotation; a
forged, stale or unknown-key state is refused and nothing runs."""

from __future__ import annotations

import contextlib
import json
import secrets
import signal
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
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
from tests.mcp.helpers import HttpServer, eventually
from tests.mcp.server.test_http import modern_call, post
from tests.mcp.server_helpers import ACCEPT as HEADERS
from tests.mcp.server_helpers import INITIALIZE
from toolsets._gc import SERVING_THRESHOLDS
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


async def slow(seconds: float, label: str) -> str:
    """Take a while.

    Args:
        seconds: How long.
        label: What to call this run.
    """
    import anyio

    with RUNS.open("a") as runs:
        runs.write(f"slow {label} started\\n")
    await anyio.sleep(seconds)
    return f"slept {seconds}"


def collector() -> list[int]:
    """The garbage collector's thresholds in the serving process."""
    import gc

    return list(gc.get_threshold())


tools = [wipe, slow, collector]
'''


class Replica(HttpServer):
    """``toolsets serve tools:tools --http 127.0.0.1:PORT ARGS`` with ``env`` added to
    its environment, its output in a file."""

    def __init__(self, folder: Path, env: dict[str, str], *args: str) -> None:
        super().__init__()
        self.folder, self.env, self.args = folder, env, args
        self.log = folder / f"serve-{self.port}.log"

    def command(self) -> tuple[list[str], dict[str, str]]:
        listen = f"127.0.0.1:{self.port}"
        args = ["serve", "tools:tools", "--http", listen, *self.args]
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
    confirm = ("--confirm", "always")
    made = {
        "old": Replica(folder, {"TOOLSETS_MCP_STATE_KEY": OLD}, *confirm),
        "rotated": Replica(
            folder,
            {"TOOLSETS_MCP_STATE_KEY": NEW, "TOOLSETS_MCP_STATE_KEY_PREVIOUS": OLD},
            *confirm,
        ),
        "new": Replica(folder, {}, *confirm, "--state-key-file", str(folder / "new.key")),
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


@contextlib.asynccontextmanager
async def _client(url: str) -> AsyncIterator[Client]:
    """An SDK client on 2026-07-28 at ``url`` that can ask its user, for at most 20 s."""

    async def elicit(ctx: Any, params: mt.ElicitRequestParams) -> mt.ElicitResult:
        return ACCEPT

    with anyio.fail_after(20):
        async with httpx2.AsyncClient() as http:
            transport = streamable_http_client(url, http_client=http)
            async with Client(transport, mode=MODERN, elicitation_callback=elicit) as client:  # type: ignore[arg-type]
                yield client


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


# --- graceful shutdown ------------------------------------------------------------------


async def slow_call(url: str, seconds: float, label: str) -> str:
    """``slow(seconds)`` called at ``url`` (one 2026-07-28 request): its text, or the
    error's."""
    body, headers = modern_call("slow", {"seconds": seconds, "label": label})
    try:
        status, answer = await post(url, body, headers)
    except (httpx2.HTTPError, ValueError) as exc:  # cut off: no (whole) answer
        return f"error: {exc!r}"
    if status != 200 or "result" not in answer:
        return f"error: {status} {answer}"
    return " ".join(block["text"] for block in answer["result"]["content"])


async def started(folder: Path, label: str) -> None:
    async def running() -> bool:
        return f"slow {label} started" in runs(folder)

    await eventually(running, within=20)


def refuses_connections(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return False
    except OSError:
        return True


async def stopped_mid_call(folder: Path, deadline: float, seconds: float) -> tuple[str, int]:
    """A replica serving with ``--shutdown-timeout deadline``, told to stop (SIGTERM)
    while a ``slow(seconds)`` call is in flight: the call's answer and the process's
    exit status, once new connections are refused and it has exited."""
    replica = Replica(folder, {}, "--shutdown-timeout", str(deadline))
    replica.start()
    try:
        label = new_id()
        answers: list[str] = []
        async with anyio.create_task_group() as tasks:

            async def call() -> None:
                answers.append(await slow_call(replica.url, seconds, label))

            tasks.start_soon(call)
            await started(folder, label)
            assert replica.process is not None
            replica.process.send_signal(signal.SIGTERM)

            async def refused() -> bool:
                return refuses_connections(replica.port)

            await eventually(refused, within=10)
            code = await anyio.to_thread.run_sync(replica.process.wait, 30)
        return answers[0], code
    finally:
        replica.stop()


async def test_on_sigterm_a_call_in_flight_completes_new_connections_are_refused_and_it_exits(
    folder: Path,
) -> None:
    answer, code = await stopped_mid_call(folder, deadline=20, seconds=1.5)
    assert answer == "slept 1.5"
    assert code == -signal.SIGTERM  # done, it ends as the signal says (as uvicorn does)


async def session_call_at_sigterm(replica: Replica, folder: Path, seconds: float) -> str:
    """A 2025-11-25 session, listening on its GET stream, whose ``slow(seconds)`` call
    (answered over SSE) is in flight when the replica is told to stop (SIGTERM): what
    the call's answer said (its whole SSE body)."""
    label = new_id()
    body = {"seconds": seconds, "label": label}
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call"}
    call["params"] = {"name": "slow", "arguments": body}
    answers: list[str] = []
    async with httpx2.AsyncClient(timeout=30) as http:
        opened = await http.post(replica.url, json=INITIALIZE, headers=HEADERS)
        session = {**HEADERS, "Mcp-Session-Id": opened.headers["mcp-session-id"]}
        session["MCP-Protocol-Version"] = "2025-11-25"
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        await http.post(replica.url, json=initialized, headers=session)

        async def listen() -> None:
            listening = {**session, "Accept": "text/event-stream"}
            with contextlib.suppress(httpx2.HTTPError):
                async with http.stream("GET", replica.url, headers=listening) as stream:
                    async for _ in stream.aiter_bytes():
                        pass

        async def answer() -> None:
            answers.append((await http.post(replica.url, json=call, headers=session)).text)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(listen)
            tasks.start_soon(answer)
            await started(folder, label)
            assert replica.process is not None
            replica.process.send_signal(signal.SIGTERM)
    return answers[0]


async def test_on_sigterm_a_call_answered_over_sse_completes_and_listening_holds_nothing(
    folder: Path,
) -> None:
    # sse-starlette ended every SSE answer at the signal (its patch of uvicorn's
    # handle_exit): the call's answer came back empty. Its listening stream, though,
    # ends once the answers are done, not at the deadline.
    replica = Replica(folder, {}, "--shutdown-timeout", "60")
    replica.start()
    try:
        with anyio.fail_after(40):
            said = await session_call_at_sigterm(replica, folder, 1.5)
            assert replica.process is not None
            code = await anyio.to_thread.run_sync(replica.process.wait, 20)
    finally:
        replica.stop()
    assert '"slept 1.5"' in said
    assert code == -signal.SIGTERM


async def test_on_sigterm_workers_finish_their_calls_answered_over_sse(folder: Path) -> None:
    # Each worker served with uvicorn's plain server: sse-starlette ended its SSE answers
    # at the signal the supervisor passes on, and the call came back with no result.
    replica = Replica(folder, {}, "--stateless", "--workers", "2", "--shutdown-timeout", "60")
    replica.start()
    label = new_id()
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
    call["params"] = {"name": "slow", "arguments": {"seconds": 1.5, "label": label}}
    headers = {**HEADERS, "MCP-Protocol-Version": "2025-11-25"}
    answers: list[httpx2.Response] = []
    try:
        with anyio.fail_after(40):
            async with httpx2.AsyncClient(timeout=30) as http, anyio.create_task_group() as tasks:

                async def answer() -> None:
                    answers.append(await http.post(replica.url, json=call, headers=headers))

                tasks.start_soon(answer)
                await started(folder, label)
                assert replica.process is not None
                replica.process.send_signal(signal.SIGTERM)
            code = await anyio.to_thread.run_sync(replica.process.wait, 20)
    finally:
        replica.stop()
    assert answers[0].headers["content-type"].startswith("text/event-stream")
    assert '"slept 1.5"' in answers[0].text
    assert code == 0  # the supervisor's own exit, once its workers have


async def test_a_call_past_the_shutdown_timeout_is_cancelled_and_the_process_exits(
    folder: Path,
) -> None:
    # Well before the call's two minutes (process.wait gives it 30 s): the deadline ends it.
    answer, code = await stopped_mid_call(folder, deadline=1, seconds=120)
    assert not answer.startswith("slept")
    assert code == -signal.SIGTERM


async def test_a_served_process_collects_garbage_less_often_than_cpythons_default(
    folder: Path,
) -> None:
    # A served call makes thousands of short-lived objects: at CPython's default the
    # collector went over the calls in flight again and again.
    replica = Replica(folder, {})
    replica.start()
    try:
        body, headers = modern_call("collector", {})
        status, answer = await post(replica.url, body, headers)
    finally:
        replica.stop()
    assert status == 200
    (text,) = answer["result"]["content"]
    assert json.loads(text["text"]) == list(SERVING_THRESHOLDS)


async def test_sessions_per_client_are_bounded_by_the_command_line(folder: Path) -> None:
    replica = Replica(folder, {}, "--max-sessions-per-client", "1")
    replica.start()
    try:
        with anyio.fail_after(20):
            async with httpx2.AsyncClient() as http:
                statuses = [
                    (await http.post(replica.url, json=INITIALIZE, headers=HEADERS)).status_code
                    for _ in range(2)
                ]
    finally:
        replica.stop()
    assert statuses == [200, 429]
