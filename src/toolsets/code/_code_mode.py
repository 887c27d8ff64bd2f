"""`code_mode`: one tool, ``run_code``, running a short program the model writes that
calls the wrapped toolset's tools, in the `pydantic-monty` sandbox.

Each call the program makes goes through the one call path (`toolsets._invoke.invoke`)
as the ``run_code`` call itself was made: the same default timeout, callbacks and scopes.
What cannot happen inside a program is refused with an error naming what to do instead:
a tool that needs the user's confirmation (call it directly), a credential nobody gave,
a long-running tool.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

import anyio

from toolsets._auth import AuthCredential
from toolsets._consumers import lookup_credential
from toolsets._context import ToolContext
from toolsets._declaration import ToolAnnotations, ToolDeclaration
from toolsets._errors import ToolDefinitionError
from toolsets._ids import new_id
from toolsets._invoke import (
    DEFAULT_TOOL_TIMEOUT,
    NO_CALLBACKS,
    CallPath,
    ConfirmationNeeded,
    CredentialNeeded,
    Done,
    LongRunning,
    invoke,
)
from toolsets._json import JsonValue
from toolsets._results import clip, error_result
from toolsets._tool import BaseTool, Tool
from toolsets._toolset import Toolset
from toolsets._wrappers import WrapperToolset
from toolsets.code._signatures import python_name, python_names, write_stubs

if TYPE_CHECKING:
    from toolsets.code._sandbox import Sandbox

__all__ = ["DEFAULT_DESCRIPTION_BUDGET", "RunCodeTool", "code_mode"]

DEFAULT_DESCRIPTION_BUDGET = 40_000
"""Characters of tool signatures ``run_code``'s description carries by default."""

_TIMEOUT_MARGIN = 10.0
"""Seconds ``run_code``'s own timeout leaves past the program's time limit."""

SEARCH_TOOL = "search_tools"
"""A wrapped tool of this name (`searchable`'s) is called from code like any other, and
a tool it loads is callable in the same program."""

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
    description_budget: int = DEFAULT_DESCRIPTION_BUDGET,
    credentials: Mapping[str, AuthCredential | str] | Callable[..., Any] | None = None,
) -> Toolset:
    """A toolset offering one tool, ``run_code(code)``, that runs a short Python program
    calling ``toolset``'s tools: ``await tools.list_issues(owner="o", repo="r")``.

    The program runs in the `pydantic-monty` sandbox (a Python subset interpreter in
    worker subprocesses: no filesystem, network or environment). Its tool calls go
    through the same call path as direct calls (argument validation, scopes, callbacks,
    timeouts, errors), with the caller's settings. A tool that fails raises in the
    program (``RuntimeError`` with the error result); one that needs the user's
    confirmation is refused (call it directly).

    Args:
        toolset: The tools the program may call.
        namespace: The name the program calls them through.
        timeout: Seconds the whole program may take, its tool calls included.
        max_memory: Bytes of memory the program may use.
        max_tool_calls: Tool calls one program may make.
        max_output: Characters of the result (as JSON), and of the printed output
            (the rest is cut).
        description_budget: Characters of typed signatures in ``run_code``'s
            description; tools past it are listed by name.
        credentials: Credentials for tools that need one (by security scheme name, or a
            function of the tool context and the `AuthConfig`), as the adapters take
            them; a tool needing one not given is refused (call it directly).

    Raises:
        ImportError: pydantic-monty is not installed (naming the line to install it).
        ToolDefinitionError: a limit that is not positive, or a namespace that is not
            a Python identifier (``.field`` names it).
    """
    from toolsets.code._sandbox import Limits, Sandbox

    if not namespace.isidentifier() or python_name(namespace) != namespace:
        raise ToolDefinitionError(
            f"code_mode(): namespace {namespace!r} is not a Python identifier",
            field="namespace",
        )
    given = {
        "timeout": timeout,
        "max_memory": max_memory,
        "max_tool_calls": max_tool_calls,
        "max_output": max_output,
        "description_budget": description_budget,
    }
    for field, value in given.items():
        if not isinstance(value, int | float) or isinstance(value, bool) or value <= 0:
            raise ToolDefinitionError(
                f"code_mode(): {field} must be a positive number, not {value!r}", field=field
            )
    limits = Limits(
        timeout=float(timeout),
        max_memory=int(max_memory),
        max_tool_calls=int(max_tool_calls),
        max_output=int(max_output),
    )
    return _CodeMode(
        toolset,
        sandbox=Sandbox(limits),
        namespace=namespace,
        budget=int(description_budget),
        credentials=credentials,
    )


