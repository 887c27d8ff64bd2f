"""OpenAI Agents SDK: toolsets' tools as openai-agents function tools, and theirs as a
toolset.

Needs ``pip install 'toolsets-ai[openai-agents]'``.

Out: ``await to_openai_agents(toolset)`` lists the toolset's tools as ``agents.FunctionTool``
objects for an ``Agent(tools=...)``. Every call goes through toolsets' one call path:

- the tool's JSON Schema is the ``params_json_schema`` (`tool_schema` is the one place it
  is chosen: OpenAI's strict mode wherever the schema allows it, with the ``null`` a
  model sends for an optional argument dropped on the way back; else non-strict), its
  name made legal for OpenAI
  (``^[A-Za-z0-9_-]{1,64}$``);
- the model's arguments text is parsed and checked: text that is not a JSON object, and
  arguments that do not fit the schema, come back to the model as an ``{"error": ...}``
  result (with ``fields`` naming each wrong argument), so it can fix its call; so do an
  API's 4xx and an MCP tool's ``isError``. Results are JSON text (images as image
  outputs);
- a tool's ``requires_confirmation`` is its ``needs_approval``: the run stops with the
  call in ``result.interruptions``; ``state = result.to_state()``, then
  ``state.approve(item)`` runs the call once when the run resumes
  (``Runner.run(agent, state)``), ``state.reject(item)`` never runs it. A tool that asks
  for confirmation *while running* (``ctx.request_confirmation``) has no equivalent in
  openai-agents, which decides before the call: the model is told the call needs the
  user's approval and to call again with the same arguments, and that call then asks
  through ``needs_approval`` like any other. (openai-agents also asks the user about a
  call whose arguments text is not a JSON object, since no approval policy can read it;
  approved, the model is told what is wrong with it);
- a call that needs a credential gets it from ``credentials=``; failing that, it is
  refused with an error result naming the missing credential. It is never sent without;
- the call's context (`ToolContext`) is made from openai-agents' tool context: its
  ``tool_call_id`` is the function call id, the agent's name the agent, the run config's
  ``group_id`` (the conversation, in openai-agents' tracing) the session; the rest comes
  from ``invocation=`` (an `Invocation`, or a function of openai-agents' tool context
  returning one, e.g. reading the user from your ``Runner.run(context=...)`` object). A
  tool's state writes (but ``temp:`` keys, which live for the call only) go into the
  invocation's ``state`` when it is a mutable mapping (a dict you keep), else nowhere:
  openai-agents has no session state. A write re-lists the tools in that invocation
  (see `to_openai_agents`: one list per session). Neither has it
  later results nor agent transfers: a long-running tool's interim result is its result,
  and ``transfer_to_agent`` / ``escalate`` / ``skip_summarization`` are not acted on
  (use openai-agents' handoffs and ``tool_use_behavior``).

Lifecycle: ``Agent.tools`` is a static list, so the tools are listed once, by
``to_openai_agents``, and call the toolset they were listed from, which must stay open
while they are used: ``async with toolset:`` around the runs (a toolset opens lazily, so
one never entered is opened by the listing and closed by its ``shutdown``). When the
toolset's tools may have changed, list again and run ``agent.clone(tools=...)``.

openai-agents runs on asyncio only (``Runner.run`` makes asyncio tasks, and fails on trio
with "no running event loop"); the tools' ``on_invoke_tool`` itself runs on trio too.

In: ``from_openai_agents(tools)`` makes openai-agents function tools (``@function_tool``
functions, any ``FunctionTool``) a toolsets `Toolset`, for toolsets' agent loop or to
serve over MCP. Their ``needs_approval`` asks for confirmation through toolsets.
"""

from __future__ import annotations

try:
    from agents import FunctionTool as AgentsFunctionTool
    from agents import RunContextWrapper, ToolOutputImage, ToolOutputText
    from agents.tool_context import ToolContext as AgentsToolContext
except ImportError as exc:  # pragma: no cover - exercised in a subprocess
    from toolsets._install import missing_extra

    raise missing_extra(__name__, "openai-agents", exc) from exc

import functools
import inspect
import json
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import anyio
import anyio.to_thread
import sniffio

