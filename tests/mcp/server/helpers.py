"""What the tests of the server's features share: a catalogue of resources, templates
and prompts of the server's own (made by the decorators and by hand), served by
`make_server`."""

from __future__ import annotations

import base64
import enum
from collections.abc import Mapping
from typing import Any, Literal

import toolsets
from toolsets import (
    AuthConfig,
    Identity,
    Invocation,
    ToolContext,
)
from toolsets.mcp import (
    IncomingRequest,
    McpServer,
    McpToolset,
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


# --- who calls a served tool, as a resource server would tell (tests of issue 27) --------

TOKENS = {"alice-at": "alice", "bob-at": "bob", "mallory-at": "mallory"}
"""The access tokens the clients send, and whose they are."""
KEY_SCHEME = {"type": "apiKey", "in": "header", "name": "X-Key"}
KEY = AuthConfig(scheme_name="key", scheme=KEY_SCHEME)


def identify(request: IncomingRequest) -> Invocation:
    """The identity a resource server would validate from the request's token (set
    directly here: the token is looked up, not checked)."""
    subject = TOKENS.get(request.bearer_token or "")
    if subject is None:
        return Invocation()
    identity = Identity(subject=subject, issuer="https://id.example", client_id="agent")
    return Invocation(identity=identity, user_id=subject)


async def call_as(url: str, token: str | None, args: dict[str, Any] | None = None) -> Any:
    """``get_thing`` called through the served server by a client sending ``token``."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with McpToolset(toolsets.mcp.StreamableHttp(url=url, headers=headers)) as served:
        thing = await served.get_tool("get_thing")
        return await thing.run(args or {"id": "7"}, toolsets.ToolContext())
