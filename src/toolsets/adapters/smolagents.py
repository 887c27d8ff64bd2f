"""toolsets' tools as smolagents tools, and smolagents tools as a toolset.

smolagents is synchronous: its agents call ``tool.forward(**kwargs)`` from their own
thread. `to_smolagents` therefore runs toolsets' async tools on an event loop of its
own, in a background thread that also holds the entered toolset (an MCP session, an
HTTP client) for as long as the adapter is open::

    with to_smolagents(toolset, confirm=ask_user) as tools:
        agent = ToolCallingAgent(tools=tools, model=model)
        agent.run("...")

Every call goes through the one call path (`toolsets._invoke.invoke`): arguments
checked, confirmation and credentials asked, the tool run under its deadline. smolagents
has no approval or credential mechanism of its own, so the adapter takes them as
options: ``confirm=`` decides each call that needs the user's approval (without it,
such calls are refused and never run), ``credentials=`` answers each credential a tool
needs (without it, the call is refused naming the credential). smolagents wants Python
identifiers for tool and argument names: other names (``get-sum``, ``notes.create``) are
mapped to legal ones, and the arguments back to the tool's own names, exactly.

`from_smolagents` goes the other way: smolagents tools (``@tool`` functions, ``Tool``
subclasses) become a toolset, each call run in a worker thread.
"""

from __future__ import annotations

try:
    import smolagents  # type: ignore[import-untyped]
    from smolagents.tools import AUTHORIZED_TYPES  # type: ignore[import-untyped]
except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
    from toolsets._install import missing_extra

    raise missing_extra(__name__, "smolagents", exc) from exc

import concurrent.futures
import contextlib
import copy
import functools
import json
import keyword
import re
import threading
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Literal, TypeAlias, TypeVar

import anyio
import anyio.from_thread
import anyio.to_thread

from toolsets._auth import AuthConfig, AuthCredential
from toolsets._concurrency import check_timeout
from toolsets._consumers import (
    check_credentials,
    credential_answer,
    given_credential,
    toolset_of,
)
from toolsets._context import Invocation, ToolConfirmation, ToolContext
from toolsets._declaration import ToolDeclaration
from toolsets._errors import ToolCallError, ToolsetError
from toolsets._function_tool import FunctionTool
from toolsets._ids import new_id
from toolsets._invoke import (
    DEFAULT_TOOL_TIMEOUT,
    Callbacks,
    ConfirmationNeeded,
    CredentialNeeded,
    Done,
    LongRunning,
    Outcome,
    invoke,
)
from toolsets._json import JsonValue, to_json_value
from toolsets._names import NameRule
from toolsets._results import is_error_result
from toolsets._settle import NEEDS_APPROVAL, keep_state, settle
from toolsets._tool import BaseTool, Tool
from toolsets._toolset import StaticToolset, Toolset
from toolsets._validation import ArgumentChecker
from toolsets.schema import openai_parameters
from toolsets.schema._names import legal_names
from toolsets.schema._restore import json_kind

__all__ = [
    "NEEDS_APPROVAL",
    "Confirm",
    "Credentials",
    "Errors",
    "SmolagentsAdapter",
    "SmolagentsTool",
    "SmolagentsToolError",
    "from_smolagents",
    "to_smolagents",
]

OPEN_TIMEOUT = 60.0
"""Seconds the toolset may take to open and list its tools."""
CLOSE_TIMEOUT = 10.0
"""Seconds the toolset may take to close before it is cancelled."""
_GRACE = 5.0
"""Seconds a call may overrun its deadline (the call path enforces the deadline itself;
this only bounds the wait for an event loop that stopped answering)."""
_T = TypeVar("_T")

Errors: TypeAlias = Literal["auto", "raise", "return"]
"""What a tool's ``{"error": ...}`` result becomes in smolagents: ``"return"``ed as the
tool's output, ``"raise"``d as `SmolagentsToolError`, or (``"auto"``) returned to a
ToolCallingAgent, which shows it to the model as the call's observation (raising would
also drop the results of the other calls of the same turn, which did run), and raised
elsewhere: in a CodeAgent's program, where a returned error would flow on unnoticed as
a value (into ``final_answer``, even), the line fails with the message instead."""

