"""Sessions: the in-memory session service, and state scoping through real agent runs."""

from __future__ import annotations

from typing import Any

import pytest

from tests.agent.helpers import collect
from toolsets import Content, FunctionCall, ToolContext
from toolsets.agent import (
    Event,
    InMemorySessionService,
    LlmAgent,
    RunConfig,
    Runner,
    Session,
    SessionNotFoundError,
    SessionService,
)
from toolsets.agent._contents import History, HistoryCache, build_contents
from toolsets.models import ScriptedModel

pytestmark = pytest.mark.anyio

APP = "shop"


def responses(events: list[Event], name: str) -> list[Any]:
    return [r.response for e in events for r in e.function_responses if r.name == name]


# --- the service on its own ---------------------------------------------------------------


async def test_a_created_session_can_be_read_back_listed_and_deleted() -> None:
    service = InMemorySessionService()
    created = await service.create_session(app_name=APP, user_id="ann", session_id="s1")
    await service.create_session(app_name=APP, user_id="ann", session_id="s2")
    await service.create_session(app_name=APP, user_id="bob", session_id="s3")
    await service.create_session(app_name="other-app", user_id="ann", session_id="s4")

    fetched = await service.get_session(app_name=APP, user_id="ann", session_id="s1")
    assert (fetched.id, fetched.app_name, fetched.user_id) == ("s1", APP, "ann")
    assert fetched.events == []
    assert created.id == "s1"
    assert sorted(await service.list_sessions(app_name=APP, user_id="ann")) == ["s1", "s2"]
    assert await service.list_sessions(app_name=APP, user_id="bob") == ["s3"]

    await service.delete_session(app_name=APP, user_id="ann", session_id="s1")

    assert await service.list_sessions(app_name=APP, user_id="ann") == ["s2"]
    with pytest.raises(SessionNotFoundError):
        await service.get_session(app_name=APP, user_id="ann", session_id="s1")


async def test_a_session_gets_a_fresh_id_when_none_is_given() -> None:
    service = InMemorySessionService()
    first = await service.create_session(app_name=APP, user_id="ann")
    second = await service.create_session(app_name=APP, user_id="ann")
    assert first.id != second.id
    assert sorted(await service.list_sessions(app_name=APP, user_id="ann")) == sorted(
        [first.id, second.id]
    )


async def test_deleting_a_session_that_does_not_exist_is_not_an_error() -> None:
    service = InMemorySessionService()
    await service.delete_session(app_name=APP, user_id="ann", session_id="nope")
    assert await service.list_sessions(app_name=APP, user_id="ann") == []


async def test_getting_a_missing_session_raises_an_error_naming_its_id() -> None:
    service = InMemorySessionService()
    await service.create_session(app_name=APP, user_id="ann", session_id="mine")
    with pytest.raises(SessionNotFoundError) as caught:
        await service.get_session(app_name=APP, user_id="ann", session_id="missing")
    assert caught.value.session_id == "missing"
    assert isinstance(caught.value, LookupError)

    # Another user's session of the same id is not this user's session.
    with pytest.raises(SessionNotFoundError) as caught:
        await service.get_session(app_name=APP, user_id="bob", session_id="mine")
    assert caught.value.session_id == "mine"


async def test_the_runner_raises_session_not_found_for_a_run_in_a_missing_session() -> None:
    model = ScriptedModel(["never"])
    runner = Runner(LlmAgent("helper", model), app_name=APP)
    with pytest.raises(SessionNotFoundError) as caught:
        await collect(runner.run(user_id="ann", session_id="ghost", message="hi"))
    assert caught.value.session_id == "ghost"
    assert model.requests == []


async def test_creating_a_session_with_an_id_already_in_use_raises_value_error() -> None:
    service = InMemorySessionService()
    await service.create_session(app_name=APP, user_id="ann", session_id="dup", state={"k": 1})
    with pytest.raises(ValueError, match="dup"):
        await service.create_session(app_name=APP, user_id="ann", session_id="dup", state={"k": 2})
    # The first session is untouched.
    kept = await service.get_session(app_name=APP, user_id="ann", session_id="dup")
    assert kept.state == {"k": 1}
    # The same id for another user is another session.
    other = await service.create_session(app_name=APP, user_id="bob", session_id="dup")
    assert other.state == {}


