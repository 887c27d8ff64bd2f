"""What an OpenAPI toolset's tools share (`toolsets.openapi._api.RestApi`): credentials
checked once where they come from, and no tie back to the toolset."""

from __future__ import annotations

import gc
import weakref
from typing import Any

import anyio
import pytest

from tests.openapi.helpers import Recorded, client_credentials, recording_server, secured
from toolsets import AuthError, JsonValue, ToolContext
from toolsets.openapi import ClientCredentials, OpenApiToolset

pytestmark = pytest.mark.anyio

TOKEN = "issued-token-0123456789"


def spec(token_url: str) -> dict[str, Any]:
    return secured("machine", client_credentials(token_url))


async def run_twice(routes: dict[str, Any]) -> tuple[list[Recorded], list[JsonValue | Exception]]:
    """Two calls of one tool whose token comes from the server's ``/token``; what the
    server saw, and each call's result or error."""
    given = ClientCredentials(client_id="app", client_secret="app-secret-123")
    outcomes: list[JsonValue | Exception] = []
    async with recording_server() as server:
        server.routes.update(routes)
        async with OpenApiToolset(
            spec(server.url + "/token"), base_url=server.url, credentials={"machine": given}
        ) as toolset:
            tool = await toolset.get_tool("get_thing")
            for _ in range(2):
                with anyio.fail_after(10):
                    try:
                        outcomes.append(await tool.run({"id": "1"}, ToolContext()))
                    except AuthError as error:
                        outcomes.append(error)
    return server.requests, outcomes


@pytest.mark.parametrize("issued", [TOKEN + "\n", "ö" + TOKEN])
async def test_a_fetched_token_no_header_can_carry_is_refused_naming_the_scheme(
    issued: str,
) -> None:
    token = {"/token": (200, {}, {"access_token": issued, "token_type": "Bearer"})}
    requests, outcomes = await run_twice(token)
    for error in outcomes:
        assert isinstance(error, AuthError)
        assert error.scheme_name == "machine"
        assert TOKEN not in str(error)
    assert [request.path for request in requests] == ["/token", "/token"]  # never sent on


async def test_a_fetched_token_is_sent_on_every_call_once_fetched() -> None:
    token = {"/token": (200, {}, {"access_token": TOKEN, "token_type": "Bearer"})}
    requests, outcomes = await run_twice(token)
    assert outcomes == [{"ok": True}, {"ok": True}]
    assert [request.path for request in requests] == ["/token", "/things/1", "/things/1"]
    assert requests[-1].headers["authorization"] == f"Bearer {TOKEN}"


async def test_a_tool_kept_does_not_keep_its_toolset_alive() -> None:
    async with recording_server() as server:
        toolset = OpenApiToolset(spec(server.url + "/token"), base_url=server.url)
        kept = await toolset.get_tool("get_thing")
        gone = weakref.ref(toolset)
        del toolset
        gc.collect()
        assert gone() is None
        assert kept.name == "get_thing"
