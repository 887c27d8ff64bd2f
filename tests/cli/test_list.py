"""``toolsets list``: each source's tools as a table with their hints and parameters, or
as JSON for scripts (``--schemas``: their parameter schemas too); a spec of thousands of
operations listed without building every schema; progress on a terminal only."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.cli.helpers import (
    TIMEOUT,
    all_shown,
    entry_point,
    environment,
    error_line,
    stdout_json,
    toolsets_command,
)


def test_list_shows_each_operation_of_a_spec_with_its_hints_and_parameters(
    sources: dict[str, Path],
) -> None:
    done = toolsets_command("list", str(sources["notes"]))
    assert done.returncode == 0, done.stderr
    rows = {line.split()[0]: line for line in done.stdout.splitlines()[1:] if line.strip()}
    assert set(rows) == {"list_notes", "create_note", "get_note", "delete_note"}
    assert "read-only" in rows["get_note"]
    assert "destructive" in rows["delete_note"]
    assert "title*" in rows["create_note"]
    assert done.stderr.strip() == "4 tools"  # a note on stderr; the table alone on stdout


def test_list_json_is_plain_json_on_stdout_for_scripts(sources: dict[str, Path]) -> None:
    tools = stdout_json(toolsets_command("list", str(sources["notes"]), "--json"))
    by_name = {tool["name"]: tool for tool in tools}
    assert by_name["get_note"]["read_only"] is True
    assert by_name["delete_note"]["requires_confirmation"] is True
    assert by_name["delete_note"]["destructive"] is True
    assert by_name["get_note"]["operation"] == {
        "method": "GET",
        "path": "/notes/{note_id}",
        "url": None,  # the spec names no server, and no --base-url was given
        "operation_id": "get_note",
    }
    assert "parameters" not in by_name["create_note"]  # --schemas adds them
    with_schemas = toolsets_command("list", str(sources["notes"]), "--json", "--schemas")
    by_name = {tool["name"]: tool for tool in stdout_json(with_schemas)}
    assert by_name["create_note"]["parameters"]["required"] == ["title"]


def test_list_json_of_mcp_and_python_tools_says_no_operation(sources: dict[str, Path]) -> None:
    folder = sources["module"].parent
    tools = stdout_json(
        toolsets_command("list", "clitools:everything", "--json", "--schemas", cwd=folder)
    )
    by_name = {tool["name"]: tool for tool in tools}
    assert "operation" not in by_name["add"]
    assert by_name["add"]["parameters"]["required"] == ["a", "b"]
    assert by_name["wipe"]["requires_confirmation"] is True


def test_schemas_without_json_is_a_usage_error(sources: dict[str, Path]) -> None:
    line = error_line(toolsets_command("list", str(sources["notes"]), "--schemas"))
    assert "--schemas is for --json" in line


def many_operations(count: int) -> dict[str, object]:
    """A spec of ``count`` GET operations (``get_0``...), and ``broken``, whose
    parameter's schema refers to a component the spec does not have."""
    paths: dict[str, object] = {
        f"/r{i}": {
            "get": {
                "operationId": f"get_{i}",
                "summary": f"Get resource {i}",
                "parameters": [{"name": "q", "in": "query", "schema": {"type": "string"}}],
                "responses": {"200": {"description": "ok"}},
            }
        }
        for i in range(count)
    }
    paths["/broken"] = {
        "get": {
            "operationId": "broken",
            "parameters": [
                {"name": "x", "in": "query", "schema": {"$ref": "#/components/schemas/Gone"}}
            ],
            "responses": {"200": {"description": "ok"}},
        }
    }
    return {
        "openapi": "3.0.3",
        "info": {"title": "many", "version": "1"},
        "servers": [{"url": "https://many.example"}],
        "paths": paths,
    }


def test_listing_or_inspecting_a_spec_of_thousands_of_operations_builds_no_other_schema(
    tmp_path: Path,
) -> None:
    # Past 2,000 operations the toolset builds each schema on first need, as the
    # command now lets it: the broken operation is not found (nor warned about) until
    # it is used, where the command used to build (and check) every schema first.
    spec = tmp_path / "many.json"
    spec.write_text(json.dumps(many_operations(2100)))
    listed = toolsets_command("list", str(spec), "--json")
    assert listed.stderr == ""
    names = [tool["name"] for tool in stdout_json(listed)]
    assert len(names) == 2101
    assert "broken" in names
    inspected = toolsets_command("inspect", str(spec), "get_7", "--json")
    assert inspected.stderr == ""
    assert stdout_json(inspected)["parameters"]["properties"] == {"q": {"type": "string"}}
    line = error_line(toolsets_command("inspect", str(spec), "broken"))
    assert "broken cannot be offered or called" in line
    assert "/paths/~1broken/get" in line


def test_progress_shows_while_a_spec_loads_on_a_terminal_only(sources: dict[str, Path]) -> None:
    controller, terminal = os.openpty()
    env = environment()
    try:
        process = subprocess.Popen(
            [*entry_point(), "list", str(sources["notes"]), "--json"],
            stdout=subprocess.PIPE,
            stderr=terminal,
            env=env,
        )
        stdout, _ = process.communicate(timeout=TIMEOUT)
        os.close(terminal)
        shown = all_shown(controller)
    finally:
        os.close(controller)
    assert process.returncode == 0
    assert "Loading the spec…" in shown.decode()
    assert len(json.loads(stdout)) == 4  # stdout has the result alone
    # Not on a terminal (the other tests): stderr has no progress.
    assert toolsets_command("list", str(sources["notes"]), "--json").stderr == ""


def test_list_shows_which_tools_ask_under_the_confirm_policy(sources: dict[str, Path]) -> None:
    spec = str(sources["notes"])

    def asking(*options: str) -> set[str]:
        listed = stdout_json(toolsets_command("list", spec, "--json", *options))
        return {tool["name"] for tool in listed if tool["requires_confirmation"]}

    assert asking() == {"delete_note"}
    assert asking("--confirm", "never") == set()
    assert asking("--confirm", "always") == {"list_notes", "create_note", "get_note", "delete_note"}


def test_a_list_of_no_tools_prints_no_table(sources: dict[str, Path]) -> None:
    done = toolsets_command("list", str(sources["notes"]), "--method", "put")
    assert done.returncode == 0
    assert done.stdout == ""