async def test_a_partial_event_appended_to_the_service_is_not_recorded() -> None:
    service = InMemorySessionService()
    session = await service.create_session(app_name=APP, user_id="ann", session_id="s")
    chunk = Event(author="helper", invocation_id="inv", content=Content.user("par"), partial=True)
    whole = Event(author="helper", invocation_id="inv", content=Content.user("partial"))
    assert await service.append_event(session, chunk) is chunk
    await service.append_event(session, whole)

    stored = await service.get_session(app_name=APP, user_id="ann", session_id="s")
    assert [e.id for e in stored.events] == [whole.id]
    assert [e.id for e in session.events] == [whole.id]


async def test_a_fetched_session_is_a_copy_whose_changes_do_not_reach_the_store() -> None:
    runner = Runner(LlmAgent("helper", ScriptedModel(["hello"])), app_name=APP)
    session = await runner.create_session(user_id="ann", state={"items": [1], "k": "v"})
    await collect(runner.run(user_id="ann", session_id=session.id, message="hi"))

    fetched = await runner.get_session(user_id="ann", session_id=session.id)
    fetched.state["k"] = "changed"
    fetched.state["items"].append(2)
    fetched.state["new"] = True
    fetched.events.clear()

    again = await runner.get_session(user_id="ann", session_id=session.id)
    assert again.state == {"items": [1], "k": "v"}
    assert [e.author for e in again.events] == ["user", "helper"]


async def test_changing_a_fetched_sessions_events_does_not_change_the_stored_events() -> None:
    model = ScriptedModel([FunctionCall(name="write_scoped_state"), "done"])
    runner = Runner(LlmAgent("keeper", model, tools=[write_scoped_state]), app_name=APP)
    session = await runner.create_session(user_id="ann")
    await collect(runner.run(user_id="ann", session_id=session.id, message="write"))

    fetched = await runner.get_session(user_id="ann", session_id=session.id)
    (written,) = [e for e in fetched.events if e.actions.state_delta]
    written.actions.state_delta["k"] = "tampered"
    written.actions.transfer_to_agent = "elsewhere"

    again = await runner.get_session(user_id="ann", session_id=session.id)
    (stored,) = [e for e in again.events if e.actions.state_delta]
    assert stored.actions.state_delta["k"] == "session value"
    assert stored.actions.transfer_to_agent is None


async def test_the_session_returned_by_create_session_is_a_copy_too() -> None:
    service = InMemorySessionService()
    created = await service.create_session(
        app_name=APP, user_id="ann", session_id="s", state={"nested": {"a": 1}}
    )
    created.state["nested"]["a"] = 99
    created.state["extra"] = 1
    fetched = await service.get_session(app_name=APP, user_id="ann", session_id="s")
    assert fetched.state == {"nested": {"a": 1}}


async def test_a_run_reads_the_stored_events_without_copying_and_leaves_them_as_they_were() -> None:
    service = InMemorySessionService()
    model = ScriptedModel([FunctionCall(name="read_state", args={"key": "k"}), "first", "second"])
    runner = Runner(
        LlmAgent("keeper", model, tools=[read_state]), app_name=APP, session_service=service
    )
    session = await runner.create_session(user_id="ann")
    await collect(runner.run(user_id="ann", session_id=session.id, message="one"))
    before = await service.get_session(app_name=APP, user_id="ann", session_id=session.id)

    # What a run reads: its own state and event list, holding the stored events themselves.
    for_run = await service.session_for_run(app_name=APP, user_id="ann", session_id=session.id)
    stored = await service.session_for_run(app_name=APP, user_id="ann", session_id=session.id)
    assert for_run.events is not stored.events
    assert all(a is b for a, b in zip(for_run.events, stored.events, strict=True))
    for_run.state["k"] = "not stored"
    for_run.events.clear()

    await collect(runner.run(user_id="ann", session_id=session.id, message="two"))
    after = await service.get_session(app_name=APP, user_id="ann", session_id=session.id)
    assert after.state == {}
    # The second run saw the whole conversation, and changed none of the events before it.
    assert [c.role for c in model.requests[-1].contents] == [
        "user",
        "model",
        "tool",
        "model",
        "user",
    ]
    assert len(after.events) == len(before.events) + 2
    for old, new in zip(before.events, after.events, strict=False):
        assert (old.id, old.content, old.actions) == (new.id, new.content, new.actions)


