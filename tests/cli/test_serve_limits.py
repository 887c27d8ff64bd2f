"""``toolsets serve --http`` under bad input and load, measured from outside with raw
sockets against the real process, its open-file limit lowered to 256 (so that more
sockets than it can hold are cheap): idle and slow connections are closed within the
timeouts it was given, more sockets than its file limit get 503 (not silence), a huge
head gets 431, clients leaving mid-body and failed accepts leave a bounded log."""

from __future__ import annotations

import contextlib
import json
import resource
import select
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.helpers import entry_point, environment, error_line, toolsets_command
from tests.mcp.helpers import HttpServer
from tests.mcp.server_helpers import INITIALIZE

FILE_LIMIT = 256
"""The served process's open-file limit: it derives 192 connections from it."""
FLOOD = FILE_LIMIT + 44
"""Idle sockets opened at once: more than the served process can hold files."""
WAIT = 10.0
"""Seconds any answer or close is waited for: past it, the server was silent."""
TOOLS = '''
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


tools = [add]
'''
BODY = json.dumps(INITIALIZE).encode()


def _request(body: bytes = BODY, *, length: int | None = None, extra: bytes = b"") -> bytes:
    head = (
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n" % (len(body) if length is None else length)
    )
    return head + extra + b"\r\n" + body


class Limited(HttpServer):
    """``toolsets serve tools:tools --http 127.0.0.1:PORT ARGS`` with an open-file limit of
    `FILE_LIMIT`, its output (stdout and stderr) in a file."""

    def __init__(self, folder: Path, *args: str) -> None:
        super().__init__()
        self.folder = folder
        self.args = args
        self.log = folder / f"serve-{self.port}.log"

    def command(self) -> tuple[list[str], dict[str, str]]:
        listen = f"127.0.0.1:{self.port}"
        return [*entry_point(), "serve", "tools:tools", "--http", listen, *self.args], environment()

    def spawn(self) -> subprocess.Popen[bytes]:
        def low_file_limit() -> None:
            _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
            resource.setrlimit(resource.RLIMIT_NOFILE, (FILE_LIMIT, hard))

        args, env = self.command()
        with self.log.open("wb") as log:
            return subprocess.Popen(
                args,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=self.folder,
                preexec_fn=low_file_limit,
            )

    def lines(self) -> list[str]:
        return self.log.read_text(errors="replace").splitlines()

    def connect(self) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.port), timeout=WAIT)

    def status(self, request: bytes = _request()) -> int:
        """The status of ``request`` sent on a new connection."""
        with self.connect() as sock:
            sock.sendall(request)
            return _status(sock.recv(4096))


def _status(answer: bytes) -> int:
    assert answer.startswith(b"HTTP/1.1 "), answer[:100]
    return int(answer.split(b" ", 2)[1])


def _answer(sock: socket.socket) -> bytes:
    """All the server sends until it closes the connection (a timeout if it never does)."""
    chunks = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def _trickle(sock: socket.socket, data: bytes) -> bytes:
    """``data`` sent a byte at a time, each once the server has said nothing for 50 ms,
    until it answers: what it answers before closing."""
    for byte in data:
        readable, _, _ = select.select([sock], [], [], 0.05)
        if readable:
            break
        try:
            sock.send(bytes([byte]))
        except OSError:  # closed under us: its answer is read below
            break
    return _answer(sock)


def _until_served(server: Limited) -> list[int]:
    """The statuses of requests sent one after another until one is served (200), for at
    most `WAIT` seconds."""
    statuses: list[int] = []
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline and statuses[-1:] != [200]:
        statuses.append(server.status())
    return statuses


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("limits")
    (folder / "tools.py").write_text(TOOLS)
    return folder


