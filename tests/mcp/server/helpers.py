"""What the tests of the server's features share: a catalogue of resources, templates
and prompts of the server's own (made by the decorators and by hand), served by
`make_server`."""

from __future__ import annotations

import base64
import enum
from collections.abc import Mapping
from typing import Any, Literal

from toolsets import (
    Invocation,
    ToolContext,
)
from toolsets.mcp import (
    McpServer,
    Prompt,
    PromptArgument,
    prompt,
    resource,
    resource_template,
)

PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5E"
    "rkJggg=="
)


class Colour(enum.Enum):
    RED = "red"
    GREEN = "green"


@resource("note://today", mime_type="text/markdown")
def today(ctx: ToolContext) -> str:
    """Today's note, for the user asking."""
    return f"# Today, {ctx.user_id}"


@resource("image://pixel", name="pixel", mime_type="image/png")
async def pixel() -> bytes:
    return PIXEL


@resource_template("user://{user_id}/profile", mime_type="application/json")
def profile(user_id: str) -> str | None:
    """Someone's profile."""
    return None if user_id == "nobody" else f'{{"id": "{user_id}"}}'


@resource_template("paint://{colour}/{shade}")
def paint(colour: Colour, shade: str) -> str:
    """A paint."""
    return f"{colour.name.lower()} paint, {shade}"


@prompt
def review(code: str, style: Literal["short", "strict", "thorough"] = "short") -> str:
    """Ask for a code review.

    Args:
        code: The code to review.
        style: How deep to go.
    """
    return f"Review this ({style}):\n{code}"


@prompt(name="show", description="Show a picture and a note.")
async def show_picture(ctx: ToolContext) -> list[Any]:
    return [
        {"role": "user", "content": {"type": "image", "mime_type": "image/png", "data": "AAAA"}},
        {
            "role": "assistant",
            "content": {"type": "resource", "uri": "note://today", "text": ctx.user_id},
        },
        "And this one?",
    ]


def towns(argument: str, value: str, given: Mapping[str, str]) -> list[str]:
    known = {"fr": ["Paris", "Lyon", "Lille"], "de": ["Berlin", "Bonn"]}
    return [town for town in known.get(given.get("country", ""), []) if town.startswith(value)]


TRIP = Prompt(
    "trip",
    "Plan a trip.",
    arguments=[PromptArgument("country"), PromptArgument("town", required=False)],
    render=lambda args, ctx: f"A trip to {args.get('town', 'somewhere')}, {args['country']}",
    complete=towns,
)


def make_server(**options: Any) -> McpServer:
    return McpServer(
        [],
        resources=[today, pixel, profile, paint],
        prompts=[review, show_picture, TRIP],
        invocation=Invocation(user_id="ada"),
        **options,
    )
