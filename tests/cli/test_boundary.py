"""The command's one error boundary and its face: every error one line on stderr and a
non-zero exit status (``--debug`` adds the traceback), log records as lines, usage
errors pointing at ``--help``, the help and the version, and the entry point (without
the ``cli`` extra, the line that installs it)."""

from __future__ import annotations

import logging
import os
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import tomllib
from pathlib import Path

from tests.cli.helpers import (
    BROKEN_REF,
    FIXTURE_STDIO,
    SCRIPT,
    SRC,
    TIMEOUT,
    entry_point,
    environment,
    error_line,
    read_terminal,
    stdout_json,
    toolsets_command,
    toolsets_process,
    warning_line,
)
from tests.helpers import ROOT
from tests.mcp.helpers import SERVER


def test_an_mcp_servers_own_log_line_begins_with_the_servers_name() -> None:
    # The fixture logs through an SDK call the SDK now warns about: not an error there.
    quiet = f"{sys.executable} -W 'ignore:The logging' {SERVER} stdio"
    done = toolsets_command("call", "--stdio", quiet, "log", "message=disk almost full", "--yes")
    assert done.returncode == 0, done.stderr
    name = " ".join(shlex.split(quiet))  # the command, as the server is named
    assert f"{name}: warning: disk almost full [fixture]" in done.stderr
    assert "toolsets: warning" not in done.stderr


def test_debug_shows_the_traceback_too() -> None:
    done = toolsets_command("list", "no_such_module_xyz:tools", "--debug")
    assert done.returncode == 1
    assert "Traceback (most recent call last)" in done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("toolsets: cannot import")


def test_a_usage_error_is_one_line_pointing_at_help(sources: dict[str, Path]) -> None:
    line = error_line(toolsets_command("list", "--frobnicate"))
    assert "No such option" in line
    assert "--frobnicate" in line
    assert "toolsets list --help" in line
    assert error_line(toolsets_command("list")).startswith("toolsets: no SOURCE given")
    forgot = error_line(toolsets_command("inspect", str(sources["notes"])))
    assert f"inspect needs the name of a TOOL after {sources['notes']}" in forgot
    bare = toolsets_command()
    assert bare.returncode == 2
    assert bare.stdout == ""
    assert "Commands:" in bare.stderr


def test_every_command_has_help_with_examples_and_the_version_is_shown() -> None:
    for command in ("list", "inspect", "call", "validate", "run", "serve"):
        done = toolsets_command(command, "--help")
        assert done.returncode == 0, done.stderr
        assert "Examples:" in done.stdout, command
    version = toolsets_command("--version")
    assert version.stdout.strip() == "toolsets, version 0.1.0"


def test_the_entry_point_is_declared_with_the_cli_extra() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["scripts"] == {"toolsets": "toolsets.cli:main"}
    extra = {name.split(">")[0] for name in project["optional-dependencies"]["cli"]}
    assert extra == {"click", "rich"}
    assert "toolsets-ai[cli]" in project["optional-dependencies"]["dev"]


def test_without_the_cli_extra_the_command_says_how_to_install_it() -> None:
    code = "import sys; sys.modules['rich'] = None; from toolsets.cli import main; main()"
    env = {**os.environ, "PYTHONPATH": SRC}
    done = subprocess.run(
        [sys.executable, "-c", code, "list"],
        capture_output=True,
        text=True,
        env=env,
        timeout=TIMEOUT,
    )
    assert done.returncode == 1
    [line] = done.stderr.strip().splitlines()
    # toolsets-ai is not on PyPI: the line names the clone this copy runs from.
    assert f"pip install '{Path(SRC).parent}[cli]'" in line
    assert "'rich'" in line


def test_the_install_line_of_a_copy_outside_a_clone_names_no_distribution_pypi_lacks(
    tmp_path: Path,
) -> None:
    shutil.copytree(Path(SRC) / "toolsets", tmp_path / "toolsets")
    code = "import sys; sys.modules['rich'] = None; from toolsets.cli import main; main()"
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", code, "list"],
        capture_output=True,
        text=True,
        env=env,
        timeout=TIMEOUT,
        cwd=tmp_path,
    )
    assert done.returncode == 1
    [line] = done.stderr.strip().splitlines()
    assert "toolsets-ai[cli]" not in line
    named = line.partition("pip install '")[2].partition("[cli]'")[0]
    if named == ".":  # not installed from a directory: how to run it in a clone
        assert "in your clone of toolsets-ai" in line
    else:  # the directory the installed distribution came from
        project = tomllib.loads((Path(named) / "pyproject.toml").read_text())["project"]
        assert project["name"] == "toolsets-ai"


def test_run_twice_in_one_process_each_run_shows_its_own_warnings_and_leaves_no_handler(
    tmp_path: Path,
) -> None:
    spec = tmp_path / "broken.yaml"
    spec.write_text(BROKEN_REF)
    for _ in range(2):
        done = toolsets_command("list", str(spec), "--json")
        assert warning_line(done).startswith("toolsets: warning: skipping GET /a: ")
    assert logging.getLogger("toolsets").handlers == []


