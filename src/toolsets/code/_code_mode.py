"""`code_mode`: one tool, ``run_code``, running a short program the model writes that
calls the wrapped toolset's tools, in the `pydantic-monty` sandbox.

Each call the program makes goes through the one call path (`toolsets._invoke.invoke`)
as the ``run_code`` call itself was made: the same default timeout, callbacks and scopes.
What cannot happen inside a program is refused with an error naming what to do instead:
a tool that needs the user's confirmation (call it directly), a credential nobody gave,
a long-running tool (refused before it runs). Whoever watches the ``run_code`` call sees
each of them (`toolsets._nested`): a served ``run_code`` has an audit record per call.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import json
import math
import types
from collections.abc import Awaitable, Callable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

import anyio

from toolsets._auth import AuthCredential
from toolsets._consumers import lookup_credential
from toolsets._context import EventActions, ToolContext
from toolsets._declaration import ToolAnnotations, ToolDeclaration
from toolsets._errors import ToolDefinitionError
from toolsets._ids import new_id
from toolsets._invoke import (
    DEFAULT_TOOL_TIMEOUT,
    NO_CALLBACKS,
    CallPath,
    ConfirmationNeeded,
    CredentialNeeded,
    LongRunning,
    Outcome,
)
from toolsets._json import JsonValue
from toolsets._nested import nested_call
from toolsets._results import clip, error_result
from toolsets._settle import caller, settle
from toolsets._tool import BaseTool, Tool
from toolsets._toolset import Toolset
from toolsets._wrappers import WrapperToolset
from toolsets.code._limits import Limits
from toolsets.code._signatures import python_name, python_names, write_stubs
from toolsets.search._searchable import SEARCH_TOOL_NAME

if TYPE_CHECKING:
    from toolsets.code._sandbox import Sandbox

__all__ = ["DEFAULT_DESCRIPTION_BUDGET", "CodeModeToolset", "RunCodeTool", "code_mode"]

DEFAULT_DESCRIPTION_BUDGET = 40_000
"""Characters of tool signatures ``run_code``'s description carries by default."""

_TIMEOUT_MARGIN = 10.0
"""Seconds ``run_code``'s own timeout leaves past the program's time limit."""

_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "code": {
            "type": "string",
            "description": "The Python program. Its last expression (or a top-level "
            "`return`) is the result.",
        }
    },
    "required": ["code"],
    "additionalProperties": False,
}


def code_mode(
    toolset: Toolset,
    *,
    namespace: str = "tools",
    timeout: float = 30.0,
    max_memory: int = 100 * 1024 * 1024,
    max_tool_calls: int = 50,
    max_output: int = 20_000,
    max_workers: int | None = None,
    description_budget: int = DEFAULT_DESCRIPTION_BUDGET,
    credentials: Mapping[str, AuthCredential | str] | Callable[..., Any] | None = None,
) -> CodeModeToolset:
    """A toolset offering one tool, ``run_code(code)``, that runs a short Python program
    calling ``toolset``'s tools: ``await tools.list_issues(owner="o", repo="r")``.

    The program runs in the `pydantic-monty` sandbox (a Python subset interpreter in
    worker subprocesses: no filesystem, network or environment). Its tool calls go
    through the same call path as direct calls (argument validation, scopes, callbacks,
    timeouts, errors), with the caller's settings. A tool that fails raises in the
    program (``RuntimeError`` with the error result); one that needs the user's
    confirmation is refused (call it directly), and so is a long-running tool, before
    it runs. A tool that says while running that its result arrives later gives the
    program what it returned meanwhile.

    Args:
        toolset: The tools the program may call.
        namespace: The name the program calls them through.
        timeout: Seconds the whole program may take, its tool calls included; and,
            apart from that, seconds a program waits for a free sandbox worker.
        max_memory: Bytes of memory the program may use.
        max_tool_calls: Tool calls one program may make.
        max_output: Characters of the result (as JSON), and of the printed output
            (the rest is cut).
        max_workers: Programs run at once, each in a sandbox worker subprocess (None:
            the CPU count), from every thread and event loop of the process
            together. Others wait; one that finds no worker free within
            ``timeout`` is not run (an error result with ``"limit": "max_workers"``).
        description_budget: Characters of typed signatures in ``run_code``'s
            description; tools past it are listed by name.
        credentials: Credentials for tools that need one (by security scheme name, or a
            function of the tool context and the `AuthConfig`), as the adapters take
            them, before the call or when the tool asks for one while running; a tool
            needing one not given is refused (call it directly).

    Raises:
        ImportError: pydantic-monty is not installed (naming the line to install it).
        ToolDefinitionError: a limit that is not positive (or not an integer, but
            ``timeout``), or a namespace that is not a Python identifier (``.field``
            names it).
    """
    from toolsets.code._sandbox import Sandbox

    if not namespace.isidentifier() or python_name(namespace) != namespace:
        raise ToolDefinitionError(
            f"code_mode(): namespace {namespace!r} is not a Python identifier",
            field="namespace",
        )
    _positive("timeout", timeout, int | float)
    counts = {
        "max_memory": max_memory,
        "max_tool_calls": max_tool_calls,
        "max_output": max_output,
        "description_budget": description_budget,
    }
    if max_workers is not None:
        counts["max_workers"] = max_workers
    for field, value in counts.items():
        _positive(field, value, int)
    limits = Limits(
        timeout=float(timeout),
        max_memory=max_memory,
        max_tool_calls=max_tool_calls,
        max_output=max_output,
        max_workers=max_workers,
    )
    return CodeModeToolset(
        toolset,
        sandbox=Sandbox(limits),
        namespace=namespace,
        budget=description_budget,
        credentials=credentials,
    )


