"""What every command does with its sources: specs (files, and URLs behind a header),
``mcpServers`` files, Python modules, ``--stdio`` and ``--http`` servers, combined,
selected (``--tag``, ``--method``, ``--path``, ``--name``, a selection that keeps
nothing said so) and prefixed (``--prefix``); a source that cannot be used is one line."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from tests.cli.helpers import (
    BROKEN_REF,
    FIXTURE_STDIO,
    error_line,
    stdout_json,
    toolsets_command,
    warning_line,
)
from tests.helpers import ROOT, free_port
from tests.mcp.helpers import HttpServer


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


def test_a_credential_for_a_scheme_no_spec_defines_is_refused(sources: dict[str, Path]) -> None:
    line = error_line(
        toolsets_command("list", str(sources["secured"]), "--credential", "notes-tokn=x")
    )
    assert "notes-tokn" in line
    assert "no spec defines" in line


def test_a_missing_file_is_one_line_naming_it() -> None:
    line = error_line(toolsets_command("list", "no/such/spec.yaml"))
    assert "no such file: no/such/spec.yaml" in line


def test_a_broken_spec_is_one_line_naming_where(tmp_path: Path) -> None:
    spec = tmp_path / "broken.yaml"
    spec.write_text("openapi: 3.1.0\npaths: [\n")
    line = error_line(toolsets_command("list", str(spec)))
    assert "broken.yaml#" in line
    assert "invalid JSON or YAML" in line


def test_an_unreachable_server_is_one_line_naming_it() -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"
    line = error_line(toolsets_command("list", "--http", url))
    assert f"cannot connect to MCP server {url}" in line
    line = error_line(toolsets_command("list", "--stdio", "no-such-command-xyz"))
    assert "no-such-command-xyz" in line


def test_a_module_that_does_not_import_is_one_line() -> None:
    line = error_line(toolsets_command("list", "no_such_module_xyz:tools"))
    assert "cannot import no_such_module_xyz" in line


def test_a_stdio_servers_own_words_show_with_debug_only() -> None:
    command = f"{sys.executable} -c \"import sys; sys.exit('boom: no API key')\""
    quiet = error_line(toolsets_command("list", "--stdio", command))
    assert "cannot connect to MCP server" in quiet
    loud = toolsets_command("list", "--stdio", command, "--debug")
    assert "boom: no API key" in loud.stderr
    assert loud.stderr.strip().splitlines()[-1].startswith("toolsets: cannot connect")


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


def test_tags_match_in_any_case(sources: dict[str, Path]) -> None:
    spec = str(sources["tagged"])
    for tag in ("notes", "NOTES", "Notes"):
        listed = stdout_json(toolsets_command("list", spec, "--tag", tag, "--json"))
        assert {tool["name"] for tool in listed} == {"list_notes", "create_note", "get_note"}


def test_a_selection_that_keeps_nothing_names_the_filter_and_the_tags(
    sources: dict[str, Path],
) -> None:
    spec = str(sources["tagged"])
    done = toolsets_command("list", spec, "--tag", "pets", "--json")
    assert stdout_json(done) == []  # still the result, for scripts
    line = warning_line(done)
    assert "--tag pets matches no operation" in line
    assert "the tags: Admin, Notes" in line
    line = warning_line(toolsets_command("list", spec, "--tag", "admin", "--method", "get"))
    assert "--tag admin --method get together match no tool" in line
    line = warning_line(toolsets_command("list", spec, "--name", "zz*"))
    assert "--name zz* matches no tool" in line


def test_a_filter_value_that_matches_nothing_beside_others_is_a_warning(
    sources: dict[str, Path],
) -> None:
    done = toolsets_command("list", str(sources["tagged"]), "--tag", "admin", "--tag", "pets")
    assert "delete_note" in done.stdout
    assert "--tag pets matches no operation" in warning_line(done)


def test_an_operation_the_loader_leaves_out_is_one_warning_line(tmp_path: Path) -> None:
    spec = tmp_path / "broken.yaml"
    spec.write_text(BROKEN_REF)
    done = toolsets_command("list", str(spec), "--json")
    assert [tool["name"] for tool in stdout_json(done)] == ["b"]
    line = warning_line(done)
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
        warning_line(done)
        == f"toolsets: warning: {spec} has no operations (no paths): it offers no tools"
    )


@contextmanager
def spec_behind_a_key(spec: str, key: str, fetched: list[str] | None = None) -> Iterator[str]:
    """A server on 127.0.0.1 giving ``spec`` only to requests with ``X-Key: key``; its
    URL. Each request's path is added to ``fetched``."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:  # quiet
            pass

        def do_GET(self) -> None:
            if fetched is not None:
                fetched.append(self.path)
            allowed = self.headers.get("X-Key") == key
            body = spec.encode() if allowed else b"{}"
            self.send_response(200 if allowed else 401)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/openapi.yaml"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_a_spec_url_behind_auth_is_fetched_with_the_header() -> None:
    spec = (ROOT / "fixtures" / "openapi" / "bookshop.yaml").read_text(encoding="utf-8")
    with spec_behind_a_key(spec, "sekrit-key") as url:
        refused = toolsets_command("validate", url)
        done = toolsets_command("validate", url, "--header", "X-Key=sekrit-key")
        listed = toolsets_command("list", url, "--header", "X-Key=sekrit-key", "--json")
    assert "HTTP 401" in error_line(refused)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("valid, 6 operations")
    assert len(stdout_json(listed)) == 6
    assert "sekrit" not in done.stdout + done.stderr


def test_a_spec_with_credentials_for_its_schemes_is_read_once() -> None:
    spec = (ROOT / "fixtures" / "openapi" / "bookshop.yaml").read_text(encoding="utf-8")
    fetched: list[str] = []
    with spec_behind_a_key(spec, "k", fetched) as url:
        done = toolsets_command(
            "list", url, "--header", "X-Key=k", "--credential", "shop_key=s", "--json"
        )
    assert len(stdout_json(done)) == 6
    assert fetched == ["/openapi.yaml"]
