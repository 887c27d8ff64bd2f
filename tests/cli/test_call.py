"""``toolsets call``: arguments as key=value, key:=JSON or --args; the request sent to
the API and its result printed; confirmation (asked on a terminal, --yes, --confirm);
credentials from the option or the environment; progress on a terminal only; each
failure one line."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from pathlib import Path

from tests.adapters.helpers import NotesApi
from tests.cli.helpers import (
    FIXTURE_STDIO,
    TIMEOUT,
    entry_point,
    environment,
    error_line,
    stdout_json,
    toolsets_command,
)
from tests.helpers import free_port
from toolsets._invoke import DECLINED


def test_call_takes_json_as_every_command_that_prints_results_does() -> None:
    done = toolsets_command("call", "--stdio", FIXTURE_STDIO, "add", "a=1", "b=2", "--json")
    assert stdout_json(done) == {"total": 3}


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


def test_an_unreachable_api_is_an_error_result_naming_the_cause(sources: dict[str, Path]) -> None:
    base = f"http://127.0.0.1:{free_port()}"
    done = toolsets_command("call", str(sources["notes"]), "list_notes", "--base-url", base)
    assert done.returncode == 1
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("toolsets: list_notes: ")
    assert "127.0.0.1" in line


def test_call_confirm_never_sends_a_delete_without_asking_and_always_asks_before_a_get(
    sources: dict[str, Path], api: NotesApi
) -> None:
    spec = str(sources["notes"])
    note = stdout_json(
        toolsets_command("call", spec, "create_note", "title=gone", "--base-url", api.url)
    )
    done = toolsets_command(
        "call",
        spec,
        "delete_note",
        f"note_id={note['id']}",
        "--base-url",
        api.url,
        "--confirm",
        "never",
    )
    assert done.returncode == 0, done.stderr
    assert note["id"] not in api.notes
    before = len(api.requests)
    line = error_line(
        toolsets_command("call", spec, "list_notes", "--base-url", api.url, "--confirm", "always")
    )
    assert "list_notes needs confirmation" in line
    assert len(api.requests) == before


def test_a_bare_word_after_the_tool_is_one_line_naming_it(sources: dict[str, Path]) -> None:
    spec = str(sources["notes"])
    line = error_line(toolsets_command("call", spec, "get_note", "note_id"))
    assert "'note_id' after the tool 'get_note' is not an argument" in line
    assert "note_id=VALUE" in line
    line = error_line(toolsets_command("call", spec, "get_note", "note_id=1", "verbose"))
    assert "'verbose' after the tool 'get_note'" in line
    line = error_line(toolsets_command("call", "--stdio", FIXTURE_STDIO, "add", "a", "b=2"))
    assert "'a' after the tool 'add'" in line
    line = error_line(toolsets_command("inspect", spec, "get_note", "extra"))
    assert "inspect takes one TOOL" in line


def test_a_missing_spec_before_the_tool_is_still_named_as_a_missing_file() -> None:
    line = error_line(toolsets_command("call", "nowhere.yaml", "get_note"))
    assert "no such file: nowhere.yaml" in line


def test_call_shows_the_tools_progress_on_a_terminal_only() -> None:
    call = ["call", "--stdio", FIXTURE_STDIO, "slow", "seconds=0.4", "--yes"]
    controller, terminal = os.openpty()
    shown: list[bytes] = []

    def read() -> None:
        while True:
            try:
                chunk = os.read(controller, 65536)
            except OSError:  # the other end is closed: all was read
                return
            if not chunk:
                return
            shown.append(chunk)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        process = subprocess.Popen(
            [*entry_point(), *call],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=terminal,
            env=environment(),
        )
        stdout, _ = process.communicate(timeout=TIMEOUT)
        os.close(terminal)
        reader.join(TIMEOUT)
    finally:
        os.close(controller)
    assert process.returncode == 0
    assert json.loads(stdout) == {"result": "done"}
    text = b"".join(shown).decode()
    assert "slow: 4/4 (100%) step 4" in text
    # Not on a terminal: nothing but the result.
    piped = toolsets_command(*call)
    assert piped.returncode == 0
    assert piped.stderr == ""


def test_calling_an_operation_of_a_spec_naming_no_server_asks_for_base_url(
    sources: dict[str, Path],
) -> None:
    line = error_line(toolsets_command("call", str(sources["notes"]), "list_notes"))
    assert (
        line
        == "toolsets: list_notes: the spec names no server: give the API's URL with --base-url URL"
    )


def test_a_server_crashing_during_a_call_is_one_line() -> None:
    line = error_line(toolsets_command("call", "--stdio", FIXTURE_STDIO, "crash", "--yes"))
    assert "went away during the call to 'crash'" in line


def test_confirm_leaves_python_tools_to_their_author_unless_always(
    sources: dict[str, Path],
) -> None:
    folder = sources["module"].parent
    plain = toolsets_command("call", "clitools:everything", "whisper", "text=HI", cwd=folder)
    assert stdout_json(plain) == "hi"  # a plain function does not ask
    line = error_line(
        toolsets_command(
            "call", "clitools:everything", "wipe", "disk=a", "--confirm", "never", cwd=folder
        )
    )  # it asks for confirmation itself
    assert "wipe needs confirmation" in line
    line = error_line(
        toolsets_command(
            "call", "clitools:everything", "whisper", "text=HI", "--confirm", "always", cwd=folder
        )
    )
    assert "whisper needs confirmation" in line


def test_a_value_holding_a_url_is_still_an_argument(sources: dict[str, Path]) -> None:
    folder = sources["module"].parent
    done = toolsets_command(
        "call", "clitools:everything", "shout", "text=see https://example.com/?a=b", cwd=folder
    )
    assert stdout_json(done) == "SEE HTTPS://EXAMPLE.COM/?A=B"