@contextlib.contextmanager
def _serving(folder: Path, *args: str) -> Iterator[Limited]:
    server = Limited(folder, *args)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def quick(folder: Path) -> Iterator[Limited]:
    """Half-second timeouts, the default connection limit."""
    timeouts = ["--header-timeout", "0.5", "--body-timeout", "0.5", "--keep-alive-timeout", "0.5"]
    with _serving(folder, *timeouts) as server:
        yield server


# --- idle and slow connections -------------------------------------------------------


def test_a_connection_that_sends_nothing_is_closed_at_the_header_timeout(quick: Limited) -> None:
    with quick.connect() as sock:
        assert _answer(sock) == b""  # closed, not left open (that would time out)


def test_a_head_sent_a_byte_at_a_time_is_cut_off_with_408(quick: Limited) -> None:
    with quick.connect() as sock:
        sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        answer = _trickle(sock, b"X-Slow: " + b"z" * 400)
    assert _status(answer) == 408


def test_a_body_sent_a_byte_at_a_time_is_cut_off_with_408(quick: Limited) -> None:
    with quick.connect() as sock:
        sock.sendall(_request(b"", length=len(BODY)))
        answer = _trickle(sock, BODY)
    assert _status(answer) == 408


def test_an_idle_connection_after_a_response_is_closed_too(
    quick: Limited,
) -> None:
    with quick.connect() as sock:
        sock.sendall(_request())
        answer = _answer(sock)
    assert _status(answer) == 200


def test_a_head_over_the_limit_is_answered_431_not_reset(quick: Limited) -> None:
    with quick.connect() as sock:
        sock.sendall(_request(extra=b"X-Big: " + b"x" * 1_000_000 + b"\r\n"))
        answer = _answer(sock)
    assert _status(answer) == 431


def test_clients_leaving_mid_body_leave_no_traceback(quick: Limited) -> None:
    before = len(quick.lines())
    for _ in range(50):
        with quick.connect() as sock:
            sock.sendall(_request(BODY[:10], length=len(BODY)))
    assert quick.status() == 200  # served since: the departures were handled
    assert quick.lines()[before:] == []


# --- more sockets than files -------------------------------------------------------------


def test_more_sockets_than_the_file_limit_get_503_not_silence(folder: Path) -> None:
    with _serving(folder, "--header-timeout", "5") as server:
        idle = [server.connect() for _ in range(FLOOD)]
        try:
            assert server.status() == 503
        finally:
            for sock in idle:
                sock.close()
        answers = _until_served(server)  # the departed ones are noticed
        lines = server.lines()
    assert answers[-1] == 200
    assert len(lines) <= 5, lines  # "serving ...", the refusals summarised


def test_out_of_file_descriptors_the_log_stays_bounded_and_service_returns(folder: Path) -> None:
    # A connection limit above what the files allow: accept() itself fails.
    args = ("--header-timeout", "0.5", "--max-connections", "1000")
    with _serving(folder, *args) as server:
        idle = [server.connect() for _ in range(FLOOD)]
        try:
            for sock in idle:  # each closed at the header timeout, or reset
                with contextlib.suppress(ConnectionResetError):
                    assert _answer(sock) == b""
            assert server.status() == 200
        finally:
            for sock in idle:
                sock.close()
        lines = server.lines()
    accept_lines = [line for line in lines if "accept" in line]
    assert 1 <= len(accept_lines) <= 2, lines[:20]  # one per 10 s
    assert "Too many open files" in accept_lines[0]
    assert len(lines) <= 5, lines[:20]


def test_the_limits_are_for_http_only() -> None:
    line = error_line(toolsets_command("serve", "tools:tools", "--header-timeout", "1"))
    assert "--header-timeout: for --http" in line


def test_a_malformed_allowed_host_is_one_line_before_serving() -> None:
    args = ("--http", "127.0.0.1:1", "--allowed-host", "localhost:1@evil.example")
    line = error_line(toolsets_command("serve", "tools:tools", *args))
    assert "--allowed-host: 'localhost:1@evil.example' is not HOST[:PORT|:*]" in line
