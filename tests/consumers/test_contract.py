"""The contract every consumer of tools owes (`contract.CONSUMERS`: the MCP server in both
protocol eras, the command line, the LangChain, openai-agents, pydantic-ai and smolagents
adapters, code mode), each driven through its own entry: a call's pauses are answered
the one way (`toolsets._settle.settle`: a confirmation asked, a credential looked up, at
most `MAX_PAUSES` answers), and what a call wrote outlives it without its ``temp:`` keys.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import anyio
import pytest

from tests.consumers.contract import (
    CONSUMERS,
    NO_CREDENTIAL,
    RUNS,
    TIMEOUT,
    Consumer,
)
from toolsets._invoke import DECLINED
from toolsets._settle import MAX_PAUSES, gave_up_result

pytestmark = pytest.mark.anyio


def consumers(which: Callable[[type[Consumer]], bool] = lambda kind: True) -> Any:
    """Run the test for each consumer ``which`` is true of, on each anyio backend its
    entry runs on (the consumer is the test's ``kind``)."""
    cases = [
        pytest.param(kind, backend, id=f"{backend}-{kind.name}")
        for kind in CONSUMERS
        if which(kind)
        for backend in kind.backends
    ]
    return pytest.mark.parametrize(("kind", "anyio_backend"), cases)


@pytest.fixture(autouse=True)
def no_runs_yet() -> Iterator[None]:
    RUNS.clear()
    yield
    RUNS.clear()


@consumers(lambda kind: kind.can_ask)
async def test_a_call_the_user_confirms_runs_once_and_its_result_comes_back(
    kind: type[Consumer],
) -> None:
    with anyio.fail_after(TIMEOUT):
        async with kind(answer=True) as consumer:
            reply = await consumer.call("wipe", {"disk": "sda"})
    assert (reply.error, reply.value) == (False, "sda wiped"), reply.said
    assert RUNS == ["wipe"]


@consumers(lambda kind: kind.can_ask)
async def test_a_call_the_user_declines_never_runs_and_its_user_is_told(
    kind: type[Consumer],
) -> None:
    with anyio.fail_after(TIMEOUT):
        async with kind(answer=False) as consumer:
            reply = await consumer.call("wipe", {"disk": "sda"})
    assert reply.error
    assert RUNS == []
    if kind.declined is None:
        assert DECLINED in reply.said
    else:  # the framework refuses a call its user declined, in its own words
        assert kind.declined in reply.said


@consumers(lambda kind: not kind.asks_itself)
async def test_a_call_no_one_can_confirm_never_runs_and_says_why(kind: type[Consumer]) -> None:
    with anyio.fail_after(TIMEOUT):
        async with kind(answer=None) as consumer:
            reply = await consumer.call("wipe", {"disk": "sda"})
    assert reply.error
    assert RUNS == []
    assert kind.unasked in reply.said


@consumers()
async def test_the_credential_the_consumer_holds_lets_the_call_run(kind: type[Consumer]) -> None:
    with anyio.fail_after(TIMEOUT):
        async with kind(key="k3y") as consumer:
            reply = await consumer.call("read_private")
    assert (reply.error, reply.value) == (False, "read with a key of 3 characters"), reply.said
    assert RUNS == ["read_private"]


@consumers()
async def test_a_missing_credential_is_named_and_the_call_never_runs(
    kind: type[Consumer],
) -> None:
    with anyio.fail_after(TIMEOUT):
        async with kind(key=None) as consumer:
            reply = await consumer.call("read_private")
    assert reply.error
    assert RUNS == []
    if kind.no_credential is None:
        assert str(NO_CREDENTIAL["error"]) in reply.said
    else:  # said its own way: how to give it (the command line), what to do instead
        assert kind.no_credential in reply.said


@consumers(lambda kind: kind.can_ask)
async def test_a_call_needing_a_confirmation_and_a_credential_gets_both_and_runs_once(
    kind: type[Consumer],
) -> None:
    # Each answer goes with every later round: the credential's round keeps the yes.
    with anyio.fail_after(TIMEOUT):
        async with kind(answer=True, key="k3y") as consumer:
            reply = await consumer.call("wipe_private")
    assert (reply.error, reply.value) == (False, "private notes wiped"), reply.said
    assert RUNS == ["wipe_private"]


@consumers()
async def test_a_tool_that_asks_whatever_it_is_given_is_given_up_after_max_pauses(
    kind: type[Consumer],
) -> None:
    with anyio.fail_after(TIMEOUT):
        async with kind(key="k3y") as consumer:
            reply = await consumer.call("always_asking")
    assert reply.error
    assert str(gave_up_result()["error"]) in reply.said
    assert RUNS == ["always_asking"] * (MAX_PAUSES + 1)


@consumers()
async def test_what_a_call_wrote_is_kept_for_later_calls_without_its_temp_keys(
    kind: type[Consumer],
) -> None:
    with anyio.fail_after(TIMEOUT):
        async with kind() as consumer:
            await consumer.call("remember")
            reply = await consumer.call("recall")
    kept = "kept" if kind.keeps_state else None
    assert (reply.error, reply.value) == (False, {"note": kept, "scratch": None}), reply.said
    assert RUNS == ["remember", "recall"]
