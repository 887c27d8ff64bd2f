from __future__ import annotations

import anyio
import pytest

from toolsets import (
    AuthConfig,
    AuthCredential,
    Cancellation,
    Content,
    Identity,
    InMemoryArtifactService,
    InMemoryMemoryService,
    Invocation,
    MemoryEntry,
    Part,
    ServiceNotConfiguredError,
    ToolConfirmation,
    ToolContext,
)

pytestmark = pytest.mark.anyio


def test_a_standalone_context_needs_no_agent() -> None:
    ctx = ToolContext()
    assert ctx.app_name == "toolsets"
    assert ctx.user_id == "user"
    assert ctx.session_id
    assert ctx.invocation_id
    assert ctx.session_id != ToolContext().session_id
    assert ctx.agent_name is None
    assert ctx.user_content is None
    assert ctx.scopes == frozenset()
    assert ctx.identity is None
    assert ctx.function_call_id is None
    assert dict(ctx.state) == {}
    assert ctx.auth_credential is None
    assert ctx.tool_confirmation is None
    assert not ctx.cancellation.cancelled


def test_a_served_call_sees_who_is_calling_and_the_identity_cannot_be_changed() -> None:
    ann = Identity(
        subject="ann",
        issuer="https://id.example.com",
        client_id="desk",
        scopes=frozenset({"orders:read"}),
        claims={"groups": ["sales"]},
        expires_at=1_900_000_000,
    )
    ctx = ToolContext(Invocation(identity=ann))
    assert ctx.identity is ann
    assert ctx.for_call("call-1").identity is ann
    with pytest.raises(AttributeError):
        ann.subject = "bob"  # type: ignore[misc]


def test_the_invocation_view_is_read_only() -> None:
    invocation = Invocation(
        app_name="shop",
        user_id="ann",
        session_id="s1",
        invocation_id="i1",
        agent_name="clerk",
        user_content=Content.user("buy milk"),
        scopes=frozenset({"orders:write"}),
    )
    ctx = ToolContext(invocation, function_call_id="call-1")
    assert (ctx.app_name, ctx.user_id, ctx.session_id, ctx.invocation_id) == (
        "shop",
        "ann",
        "s1",
        "i1",
    )
    assert ctx.agent_name == "clerk"
    assert ctx.user_content is not None
    assert ctx.user_content.text == "buy milk"
    assert ctx.scopes == {"orders:write"}
    with pytest.raises(AttributeError):
        ctx.invocation.user_id = "mallory"  # type: ignore[misc]


def test_state_reads_see_writes_and_writes_go_only_to_the_delta() -> None:
    base = {"count": 1, "name": "ann"}
    ctx = ToolContext(Invocation(state=base))
    assert ctx.state["count"] == 1
    ctx.state["count"] = 2
    ctx.state.update({"new": True})
    assert ctx.state["count"] == 2
    assert ctx.state.get("missing", "d") == "d"
    assert "new" in ctx.state
    assert base == {"count": 1, "name": "ann"}, "the session's state is not touched"
    assert ctx.actions.state_delta == {"count": 2, "new": True}
    assert ctx.state.has_delta
    assert ctx.state.to_dict() == {"count": 2, "new": True, "name": "ann"}
    assert len(ctx.state) == 3
    assert sorted(ctx.state) == ["count", "name", "new"]
    with pytest.raises(KeyError):
        ctx.state["missing"]


def test_every_action_starts_unset() -> None:
    actions = ToolContext().actions
    assert actions.state_delta == {}
    assert actions.artifact_delta == {}
    assert actions.skip_summarization is False
    assert actions.transfer_to_agent is None
    assert actions.escalate is False
    assert actions.long_running is False
    assert actions.requested_auth_configs == {}
    assert actions.requested_tool_confirmations == {}


def test_for_call_shares_the_invocation_but_not_the_actions() -> None:
    parent = ToolContext(Invocation(state={"a": 1}))
    credential = AuthCredential.bearer("t0ken")
    confirmation = ToolConfirmation(confirmed=True)
    one = parent.for_call("c1", auth_credential=credential, tool_confirmation=confirmation)
    two = parent.for_call("c2")
    one.state["a"] = 2
    one.actions.escalate = True
    assert one.invocation is two.invocation is parent.invocation
    assert two.state["a"] == 1
    assert not two.actions.escalate
    assert one.function_call_id == "c1"
    assert one.auth_credential is credential
    assert one.tool_confirmation is confirmation
    assert two.auth_credential is None


