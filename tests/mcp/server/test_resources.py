"""Resources and subscriptions (`toolsets.mcp.server._resources`): the server's own
resources and templates listed and read with the request's context, in both protocol
eras, before (and hiding) a gateway's; subscribers told of an update; what is not there
an invalid params error; reading past the server's ``tool_timeout`` (a prompt or a
completer too) a timeout error."""

from __future__ import annotations

import base64
import threading
from collections.abc import Mapping
from typing import Any

import anyio
import mcp.types as mt
import pytest
from mcp import MCPError
from mcp.shared.exceptions import MCPDeprecationWarning

from tests.mcp.helpers import fixture_stdio
from tests.mcp.server.helpers import PIXEL, TRIP, make_server, today
from tests.mcp.server_helpers import connected
from toolsets.mcp import (
    McpServer,
    McpToolset,
    prompt,
    resource,
)

pytestmark = pytest.mark.anyio

MODES = pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])


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