def _positive(field: str, value: object, kind: type | types.UnionType) -> None:
    """Refuse ``value`` unless it is a finite ``kind`` above 0 (a bool is no number here).

    Raises:
        ToolDefinitionError: naming ``field``.
    """
    if (
        not isinstance(value, kind)
        or isinstance(value, bool)
        or not math.isfinite(value)  # type: ignore[arg-type]
        or value <= 0  # type: ignore[operator]
    ):
        what = "an integer" if kind is int else "a number"
        raise ToolDefinitionError(
            f"code_mode(): {field} must be {what} above 0, not {value!r}", field=field
        )


class CodeModeToolset(WrapperToolset):
    """What `code_mode` returns: a toolset offering one tool, ``run_code``, over the
    tools of the toolset it wraps (``wrapped``)."""

    def __init__(
        self,
        toolset: Toolset,
        *,
        sandbox: Sandbox,
        namespace: str,
        budget: int,
        credentials: Mapping[str, AuthCredential | str] | Callable[..., Any] | None,
    ) -> None:
        super().__init__(toolset)
        self.namespace: str = namespace
        """The name programs call the tools through (``tools``)."""
        self.limits: Limits = sandbox.limits
        """What one program may use."""
        self.credentials = credentials
        """The credentials given for tools that need one."""
        self._sandbox = sandbox
        self._budget = budget
        self._last: tuple[tuple[tuple[str, int], ...], RunCodeTool] | None = None

    async def list_tools(self, ctx: ToolContext | None = None) -> Sequence[Tool]:
        tools = await self.wrapped.list_tools(ctx)
        key = tuple((tool.name, id(tool)) for tool in tools)
        if self._last is not None and self._last[0] == key:
            return (self._last[1],)
        made = RunCodeTool(self, self._describe(tools))
        self._last = (key, made)
        return (made,)

    def _describe(self, tools: Sequence[Tool]) -> str:
        names = python_names(tool.name for tool in tools)
        stubs = write_stubs(
            ((names[tool.name], tool.declaration) for tool in tools), budget=self._budget
        )
        ns = self.namespace
        limits = self.limits
        search = ""
        if SEARCH_TOOL_NAME in names:
            search = (
                f" More tools are found with `await {ns}.{names[SEARCH_TOOL_NAME]}"
                "(query=...)`; a tool it finds can be called in the same program (also "
                f"by the name it gives: `getattr({ns}, name)`), and its signature is listed "
                "here from the next request on."
            )
        return (
            f"Run a short Python program that calls the tools below as async functions of "
            f"`{ns}`, with keyword arguments: `r = await {ns}.name(arg=...)`. Use it to "
            "make several calls in one step, loop, filter and combine their results. "
            "The program's last expression (or a top-level `return`) is the result; "
            "print() output is returned too. Tools return JSON values (dicts, lists): "
            "index them (`r['name']`). A tool that fails raises RuntimeError "
            "with its error; run calls at once with asyncio.gather. The sandbox is a "
            "Python subset: no files, network or environment; modules such as json, "
            "re, math, datetime and asyncio import. "
            f"Limits: {limits.timeout:g} s, {limits.max_tool_calls} tool calls, "
            f"{limits.max_output} characters of result.{search}\n\n"
            "```python\nfrom typing import Any, Literal, NotRequired, TypedDict\n\n"
            f"{stubs.text}```"
        )

    async def shutdown(self) -> None:
        """Stop the sandbox's workers, and shut the wrapped toolset down."""
        await self._stop_sandbox_then(super().shutdown)

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._stop_sandbox_then(functools.partial(super().__aexit__, exc_type, exc, tb))

    async def _stop_sandbox_then(self, then: Callable[[], Awaitable[None]]) -> None:
        try:
            await self._sandbox.shutdown()
        finally:
            await then()

    def __repr__(self) -> str:
        return f"code_mode({self.wrapped!r}, namespace={self.namespace!r})"


