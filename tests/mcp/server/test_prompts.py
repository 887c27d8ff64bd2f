"""Prompts (`toolsets.mcp.server._prompts`): the server's own listed with their
arguments and rendered (with the request's context), in both protocol eras; an unknown
prompt, or arguments it does not take, is invalid params."""

from __future__ import annotations

import mcp.types as mt
import pytest
from mcp import MCPError

from tests.mcp.server.helpers import make_server
from tests.mcp.server_helpers import connected

pytestmark = pytest.mark.anyio
MODES = pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])


@MODES
async def test_prompts_are_listed_with_their_arguments_and_rendered(mode: str) -> None:
    async with connected(make_server(), mode) as client:
        listed = {p.name: p for p in (await client.list_prompts()).prompts}
        rendered = await client.get_prompt("review", {"code": "x = 1", "style": "strict"})
        defaulted = await client.get_prompt("review", {"code": "y"})
        shown = await client.get_prompt("show")
    assert list(listed) == ["review", "show", "trip"]
    assert listed["review"].description == "Ask for a code review."
    assert [(a.name, a.description, a.required) for a in listed["review"].arguments or []] == [
        ("code", "The code to review.", True),
        ("style", "How deep to go.", False),
    ]
    assert listed["show"].arguments == []
    assert [m.content for m in rendered.messages] == [
        mt.TextContent(type="text", text="Review this (strict):\nx = 1")
    ]
    assert defaulted.messages[0].content == mt.TextContent(
        type="text", text="Review this (short):\ny"
    )
    image, embedded, question = shown.messages
    assert (image.role, image.content) == (
        "user",
        mt.ImageContent(type="image", mime_type="image/png", data="AAAA"),
    )
    assert embedded.role == "assistant"
    assert isinstance(embedded.content, mt.EmbeddedResource)
    assert isinstance(embedded.content.resource, mt.TextResourceContents)
    assert embedded.content.resource.text == "ada"
    assert question.content == mt.TextContent(type="text", text="And this one?")


@MODES
async def test_a_prompt_unknown_or_without_a_required_or_allowed_argument_is_invalid_params(
    mode: str,
) -> None:
    async with connected(make_server(), mode) as client:
        with pytest.raises(MCPError) as missing:
            await client.get_prompt("review", {"style": "short"})
        with pytest.raises(MCPError) as unknown:
            await client.get_prompt("nothing")
        with pytest.raises(MCPError) as not_a_choice:
            await client.get_prompt("review", {"code": "x", "style": "sloppy"})
    assert missing.value.error.code == -32602
    assert missing.value.error.data == {"argument": "code"}
    assert not_a_choice.value.error.code == -32602
    assert not_a_choice.value.error.data == {"argument": "style"}
    assert unknown.value.error.code == -32602
