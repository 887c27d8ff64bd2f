"""``toolsets serve module:attribute`` where the attribute is an `McpServer`: served as
it is (its name, resources and prompts), its tools listed by ``toolsets list``; an
option that would make another server of it is refused."""

from __future__ import annotations

import anyio
import mcp.types as mt
import pytest
from mcp import Client, StdioServerParameters

from tests.cli.helpers import TIMEOUT, entry_point, environment, error_line, toolsets_command
from tests.helpers import ROOT

FIXTURES = ROOT / "fixtures" / "mcp"
"""Where the module ``conformance`` (the conformance suite's fixture server) is."""


@pytest.mark.anyio
async def test_an_mcp_server_object_is_served_with_its_resources_and_prompts() -> None:
    command, *args = entry_point()
    params = StdioServerParameters(
        command=command,
        args=[*args, "serve", "conformance:fixture"],
        env=environment(),
        cwd=FIXTURES,
    )
    with anyio.fail_after(TIMEOUT):
        async with Client(params) as client:
            info = client.server_info
            read = (await client.read_resource("test://template/7/data")).contents[0]
            prompt = await client.get_prompt(
                "test_prompt_with_arguments", {"arg1": "a", "arg2": "b"}
            )
            called = await client.call_tool("test_simple_text", {})
    assert info is not None
    assert info.name == "toolsets-conformance"
    assert isinstance(read, mt.TextResourceContents)
    assert '"id": "7"' in read.text
    assert prompt.messages[0].content == mt.TextContent(
        type="text", text="Prompt with arguments: arg1='a', arg2='b'"
    )
    assert called.content == [
        mt.TextContent(type="text", text="This is a simple text response for testing.")
    ]


def test_the_tools_of_an_mcp_server_object_are_listed() -> None:
    done = toolsets_command("list", "conformance:fixture", "--json", cwd=FIXTURES)
    assert done.returncode == 0, done.stderr
    assert "test_trigger_prompt_change" in done.stdout


@pytest.mark.parametrize(
    ("options", "named"),
    [
        (["--name", "test_simple_text"], "--name"),
        (["--prefix", "conf"], "--prefix"),
        (["--confirm", "always"], "--confirm always"),
        ([str(ROOT / "fixtures" / "openapi" / "bookshop.yaml")], "another source"),
    ],
)
def test_an_option_that_would_rebuild_an_mcp_server_object_is_refused_in_one_line(
    options: list[str], named: str
) -> None:
    done = toolsets_command("serve", "conformance:fixture", *options, cwd=FIXTURES)
    assert done.returncode != 0
    line = error_line(done)
    assert named in line
    assert "McpServer" in line
