"""A tool's channel to its client, with no client: ``ctx.log`` goes to the `logging`
module, and asking is an error the model sees (the served side is in
tests/mcp/server/test_channel.py)."""

from __future__ import annotations

import logging
import typing

import pytest

from toolsets import (
    Elicit,
    Elicitation,
    ListRoots,
    LogLevel,
    MissingClientCapabilityError,
    Sampled,
    ToolContext,
    is_error_result,
    tool,
)
from toolsets._client_channel import LOG_LEVELS, LOGGING_LEVELS
from toolsets._invoke import Done, invoke

pytestmark = pytest.mark.anyio


@tool
async def noisy(ctx: ToolContext) -> str:
    """Logs, then answers."""
    await ctx.log("debug", "too quiet to hear")
    await ctx.log("warning", "disk almost full", free_mb=12)
    return "ok"


@tool
async def curious(ctx: ToolContext) -> str:
    """Asks the user's name."""
    answer = await ctx.elicit("Your name?", {"type": "object", "properties": {}})
    return str(answer.content)


async def test_a_tool_logs_to_its_own_logger_when_no_client_listens(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO, logger="toolsets.tool"):
        outcome = await invoke(noisy, {}, ToolContext(), default_timeout=5)
    assert isinstance(outcome, Done)
    assert outcome.result == "ok"
    (record,) = caplog.records
    assert record.name == "toolsets.tool.noisy"
    assert record.levelno == logging.WARNING
    assert record.getMessage() == "disk almost full"
    assert record.data == {"free_mb": 12}


async def test_asking_with_no_client_is_an_error_result_for_the_model() -> None:
    outcome = await invoke(curious, {}, ToolContext(), default_timeout=5)
    assert isinstance(outcome, Done)
    assert is_error_result(outcome.result)
    assert "MissingClientCapabilityError" in str(outcome.result)


async def test_asking_with_no_client_raises_naming_what_was_asked() -> None:
    ctx = ToolContext()
    with pytest.raises(MissingClientCapabilityError) as raised:
        await ctx.sample("Hi")
    assert raised.value.capability == "sampling"
    assert raised.value.client is False
    with pytest.raises(MissingClientCapabilityError) as roots:
        await ctx.list_roots()
    assert roots.value.capability == "roots"
    assert not ctx.client_supports("elicitation")


async def test_asking_nothing_is_a_mistake() -> None:
    with pytest.raises(ValueError, match="at least one"):
        await ToolContext().ask()


def test_an_answer_says_whether_the_user_accepted_and_what_the_model_said() -> None:
    assert Elicitation("accept", {"name": "Alice"}).accepted
    assert not Elicitation("decline").accepted
    assert Elicitation("cancel").content == {}
    assert Sampled("Paris", model="m").stop_reason is None
    assert Elicit("Sure?").schema == {}
    assert Elicit("Sure?").capability == "elicitation"


async def test_with_no_client_there_is_no_stream_to_close() -> None:
    assert await ToolContext().close_stream() is False


async def test_a_log_detail_named_message_is_refused_rather_than_hiding_the_message() -> None:
    with pytest.raises(ValueError, match="'message'"):
        await ToolContext().log("info", "the message", message="a detail")


async def test_a_question_under_a_key_reserved_for_toolsets_is_refused_even_with_no_client() -> (
    None
):
    with pytest.raises(ValueError, match="reserved"):
        await ToolContext().elicit("Sure?", key="toolsets/confirm")
    with pytest.raises(ValueError, match="reserved"):
        await ToolContext().ask(**{"toolsets/anything": ListRoots()})


def test_the_log_levels_are_written_once_least_severe_first() -> None:
    assert typing.get_args(LogLevel) == LOG_LEVELS
    assert list(LOGGING_LEVELS) == list(LOG_LEVELS)
    assert [LOGGING_LEVELS[level] for level in ("debug", "notice", "emergency")] == [
        logging.DEBUG,
        logging.INFO,
        logging.CRITICAL,
    ]
