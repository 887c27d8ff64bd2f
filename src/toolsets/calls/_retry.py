"""`Retry`: a call run again when the API pushed back, if running it again is safe.

What is tried again:

- an error result with an HTTP status in ``statuses`` (429 and 503 by default), after
  the wait its ``retry_after`` asks (an OpenAPI tool's error result carries the
  response's ``Retry-After``), or else an exponential backoff with full jitter;
- a call that failed before any byte reached the API (the connection refused, or not
  made in time: httpx2's ``ConnectError``, ``ConnectTimeout`` or ``PoolTimeout`` behind
  the error), whatever the call: nothing was sent. An MCP tool's call is one when its
  session could not be opened so, or when its own request met such an error.

An MCP server over HTTP (or a gateway in front of it) answering a tool's call 429 or
503 is the same pushback: the tool's error result carries the ``status`` and the
``retry_after`` the server asked for.

Only a call that is safe to repeat is run again after the API answered: its tool is
read-only or idempotent (the annotations: an OpenAPI operation's GET, HEAD, OPTIONS, PUT
and DELETE; an MCP tool marked so), or its operation declares an ``Idempotency-Key``
header, which is then set once for the logical call (unless the model gave one) and sent
the same on every try. Anything else, a POST above all, is never sent twice.

Every wait fits in the call's deadline: a wait that would not (a ``Retry-After`` beyond
it, or beyond ``max_retry_after``) is not waited, and the last answer is the call's. The
tries are recorded in the call (`ToolCall.tries`), counted in the error result the model
is given (``tries``), logged, and noted on the call's ``execute_tool`` span while
telemetry is on (an event for each retry, the count as ``toolsets.tool.tries``).
"""

from __future__ import annotations

import logging
import random
import uuid
from collections.abc import Collection
from dataclasses import dataclass

import anyio

from toolsets import _telemetry
from toolsets._forwarding import unwrapped
from toolsets._http import NOT_SENT
from toolsets._json import JsonValue
from toolsets._results import is_error_result
from toolsets._tool import Tool
from toolsets.calls._wrapping import CallNext, ToolCall, Try

__all__ = ["DEFAULT_RETRY_STATUSES", "Retry"]

logger = logging.getLogger("toolsets.calls")

DEFAULT_RETRY_STATUSES = frozenset({429, 503})
"""The statuses an API answers when a later try may succeed: too many requests, and
unavailable for a while."""


@dataclass(frozen=True, kw_only=True)
class Retry:
    """A `CallWrapper` that runs a call again, up to ``tries`` runs in all, when the API
    pushed back and running it again is safe (see the module).

    Args:
        tries: Runs of the tool at most, the first included (at least 1).
        backoff: The first backoff's ceiling, in seconds; it doubles with each retry,
            up to ``max_backoff``, and the wait is drawn between zero and it (full
            jitter), unless the API said how long to wait.
        max_backoff: The backoff's ceiling, in seconds.
        max_retry_after: The longest ``Retry-After`` waited, in seconds; an API asking
            for longer gets no retry (its answer is the call's, saying how long).
        statuses: The error results' HTTP statuses tried again.
    """

    tries: int = 3
    backoff: float = 0.5
    max_backoff: float = 30.0
    max_retry_after: float = 60.0
    statuses: Collection[int] = DEFAULT_RETRY_STATUSES

    def __post_init__(self) -> None:
        if self.tries < 1:
            raise ValueError(f"tries must be at least 1, not {self.tries}")
        for name in ("backoff", "max_backoff", "max_retry_after"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"{name} must be a number of seconds, at least 0")

    async def __call__(self, call: ToolCall, call_next: CallNext) -> JsonValue:
        # Decided before the first try: an Idempotency-Key is on every try or none.
        safe = _repeatable(call)
        waited = 0.0
        number = 1
        result: JsonValue = None
        while True:
            failure: Exception | None = None
            try:
                result = await call_next(call)
            except Exception as error:
                call.tries.append(Try(number=number, waited=waited, error=_kind(error)))
                if number >= self.tries or not _never_sent(error):
                    _noted(call, number)
                    raise
                failure = error
                wait = self._backoff(number)
                reason = f"not sent ({_kind(error)})"
            else:
                status = _status(result)
                call.tries.append(Try(number=number, waited=waited, status=status))
                if status not in self.statuses or number >= self.tries:
                    return _counted(result, call, number)
                if not safe:
                    return _counted(result, call, number)
                asked = _retry_after(result)
                if asked is not None and asked > self.max_retry_after:
                    return _counted(result, call, number)
                wait = asked if asked is not None else self._backoff(number)
                reason = f"HTTP {status}"
            if wait > call.time_left():
                logger.info(
                    "%s: %s; no retry: the call's time is up before the wait is over",
                    call.tool.name,
                    reason,
                )
                if failure is not None:
                    _noted(call, number)
                    raise failure
                return _counted(result, call, number)
            logger.info(
                "%s: %s; try %d of %d in %.2f s", call.tool.name, reason, number + 1,
                self.tries, wait,
            )  # fmt: skip
            _retrying(number + 1, wait, reason)
            await anyio.sleep(wait)
            waited, number = wait, number + 1

    def _backoff(self, number: int) -> float:
        """The wait before run ``number + 1``: full jitter under a doubling ceiling."""
        ceiling = min(self.max_backoff, self.backoff * 2 ** (number - 1))
        return random.uniform(0.0, ceiling)


