"""An audit record per served tool call, on the ``toolsets.audit`` logger: who, which
tool, the outcome (ok, error, refused, input_required, cancelled), how long; the fields
on the log record for a structured handler; never an argument's value, nor a name the
tool does not declare."""

from __future__ import annotations

import logging
from typing import Any

import anyio
import mcp.types as mt
import pytest

from tests.mcp.helpers import eventually
from tests.mcp.server_helpers import connected
from toolsets import (
    AccessPolicy,
    AccessRule,
    AuthConfig,
    Identity,
    Invocation,
    StaticToolset,
    code_mode,
    restricted,
    searchable,
    tool,
)
from toolsets.mcp import McpServer, UserCredentials

pytestmark = pytest.mark.anyio

ALICE = Identity(
    subject="alice",
    issuer="https://id.example",
    client_id="agent-app",
    scopes=frozenset({"notes:read"}),
)
NOTES_KEY = AuthConfig(scheme_name="notes_key", scheme={"type": "apiKey", "in": "header"})


@tool(read_only=True)
def read_note(title: str, password: str = "") -> str:
    """Read a note."""
    return f"note {title}"


@tool
def delete_note(title: str) -> str:
    """Delete a note."""
    return "deleted"


@tool
def broken() -> str:
    """Always fails."""
    raise RuntimeError("the disk is on fire")


@tool(auth_config=NOTES_KEY)
def sync_notes() -> str:
    """Needs the user's own key."""
    return "synced"


@tool(requires_confirmation=True)
def wipe() -> str:
    """Wipe everything."""
    return "wiped"


started: list[str] = []


@tool
async def slow() -> str:
    """Takes forever."""
    started.append("slow")
    await anyio.sleep_forever()
    return "never"


def server(identity: Identity | None = ALICE) -> McpServer:
    policy = AccessPolicy([AccessRule(tools=["delete_*"], scopes=["notes:write"])])
    tools = StaticToolset([read_note, delete_note, broken, sync_notes, wipe, slow])
    scopes = identity.scopes if identity is not None else frozenset()
    return McpServer(
        restricted(tools, policy),
        credentials=UserCredentials.from_mapping({"bob": {"notes_key": "k"}}),
        invocation=Invocation(identity=identity, scopes=scopes, session_id="s-1"),
    )


def only(records: list[logging.LogRecord]) -> logging.LogRecord:
    (record,) = records
    return record


async def test_a_call_that_runs_is_recorded_with_who_called_and_how_long(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="toolsets.audit")
    async with connected(server(), "2026-07-28") as client:
        await client.call_tool("read_note", {"title": "todo", "password": "hunter2"})
    record = only([r for r in caplog.records if r.name == "toolsets.audit"])
    fields: Any = record
    assert record.levelno == logging.INFO
    assert (fields.tool, fields.outcome, fields.subject) == ("read_note", "ok", "alice")
    assert (fields.issuer, fields.client_id) == ("https://id.example", "agent-app")
    assert fields.session_id == "s-1"
    assert fields.arguments == ("password", "title")
    assert fields.reason is None
    assert fields.request_id is not None
    assert fields.duration_ms >= 0
    assert fields.audit.outcome == "ok"
    message = record.getMessage()
    assert message.startswith("tools/call 'read_note' by alice (client agent-app): ok in ")
    assert message.endswith(" ms")
    assert "hunter2" not in message
    assert "hunter2" not in repr(vars(record))
    assert "todo" not in repr(vars(record))


@pytest.mark.parametrize(
    ("name", "arguments", "outcome", "reason"),
    [
        ("delete_note", {"title": "t"}, "refused", "notes:write"),
        ("sync_notes", {}, "refused", "'notes_key'"),
        ("broken", {}, "error", None),
        ("no_such_tool", {"x": 1}, "error", None),
        ("read_note", {"title": {"not": "a string"}}, "error", None),
    ],
    ids=["no-scope", "no-credential", "tool-failed", "unknown-tool", "bad-arguments"],
)
async def test_refused_and_failed_calls_are_recorded_saying_which_and_why_only_if_refused(
    caplog: pytest.LogCaptureFixture,
    name: str,
    arguments: dict[str, Any],
    outcome: str,
    reason: str | None,
) -> None:
    caplog.set_level(logging.INFO, logger="toolsets.audit")
    async with connected(server(), "2026-07-28") as client:
        answer = await client.call_tool(name, arguments)
    assert answer.is_error
    fields: Any = only([r for r in caplog.records if r.name == "toolsets.audit"])
    assert fields.outcome == outcome
    if reason is None:
        assert fields.reason is None
    else:
        assert reason in fields.reason
        assert reason in fields.getMessage()
    assert "fire" not in fields.getMessage()  # an error's cause may quote a value: not kept
    assert fields.arguments == (("title",) if "title" in arguments else ())


async def test_an_unidentified_caller_is_recorded_as_such(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="toolsets.audit")
    async with connected(server(identity=None), "legacy") as client:
        await client.call_tool("read_note", {"title": "t"})
    fields: Any = only([r for r in caplog.records if r.name == "toolsets.audit"])
    assert (fields.subject, fields.issuer, fields.client_id) == (None, None, None)
    assert "by an unidentified caller: ok" in fields.getMessage()


