"""Calling one tool, outside any loop: the one call path every consumer of tools uses.

`invoke` copies the arguments, runs ``before_tool``, checks scopes, asks for confirmation
and a credential (as outcomes the caller answers by calling again), runs the tool under
its deadline, turns what it raised into ``on_tool_error``'s answer or an error result,
runs ``after_tool``, and reads what the tool asked for while running. It knows no agent,
session or credential store: the agent loop (and any other caller) maps its outcomes.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import weakref
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence, Set
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, overload

import anyio

from toolsets import _telemetry
from toolsets._auth import AuthConfig, AuthCredential
from toolsets._concurrency import Ready, with_deadline
from toolsets._content import fast_init
from toolsets._context import EventActions, ToolConfirmation, ToolContext
from toolsets._json import MAX_JSON_DEPTH, JsonValue, all_atoms, copy_json, deeper_than
from toolsets._results import INVALID_JSON_KEY, MAX_FIELDS, clip, error_result, is_error_result
from toolsets._streaming import ToolStream
from toolsets._tool import Tool
from toolsets._validation import ArgumentChecker

if TYPE_CHECKING:
    from toolsets.telemetry._spans import Telemetry

__all__ = [
    "DECLINED",
    "DEFAULT_TOOL_TIMEOUT",
    "AfterTool",
    "BeforeTool",
    "CallPath",
    "Callbacks",
    "ConfirmationNeeded",
    "CredentialNeeded",
    "Done",
    "LongRunning",
    "NO_CALLBACKS",
    "TOO_DEEP",
    "OnToolError",
    "Outcome",
    "Running",
    "ToolRun",
    "argument_problem",
    "describe_error",
    "intercept",
    "invoke",
    "parse_arguments",
    "unreadable_arguments",
]

DEFAULT_TOOL_TIMEOUT = 60.0
"""Seconds a tool call may take unless its caller or the tool says otherwise (the agent
loop's and every framework adapter's default)."""

BeforeTool: TypeAlias = Callable[
    [Tool, dict[str, Any], ToolContext], "JsonValue | Awaitable[JsonValue]"
]
"""Called before a tool runs with a copy of the arguments it may change in place (to
rewrite the call); returning anything but None skips the tool and uses that as its
result."""
AfterTool: TypeAlias = Callable[
    [Tool, Mapping[str, Any], ToolContext, JsonValue], "JsonValue | Awaitable[JsonValue]"
]
"""Called with the tool's result; returning anything but None replaces it."""
OnToolError: TypeAlias = Callable[
    [Tool, Mapping[str, Any], ToolContext, Exception], "JsonValue | Awaitable[JsonValue]"
]
"""Called when the tool raised (or timed out); returning anything but None is used as
the result; otherwise the model is told the error."""

DECLINED = "The user declined this call; it did not run."
"""What the model is told when the user declined the confirmation of a call."""


@dataclass(frozen=True, kw_only=True)
class Callbacks:
    """Tool callbacks; each list is tried in order, first non-None wins."""

    before_tool: Sequence[BeforeTool] = ()
    """Run before the tool (not again when a paused call is answered)."""
    after_tool: Sequence[AfterTool] = ()
    """Run with every result, including one ``before_tool`` or ``on_tool_error`` gave."""
    on_tool_error: Sequence[OnToolError] = ()
    """Run when the tool raised or timed out."""


NO_CALLBACKS = Callbacks()


@dataclass(slots=True)
class CallPath:
    """How `invoke` was asked to call a tool, kept in its context (`ToolContext.call_path`):
    a tool that calls other tools from inside (`code_mode`) calls them the same way."""

    default_timeout: float
    """Seconds a call may take when the tool has no ``timeout``."""
    callbacks: Callbacks
    """The caller's callbacks."""
    scopes: Set[str]
    """The scopes the caller holds."""


