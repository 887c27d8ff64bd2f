"""Running the real ``toolsets`` command, and the sources the command-line tests share.

Most tests run the command in this process (`toolsets_command`), through the entry
point's own function (`toolsets.cli.main`: the error boundary, every exit status), the
process made to look fresh to it and put back after; a process start costs most of a
run. A few run the installed ``toolsets`` script in a process of its own
(`toolsets_process`) for what only a process shows: a terminal, signals, what the
command imports, serving over stdio to a real MCP client.

The sources: the notes API's spec (a variant with a security scheme, and one with tags)
written to files, an ``mcpServers`` file naming the fixture MCP server, and a Python
module of tools."""

from __future__ import annotations

import contextlib
import gc
import importlib
import io
import json
import logging
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import coverage

import toolsets
from tests.adapters.helpers import NOTES_SPEC
from tests.helpers import ROOT
from tests.mcp.helpers import SERVER
from toolsets.cli import main

SRC = str(Path(toolsets.__file__).resolve().parent.parent)
"""The directory the toolsets under test is imported from (the subprocess's too)."""
FIXTURE_STDIO = f"{sys.executable} {SERVER} stdio"
"""``--stdio`` for the fixture MCP server."""
TIMEOUT = 60
SCRIPT = Path(sys.executable).with_name("toolsets")
"""The ``toolsets`` script installed beside this Python (``pip install -e '.[dev]'``)."""
MAIN_MODULE = str(Path(toolsets.__file__).resolve().parent / "cli" / "__main__.py")
"""``sys.argv[0]`` of ``python -m toolsets.cli``: what the command sees in-process too."""


def entry_point() -> list[str]:
    """The command that runs ``toolsets`` in a process: the installed script (else
    ``python -m toolsets.cli``), under coverage when the tests measure it (its data then
    combined with theirs)."""
    command = [str(SCRIPT)] if SCRIPT.is_file() else ["-m", "toolsets.cli"]
    measuring = coverage.Coverage.current()
    if measuring is None:
        return [sys.executable, *command] if command[0] == "-m" else command
    rcfile = str(ROOT / "pyproject.toml")
    return [sys.executable, "-m", "coverage", "run", "-p", f"--rcfile={rcfile}", *command]


def environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment for ``toolsets`` (no ``TOOLSETS_CREDENTIAL_*``), with
    the toolsets under test first on its path and warnings made errors."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("TOOLSETS_CREDENTIAL")}
    environ["PYTHONPATH"] = os.pathsep.join([SRC, environ.get("PYTHONPATH", "")])
    environ["PYTHONWARNINGS"] = "error"
    measuring = coverage.Coverage.current()
    if measuring is not None:  # the data file is found from any working directory
        environ["COVERAGE_FILE"] = str(Path(measuring.config.data_file).resolve())
    environ.update(extra or {})
    return environ


