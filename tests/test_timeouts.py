"""One rule for a timeout's value (`toolsets._concurrency.check_timeout`): a finite number
of seconds above zero, wherever a timeout is taken."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest

from toolsets import tool
from toolsets._concurrency import check_timeout
from toolsets.mcp import McpToolset, StreamableHttp
from toolsets.openapi import OpenApiToolset

SPEC: dict[str, Any] = {"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": {}}
WRONG: list[Any] = [0, -1, -0.5, math.inf, -math.inf, math.nan, None, "30", True]


def add(a: int, b: int) -> int:
    return a + b


TAKERS: dict[str, Callable[[Any], object]] = {
    "check_timeout": lambda value: check_timeout(value, "timeout"),
    "OpenApiToolset(timeout=)": lambda value: OpenApiToolset(SPEC, timeout=value),
    "McpToolset(timeout=)": lambda value: McpToolset(
        StreamableHttp(url="http://127.0.0.1:9/mcp"), timeout=value
    ),
    "McpToolset(connect_timeout=)": lambda value: McpToolset(
        StreamableHttp(url="http://127.0.0.1:9/mcp"), connect_timeout=value
    ),
    "tool(timeout=)": lambda value: tool(timeout=value)(add),
}
REFUSED = [
    pytest.param(take, value, id=f"{name}-{value!r}")
    for name, take in TAKERS.items()
    for value in WRONG
    if not (value is None and name == "tool(timeout=)")  # a tool's default: the agent's
]


@pytest.mark.parametrize(("take", "value"), REFUSED)
def test_a_timeout_that_is_not_a_finite_positive_number_is_refused(
    take: Callable[[Any], object], value: Any
) -> None:
    with pytest.raises(ValueError, match="timeout") as caught:
        take(value)
    assert repr(value) in str(caught.value)


@pytest.mark.parametrize("take", TAKERS.values(), ids=TAKERS.keys())
@pytest.mark.parametrize("value", [0.001, 1, 30.0, 86_400])
def test_a_finite_positive_timeout_is_taken(take: Callable[[Any], object], value: Any) -> None:
    take(value)


def test_the_checked_value_is_the_seconds_as_a_float() -> None:
    assert check_timeout(5, "timeout") == 5.0
    assert isinstance(check_timeout(5, "timeout"), float)


def test_a_tool_without_a_timeout_leaves_it_to_the_agent() -> None:
    assert tool(timeout=None)(add).timeout is None


@pytest.mark.anyio
async def test_the_openapi_toolsets_default_client_gets_the_timeout() -> None:
    async with OpenApiToolset(SPEC, timeout=2.5) as toolset:
        assert toolset.client.timeout.read == 2.5