def test_a_tool_can_ask_for_confirmation_and_for_a_credential() -> None:
    ctx = ToolContext().for_call("call-7")
    config = AuthConfig(scheme_name="oauth", scheme={"type": "oauth2"}, scopes=("read",))
    ctx.request_confirmation(hint="Spend $10?", payload={"amount": 10})
    ctx.request_credential(config)
    assert ctx.actions.requested_tool_confirmations == {
        "call-7": ToolConfirmation(hint="Spend $10?", payload={"amount": 10})
    }
    assert ctx.actions.requested_auth_configs == {"call-7": config}


def test_asking_the_user_outside_a_call_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="function call id"):
        ToolContext().request_confirmation(hint="?")
    with pytest.raises(ValueError, match="function call id"):
        ToolContext().request_credential(AuthConfig(scheme_name="x"))


async def test_artifacts_are_versioned_and_recorded_in_the_artifact_delta() -> None:
    service = InMemoryArtifactService()
    ctx = ToolContext(Invocation(artifact_service=service)).for_call("c1")
    assert await ctx.save_artifact("report.txt", Part.from_text("v0")) == 0
    assert await ctx.save_artifact("report.txt", Part.from_text("v1")) == 1
    assert ctx.actions.artifact_delta == {"report.txt": 1}
    latest = await ctx.load_artifact("report.txt")
    first = await ctx.load_artifact("report.txt", version=0)
    assert latest is not None
    assert first is not None
    assert (latest.text, first.text) == ("v1", "v0")
    assert await ctx.load_artifact("report.txt", version=5) is None
    assert await ctx.load_artifact("missing.txt") is None
    assert await ctx.list_artifacts() == ["report.txt"]


async def test_artifacts_belong_to_their_session_unless_named_user() -> None:
    service = InMemoryArtifactService()
    alice_1 = ToolContext(Invocation(user_id="alice", session_id="s1", artifact_service=service))
    alice_2 = ToolContext(Invocation(user_id="alice", session_id="s2", artifact_service=service))
    bob_1 = ToolContext(Invocation(user_id="bob", session_id="s1", artifact_service=service))
    await alice_1.save_artifact("notes.txt", Part.from_text("session"))
    await alice_1.save_artifact("user:profile.txt", Part.from_text("user"))
    assert await alice_2.load_artifact("notes.txt") is None
    shared = await alice_2.load_artifact("user:profile.txt")
    assert shared is not None
    assert shared.text == "user"
    assert await bob_1.load_artifact("user:profile.txt") is None
    assert await bob_1.load_artifact("notes.txt") is None
    assert await alice_2.list_artifacts() == ["user:profile.txt"]
    assert await alice_1.list_artifacts() == ["notes.txt", "user:profile.txt"]


async def test_the_artifact_service_lists_versions_and_deletes() -> None:
    service = InMemoryArtifactService()
    where = {"app_name": "a", "user_id": "u", "session_id": "s"}
    blob = Part.from_bytes(b"\x89PNG", "image/png")
    await service.save_artifact(**where, filename="pic.png", artifact=blob)
    await service.save_artifact(**where, filename="pic.png", artifact=blob)
    assert await service.list_versions(**where, filename="pic.png") == [0, 1]
    await service.delete_artifact(**where, filename="pic.png")
    await service.delete_artifact(**where, filename="pic.png")
    assert await service.list_versions(**where, filename="pic.png") == []
    with pytest.raises(ValueError, match="filename"):
        await service.save_artifact(**where, filename="", artifact=blob)


async def test_artifacts_without_a_service_fail_naming_the_missing_service() -> None:
    ctx = ToolContext()
    for attempt in (
        ctx.save_artifact("a.txt", Part.from_text("x")),
        ctx.load_artifact("a.txt"),
        ctx.list_artifacts(),
    ):
        with pytest.raises(ServiceNotConfiguredError) as info:
            await attempt
        assert info.value.service == "artifact_service"
    assert ctx.actions.artifact_delta == {}