def intercept(*steps: AfterTool) -> AfterTool:
    """One ``after_tool`` callback running ``steps`` in order, each on the result the
    one before it left: a result interceptor's pipeline (redact, then promote a value to
    the state, ...). A step returning None leaves the result as it is. (The callbacks of
    an ``after_tool`` list are alternatives instead: the first answer wins.)

    Every result the model is given goes through it: the tool's, ``before_tool``'s,
    ``on_tool_error``'s (a timeout's too), a streaming tool's last one and a background
    call's; not a streaming tool's partial results, which go to the caller only, nor a
    refusal before the call (scopes, declined, a `phased` tool outside its phase). Each
    step gets the call's context: ``ctx.state`` reads the state and records its writes
    with the call's result.
    """

    async def intercepted(
        tool: Tool, args: Mapping[str, Any], ctx: ToolContext, result: JsonValue
    ) -> JsonValue:
        for step in steps:
            changed = step(tool, args, ctx, result)
            if inspect.isawaitable(changed):
                changed = await changed
            if changed is not None:
                result = changed
        return result

    return intercepted


@fast_init  # the outcome of nearly every call, made on the path every call takes
@dataclass(frozen=True, kw_only=True)
class Done:
    """The call is over: its result (an ``{"error": ...}`` one when it did not run or
    failed)."""

    result: JsonValue
    """What the model is given."""
    args: dict[str, Any]
    """The arguments the tool saw (the caller's copy, as ``before_tool`` left it)."""
    actions: EventActions | None = None
    """What the tool asked its caller to do afterwards (None: nothing)."""


@dataclass(frozen=True, kw_only=True)
class ConfirmationNeeded:
    """The call waits for the user's consent: call again with ``confirmation=``."""

    hint: str
    """What the user is asked."""
    args: dict[str, Any]
    """The arguments to call again with (as ``before_tool`` left them)."""
    payload: JsonValue = None
    """What the tool attached to its request, when it asked while running."""
    actions: EventActions | None = None
    """The actions of the run that asked (None when asked before running)."""


@dataclass(frozen=True, kw_only=True)
class CredentialNeeded:
    """The call waits for a credential: call again with ``credential=``."""

    auth_config: AuthConfig
    """What credential is needed."""
    args: dict[str, Any]
    """The arguments to call again with."""
    actions: EventActions | None = None
    """The actions of the run that asked (None when asked before running)."""


@dataclass(frozen=True, kw_only=True)
class LongRunning:
    """The call started work whose result arrives later."""

    interim: JsonValue
    """What the tool returned meanwhile (e.g. a status or a job id)."""
    args: dict[str, Any]
    """The arguments it was called with."""
    actions: EventActions | None = None
    """What the tool asked its caller to do afterwards (None: nothing)."""


@dataclass(frozen=True, kw_only=True)
class Running:
    """The call passed its gates and is the caller's to run: iterate `call` for the
    results of a streaming tool as they come, then read its ``outcome`` (or await
    ``call.finish()``). Only a caller that asks for it (``invoke(streams=True)`` or
    ``defer=True``) gets one."""

    call: ToolRun
    """The call, not yet run, or streaming."""
    args: dict[str, Any]
    """The arguments it runs with."""
    actions: EventActions | None = None
    """Always None: a call that is running has asked for nothing yet."""


Outcome: TypeAlias = Done | ConfirmationNeeded | CredentialNeeded | LongRunning
"""What one call of `invoke` produced (and `Running`, to a caller that asks for it)."""

_OUTCOMES: dict[type, str] = {
    ConfirmationNeeded: "confirmation_needed",
    CredentialNeeded: "credential_needed",
    LongRunning: "long_running",
    Running: "running",
}
"""What a span says of a call that is not over (``toolsets.tool.outcome``)."""


def _kind(value: object) -> str:
    """The JSON type of ``value``, as the model would call it."""
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list | tuple):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return "null" if value is None else type(value).__name__


TOO_DEEP = f"The arguments are nested deeper than {MAX_JSON_DEPTH} levels; send them flatter."
"""What the model is told about arguments nested deeper than `MAX_JSON_DEPTH`."""


def argument_problem(args: object) -> str | None:
    """What is wrong with a call's arguments before any tool may see them (not a JSON
    object, nested deeper than `MAX_JSON_DEPTH`, fields a provider dialect could not
    read back: ``{INVALID_JSON_KEY: {field: problem}}``), or None."""
    if not isinstance(args, Mapping):
        return f"The arguments must be a JSON object, not {_kind(args)}."
    if len(args) == 1 and isinstance(fields := args.get(INVALID_JSON_KEY), Mapping):
        return unreadable_fields(fields)
    if deeper_than(args, MAX_JSON_DEPTH):
        return TOO_DEEP
    return None