Confirm: TypeAlias = Callable[[str, dict[str, Any]], bool]
"""Decides a call that needs the user's approval: ``(hint, args) -> approved``. It runs
in the agent's thread (it may block, e.g. on ``input()``); ``args`` are the tool's own
argument names and values."""
Credentials: TypeAlias = (
    Mapping[str, AuthCredential | str] | Callable[[AuthConfig], "AuthCredential | str | None"]
)
"""The credentials tools may be given: by security scheme name, or a function of what is
needed (None when it has none)."""

_SMOLAGENTS_TOOL_NAMES = frozenset({"final_answer"})
"""Tool names smolagents' agents give their own tools."""
_IDENTIFIER = re.compile(r"[^A-Za-z0-9_]")
_FIRST = re.compile(r"[A-Za-z_]")
TOOL_NAMES = NameRule(
    illegal=_IDENTIFIER,
    fallback="tool",
    first=_FIRST,
    reserved=frozenset(keyword.kwlist) | _SMOLAGENTS_TOOL_NAMES,
)
"""smolagents tool names: Python identifiers (a CodeAgent calls tools as functions), not
keywords nor the agents' own ``final_answer``; clashes get a hash of the original."""
ARGUMENT_NAMES = NameRule(
    illegal=_IDENTIFIER,
    fallback="arg",
    first=_FIRST,
    # smolagents' Tool.__call__(self, *args, sanitize_inputs_outputs=..., **kwargs).
    reserved=frozenset(keyword.kwlist) | {"self", "sanitize_inputs_outputs"},
)
"""smolagents argument names: keyword arguments of ``forward``."""


class SmolagentsToolError(ToolsetError):
    """A tool's ``{"error": ...}`` result, raised from ``forward`` (see `Errors`).

    A CodeAgent's program stops at the line that called the tool, and the model is shown
    the message and asked to retry; the message is the result as JSON, so the model reads
    the fields it has to fix.
    """

    def __init__(self, result: Mapping[str, Any], *, tool_name: str) -> None:
        super().__init__(json.dumps(result, ensure_ascii=False, default=str))
        self.result = dict(result)
        """The error result, as toolsets' call path gave it."""
        self.tool_name = tool_name
        """The smolagents name of the tool."""


# --- names and schemas ------------------------------------------------------------------


def _json_types(schema: object) -> list[str]:
    """The JSON types ``schema`` accepts as far as its top level says (``[]``: any)."""
    if not isinstance(schema, Mapping):
        return []
    declared = schema.get("type")
    if isinstance(declared, str):
        return [declared]
    if isinstance(declared, list):
        return [t for t in declared if isinstance(t, str)]
    branches = schema.get("anyOf", schema.get("oneOf"))
    if isinstance(branches, list) and branches:
        found: list[str] = []
        for branch in branches:
            types = _json_types(branch)
            if not types:
                return []
            found += [t for t in types if t not in found]
        return found
    values = schema["enum"] if isinstance(schema.get("enum"), list) else None
    if values is None and "const" in schema:
        values = [schema["const"]]
    if values:
        kinds = {json_kind(value) for value in values}
        return sorted(kinds)
    return []


def _without_refs(node: Any, defs: Mapping[str, Any], inlined: frozenset[str] = frozenset()) -> Any:
    """``node`` with no ``$ref`` left (smolagents' inputs carry no ``$defs``): a reference
    to a recursive definition is inlined once along each path, then left open (``{}``:
    the model may send anything there, and the tool's own schema checks it)."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        out = {k: _without_refs(v, defs, inlined) for k, v in node.items() if k != "$ref"}
        name = ref.removeprefix("#/$defs/") if isinstance(ref, str) else None
        if name is not None and name not in inlined and isinstance(defs.get(name), Mapping):
            target = _without_refs(defs[name], defs, inlined | {name})
            return {**target, **out}
        return out
    if isinstance(node, list):
        return [_without_refs(item, defs, inlined) for item in node]
    return node


def parameters_for(declaration: ToolDeclaration) -> dict[str, Any]:
    """The parameter schema smolagents is given for a tool: the one place the dialect is
    chosen (OpenAI's: references inlined, which smolagents' model classes send on)."""
    return openai_parameters(declaration.parameters, source=f"tool:{declaration.name}")


@dataclass(frozen=True)
class _Input:
    own: str
    """The tool's own name of the argument."""
    spec: dict[str, Any]
    """smolagents' ``inputs`` entry."""
    drop_null: bool
    """``None`` means "not given": the argument is optional and does not take null."""


