"""``toolsets validate`` on real spec files, and ``toolsets serve``'s options and
``--print-config`` (and the config it prints, served to an MCP client)."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.adapters.helpers import NotesApi
from tests.cli.helpers import (
    SRC,
    error_line,
    stdout_json,
    toolsets_command,
    write_sources,
)
from tests.helpers import ROOT

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


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return write_sources(tmp_path_factory.mktemp("sources"))


# --- validate ----------------------------------------------------------------------------


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


# --- serve --------------------------------------------------------------------------------


def test_print_config_gives_the_entry_that_starts_this_server_with_no_secret_in_it(
    sources: dict[str, Path], tmp_path: Path
) -> None:
    done = toolsets_command(
        "serve",
        str(sources["secured"].relative_to(sources["secured"].parent)),
        "--credential",
        "notes-token=sekrit-1",
        "--header",
        "X-Key=sekrit-2",
        "--method",
        "get",
        "--print-config",
        cwd=sources["secured"].parent,
    )
    config = stdout_json(done)
    [(name, entry)] = config["mcpServers"].items()
    assert name == "secured"
    assert entry["command"] == sys.executable
    assert entry["args"][:4] == ["-m", "toolsets.cli", "serve", str(sources["secured"])]
    assert "--header=X-Key=<fill in>" in entry["args"]
    assert "--method=get" in entry["args"]
    assert entry["env"] == {"TOOLSETS_CREDENTIAL_NOTES_TOKEN": "<fill in>"}
    assert "sekrit" not in done.stdout + done.stderr
    assert "TOOLSETS_CREDENTIAL_NOTES_TOKEN" in done.stderr  # what to fill in


def test_print_config_over_http_gives_the_url() -> None:
    spec = str(ROOT / "fixtures" / "openapi" / "bookshop.yaml")
    done = toolsets_command("serve", spec, "--http", "127.0.0.1:8123", "--print-config")
    assert stdout_json(done) == {"mcpServers": {"bookshop": {"url": "http://127.0.0.1:8123/mcp"}}}


def test_serve_options_that_cannot_work_are_one_line_usage_errors() -> None:
    spec = str(ROOT / "fixtures" / "openapi" / "bookshop.yaml")
    line = error_line(toolsets_command("serve", spec, "--workers", "2"))
    assert "--stateless and --workers are for --http" in line
    line = error_line(toolsets_command("serve", spec, "--http", ":80", "--workers", "2"))
    assert "--workers needs --stateless" in line
    line = error_line(toolsets_command("serve", spec, "--http", "host:port"))
    assert "'host:port' is not HOST:PORT" in line


def test_the_printed_config_serves_the_spec_to_an_mcp_client(
    sources: dict[str, Path], tmp_path: Path, api: NotesApi
) -> None:
    printed = toolsets_command(
        "serve", str(sources["notes"]), "--base-url", api.url, "--print-config"
    )
    config = stdout_json(printed)
    config["mcpServers"]["notes"]["env"] = {"PYTHONPATH": SRC}  # the toolsets under test
    path = tmp_path / "served.json"
    path.write_text(json.dumps(config))
    # The command line is the MCP client of the server it configured.
    tools = stdout_json(toolsets_command("list", str(path), "--json"))
    assert [tool["name"] for tool in tools] == [
        "notes_list_notes",
        "notes_create_note",
        "notes_get_note",
        "notes_delete_note",
    ]
    assert tools[2]["read_only"] is True
    done = toolsets_command("call", str(path), "notes_create_note", "title=served")
    assert stdout_json(done)["title"] == "served"
    assert any(note["title"] == "served" for note in api.notes.values())


def test_serve_of_a_broken_spec_is_one_line_before_anything_is_served(tmp_path: Path) -> None:
    spec = tmp_path / "broken.yaml"
    spec.write_text("openapi: 3.1.0\npaths: [\n")
    assert "invalid JSON or YAML" in error_line(toolsets_command("serve", str(spec)))
    line = error_line(toolsets_command("serve", str(spec), "--http", "127.0.0.1:1"))
    assert "invalid JSON or YAML" in line


def test_print_config_names_a_placeholder_for_every_security_scheme_of_the_specs() -> None:
    spec = str(ROOT / "fixtures" / "openapi" / "bookshop.yaml")
    done = toolsets_command("serve", spec, "--print-config")
    [entry] = stdout_json(done)["mcpServers"].values()
    assert entry["env"] == {"TOOLSETS_CREDENTIAL_SHOP_KEY": "<your shop_key>"}
    assert "TOOLSETS_CREDENTIAL_SHOP_KEY" in done.stderr  # what to fill in
    given = toolsets_command("serve", spec, "--credential", "shop_key=k", "--print-config")
    [entry] = stdout_json(given)["mcpServers"].values()
    assert entry["env"] == {"TOOLSETS_CREDENTIAL_SHOP_KEY": "<fill in>"}


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
