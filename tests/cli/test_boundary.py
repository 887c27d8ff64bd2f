"""The command's one error boundary and its face: every error one line on stderr and a
non-zero exit status (``--debug`` adds the traceback), log records as lines, usage
errors pointing at ``--help``, the help and the version, and the entry point (without
the ``cli`` extra, the line that installs it)."""

from __future__ import annotations

import logging
import os
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

from tests.cli.helpers import (
    BROKEN_REF,
    SCRIPT,
    SRC,
    TIMEOUT,
    error_line,
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