def unreadable_fields(fields: Mapping[str, object]) -> str:
    """What the model is told about fields of its arguments that could not be read back
    (``{field path: what is wrong}``, as `toolsets.schema` hands them on)."""
    listed = "; ".join(
        f"{clip(str(path), _SHOWN)}: {clip(str(problem), _SHOWN * 2)}"
        for path, problem in list(fields.items())[:MAX_FIELDS]
    )
    more = len(fields) - MAX_FIELDS
    return (
        f"Invalid arguments, not sent: {listed}{f' and {more} more' if more > 0 else ''}. "
        "Fix them and call the tool again."
    )


_SHOWN = 100
"""Characters of unreadable arguments quoted back to the model."""


def unreadable_arguments(text: str) -> str:
    """Why ``text``, which a model sent as a call's arguments, is not a JSON object."""
    try:
        value = json.loads(text)
    except RecursionError:  # json's answer to deep nesting
        return TOO_DEEP
    except json.JSONDecodeError as exc:
        return (
            f"The arguments are not valid JSON ({exc.msg} at character {exc.pos}); send a "
            f"JSON object. They began: {clip(text, _SHOWN)!r}"
        )
    if isinstance(value, str):  # an object encoded twice, as some models send, or just text
        try:
            value = json.loads(value)
        except RecursionError:
            return TOO_DEEP
        except json.JSONDecodeError:
            pass  # a JSON string: said so below
    return argument_problem(value) or "The arguments are unreadable."


def parse_arguments(text: str) -> tuple[dict[str, Any], str | None]:
    """The arguments object in the text a model sent, and None; or ``{}`` and what the
    model is told about text that is not one. Empty text is no arguments; an object
    encoded twice (a JSON string holding it, as some models send) is read too."""
    try:
        value = json.loads(text)
        if type(value) is dict:  # most calls
            return value, None
        if isinstance(value, str):
            value = json.loads(value)
    except (ValueError, RecursionError):
        if not text.strip():
            return {}, None
        value = None
    if isinstance(value, dict):
        return value, None
    return {}, unreadable_arguments(text)


def describe_error(tool_name: str, error: Exception) -> str:
    """What the model is told about an exception: the real cause, in one line."""
    if isinstance(error, TimeoutError):
        return f"The tool {tool_name!r} timed out: {error or 'no result in time'}"
    return f"The tool {tool_name!r} failed: {type(error).__name__}: {error}"


@overload
def invoke(
    tool: Tool,
    args: Mapping[str, Any] | None,
    ctx: ToolContext,
    *,
    default_timeout: float,
    callbacks: Callbacks = ...,
    scopes: Set[str] = ...,
    confirmation: ToolConfirmation | None = ...,
    credential: AuthCredential | None = ...,
    resumed: bool = ...,
    streams: Literal[False] = ...,
    defer: Literal[False] = ...,
) -> Coroutine[Any, Any, Outcome]: ...


@overload
def invoke(
    tool: Tool,
    args: Mapping[str, Any] | None,
    ctx: ToolContext,
    *,
    default_timeout: float,
    callbacks: Callbacks = ...,
    scopes: Set[str] = ...,
    confirmation: ToolConfirmation | None = ...,
    credential: AuthCredential | None = ...,
    resumed: bool = ...,
    streams: bool = ...,
    defer: bool = ...,
) -> Coroutine[Any, Any, Outcome | Running]: ...