def _input(name: str, schema: object, required: bool) -> _Input:
    spec: dict[str, Any] = copy.deepcopy(dict(schema)) if isinstance(schema, Mapping) else {}
    types = _json_types(spec)
    nullable = "null" in types or not required
    kinds = [t for t in types if t != "null"] or (["null"] if types else [])
    if not kinds or any(t not in AUTHORIZED_TYPES for t in kinds):
        kind: str | list[str] = "any"
    else:
        kind = kinds[0] if len(kinds) == 1 else kinds
    branches = spec.get("anyOf")
    # smolagents reads anyOf itself (each branch's "type"); one it cannot read is left
    # to the type worked out above.
    if branches is not None and not (
        isinstance(branches, list)
        and all(isinstance(b, Mapping) and isinstance(b.get("type"), str) for b in branches)
    ):
        del spec["anyOf"]
    spec["type"] = kind
    spec.setdefault("description", "")
    if not isinstance(spec["description"], str):
        spec["description"] = str(spec["description"])
    if nullable:
        spec["nullable"] = True
    takes_null = "null" in types or not types
    return _Input(own=name, spec=spec, drop_null=not required and not takes_null)


def _output(response: Mapping[str, Any] | None) -> tuple[str, dict[str, Any] | None]:
    """smolagents' ``output_type`` and ``output_schema`` for a response schema."""
    kinds = [t for t in _json_types(response) if t != "null"]
    if len(kinds) != 1 or kinds[0] not in AUTHORIZED_TYPES:
        return "any", None
    if kinds[0] == "object" and response is not None:
        return "object", copy.deepcopy(dict(response))
    return kinds[0], None


# --- out: toolsets tools as smolagents tools --------------------------------------------


