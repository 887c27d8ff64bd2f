"""``toolsets serve --confirm``, served over stdio to a real MCP client: a call the
policy says asks first is asked once through the client (elicitation), through a gateway
before another ``toolsets serve`` too; refused to a client that cannot ask."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import anyio
import mcp.types as mt
import pytest
from mcp import Client, StdioServerParameters

from tests.adapters.helpers import NotesApi
from tests.cli.helpers import (
    FIXTURE_STDIO,
    TIMEOUT,
    entry_point,
    environment,
    stdout_json,
    toolsets_command,
)


def _served(*args: str) -> StdioServerParameters:
    """``toolsets serve ARGS`` over stdio, as a client starts it."""
    command = entry_point()
    return StdioServerParameters(
        command=command[0], args=[*command[1:], "serve", *args], env=environment()
    )


async def _call_through(
    params: StdioServerParameters, name: str, args: dict[str, Any], *, asks: list[str] | None
) -> mt.CallToolResult:
    """One call through the served gateway; ``asks`` collects the questions the client
    is asked (None: the client cannot ask)."""

    async def elicit(context: Any, request: mt.ElicitRequestParams) -> mt.ElicitResult:
        assert asks is not None
        asks.append(request.message)
        return mt.ElicitResult(action="accept", content={})

    callback = elicit if asks is not None else None
    with anyio.fail_after(TIMEOUT):
        async with Client(params, elicitation_callback=callback) as client:
            return await client.call_tool(name, args)


@pytest.mark.anyio
async def test_serve_confirm_never_lets_a_client_that_cannot_ask_call_a_destructive_tool() -> None:
    refused = await _call_through(
        _served("--stdio", FIXTURE_STDIO), "delete_file", {"path": "x"}, asks=None
    )
    assert refused.is_error
    assert refused.structured_content is not None
    assert refused.structured_content["confirmation_needed"] is True
    done = await _call_through(
        _served("--stdio", FIXTURE_STDIO, "--confirm", "never"),
        "delete_file",
        {"path": "x"},
        asks=None,
    )
    assert not done.is_error
    assert done.structured_content == {"result": "deleted x"}


@pytest.mark.anyio
async def test_a_gateway_asks_an_eliciting_client_once_per_call() -> None:
    asks: list[str] = []
    done = await _call_through(
        _served("--stdio", FIXTURE_STDIO), "delete_file", {"path": "x"}, asks=asks
    )
    assert done.structured_content == {"result": "deleted x"}
    assert len(asks) == 1
    assert "delete_file" in asks[0]


def _upstream(spec: Path, api: NotesApi) -> str:
    """``--stdio`` for another ``toolsets serve`` of the notes API: a server that
    confirms its own destructive tools (by elicitation)."""
    return shlex.join([*entry_point(), "serve", str(spec), "--base-url", api.url])


async def _create_note(spec: Path, api: NotesApi) -> int:
    """A note made by ``toolsets call`` (in this process: a thread of its own, as the
    command runs its own event loop); its id."""
    args = ("call", str(spec), "create_note", "title=t", "--base-url", api.url)
    made = await anyio.to_thread.run_sync(lambda: toolsets_command(*args))
    note_id: int = stdout_json(made)["id"]
    return note_id


@pytest.mark.anyio
async def test_a_gateway_before_a_server_that_confirms_itself_asks_once(
    sources: dict[str, Path], api: NotesApi
) -> None:
    note = await _create_note(sources["notes"], api)
    asks: list[str] = []
    gateway = _served("--stdio", _upstream(sources["notes"], api))
    done = await _call_through(gateway, "delete_note", {"note_id": note}, asks=asks)
    assert not done.is_error, done.content
    assert len(asks) == 1  # the gateway's; the upstream server's own is answered by it
    assert note not in api.notes


@pytest.mark.anyio
async def test_a_gateway_that_confirms_nothing_does_not_answer_the_upstreams_question(
    sources: dict[str, Path], api: NotesApi
) -> None:
    note = await _create_note(sources["notes"], api)
    asks: list[str] = []
    gateway = _served("--stdio", _upstream(sources["notes"], api), "--confirm", "never")
    refused = await _call_through(gateway, "delete_note", {"note_id": note}, asks=asks)
    assert refused.is_error
    assert asks == []
    assert note in api.notes  # the upstream server's own confirmation was not given


@pytest.mark.anyio
async def test_serve_confirm_always_asks_before_a_read_only_call_too() -> None:
    asks: list[str] = []
    done = await _call_through(
        _served("--stdio", FIXTURE_STDIO, "--confirm", "always"), "echo", {"text": "hi"}, asks=asks
    )
    assert done.structured_content == {"result": "hi"}
    assert len(asks) == 1