# --- what only a process of its own shows -------------------------------------------------


def test_the_installed_script_is_the_command_and_its_printed_config_starts_it(
    sources: dict[str, Path],
) -> None:
    done = toolsets_process("serve", str(sources["notes"]), "--print-config")
    [entry] = stdout_json(done)["mcpServers"].values()
    assert entry["command"] == str(SCRIPT.resolve())  # by its path: clients have their PATH
    assert entry["args"][:2] == ["serve", str(sources["notes"].resolve())]


SITE_MODULES = """
import atexit
import os
import sys


def _write() -> None:
    with open(os.environ["TOOLSETS_TEST_MODULES"], "w", encoding="utf-8") as file:
        file.write("\\n".join(sorted(sys.modules)))


atexit.register(_write)
"""
"""A ``sitecustomize`` writing the names of the modules its process imported, as it ends."""

COMMAND_MODULES = {
    f"toolsets.cli.{name}"
    for name in ("_list", "_inspect", "_example", "_call", "_validate", "_serve", "_run")
} | {"toolsets.cli._items", "toolsets.cli._catalog", "toolsets.agent", "toolsets.models"}
"""What one command or another needs, and none all of them."""


def test_a_command_imports_what_it_needs_and_no_other_commands_module(
    sources: dict[str, Path], tmp_path: Path
) -> None:
    (tmp_path / "sitecustomize.py").write_text(SITE_MODULES)
    written = tmp_path / "modules.txt"
    env = {
        "PYTHONPATH": os.pathsep.join([SRC, str(tmp_path)]),
        "TOOLSETS_TEST_MODULES": str(written),
    }
    spec = str(sources["notes"])
    bookshop = str(ROOT / "fixtures" / "openapi" / "bookshop.yaml")
    for args, needed in (
        (["list", spec, "--json"], {"toolsets.cli._list"}),
        (["inspect", spec, "get_note"], {"toolsets.cli._inspect", "toolsets.cli._example"}),
        (["validate", bookshop], {"toolsets.cli._validate"}),
    ):
        done = toolsets_process(*args, env=env)
        assert done.returncode == 0, done.stderr
        imported = set(written.read_text(encoding="utf-8").split())
        assert imported & COMMAND_MODULES == needed, args[0]


ENDING_TIMEOUT = 3 * TIMEOUT
"""How long an interrupted ``toolsets`` process may take to end (bounded steps: the
server's stop, coverage's data written; seconds each on a busy machine)."""


def test_an_interrupt_during_a_call_is_one_line_and_exit_status_130() -> None:
    # Stderr is a terminal, so the call's progress says when the call is under way.
    controller, terminal = os.openpty()
    process = subprocess.Popen(
        [*entry_point(), "call", "--stdio", FIXTURE_STDIO, "slow", "seconds=60", "--yes"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=terminal,
        # On SIGABRT the process shows where each of its threads waits.
        env=environment({"PYTHONFAULTHANDLER": "1"}),
        # Ctrl-C's disposition as at a terminal's prompt: a suite started in the
        # background has SIGINT ignored, which its children inherit (and rightly keep).
        preexec_fn=_interruptible,
    )
    os.close(terminal)
    shown = _Shown(controller)
    try:
        assert shown.reached(b"slow: ", TIMEOUT), shown.text()
        process.send_signal(signal.SIGINT)
        try:
            stdout, _ = process.communicate(timeout=ENDING_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.send_signal(signal.SIGABRT)
            process.communicate(timeout=TIMEOUT)
            raise AssertionError(
                f"not ended {ENDING_TIMEOUT} s after SIGINT:\n{shown.text()}"
            ) from None
    finally:
        process.kill()
        process.wait(TIMEOUT)
        shown.close()
    assert process.returncode == 130, shown.text()
    assert stdout == b""
    assert shown.text().strip().splitlines()[-1] == "toolsets: aborted"


def _interruptible() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class _Shown:
    """What a terminal shows, read from its controlling end ``fd`` all along by a thread
    of its own: a terminal nobody reads fills, and the process writing to it then waits
    (its progress line is redrawn several times a second)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._shown = b""
        self._ended = False
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while chunk := read_terminal(self._fd):
            with self._changed:
                self._shown += chunk
                self._changed.notify_all()
        with self._changed:
            self._ended = True
            self._changed.notify_all()

    def reached(self, text: bytes, timeout: float) -> bool:
        """Whether ``text`` is shown within ``timeout`` seconds (False at once if the
        terminal's other end closes first)."""
        with self._changed:
            self._changed.wait_for(lambda: text in self._shown or self._ended, timeout)
            return text in self._shown

    def text(self) -> str:
        """All shown so far."""
        with self._changed:
            return self._shown.decode(errors="replace")

    def close(self) -> None:
        """Read what is left (the process has ended) and close the terminal."""
        self._reader.join(TIMEOUT)
        os.close(self._fd)