@dataclass(frozen=True)
class _Entry:
    """One tool as smolagents sees it, and how its calls map back."""

    tool: Tool
    name: str
    """The smolagents name."""
    description: str
    inputs: dict[str, dict[str, Any]]
    """smolagents ``inputs``, by smolagents argument name."""
    own_names: dict[str, str]
    """smolagents argument name → the tool's own."""
    drop_null: frozenset[str]
    """smolagents argument names whose ``None`` means "not given"."""
    output_type: str
    output_schema: dict[str, Any] | None
    fast: bool
    """Called in the caller's thread (a plain function that returns at once)."""
    plain: bool
    """No argument is renamed, and none has a ``None`` meaning "not given"."""

    def own_args(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        """The tool's own arguments from what smolagents passed ``forward`` (``kwargs``
        is ``forward``'s own dict: it may be handed on as it is).

        Raises:
            TypeError: too many positional arguments, or one given twice (as Python
                would say).
        """
        if args:
            names = list(self.inputs)
            if len(args) > len(names):
                raise TypeError(
                    f"{self.name}() takes {len(names)} arguments, {len(args)} were given"
                )
            positional = dict(zip(names, args, strict=False))
            twice = sorted(positional.keys() & kwargs.keys())
            if twice:
                raise TypeError(f"{self.name}() got multiple values for argument {twice[0]!r}")
            kwargs = {**positional, **kwargs}
        if self.plain:
            return kwargs
        own = self.own_names
        return {
            own.get(key, key): value
            for key, value in kwargs.items()
            if not (value is None and key in self.drop_null)
        }


def _is_fast(tool: Tool) -> bool:
    """Whether ``tool`` is a function whose call cannot wait: a plain one that returns at
    once (``run_in_thread=False``), or an ``async def`` that never awaits. Its call path
    never waits, so it runs in smolagents' own thread, as smolagents runs its own function
    tools, with no hop to the event loop's thread."""
    # FunctionTool's own flags: how it was made to run.
    return type(tool) is FunctionTool and (
        tool._at_once or (not tool._is_async and not tool._run_in_thread)
    )


def _entry(tool: Tool, name: str) -> _Entry | None:
    declaration = tool.declaration()
    if declaration is None:  # a passive tool: nothing for a model to call
        return None
    parameters = parameters_for(declaration)
    defs = parameters.get("$defs")
    if isinstance(defs, Mapping):
        parameters = _without_refs({k: v for k, v in parameters.items() if k != "$defs"}, defs)
    properties = parameters.get("properties")
    properties = properties if isinstance(properties, Mapping) else {}
    required = parameters.get("required")
    needed = set(required) if isinstance(required, list) else set()
    names = legal_names(list(properties), ARGUMENT_NAMES)
    inputs = {names[own]: _input(own, schema, own in needed) for own, schema in properties.items()}
    output_type, output_schema = _output(declaration.response)
    return _Entry(
        tool=tool,
        name=name,
        description=declaration.description or declaration.title or name,
        inputs={legal: spec.spec for legal, spec in inputs.items()},
        own_names={legal: spec.own for legal, spec in inputs.items()},
        drop_null=frozenset(legal for legal, spec in inputs.items() if spec.drop_null),
        output_type=output_type,
        output_schema=output_schema,
        fast=_is_fast(tool),
        plain=all(legal == spec.own and not spec.drop_null for legal, spec in inputs.items()),
    )


_OBSERVED = threading.local()
"""Per thread, for each tool call under way in it: whether its output is shown to the
model as an observation (see `Errors`)."""


class _AdaptedTool(smolagents.Tool):  # type: ignore[misc]
    """One toolsets tool as a smolagents tool; ``forward`` calls it through the adapter."""

    skip_forward_signature_validation = True

    def __init__(self, adapter: SmolagentsAdapter, entry: _Entry) -> None:
        self.name = entry.name
        self.description = entry.description
        self.inputs = entry.inputs
        self.output_type = entry.output_type
        self.output_schema = entry.output_schema
        self._adapter = adapter
        self._entry = entry
        super().__init__()
        self.is_initialized = True

    @property
    def toolset_tool(self) -> Tool:
        """The toolsets tool this one calls."""
        return self._entry.tool

    def __call__(self, *args: Any, sanitize_inputs_outputs: bool = False, **kwargs: Any) -> Any:
        # A ToolCallingAgent is the caller that asks for its inputs and outputs to be
        # sanitized: it shows the output to the model as the call's observation.
        observed = _OBSERVED.__dict__.setdefault("calls", [])
        observed.append(sanitize_inputs_outputs)
        try:
            return super().__call__(
                *args, sanitize_inputs_outputs=sanitize_inputs_outputs, **kwargs
            )
        finally:
            observed.pop()

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """Call the tool through toolsets' call path (see `SmolagentsAdapter`)."""
        observed = _OBSERVED.__dict__.get("calls")
        return self._adapter._call(self._entry, args, kwargs, bool(observed and observed[-1]))

    def __repr__(self) -> str:
        return f"<smolagents tool {self.name!r} for {self._entry.tool.name!r}>"


def _now(call: Coroutine[Any, Any, _T]) -> _T:
    """The outcome of a call path run that never waits (see `_is_fast`), run here."""
    try:
        call.send(None)
    except StopIteration as finished:
        outcome: _T = finished.value
        return outcome
    call.close()
    raise RuntimeError("a call expected to finish at once waited for the event loop")


class SmolagentsAdapter:
    """A toolset's tools as smolagents tools, open for the ``with`` block's lifetime.

    Build it with `to_smolagents`. Entering it (or `open`) starts an event loop in a
    background thread, enters the toolset there (an MCP server starts, a session opens)
    and lists its tools once; leaving it (or `close`) closes the toolset and stops the
    loop, each within a bounded time. Tools used after that refuse with
    `ToolCallError`.

    Each call of a tool's ``forward`` runs toolsets' call path on that loop and waits
    for it (a plain function tool that returns at once, ``run_in_thread=False``, runs
    in the caller's thread instead: it never waits). Its outcome:

    - a result comes back as the tool's output; an ``{"error": ...}`` result (invalid
      arguments naming the fields, an HTTP 4xx, an MCP error) reaches the model as
      `Errors` says: by default the observation of a ToolCallingAgent's call, the
      `SmolagentsToolError` that stops a CodeAgent's program at that line;
    - a call that needs the user's approval asks ``confirm(hint, args)``; without
      ``confirm`` it is refused with `NEEDS_APPROVAL`, and a declined call does not run;
    - a credential a tool needs comes from ``credentials`` (by security scheme name, or
      a function of the `AuthConfig`); without one the call is refused naming it;
    - what a tool writes to ``ctx.state`` is applied to `state`, which later calls see
      (but ``temp:`` keys, which live for the call only).
    """

    def __init__(
        self,
        tools: Toolset | Iterable[Tool | Callable[..., Any]],
        *,
        confirm: Confirm | None = None,
        credentials: Credentials | None = None,
        user_id: str = "user",
        session_id: str | None = None,
        app_name: str = "toolsets",
        state: dict[str, Any] | None = None,
        scopes: Iterable[str] = (),
        tool_timeout: float = DEFAULT_TOOL_TIMEOUT,
        open_timeout: float = OPEN_TIMEOUT,
        close_timeout: float = CLOSE_TIMEOUT,
        errors: Errors = "auto",
        backend: Literal["asyncio", "trio"] = "asyncio",
        callbacks: Callbacks | None = None,
    ) -> None:
        self.toolset: Toolset = toolset_of(tools)
        """The toolset whose tools are offered."""
        self.state: dict[str, Any] = state if state is not None else {}
        """The state tools read and write (``ctx.state``); writes are applied after
        each call."""
        self._confirm = confirm
        check_credentials(credentials)
        self._credentials = credentials
        self._scopes = frozenset(scopes)
        self._invocation = Invocation(
            app_name=app_name,
            user_id=user_id,
            session_id=session_id if session_id is not None else new_id("smolagents-"),
            state=self.state,
            scopes=self._scopes,
        )
        self._timeout = check_timeout(tool_timeout, "tool_timeout")
        self._open_timeout = check_timeout(open_timeout, "open_timeout")
        self._close_timeout = check_timeout(close_timeout, "close_timeout")
        self._errors = errors
        self._backend = backend
        self._callbacks = callbacks if callbacks is not None else Callbacks()
        # Callbacks may wait (an async one): such calls always go through the loop.
        self._fast_allowed = callbacks is None
        self._lock = threading.Lock()
        self._stack: contextlib.ExitStack | None = None
        self._portal: anyio.from_thread.BlockingPortal | None = None
        self._host: concurrent.futures.Future[None] | None = None
        self._closing: anyio.Event | None = None
        self._tools: list[smolagents.Tool] | None = None
        self._closed = False

    @property
    def tools(self) -> list[smolagents.Tool]:
        """The smolagents tools (after `open`)."""
        if self._tools is None:
            raise ToolsetError("the adapter is not open: use `with to_smolagents(...)`")
        return list(self._tools)

    @property
    def names(self) -> dict[str, str]:
        """``{tool's own name: smolagents name}`` for every tool (after `open`)."""
        return {t.toolset_tool.name: t.name for t in self.tools if isinstance(t, _AdaptedTool)}

    # --- lifecycle ------------------------------------------------------------------

    def __enter__(self) -> list[smolagents.Tool]:
        return self.open()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def open(self) -> list[smolagents.Tool]:
        """Start the loop, enter the toolset and list its tools (once).

        Raises:
            TimeoutError: the toolset did not open and list its tools in
                ``open_timeout`` seconds.
            ToolsetError: the adapter was closed (make a new one), or what opening or
                listing the toolset raised.
        """
        with self._lock:
            if self._closed:
                raise ToolsetError("this smolagents adapter was closed; make a new one")
            if self._tools is not None:
                return list(self._tools)
            stack = contextlib.ExitStack()
            portal = stack.enter_context(
                anyio.from_thread.start_blocking_portal(self._backend, name="toolsets-smolagents")
            )
            listed: concurrent.futures.Future[Sequence[Tool]] = concurrent.futures.Future()
            host = portal.start_task_soon(self._serve, listed)
            try:
                tools = listed.result(timeout=self._open_timeout)
            except concurrent.futures.TimeoutError:
                self._stop(portal, host, stack)
                raise TimeoutError(
                    f"the toolset did not open and list its tools within {self._open_timeout:g} s"
                ) from None
            except BaseException:
                self._stop(portal, host, stack)
                raise
            try:
                names = legal_names([t.name for t in tools], TOOL_NAMES)
                entries = [_entry(t, names[t.name]) for t in tools]
                adapted = [_AdaptedTool(self, e) for e in entries if e is not None]
            except BaseException:  # e.g. a SpecError: a schema's $ref points at nothing
                self._stop(portal, host, stack)
                raise
            self._stack, self._portal, self._host = stack, portal, host
            self._tools = adapted
            return list(adapted)

    async def _serve(self, listed: concurrent.futures.Future[Sequence[Tool]]) -> None:
        """The loop's host task: holds the toolset entered until `close`."""
        self._closing = anyio.Event()
        try:
            async with self.toolset:
                tools = await self.toolset.list_tools(ToolContext(self._invocation))
                listed.set_result(tools)
                await self._closing.wait()
        except BaseException as exc:
            if not listed.done():
                listed.set_exception(exc)
            raise

    def close(self) -> None:
        """Close the toolset and stop the loop; idempotent. A toolset that does not
        close in ``close_timeout`` seconds is cancelled."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            portal, host, stack = self._portal, self._host, self._stack
            self._portal = self._host = self._stack = None
        if portal is None or host is None or stack is None:
            return
        closing = self._closing
        # RuntimeError: the loop stopped already; TimeoutError: it does not answer.
        with contextlib.suppress(RuntimeError, concurrent.futures.TimeoutError):
            if closing is not None:
                portal.start_task_soon(closing.set).result(timeout=self._close_timeout)
        try:
            host.result(timeout=self._close_timeout)
        except concurrent.futures.TimeoutError:
            host.cancel()
        finally:
            self._stop(portal, None, stack)

    def _stop(
        self,
        portal: anyio.from_thread.BlockingPortal,
        host: concurrent.futures.Future[None] | None,
        stack: contextlib.ExitStack,
    ) -> None:
        """Cancel what still runs on the loop and stop it."""
        if host is not None:
            host.cancel()
        with contextlib.suppress(RuntimeError):  # already stopped
            stopping = portal.start_task_soon(portal.stop, True)
            with contextlib.suppress(concurrent.futures.TimeoutError):
                stopping.result(timeout=self._close_timeout)
        stack.close()

    # --- calls ----------------------------------------------------------------------

    def _call(
        self, entry: _Entry, args: tuple[Any, ...], kwargs: dict[str, Any], observed: bool
    ) -> Any:
        """One call of a tool, from smolagents: its output, or its error raised
        (``observed``: the output is shown to the model as the call's observation)."""
        if self._closed:
            raise self._closed_error(entry, "was used after")
        call_args = entry.own_args(args, kwargs)
        ctx = ToolContext(self._invocation, function_call_id=new_id("call-"))
        outcome = self._invoke(entry, call_args, ctx, None, None, False)
        if type(outcome) is Done and outcome.actions is None:  # most calls
            return self._give(entry, observed, outcome.result)

        # smolagents' thread runs no event loop: the pauses are settled here, in the
        # agent's thread (``confirm`` may block on ``input()``), each step done at once
        # (a round blocks on the adapter's loop), so the settling never waits for one.
        async def resume(
            args: dict[str, Any],
            confirmation: ToolConfirmation | None,
            credential: AuthCredential | None,
        ) -> Outcome:
            return self._invoke(entry, args, ctx, confirmation, credential, True)

        settled = _now(settle(outcome, resume=resume, confirm=self._asked, lookup=self._lookup))
        with self._lock:
            keep_state(ctx)
        if isinstance(settled, LongRunning):
            return self._give(entry, observed, settled.interim)
        return self._give(entry, observed, settled.result)

    async def _asked(self, needed: ConfirmationNeeded) -> ToolConfirmation | None:
        """The ``confirm=`` callback's answer (None: there is none)."""
        if self._confirm is None:
            return None
        approved = bool(self._confirm(needed.hint, dict(needed.args)))
        return ToolConfirmation(hint=needed.hint, confirmed=approved)

    async def _lookup(self, needed: CredentialNeeded) -> AuthCredential | None:
        return self._credential(needed.auth_config)

    def _invoke(
        self,
        entry: _Entry,
        args: dict[str, Any],
        ctx: ToolContext,
        confirmation: ToolConfirmation | None,
        credential: AuthCredential | None,
        resumed: bool,
    ) -> Outcome:
        """One run of the call path: here for a fast tool, else on the loop."""
        call = functools.partial(
            invoke,
            entry.tool,
            args,
            ctx,
            default_timeout=self._timeout,
            callbacks=self._callbacks,
            scopes=self._scopes,
            confirmation=confirmation,
            credential=credential,
            resumed=resumed,
        )
        if entry.fast and self._fast_allowed:
            return _now(call())
        portal = self._portal
        if portal is None:
            raise self._closed_error(entry, "was used after")
        seconds = (entry.tool.timeout or self._timeout) + _GRACE
        try:
            future: concurrent.futures.Future[Outcome] = portal.start_task_soon(call)
        except RuntimeError as exc:  # the loop stopped meanwhile
            raise self._closed_error(entry, "was called as") from exc
        try:
            return future.result(timeout=seconds)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise ToolCallError(
                f"the tool {entry.name!r} gave no answer within {seconds:g} s",
                tool_name=entry.name,
            ) from None
        except concurrent.futures.CancelledError as exc:  # cancelled by close()
            raise self._closed_error(entry, "was running when") from exc

    @staticmethod
    def _closed_error(entry: _Entry, when: str) -> ToolCallError:
        return ToolCallError(
            f"the tool {entry.name!r} {when} its smolagents adapter closed; use the tools "
            "inside `with to_smolagents(...)`",
            tool_name=entry.name,
        )

    def _credential(self, config: AuthConfig) -> AuthCredential | None:
        given = self._credentials
        if given is None:
            return None
        if callable(given):
            return credential_answer(given(config), config)
        return given_credential(given, config)

    def _give(self, entry: _Entry, observed: bool, result: JsonValue) -> Any:
        """``result`` as the tool's output, or an error result raised (see `Errors`)."""
        # (A dict first: the cheap test, and every error result is one.)
        if isinstance(result, dict) and is_error_result(result):
            mode = self._errors
            if mode == "raise" or (mode == "auto" and not observed):
                raise SmolagentsToolError(result, tool_name=entry.name)
        return result


def to_smolagents(
    tools: Toolset | Iterable[Tool | Callable[..., Any]],
    *,
    confirm: Confirm | None = None,
    credentials: Credentials | None = None,
    user_id: str = "user",
    session_id: str | None = None,
    app_name: str = "toolsets",
    state: dict[str, Any] | None = None,
    scopes: Iterable[str] = (),
    tool_timeout: float = DEFAULT_TOOL_TIMEOUT,
    open_timeout: float = OPEN_TIMEOUT,
    close_timeout: float = CLOSE_TIMEOUT,
    errors: Errors = "auto",
    backend: Literal["asyncio", "trio"] = "asyncio",
    callbacks: Callbacks | None = None,
) -> SmolagentsAdapter:
    """A toolset (or tools, or plain functions) as smolagents tools::

        with to_smolagents(toolset, confirm=lambda hint, args: input(hint) == "y") as tools:
            ToolCallingAgent(tools=tools, model=model).run("...")

    Args:
        tools: A `Toolset`, or tools and functions (put in a `StaticToolset`).
        confirm: Decides each call that needs the user's approval, ``(hint, args) ->
            bool``; without it such calls are refused (`NEEDS_APPROVAL`).
        credentials: The credentials tools may be given, by security scheme name or as
            a function of the `AuthConfig` (returning None when it has none).
        user_id: The user tools run for (``ctx.invocation.user_id``).
        session_id: The conversation (default: a new id per adapter).
        app_name: The application's name.
        state: The state tools read and write through ``ctx.state`` (a dict the
            adapter updates after each call; default: a new one, `SmolagentsAdapter.state`).
        scopes: The scopes the user holds (see ``Tool.required_scopes``).
        tool_timeout: Seconds a call may take when its tool sets none.
        open_timeout: Seconds the toolset may take to open and list its tools.
        close_timeout: Seconds it may take to close before it is cancelled.
        errors: What an ``{"error": ...}`` result becomes: returned as the output of a
            ToolCallingAgent's call and raised as `SmolagentsToolError` elsewhere
            (``"auto"``), or always ``"raise"``d, or always ``"return"``ed (`Errors`).
        backend: The event loop the tools run on, in the adapter's thread.
        callbacks: toolsets' tool callbacks (a `Callbacks`), run
            on the adapter's event loop around each call.

    Returns:
        The adapter: a context manager whose ``with`` gives the list of smolagents tools.
    """
    return SmolagentsAdapter(
        tools,
        confirm=confirm,
        credentials=credentials,
        user_id=user_id,
        session_id=session_id,
        app_name=app_name,
        state=state,
        scopes=scopes,
        tool_timeout=tool_timeout,
        open_timeout=open_timeout,
        close_timeout=close_timeout,
        errors=errors,
        backend=backend,
        callbacks=callbacks,
    )


# --- in: smolagents tools as a toolset -------------------------------------------------

_INPUT_TYPES = {"image": "string", "audio": "string"}
"""smolagents input types that are not JSON types: a model sends a path or URL."""


def _schema_of_inputs(inputs: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The JSON Schema of a smolagents tool's ``inputs``; ``nullable`` ones are optional
    and take null."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, spec in inputs.items():
        schema = {k: copy.deepcopy(v) for k, v in spec.items() if k not in ("type", "nullable")}
        declared = spec.get("type", "any")
        kinds = [declared] if isinstance(declared, str) else list(declared)
        if "any" not in kinds:
            types = [_INPUT_TYPES.get(kind, kind) for kind in kinds]
            if spec.get("nullable") and "null" not in types:
                types.append("null")
            unique = list(dict.fromkeys(types))
            schema["type"] = unique[0] if len(unique) == 1 else unique
        if not spec.get("nullable"):
            required.append(name)
        properties[name] = schema
    parameters: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        parameters["required"] = required
    parameters["additionalProperties"] = False
    return parameters


class SmolagentsTool(BaseTool):
    """A smolagents tool as a toolsets tool: its ``inputs`` as the parameter schema
    (arguments checked against it before the call), each call run in a worker thread
    (smolagents tools are synchronous). What the tool raises reaches the model as an
    ``{"error": ...}`` result, as smolagents' own agents show it.

    Args:
        tool: The smolagents tool (a ``@tool`` function, a ``Tool`` subclass instance).
        **options: `BaseTool` options (e.g. ``requires_confirmation=True``, ``timeout``).
    """

    def __init__(self, tool: smolagents.Tool, **options: Any) -> None:
        self.smolagents_tool = tool
        """The smolagents tool called."""
        output_schema = getattr(tool, "output_schema", None)
        output_type = getattr(tool, "output_type", None)
        response: dict[str, Any] | None = None
        if isinstance(output_schema, dict):
            response = copy.deepcopy(output_schema)
        elif isinstance(output_type, str) and output_type not in ("any", *_INPUT_TYPES):
            response = {"type": output_type}
        super().__init__(
            tool.name,
            tool.description,
            parameters=_schema_of_inputs(tool.inputs),
            response_schema=response,
            **options,
        )
        self._checker = ArgumentChecker(self.parameters, tool_name=self.name)

    def run(self, args: Mapping[str, Any], ctx: ToolContext) -> Awaitable[JsonValue]:
        """Check ``args``, then call the tool in a worker thread."""
        return self._run(args, ctx)

    async def _run(self, args: Mapping[str, Any], ctx: ToolContext) -> JsonValue:
        invalid = self._checker.result(args)
        if invalid is not None:
            return invalid
        call = functools.partial(self.smolagents_tool, **args)
        try:
            output = await anyio.to_thread.run_sync(call, abandon_on_cancel=True)
        except anyio.get_cancelled_exc_class():
            ctx.cancellation.cancel("the tool call was cancelled")
            raise
        try:
            return to_json_value(output)
        except TypeError as exc:
            raise ToolCallError(
                f"the smolagents tool {self.name!r} returned a value JSON cannot carry: {exc}",
                tool_name=self.name,
            ) from exc


def from_smolagents(tools: Iterable[smolagents.Tool], **options: Any) -> StaticToolset:
    """smolagents tools as a toolset, for toolsets' agent loop or an MCP server.

    Args:
        tools: smolagents tools (``@tool`` functions, ``Tool`` instances).
        **options: `BaseTool` options given to every tool (e.g. ``timeout``).
    """
    return StaticToolset([SmolagentsTool(tool, **options) for tool in tools])
