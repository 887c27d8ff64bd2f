"""The server's own resources, templates and prompts (`toolsets.mcp.server._catalog`, the
decorators of `_decorators` and the functions behind them, `_functions`): what the
decorators and the hand-made items refuse (two at one URI or name, a template
or function that cannot work, an item of the wrong kind), and hand-made items served."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import mcp.types as mt
import pytest
from mcp import MCPError

from tests.mcp.server.helpers import pixel, review, today
from tests.mcp.server_helpers import connected
from toolsets import (
    ToolContext,
    ToolDefinitionError,
)
from toolsets.mcp import (
    McpServer,
    Prompt,
    Resource,
    ResourceTemplate,
    prompt,
    resource,
    resource_template,
)

pytestmark = pytest.mark.anyio
MODES = pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])


def test_two_resources_at_one_uri_or_prompts_of_one_name_are_refused() -> None:
    with pytest.raises(ToolDefinitionError) as resources:
        McpServer([], resources=[today, Resource("note://today", "again", read=lambda ctx: "")])
    with pytest.raises(ToolDefinitionError) as prompts:
        McpServer([], prompts=[review, review])
    server = McpServer([], resources=[today])
    with pytest.raises(ToolDefinitionError):
        server.add_resources(pixel, today)
    with pytest.raises(KeyError):
        server.remove_resource("image://pixel")  # not added: the whole call was refused
    assert resources.value.field == "note://today"
    assert prompts.value.field == "review"


def test_a_template_or_a_decorated_function_that_cannot_work_is_refused() -> None:
    with pytest.raises(ToolDefinitionError) as operator:
        ResourceTemplate("file://{+path}", "files", read=lambda variables, ctx: "")
    with pytest.raises(ToolDefinitionError) as choices:
        ResourceTemplate("a://{b}", "a", read=lambda variables, ctx: "", choices={"c": ["x"]})

    def unrelated(other: str) -> str:
        return other

    with pytest.raises(ToolDefinitionError) as missing:
        resource_template("user://{user_id}")(unrelated)
    with pytest.raises(ToolDefinitionError) as needs:
        resource("a://b")(unrelated)
    assert operator.value.field == "uri_template"
    assert choices.value.field == "choices"
    assert missing.value.field == "other"
    assert needs.value.field == "other"


@MODES
async def test_hand_made_items_are_served_and_a_wrong_return_is_an_error_to_the_client(
    mode: str,
) -> None:
    async def notes(variables: Mapping[str, str], ctx: ToolContext) -> str:
        return f"notes of {variables['day']}"

    async def chat(args: Mapping[str, str], ctx: ToolContext | None) -> list[Any]:
        return [
            mt.PromptMessage(role="user", content=mt.TextContent(type="text", text="hi")),
            {"role": "assistant", "content": "hello"},
        ]

    server = McpServer(
        [],
        resources=[
            Resource("a://broken", "broken", read=lambda ctx: 42),  # type: ignore[arg-type,return-value]
            ResourceTemplate("notes://{day}", "notes", read=notes),
        ],
        prompts=[Prompt("chat", "A chat.", render=chat)],
    )
    async with connected(server, mode) as client:
        read = (await client.read_resource("notes://monday")).contents[0]
        got = await client.get_prompt("chat")
        with pytest.raises(MCPError) as broken:
            await client.read_resource("a://broken")
        server.remove_resource("notes://{day}")
        templates = (await client.list_resource_templates()).resource_templates
    assert isinstance(read, mt.TextResourceContents)
    assert read.text == "notes of monday"
    assert [(m.role, m.content) for m in got.messages] == [
        ("user", mt.TextContent(type="text", text="hi")),
        ("assistant", mt.TextContent(type="text", text="hello")),
    ]
    # A bug of the server's own, answered as the SDK answers what a handler raised
    # (-32603; 0 on the 2025-11-25 wire, the SDK's compatibility code for it).
    assert broken.value.error.code == (-32603 if mode == "2026-07-28" else 0)
    assert templates == []


def test_an_item_of_the_wrong_kind_or_a_function_taking_what_nothing_gives_is_refused() -> None:
    def spread(*parts: str) -> str:
        return "".join(parts)

    with pytest.raises(ToolDefinitionError) as wrong:
        McpServer([], resources=[review])  # type: ignore[list-item]
    with pytest.raises(ToolDefinitionError) as not_a_prompt:
        McpServer([], prompts=[today])  # type: ignore[list-item]
    with pytest.raises(ToolDefinitionError) as star:
        prompt(spread)
    with pytest.raises(KeyError):
        McpServer([]).remove_prompt("review")
    assert wrong.value.field == "resources"
    assert not_a_prompt.value.field == "prompts"
    assert star.value.field == "parts"