def invoke(
    tool: Tool,
    args: Mapping[str, Any] | None,
    ctx: ToolContext,
    *,
    default_timeout: float,
    callbacks: Callbacks = NO_CALLBACKS,
    scopes: Set[str] = frozenset(),
    confirmation: ToolConfirmation | None = None,
    credential: AuthCredential | None = None,
    resumed: bool = False,
    streams: bool = False,
    defer: bool = False,
) -> Coroutine[Any, Any, Outcome | Running]:
    """Call ``tool`` once: the gates, the run under its deadline, the callbacks.

    Args:
        tool: The tool to call.
        args: The model's arguments; never changed (the callbacks and the tool get a copy).
        ctx: The call's context; it gets ``confirmation`` and ``credential``, and its
            cancellation flag is set when the call times out or is cancelled.
        default_timeout: Seconds the call may take when the tool has no ``timeout``.
        callbacks: ``before_tool``, ``after_tool`` and ``on_tool_error`` callbacks.
        scopes: The scopes the caller holds (see `Tool.required_scopes`).
        confirmation: The user's answer to a `ConfirmationNeeded` of this call.
        credential: The credential for the tool's ``auth_config`` (or for what it
            asked while running), when the caller has one.
        resumed: The call is an answered pause: ``before_tool`` already ran.
        streams: The caller shows a streaming tool's results as they come: a call whose
            tool returns a `ToolStream` is handed back `Running`, for the caller to pull.
            Otherwise the stream is pulled here, each result but the last reported as
            the call's progress (`ToolContext.report_progress`), and the last is the
            result.
        defer: The caller runs the call itself, later (a background call): once the
            gates pass, the call is handed back `Running` before the tool starts.

    Returns:
        `Done`, or what the call waits for: `ConfirmationNeeded`, `CredentialNeeded`
        (answer it by calling again with the answer and ``resumed=True``), `LongRunning`;
        or `Running`, when the caller asked to run the call itself.
        Arguments that are not a JSON object, or nest deeper than `MAX_JSON_DEPTH`, are
        a `Done` with an error result (and empty ``args``): no tool sees them.

    With telemetry on (`toolsets.telemetry`), the call is an ``execute_tool`` span.
    """
    # Not a coroutine function itself: the call's coroutine is handed back, one frame
    # fewer between the caller and the tool.
    call = _invoke(
        tool, args, ctx, default_timeout, callbacks, scopes, confirmation, credential,
        resumed, streams, defer,
    )  # fmt: skip
    telemetry = _telemetry.current
    return call if telemetry is None else _traced(telemetry, tool, ctx, call)


async def _traced(
    telemetry: Telemetry, tool: Tool, ctx: ToolContext, call: Awaitable[Outcome | Running]
) -> Outcome | Running:
    """``call`` as its ``execute_tool`` span: what it waits for, and ``error.type`` for
    a result that tells the model of an error (``tool_error``) or the class of what the
    tool raised (`_recover`)."""
    with telemetry.tool_call(tool.name, ctx.function_call_id) as span:
        outcome = await call
        if not isinstance(outcome, Done):
            span.set("toolsets.tool.outcome", _OUTCOMES[type(outcome)])
        elif "error.type" not in span.attributes and is_error_result(outcome.result):
            span.failed("tool_error")
        return outcome


async def _invoke(
    tool: Tool,
    args: Mapping[str, Any] | None,
    ctx: ToolContext,
    default_timeout: float,
    callbacks: Callbacks,
    scopes: Set[str],
    confirmation: ToolConfirmation | None,
    credential: AuthCredential | None,
    resumed: bool,
    streams: bool,
    defer: bool,
) -> Outcome | Running:
    """`invoke`'s call."""
    path = CallPath(default_timeout, callbacks, scopes)
    copied = _admitted(tool, args, ctx, path, confirmation, credential)
    if isinstance(copied, Done):  # not admitted: nothing runs
        return copied
    if not resumed and callbacks.before_tool:
        answered = await _first(callbacks.before_tool, tool, copied, ctx)
        if answered is not None:  # the tool does not run
            return await _concluded(callbacks, tool, copied, ctx, answered)
    stopped = _gates(tool, copied, scopes, confirmation, credential)
    if stopped is not None:
        return stopped
    if defer:
        seconds = tool.timeout or default_timeout
        return Running(call=ToolRun(tool, copied, ctx, seconds, callbacks), args=copied)
    try:
        running = tool.run(copied, ctx)
    except Exception as error:  # the on_tool_error boundary (see _run)
        result = await _recover(callbacks, tool, copied, ctx, error)
    else:
        # A result ready at once (a call that could not wait: a plain function's) was
        # not waited for: no deadline could have interrupted it, so it needs no cancel
        # scope. Any other is awaited under the call's deadline; a stream is pulled.
        if isinstance(running, Ready):
            result = running.value
        elif isinstance(running, ToolStream):
            call = ToolRun(tool, copied, ctx, tool.timeout or default_timeout, callbacks, running)
            return Running(call=call, args=copied) if streams else await call.finish()
        else:
            seconds = tool.timeout or default_timeout
            result = await _run(tool, running, copied, ctx, seconds, callbacks)
    if callbacks.after_tool:
        return await _concluded(callbacks, tool, copied, ctx, result)
    return _finish(tool, copied, ctx, result)  # what _concluded does without after_tool


