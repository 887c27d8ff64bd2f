"""Shared helpers for the agent tests: run a message, collect events, read responses."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import anyio

from toolsets import FunctionCall, FunctionResponse, JsonValue, Tool, Toolset
from toolsets.agent import ConfirmationRequest, Event, LlmAgent, Runner
from toolsets.models import ScriptedModel

RUN_TIMEOUT = 30.0
"""Seconds a run may take in a test before it counts as hung (real servers included)."""


async def collect(events: AsyncIterator[Event]) -> list[Event]:
    """Every event of a run (up to a pause), within `RUN_TIMEOUT`."""
    with anyio.fail_after(RUN_TIMEOUT):
        return [event async for event in events]


async def listen_until(runner: Runner, stop: Callable[[Event], bool]) -> str:
    """A new session, one message, its run closed at the first event ``stop`` accepts
    (within `RUN_TIMEOUT`); returns the session id."""
    session = await runner.create_session(user_id="u")
    with anyio.fail_after(RUN_TIMEOUT):
        async with contextlib.aclosing(
            runner.run(user_id="u", session_id=session.id, message="go")
        ) as events:
            async for event in events:
                if stop(event):
                    break
    return session.id


def agent_with(steps: list[Any], tools: list[Any], **options: Any) -> tuple[Runner, ScriptedModel]:
    """A runner for one agent whose scripted model takes ``steps``, and that model."""
    model = ScriptedModel(steps)
    return Runner(LlmAgent("assistant", model, tools=tools, **options)), model


async def start(runner: Runner, message: str, user_id: str = "u") -> tuple[str, list[Event]]:
    """A new session, one message; returns the session id and the events."""
    session = await runner.create_session(user_id=user_id)
    events = await collect(runner.run(user_id=user_id, session_id=session.id, message=message))
    return session.id, events


def responses(events: Sequence[Event]) -> list[FunctionResponse]:
    return [r for e in events for r in e.function_responses]


def response_of(events: Sequence[Event], name: str) -> JsonValue:
    """The (last) response of the tool ``name``."""
    found = [r.response for r in responses(events) if r.name == name]
    assert found, f"no response from {name}"
    return found[-1]


def call(tool_name: str, /, **args: Any) -> FunctionCall:
    return FunctionCall(name=tool_name, args=args)


def asked_to_confirm(events: Sequence[Event]) -> ConfirmationRequest:
    """The one confirmation the run paused on."""
    (request,) = events[-1].pending
    assert isinstance(request, ConfirmationRequest)
    return request


async def approve(
    runner: Runner, session_id: str, request: ConfirmationRequest, user_id: str = "u"
) -> list[Event]:
    """Resume the run, approving ``request``."""
    return await collect(
        runner.resume(
            user_id=user_id, session_id=session_id, confirmations={request.function_call_id: True}
        )
    )


async def one_call(
    tools: Tool | Toolset, request: FunctionCall, answer: str
) -> tuple[Runner, str, list[Event]]:
    """An agent whose model makes ``request``, then answers ``answer``, run once:
    the runner, the session id and the events (up to a pause, if any)."""
    runner = Runner(LlmAgent("assistant", ScriptedModel([request, answer]), tools=[tools]))
    session_id, events = await start(runner, "go")
    return runner, session_id, events