class _CodeMode(WrapperToolset):
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
        self.sandbox = sandbox
        self.namespace = namespace
        self.credentials = credentials
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
        limits = self.sandbox.limits
        search = ""
        if SEARCH_TOOL in names:
            search = (
                f" More tools are found with `await {ns}.{names[SEARCH_TOOL]}(query=...)`; "
                "a tool it finds can be called in the same program, and its signature is "
                "listed here from the next request on."
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
        try:
            await self.sandbox.shutdown()
        finally:
            await super().shutdown()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            await self.sandbox.shutdown()
        finally:
            await super().__aexit__(exc_type, exc, tb)

    def __repr__(self) -> str:
        return f"code_mode({self.wrapped!r}, namespace={self.namespace!r})"


class RunCodeTool(BaseTool):
    """The ``run_code`` tool of a `code_mode` toolset."""

    def __init__(self, owner: _CodeMode, description: str) -> None:
        super().__init__(
            "run_code",
            description,
            parameters=_PARAMETERS,
            annotations=ToolAnnotations(open_world=True),
            # Past the program's own time limit, so that its clear error is what the
            # model gets, not the caller's default deadline cutting it short.
            timeout=owner.sandbox.limits.timeout + _TIMEOUT_MARGIN,
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

        await relist()

        async def knows(name: str) -> bool:
            if name in found:
                return True
            if SEARCH_TOOL in (tool.name for tool in listed[-1]):
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

        result: JsonValue = await owner.sandbox.run(
            code,
            namespace=owner.namespace,
            names=knows,
            call=call,
            suggest=lambda name: _suggest(name, list(found)),
        )
        return result


async def _answer(
    owner: _CodeMode,
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
    outcome = await invoke(
        tool,
        plain,
        ctx,
        default_timeout=path.default_timeout,
        callbacks=path.callbacks,
        scopes=path.scopes,
    )
    if isinstance(outcome, CredentialNeeded) and outcome.actions is None:
        credential = await lookup_credential(owner.credentials, outcome.auth_config, ctx)
        if credential is not None:
            outcome = await invoke(
                tool,
                outcome.args,
                ctx,
                default_timeout=path.default_timeout,
                callbacks=path.callbacks,
                scopes=path.scopes,
                credential=credential,
                resumed=True,
            )
    actions = outcome.actions
    if actions is not None:  # what the tool wrote is kept with run_code's own writes
        if actions.state_delta:
            outer.state.update(actions.state_delta)
        if actions.artifact_delta:
            outer.actions.artifact_delta.update(actions.artifact_delta)
    if isinstance(outcome, ConfirmationNeeded):
        return _raise(
            PermissionError,
            f"{called} needs the user's confirmation, which a program cannot ask for: "
            f"call the tool {tool.name!r} directly, not from run_code.",
        )
    if isinstance(outcome, CredentialNeeded):
        return _raise(
            PermissionError,
            f"{called} needs a credential ({outcome.auth_config.scheme_name}) that was "
            f"not given: call the tool {tool.name!r} directly, not from run_code.",
        )
    if isinstance(outcome, LongRunning):
        return _raise(
            RuntimeError,
            f"{called} started work whose result arrives later, which a program cannot "
            f"wait for: call the tool {tool.name!r} directly, not from run_code.",
        )
    assert isinstance(outcome, Done)
    result = outcome.result
    if isinstance(result, Mapping) and "error" in result:
        text = json.dumps(result, ensure_ascii=False, default=str)
        return _raise(RuntimeError, f"{called} failed: {clip(text, 2000)}")
    return {"return_value": result}


def _suggest(name: str, names: Sequence[str]) -> str:
    close = difflib.get_close_matches(name, names, n=3)
    return f" Did you mean {', '.join(close)}?" if close else ""


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