def _admitted(
    tool: Tool,
    args: Mapping[str, Any] | None,
    ctx: ToolContext,
    path: CallPath,
    confirmation: ToolConfirmation | None,
    credential: AuthCredential | None,
) -> dict[str, Any] | Done:
    """The call's own copy of ``args`` (which ``before_tool`` and the tool may change),
    its context given what the call brings (the tool's name, how it is called, the
    caller's answers to what it asked before); or the outcome of a call refused before
    anything runs: arguments no tool may see (not a JSON object, nested deeper than
    `MAX_JSON_DEPTH`), or the tool's `Tool.refusal`."""
    copied: dict[str, Any]
    if type(args) is dict and all_atoms(args):  # most calls: a copy of scalars is shallow
        copied = args.copy()
    else:
        problem = None if args is None else argument_problem(args)
        if problem is not None:
            return Done(result=error_result(problem), args={})
        copied = copy_json(args if type(args) is dict else dict(args)) if args else {}
    if confirmation is not None:
        ctx.tool_confirmation = confirmation
    if credential is not None:
        ctx.auth_credential = credential
    ctx.tool_name = tool.name
    ctx.call_path = path
    refused = tool.refusal(copied, ctx)
    return copied if refused is None else Done(result=refused, args=copied)


async def _run(
    tool: Tool,
    running: Awaitable[JsonValue],
    args: dict[str, Any],
    ctx: ToolContext,
    seconds: float,
    callbacks: Callbacks,
) -> JsonValue:
    """The result of ``running`` (the tool's run), awaited under its deadline of
    ``seconds``; if it raised or timed out, ``on_tool_error``'s answer or an error result
    saying why."""
    try:
        result, timed_out = await with_deadline(running, seconds)
    except Exception as error:  # the on_tool_error boundary
        # Before the cancellation clause (no backend's cancellation is an Exception):
        # asking anyio for that class needs a running loop, and a call that raised at
        # once may run where there is none (the smolagents adapter).
        return await _recover(callbacks, tool, args, ctx, error)
    except BaseException as stopped:  # cancellation, KeyboardInterrupt, SystemExit
        if _is_cancellation(stopped):
            ctx.cancellation.cancel("the run was cancelled")
        raise
    if timed_out:
        ctx.cancellation.cancel(f"timed out after {seconds:g} s")
        late = TimeoutError(f"no result within {seconds:g} s")
        return await _recover(callbacks, tool, args, ctx, late)
    return result


def _is_cancellation(error: BaseException) -> bool:
    """Whether ``error`` is the running backend's cancellation (never, with no event loop
    running: a plain function's call may run without one, and an interrupt raised there
    must reach its caller as it is)."""
    try:
        return isinstance(error, anyio.get_cancelled_exc_class())
    except RuntimeError:  # no running event loop (anyio's NoEventLoopError is one)
        return False


def _gates(
    tool: Tool,
    args: dict[str, Any],
    scopes: Set[str],
    confirmation: ToolConfirmation | None,
    credential: AuthCredential | None,
) -> Outcome | None:
    """Why the call may not run now (scopes missing, declined, confirmation or a
    credential needed), or None."""
    required = tool.required_scopes
    missing = required - scopes if required else required
    if missing:
        return Done(
            result=error_result(
                f"Not permitted: calling {tool.name!r} needs the scopes "
                f"{', '.join(sorted(missing))}, which this user does not have.",
                missing_scopes=list[JsonValue](sorted(missing)),
            ),
            args=args,
        )
    if confirmation is not None and not confirmation.confirmed:
        return Done(result=error_result(DECLINED), args=args)
    if confirmation is None and tool.requires_confirmation(args):
        # The user is never asked to approve a call that could not run: the model is
        # told first what to fix, as the tool itself would tell it.
        return _invalid(tool, args) or ConfirmationNeeded(
            hint=tool.confirmation_hint(args), args=args
        )
    config = tool.auth_config
    if config is not None and credential is None:
        return _invalid(tool, args) or CredentialNeeded(auth_config=config, args=args)
    return None


_CHECKERS: weakref.WeakKeyDictionary[Tool, tuple[object, ArgumentChecker]] = (
    weakref.WeakKeyDictionary()
)
"""Each gated tool's checker, made on the first pause it asks for, with the parameter
schema it was made for (a tool whose declaration changes gets a new one)."""


