"""``toolsets serve`` run for real: several workers (their configuration never in the
environment), the HTTP options (Host and Origin, body size, tool timeout), a start-up
failure in one line, stdout kept for the protocol over stdio; which headers reach
which server; ``--print-config`` (and the config it prints, served to an MCP client)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import anyio
import httpx2
import mcp.types as mt
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from tests.adapters.helpers import NotesApi
from tests.cli.helpers import (
    FIXTURE_STDIO,
    SRC,
    TIMEOUT,
    entry_point,
    environment,
    error_line,
    stdout_json,
    toolsets_command,
    toolsets_process,
    warning_line,
    write_sources,
)
from tests.helpers import ROOT, free_port
from tests.mcp.helpers import HttpServer
from tests.mcp.server_helpers import INITIALIZE
from toolsets._auth import MASK

WORKER_TOOLS = '''
import os
import subprocess
import threading
import stat

import gc

import anyio

print("imported: a module printing to stdout as it loads")


def frozen() -> int:
    """How many objects the garbage collector no longer passes over (gc.freeze)."""
    return gc.get_freeze_count()


def pid() -> int:
    """This process's id."""
    return os.getpid()


def holding(secret: str) -> list[str]:
    """The environment variables whose value holds ``secret``."""
    return sorted(name for name, value in os.environ.items() if secret in value)


def handed() -> dict[str, object]:
    """The file the serving process handed its workers' configuration in."""
    path = os.environ.get("TOOLSETS_CLI_SERVE", "")
    return {"path": path, "mode": stat.S_IMODE(os.stat(path).st_mode) if path else None}


async def slow() -> str:
    """Take a minute."""
    await anyio.sleep(60)
    return "done"
