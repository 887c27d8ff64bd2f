"""Events and the content values they carry, built by the loop on every call: they keep
the behaviour of frozen, keyword-only dataclasses (``fast_init`` only changes how
their fields are stored)."""

from __future__ import annotations

import dataclasses
import inspect
import pickle
from dataclasses import dataclass, field

import pytest

from toolsets import Content, FunctionCall, FunctionResponse, Part
from toolsets._content import fast_init
from toolsets._context import EventActions
from toolsets.agent import Event


def test_an_event_gets_fresh_defaults_and_keeps_what_it_is_given() -> None:
    one = Event(author="a", invocation_id="i")
    two = Event(author="a", invocation_id="i")
    assert one.actions == EventActions()
    assert one.actions is not two.actions
    assert one.resume_state == {}
    assert one.resume_state is not two.resume_state
    assert one.id != two.id
    assert one.timestamp <= two.timestamp
    assert (one.content, one.partial, one.pending, one.branch) == (None, False, (), None)

    actions = EventActions(escalate=True)
    given = Event(author="a", invocation_id="i", actions=actions, id="e1", timestamp=1.0)
    assert given.actions is actions
    assert (given.id, given.timestamp) == ("e1", 1.0)


def test_values_stay_frozen_comparable_replaceable_and_picklable() -> None:
    call = FunctionCall(name="f", args={"x": 1}, id="c1")
    with pytest.raises(dataclasses.FrozenInstanceError):
        call.name = "g"  # type: ignore[misc]
    assert call == FunctionCall(name="f", args={"x": 1}, id="c1")
    assert dataclasses.replace(call, id="c2").id == "c2"
    event = Event(author="a", invocation_id="i", content=Content.user("hi"))
    assert pickle.loads(pickle.dumps(event)) == event
    assert dataclasses.replace(event, branch="b").content == event.content


def test_the_constructors_check_their_arguments_like_dataclasses_do() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        Part()  # __post_init__ still runs
    with pytest.raises(TypeError):
        FunctionResponse(name="f")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Content("user")  # type: ignore[misc]
    with pytest.raises(TypeError):
        Event(author="a", invocation_id="i", unknown=1)  # type: ignore[call-arg]


def test_the_signature_is_the_dataclass_one() -> None:
    @dataclass(frozen=True, kw_only=True)
    class Plain:
        name: str
        items: list[int] = field(default_factory=list)
        flag: bool = False

    @fast_init
    @dataclass(frozen=True, kw_only=True)
    class Fast:
        name: str
        items: list[int] = field(default_factory=list)
        flag: bool = False

    assert str(inspect.signature(Fast)) == str(inspect.signature(Plain))
    assert vars(Fast(name="n", flag=True)) == vars(Plain(name="n", flag=True))
    assert Fast(name="n").items is not Fast(name="n").items


def test_fast_init_refuses_classes_it_cannot_fill() -> None:
    @dataclass(frozen=True)
    class Positional:
        name: str

    @dataclass(frozen=True, kw_only=True, slots=True)
    class Slotted:
        name: str

    @dataclass(frozen=True, kw_only=True)
    class Reserved:
        fast_values: str

    for cls in (Positional, Slotted):
        with pytest.raises(TypeError, match="keyword-only"):
            fast_init(cls)
    with pytest.raises(TypeError, match="reserves"):
        fast_init(Reserved)