def _invalid(tool: Tool, args: dict[str, Any]) -> Done | None:
    """The invalid-arguments outcome of a call about to pause for the user, when its
    arguments do not fit the tool's declared parameters (None: they fit, or the tool
    declares none). A tool called by name while offered to no model (a `searchable`
    tool not loaded) is checked against the declaration it is called under."""
    declaration = tool.call_declaration()
    if declaration is None:
        return None
    schema = declaration.parameters
    try:
        made = _CHECKERS.get(tool)
    except TypeError:  # a tool that cannot be a weak key: checked uncached
        made = None
    if made is None or (made[0] is not schema and made[0] != schema):
        made = (schema, ArgumentChecker(schema, tool_name=tool.name))
        with contextlib.suppress(TypeError):
            _CHECKERS[tool] = made
    checker = made[1]
    # A null for an optional parameter is "not given", as hosts in strict mode send it.
    problem = checker.result(checker.without_null_options(args))
    return None if problem is None else Done(result=problem, args=args)


async def _first(callbacks: Sequence[Callable[..., Any]], *args: Any) -> JsonValue:
    """The first non-None answer of ``callbacks`` (called in order), or None."""
    for callback in callbacks:
        value = callback(*args)
        if inspect.isawaitable(value):
            value = await value
        if value is not None:
            result: JsonValue = value
            return result
    return None


async def _recover(
    callbacks: Callbacks, tool: Tool, args: dict[str, Any], ctx: ToolContext, error: Exception
) -> JsonValue:
    telemetry = _telemetry.current
    if telemetry is not None:
        telemetry.tool_failed(error)
    recovered = await _first(callbacks.on_tool_error, tool, args, ctx, error)
    if recovered is not None:
        return recovered
    return error_result(describe_error(tool.name, error))


async def _concluded(
    callbacks: Callbacks, tool: Tool, args: dict[str, Any], ctx: ToolContext, result: JsonValue
) -> Outcome:
    """The outcome of a call that ran (or that ``before_tool`` answered): its result
    through ``after_tool``, and what the tool asked for while running (`_finish`)."""
    if callbacks.after_tool:
        replaced = await _first(callbacks.after_tool, tool, args, ctx, result)
        if replaced is not None:
            result = replaced
    return _finish(tool, args, ctx, result)


_CONTAINERS = (dict, list)
"""What a result nests in (a tuple of types: isinstance is quicker with one than with a
union)."""


def _finish(tool: Tool, args: dict[str, Any], ctx: ToolContext, result: JsonValue) -> Outcome:
    """The outcome of a call that ran (or that ``before_tool`` answered)."""
    if isinstance(result, _CONTAINERS) and deeper_than(result, MAX_JSON_DEPTH):
        # Kept, it would break every later read of a session and every request that
        # carries the conversation (both recurse as deep as the value goes).
        result = error_result(
            f"The tool's result is nested deeper than {MAX_JSON_DEPTH} levels, too "
            "deep to keep; it was dropped."
        )
    actions = ctx.actions_set
    if actions is None:  # most calls: nothing to act on
        if tool.is_long_running:
            return LongRunning(interim=result, args=args)
        return Done(result=result, args=args)
    # A tool may ask for confirmation or credentials while running: it pauses and runs
    # again, with the answer in its context, when the caller answers.
    call_id = ctx.function_call_id
    if call_id is not None:
        asked = actions.requested_tool_confirmations.pop(call_id, None)
        if asked is not None:
            return ConfirmationNeeded(
                hint=asked.hint or tool.confirmation_hint(args),
                args=args,
                payload=asked.payload,
                actions=actions,
            )
        config = actions.requested_auth_configs.pop(call_id, None)
        if config is not None:
            return CredentialNeeded(auth_config=config, args=args, actions=actions)
    if tool.is_long_running or actions.long_running:
        return LongRunning(interim=result, args=args, actions=actions)
    return Done(result=result, args=args, actions=actions)


STREAM_CLOSE_GRACE = 5.0
"""Seconds a streaming tool's cleanup (its ``finally`` blocks, run when its call stops
early: timed out, cancelled, or no longer pulled) may take; then it is cancelled, so that
a cleanup that never ends cannot hold up the run."""


async def _close(stream: ToolStream) -> None:
    """Close a stream stopped early, shielded from the caller's cancellation but bounded
    by `STREAM_CLOSE_GRACE`."""
    with anyio.move_on_after(STREAM_CLOSE_GRACE, shield=True):
        await stream.aclose()