class CopyingOnlyService:
    """A session service with only the protocol's methods (no cheaper read for runs)."""

    def __init__(self) -> None:
        self.inner = InMemorySessionService()
        self.reads = 0
        self.create_session = self.inner.create_session
        self.list_sessions = self.inner.list_sessions
        self.delete_session = self.inner.delete_session
        self.append_event = self.inner.append_event

    async def get_session(self, *, app_name: str, user_id: str, session_id: str) -> Session:
        self.reads += 1
        return await self.inner.get_session(
            app_name=app_name, user_id=user_id, session_id=session_id
        )


async def test_a_service_without_a_read_for_runs_is_read_with_get_session() -> None:
    service = CopyingOnlyService()
    assert isinstance(service, SessionService)
    model = ScriptedModel(["first", "second"])
    runner = Runner(LlmAgent("keeper", model), app_name=APP, session_service=service)
    session = await runner.create_session(user_id="ann")
    await collect(runner.run(user_id="ann", session_id=session.id, message="one"))
    await collect(runner.run(user_id="ann", session_id=session.id, message="two"))
    assert service.reads == 2
    assert [c.role for c in model.requests[-1].contents] == ["user", "model", "user"]


async def test_each_run_of_a_session_sends_the_model_the_whole_conversation_in_order() -> None:
    # Later runs go on from the history the previous run built; what the model is sent
    # must be what building it from all the session's events gives.
    steps: list[Any] = []
    for n in range(4):
        steps += [FunctionCall(name="read_state", args={"key": f"k{n}"}), f"answer {n}"]
    model = ScriptedModel(steps)
    runner = Runner(LlmAgent("keeper", model, tools=[read_state]), app_name=APP)
    session = await runner.create_session(user_id="ann")
    for n in range(4):
        await collect(runner.run(user_id="ann", session_id=session.id, message=f"message {n}"))
        events = (await runner.get_session(user_id="ann", session_id=session.id)).events
        assert model.requests[-1].contents == build_contents(events[:-1], "keeper", None)
    assert [c.text for c in model.requests[-1].contents if c.role == "user"] == [
        f"message {n}" for n in range(4)
    ]


async def test_a_session_deleted_and_made_again_under_the_same_id_starts_a_new_history() -> None:
    model = ScriptedModel(["first answer", "second answer"])
    runner = Runner(LlmAgent("keeper", model), app_name=APP)
    await runner.create_session(user_id="ann", session_id="s")
    await collect(runner.run(user_id="ann", session_id="s", message="before"))
    await runner.session_service.delete_session(app_name=APP, user_id="ann", session_id="s")
    await runner.create_session(user_id="ann", session_id="s")
    await collect(runner.run(user_id="ann", session_id="s", message="after"))
    assert [c.text for c in model.requests[-1].contents] == ["after"]


def test_the_history_cache_keeps_the_most_recently_used_and_only_histories_that_go_on() -> None:
    cache = HistoryCache(size=2)
    first = Event(author="user", invocation_id="i", content=Content.user("hi"))
    events = [first]
    histories = {}
    for key in ("a", "b", "c"):
        history = History("keeper", None)
        history.contents(events)
        histories[key] = history
        cache.keep((key,), history)
    assert cache.take(("a",), events) is None  # dropped: the least recently used
    assert cache.take(("b",), events) is histories["b"]
    assert cache.take(("b",), events) is None  # taken out: a second run gets its own
    copied = [Event(author="user", invocation_id="i", content=Content.user("hi"))]
    assert cache.take(("c",), copied) is None  # not the events it saw
    assert histories["c"].continues([first, copied[0]])


