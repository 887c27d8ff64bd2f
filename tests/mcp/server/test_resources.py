"""`McpServer` serving resources, resource templates and prompts of its own, to the SDK's
client in process, both protocol eras: listing, reading, subscriptions, completion and
the announcements of list changes."""

from __future__ import annotations

import base64
import enum
import threading
from collections.abc import Mapping
from typing import Any, Literal

import anyio
import mcp.types as mt
import pytest
from mcp import MCPError
from mcp.shared.exceptions import MCPDeprecationWarning

from tests.mcp.helpers import fixture_stdio
from tests.mcp.server_helpers import connected
from toolsets import (
    Invocation,
    StaticToolset,
    ToolContext,
    ToolDefinitionError,
    ToolNotFoundError,
    combined,
    tool,
)
from toolsets.mcp import (
    McpServer,
    McpToolset,
    Prompt,
    PromptArgument,
    Resource,
    ResourceTemplate,
    prompt,
    resource,
    resource_template,
)

pytestmark = pytest.mark.anyio

MODES = pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
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


@MODES
async def test_resources_and_templates_are_listed_and_read_with_the_request_context(
    mode: str,
) -> None:
    async with connected(make_server(), mode) as client:
        listed = (await client.list_resources()).resources
        templates = (await client.list_resource_templates()).resource_templates
        text = (await client.read_resource("note://today")).contents
        blob = (await client.read_resource("image://pixel")).contents
        templated = (await client.read_resource("user://ada%20l/profile")).contents
        painted = (await client.read_resource("paint://green/light")).contents
    assert [(str(r.uri), r.name, r.mime_type) for r in listed] == [
        ("note://today", "today", "text/markdown"),
        ("image://pixel", "pixel", "image/png"),
    ]
    assert listed[0].description == "Today's note, for the user asking."
    assert [(t.uri_template, t.name) for t in templates] == [
        ("user://{user_id}/profile", "profile"),
        ("paint://{colour}/{shade}", "paint"),
    ]
    assert isinstance(text[0], mt.TextResourceContents)
    assert (text[0].text, text[0].mime_type) == ("# Today, ada", "text/markdown")
    assert isinstance(blob[0], mt.BlobResourceContents)
    assert base64.b64decode(blob[0].blob) == PIXEL
    assert isinstance(templated[0], mt.TextResourceContents)
    assert str(templated[0].uri) == "user://ada%20l/profile"
    assert templated[0].text == '{"id": "ada l"}'  # the variable percent-decoded
    assert isinstance(painted[0], mt.TextResourceContents)
    assert painted[0].text == "green paint, light"  # the Enum member, not the string


@MODES
@pytest.mark.parametrize(
    "uri",
    ["nowhere://at/all", "user://nobody/profile", "user://a/b/profile", "paint://blue/dark"],
)
async def test_reading_what_is_not_there_is_an_invalid_params_error_naming_the_uri(
    mode: str, uri: str
) -> None:
    async with connected(make_server(), mode) as client:
        with pytest.raises(MCPError) as raised:
            await client.read_resource(uri)
    assert raised.value.error.code == -32602
    assert raised.value.error.data == {"uri": uri}


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


@MODES
async def test_subscribers_hear_that_a_resource_was_updated(mode: str) -> None:
    server = make_server()
    updated = anyio.Event()
    heard: list[str] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, mt.ResourceUpdatedNotification):
            heard.append(str(message.params.uri))
            updated.set()

    async with connected(server, mode, message_handler=on_message) as client:
        if mode == "legacy":
            with pytest.warns(MCPDeprecationWarning):  # removed in 2026-07-28
                await client.subscribe_resource("note://today")
            await server.resource_updated("image://pixel")  # nobody listens to that one
            await server.resource_updated("note://today")
            with anyio.fail_after(10):
                await updated.wait()
            with pytest.warns(MCPDeprecationWarning):
                await client.unsubscribe_resource("note://today")
            await server.resource_updated("note://today")
            await client.list_resources()  # the notification, if sent, came before this
        else:
            async with client.listen(resource_subscriptions=["note://today"]):
                await server.resource_updated("image://pixel")
                await server.resource_updated("note://today")
                with anyio.fail_after(10):
                    await updated.wait()
    assert heard == ["note://today"]


