"""``toolsets validate`` on real spec files: every problem with its JSON pointer,
counted, the exit status 1; a progress bar on a terminal only."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.cli.helpers import (
    BROKEN_REF,
    TIMEOUT,
    all_shown,
    entry_point,
    environment,
    error_line,
    toolsets_command,
)
from tests.helpers import ROOT


def test_long_work_shows_a_progress_bar_on_a_terminal_and_nothing_when_piped(
    tmp_path: Path,
) -> None:
    import pty

    spec = str(ROOT / "fixtures" / "openapi" / "bookshop.yaml")
    main, terminal = pty.openpty()
    try:
        done = subprocess.run(
            [*entry_point(), "validate", spec],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=terminal,
            env=environment({"TERM": "xterm", "COLUMNS": "100"}),
            timeout=TIMEOUT,
            check=False,
        )
        os.close(terminal)
        shown = all_shown(main)
    finally:
        os.close(main)
    assert done.returncode == 0
    assert b"Validating: " in shown  # the bar, drawn on the terminal (then cleared)
    piped = toolsets_command("validate", spec)
    assert piped.returncode == 0
    assert piped.stderr == ""


def test_validate_shows_a_problem_loading_finds_once(tmp_path: Path) -> None:
    spec = tmp_path / "broken.yaml"
    spec.write_text(BROKEN_REF)
    done = toolsets_command("validate", str(spec))
    assert done.returncode == 1
    [problem] = done.stdout.strip().splitlines()
    assert problem.endswith("the reference target '/components/parameters/missing' does not exist")
    assert "#/paths/~1a/get" in problem
    # stderr: the count alone (no log line repeating the problem).
    assert done.stderr.strip().splitlines() == [f"toolsets: {spec}: 1 problem"]


def test_validate_counts_one_operation_in_the_singular(tmp_path: Path) -> None:
    spec = tmp_path / "one.yaml"
    spec.write_text(
        BROKEN_REF.split("  /b:")[0].replace(
            "      parameters:\n        - $ref: '#/components/parameters/missing'\n", ""
        )
    )
    done = toolsets_command("validate", str(spec))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"{spec}: valid, 1 operation"


INVALID = """\
openapi: 3.1.0
info:
  title: Broken
paths:
  /a:
    get:
      operationId: 3
      responses:
        "200":
          description: fine
"""


def test_a_valid_spec_validates_with_its_operations_counted() -> None:
    done = toolsets_command("validate", str(ROOT / "fixtures" / "openapi" / "bookshop.yaml"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("bookshop.yaml: valid, 6 operations")


def test_every_problem_is_listed_with_its_json_pointer_and_the_exit_status_is_1(
    tmp_path: Path,
) -> None:
    spec = tmp_path / "invalid.yaml"
    spec.write_text(INVALID)
    done = toolsets_command("validate", str(spec))
    assert done.returncode == 1
    lines = done.stdout.strip().splitlines()
    assert any("invalid.yaml#/info: 'version' is a required property" in line for line in lines)
    assert any("#/paths/~1a/get/operationId: 3 is not of type 'string'" in line for line in lines)
    assert done.stderr.strip() == f"toolsets: {spec}: {len(lines)} problems"
    problems = json.loads(toolsets_command("validate", str(spec), "--json").stdout)
    assert {"/info", "/paths/~1a/get/operationId"} <= {p["pointer"] for p in problems}


def test_validating_a_missing_or_unreadable_spec_is_one_line(tmp_path: Path) -> None:
    line = error_line(toolsets_command("validate", str(tmp_path / "none.yaml")))
    assert "none.yaml" in line
    assert "cannot read" in line
    broken = tmp_path / "broken.json"
    broken.write_text('{"openapi": ')
    assert "invalid JSON or YAML" in error_line(toolsets_command("validate", str(broken)))