# --- state through runs -------------------------------------------------------------------


async def write_scoped_state(ctx: ToolContext) -> str:
    """Write one key of every scope."""
    ctx.state["app:x"] = "app value"
    ctx.state["user:y"] = "user value"
    ctx.state["temp:z"] = "temp value"
    ctx.state["k"] = "session value"
    return "written"


async def read_state(key: str, ctx: ToolContext) -> dict[str, Any]:
    """Read one state key.

    Args:
        key: The key.
    """
    return {"present": key in ctx.state, "value": ctx.state.get(key)}


def scoped_runner(service: InMemorySessionService, *steps: Any) -> tuple[Runner, ScriptedModel]:
    model = ScriptedModel(steps)
    agent = LlmAgent("keeper", model, tools=[write_scoped_state, read_state])
    return Runner(agent, app_name=APP, session_service=service), model


async def test_app_and_user_keys_reach_new_sessions_of_the_same_user_but_session_keys_do_not() -> (
    None
):
    service = InMemorySessionService()
    runner, _ = scoped_runner(service, FunctionCall(name="write_scoped_state"), "done")
    first = await runner.create_session(user_id="ann")
    await collect(runner.run(user_id="ann", session_id=first.id, message="write"))

    stored = await runner.get_session(user_id="ann", session_id=first.id)
    assert stored.state == {"app:x": "app value", "user:y": "user value", "k": "session value"}

    later = await runner.create_session(user_id="ann")
    assert later.state == {"app:x": "app value", "user:y": "user value"}
    assert "k" not in later.state


async def test_another_users_session_sees_app_keys_only() -> None:
    service = InMemorySessionService()
    runner, _ = scoped_runner(service, FunctionCall(name="write_scoped_state"), "done")
    first = await runner.create_session(user_id="ann")
    await collect(runner.run(user_id="ann", session_id=first.id, message="write"))

    theirs = await runner.create_session(user_id="bob")
    assert theirs.state == {"app:x": "app value"}

    # Another app on the same service does not see them, not even for the same user.
    elsewhere = Runner(
        LlmAgent("keeper", ScriptedModel()), app_name="other", session_service=service
    )
    assert (await elsewhere.create_session(user_id="ann")).state == {}


async def test_app_and_user_keys_are_read_by_tools_in_other_sessions() -> None:
    service = InMemorySessionService()
    runner, model = scoped_runner(
        service,
        FunctionCall(name="write_scoped_state"),
        "done",
        [
            FunctionCall(name="read_state", args={"key": "app:x"}),
            FunctionCall(name="read_state", args={"key": "user:y"}),
            FunctionCall(name="read_state", args={"key": "k"}),
        ],
        "read",
    )
    first = await runner.create_session(user_id="ann")
    await collect(runner.run(user_id="ann", session_id=first.id, message="write"))
    bobs = await runner.create_session(user_id="bob")
    events = await collect(runner.run(user_id="bob", session_id=bobs.id, message="read"))

    assert responses(events, "read_state") == [
        {"present": True, "value": "app value"},
        {"present": False, "value": None},
        {"present": False, "value": None},
    ]
    assert model.remaining == 0


async def test_temp_keys_are_seen_by_later_tools_of_the_run_but_never_stored() -> None:
    service = InMemorySessionService()
    runner, _ = scoped_runner(
        service,
        FunctionCall(name="write_scoped_state"),
        FunctionCall(name="read_state", args={"key": "temp:z"}),
        "done",
        FunctionCall(name="read_state", args={"key": "temp:z"}),
        "next run",
    )
    session = await runner.create_session(user_id="ann")
    events = await collect(runner.run(user_id="ann", session_id=session.id, message="go"))

    # The second call, in a later model turn of the same run, reads the temp key.
    assert responses(events, "read_state") == [{"present": True, "value": "temp value"}]

    stored = await runner.get_session(user_id="ann", session_id=session.id)
    assert "temp:z" not in stored.state
    written = [e for e in stored.events if responses([e], "write_scoped_state")]
    assert len(written) == 1
    assert written[0].actions.state_delta == {
        "app:x": "app value",
        "user:y": "user value",
        "k": "session value",
    }
    assert all(not key.startswith("temp:") for e in stored.events for key in e.actions.state_delta)

    # A later run of the same session starts without it.
    events = await collect(runner.run(user_id="ann", session_id=session.id, message="again"))
    assert responses(events, "read_state") == [{"present": False, "value": None}]


