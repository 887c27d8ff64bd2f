"""Running a model's program in `pydantic-monty`'s sandbox (worker subprocesses with no
filesystem, network or environment), its tool calls answered on the event loop.

The sandbox's sync API is driven one step at a time (start, then each resume), each step
in a worker thread under the run's deadline, so nothing blocks the event loop and any
anyio backend works. A step the deadline abandons is bounded by the sandbox's own limits
and the pool's watchdog; its session is closed once it ends, off the event loop.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import os
import threading
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar, cast

import anyio
import anyio.lowlevel
import anyio.to_thread

from toolsets._concurrency import call_soon, gather
from toolsets._install import missing_extra
from toolsets._json import JsonValue
from toolsets._results import clip, error_result
from toolsets.code._limits import Limits

try:
    import pydantic_monty as monty
except ImportError as exc:  # pragma: no cover - the extra is installed for the tests
    raise missing_extra("toolsets.code", "code", exc) from exc

__all__ = ["Answer", "Limits", "Sandbox"]

T = TypeVar("T")

Answer = dict[str, Any]
"""What a tool call from the program is answered with: ``{"return_value": ...}`` or
``{"exception": ...}`` (the sandbox's `ExternalResult`)."""

_SLEEPS = frozenset({"system.async_sleep", "time.sleep", "asyncio.sleep"})
"""The sandbox's sleeps, served on the host (bounded by the run's deadline)."""
_SYNC_SLEEP = "time.sleep"
"""The sleep that blocks the program (the others are awaited, and run together)."""
_FRAMES_SHOWN = 4
"""Frames of a traceback shown at each end (a deep recursion's has a thousand)."""
_COMPUTE_SHARE = 0.9
"""The share of the time limit a program may compute for (the rest is the host's)."""
_CLOSE_WAIT = 5.0
"""Seconds a finished run waits for its session to close before leaving it to a thread."""


class _Stop(Exception):
    """The run ends at once with ``result`` (a limit was exceeded)."""

    def __init__(self, result: dict[str, JsonValue]) -> None:
        super().__init__(result.get("error"))
        self.result = result


class _Printed:
    """The program's ``print`` output, kept up to a limit (the rest counted)."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._parts: list[str] = []
        self._kept = 0
        self.dropped = 0

    def __call__(self, stream: str, text: str) -> None:
        room = self._limit - self._kept
        if room > 0:
            self._parts.append(text[:room])
            self._kept += min(len(text), room)
        self.dropped += max(0, len(text) - max(room, 0))

    def text(self) -> str:
        kept = "".join(self._parts)
        if self.dropped:
            kept += f"\n[... {self.dropped} more characters of output not shown]"
        return kept


class _Session:
    """One checked-out sandbox session, every blocking operation on it in a worker
    thread, one at a time."""

    def __init__(self, session: monty.MontySession) -> None:
        self.session = session
        """The sandbox's session (call its blocking methods through `do`)."""
        self._lock = threading.Lock()
        self.abandoned = False

    def _locked(self, call: Callable[[], T]) -> T:
        with self._lock:
            return call()

    async def do(self, call: Callable[[], T]) -> T:
        try:
            return await anyio.to_thread.run_sync(self._locked, call, abandon_on_cancel=True)
        except BaseException:
            self.abandoned = True  # the step may still be running in its thread
            raise

    def _exit(self) -> None:
        # A worker that died is replaced by the pool: there is nothing to give back.
        with self._lock, contextlib.suppress(monty.MontyError):
            self.session.__exit__(None, None, None)

    async def close(self, slot: _Slot) -> None:
        """Give the worker back to the pool, then ``slot``: at once when no step is
        running; else a thread does it once the abandoned step ends (bounded by the
        sandbox's limits), so that the next program does not wait for it on its time."""
        if not self.abandoned:
            with anyio.CancelScope(shield=True), anyio.move_on_after(_CLOSE_WAIT):
                await anyio.to_thread.run_sync(self._exit, abandon_on_cancel=True)
                slot.release()
                return
        slot.closing = True

        def exit_then_release() -> None:
            try:
                self._exit()
            finally:
                slot.release()

        threading.Thread(target=exit_then_release, name="toolsets-code-close", daemon=True).start()


class _Waiter:
    """A program waiting for a place, in its event loop."""

    __slots__ = ("given", "loop", "woken")

    def __init__(self) -> None:
        self.loop = anyio.lowlevel.current_token()
        self.woken = anyio.Event()
        self.given = False
        """A place was handed to it (under the places' lock)."""


class _Places:
    """The places among a sandbox's workers, one per program running, shared by every
    thread and event loop of the process (sync adapters run one loop per thread).

    A count under a lock, held only to count: a program that finds no place free waits
    in its own event loop, holding no thread, until one given back is handed to it
    (first come, first served, whatever loop it waits in)."""

    def __init__(self, count: int) -> None:
        self._lock = threading.Lock()
        self._free = count
        self._waiting: deque[_Waiter] = deque()

    async def take(self, seconds: float) -> bool:
        """Take a place, waiting up to ``seconds`` for one: False if none came."""
        with self._lock:
            if self._free:  # none waits while a place is free: each is handed on
                self._free -= 1
                return True
            waiter = _Waiter()
            self._waiting.append(waiter)
        try:
            with anyio.move_on_after(seconds):
                await waiter.woken.wait()
        except BaseException:  # cancelled: a place handed to it meanwhile goes on
            if self._leave(waiter):
                self.give_back()
            raise
        # Handed one as the time ran out, it has one.
        return self._leave(waiter)

    def _leave(self, waiter: _Waiter) -> bool:
        """Stop ``waiter`` waiting: whether it was handed a place."""
        with self._lock:
            if not waiter.given:
                self._waiting.remove(waiter)
            return waiter.given

    def give_back(self) -> None:
        """Give a place back (from any thread): to the program that has waited longest,
        woken in its event loop, or to the free ones."""
        while True:
            with self._lock:
                if not self._waiting:
                    self._free += 1
                    return
                waiter = self._waiting.popleft()
                waiter.given = True
            if call_soon(waiter.loop, waiter.woken.set):
                return
            # Its event loop has ended (and the program with it): to the next one.


class _Slot:
    """A program's place among the sandbox's workers, given back once."""

    def __init__(self, places: _Places) -> None:
        self._places = places
        self._held = True
        self.closing = False
        """A thread gives it back, once its worker's session is closed."""

    def release(self) -> None:
        if self._held:
            self._held = False
            self._places.give_back()


def _namespace_class(name: str) -> type:
    """The class of the object the tools are methods of (named as the program knows it,
    so that its errors read ``'tools' object has no attribute 'x'``)."""
    return type(name, (), {"__repr__": lambda self: f"<{name}: the tools>"})


class Sandbox:
    """A pool of sandbox workers, started on first use, and the runs of programs in it."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.workers = limits.max_workers or os.cpu_count() or 1
        """Programs run at once (the pool's workers); the others wait for one."""
        self._pool: monty.Monty | None = None
        self._pool_lock = threading.Lock()
        self._places = _Places(self.workers)

    def _make_pool(self) -> monty.Monty:
        with self._pool_lock:
            if self._pool is None:
                pool = monty.Monty(
                    min_processes=1,
                    max_processes=self.workers,
                    checkout_timeout=self.limits.timeout,
                    # The watchdog behind the sandbox's own time limit: a step never
                    # blocks its thread much longer than a program may run.
                    request_timeout=self.limits.timeout + 5.0,
                )
                pool.__enter__()
                self._pool = pool
            return self._pool

    async def _started(self) -> monty.Monty:
        pool = self._pool
        if pool is None:
            pool = await anyio.to_thread.run_sync(self._make_pool)
        return pool

    async def shutdown(self) -> None:
        """Stop the workers (idempotent)."""
        pool, self._pool = self._pool, None
        if pool is not None:
            await anyio.to_thread.run_sync(pool.__exit__, None, None, None)

    async def run(
        self,
        code: str,
        *,
        namespace: str,
        names: Callable[[str], Awaitable[bool]],
        call: Callable[[str, dict[str, Any]], Awaitable[Answer]],
        suggest: Callable[[str], str] = lambda name: "",
    ) -> dict[str, JsonValue]:
        """Run ``code`` with the tools as async methods of ``namespace``.

        Args:
            code: The program; the value of its last expression (or of a top-level
                ``return``) is its result.
            namespace: The name the program calls the tools through.
            names: Whether a Python name is a tool's (asked for each name used).
            call: Calls the tool of a Python name with keyword arguments.
            suggest: What to tell a program that asked for a tool there is none of
                (e.g. the names close to it).

        Returns:
            ``{"result": value}`` (with ``"printed"`` when it printed), or an error
            result naming the line, or the limit exceeded.
        """
        limits = self.limits
        # The wait for a worker is no part of the program's time, and holds no thread.
        if not await self._places.take(limits.timeout):
            return error_result(
                f"The program did not start: no sandbox worker was free within "
                f"{limits.timeout:g} s ({self.workers} programs run at once, the others "
                "wait). It did not run; send it again later.",
                limit="max_workers",
            )
        slot = _Slot(self._places)
        try:
            return await self._run(code, namespace, names, call, suggest, slot)
        finally:
            if not slot.closing:
                slot.release()

    async def _run(
        self,
        code: str,
        namespace: str,
        names: Callable[[str], Awaitable[bool]],
        call: Callable[[str, dict[str, Any]], Awaitable[Answer]],
        suggest: Callable[[str], str],
        slot: _Slot,
    ) -> dict[str, JsonValue]:
        limits = self.limits
        printed = _Printed(limits.max_output)
        missed: list[str] = []  # the names the program asked the namespace for in vain
        try:
            with anyio.fail_after(limits.timeout):
                pool = await self._started()
                session = _Session(
                    pool.checkout(
                        limits={
                            # A little under the run's deadline, so that a program
                            # that computes too long is stopped by the sandbox, which
                            # names the line it was at.
                            "max_feed_duration_secs": limits.timeout * _COMPUTE_SHARE,
                            "max_memory": limits.max_memory,
                            "max_suspensions": _suspensions(limits),
                        },
                        os_policy={"sleep": "call_host"},
                    )
                )
                try:
                    await session.do(session.session.__enter__)
                    output = await self._drive(
                        session, code, namespace, names, call, suggest, printed, missed
                    )
                finally:
                    await session.close(slot)
        except TimeoutError:
            return _with_printed(
                error_result(
                    f"The program did not finish within {limits.timeout:g} s (the time "
                    "limit, its tool calls included) and was stopped. Do less in one "
                    "program, or loop over fewer items.",
                    limit="timeout",
                ),
                printed,
            )
        except _Stop as stop:
            return _with_printed(stop.result, printed)
        except monty.MontyError as error:
            failed = _failure(error, limits)
            name = missed[-1] if missed else None
            if failed.get("exception") == "AttributeError" and f"{name!r}" in str(failed["error"]):
                # It failed on the last name it asked the namespace for in vain.
                assert name is not None
                failed["error"] = (
                    f"{failed['error']} ({namespace} has no tool {name!r}.{suggest(name)})"
                )
            return _with_printed(failed, printed)
        return _with_printed(_fit(_to_json(output), limits.max_output), printed)

    async def _drive(
        self,
        session: _Session,
        code: str,
        namespace: str,
        names: Callable[[str], Awaitable[bool]],
        call: Callable[[str, dict[str, Any]], Awaitable[Answer]],
        suggest: Callable[[str], str],
        printed: _Printed,
        missed: list[str],
    ) -> Any:
        tools = monty.ClassInstance(_namespace_class(namespace)())
        bound: dict[str, str] = {}  # a host function's name → the tool's Python name
        # What answers each call the program awaits: a tool call, or a sleep (served
        # here, so that sleeps gathered run at once as tool calls do).
        pending: dict[int, Callable[[], Awaitable[Answer]]] = {}
        calls = 0
        snapshot = await session.do(
            functools.partial(
                session.session.feed_start,
                code,
                inputs={namespace: tools},
                print_callback=printed,
            )
        )
        while not isinstance(snapshot, monty.MontyComplete):
            if isinstance(snapshot, monty.NameLookupSnapshot):
                name = snapshot.variable_name
                if snapshot.object_id == tools.id and await names(name):
                    reference = _reference(namespace, name)
                    bound[reference.__name__] = name
                    snapshot = await session.do(functools.partial(snapshot.resume, value=reference))
                else:  # the sandbox raises NameError or AttributeError
                    if snapshot.object_id == tools.id:
                        missed.append(name)
                    snapshot = await session.do(snapshot.resume)
            elif isinstance(snapshot, monty.FunctionSnapshot):
                answer: Answer
                function = str(snapshot.function_name)
                if snapshot.is_os_function:
                    if function in _SLEEPS and snapshot.args:
                        seconds = _seconds(snapshot.args[0])
                        if function == _SYNC_SLEEP:  # it blocks the program: served now
                            answer = await _sleep(seconds)
                        else:  # served with the other awaited calls, at once
                            pending[snapshot.call_id] = functools.partial(_sleep, seconds)
                            answer = {"future": ...}
                    else:
                        snapshot = await session.do(snapshot.resume_not_handled)
                        continue
                else:
                    if snapshot.object_id == tools.id:
                        tool = function if await names(function) else None
                    else:
                        tool = bound.get(function) if snapshot.object_id is None else None
                    if tool is None:
                        refused = _not_callable(snapshot, namespace, tools.id, suggest)
                        answer = {"exception": refused}
                    elif (problem := _arguments(snapshot.args, snapshot.kwargs)) is not None:
                        answer = {"exception": TypeError(f"{namespace}.{tool}(): {problem}")}
                    else:
                        calls += 1
                        if calls > self.limits.max_tool_calls:
                            raise _Stop(
                                error_result(
                                    f"The program made more than {self.limits.max_tool_calls} "
                                    "tool calls (the limit) and was stopped. Fetch in bulk "
                                    "(filters, larger pages) or work on fewer items.",
                                    limit="max_tool_calls",
                                )
                            )
                        given = dict(snapshot.args[0]) if snapshot.args else {}
                        given.update(snapshot.kwargs)
                        pending[snapshot.call_id] = functools.partial(call, tool, given)
                        answer = {"future": ...}
                snapshot = await session.do(
                    functools.partial(snapshot.resume, cast("monty.ExternalResult", answer))
                )
            else:  # a FutureSnapshot: every task waits on tool calls
                waited = [i for i in snapshot.pending_call_ids if i in pending]
                if not waited:  # nothing of ours to wait for: it would never end
                    raise _Stop(error_result("The program waits on something that never ends."))
                settled = await gather([pending.pop(i) for i in waited])
                answers = cast(
                    "dict[int, monty.ExternalSettledResult]",
                    dict(zip(waited, settled, strict=True)),
                )
                snapshot = await session.do(functools.partial(snapshot.resume, answers))
        return snapshot.output


def _reference(namespace: str, name: str) -> Callable[..., Any]:
    """What ``namespace.name`` is, read without calling it: a host function the sandbox
    calls back by its (unique) name."""

    def reference(*args: Any, **kwargs: Any) -> None:  # never run: calls are answered
        return None

    reference.__name__ = reference.__qualname__ = f"{namespace}.{name}"
    return reference


async def _sleep(seconds: float) -> Answer:
    await anyio.sleep(seconds)
    return {"return_value": None}


def _suspensions(limits: Limits) -> int:
    """How often a program may await (the sandbox's ``max_suspensions``)."""
    return max(1000, 4 * limits.max_tool_calls + 100)


def _seconds(value: object) -> float:
    return max(0.0, float(value)) if isinstance(value, int | float) else 0.0


def _arguments(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> str | None:
    """What is wrong with how the program passed a tool's arguments, or None."""
    if not args:
        return None
    if len(args) == 1 and not kwargs and isinstance(args[0], Mapping):
        return None  # one dict of arguments: names that are no identifiers fit in it
    return "pass the arguments by keyword (name=value), not by position"


def _not_callable(
    snapshot: monty.FunctionSnapshot,
    namespace: str,
    tools_id: object,
    suggest: Callable[[str], str],
) -> BaseException:
    name = str(snapshot.function_name)
    if snapshot.object_id == tools_id:
        return AttributeError(
            f"{namespace} has no tool {name!r} (the tools are listed in run_code's "
            f"description).{suggest(name)}"
        )
    if snapshot.object_id is None:
        return NameError(f"name {name!r} is not defined")
    return TypeError(f"{name}() cannot be called here")


def _to_json(value: Any, depth: int = 0) -> JsonValue:
    """The program's result as JSON: tuples and sets as lists, other values as text."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if depth > 50:
        return "..."
    if isinstance(value, Mapping):
        return {str(k): _to_json(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = sorted(value, key=repr) if isinstance(value, set | frozenset) else value
        return [_to_json(v, depth + 1) for v in items]
    if isinstance(value, monty.MontyClassProxy):
        return {str(k): _to_json(v, depth + 1) for k, v in value.attributes.items()}
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if hasattr(value, "isoformat"):
        return str(value.isoformat())
    return repr(value)


def _fit(result: JsonValue, limit: int) -> dict[str, JsonValue]:
    size = len(json.dumps(result, ensure_ascii=False, default=str))
    if size > limit:
        return error_result(
            f"The program's result is {size} characters of JSON, more than the limit of "
            f"{limit}. Return less: filter, pick the fields you need, or summarize.",
            limit="max_output",
        )
    return {"result": result}


def _with_printed(result: dict[str, JsonValue], printed: _Printed) -> dict[str, JsonValue]:
    text = printed.text()
    return {**result, "printed": text} if text else result


def _failure(error: monty.MontyError, limits: Limits) -> dict[str, JsonValue]:
    """The error result for a program that failed: the line, the exception, the trace."""
    if isinstance(error, monty.MontyCrashedError):
        if error.timed_out:
            return error_result(
                f"The program did not finish within {limits.timeout:g} s and was stopped.",
                limit="timeout",
            )
        return error_result(f"The sandbox stopped the program: {error}", limit="sandbox")
    if isinstance(error, monty.MontySyntaxError | monty.MontyRuntimeError):
        frames = error.traceback()
        kind = error.display("type-msg")
        line = frames[-1].line if frames else None
        details: dict[str, JsonValue] = {"exception": kind.split(":", 1)[0]}
        if kind.startswith("TimeoutError"):
            details["limit"] = "timeout"
        elif kind.startswith("RuntimeError: suspension limit"):
            details["limit"] = "max_suspensions"
        elif kind.startswith("MemoryError"):
            details["limit"] = "max_memory"
        if line is not None:
            details["line"] = line
            shown = frames
            if len(frames) > 2 * _FRAMES_SHOWN:
                shown = [*frames[:_FRAMES_SHOWN], *frames[-_FRAMES_SHOWN:]]
            details["traceback"] = [
                f"line {frame.line}"
                + (f", in {frame.function_name}" if frame.function_name else "")
                + (f": {frame.source_line.strip()}" if frame.source_line else "")
                for frame in shown
            ]
        where = f" at line {line}" if line is not None else ""
        if details.get("limit") == "timeout":
            message = (
                f"The program ran out of time{where}: it may compute for at most "
                f"{limits.timeout * _COMPUTE_SHARE:g} s of its {limits.timeout:g} s and was "
                "stopped (an endless loop?)."
            )
        elif details.get("limit") == "max_suspensions":
            message = (
                f"The program awaited more than {_suspensions(limits)} times{where} (the "
                "limit) and was stopped (an endless loop of awaits?)."
            )
        elif details.get("limit") == "max_memory":
            message = (
                f"The program ran out of memory{where}: it may use at most "
                f"{limits.max_memory // (1024 * 1024)} MB ({clip(kind, 300)})."
            )
        else:
            what = "has a syntax error" if isinstance(error, monty.MontySyntaxError) else "failed"
            message = f"The program {what}{where}: {clip(kind, 2000)}"
        return error_result(message, **details)
    return error_result(f"The program could not run: {clip(str(error), 2000)}")
