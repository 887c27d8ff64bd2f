"""``toolsets list``, ``inspect`` and ``call``, run as a subprocess on real sources: the
notes API's spec against the notes server on 127.0.0.1, the fixture MCP server over stdio
and over HTTP, an ``mcpServers`` file, and a Python module."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

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
    write_sources,
)
from tests.helpers import ROOT, free_port
from tests.mcp.helpers import SERVER, HttpServer
from toolsets._invoke import DECLINED


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return write_sources(tmp_path_factory.mktemp("sources"))


# --- list --------------------------------------------------------------------------


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


def test_list_selects_by_method_path_tag_and_name_as_the_python_api_does(
    sources: dict[str, Path],
) -> None:
    spec = str(sources["notes"])
    gets = stdout_json(toolsets_command("list", spec, "--method", "GET", "--json"))
    assert [tool["name"] for tool in gets] == ["list_notes", "get_note"]
    one = toolsets_command("list", spec, "--path", "/notes/*", "--method", "delete", "--json")
    assert [tool["name"] for tool in stdout_json(one)] == ["delete_note"]
    named = toolsets_command("list", spec, "--name", "*_notes", "--name", "get_*", "--json")
    assert [tool["name"] for tool in stdout_json(named)] == ["list_notes", "get_note"]
    assert stdout_json(toolsets_command("list", spec, "--tag", "none", "--json")) == []


def test_list_of_an_mcp_servers_file_names_each_servers_tools_after_it(
    sources: dict[str, Path],
) -> None:
    tools = stdout_json(toolsets_command("list", str(sources["config"]), "--json"))
    names = {tool["name"] for tool in tools}
    assert {"fixture_add", "fixture_echo", "fixture_delete_file"} <= names


def test_list_of_a_python_module_toolset_tools_or_functions(sources: dict[str, Path]) -> None:
    folder = sources["module"].parent
    toolset = stdout_json(toolsets_command("list", "clitools:toolset", "--json", cwd=folder))
    assert [tool["name"] for tool in toolset] == ["shout"]
    assert toolset[0]["read_only"] is True
    both = stdout_json(toolsets_command("list", "clitools:both", "--json", cwd=folder))
    assert [tool["name"] for tool in both] == ["shout", "whisper"]
    line = error_line(toolsets_command("list", "clitools:number", cwd=folder))
    assert "clitools:number is a int, not a toolset" in line


def test_several_sources_combine_into_one_list(
    sources: dict[str, Path], http_server: HttpServer
) -> None:
    done = toolsets_command(
        "list", str(sources["notes"]), "--http", http_server.url, "--name", "*note*", "--json"
    )
    names = [tool["name"] for tool in stdout_json(done)]
    assert names[:4] == ["list_notes", "create_note", "get_note", "delete_note"]
    assert "echo" not in names  # --name applies to every source
    everything = toolsets_command("list", str(sources["notes"]), "--http", http_server.url)
    assert everything.returncode == 0, everything.stderr
    assert "echo" in everything.stdout


# --- inspect ----------------------------------------------------------------------------


def test_inspect_shows_the_description_the_schema_and_an_example_call(
    sources: dict[str, Path],
) -> None:
    done = toolsets_command("inspect", str(sources["notes"]), "create_note")
    assert done.returncode == 0, done.stderr
    assert "Create a note" in done.stdout
    assert '"minLength": 1' in done.stdout  # the full schema
    example = done.stdout.splitlines()[-1]
    assert example.startswith(f"toolsets call {sources['notes']} create_note --args ")


def test_the_example_call_inspect_makes_is_valid_and_runs(
    sources: dict[str, Path], api: NotesApi
) -> None:
    spec = str(sources["notes"])
    described = stdout_json(toolsets_command("inspect", spec, "create_note", "--json"))
    example = described["example"]
    assert example == {"title": "example"}
    done = toolsets_command(
        "call", spec, "create_note", "--base-url", api.url, "--args", json.dumps(example)
    )
    assert stdout_json(done)["title"] == "example"


def test_an_operation_is_found_by_its_operation_id_as_the_spec_writes_it(tmp_path: Path) -> None:
    spec = tmp_path / "ids.yaml"
    spec.write_text(
        "openapi: 3.1.0\ninfo: {title: ids, version: '1'}\npaths:\n  /r:\n    get:\n"
        "      operationId: repos/get\n      responses: {'200': {description: ok}}\n"
    )
    described = stdout_json(toolsets_command("inspect", str(spec), "repos/get", "--json"))
    assert described["name"] == "repos_get"


def test_inspect_shows_an_operations_request_and_what_it_returns() -> None:
    spec = str(ROOT / "fixtures" / "openapi" / "bookshop.yaml")
    described = stdout_json(toolsets_command("inspect", spec, "books_get", "--json"))
    assert described["operation"] == {
        "method": "GET",
        "path": "/books/{isbn}",
        "url": "https://bookshop.example/api/v1/books/{isbn}",
        "operation_id": "books/get",
        "response": {
            "status": "200",
            "content_type": "application/json",
            "description": "The book.",
        },
    }
    returns = described["returns"]  # the spec's Book, its $ref followed
    assert set(returns["allOf"][0]["properties"]) == {"isbn", "title", "author", "price", "year"}
    text = toolsets_command("inspect", spec, "books_get")
    assert text.returncode == 0, text.stderr
    assert "GET https://bookshop.example/api/v1/books/{isbn}  (operationId books/get)" in (
        text.stdout
    )
    assert "Returns (200 application/json: The book.)" in text.stdout
    assert '"isbn": {' in text.stdout.partition("Returns")[2]


def test_the_url_an_operation_is_sent_to_is_shown_without_the_base_urls_password() -> None:
    spec = str(ROOT / "fixtures" / "openapi" / "bookshop.yaml")
    base = ["--base-url", "https://alice:s3cret-pw@api.example.com/v1"]
    listed = stdout_json(toolsets_command("list", spec, *base, "--json"))
    text = toolsets_command("inspect", spec, "books_get", *base)
    assert text.returncode == 0, text.stderr
    assert {tool["operation"]["url"] for tool in listed} >= {
        "https://api.example.com/v1/books/{isbn}"
    }
    request_line = next(line for line in text.stdout.splitlines() if line.startswith("GET "))
    assert request_line.startswith("GET https://api.example.com/v1/books/{isbn}")
    assert "s3cret-pw" not in json.dumps(listed)


def test_inspect_says_when_an_operation_has_no_server_to_send_to(
    sources: dict[str, Path],
) -> None:
    text = toolsets_command("inspect", str(sources["notes"]), "get_note")
    assert text.returncode == 0, text.stderr
    assert "GET /notes/{note_id} (no server URL: give --base-url to call it)" in text.stdout
    assert "Returns (200: the note)" in text.stdout  # no body declared: no schema


def test_a_success_response_that_cannot_be_read_is_a_warning_and_the_rest_is_shown(
    tmp_path: Path,
) -> None:
    spec = tmp_path / "gone.json"
    missing = {"$ref": "#/components/schemas/Gone"}
    ok = {"description": "ok", "content": {"application/json": {"schema": missing}}}
    spec.write_text(
        json.dumps(
            {
                "openapi": "3.0.3",
                "info": {"title": "gone", "version": "1"},
                "paths": {"/r": {"get": {"operationId": "get_r", "responses": {"200": ok}}}},
            }
        )
    )
    done = toolsets_command("inspect", str(spec), "get_r", "--json")
    assert done.returncode == 0, done.stderr
    described = json.loads(done.stdout)
    assert described["returns"] is None
    assert described["operation"]["method"] == "GET"
    assert done.stderr.startswith("toolsets: warning: what get_r returns cannot be shown: ")
    assert "Gone" in done.stderr


def test_inspect_of_a_tool_on_an_mcp_server(sources: dict[str, Path]) -> None:
    described = stdout_json(toolsets_command("inspect", "--stdio", FIXTURE_STDIO, "add", "--json"))
    assert described["parameters"]["required"] == ["a", "b"]
    assert described["example"] == {"a": 1, "b": 1}
    assert described["returns"]["required"] == ["total"]  # the tool's output schema


# --- call -------------------------------------------------------------------------------


def test_call_takes_json_as_every_command_that_prints_results_does() -> None:
    done = toolsets_command("call", "--stdio", FIXTURE_STDIO, "add", "a=1", "b=2", "--json")
    assert stdout_json(done) == {"total": 3}


def test_an_mcp_servers_own_log_line_begins_with_the_servers_name() -> None:
    # The fixture logs through an SDK call the SDK now warns about: not an error there.
    quiet = f"{sys.executable} -W 'ignore:The logging' {SERVER} stdio"
    done = toolsets_command("call", "--stdio", quiet, "log", "message=disk almost full", "--yes")
    assert done.returncode == 0, done.stderr
    name = " ".join(shlex.split(quiet))  # the command, as the server is named
    assert f"{name}: warning: disk almost full [fixture]" in done.stderr
    assert "toolsets: warning" not in done.stderr


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
        shown = b""
        while True:
            try:
                chunk = os.read(main, 65536)
            except OSError:  # the terminal's other end is closed: all is read
                break
            if not chunk:
                break
            shown += chunk
    finally:
        os.close(main)
    assert done.returncode == 0
    assert b"Validating: " in shown  # the bar, drawn on the terminal (then cleared)
    piped = toolsets_command("validate", spec)
    assert piped.returncode == 0
    assert piped.stderr == ""


def test_call_sends_the_request_to_the_api_and_prints_its_json_result(
    sources: dict[str, Path], api: NotesApi
) -> None:
    spec = str(sources["notes"])
    done = toolsets_command("call", spec, "create_note", "title=groceries", "--base-url", api.url)
    note = stdout_json(done)
    assert note["title"] == "groceries"
    assert done.stderr == ""
    assert api.notes[note["id"]]["title"] == "groceries"
    got = toolsets_command("call", spec, "get_note", f"note_id={note['id']}", "--base-url", api.url)
    assert stdout_json(got) == note  # note_id=… read as JSON: the parameter is an integer


def test_call_reads_arguments_as_key_value_key_json_or_args(sources: dict[str, Path]) -> None:
    folder = sources["module"].parent
    tools = "clitools:everything"
    done = toolsets_command("call", tools, "add", "a=1", "b:=2", cwd=folder)
    assert stdout_json(done) == {"total": 3}
    done = toolsets_command("call", tools, "add", "--args", '{"a": 2, "b": 5}', cwd=folder)
    assert stdout_json(done) == {"total": 7}
    # A string parameter keeps what looks like JSON as text.
    assert stdout_json(toolsets_command("call", tools, "shout", "text=42", cwd=folder)) == "42"


def test_call_of_a_python_function(sources: dict[str, Path]) -> None:
    folder = sources["module"].parent
    done = toolsets_command("call", "clitools:whisper", "whisper", "text=HUSH", cwd=folder)
    assert stdout_json(done) == "hush"


def test_call_of_a_tool_of_an_mcp_servers_file(sources: dict[str, Path]) -> None:
    done = toolsets_command("call", str(sources["config"]), "fixture_add", "a=20", "b=22")
    assert stdout_json(done) == {"total": 42}


def test_a_call_that_needs_confirmation_is_refused_without_a_terminal_or_yes(
    sources: dict[str, Path], api: NotesApi
) -> None:
    spec = str(sources["notes"])
    before = len(api.requests)
    line = error_line(
        toolsets_command("call", spec, "delete_note", "note_id=1", "--base-url", api.url)
    )
    assert "delete_note needs confirmation" in line
    assert "--yes" in line
    assert len(api.requests) == before  # nothing was sent


def test_yes_confirms_a_call_without_asking(sources: dict[str, Path], api: NotesApi) -> None:
    spec = str(sources["notes"])
    note = stdout_json(
        toolsets_command("call", spec, "create_note", "title=old", "--base-url", api.url)
    )
    done = toolsets_command(
        "call", spec, "delete_note", f"note_id={note['id']}", "--base-url", api.url, "--yes"
    )
    assert done.returncode == 0, done.stderr
    assert note["id"] not in api.notes


def _on_a_terminal(args: list[str], answer: str, cwd: Path) -> tuple[int, str]:
    """Run ``toolsets ARGS`` with a terminal as stdin, typing ``answer``; its exit status
    and stderr."""
    controller, terminal = os.openpty()
    env = environment()
    try:
        process = subprocess.Popen(
            [*entry_point(), *args],
            stdin=terminal,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=cwd,
        )
        os.write(controller, answer.encode() + b"\n")
        _, stderr = process.communicate(timeout=TIMEOUT)
    finally:
        os.close(terminal)
        os.close(controller)
    return process.returncode, stderr


def test_on_a_terminal_a_call_that_needs_confirmation_asks_first(
    sources: dict[str, Path],
) -> None:
    wipe = ["call", "clitools:everything", "wipe", "disk=sda"]
    folder = sources["module"].parent
    status, stderr = _on_a_terminal(wipe, "y", folder)
    assert status == 0, stderr
    assert "Allow the tool 'wipe' to run" in stderr
    status, stderr = _on_a_terminal(wipe, "n", folder)
    assert status == 1
    # The answer's newline echoes on the terminal, not on stderr (a pipe here).
    assert stderr.strip().endswith(f"toolsets: wipe: {DECLINED}")


def test_credentials_come_from_the_option_or_the_environment(
    sources: dict[str, Path], api: NotesApi
) -> None:
    spec = str(sources["secured"])
    flag = toolsets_command(
        "call", spec, "list_notes", "--base-url", api.url, "--credential", "notes-token=tok-1"
    )
    assert flag.returncode == 0, flag.stderr
    assert api.authorizations[-1] == "Bearer tok-1"
    env = toolsets_command(
        "call",
        spec,
        "list_notes",
        "--base-url",
        api.url,
        env={"TOOLSETS_CREDENTIAL_NOTES_TOKEN": "tok-2"},
    )
    assert env.returncode == 0, env.stderr
    assert api.authorizations[-1] == "Bearer tok-2"
    assert "tok-" not in flag.stdout + flag.stderr + env.stdout + env.stderr


def test_a_tool_of_any_source_gets_the_credential_it_asks_for_by_scheme_name(
    sources: dict[str, Path],
) -> None:
    folder = sources["module"].parent
    args = ["call", "clitools:everything", "who"]
    flag = toolsets_command(*args, "--credential", "vault=ann:pw123", cwd=folder)
    assert stdout_json(flag) == "ann (5 characters of password)"
    env = toolsets_command(*args, env={"TOOLSETS_CREDENTIAL_VAULT": "bob:pw"}, cwd=folder)
    assert stdout_json(env) == "bob (2 characters of password)"
    line = error_line(toolsets_command(*args, cwd=folder))
    assert "who needs the credential 'vault'" in line


def test_a_missing_credential_is_one_line_naming_the_option_and_the_variable(
    sources: dict[str, Path], api: NotesApi
) -> None:
    line = error_line(
        toolsets_command("call", str(sources["secured"]), "list_notes", "--base-url", api.url)
    )
    assert "list_notes needs the credential 'notes-token'" in line
    assert "--credential notes-token=VALUE" in line
    assert "TOOLSETS_CREDENTIAL_NOTES_TOKEN" in line


def test_a_credential_for_a_scheme_no_spec_defines_is_refused(sources: dict[str, Path]) -> None:
    line = error_line(
        toolsets_command("list", str(sources["secured"]), "--credential", "notes-tokn=x")
    )
    assert "notes-tokn" in line
    assert "no spec defines" in line


def test_headers_go_to_the_api_and_are_never_shown(sources: dict[str, Path], api: NotesApi) -> None:
    done = toolsets_command(
        "call",
        str(sources["notes"]),
        "list_notes",
        "--base-url",
        api.url,
        "--header",
        "Authorization=Bearer sekrit-77",
        "--debug",
    )
    assert done.returncode == 0, done.stderr
    assert api.authorizations[-1] == "Bearer sekrit-77"
    assert "sekrit" not in done.stdout + done.stderr


# --- bad input: one line, a non-zero exit --------------------------------------------


def test_a_missing_file_is_one_line_naming_it() -> None:
    line = error_line(toolsets_command("list", "no/such/spec.yaml"))
    assert "no such file: no/such/spec.yaml" in line


def test_a_broken_spec_is_one_line_naming_where(tmp_path: Path) -> None:
    spec = tmp_path / "broken.yaml"
    spec.write_text("openapi: 3.1.0\npaths: [\n")
    line = error_line(toolsets_command("list", str(spec)))
    assert "broken.yaml#" in line
    assert "invalid JSON or YAML" in line


def test_an_unknown_tool_is_one_line_with_the_closest_names(sources: dict[str, Path]) -> None:
    line = error_line(toolsets_command("call", str(sources["notes"]), "get_notes"))
    assert "no tool named 'get_notes'" in line
    assert "get_note" in line.split("'get_notes'", 1)[1]


def test_arguments_that_do_not_validate_name_the_field_and_send_nothing(
    sources: dict[str, Path], api: NotesApi
) -> None:
    before = len(api.requests)
    done = toolsets_command(
        "call", str(sources["notes"]), "list_notes", "limit=1000", "--base-url", api.url
    )
    assert done.returncode == 1
    assert json.loads(done.stdout)["fields"]["limit"]  # the result, for scripts
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("toolsets: list_notes: invalid arguments: limit: ")
    assert len(api.requests) == before


def test_an_unreachable_server_is_one_line_naming_it() -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"
    line = error_line(toolsets_command("list", "--http", url))
    assert f"cannot connect to MCP server {url}" in line
    line = error_line(toolsets_command("list", "--stdio", "no-such-command-xyz"))
    assert "no-such-command-xyz" in line


def test_an_unreachable_api_is_an_error_result_naming_the_cause(sources: dict[str, Path]) -> None:
    base = f"http://127.0.0.1:{free_port()}"
    done = toolsets_command("call", str(sources["notes"]), "list_notes", "--base-url", base)
    assert done.returncode == 1
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("toolsets: list_notes: ")
    assert "127.0.0.1" in line


def test_a_module_that_does_not_import_is_one_line() -> None:
    line = error_line(toolsets_command("list", "no_such_module_xyz:tools"))
    assert "cannot import no_such_module_xyz" in line


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


# --- the command itself -------------------------------------------------------------------


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
        shown = b""
        while chunk := _read(controller):
            shown += chunk
    finally:
        os.close(controller)
    assert process.returncode == 0
    assert "Loading the spec…" in shown.decode()
    assert len(json.loads(stdout)) == 4  # stdout has the result alone
    # Not on a terminal (the other tests): stderr has no progress.
    assert toolsets_command("list", str(sources["notes"]), "--json").stderr == ""


def _read(fd: int) -> bytes:
    try:
        return os.read(fd, 65536)
    except OSError:  # the terminal's other end is closed: all was read
        return b""


def test_a_stdio_servers_own_words_show_with_debug_only() -> None:
    command = f"{sys.executable} -c \"import sys; sys.exit('boom: no API key')\""
    quiet = error_line(toolsets_command("list", "--stdio", command))
    assert "cannot connect to MCP server" in quiet
    loud = toolsets_command("list", "--stdio", command, "--debug")
    assert "boom: no API key" in loud.stderr
    assert loud.stderr.strip().splitlines()[-1].startswith("toolsets: cannot connect")