'''
"""``workertools:tools``: what a served process can tell about itself."""

SECRETS = ("sekrit-credential-1", "sekrit-header-2")


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("sources")
    paths = write_sources(folder)
    paths["workers"] = folder / "workertools.py"
    paths["workers"].write_text(
        WORKER_TOOLS + "\ntools = [pid, holding, handed, slow, frozen]\n", encoding="utf-8"
    )
    return paths


class Served(HttpServer):
    """``toolsets serve ARGS --http 127.0.0.1:PORT`` in its own process."""

    def __init__(self, *args: str, cwd: Path) -> None:
        super().__init__()
        self.args = args
        self.cwd = cwd

    def command(self) -> tuple[list[str], dict[str, str]]:
        listen = f"127.0.0.1:{self.port}"
        return [*entry_point(), "serve", *self.args, "--http", listen], environment()

    def start(self) -> None:
        here = os.getcwd()
        os.chdir(self.cwd)  # module:attribute is imported from the working directory
        try:
            super().start()
        finally:
            os.chdir(here)


def texts(result: mt.CallToolResult) -> list[str]:
    return [block.text for block in result.content if isinstance(block, mt.TextContent)]


async def call(url: str, name: str, args: dict[str, object]) -> mt.CallToolResult:
    """One call over a new connection (the kernel hands it to any worker). A worker
    still starting on a busy machine may take a while to answer its first one."""
    async with httpx2.AsyncClient(timeout=30) as http:
        transport = streamable_http_client(url, http_client=http)
        async with Client(transport) as client:  # type: ignore[arg-type]
            return await client.call_tool(name, args)


# --- several workers ------------------------------------------------------------------


@pytest.mark.anyio
async def test_two_workers_both_answer_and_no_secret_is_in_their_environment(
    sources: dict[str, Path], api: NotesApi
) -> None:
    served = Served(
        str(sources["secured"]),
        "workertools:tools",
        "--base-url",
        api.url,
        "--credential",
        f"notes-token={SECRETS[0]}",
        "--header",
        f"X-Key={SECRETS[1]}",
        "--stateless",
        "--workers",
        "2",
        cwd=sources["workers"].parent,
    )
    served.start()
    try:
        pids: set[int] = set()
        with anyio.fail_after(90):
            for _ in range(40):
                pids.add(int(texts(await call(served.url, "pid", {}))[0]))
                held = await call(served.url, "holding", {"secret": "sekrit"})
                assert json.loads(texts(held)[0]) == []
                if len(pids) == 2:
                    break
            handed = json.loads(texts(await call(served.url, "handed", {}))[0])
            # Loaded as one process loads: what was made frozen, spared the collector.
            frozen = int(texts(await call(served.url, "frozen", {}))[0])
            # The spec's tools work in every worker, with the credential of the file.
            created = await call(served.url, "create_note", {"title": "by a worker"})
    finally:
        served.stop()
    assert len(pids) == 2
    assert frozen > 0
    assert handed["mode"] == 0o600
    assert not await anyio.Path(handed["path"]).exists()  # removed when serving ended
    assert created.is_error is not True
    assert api.authorizations[-1] == f"Bearer {SECRETS[0]}"


# --- over HTTP: who may ask, how much, for how long ------------------------------------


def test_serving_beyond_this_machine_without_an_allowed_host_is_one_line() -> None:
    line = error_line(toolsets_command("serve", "m:t", "--http", "0.0.0.0:8000"))
    assert "--allowed-host" in line
    line = error_line(toolsets_command("serve", "m:t", "--allowed-host", "example.com"))
    assert "are for --http" in line


def test_allowed_hosts_and_origins_are_accepted_and_others_refused(
    sources: dict[str, Path],
) -> None:
    served = Served(
        "workertools:tools",
        "--allowed-host",
        "mcp.example.com:*",
        "--allowed-origin",
        "https://app.example.com",
        "--max-body",
        "2000",
        cwd=sources["workers"].parent,
    )
    served.start()
    request = INITIALIZE
    accept = {"Accept": "application/json, text/event-stream"}
    try:
        with httpx2.Client(timeout=20) as http:

            def post(body: object = request, **headers: str) -> int:
                response = http.post(served.url, json=body, headers={**accept, **headers})
                return response.status_code

            assert post(Host=f"mcp.example.com:{served.port}") == 200
            assert post(Host="elsewhere.example.com") == 421
            host = f"mcp.example.com:{served.port}"
            assert post(Host=host, Origin="https://app.example.com") == 200
            assert post(Host=host, Origin="https://evil.example") == 403
            big = {**request, "padding": "x" * 3000}
            assert post(big, Host=host) == 413
    finally:
        served.stop()


def test_a_call_longer_than_the_tool_timeout_is_an_error_result(
    sources: dict[str, Path],
) -> None:
    cwd = sources["workers"].parent
    done = toolsets_command("call", "workertools:tools", "slow", "--tool-timeout", "0.5", cwd=cwd)
    assert done.returncode == 1
    printed = done.stdout.partition("\n")[2]  # after what the module prints as it loads
    assert "0.5 s" in json.loads(printed)["error"]


@pytest.mark.anyio
async def test_serve_bounds_calls_by_the_tool_timeout(sources: dict[str, Path]) -> None:
    served = Served("workertools:tools", "--tool-timeout", "0.5", cwd=sources["workers"].parent)
    served.start()
    try:
        with anyio.fail_after(30):
            result = await call(served.url, "slow", {})
    finally:
        served.stop()
    assert result.is_error is True
    assert "0.5" in texts(result)[0]


# --- start-up failures, stdout ---------------------------------------------------------


def test_serving_an_unreachable_server_over_http_is_one_line_before_serving() -> None:
    listen = f"127.0.0.1:{free_port()}"
    done = toolsets_command("serve", "--stdio", "no-such-command-here", "--http", listen)
    line = error_line(done)
    assert "serving" not in done.stderr
    assert done.returncode == 1
    assert "no-such-command-here" in line


@pytest.mark.anyio
async def test_over_stdio_a_module_printing_as_it_loads_leaves_stdout_to_the_protocol(
    sources: dict[str, Path],
) -> None:
    command = entry_point()
    params = StdioServerParameters(
        command=command[0],
        args=[*command[1:], "serve", "workertools:tools"],
        env=environment(),
        cwd=str(sources["workers"].parent),
    )
    with anyio.fail_after(30):
        async with Client(params) as client:
            tools = await client.list_tools()
            pid = await client.call_tool("pid", {})
    assert {tool.name for tool in tools.tools} == {"pid", "holding", "handed", "slow", "frozen"}
    assert int(texts(pid)[0]) > 0


# --- which headers go where -------------------------------------------------------------


def test_header_goes_to_the_specs_api_and_mcp_header_to_the_mcp_server_only(
    sources: dict[str, Path], api: NotesApi
) -> None:
    mcp = HttpServer()
    mcp.start()
    try:
        common = [
            str(sources["notes"]),
            "--base-url",
            api.url,
            "--mcp-url",
            mcp.url,
            "--header",
            "Authorization=Bearer for-the-api",
            "--mcp-header",
            "X-Mcp-Token=for-the-mcp-server",
        ]
        seen = stdout_json(toolsets_command("call", *common, "headers", "--yes"))
        created = stdout_json(toolsets_command("call", *common, "create_note", "title=h"))
        only_api = stdout_json(
            toolsets_command(
                "call", "--mcp-url", mcp.url, "--header", "X-Api-Key=for-the-api", "headers", "-y"
            )
        )
    finally:
        mcp.stop()
    assert seen["x-mcp-token"] == MASK  # it arrived (and results never show a secret)
    assert "authorization" not in seen
    assert created["title"] == "h"
    assert api.authorizations[-1] == "Bearer for-the-api"
    assert "x-api-key" not in only_api
    assert "for-the-api" not in json.dumps(only_api)


def test_print_config_keeps_mcp_headers_apart_with_placeholders(
    sources: dict[str, Path],
) -> None:
    done = toolsets_command(
        "serve",
        str(sources["notes"]),
        "--mcp-url",
        "http://127.0.0.1:9/mcp",
        "--header",
        "X-Key=sekrit-1",
        "--mcp-header",
        "Authorization=sekrit-2",
        "--tool-timeout",
        "5",
        "--print-config",
    )
    [entry] = stdout_json(done)["mcpServers"].values()
    assert "--header=X-Key=<fill in>" in entry["args"]
    assert "--mcp-header=Authorization=<fill in>" in entry["args"]
    assert "--tool-timeout=5" in entry["args"]
    assert "sekrit" not in done.stdout + done.stderr


def test_over_stdio_every_line_on_stdout_is_the_protocol(sources: dict[str, Path]) -> None:
    messages = [
        INITIALIZE,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    with subprocess.Popen(
        [*entry_point(), "serve", "workertools:tools"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environment(),
        cwd=sources["workers"].parent,
    ) as process:
        assert process.stdin is not None
        assert process.stdout is not None
        watchdog = threading.Timer(TIMEOUT, process.kill)  # bounds the blocking reads
        watchdog.start()
        try:
            process.stdin.write("".join(json.dumps(message) + "\n" for message in messages))
            process.stdin.flush()
            # The first two lines on stdout: the answers, nothing printed before them.
            answers = [json.loads(process.stdout.readline()) for _ in range(2)]
            _, stderr = process.communicate(timeout=TIMEOUT)  # stdin closed: the server ends
        finally:
            watchdog.cancel()
            process.kill()
    assert [answer["id"] for answer in answers] == [1, 2]
    assert "imported: a module printing" in stderr


def test_a_stdio_server_gets_the_environment_but_not_toolsets_own_variables() -> None:
    env = {"TOOLSETS_CREDENTIAL_NOTES_TOKEN": "sekrit-3", "SOME_SETTING": "visible"}

    def seen(name: str) -> object:
        done = toolsets_command(
            "call", "--stdio", FIXTURE_STDIO, "environment", f"name={name}", "--yes", env=env
        )
        return stdout_json(done)

    assert seen("SOME_SETTING") == {"result": "visible"}
    assert seen("TOOLSETS_CREDENTIAL_NOTES_TOKEN") == {"result": None}


def test_serving_on_a_port_in_use_is_one_line_and_nothing_is_said_to_be_served(
    sources: dict[str, Path],
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = toolsets_command("serve", str(sources["notes"]), "--http", f"127.0.0.1:{port}")
        workers = toolsets_command(
            "serve",
            str(sources["notes"]),
            "--http",
            f"127.0.0.1:{port}",
            "--stateless",
            "--workers",
            "2",
        )
    for failed in (done, workers):
        line = error_line(failed)  # one line, exit status 1, nothing on stdout
        assert failed.returncode == 1
        assert line == (
            f"toolsets: cannot serve on 127.0.0.1:{port}: the port is in use (another "
            "server listens there)"
        )


def test_over_http_json_says_where_it_serves_on_stdout_once_serving(
    sources: dict[str, Path],
) -> None:
    port = free_port()
    with subprocess.Popen(
        [*entry_point(), "serve", str(sources["notes"]), "--http", f"127.0.0.1:{port}", "--json"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environment(),
    ) as process:
        assert process.stdout is not None
        watchdog = threading.Timer(TIMEOUT, process.kill)  # bounds the blocking read
        watchdog.start()
        try:
            said = json.loads(process.stdout.readline())
            with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT):
                pass  # it listens
        finally:
            watchdog.cancel()
            process.terminate()
            process.communicate(timeout=TIMEOUT)
    assert said == {"server": "notes", "url": f"http://127.0.0.1:{port}/mcp"}


def test_json_over_stdio_is_a_usage_error(sources: dict[str, Path]) -> None:
    line = error_line(toolsets_command("serve", str(sources["notes"]), "--json"))
    assert "--json is for --http or --print-config" in line


def _stderr_until(process: subprocess.Popen[str], text: str) -> str:
    """What ``process`` wrote on stderr until ``text`` appeared (or it ended)."""
    assert process.stderr is not None
    seen = ""
    watchdog = threading.Timer(TIMEOUT, process.kill)  # bounds the blocking reads
    watchdog.start()
    try:
        while text not in seen:
            line = process.stderr.readline()
            if not line:
                break
            seen += line
    finally:
        watchdog.cancel()
    return seen


def test_over_stdio_on_a_terminal_it_says_it_waits_for_an_mcp_client(
    sources: dict[str, Path],
) -> None:
    import pty

    main, terminal = pty.openpty()
    try:
        with subprocess.Popen(
            [*entry_point(), "serve", str(sources["notes"])],
            stdin=terminal,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=environment(),
        ) as process:
            said = _stderr_until(process, "Ctrl-C")
            process.terminate()
            process.communicate(timeout=TIMEOUT)
    finally:
        os.close(main)
        os.close(terminal)
    assert (
        "serving notes over stdio: waiting for an MCP client on stdin (clients such as "
        "Claude Desktop start this command themselves: see --print-config); Ctrl-C stops it"
    ) in " ".join(said.split())
    piped = toolsets_command("serve", str(sources["notes"]))  # stdin empty: it ends
    assert piped.returncode == 0, piped.stderr
    assert "waiting" not in piped.stderr


# --- huge catalogues ----------------------------------------------------------------------


async def _listed(*args: str, cwd: Path | None = None) -> list[mt.Tool]:
    command = entry_point()
    params = StdioServerParameters(
        command=command[0],
        args=[*command[1:], "serve", *args],
        env=environment(),
        cwd=str(cwd) if cwd is not None else None,
    )
    with anyio.fail_after(TIMEOUT):
        async with Client(params) as client:
            return (await client.list_tools()).tools


@pytest.mark.anyio
async def test_search_and_code_mode_serve_one_tool_in_place_of_the_catalogue() -> None:
    spec = str(ROOT / "fixtures" / "openapi" / "bookshop.yaml")
    searched = await _listed(spec, "--search", "--pin", "health")
    assert [tool.name for tool in searched] == ["search_tools", "health"]
    coded = await _listed(spec, "--search", "--code-mode", "--code-timeout", "9")
    assert [tool.name for tool in coded] == ["run_code"]
    assert "search_tools" in (coded[0].description or "")
    assert "Limits: 9 s" in (coded[0].description or "")


def test_print_config_keeps_search_and_code_mode() -> None:
    spec = str(ROOT / "fixtures" / "openapi" / "bookshop.yaml")
    done = toolsets_command(
        "serve", spec, "--search", "--max-loaded", "7", "--code-mode", "--print-config", "--json"
    )
    [entry] = stdout_json(done)["mcpServers"].values()
    assert entry["args"][-3:] == ["--search", "--max-loaded=7", "--code-mode"]


def test_search_or_code_mode_without_its_extra_is_one_line_naming_the_install(
    tmp_path: Path,
) -> None:
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    # Each extra's package made unimportable in the command's process.
    (blocked / "sitecustomize.py").write_text(
        "import sys\nsys.modules['bm25s'] = None\nsys.modules['pydantic_monty'] = None\n"
    )
    env = {"PYTHONPATH": os.pathsep.join([SRC, str(blocked)])}
    spec = str(ROOT / "fixtures" / "openapi" / "bookshop.yaml")
    for option, extra, package in (
        ("--search", "search", "bm25s"),
        ("--code-mode", "code", "pydantic_monty"),
    ):
        done = toolsets_process("serve", spec, option, env=env)
        line = error_line(done)
        assert line.startswith(
            f"toolsets: {option} needs the {extra} extra (no module named {package!r}): "
            "pip install '"
        )
        assert line.endswith(f"[{extra}]'")


# --- --print-config, and options that cannot work ---------------------------------


def test_print_config_carries_the_confirm_policy_and_the_prefixes(
    sources: dict[str, Path],
) -> None:
    spec = str(sources["notes"])
    done = toolsets_command(
        "serve",
        spec,
        "--prefix",
        "notes",
        "--stdio",
        FIXTURE_STDIO,
        "--prefix",
        "fx",
        "--confirm",
        "never",
        "--print-config",
    )
    [entry] = stdout_json(done)["mcpServers"].values()
    args = entry["args"]
    assert "--confirm=never" in args
    assert args[args.index(str(Path(spec).resolve())) + 1] == "--prefix=notes"
    assert args[args.index(f"--stdio={FIXTURE_STDIO}") + 1] == "--prefix=fx"
    default = stdout_json(toolsets_command("serve", spec, "--print-config"))
    [entry] = default["mcpServers"].values()
    assert not any(arg.startswith("--confirm") for arg in entry["args"])


def test_serving_a_spec_naming_no_server_warns_that_its_operations_cannot_be_called(
    sources: dict[str, Path],
) -> None:
    done = toolsets_command("serve", str(sources["notes"]), stdin="")
    assert done.returncode == 0, done.stderr
    line = warning_line(done)
    assert "4 operations cannot be called" in line
    assert "--base-url URL" in line


def test_print_config_gives_the_entry_that_starts_this_server_with_no_secret_in_it(
    sources: dict[str, Path], tmp_path: Path
) -> None:
    done = toolsets_command(
        "serve",
        str(sources["secured"].relative_to(sources["secured"].parent)),
        "--credential",
        "notes-token=sekrit-1",
        "--header",
        "X-Key=sekrit-2",
        "--method",
        "get",
        "--print-config",
        cwd=sources["secured"].parent,
    )
    config = stdout_json(done)
    [(name, entry)] = config["mcpServers"].items()
    assert name == "secured"
    assert entry["command"] == sys.executable
    assert entry["args"][:4] == ["-m", "toolsets.cli", "serve", str(sources["secured"])]
    assert "--header=X-Key=<fill in>" in entry["args"]
    assert "--method=get" in entry["args"]
    assert entry["env"] == {"TOOLSETS_CREDENTIAL_NOTES_TOKEN": "<fill in>"}
    assert "sekrit" not in done.stdout + done.stderr
    assert "TOOLSETS_CREDENTIAL_NOTES_TOKEN" in done.stderr  # what to fill in


def test_print_config_over_http_gives_the_url() -> None:
    spec = str(ROOT / "fixtures" / "openapi" / "bookshop.yaml")
    done = toolsets_command("serve", spec, "--http", "127.0.0.1:8123", "--print-config")
    assert stdout_json(done) == {"mcpServers": {"bookshop": {"url": "http://127.0.0.1:8123/mcp"}}}


def test_serve_options_that_cannot_work_are_one_line_usage_errors() -> None:
    spec = str(ROOT / "fixtures" / "openapi" / "bookshop.yaml")
    line = error_line(toolsets_command("serve", spec, "--workers", "2"))
    assert "--stateless and --workers are for --http" in line
    line = error_line(toolsets_command("serve", spec, "--http", ":80", "--workers", "2"))
    assert "--workers needs --stateless" in line
    line = error_line(toolsets_command("serve", spec, "--http", "host:port"))
    assert "'host:port' is not HOST:PORT" in line


def test_serve_redis_is_for_http_and_a_wrong_url_is_one_line_without_its_password() -> None:
    spec = str(ROOT / "fixtures" / "openapi" / "bookshop.yaml")
    line = error_line(toolsets_command("serve", spec, "--redis", "redis://127.0.0.1:1"))
    assert "--redis is for --http" in line
    listen = f"127.0.0.1:{free_port()}"
    wrong = "http://:sekrit-pw@127.0.0.1:1/0"
    done = toolsets_command("serve", spec, "--http", listen, "--redis", wrong)
    assert done.returncode == 1
    assert "--redis: not a Redis URL" in error_line(done)
    assert "sekrit" not in done.stderr + done.stdout


def test_the_printed_config_serves_the_spec_to_an_mcp_client(
    sources: dict[str, Path], tmp_path: Path, api: NotesApi
) -> None:
    printed = toolsets_command(
        "serve", str(sources["notes"]), "--base-url", api.url, "--print-config"
    )
    config = stdout_json(printed)
    config["mcpServers"]["notes"]["env"] = {"PYTHONPATH": SRC}  # the toolsets under test
    path = tmp_path / "served.json"
    path.write_text(json.dumps(config))
    # The command line is the MCP client of the server it configured.
    tools = stdout_json(toolsets_command("list", str(path), "--json"))
    assert [tool["name"] for tool in tools] == [
        "notes_list_notes",
        "notes_create_note",
        "notes_get_note",
        "notes_delete_note",
    ]
    assert tools[2]["read_only"] is True
    done = toolsets_command("call", str(path), "notes_create_note", "title=served")
    assert stdout_json(done)["title"] == "served"
    assert any(note["title"] == "served" for note in api.notes.values())


def test_serve_of_a_broken_spec_is_one_line_before_anything_is_served(tmp_path: Path) -> None:
    spec = tmp_path / "broken.yaml"
    spec.write_text("openapi: 3.1.0\npaths: [\n")
    assert "invalid JSON or YAML" in error_line(toolsets_command("serve", str(spec)))
    line = error_line(toolsets_command("serve", str(spec), "--http", "127.0.0.1:1"))
    assert "invalid JSON or YAML" in line


def test_print_config_names_a_placeholder_for_every_security_scheme_of_the_specs() -> None:
    spec = str(ROOT / "fixtures" / "openapi" / "bookshop.yaml")
    done = toolsets_command("serve", spec, "--print-config")
    [entry] = stdout_json(done)["mcpServers"].values()
    assert entry["env"] == {"TOOLSETS_CREDENTIAL_SHOP_KEY": "<your shop_key>"}
    assert "TOOLSETS_CREDENTIAL_SHOP_KEY" in done.stderr  # what to fill in
    given = toolsets_command("serve", spec, "--credential", "shop_key=k", "--print-config")
    [entry] = stdout_json(given)["mcpServers"].values()
    assert entry["env"] == {"TOOLSETS_CREDENTIAL_SHOP_KEY": "<fill in>"}