async def test_memory_search_ranks_by_shared_words_for_this_user_only() -> None:
    memory = InMemoryMemoryService()
    await memory.add_entries(
        app_name="toolsets",
        user_id="ann",
        entries=[
            MemoryEntry(content=Content.user("I like green tea"), author="ann"),
            MemoryEntry(content=Content.user("My favourite tea is green tea from Japan")),
            MemoryEntry(content=Content.user("The cat is called Tom")),
        ],
    )
    await memory.add_entries(
        app_name="toolsets",
        user_id="bob",
        entries=[MemoryEntry(content=Content.user("green tea is bob's secret"))],
    )
    ctx = ToolContext(Invocation(user_id="ann", memory_service=memory))
    found = await ctx.search_memory("Green TEA Japan?")
    assert [e.content.text for e in found] == [
        "My favourite tea is green tea from Japan",
        "I like green tea",
    ]
    assert await ctx.search_memory("dogs") == []
    assert await ctx.search_memory("  ?! ") == []


async def test_memory_without_a_service_fails_naming_the_missing_service() -> None:
    with pytest.raises(ServiceNotConfiguredError) as info:
        await ToolContext().search_memory("anything")
    assert info.value.service == "memory_service"
    assert "memory_service" in str(info.value)


async def test_cancellation_is_idempotent_keeps_the_first_reason_and_wakes_waiters() -> None:
    flag = Cancellation()
    woke: list[bool] = []

    async def waiter() -> None:
        await flag.wait()
        woke.append(True)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(waiter)
            await anyio.wait_all_tasks_blocked()
            flag.cancel("timeout")
            flag.cancel("second")
    assert woke == [True]
    assert flag.cancelled
    assert flag.reason == "timeout"
    with anyio.fail_after(1):
        await flag.wait()  # already cancelled: returns at once


def test_the_context_repr_shows_no_state_or_credentials() -> None:
    ctx = ToolContext(
        Invocation(user_id="ann", state={"password": "hunter2"}),
        function_call_id="c1",
        auth_credential=AuthCredential.bearer("s3cret-token"),
    )
    shown = repr(ctx)
    assert "ann" in shown
    assert "hunter2" not in shown
    assert "s3cret-token" not in shown


def test_cancelling_the_run_cancels_every_calls_flag_but_not_the_reverse() -> None:
    invocation = Invocation()
    first = ToolContext(invocation).for_call("c1")
    second = ToolContext(invocation).for_call("c2")
    first.cancellation.cancel("timeout")
    assert first.cancellation.cancelled
    assert not second.cancellation.cancelled
    assert not invocation.cancellation.cancelled
    invocation.cancellation.cancel("user pressed stop")
    assert second.cancellation.cancelled
    assert second.cancellation.reason == "user pressed stop"
    assert first.cancellation.reason == "timeout"
    late = ToolContext(invocation).for_call("c3")
    assert late.cancellation.cancelled


def test_changing_a_mutable_state_value_in_place_is_a_write_and_spares_the_session() -> None:
    base = {"items": [1], "config": {"depth": 1}}
    ctx = ToolContext(Invocation(state=base))
    ctx.state["items"].append(2)
    ctx.state["config"]["depth"] = 2
    assert ctx.state["items"] == [1, 2]
    assert ctx.actions.state_delta == {"items": [1, 2], "config": {"depth": 2}}
    assert base == {"items": [1], "config": {"depth": 1}}
    snapshot = ctx.state.to_dict()
    snapshot["items"].append(3)
    assert ctx.state["items"] == [1, 2]


def test_deleting_a_state_key_is_refused_with_the_alternative() -> None:
    ctx = ToolContext(Invocation(state={"a": 1}))
    with pytest.raises(TypeError, match=r"ctx.state\['a'\] = None"):
        del ctx.state["a"]  # type: ignore[attr-defined]


async def test_a_finished_conversation_can_be_remembered_once() -> None:
    from toolsets.agent import LlmAgent, Runner
    from toolsets.models import ScriptedModel

    memory = InMemoryMemoryService()
    runner = Runner(
        LlmAgent("a", ScriptedModel(["Your dog is called Rex."])), memory_service=memory
    )
    session = await runner.create_session(user_id="ann")
    async for _ in runner.run(
        user_id="ann", session_id=session.id, message="What is my dog called?"
    ):
        pass
    done = await runner.get_session(user_id="ann", session_id=session.id)
    assert await memory.add_session_to_memory(done) == 2
    assert await memory.add_session_to_memory(done) == 0
    found = await memory.search_memory(app_name="toolsets", user_id="ann", query="dog Rex")
    assert [(e.author, e.content.text) for e in found] == [
        ("a", "Your dog is called Rex."),
        ("user", "What is my dog called?"),
    ]
    assert await memory.search_memory(app_name="toolsets", user_id="bob", query="dog") == []
