"""Running the real ``toolsets`` command in a subprocess (``python -m toolsets.cli``, the
entry point's module), and the sources the command-line tests share: the notes API's
spec (and a variant with a security scheme) written to files, an ``mcpServers`` file
naming the fixture MCP server, and a Python module of tools."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import coverage

import toolsets
from tests.adapters.helpers import NOTES_SPEC
from tests.helpers import ROOT
from tests.mcp.helpers import SERVER

SRC = str(Path(toolsets.__file__).resolve().parent.parent)
"""The directory the toolsets under test is imported from (the subprocess's too)."""
FIXTURE_STDIO = f"{sys.executable} {SERVER} stdio"
"""``--stdio`` for the fixture MCP server."""
TIMEOUT = 60


def entry_point() -> list[str]:
    """The command that runs ``toolsets``: ``python -m toolsets.cli``, under coverage
    when the tests measure it (its data then combined with theirs)."""
    measuring = coverage.Coverage.current()
    if measuring is None:
        return [sys.executable, "-m", "toolsets.cli"]
    rcfile = str(ROOT / "pyproject.toml")
    return [
        sys.executable,
        "-m",
        "coverage",
        "run",
        "-p",
        f"--rcfile={rcfile}",
        "-m",
        "toolsets.cli",
    ]


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


def toolsets_command(
    *args: str,
    stdin: str = "",
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """``toolsets ARGS`` run to its end, its stdin given, stdout and stderr captured."""
    return subprocess.run(
        [*entry_point(), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=environment(env),
        cwd=cwd,
    )


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
