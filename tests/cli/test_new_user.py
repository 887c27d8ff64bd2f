"""What a new user met with the command line, run for real: ``--confirm`` (once per
call, through a gateway too), ``--prefix`` for servers offering the same names, a bare
word after the TOOL, ``validate``'s count and its problems shown once, a call's progress
on a terminal, and tags in any case with a selection that matches nothing said so."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import threading
from pathlib import Path
from typing import Any

import anyio
import mcp.types as mt
import pytest
from mcp import Client, StdioServerParameters

from tests.adapters.helpers import NotesApi
from tests.cli.helpers import (
    FIXTURE_STDIO,
    TIMEOUT,
    entry_point,
    environment,
    error_line,
    stdout_json,
    toolsets_command,
    write_sources,
)


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("sources")
    paths = write_sources(folder)
    tagged = json.loads(paths["notes"].read_text())
    for path_item in tagged["paths"].values():
        for method, operation in path_item.items():
            if method in ("get", "post", "delete"):
                operation["tags"] = ["Notes"] if method != "delete" else ["Admin"]
    paths["tagged"] = folder / "tagged.json"
    paths["tagged"].write_text(json.dumps(tagged))
    return paths


# --- --confirm ---------------------------------------------------------------------------


def _served(*args: str) -> StdioServerParameters:
    """``toolsets serve ARGS`` over stdio, as a client starts it."""
    command = entry_point()
    return StdioServerParameters(
        command=command[0], args=[*command[1:], "serve", *args], env=environment()
    )


async def _call_through(
    params: StdioServerParameters, name: str, args: dict[str, Any], *, asks: list[str] | None
) -> mt.CallToolResult:
    """One call through the served gateway; ``asks`` collects the questions the client
    is asked (None: the client cannot ask)."""

    async def elicit(context: Any, request: mt.ElicitRequestParams) -> mt.ElicitResult:
        assert asks is not None
        asks.append(request.message)
        return mt.ElicitResult(action="accept", content={})

    callback = elicit if asks is not None else None
    with anyio.fail_after(TIMEOUT):
        async with Client(params, elicitation_callback=callback) as client:
            return await client.call_tool(name, args)


@pytest.mark.anyio
async def test_serve_confirm_never_lets_a_client_that_cannot_ask_call_a_destructive_tool() -> None:
    refused = await _call_through(
        _served("--stdio", FIXTURE_STDIO), "delete_file", {"path": "x"}, asks=None
    )
    assert refused.is_error
    assert refused.structured_content is not None
    assert refused.structured_content["confirmation_needed"] is True
    done = await _call_through(
        _served("--stdio", FIXTURE_STDIO, "--confirm", "never"),
        "delete_file",
        {"path": "x"},
        asks=None,
    )
    assert not done.is_error
    assert done.structured_content == {"result": "deleted x"}


@pytest.mark.anyio
async def test_a_gateway_asks_an_eliciting_client_once_per_call() -> None:
    asks: list[str] = []
    done = await _call_through(
        _served("--stdio", FIXTURE_STDIO), "delete_file", {"path": "x"}, asks=asks
    )
    assert done.structured_content == {"result": "deleted x"}
    assert len(asks) == 1
    assert "delete_file" in asks[0]


def _upstream(spec: Path, api: NotesApi) -> str:
    """``--stdio`` for another ``toolsets serve`` of the notes API: a server that
    confirms its own destructive tools (by elicitation)."""
    return shlex.join([*entry_point(), "serve", str(spec), "--base-url", api.url])


def _create_note(spec: Path, api: NotesApi) -> int:
    made = toolsets_command("call", str(spec), "create_note", "title=t", "--base-url", api.url)
    note_id: int = stdout_json(made)["id"]
    return note_id


@pytest.mark.anyio
async def test_a_gateway_before_a_server_that_confirms_itself_asks_once(
    sources: dict[str, Path], api: NotesApi
) -> None:
    note = _create_note(sources["notes"], api)
    asks: list[str] = []
    gateway = _served("--stdio", _upstream(sources["notes"], api))
    done = await _call_through(gateway, "delete_note", {"note_id": note}, asks=asks)
    assert not done.is_error, done.content
    assert len(asks) == 1  # the gateway's; the upstream server's own is answered by it
    assert note not in api.notes


@pytest.mark.anyio
async def test_a_gateway_that_confirms_nothing_does_not_answer_the_upstreams_question(
    sources: dict[str, Path], api: NotesApi
) -> None:
    note = _create_note(sources["notes"], api)
    asks: list[str] = []
    gateway = _served("--stdio", _upstream(sources["notes"], api), "--confirm", "never")
    refused = await _call_through(gateway, "delete_note", {"note_id": note}, asks=asks)
    assert refused.is_error
    assert asks == []
    assert note in api.notes  # the upstream server's own confirmation was not given


@pytest.mark.anyio
async def test_serve_confirm_always_asks_before_a_read_only_call_too() -> None:
    asks: list[str] = []
    done = await _call_through(
        _served("--stdio", FIXTURE_STDIO, "--confirm", "always"), "echo", {"text": "hi"}, asks=asks
    )
    assert done.structured_content == {"result": "hi"}
    assert len(asks) == 1


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


def test_list_shows_which_tools_ask_under_the_confirm_policy(sources: dict[str, Path]) -> None:
    spec = str(sources["notes"])

    def asking(*options: str) -> set[str]:
        listed = stdout_json(toolsets_command("list", spec, "--json", *options))
        return {tool["name"] for tool in listed if tool["requires_confirmation"]}

    assert asking() == {"delete_note"}
    assert asking("--confirm", "never") == set()
    assert asking("--confirm", "always") == {"list_notes", "create_note", "get_note", "delete_note"}


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


# --- --prefix ----------------------------------------------------------------------------


def test_two_servers_offering_the_same_names_is_one_line_advising_prefix() -> None:
    line = error_line(toolsets_command("list", "--stdio", FIXTURE_STDIO, "--stdio", FIXTURE_STDIO))
    assert "both offer a tool named" in line
    assert "--prefix NAME" in line
    assert "prefixed()" not in line


def test_prefix_names_the_tools_of_the_source_just_before_it() -> None:
    done = toolsets_command(
        "call",
        "--stdio",
        FIXTURE_STDIO,
        "--prefix",
        "one",
        "--stdio",
        FIXTURE_STDIO,
        "--prefix",
        "two",
        "two_add",
        "a=1",
        "b=2",
    )
    assert stdout_json(done) == {"total": 3}
    listed = stdout_json(
        toolsets_command(
            "list",
            "--stdio",
            FIXTURE_STDIO,
            "--stdio",
            FIXTURE_STDIO,
            "--prefix",
            "b",
            "--name",
            "*echo",
            "--json",
        )
    )
    assert [tool["name"] for tool in listed] == ["echo", "b_echo"]


def test_a_prefix_of_a_spec_given_as_an_argument(sources: dict[str, Path]) -> None:
    listed = stdout_json(
        toolsets_command("list", str(sources["notes"]), "--prefix", "notes", "--json")
    )
    assert {tool["name"] for tool in listed} == {
        "notes_list_notes",
        "notes_create_note",
        "notes_get_note",
        "notes_delete_note",
    }


def test_a_prefix_that_follows_no_source_is_one_line(sources: dict[str, Path]) -> None:
    line = error_line(toolsets_command("list", "--prefix", "x", str(sources["notes"])))
    assert "--prefix x names no source" in line
    line = error_line(
        toolsets_command("call", str(sources["notes"]), "list_notes", "--prefix", "x")
    )
    assert "--prefix x follows no SOURCE" in line


# --- a bare word after the TOOL ------------------------------------------------------------


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


# --- validate ------------------------------------------------------------------------------

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


# --- progress ----------------------------------------------------------------------------


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


# --- tags and selections that match nothing ---------------------------------------------


def test_tags_match_in_any_case(sources: dict[str, Path]) -> None:
    spec = str(sources["tagged"])
    for tag in ("notes", "NOTES", "Notes"):
        listed = stdout_json(toolsets_command("list", spec, "--tag", tag, "--json"))
        assert {tool["name"] for tool in listed} == {"list_notes", "create_note", "get_note"}


def _warning(done: subprocess.CompletedProcess[str]) -> str:
    """The one warning line a command that succeeded printed on stderr."""
    assert done.returncode == 0, done.stderr
    [line] = [line for line in done.stderr.splitlines() if line.startswith("toolsets: ")]
    assert line.startswith("toolsets: warning: ")
    return line


def test_a_selection_that_keeps_nothing_names_the_filter_and_the_tags(
    sources: dict[str, Path],
) -> None:
    spec = str(sources["tagged"])
    done = toolsets_command("list", spec, "--tag", "pets", "--json")
    assert stdout_json(done) == []  # still the result, for scripts
    line = _warning(done)
    assert "--tag pets matches no operation" in line
    assert "the tags: Admin, Notes" in line
    line = _warning(toolsets_command("list", spec, "--tag", "admin", "--method", "get"))
    assert "--tag admin --method get together match no tool" in line
    line = _warning(toolsets_command("list", spec, "--name", "zz*"))
    assert "--name zz* matches no tool" in line


def test_a_filter_value_that_matches_nothing_beside_others_is_a_warning(
    sources: dict[str, Path],
) -> None:
    done = toolsets_command("list", str(sources["tagged"]), "--tag", "admin", "--tag", "pets")
    assert "delete_note" in done.stdout
    assert "--tag pets matches no operation" in _warning(done)


# --- further rough edges -------------------------------------------------------------------


def test_calling_an_operation_of_a_spec_naming_no_server_asks_for_base_url(
    sources: dict[str, Path],
) -> None:
    line = error_line(toolsets_command("call", str(sources["notes"]), "list_notes"))
    assert (
        line
        == "toolsets: list_notes: the spec names no server: give the API's URL with --base-url URL"
    )


def test_serving_a_spec_naming_no_server_warns_that_its_operations_cannot_be_called(
    sources: dict[str, Path],
) -> None:
    done = toolsets_command("serve", str(sources["notes"]), stdin="")
    assert done.returncode == 0, done.stderr
    line = _warning(done)
    assert "4 operations cannot be called" in line
    assert "--base-url URL" in line


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


def test_the_example_call_of_a_prefixed_tool_keeps_the_prefix_and_runs(
    sources: dict[str, Path],
) -> None:
    shown = toolsets_command(
        "inspect",
        str(sources["notes"]),
        "--prefix",
        "n",
        "--stdio",
        FIXTURE_STDIO,
        "--prefix",
        "fx",
        "fx_add",
        "--base-url",
        "http://127.0.0.1:9",
    )
    assert shown.returncode == 0, shown.stderr
    example = shlex.split(shown.stdout.strip().splitlines()[-1])
    assert example[:2] == ["toolsets", "call"]
    assert stdout_json(toolsets_command(*example[1:])) == {"total": 2}


def test_a_list_of_no_tools_prints_no_table(sources: dict[str, Path]) -> None:
    done = toolsets_command("list", str(sources["notes"]), "--method", "put")
    assert done.returncode == 0
    assert done.stdout == ""


def test_a_value_holding_a_url_is_still_an_argument(sources: dict[str, Path]) -> None:
    folder = sources["module"].parent
    done = toolsets_command(
        "call", "clitools:everything", "shout", "text=see https://example.com/?a=b", cwd=folder
    )
    assert stdout_json(done) == "SEE HTTPS://EXAMPLE.COM/?A=B"


def test_an_operation_the_loader_leaves_out_is_one_warning_line(tmp_path: Path) -> None:
    spec = tmp_path / "broken.yaml"
    spec.write_text(BROKEN_REF)
    done = toolsets_command("list", str(spec), "--json")
    assert [tool["name"] for tool in stdout_json(done)] == ["b"]
    line = _warning(done)
    assert line.startswith("toolsets: warning: skipping GET /a: ")


def test_a_spec_with_no_operations_says_so(tmp_path: Path) -> None:
    spec = tmp_path / "hooks.yaml"
    spec.write_text(
        'openapi: 3.1.0\ninfo: {title: t, version: "1"}\nwebhooks:\n  new:\n    post:\n'
        '      responses: {"200": {description: ok}}\n'
    )
    done = toolsets_command("list", str(spec), "--json")
    assert stdout_json(done) == []
    assert (
        _warning(done)
        == f"toolsets: warning: {spec} has no operations (no paths): it offers no tools"
    )