class RunCodeTool(BaseTool):
    """The ``run_code`` tool of a `code_mode` toolset."""

    def __init__(self, owner: CodeModeToolset, description: str) -> None:
        super().__init__(
            "run_code",
            description,
            parameters=_PARAMETERS,
            annotations=ToolAnnotations(open_world=True),
            # Past the program's own time limit and its wait for a worker, so that
            # their clear errors are what the model gets, not the caller's default
            # deadline cutting it short.
            timeout=2 * owner.limits.timeout + _TIMEOUT_MARGIN,
        )
        self._owner = owner

    def declaration(self) -> ToolDeclaration:
        declaration = super().declaration()
        assert declaration is not None
        return declaration

    async def run(self, args: Mapping[str, Any], ctx: ToolContext) -> JsonValue:
        code = args.get("code")
        if not isinstance(code, str) or not code.strip():
            return error_result("Send the program as `code`, a non-empty string.")
        owner = self._owner
        path = ctx.call_path
        if not isinstance(path, CallPath):  # run outside the call path
            path = CallPath(DEFAULT_TOOL_TIMEOUT, NO_CALLBACKS, ctx.scopes)
        # The program's calls see what this call wrote to the state (and each other's
        # writes), and are cancelled with it.
        inner = dataclasses.replace(ctx.invocation, state=ctx.state, cancellation=ctx.cancellation)
        found: dict[str, Tool] = {}
        listed: list[Sequence[Tool]] = []
        # Calls the program starts together (asyncio.gather) run together, as the agent
        # loop runs a turn's calls: those of tools that are not concurrency-safe one at
        # a time.
        one_at_a_time = anyio.Lock()

        async def relist() -> None:
            tools = await owner.wrapped.list_tools(ctx)
            listed[:] = [tools]
            names = python_names(tool.name for tool in tools)
            found.clear()
            found.update({names[tool.name]: tool for tool in tools})
            # A tool is found by its own name too (as a search names it), unless that
            # is another's Python name: ``getattr(tools, "send-email")``.
            for tool in tools:
                found.setdefault(tool.name, tool)

        await relist()

        async def knows(name: str) -> bool:
            if name in found:
                return True
            if SEARCH_TOOL_NAME in (tool.name for tool in listed[-1]):
                await relist()  # a search may have loaded it meanwhile
            return name in found

        async def call(name: str, given: dict[str, Any]) -> dict[str, Any]:
            tool = found.get(name)
            if tool is None:  # listed when the program named it, no longer now
                return _raise(AttributeError, f"{owner.namespace} has no tool {name!r} any more.")
            nested = ToolContext(
                inner, function_call_id=f"{ctx.function_call_id or 'code'}.{new_id()}"
            )
            if tool.is_concurrency_safe:
                return await _answer(owner, tool, name, given, nested, path, ctx)
            async with one_at_a_time:
                return await _answer(owner, tool, name, given, nested, path, ctx)

        result: JsonValue = await owner._sandbox.run(
            code,
            namespace=owner.namespace,
            names=knows,
            call=call,
            suggest=lambda name: _suggest(name, found),
        )
        return result