_SHOWN_PARTIAL = 200
"""Characters of a partial result put in a progress report's message."""


class ToolRun:
    """One call past its gates, run by its caller (see `Running`).

    Iterating it runs the call: a streaming tool's results are yielded as they come
    (each pulled under what is left of the call's deadline); a plain tool yields
    nothing. When the iteration ends, `outcome` holds the call's outcome, the last result
    through ``after_tool`` (an error, through ``on_tool_error``, when the tool raised,
    timed out or yielded nothing). A cancelled call, or one its caller stops pulling
    (`aclose`), closes the tool's stream and sets the call's cancellation flag.
    """

    def __init__(
        self,
        tool: Tool,
        args: dict[str, Any],
        ctx: ToolContext,
        seconds: float,
        callbacks: Callbacks,
        stream: ToolStream | None = None,
    ) -> None:
        self.tool = tool
        """The tool called."""
        self.args = args
        """The arguments it runs with."""
        self.ctx = ctx
        """The call's context."""
        self._seconds = seconds
        self._callbacks = callbacks
        self._stream = stream
        self._deadline: float | None = None
        self._last: JsonValue = None
        self.outcome: Outcome | None = None
        """The call's outcome, once the iteration has ended."""

    def __aiter__(self) -> ToolRun:
        return self

    async def __anext__(self) -> JsonValue:
        if self.outcome is not None:
            raise StopAsyncIteration
        if self._deadline is None:
            self._deadline = anyio.current_time() + self._seconds
            if self._stream is None:
                await self._start()
                if self.outcome is not None:
                    raise StopAsyncIteration
        stream = self._stream
        assert stream is not None
        left = self._deadline - anyio.current_time()
        try:
            value, timed_out = await with_deadline(stream.__anext__(), max(left, 0.0))
        except StopAsyncIteration:
            if stream.count == 0:
                await self._conclude(await self._failed(stream.no_result()))
            else:
                await self._conclude(self._last)
            raise
        except Exception as error:  # the on_tool_error boundary (see _run)
            await self._conclude(await self._failed(error))
            raise StopAsyncIteration from None
        except BaseException as stopped:
            if _is_cancellation(stopped):
                self.ctx.cancellation.cancel("the run was cancelled")
            await _close(stream)
            raise
        if timed_out:
            self.ctx.cancellation.cancel(f"timed out after {self._seconds:g} s")
            await _close(stream)
            late = TimeoutError(f"no result within {self._seconds:g} s")
            await self._conclude(await self._failed(late))
            raise StopAsyncIteration
        self._last = value
        return value

    async def _start(self) -> None:
        """Run the tool (a deferred call): a stream is kept to pull, any other result
        concludes the call."""
        try:
            running = self.tool.run(self.args, self.ctx)
        except Exception as error:  # the on_tool_error boundary (see _run)
            await self._conclude(await self._failed(error))
            return
        if isinstance(running, ToolStream):
            self._stream = running
            return
        if isinstance(running, Ready):
            result = running.value
        else:
            result = await _run(
                self.tool, running, self.args, self.ctx, self._seconds, self._callbacks
            )
        await self._conclude(result)

    def _failed(self, error: Exception) -> Awaitable[JsonValue]:
        return _recover(self._callbacks, self.tool, self.args, self.ctx, error)

    async def _conclude(self, result: JsonValue) -> None:
        self.outcome = await _concluded(self._callbacks, self.tool, self.args, self.ctx, result)

    async def aclose(self) -> None:
        """Stop the call where it is (its stream is closed, its cancellation flag set),
        when its caller stops pulling before the end."""
        if self.outcome is None and self._stream is not None:
            self.ctx.cancellation.cancel("the call was stopped")
            await _close(self._stream)

    async def finish(self) -> Outcome:
        """Run the call to its end; each streamed result is reported as the call's
        progress (`ToolContext.report_progress`: an MCP client that asked for progress
        gets it as ``notifications/progress``, the result as JSON in its message).

        Returns:
            The call's outcome.
        """
        try:
            async for value in self:
                shown = clip(json.dumps(value, ensure_ascii=False, default=str), _SHOWN_PARTIAL)
                stream = self._stream
                assert stream is not None
                await self.ctx.report_progress(stream.count, None, shown)
        finally:
            await self.aclose()
        assert self.outcome is not None
        return self.outcome