from toolsets._auth import AuthConfig, AuthCredential
from toolsets._consumers import CallsTools, check_credentials, lookup_credential, toolset_of
from toolsets._context import Invocation, ToolConfirmation, ToolContext
from toolsets._declaration import ToolDeclaration
from toolsets._errors import ToolDefinitionError
from toolsets._ids import new_id
from toolsets._invoke import (
    DEFAULT_TOOL_TIMEOUT,
    Callbacks,
    ConfirmationNeeded,
    Done,
    Outcome,
    parse_arguments,
)
from toolsets._json import JsonValue, to_json_value
from toolsets._results import error_result
from toolsets._settle import MAX_PAUSES, keep_state
from toolsets._tool import BaseTool, Tool
from toolsets._toolset import StaticToolset, Toolset
from toolsets._validation import ArgumentChecker
from toolsets.adapters._shared import Media, json_text, media_blocks, with_ids
from toolsets.schema import ToolNameMap, openai_parameters, openai_strict_parameters

__all__ = [
    "MAX_PAUSES",
    "Credentials",
    "InvocationFor",
    "OpenAIAgentsTool",
    "ToolSchema",
    "default_invocation",
    "from_openai_agents",
    "to_openai_agents",
    "tool_schema",
]

_REMEMBERED = 256
"""Calls remembered as having asked for confirmation while running (oldest forgotten)."""

Credentials: TypeAlias = (
    Mapping[str, AuthCredential | str]
    | Callable[
        ["AgentsToolContext[Any]", AuthConfig],
        "AuthCredential | Awaitable[AuthCredential | None] | None",
    ]
)
"""Credentials by security scheme name (a string is the key or token itself), or a
function (sync or async) of openai-agents' tool context (whose ``.context`` is your run
context object, e.g. to find the user's token) and the `AuthConfig` — the framework's
context first, as in the pydantic-ai adapter — returning one, or None when it has none."""

InvocationFor: TypeAlias = Callable[["AgentsToolContext[Any]"], Invocation]
"""Makes the `Invocation` of one call from openai-agents' tool context."""


# -- the schema: one place ------------------------------------------------------------


def _unchanged(args: dict[str, Any]) -> dict[str, Any]:
    return args


@dataclass(frozen=True, kw_only=True)
class ToolSchema:
    """The parameter schema openai-agents is given for one tool, and the way back."""

    parameters: dict[str, Any]
    """The ``params_json_schema``."""
    strict: bool
    """Whether it is OpenAI strict mode (``strict_json_schema``)."""
    restore: Callable[[dict[str, Any]], dict[str, Any]] = _unchanged
    """The model's arguments (in ``parameters``' form) as the tool's own arguments."""


def tool_schema(declaration: ToolDeclaration, *, strict: bool = True) -> ToolSchema:
    """The schema openai-agents is given for ``declaration``: the one place it is chosen.

    With ``strict`` (openai-agents' own default), OpenAI's strict mode wherever the schema
    allows it (`toolsets.schema.openai_strict_parameters`): every property required, the
    optional ones nullable, and the ``null`` a model then sends for an optional argument
    dropped on the way back, so the tool sees it absent. A schema strict mode cannot
    express without refusing what the tool accepts (free-form objects, tuples...) gets
    the plain OpenAI dialect (`openai_parameters`) with ``strict_json_schema=False``, and
    so does every tool when ``strict`` is False.

    Raises:
        SpecError: the parameter schema has a broken local ``$ref``.
    """
    source = f"tool:{declaration.name}"
    if strict:
        made = openai_strict_parameters(declaration.parameters, source=source)
        if made is not None:
            restore = made.restore if made.changes_arguments else _unchanged
            return ToolSchema(parameters=made.schema, strict=True, restore=restore)
    return ToolSchema(
        parameters=openai_parameters(declaration.parameters, source=source), strict=False
    )


# -- out: toolsets' tools in openai-agents ----------------------------------------------


def default_invocation(run: AgentsToolContext[Any], base: Invocation) -> Invocation:
    """``base`` with the agent that calls (``run.agent``) and, when the run config has a
    ``group_id``, that as the session."""
    agent, config = run.agent, run.run_config
    return with_ids(
        base,
        agent_name=None if agent is None else agent.name,
        session_id=None if config is None else config.group_id,
    )


def _output(result: JsonValue) -> Any:
    """What openai-agents gives the model for ``result``: text as is, an MCP tool's
    images as image outputs (`media_blocks`; its audio, which openai-agents has no
    output for, as its block's JSON text), anything else as JSON text."""
    blocks = media_blocks(result)
    if blocks is None:
        return json_text(result)
    return [_block(block) for block in blocks]