async def _answer(
    owner: CodeModeToolset,
    tool: Tool,
    name: str,
    given: dict[str, Any],
    ctx: ToolContext,
    path: CallPath,
    outer: ToolContext,
) -> dict[str, Any]:
    """One call from the program through the call path, as the sandbox answers it."""
    called = f"{owner.namespace}.{name}"
    try:
        plain = _plain(given)
    except TypeError as error:
        return _raise(TypeError, f"{called}(): {error}")
    if tool.is_long_running:  # refused before it runs: a program cannot wait for it
        return _raise(
            RuntimeError,
            f"{called} starts work whose result arrives later, which a program cannot "
            f"wait for, so it was not called: call the tool {tool.name!r} directly, not "
            "from run_code.",
        )

    async def lookup(needed: CredentialNeeded) -> AuthCredential | CredentialNeeded:
        # Asked before the call or while it ran: the one given is the answer, and the
        # call runs (again) with it, as the agent loop resumes it; none, the pause is
        # the program's answer.
        found = await lookup_credential(owner.credentials, needed.auth_config, ctx)
        return needed if found is None else found

    again = caller(
        tool,
        ctx,
        default_timeout=path.default_timeout,
        callbacks=path.callbacks,
        scopes=path.scopes,
    )
    with nested_call(tool, ctx) as seen:  # the outer call's caller may watch (audit) it
        seen.arguments = frozenset(plain)
        first = await again(plain, None, None, resumed=False)
        outcome: Outcome = await settle(first, resume=again, confirm=_unasked, lookup=lookup)
        seen.outcome = outcome
    _keep(ctx.actions_set, outer)
    # Asked before the call, the tool did not run; asked while running, it says so (a
    # tool asking then runs again, with the answer, when called directly).
    ran = " (it asked while running)" if outcome.actions is not None else ""
    if isinstance(outcome, ConfirmationNeeded):
        return _raise(
            PermissionError,
            f"{called} needs the user's confirmation{ran}, which a program cannot ask "
            f"for: call the tool {tool.name!r} directly, not from run_code.",
        )
    if isinstance(outcome, CredentialNeeded):
        return _raise(
            PermissionError,
            f"{called} needs a credential ({outcome.auth_config.scheme_name}) that was "
            f"not given{ran}: call the tool {tool.name!r} directly, not from run_code.",
        )
    # A tool that said while running that its result arrives later ran: the program
    # gets what it returned meanwhile (a status, a job id), never a call to repeat.
    result = outcome.interim if isinstance(outcome, LongRunning) else outcome.result
    if isinstance(result, Mapping) and "error" in result:
        text = json.dumps(result, ensure_ascii=False, default=str)
        return _raise(RuntimeError, f"{called} failed: {clip(text, 2000)}")
    return {"return_value": result}


async def _unasked(needed: ConfirmationNeeded) -> ConfirmationNeeded:
    """A program cannot ask the user: the pause is its answer."""
    return needed


def _keep(actions: EventActions | None, outer: ToolContext) -> None:
    """Keep what a called tool wrote with ``run_code``'s own writes."""
    if actions is None:
        return
    if actions.state_delta:
        outer.state.update(actions.state_delta)
    if actions.artifact_delta:
        outer.actions.artifact_delta.update(actions.artifact_delta)


def _suggest(name: str, found: Mapping[str, Tool]) -> str:
    """The tools whose names are close to ``name``, each by its Python name."""
    own: dict[int, str] = {}
    for each, tool in found.items():  # a tool's Python name comes first
        own.setdefault(id(tool), each)
    close = difflib.get_close_matches(name, list(found), n=6)
    shown = list(dict.fromkeys(own[id(found[each])] for each in close))[:3]
    return f" Did you mean {', '.join(shown)}?" if shown else ""


def _raise(kind: type[Exception], message: str) -> dict[str, Any]:
    return {"exception": kind(message)}


def _plain(value: Any, where: str = "") -> Any:
    """Arguments from the sandbox as JSON values (tuples as lists).

    Raises:
        TypeError: a value JSON has no form for (a set, bytes, a date, ...), named.
    """
    if value is None or isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, Mapping):
        return {str(k): _plain(v, f"{where}.{k}" if where else str(k)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v, f"{where}.{i}") for i, v in enumerate(value)]
    raise TypeError(
        f"the argument {where or 'given'} is a {type(value).__name__}; pass JSON values "
        "(str, int, float, bool, None, lists and dicts), e.g. a date as an ISO string"
    )