async def test_state_given_to_create_session_is_visible_to_tools() -> None:
    service = InMemorySessionService()
    runner, _ = scoped_runner(
        service,
        [
            FunctionCall(name="read_state", args={"key": "plan"}),
            FunctionCall(name="read_state", args={"key": "user:tier"}),
            FunctionCall(name="read_state", args={"key": "app:region"}),
        ],
        "done",
    )
    session = await runner.create_session(
        user_id="ann", state={"plan": ["a", "b"], "user:tier": "gold", "app:region": "eu"}
    )
    events = await collect(runner.run(user_id="ann", session_id=session.id, message="read"))

    assert responses(events, "read_state") == [
        {"present": True, "value": ["a", "b"]},
        {"present": True, "value": "gold"},
        {"present": True, "value": "eu"},
    ]
    # Prefixed keys given at creation are scoped like written ones.
    assert (await runner.create_session(user_id="ann")).state == {
        "user:tier": "gold",
        "app:region": "eu",
    }


# --- events -------------------------------------------------------------------------------


async def test_events_are_recorded_in_order_with_their_authors() -> None:
    model = ScriptedModel(
        [FunctionCall(name="read_state", args={"key": "k"}), "the answer", "second answer"]
    )
    runner = Runner(LlmAgent("keeper", model, tools=[read_state]), app_name=APP)
    session = await runner.create_session(user_id="ann")
    yielded = await collect(runner.run(user_id="ann", session_id=session.id, message="first"))
    yielded += await collect(runner.run(user_id="ann", session_id=session.id, message="second"))

    stored = (await runner.get_session(user_id="ann", session_id=session.id)).events
    assert [e.author for e in stored] == ["user", "keeper", "keeper", "keeper", "user", "keeper"]
    assert [e.text for e in stored if e.author == "user"] == ["first", "second"]
    assert stored[1].function_calls[0].name == "read_state"
    assert responses([stored[2]], "read_state") == [{"present": False, "value": None}]
    assert stored[3].text == "the answer"
    assert stored[5].text == "second answer"
    # Everything but the user's messages was also yielded, in the same order.
    assert [e.id for e in stored if e.author != "user"] == [e.id for e in yielded]
    timestamps = [e.timestamp for e in stored]
    assert timestamps == sorted(timestamps)
    assert len({e.invocation_id for e in stored[:4]}) == 1
    assert stored[4].invocation_id != stored[0].invocation_id


async def test_streamed_partial_events_are_yielded_but_not_recorded() -> None:
    model = ScriptedModel(["one two three"])
    runner = Runner(LlmAgent("talker", model), app_name=APP)
    session = await runner.create_session(user_id="ann")
    events = await collect(
        runner.run(
            user_id="ann",
            session_id=session.id,
            message="talk",
            run_config=RunConfig(streaming=True),
        )
    )

    partial = [e for e in events if e.partial]
    assert [e.text for e in partial] == ["one ", "two ", "three"]
    assert all(not e.is_final_response() for e in partial)
    assert events[-1].partial is False
    assert events[-1].text == "one two three"

    stored = (await runner.get_session(user_id="ann", session_id=session.id)).events
    assert [e.partial for e in stored] == [False, False]
    assert stored[0].author == "user"
    assert stored[1].id == events[-1].id
    assert stored[1].text == "one two three"


async def test_without_streaming_no_partial_events_are_yielded() -> None:
    runner = Runner(LlmAgent("talker", ScriptedModel(["one two three"])), app_name=APP)
    session = await runner.create_session(user_id="ann")
    events = await collect(runner.run(user_id="ann", session_id=session.id, message="talk"))
    assert [(e.partial, e.text) for e in events] == [(False, "one two three")]