def toolsets_process(
    *args: str,
    stdin: str = "",
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """``toolsets ARGS`` run to its end in a process of its own (`entry_point`), its
    stdin given, stdout and stderr captured."""
    return subprocess.run(
        [*entry_point(), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=environment(env),
        cwd=cwd,
    )


def toolsets_command(
    *args: str,
    stdin: str = "",
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """``toolsets ARGS`` run to its end in this process, through the entry point itself
    (`toolsets.cli.main`, its error boundary included), as ``python -m toolsets.cli
    ARGS`` would run in a new process: ``stdin`` its input, stdout and stderr captured
    (file descriptors 1 and 2 too: what a server it starts writes there), ``env`` added
    to the environment (which has no ``TOOLSETS_CREDENTIAL_*``), in ``cwd``. What the
    command changes in this process is put back after (`as_a_new_process`)."""
    with as_a_new_process(args, env, cwd), _captured(stdin) as output:
        try:
            main(list(args))
        except SystemExit as exc:
            code = exc.code
        else:  # pragma: no cover - main always exits
            raise AssertionError("toolsets.cli.main returned instead of exiting")
    status = code if isinstance(code, int) else 0 if code is None else 1
    return subprocess.CompletedProcess(["toolsets", *args], status, *output)


@contextlib.contextmanager
def as_a_new_process(
    args: Sequence[str], env: Mapping[str, str] | None, cwd: Path | None
) -> Iterator[None]:
    """This process made to look new to the command (no logging configured, the
    environment and ``sys.argv`` as `toolsets_command` says, in ``cwd``, the import
    system's caches of directories dropped), and after it, put back: the environment,
    the working directory, ``sys.argv``, ``sys.path``, the logging handlers, the objects
    the command's loading froze for the garbage collector (`toolsets._gc`: what a
    process's end would let go), and the modules the command imported from ``cwd`` (a
    test's module of tools: another test may write another of that name).

    Raises:
        AssertionError: the command left the garbage collector paused.
    """
    environ = dict(os.environ)
    path = list(sys.path)
    modules = set(sys.modules)
    argv = sys.argv
    here = os.getcwd()
    root = logging.getLogger()
    handlers = list(root.handlers)
    collecting = gc.isenabled()
    frozen = gc.get_freeze_count()
    thresholds = gc.get_threshold()
    for name in [name for name in os.environ if name.startswith("TOOLSETS_CREDENTIAL")]:
        del os.environ[name]
    os.environ.update(env or {})
    sys.argv = [MAIN_MODULE, *args]
    root.handlers.clear()  # pytest's own: the command logs as it would with none
    importlib.invalidate_caches()  # a module a test has just written is found
    if cwd is not None:
        os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(here)
        os.environ.clear()
        os.environ.update(environ)
        sys.argv = argv
        sys.path[:] = path
        root.handlers[:] = handlers
        if cwd is not None:
            _forget_modules_of(Path(cwd).resolve(), set(sys.modules) - modules)
        if frozen == 0:
            gc.unfreeze()
        gc.set_threshold(*thresholds)  # `serve` tunes the collector for serving
        left_paused = collecting and not gc.isenabled()
        if left_paused:
            gc.enable()
    assert not left_paused, "the command left the garbage collector paused"


def _forget_modules_of(folder: Path, names: set[str]) -> None:
    """Drop the modules of ``names`` imported from files under ``folder``."""
    for name in names:
        file = getattr(sys.modules.get(name), "__file__", None)
        if file is not None and Path(file).resolve().is_relative_to(folder):
            del sys.modules[name]


@contextlib.contextmanager
def _captured(stdin: str) -> Iterator[list[str]]:
    """``stdin`` the standard input (not a terminal), and stdout and stderr captured
    (the streams and file descriptors 1 and 2); when the block ends, what each
    received is in the list given: ``[stdout, stderr]``."""
    output: list[str] = []
    sys.stdout.flush()
    sys.stderr.flush()
    streams = sys.stdin, sys.stdout, sys.stderr
    saved = os.dup(1), os.dup(2)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        # As Python makes them for pipes: stdout buffered, stderr by lines.
        ours = (
            io.TextIOWrapper(io.BytesIO(stdin.encode()), encoding="utf-8"),
            open(1, "w", encoding="utf-8", closefd=False),  # noqa: SIM115
            open(2, "w", encoding="utf-8", errors="backslashreplace", buffering=1, closefd=False),  # noqa: SIM115
        )
        sys.stdin, sys.stdout, sys.stderr = ours
        try:
            yield output
        finally:
            for stream in ours:
                stream.close()  # flushed; 1 and 2 stay open
            sys.stdin, sys.stdout, sys.stderr = streams
            for fd, copy in ((1, saved[0]), (2, saved[1])):
                os.dup2(copy, fd)
                os.close(copy)
            for file in (out, err):
                file.seek(0)
                output.append(file.read().decode("utf-8", errors="replace"))


def error_line(done: subprocess.CompletedProcess[str]) -> str:
    """The one line a failed command printed on stderr (asserting it failed, with one
    line and nothing on stdout)."""
    assert done.returncode != 0, done.stdout
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("toolsets: ")
    return lines[0]


def stdout_json(done: subprocess.CompletedProcess[str]) -> Any:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def warning_line(done: subprocess.CompletedProcess[str]) -> str:
    """The one warning line a command that succeeded printed on stderr."""
    assert done.returncode == 0, done.stderr
    [line] = [line for line in done.stderr.splitlines() if line.startswith("toolsets: ")]
    assert line.startswith("toolsets: warning: ")
    return line


def read_terminal(fd: int) -> bytes:
    """What is there to read on a terminal's controlling end (nothing once the other end
    is closed)."""
    try:
        return os.read(fd, 65536)
    except OSError:  # the terminal's other end is closed: all was read
        return b""


def all_shown(fd: int) -> bytes:
    """All a terminal's controlling end ``fd`` shows until its other end is closed."""
    shown = b""
    while chunk := read_terminal(fd):
        shown += chunk
    return shown


BROKEN_REF = """
openapi: 3.0.3
info: {title: t, version: "1"}
paths:
  /a:
    get:
      operationId: a
      parameters:
        - $ref: '#/components/parameters/missing'
      responses: {"200": {description: ok}}
  /b:
    get:
      operationId: b
      responses: {"200": {description: ok}}
"""
"""A spec whose operation ``a`` refers to a parameter it does not have (``b`` is fine)."""

SECURED_SPEC: dict[str, Any] = {
    **NOTES_SPEC,
    "components": {"securitySchemes": {"notes-token": {"type": "http", "scheme": "bearer"}}},
    "security": [{"notes-token": []}],
}
"""The notes API behind a bearer token (the scheme ``notes-token``, so the environment
variable is ``TOOLSETS_CREDENTIAL_NOTES_TOKEN``)."""

MODULE = '''
from toolsets import AuthConfig, StaticToolset, ToolContext, tool


@tool(read_only=True)
def shout(text: str) -> str:
    """Say it louder.

    Args:
        text: What to say.
    """
    return text.upper()


def whisper(text: str) -> str:
    """Say it softer."""
    return text.lower()


def add(a: int, b: int) -> dict[str, int]:
    """Add two integers."""
    return {"total": a + b}


@tool(requires_confirmation=True)
def wipe(disk: str) -> str:
    """Erase a disk."""
    return f"{disk} wiped"


VAULT = AuthConfig(scheme_name="vault", scheme={"type": "http", "scheme": "basic"})


@tool(auth_config=VAULT)
def who(tool_context: ToolContext) -> str:
    """Who the vault's credential says the caller is."""
    credential = tool_context.auth_credential
    assert credential is not None
    return f"{credential.username} ({len(credential.secret or '')} characters of password)"


toolset = StaticToolset([shout])
both = [shout, whisper]
number = 42
everything = [shout, whisper, add, wipe, who]
'''
"""A Python module of tools: ``clitools:toolset``, ``clitools:both``, ``clitools:whisper``,
``clitools:everything`` (with ``add`` and ``wipe``, which asks for confirmation)."""


def write_sources(folder: Path) -> dict[str, Path]:
    """The sources the tests use, written into ``folder``: ``notes``, ``secured`` and
    ``tagged`` (its operations tagged ``Notes``, the delete ``Admin``) specs,
    ``config`` (an ``mcpServers`` file) and ``module`` (``clitools.py``)."""
    paths = {
        "notes": folder / "notes.json",
        "secured": folder / "secured.yaml",
        "config": folder / "mcp.json",
        "module": folder / "clitools.py",
        "tagged": folder / "tagged.json",
    }
    paths["notes"].write_text(json.dumps(NOTES_SPEC))
    tagged = json.loads(json.dumps(NOTES_SPEC))
    for path_item in tagged["paths"].values():
        for method, operation in path_item.items():
            if method in ("get", "post", "delete"):
                operation["tags"] = ["Notes"] if method != "delete" else ["Admin"]
    paths["tagged"].write_text(json.dumps(tagged))
    paths["secured"].write_text(json.dumps(SECURED_SPEC))  # JSON is YAML
    config = {"mcpServers": {"fixture": {"command": sys.executable, "args": [SERVER, "stdio"]}}}
    paths["config"].write_text(json.dumps(config))
    paths["module"].write_text(MODULE)
    return paths