def _block(block: Media | str | JsonValue) -> ToolOutputText | ToolOutputImage:
    if isinstance(block, Media):
        if block.kind == "image":
            return ToolOutputImage(image_url=block.data_url)
        return ToolOutputText(text=json_text(block.block))
    return ToolOutputText(text=json_text(block))


def _key(name: str, args: Mapping[str, Any]) -> str:
    return f"{name}\0{json.dumps(args, sort_keys=True, default=str)}"


@dataclass(kw_only=True)
class _Bridge(CallsTools):
    """What every tool of one `to_openai_agents` shares: the options, and the calls that
    asked for confirmation while running."""

    invocation: Invocation | InvocationFor
    credentials: Credentials | None
    default_timeout: float
    callbacks: Callbacks
    asked: dict[str, None] = field(default_factory=dict)
    relist: Callable[[Invocation], Awaitable[None]] | None = None
    """Lists the tools again, in the invocation a call ran in, into the list
    `to_openai_agents` returned (set by it)."""

    def context(self, run: AgentsToolContext[Any]) -> ToolContext:
        given = self.invocation
        invocation = given(run) if callable(given) else default_invocation(run, given)
        return ToolContext(invocation, function_call_id=run.tool_call_id)

    async def credential(
        self, config: AuthConfig, run: AgentsToolContext[Any]
    ) -> AuthCredential | None:
        return await lookup_credential(self.credentials, config, run)

    def remember(self, key: str) -> None:
        self.asked[key] = None
        if len(self.asked) > _REMEMBERED:
            del self.asked[next(iter(self.asked))]


_CONFIRMED = ToolConfirmation(confirmed=True)


def _approved(run: AgentsToolContext[Any]) -> bool:
    """Whether the user approved this call through openai-agents (``state.approve``)."""
    return run.is_tool_approved(run.tool_name, run.tool_call_id) is True


class _Call:
    """One tool's ``on_invoke_tool`` and ``needs_approval``."""

    def __init__(self, tool: Tool, schema: ToolSchema, bridge: _Bridge) -> None:
        self._tool = tool
        self._schema = schema
        self._bridge = bridge

    async def needs_approval(
        self, run: RunContextWrapper[Any], params: dict[str, Any], call_id: str
    ) -> bool:
        """Whether the user must approve this call: the tool says so, or it asked while
        running when called with these arguments before."""
        args = self._schema.restore(params)
        if self._bridge.asked and _key(self._tool.name, args) in self._bridge.asked:
            return True
        return self._tool.requires_confirmation(args)

    async def __call__(self, run: AgentsToolContext[Any], text: str) -> Any:
        args, problem = parse_arguments(text)
        if problem is not None:
            return _output(error_result(problem))
        tool, bridge = self._tool, self._bridge
        args = self._schema.restore(args)
        ctx = bridge.context(run)
        confirmation: ToolConfirmation | None = None
        if bridge.asked:
            key = _key(tool.name, args)
            if key in bridge.asked and _approved(run):
                # It asked while running when called before; the user has now approved.
                del bridge.asked[key]
                confirmation = _CONFIRMED
        first = await bridge.invoke(tool, args, ctx, confirmation=confirmation)
        if type(first) is Done and first.actions is None:  # most calls: nothing to settle
            return _output(first.result)
        return _output(await self._settled(run, args, ctx, first, confirmation))

    async def _settled(
        self,
        run: AgentsToolContext[Any],
        args: dict[str, Any],
        ctx: ToolContext,
        first: Outcome,
        confirmation: ToolConfirmation | None,
    ) -> JsonValue:
        """The result of a call that paused or acted, once settled (`settle`), its
        lasting state writes kept."""
        bridge, asked = self._bridge, confirmation is not None

        async def confirm(needed: ConfirmationNeeded) -> ToolConfirmation | Done:
            # openai-agents runs a call that needed approval only once approved; one
            # it did not ask about (asked while running) is not.
            nonlocal asked
            if asked or not _approved(run):
                return Done(result=self._needs_approval(needed, args), args=needed.args)
            asked = True
            return _CONFIRMED

        outcome = await bridge.settle(
            self._tool,
            first,
            ctx,
            confirm=confirm,
            lookup=lambda needed: bridge.credential(needed.auth_config, run),
            confirmation=confirmation,
        )
        if keep_state(ctx) and bridge.relist is not None:
            # The state may change what is listed (a `searchable` search loads tools):
            # openai-agents reads the agent's tool list each turn, so it is updated,
            # listed in the invocation (and state) this call ran in.
            await bridge.relist(ctx.invocation)
        return outcome.result if isinstance(outcome, Done) else outcome.interim

    def _needs_approval(self, outcome: ConfirmationNeeded, args: Mapping[str, Any]) -> JsonValue:
        # Remembered as the model sent them (before any ``before_tool`` rewrote them):
        # that is what ``needs_approval`` is given when the model calls again.
        self._bridge.remember(_key(self._tool.name, args))
        return error_result(
            f"This call needs the user's approval ({outcome.hint}); it did not run. "
            "Call the tool again with the same arguments to ask the user.",
            approval_needed=True,
        )


