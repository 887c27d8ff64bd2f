"""``toolsets resources list|read`` and ``toolsets prompts list|get``, run for real: the
fixture MCP server over stdio, an ``mcpServers`` file of two servers, and an `McpServer`
of a Python module (spoken to in the command's own process)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.cli.helpers import FIXTURE_STDIO, error_line, stdout_json, toolsets_command
from tests.helpers import ROOT
from tests.mcp.helpers import SERVER

OURS = '''
from toolsets import StaticToolset
from toolsets.mcp import McpServer, prompt, resource


@resource("img://logo", mime_type="image/png")
def logo() -> bytes:
    """The logo."""
    return bytes(range(256))


@resource("note://today", mime_type="text/markdown")
def today() -> str:
    """Today's note."""
    return "# Today"


@prompt
def greet(name: str, punctuation: str = "!") -> str:
    """Greet someone.

    Args:
        name: Who.
        punctuation: How.
    """
    return f"Hello, {name}{punctuation}"


server = McpServer(StaticToolset([]), name="ours", resources=[logo, today], prompts=[greet])
toolset = StaticToolset([])
'''
"""``ours:server``: an `McpServer` with a binary and a text resource and one prompt."""


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    made = tmp_path_factory.mktemp("items")
    (made / "ours.py").write_text(OURS, encoding="utf-8")
    servers = {
        "one": {"command": sys.executable, "args": [SERVER, "stdio"]},
        "two": {"command": sys.executable, "args": [SERVER, "stdio"]},
    }
    (made / "mcp.json").write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    return made


def test_resources_list_names_each_resource_of_an_mcp_server() -> None:
    done = toolsets_command("resources", "list", "--stdio", FIXTURE_STDIO)
    assert done.returncode == 0, done.stderr
    header, row = done.stdout.splitlines()
    assert header.split() == ["uri", "name", "type", "description"]
    assert row.split()[:3] == ["mem://greeting", "greeting", "text/plain"]
    assert done.stderr.strip() == "1 resource"


def test_resources_list_json_is_mcps_json_with_the_server_when_there_are_several(
    folder: Path,
) -> None:
    listed = stdout_json(toolsets_command("resources", "list", "mcp.json", "--json", cwd=folder))
    assert [(r["server"], r["uri"], r["mimeType"]) for r in listed["resources"]] == [
        ("one", "mem://greeting", "text/plain"),
        ("two", "mem://greeting", "text/plain"),
    ]
    assert listed["resourceTemplates"] == []
    one = toolsets_command("resources", "list", "mcp.json", "--server", "two", "--json", cwd=folder)
    assert [r["uri"] for r in stdout_json(one)["resources"]] == ["mem://greeting"]


def test_resources_read_prints_the_text_of_a_resource() -> None:
    done = toolsets_command("resources", "read", "--stdio", FIXTURE_STDIO, "mem://greeting")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "hello resource\n"
    as_json = stdout_json(
        toolsets_command("resources", "read", "--stdio", FIXTURE_STDIO, "mem://greeting", "--json")
    )
    assert as_json == {
        "contents": [{"uri": "mem://greeting", "mimeType": "text/plain", "text": "hello resource"}]
    }


def test_reading_from_several_servers_that_all_offer_it_asks_which(folder: Path) -> None:
    line = error_line(
        toolsets_command("resources", "read", "mcp.json", "mem://greeting", cwd=folder)
    )
    assert (
        "several servers offer mem://greeting: give --server NAME (the servers: one, two)" in line
    )
    done = toolsets_command(
        "resources", "read", "mcp.json", "mem://greeting", "--server", "one", cwd=folder
    )
    assert done.stdout == "hello resource\n"


def test_the_resources_of_an_mcp_server_object_of_a_module_are_read_in_process(
    folder: Path, tmp_path: Path
) -> None:
    listed = stdout_json(toolsets_command("resources", "list", "ours:server", "--json", cwd=folder))
    assert [r["uri"] for r in listed["resources"]] == ["img://logo", "note://today"]
    assert toolsets_command(
        "resources", "read", "ours:server", "note://today", cwd=folder
    ).stdout == ("# Today\n")
    written = tmp_path / "logo.png"
    done = toolsets_command(
        "resources", "read", "ours:server", "img://logo", "--output", str(written), cwd=folder
    )
    assert done.returncode == 0, done.stderr
    assert written.read_bytes() == bytes(range(256))
    assert "256 bytes written" in done.stderr
    blob = stdout_json(
        toolsets_command("resources", "read", "ours:server", "img://logo", "--json", cwd=folder)
    )
    assert blob["contents"][0]["mimeType"] == "image/png"


def test_prompts_list_and_get_with_arguments(folder: Path) -> None:
    done = toolsets_command("prompts", "list", "ours:server", cwd=folder)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1].split()[:3] == ["greet", "name*,", "punctuation"]
    got = toolsets_command("prompts", "get", "ours:server", "greet", "name=Ann", cwd=folder)
    assert got.returncode == 0, got.stderr
    assert got.stdout == "user:\nHello, Ann!\n"
    as_json = stdout_json(
        toolsets_command(
            "prompts",
            "get",
            "ours:server",
            "greet",
            "name=Ann",
            "punctuation=?",
            "--json",
            cwd=folder,
        )
    )
    assert as_json["messages"] == [
        {"role": "user", "content": {"type": "text", "text": "Hello, Ann?"}}
    ]


def test_a_prompt_of_the_fixture_server_over_stdio() -> None:
    got = toolsets_command("prompts", "get", "--stdio", FIXTURE_STDIO, "review", "code=x = 1")
    assert got.returncode == 0, got.stderr
    assert got.stdout == "user:\nPlease review:\nx = 1\n"


def test_what_is_no_mcp_server_is_one_line(folder: Path) -> None:
    spec = str(ROOT / "fixtures" / "openapi" / "bookshop.yaml")
    line = error_line(toolsets_command("resources", "list", spec))
    assert "is an OpenAPI spec: resources and prompts come from MCP servers" in line
    line = error_line(toolsets_command("prompts", "list", "ours:toolset", cwd=folder))
    assert "ours:toolset is a toolset, not an McpServer" in line
    line = error_line(toolsets_command("prompts", "list"))
    assert "no MCP server given" in line
    line = error_line(
        toolsets_command("prompts", "list", "mcp.json", "--server", "three", cwd=folder)
    )
    assert "--server three: no such server (the servers: one, two)" in line


def test_an_unknown_resource_or_prompt_is_one_line_naming_the_server() -> None:
    line = error_line(toolsets_command("resources", "read", "--stdio", FIXTURE_STDIO, "mem://nope"))
    assert "mem://nope" in line
    line = error_line(toolsets_command("prompts", "get", "--stdio", FIXTURE_STDIO, "nope"))
    assert "nope" in line
