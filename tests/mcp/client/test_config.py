"""Reading {"mcpServers": {...}} config files into toolsets."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.agent.helpers import asked_to_confirm, one_call
from tests.mcp.helpers import SERVER
from toolsets import FunctionCall, SpecError, ToolContext
from toolsets.mcp import Sse, Stdio, StreamableHttp, load_mcp_config, read_mcp_config

pytestmark = pytest.mark.anyio


def test_command_and_url_entries_become_transports(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GH_TOKEN", "s3cret")
    transports = read_mcp_config(
        {
            "mcpServers": {
                "files": {"command": "npx", "args": ["-y", "fs-server", "/tmp"], "cwd": "/tmp"},
                "github": {
                    "url": "https://api.example.com/mcp",
                    "type": "http",
                    "headers": {"Authorization": "Bearer ${GH_TOKEN}"},
                },
                "env": {"command": "srv", "env": {"KEY": "${env:GH_TOKEN}"}},
                "off": {"command": "never", "disabled": True},
            }
        }
    )
    assert list(transports) == ["files", "github", "env"]
    assert transports["files"] == Stdio(command="npx", args=["-y", "fs-server", "/tmp"], cwd="/tmp")
    github = transports["github"]
    assert isinstance(github, StreamableHttp)
    assert github.headers == {"Authorization": "Bearer s3cret"}
    assert "s3cret" not in repr(github)
    env = transports["env"]
    assert isinstance(env, Stdio)
    assert env.env == {"KEY": "s3cret"}


def test_an_sse_entry_becomes_an_sse_transport_with_its_headers() -> None:
    entry = {"type": "sse", "url": "http://127.0.0.1:1/events", "headers": {"X-Key": "k"}}
    untyped = {"url": "http://127.0.0.1:1/sse"}  # as Cursor writes them
    transports = read_mcp_config({"mcpServers": {"old": entry, "cursor": untyped}})
    assert transports["old"] == Sse(url="http://127.0.0.1:1/events", headers={"X-Key": "k"})
    assert transports["cursor"] == Sse(url="http://127.0.0.1:1/sse")
    typed = read_mcp_config({"mcpServers": {"a": {"type": "http", "url": "http://h/sse"}}})
    assert isinstance(typed["a"], StreamableHttp), "a type given is followed"


def test_vs_code_style_servers_key_is_read_too() -> None:
    transports = read_mcp_config({"servers": {"a": {"url": "http://127.0.0.1:1/mcp"}}})
    assert list(transports) == ["a"]


@pytest.mark.parametrize(
    ("config", "pointer"),
    [
        ({"mcpServers": {"a": {"args": []}}}, "/mcpServers/a"),
        ({"mcpServers": {"a": {"command": 3}}}, "/mcpServers/a/command"),
        ({"mcpServers": {"a": {"command": "x", "args": "no"}}}, "/mcpServers/a/args"),
        ({"mcpServers": {"a/b": {"url": "ftp://x"}}}, "/mcpServers/a~1b/url"),
        ({"mcpServers": {"a": {"url": "http://x/mcp", "type": "ws"}}}, "/mcpServers/a/type"),
        ({"mcpServers": {"a": {"url": "ftp://x/sse", "type": "sse"}}}, "/mcpServers/a/url"),
        ({"mcpServers": {"a": {"url": 3}}}, "/mcpServers/a/url"),
        ({"mcpServers": {"a": {"command": "x", "env": {"K": 1}}}}, "/mcpServers/a/env"),
        ({"mcpServers": {"a": {"command": "${NOT_SET_ANYWHERE}"}}}, "/mcpServers/a/command"),
        ({"mcpServers": []}, "/mcpServers"),
        ({}, "/servers"),
    ],
)
def test_a_broken_entry_is_a_spec_error_naming_its_json_pointer(
    config: dict[str, object], pointer: str
) -> None:
    with pytest.raises(SpecError) as info:
        read_mcp_config(config)
    assert info.value.pointer == pointer


VS_CODE = {
    "inputs": [{"type": "promptString", "id": "tok", "description": "Token", "password": True}],
    "servers": {
        "gh": {
            "type": "http",
            "url": "https://api.example.com/mcp",
            "headers": {"Authorization": "Bearer ${input:tok}"},
        }
    },
}


def test_a_vs_code_input_without_a_value_is_a_spec_error_naming_where_it_is() -> None:
    with pytest.raises(SpecError) as info:
        read_mcp_config(VS_CODE)
    assert info.value.pointer == "/servers/gh/headers/Authorization"
    assert "input:tok" in str(info.value)


def test_vs_code_inputs_are_filled_in_from_a_mapping_or_a_function() -> None:
    by_id = read_mcp_config(VS_CODE, inputs={"tok": "t0k"})["gh"]
    asked: list[tuple[str, object]] = []

    def ask(name: str, definition: Mapping[str, Any]) -> str:
        asked.append((name, definition.get("password")))
        return "t1k"

    by_function = read_mcp_config(VS_CODE, inputs=ask)["gh"]
    assert isinstance(by_id, StreamableHttp)
    assert isinstance(by_function, StreamableHttp)
    assert by_id.headers == {"Authorization": "Bearer t0k"}
    assert by_function.headers == {"Authorization": "Bearer t1k"}
    assert asked == [("tok", True)]


@pytest.mark.parametrize("value", ["${config:editor.token}", "${input:}", "${command:pick}"])
def test_a_variable_that_cannot_be_expanded_is_never_sent_as_it_is(value: str) -> None:
    config = {"mcpServers": {"a": {"command": "srv", "args": ["--key", value]}}}
    with pytest.raises(SpecError) as info:
        read_mcp_config(config, inputs={"x": "y"})
    assert info.value.pointer == "/mcpServers/a/args/1"


def test_a_file_that_is_not_json_says_where(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text('{"mcpServers": {,}}')
    with pytest.raises(SpecError) as info:
        read_mcp_config(path)
    assert info.value.source == str(path)
    assert "line 1" in str(info.value)
    with pytest.raises(SpecError, match="cannot read"):
        read_mcp_config(tmp_path / "missing.json")


async def test_a_config_file_loads_as_one_prefixed_toolset(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    server = {"command": sys.executable, "args": [SERVER, "stdio"]}
    path.write_text(json.dumps({"mcpServers": {"fix ture": server, "second": server}}))
    async with load_mcp_config(path) as toolset:
        names = [t.name for t in await toolset.list_tools()]
        echo = await toolset.get_tool("fix_ture_echo")
        assert await echo.run({"text": "hi"}, ToolContext()) == {"result": "hi"}
    assert "fix_ture_echo" in names
    assert "second_echo" in names
    assert len(names) == len(set(names))


async def test_a_confirmation_names_the_tool_with_its_servers_prefix(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(
        json.dumps(
            {"mcpServers": {"files": {"command": sys.executable, "args": [SERVER, "stdio"]}}}
        )
    )
    async with load_mcp_config(path) as toolset:
        delete = FunctionCall(name="files_delete_file", args={"path": "a.txt"})
        _, _, events = await one_call(toolset, delete, "Deleted.")
    hint = asked_to_confirm(events).hint
    assert "'files_delete_file'" in hint
    assert "'delete_file'" not in hint