async def to_openai_agents(
    toolset: Toolset | Iterable[Tool | Callable[..., Any]],
    *,
    invocation: Invocation | InvocationFor | None = None,
    credentials: Credentials | None = None,
    tool_timeout: float = DEFAULT_TOOL_TIMEOUT,
    callbacks: Callbacks | None = None,
    strict: bool = True,
) -> list[AgentsFunctionTool]:
    """The toolset's tools, listed now, as openai-agents function tools.

    Args:
        toolset: A `Toolset`, or tools and plain functions. Keep a toolset open while
            the tools are used (``async with toolset:``).
        invocation: Who calls (app, user, session, scopes, state, services): an
            `Invocation`, completed per call by `default_invocation`, or a function of
            openai-agents' tool context returning the call's `Invocation`. The tools are
            first listed with the given `Invocation` (or a new one), then again, after
            a call that wrote state, in the invocation that call ran in.
        credentials: Credentials by security scheme name, or a function returning one;
            a call whose credential it lacks is refused (never sent without it).
        tool_timeout: Seconds a call may take when its tool sets no ``timeout``.
        callbacks: toolsets' tool callbacks (a `Callbacks`).
        strict: OpenAI's strict mode for every tool whose schema allows it (see
            `tool_schema`); False sends every schema non-strict.

    Returns:
        One ``agents.FunctionTool`` per tool the model may call (passive tools are left
        out), named as OpenAI allows. A call that writes state updates this list in
        place, listing in that call's invocation (openai-agents reads ``Agent.tools``
        each turn): with `searchable`, the tools a search loads are the agent's from
        its next turn (a tool not loaded is unknown to openai-agents until a search
        loads it). The list is therefore one session's, as is the state it follows (the
        `Invocation`'s ``state``: with none given, a new one's, shared by every run
        of the list): to serve several users or sessions at once, make one list per
        session, each with that session's state (an `Invocation` or a function giving
        it), and an ``agent.clone(tools=...)`` per session. One list shared by
        sessions that load tools shows the tools of the last one that wrote state.

    Raises:
        SpecError: a tool's parameter schema has a broken local ``$ref``.
    """
    check_credentials(credentials)
    toolset = toolset_of(toolset)
    base = invocation if isinstance(invocation, Invocation) else Invocation()
    bridge = _Bridge(
        invocation=base if invocation is None else invocation,
        credentials=credentials,
        default_timeout=tool_timeout,
        callbacks=callbacks if callbacks is not None else Callbacks(),
    )
    out = await _function_tools(toolset, base, bridge, strict)

    async def relist(invocation: Invocation) -> None:
        out[:] = await _function_tools(toolset, invocation, bridge, strict)

    bridge.relist = relist
    return out


async def _function_tools(
    toolset: Toolset, base: Invocation, bridge: _Bridge, strict: bool
) -> list[AgentsFunctionTool]:
    declared: list[tuple[Tool, ToolDeclaration]] = []
    for tool in await toolset.list_tools(ToolContext(base)):
        declaration = tool.declaration()
        if declaration is not None:
            declared.append((tool, declaration))
    names = ToolNameMap.build(declaration.name for _, declaration in declared)
    out: list[AgentsFunctionTool] = []
    for tool, declaration in declared:
        schema = tool_schema(declaration, strict=strict)
        call = _Call(tool, schema, bridge)
        out.append(
            AgentsFunctionTool(
                name=names.to_provider(declaration.name),
                description=declaration.description,
                params_json_schema=schema.parameters,
                on_invoke_tool=call,
                strict_json_schema=schema.strict,
                needs_approval=call.needs_approval,
            )
        )
    return out


