"""Completion (`toolsets.mcp.server._completion`): the values a prompt's or a template's
completer suggests, or none."""

from __future__ import annotations

import mcp.types as mt
import pytest

from tests.mcp.server.helpers import make_server
from tests.mcp.server_helpers import connected

pytestmark = pytest.mark.anyio
MODES = pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])


@MODES
async def test_completion_offers_choices_a_completer_gives_or_nothing(mode: str) -> None:
    def ref(name: str) -> mt.PromptReference:
        return mt.PromptReference(type="ref/prompt", name=name)

    paints = mt.ResourceTemplateReference(type="ref/resource", uri="paint://{colour}/{shade}")
    async with connected(make_server(), mode) as client:
        styles = await client.complete(ref("review"), {"name": "style", "value": "s"})
        code = await client.complete(ref("review"), {"name": "code", "value": "s"})
        french = await client.complete(
            ref("trip"), {"name": "town", "value": "L"}, context_arguments={"country": "fr"}
        )
        colours = await client.complete(paints, {"name": "colour", "value": ""})
        unknown = await client.complete(ref("nothing"), {"name": "x", "value": ""})
    assert styles.completion.values == ["short", "strict"]
    assert code.completion.values == []
    assert french.completion.values == ["Lyon", "Lille"]
    assert colours.completion.values == ["red", "green"]
    assert unknown.completion.values == []