async def test_each_round_of_a_call_that_asks_its_client_is_recorded(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="toolsets.audit")

    async def accept(ctx: Any, params: mt.ElicitRequestParams) -> mt.ElicitResult:
        return mt.ElicitResult(action="accept")

    async with connected(server(), "2026-07-28", elicitation_callback=accept) as client:
        await client.call_tool("wipe", {})
    outcomes = [getattr(r, "outcome", None) for r in caplog.records if r.name == "toolsets.audit"]
    assert outcomes == ["input_required", "ok"]


async def test_a_call_its_client_cancels_is_recorded_as_cancelled(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="toolsets.audit")
    started.clear()
    async with connected(server(), "legacy") as client:
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.call_tool, "slow", {})

            async def running() -> bool:
                return bool(started)

            await eventually(running, within=10)
            tg.cancel_scope.cancel()

        async def recorded() -> bool:
            return any(r.name == "toolsets.audit" for r in caplog.records)

        await eventually(recorded, within=10)
    fields: Any = only([r for r in caplog.records if r.name == "toolsets.audit"])
    assert fields.outcome == "cancelled"


async def test_nothing_is_made_when_no_one_listens_to_the_audit_logger(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="toolsets.audit")
    async with connected(server(), "2026-07-28") as client:
        result = await client.call_tool("read_note", {"title": "t"})
    assert not result.is_error
    assert [r for r in caplog.records if r.name == "toolsets.audit"] == []


async def test_a_line_a_tool_logs_names_the_caller_its_invocation_gives(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # No authorization here: the identity comes from the server's `invocation`.
    @tool
    def noisy() -> str:
        """Logs on toolsets' server logger."""
        logging.getLogger("toolsets.mcp.server").warning("noisy ran")
        return "done"

    caplog.set_level(logging.WARNING, logger="toolsets.mcp.server")
    served = McpServer([noisy], invocation=Invocation(identity=ALICE, scopes=ALICE.scopes))
    async with connected(served, "legacy") as client:
        await client.call_tool("noisy", {})
    record = only([r for r in caplog.records if r.name == "toolsets.mcp.server"])
    fields: Any = record
    assert (fields.subject, fields.client_id) == ("alice", "agent-app")
    assert record.getMessage() == "noisy ran [caller alice, client agent-app]"


async def test_each_call_a_served_program_makes_has_its_own_record_within_run_code(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="toolsets.audit")
    tools = code_mode(searchable(StaticToolset([read_note, broken, sync_notes])))
    served = McpServer(tools, invocation=Invocation(identity=ALICE, scopes=ALICE.scopes))
    program = (
        "await tools.search_tools(query='read a note')\n"
        "note = await tools.read_note(title='todo', password='hunter2')\n"
        "for each in (tools.broken, tools.sync_notes):\n"
        "    try:\n"
        "        await each()\n"
        "    except Exception:\n"
        "        pass\n"
        "note"
    )
    async with connected(served, "2026-07-28") as client:
        answer = await client.call_tool("run_code", {"code": program})
    assert not answer.is_error, answer
    records: list[Any] = [r for r in caplog.records if r.name == "toolsets.audit"]
    seen = [(r.tool, r.parent, r.outcome) for r in records]
    assert seen == [
        ("search_tools", "run_code", "ok"),
        ("read_note", "run_code", "ok"),
        ("broken", "run_code", "error"),
        ("sync_notes", "run_code", "refused"),
        ("run_code", None, "ok"),
    ]
    for record in records:
        assert (record.subject, record.client_id) == ("alice", "agent-app")
        assert record.session_id == records[-1].session_id
        assert record.request_id == records[-1].request_id
    assert records[1].arguments == ("password", "title")
    assert "'notes_key'" in records[3].reason
    assert (
        records[1]
        .getMessage()
        .startswith("tools/call 'read_note' within 'run_code' by alice (client agent-app): ok in ")
    )
    assert all("hunter2" not in repr(vars(r)) and "todo" not in r.getMessage() for r in records)


async def test_resource_reads_and_prompt_gets_are_recorded_refusals_with_their_reason(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from mcp import MCPError

    from tests.mcp.server.test_access import caller, own_server

    caplog.set_level(logging.INFO, logger="toolsets.audit")
    async with connected(own_server(caller({"reports:read"})), "2026-07-28") as client:
        await client.read_resource("file:///reports/q1")
        with pytest.raises(MCPError):
            await client.get_prompt("admin_reset", {"target": "cache"})
        with pytest.raises(MCPError):
            await client.read_resource("nowhere://at/all")
    records: list[Any] = [r for r in caplog.records if r.name == "toolsets.audit"]
    assert [(r.method, r.tool, r.outcome, r.subject) for r in records] == [
        ("resources/read", "file:///reports/q1", "ok", "bob"),
        ("prompts/get", "admin_reset", "refused", "bob"),
        ("resources/read", "nowhere://at/all", "error", "bob"),
    ]
    assert "needs the role admin" in records[1].reason
    assert records[1].getMessage().startswith("prompts/get 'admin_reset' by bob: refused in ")
    assert all(r.request_id is not None for r in records)