# -- in: openai-agents' tools as toolsets' -----------------------------------------------


def _on_asyncio() -> bool:
    return sniffio.current_async_library() == "asyncio"


class OpenAIAgentsTool(BaseTool):
    """An openai-agents function tool as a toolsets `Tool`; made by `from_openai_agents`.

    Its parameters are the tool's ``params_json_schema``; arguments are checked against
    it first (an invalid-arguments result names the fields). Its ``needs_approval``
    asks for confirmation: a bool as `requires_confirmation`, a function when the call
    runs (the call pauses until the user answers). It runs through ``on_invoke_tool``,
    with an openai-agents tool context whose ``.context`` is ``context(ctx)``; on an
    event loop other than asyncio, in a worker thread with an asyncio loop of its own
    (openai-agents needs asyncio, e.g. for sync functions).

    Args:
        tool: The openai-agents function tool.
        context: Makes the run context object the tool sees (``ctx.context``) from the
            call's `ToolContext`; None gives None.
    """

    def __init__(
        self,
        tool: AgentsFunctionTool,
        *,
        context: Callable[[ToolContext], Any] | None = None,
    ) -> None:
        gate = tool.needs_approval
        super().__init__(
            tool.name,
            tool.description,
            parameters=tool.params_json_schema,
            requires_confirmation=gate if isinstance(gate, bool) else False,
            timeout=tool.timeout_seconds,
        )
        self._tool = tool
        self._context = context
        self._checker = ArgumentChecker(tool.params_json_schema, tool_name=tool.name)

    @property
    def openai_agents_tool(self) -> AgentsFunctionTool:
        """The openai-agents tool it runs."""
        return self._tool

    async def run(self, args: Mapping[str, Any], ctx: ToolContext) -> JsonValue:
        invalid = self._checker.result(args)
        if invalid is not None:
            return invalid
        text = json.dumps(args, ensure_ascii=False)
        call_id = ctx.function_call_id or new_id("call_")
        user = self._context(ctx) if self._context is not None else None
        run = AgentsToolContext(
            context=user, tool_name=self.name, tool_call_id=call_id, tool_arguments=text
        )
        gate = self._tool.needs_approval
        if callable(gate) and ctx.tool_confirmation is None:
            asks = gate(run, dict(args), call_id)
            if await asks if inspect.isawaitable(asks) else asks:
                if ctx.function_call_id is None:
                    return error_result("This call needs the user's approval; it did not run.")
                ctx.request_confirmation(hint=self.confirmation_hint(args))
                return {"status": "waiting for the user's confirmation"}
        if _on_asyncio():
            result = await self._tool.on_invoke_tool(run, text)
        else:
            job = functools.partial(anyio.run, self._tool.on_invoke_tool, run, text)
            result = await anyio.to_thread.run_sync(
                functools.partial(job, backend="asyncio"), abandon_on_cancel=True
            )
        return to_json_value(result)


def from_openai_agents(
    tools: AgentsFunctionTool | Iterable[AgentsFunctionTool],
    *,
    context: Callable[[ToolContext], Any] | None = None,
) -> Toolset:
    """openai-agents function tools as a toolsets `Toolset` (one `OpenAIAgentsTool` each).

    Tools disabled outright (``is_enabled=False``) are left out; a callable
    ``is_enabled`` needs an openai-agents run, so those are kept.

    Args:
        tools: ``FunctionTool`` objects (e.g. ``@function_tool`` functions).
        context: Makes the run context object the tools see from the call's
            `ToolContext`; None gives None.

    Raises:
        ToolDefinitionError: something is not an openai-agents ``FunctionTool`` (hosted
            tools such as web search run on OpenAI's side, not here).
    """
    given: Sequence[object] = [tools] if isinstance(tools, AgentsFunctionTool) else list(tools)
    out: list[Tool] = []
    for tool in given:
        if not isinstance(tool, AgentsFunctionTool):
            raise ToolDefinitionError(
                f"{tool!r} is not an openai-agents FunctionTool", field="tools"
            )
        if tool.is_enabled is not False:
            out.append(OpenAIAgentsTool(tool, context=context))
    return StaticToolset(out)