@MODES
async def test_clients_hear_when_a_served_static_toolset_or_the_prompts_change(
    mode: str,
) -> None:
    @tool
    def fresh() -> str:
        """A new tool."""
        return "fresh"

    tools = StaticToolset([])
    server = McpServer(combined(tools), prompts=[review])
    changes: list[str] = []
    tools_changed, prompts_changed = anyio.Event(), anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, mt.ToolListChangedNotification):
            changes.append("tools")
            tools_changed.set()
        elif isinstance(message, mt.PromptListChangedNotification):
            changes.append("prompts")
            prompts_changed.set()

    async with connected(server, mode, message_handler=on_message) as client:
        await client.list_tools()
        if mode == "legacy":  # notifications on the session's own stream
            tools.push(fresh)
            with anyio.fail_after(10):
                await tools_changed.wait()
            server.add_prompts(TRIP)
            with anyio.fail_after(10):
                await prompts_changed.wait()
        else:  # the same notifications, on a subscriptions/listen stream
            async with client.listen(tools_list_changed=True, prompts_list_changed=True):
                tools.push(fresh)
                with anyio.fail_after(10):
                    await tools_changed.wait()
                server.add_prompts(TRIP)
                with anyio.fail_after(10):
                    await prompts_changed.wait()
        names = [t.name for t in (await client.list_tools()).tools]
        prompts = [p.name for p in (await client.list_prompts()).prompts]
        tools.remove("fresh")
        server.remove_prompt("trip")
        after = [t.name for t in (await client.list_tools()).tools]
        prompts_after = [p.name for p in (await client.list_prompts()).prompts]
    assert changes[:2] == ["tools", "prompts"]
    assert (names, prompts) == (["fresh"], ["review", "trip"])
    assert (after, prompts_after) == ([], ["review"])


@MODES
async def test_resources_and_prompts_of_its_own_come_before_and_hide_a_gateways(
    mode: str,
) -> None:
    @resource("mem://greeting", mime_type="text/plain")
    def greeting() -> str:
        return "ours"

    server = McpServer(
        McpToolset(fixture_stdio(), confirm="never"), resources=[greeting, today], prompts=[TRIP]
    )
    async with connected(server, mode) as client:
        listed = [str(r.uri) for r in (await client.list_resources()).resources]
        read = (await client.read_resource("mem://greeting")).contents[0]
        prompts = [p.name for p in (await client.list_prompts()).prompts]
        upstream = await client.get_prompt("review", {"code": "x"})
    assert listed == ["mem://greeting", "note://today"]  # the upstream greeting hidden
    assert isinstance(read, mt.TextResourceContents)
    assert read.text == "ours"
    assert prompts == ["trip", "review"]
    assert upstream.messages  # the upstream server's prompt, still served


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


def test_a_static_toolset_tells_its_listeners_of_pushes_and_removals() -> None:
    @tool
    def one() -> int:
        """One."""
        return 1

    tools = StaticToolset()
    heard: list[str] = []
    stop = tools.on_tools_changed(lambda: heard.append("changed"))
    tools.push(one)
    with pytest.raises(ToolNotFoundError) as unknown:
        tools.remove("one", "two")
    tools.remove("one")
    stop()
    stop()
    tools.push(one)
    assert heard == ["changed", "changed"]
    assert unknown.value.name == "two"


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


@MODES
async def test_a_resource_prompt_or_completer_of_its_own_past_the_tool_timeout_is_a_timeout_error(
    mode: str,
) -> None:
    released = threading.Event()

    @resource("note://slow")
    async def slow() -> str:
        await anyio.Event().wait()  # never set
        return "never"

    @resource("note://blocking")
    def blocking() -> str:
        released.wait(30)  # a sync function blocking its worker thread
        return "late"

    async def forever(argument: str, value: str, given: Mapping[str, str]) -> list[str]:
        await anyio.Event().wait()
        return []

    @prompt(complete=forever)
    async def stuck(topic: str) -> str:
        """Never renders."""
        await anyio.Event().wait()
        return topic

    server = McpServer([], resources=[slow, blocking], prompts=[stuck], tool_timeout=0.2)
    ref = mt.PromptReference(type="ref/prompt", name="stuck")
    try:
        async with connected(server, mode) as client:
            with pytest.raises(MCPError) as read:
                await client.read_resource("note://slow")
            with pytest.raises(MCPError) as blocked:
                await client.read_resource("note://blocking")
            with pytest.raises(MCPError) as got:
                await client.get_prompt("stuck", {"topic": "x"})
            with pytest.raises(MCPError) as completed:
                await client.complete(ref, {"name": "topic", "value": ""})
    finally:
        released.set()
    codes = {e.value.code for e in (read, blocked, got, completed)}
    assert codes == {-32001}