def _kind(error: BaseException) -> str:
    return type(error).__qualname__


def _never_sent(error: BaseException) -> bool:
    """Whether ``error`` (or what caused it) is httpx2's, raised before anything was
    sent; a group of errors (an MCP session that could not be opened) when each is."""
    seen: set[int] = set()
    found: BaseException | None = error
    while found is not None and id(found) not in seen:
        if isinstance(found, NOT_SENT):
            return True
        if isinstance(found, BaseExceptionGroup):
            return all(_never_sent(each) for each in found.exceptions)
        seen.add(id(found))
        found = found.__cause__ or found.__context__
    return False


def _status(result: JsonValue) -> int | None:
    """The HTTP status of an error result, if it says one."""
    if not is_error_result(result):
        return None
    assert isinstance(result, dict)
    status = result.get("status")
    return status if isinstance(status, int) and not isinstance(status, bool) else None


def _retry_after(result: JsonValue) -> float | None:
    """The seconds an error result says the API asked to wait."""
    assert isinstance(result, dict)
    value = result.get("retry_after")
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
        return float(value)
    return None


def _repeatable(call: ToolCall) -> bool:
    """Whether the call may be sent again: its tool is read-only or idempotent, or its
    operation takes an ``Idempotency-Key`` (set now for the whole call when the model
    gave none; it is sent the same on every try)."""
    declaration = call.tool.call_declaration()
    hints = declaration.annotations if declaration is not None else None
    if hints is not None and (hints.read_only or hints.idempotent):
        return True
    key = _idempotency_key_argument(call.tool)
    if key is None:
        return False
    if not call.args.get(key):
        call.args[key] = uuid.uuid4().hex
    return True


def _idempotency_key_argument(tool: Tool) -> str | None:
    """The argument carrying the ``Idempotency-Key`` header of the operation under
    ``tool`` (and its wrappers), if it declares one."""
    found = getattr(unwrapped(tool), "idempotency_key_argument", None)
    key = found() if callable(found) else None
    return key if isinstance(key, str) else None


def _counted(result: JsonValue, call: ToolCall, number: int) -> JsonValue:
    """``result``, an error one saying how many runs it took when there were more than
    one."""
    _noted(call, number)
    if number > 1 and is_error_result(result):
        assert isinstance(result, dict)
        return {**result, "tries": number}
    return result


def _noted(call: ToolCall, number: int) -> None:
    """The count of runs on the call's span (telemetry on), once there was a retry."""
    telemetry = _telemetry.current
    if telemetry is not None and number > 1:
        from opentelemetry import trace

        trace.get_current_span().set_attribute("toolsets.tool.tries", number)


def _retrying(number: int, wait: float, reason: str) -> None:
    """A retry, as an event of the call's span (telemetry on)."""
    if _telemetry.current is not None:
        from opentelemetry import trace

        trace.get_current_span().add_event(
            "retry", {"toolsets.try": number, "toolsets.wait_s": wait, "toolsets.reason": reason}
        )
