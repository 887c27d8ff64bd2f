"""`ToolStream`: what a streaming tool's ``run`` returns, results that arrive over time."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Generator
from typing import Any

from toolsets._errors import ToolCallError
from toolsets._json import JsonValue

__all__ = ["ToolStream"]


def _as_is(value: Any) -> JsonValue:
    result: JsonValue = value
    return result


class ToolStream:
    """The results of one call of a streaming tool, as the tool yields them; the last is
    the call's result.

    A streaming tool's ``run`` returns one, made from an async iterator (usually an
    ``async def`` that yields): ``ToolStream(self._results(args, ctx))``. The call path
    (`toolsets._invoke`) pulls it, each step under what is left of the call's deadline,
    and closes it (``aclose``) when the call times out or is cancelled; the agent loop
    shows each result as a partial event while the call runs. Awaiting it (as a caller
    that knows nothing of streams would) pulls it to its end and gives the last result.

    Args:
        results: The tool's results, in order.
        convert: Makes each result a JSON value (default: taken as it is).
        tool_name: The tool's name, for the error when it yields nothing.
    """

    def __init__(
        self,
        results: AsyncIterator[Any],
        *,
        convert: Callable[[Any], JsonValue] = _as_is,
        tool_name: str = "tool",
    ) -> None:
        self._results = results
        self._convert = convert
        self.tool_name = tool_name
        """The streaming tool's name."""
        self.count = 0
        """How many results it has yielded so far."""

    def __aiter__(self) -> ToolStream:
        return self

    async def __anext__(self) -> JsonValue:
        value = self._convert(await self._results.__anext__())
        self.count += 1
        return value

    async def aclose(self) -> None:
        """Stop the tool's iterator (its ``finally`` blocks run now)."""
        close = getattr(self._results, "aclose", None)
        if close is not None:
            await close()

    def no_result(self) -> ToolCallError:
        """The error of a stream that ended without yielding anything."""
        return ToolCallError(
            f"the streaming tool {self.tool_name!r} yielded no result", tool_name=self.tool_name
        )

    async def _last(self) -> JsonValue:
        last: JsonValue = None
        try:
            async for last in self:  # noqa: B007  # the last one is the result
                pass
        finally:
            await self.aclose()
        if self.count == 0:
            raise self.no_result()
        return last

    def __await__(self) -> Generator[Any, Any, JsonValue]:
        return self._last().__await__()

    def __repr__(self) -> str:
        return f"ToolStream(tool_name={self.tool_name!r}, count={self.count})"
