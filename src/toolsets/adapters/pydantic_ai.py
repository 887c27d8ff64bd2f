"""toolsets in pydantic-ai, and pydantic-ai's tools as a toolset.

Out: `PydanticAIToolset` hands any `Toolset` (an MCP server, an OpenAPI spec,
functions) to a pydantic-ai ``Agent`` as one of its toolsets::

    agent = Agent(model, toolsets=[PydanticAIToolset(McpToolset(Stdio(command="srv")))],
                  output_type=[str, DeferredToolRequests])

Each call goes through toolsets' one call path (`toolsets._invoke.invoke`), and what it
produces is mapped to pydantic-ai's own mechanisms:

=============================  ==========================================================
a name providers refuse        offered under a legal one (`ToolNameMap`: ``files.delete``
                               → ``files_delete``), mapped back for the call
invalid arguments              ``ModelRetry`` naming each field: the model is asked to fix
                               them (counted against the tool's ``max_retries``)
other ``{"error": ...}``       returned as the tool's result, for the model to read
images and audio (MCP)         pydantic-ai ``BinaryContent``, as its own MCP client makes them
confirmation needed            ``ApprovalRequired``: the run ends with
                               ``DeferredToolRequests``; approve it with
                               ``DeferredToolResults(approvals={id: True})`` and it runs
                               (once); deny it and it never runs
credential needed              the ``credentials=`` mapping or callback answers; else
                               ``CallDeferred`` with ``metadata["auth_config"]``, answered
                               with `PydanticAIToolset.call_with_credential`
long-running (a pending job)   ``CallDeferred`` with ``metadata["interim"]``: the run
                               pauses until the final result is given in
                               ``DeferredToolResults(calls={id: result})``
=============================  ==========================================================

In: `from_pydantic_ai` makes pydantic-ai function tools (or any pydantic-ai toolset) a
`Toolset`, to serve over MCP or run in toolsets' agent loop.
"""

from __future__ import annotations

import inspect
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeAlias, TypeVar, cast

import anyio

from toolsets._consumers import check_credentials, lookup_credential, toolset_of
from toolsets._install import missing_extra
from toolsets.adapters._shared import Media, media_blocks

try:
    from pydantic_ai import (
        ApprovalRequired,
        CallDeferred,
        ModelRetry,
        RunContext,
        ToolFailed,
        UserError,
    )
    from pydantic_ai import Tool as PaiTool
    from pydantic_ai.messages import BinaryContent, ModelMessage, ModelResponse, ToolCallPart
    from pydantic_ai.models import Model
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.tools import AgentDepsT, ToolDefinition
    from pydantic_ai.toolsets import AbstractToolset, FunctionToolset, ToolsetTool
    from pydantic_ai.usage import RunUsage
except ImportError as exc:
    raise missing_extra(__name__, "pydantic-ai", exc) from exc

import pydantic
from pydantic_core import SchemaValidator, core_schema

from toolsets._auth import AuthConfig, AuthCredential
from toolsets._context import Invocation, ToolConfirmation, ToolContext
from toolsets._declaration import ToolDeclaration
from toolsets._errors import ToolDefinitionError, ToolNotFoundError
from toolsets._function_tool import validation_problems
from toolsets._invoke import (
    DEFAULT_TOOL_TIMEOUT,
    NO_CALLBACKS,
    Callbacks,
    ConfirmationNeeded,
    CredentialNeeded,
    Done,
    LongRunning,
    Outcome,
    invoke,
)
from toolsets._json import JsonValue, to_json_value
from toolsets._results import error_result, invalid_arguments_result
from toolsets._settle import caller, keep_state, settle
from toolsets._tool import BaseTool, Tool
from toolsets._toolset import BaseToolset, Toolset
from toolsets.schema import ToolNameMap

__all__ = [
    "ContextHook",
    "Credentials",
    "ImportedTool",
    "ImportedToolset",
    "PydanticAIToolset",
    "default_invocation",
    "from_pydantic_ai",
]

ContextHook: TypeAlias = Callable[[RunContext[Any]], Invocation]
"""Who a call runs for, from pydantic-ai's run context: the `Invocation` (user, session,
state, scopes) the tool's `ToolContext` is made from. See `default_invocation`."""

Credentials: TypeAlias = (
    Mapping[str, AuthCredential | str]
    | Callable[
        [RunContext[Any], AuthConfig],
        AuthCredential | str | Awaitable[AuthCredential | str | None] | None,
    ]
)
"""Where the credential a tool needs comes from: a mapping from `AuthConfig.key` (the
scheme's name with the scopes) or the security scheme's name to the credential (an
`AuthCredential`, or the key or token as a string, made the scheme's kind of
credential), or a function of pydantic-ai's run context and the `AuthConfig` (the
framework's context first, as in the other adapters) returning one (either kind), or
None when there is none (the call is then deferred). A sync function runs in a worker thread,
so one that blocks never stops the event loop."""

T = TypeVar("T")

_MAX_RUNS = 64
"""How many runs' default invocations the adapter keeps (the oldest are dropped)."""

_MAX_DEFERRED = 1024
"""How many paused calls (waiting for approval or a credential) the adapter remembers,
the oldest forgotten first: their arguments as ``before_tool`` left them, and for a
credential their run and whether the user had approved them."""

_ARGS_VALIDATOR = SchemaValidator(
    core_schema.dict_schema(core_schema.str_schema(), core_schema.any_schema())
)
"""Arguments reach toolsets as a JSON object; the call path checks them against the
tool's own schema, so pydantic-ai only checks the shape."""


def default_invocation(ctx: RunContext[Any]) -> Invocation:
    """The `Invocation` a call runs in when no ``context=`` hook is given.

    The session is pydantic-ai's conversation (``ctx.conversation_id``), the invocation
    its run (``ctx.run_id``), the agent its name; the user is ``"user"``, the state
    empty and the scopes none: pydantic-ai's ``deps`` are the application's own, so
    only a hook knows where the user, the session state or the scopes are in them.
    """
    agent = ctx.agent
    return Invocation(
        app_name="pydantic-ai",
        session_id=ctx.conversation_id or "pydantic-ai",
        invocation_id=ctx.run_id or "pydantic-ai",
        agent_name=agent.name if agent is not None else None,
    )


@dataclass(kw_only=True)
class _Listed(ToolsetTool[AgentDepsT]):
    """A toolsets tool as pydantic-ai lists it, carrying the tool it calls."""

    tool: Tool
    """The tool of the wrapped toolset."""


def tool_definition(
    tool: Tool, declaration: ToolDeclaration, name: str | None = None
) -> ToolDefinition:
    """The pydantic-ai definition of ``tool``: its name, description and JSON Schema.

    The one place the schema is chosen: pydantic-ai's model classes adapt a full JSON
    Schema to their provider themselves (but not the name: ``name`` is the one the
    provider accepts, from a `ToolNameMap`; default the declaration's own).
    """
    response = declaration.response
    annotations = declaration.annotations.to_json()
    metadata: dict[str, Any] = {"annotations": annotations} if annotations else {}
    if tool.is_long_running:
        metadata["long_running"] = True
    if tool.auth_config is not None:
        metadata["auth_scheme"] = tool.auth_config.scheme_name
    return ToolDefinition(
        name=declaration.name if name is None else name,
        description=declaration.description or None,
        parameters_json_schema=dict(declaration.parameters),
        # Our loop runs only concurrency-safe calls side by side; so does pydantic-ai.
        sequential=not tool.is_concurrency_safe,
        metadata=metadata or None,
        return_schema=dict(response) if isinstance(response, Mapping) else None,
    )


def _model_message(result: Mapping[str, Any]) -> str:
    """What the model is told about invalid arguments: the sentence and each field."""
    lines = [str(result["error"])]
    fields = result.get("fields")
    if isinstance(fields, Mapping):
        lines.extend(f"- {path}: {problem}" for path, problem in fields.items())
    return "\n".join(lines)


def _with_media(result: JsonValue) -> Any:
    """``result``, its images and audio (an MCP tool's ``{"content": [blocks]}``) made
    pydantic-ai ``BinaryContent``, which models that read them are shown as such rather
    than as base64 text (`media_blocks`)."""
    blocks = media_blocks(result)
    if blocks is None:  # the usual result: as it is
        return result
    return [
        BinaryContent(data=block.data, media_type=block.mime_type)
        if isinstance(block, Media)
        else block
        for block in blocks
    ]


@dataclass(frozen=True)
class _Deferred:
    """A call deferred for a credential, as the adapter remembers it."""

    args: dict[str, Any]
    approved: bool
    run_id: str | None
    conversation_id: str | None


async def _handed_back(needed: T) -> T:
    """A pause pydantic-ai asks its user about itself (see `PydanticAIToolset._answer`)."""
    return needed


def _remember(pauses: OrderedDict[str, T], call_id: str, what: T) -> None:
    """Keep ``what`` of a paused call, forgetting the oldest past `_MAX_DEFERRED`."""
    pauses[call_id] = what
    pauses.move_to_end(call_id)
    while len(pauses) > _MAX_DEFERRED:
        pauses.popitem(last=False)


def _auth_metadata(config: AuthConfig) -> dict[str, Any]:
    return {
        "scheme_name": config.scheme_name,
        "scheme": dict(config.scheme),
        "scopes": list(config.scopes),
    }


class PydanticAIToolset(AbstractToolset[AgentDepsT], Generic[AgentDepsT]):
    """A toolsets `Toolset` (or a list of tools) as a pydantic-ai toolset.

    Tools are listed at every run step (``get_tools``), so a toolset that changes
    (an MCP server's ``tools/list_changed``) is seen at once. Each is offered under a
    name every provider accepts (`ToolNameMap`: ``files.delete`` becomes
    ``files_delete``, an over-long name is shortened), mapped back for the call.

    The wrapped toolset opens what it holds (an MCP session, HTTP clients) on first use
    and keeps it while the adapter is entered: pydantic-ai enters it once per run, and
    ``async with agent`` for longer. Overlapping runs share it, whichever task they run
    in; the last exit closes it (the toolset's ``shutdown``, safe from any task), and
    the next run opens it again. The adapter never enters the wrapped toolset itself: a
    run's task cannot own what another run may still use after it ends (an MCP session
    opened so lives on the toolset's background event loop, and each call crosses over
    to it). To keep sessions in your own task instead (the fastest),
    open the toolset yourself for your application's lifetime and pass ``close=False``::

        async with mcp_toolset:  # e.g. in your web app's lifespan
            agent = Agent(model, toolsets=[PydanticAIToolset(mcp_toolset, close=False)])
            ...  # any number of runs, overlapping or not

    Args:
        toolset: The tools: a `Toolset`, or tools and functions (put in a
            `StaticToolset`).
        id: The toolset's id for pydantic-ai (needed for durable execution).
        max_retries: How often the model may retry a call with invalid arguments; None
            takes the agent's (its ``retries``, 1 by default).
        context: The `Invocation` of a call from pydantic-ai's ``RunContext``: the user,
            session, state and scopes, e.g. read from ``ctx.deps``. Writes a tool makes
            to ``ctx.state`` are applied to that invocation's ``state`` when it is a
            mutable mapping (a dict in your deps), else dropped; ``temp:`` keys, which
            live for the call only, are never kept. Default:
            `default_invocation`.
        credentials: The credentials tools need (see `Credentials`); a tool whose
            credential it does not give is deferred (``CallDeferred``), never sent
            without it.
        tool_timeout: Seconds a call may take when the tool has no ``timeout``.
        callbacks: toolsets' tool callbacks (a `Callbacks`), run
            around each call as in toolsets' agent loop (``before_tool`` once per call,
            not again when an approved or deferred call runs).
        close: Whether the last exit closes the wrapped toolset (its ``shutdown``);
            False when you open and close it yourself (``async with toolset:``).

    What else a tool asks of its caller (``transfer_to_agent``, ``escalate``,
    ``skip_summarization``) has no pydantic-ai equivalent and is not acted on.

    Raises:
        ToolDefinitionError: ``toolset`` is a pydantic-ai toolset already (``.field`` is
            ``"toolset"``).
    """

    def __init__(
        self,
        toolset: Toolset | Iterable[Tool | Callable[..., Any]],
        *,
        id: str | None = None,
        max_retries: int | None = None,
        context: Callable[[RunContext[AgentDepsT]], Invocation] = default_invocation,
        credentials: Credentials | None = None,
        tool_timeout: float = DEFAULT_TOOL_TIMEOUT,
        callbacks: Callbacks | None = None,
        close: bool = True,
    ) -> None:
        if isinstance(toolset, AbstractToolset):
            raise ToolDefinitionError(
                f"{type(toolset).__name__} is already a pydantic-ai toolset: give it to the "
                "Agent as it is (from_pydantic_ai makes a toolsets Toolset of it)",
                field="toolset",
            )
        check_credentials(credentials)
        self.toolset: Toolset = toolset_of(toolset)
        """The wrapped toolset."""
        self._id = id
        self.max_retries = max_retries
        self._context = context
        self._runs: OrderedDict[str, Invocation] = OrderedDict()
        self._credentials = credentials
        self._tool_timeout = tool_timeout
        self._callbacks = callbacks if callbacks is not None else NO_CALLBACKS
        self._listed: dict[str, _Listed[AgentDepsT]] = {}
        self._entered = 0
        self._close = close
        self._lock = anyio.Lock()
        # Calls deferred for a credential, by call id: their arguments, run and
        # conversation, and whether the user approved them (only then may
        # `call_with_credential` skip it); calls waiting for approval: their arguments.
        self._deferred: OrderedDict[str, _Deferred] = OrderedDict()
        self._asked: OrderedDict[str, dict[str, Any]] = OrderedDict()

    @property
    def id(self) -> str | None:
        """The id given, if any."""
        return self._id

    def _invocation(self, ctx: RunContext[AgentDepsT]) -> Invocation:
        """The invocation of a call or listing in ``ctx``; the default one is made once
        per run (its calls share it, and its cancellation flag), for the latest
        `_MAX_RUNS` runs, so that interleaved runs keep each their own."""
        run_id = ctx.run_id
        if self._context is not default_invocation or run_id is None:
            return self._context(ctx)
        runs = self._runs
        invocation = runs.get(run_id)
        if invocation is None:
            invocation = runs[run_id] = default_invocation(ctx)
            while len(runs) > _MAX_RUNS:
                runs.popitem(last=False)
        return invocation

    async def __aenter__(self) -> PydanticAIToolset[AgentDepsT]:
        async with self._lock:  # waits for a last exit's shutdown to finish
            self._entered += 1
        return self

    async def __aexit__(self, *args: Any) -> bool | None:
        async with self._lock:
            if self._entered == 0:
                raise RuntimeError(f"{self!r} was left more often than entered")
            self._entered -= 1
            if self._entered == 0 and self._close:
                with anyio.CancelScope(shield=True):  # a cancelled run still closes it
                    await self.toolset.shutdown()
        return None

    async def get_tools(self, ctx: RunContext[AgentDepsT]) -> dict[str, ToolsetTool[AgentDepsT]]:
        """The wrapped toolset's tools, listed in the context of this run step."""
        tools = await self.toolset.list_tools(ToolContext(self._invocation(ctx)))
        max_retries = self.max_retries if self.max_retries is not None else ctx.max_retries
        # Definitions are made again only for tools that changed since the last step.
        known, fresh = self._listed, {}
        declared: list[tuple[Tool, ToolDeclaration | None]] = []
        for tool in tools:
            seen = known.get(tool.name)
            if seen is not None and seen.tool is tool and seen.max_retries == max_retries:
                declared.append((tool, None))
            else:
                declaration = tool.declaration()
                if declaration is not None:  # else passive: nothing the model can call
                    declared.append((tool, declaration))
        names = ToolNameMap.build(tool.name for tool, _ in declared)
        listed: dict[str, ToolsetTool[AgentDepsT]] = {}
        for tool, declaration in declared:
            name = names.to_provider(tool.name)
            seen = known.get(tool.name)
            if declaration is not None or seen is None or seen.tool_def.name != name:
                declaration = declaration if declaration is not None else tool.declaration()
                assert declaration is not None  # it had one a step ago
                seen = _Listed(
                    toolset=self,
                    tool_def=tool_definition(tool, declaration, name),
                    max_retries=max_retries,
                    args_validator=_ARGS_VALIDATOR,
                    tool=tool,
                )
            fresh[tool.name] = seen
            listed[name] = seen
        self._listed = fresh
        return listed

    async def call_tool(
        self,
        name: str,
        tool_args: dict[str, Any],
        ctx: RunContext[AgentDepsT],
        tool: ToolsetTool[AgentDepsT],
    ) -> Any:
        """Call the tool through toolsets' call path; see the module's table for what
        each outcome becomes."""
        if isinstance(tool, _Listed):
            ours = tool.tool
        else:  # rebuilt by a wrapper that kept only the definition
            ours = await self._tool_named(tool.tool_def.name, ctx)
        invocation = self._invocation(ctx)
        call_id = ctx.tool_call_id
        confirmation, resumed, args = None, False, tool_args
        if ctx.tool_call_approved:
            payload = ctx.tool_call_metadata
            confirmation = ToolConfirmation(confirmed=True, payload=payload)
            # The arguments the user was asked about, as before_tool left them (it
            # does not run again); unknown here (another process asked), it runs now.
            asked = self._asked.pop(call_id, None) if call_id is not None else None
            if asked is not None:
                args, resumed = asked, True
        call = ToolContext(invocation, function_call_id=call_id)
        outcome = await self._invoke(ours, args, ctx, call, confirmation, resumed=resumed)
        if call_id is not None:
            if isinstance(outcome, ConfirmationNeeded):
                _remember(self._asked, call_id, outcome.args)
            elif isinstance(outcome, CredentialNeeded):
                deferred = _Deferred(
                    args=outcome.args,
                    approved=ctx.tool_call_approved,
                    run_id=ctx.run_id,
                    conversation_id=ctx.conversation_id,
                )
                _remember(self._deferred, call_id, deferred)
        return self._answer(outcome, call, ctx.tool_call_approved)

    async def _tool_named(self, name: str, ctx: RunContext[AgentDepsT]) -> Tool:
        """The tool the model knows as ``name``.

        Raises:
            ToolNotFoundError: the toolset no longer offers it.
        """
        for listed in (await self.get_tools(ctx)).values():
            if listed.tool_def.name == name:
                return cast("_Listed[AgentDepsT]", listed).tool
        raise ToolNotFoundError(name, (t.tool_def.name for t in self._listed.values()))

    async def _invoke(
        self,
        tool: Tool,
        args: Mapping[str, Any],
        ctx: RunContext[AgentDepsT],
        call: ToolContext,
        confirmation: ToolConfirmation | None,
        credential: AuthCredential | None = None,
        *,
        resumed: bool,
    ) -> Outcome:
        """The call through the call path, its pauses settled: a credential the call
        asks for (every other gate passed, or the tool asked while running) from the
        adapter's ``credentials=`` unless one was given, and what pydantic-ai asks its
        user about (an approval, a credential it does not give) handed back, for
        `_answer` to defer. ``resumed``: ``before_tool`` ran already, when the call
        paused."""

        scopes = call.invocation.scopes
        first = await invoke(
            tool,
            args,
            call,
            default_timeout=self._tool_timeout,
            callbacks=self._callbacks,
            scopes=scopes,
            confirmation=confirmation,
            credential=credential,
            resumed=resumed,
        )
        if type(first) is Done:  # most calls, the first time round
            return first

        async def lookup(needed: CredentialNeeded) -> AuthCredential | CredentialNeeded:
            found = await self._credential(ctx, needed.auth_config)
            return needed if found is None else found

        again = caller(
            tool, call, default_timeout=self._tool_timeout, callbacks=self._callbacks, scopes=scopes
        )
        settled: Outcome = await settle(
            first,
            resume=again,
            confirm=_handed_back,
            lookup=_handed_back if credential is not None else lookup,
            confirmation=confirmation,
            credential=credential,
        )
        return settled

    async def _credential(
        self, ctx: RunContext[AgentDepsT], config: AuthConfig
    ) -> AuthCredential | None:
        return await lookup_credential(self._credentials, config, ctx)

    def _answer(self, outcome: Outcome, call: ToolContext, approved: bool) -> Any:
        """What pydantic-ai gets for an outcome: a result, or the exception that stands
        for it. What the call wrote to the state is kept first (`keep_state`)."""
        keep_state(call)
        if type(outcome) is Done:
            result = outcome.result
            if type(result) is not dict:  # most results: as they are
                return result
            if "error" in result and "fields" in result:
                raise ModelRetry(_model_message(result))
            return _with_media(result)
        if isinstance(outcome, ConfirmationNeeded):
            asked: dict[str, Any] = {"hint": outcome.hint}
            if outcome.payload is not None:
                asked["payload"] = outcome.payload
            raise ApprovalRequired(metadata=asked)
        if isinstance(outcome, CredentialNeeded):
            raise CallDeferred(
                metadata={"auth_config": _auth_metadata(outcome.auth_config), "approved": approved}
            )
        assert isinstance(outcome, LongRunning)
        raise CallDeferred(metadata={"long_running": True, "interim": outcome.interim})

    async def call_with_credential(
        self,
        call: ToolCallPart,
        credential: AuthCredential,
        *,
        deps: AgentDepsT | None = None,
        approved: bool = False,
    ) -> Any:
        """Run a call deferred for a credential, with the credential the user gave.

        Give the answer to the next run as its result::

            results = DeferredToolResults(calls={
                call.tool_call_id: await toolset.call_with_credential(call, credential)
                for call in requests.calls if "auth_config" in requests.metadata[call.tool_call_id]
            })

        Args:
            call: The deferred call (from ``DeferredToolRequests.calls``).
            credential: The credential for its ``auth_config``.
            deps: The deps the ``context=`` hook reads, as in the run.
            approved: The call was approved before it was deferred (its
                ``metadata["approved"]``). Taken only for a call this adapter deferred
                after the user approved it in a run: for any other call id, a call
                needing the user's approval is refused (``ToolFailed``), never run.

        The call runs in the run and conversation it was deferred in (the default
        invocation's session and run), when this adapter deferred it.

        Returns:
            The tool's result; a ``ModelRetry`` or ``ToolFailed`` for the model when the
            arguments are invalid or the call cannot run (as ``DeferredToolResults``
            takes them).
        """
        deferred = self._deferred.get(call.tool_call_id)
        # The client's word alone never stands for the user's approval.
        approved = approved and deferred is not None and deferred.approved
        ctx = RunContext(
            deps=cast("AgentDepsT", deps),
            model=_NO_MODEL,
            usage=RunUsage(),
            tool_call_id=call.tool_call_id,
            tool_name=call.tool_name,
            tool_call_approved=approved,
            run_id=None if deferred is None else deferred.run_id,
            conversation_id=None if deferred is None else deferred.conversation_id,
        )
        invocation = self._invocation(ctx)
        try:
            tool = await self._tool_named(call.tool_name, ctx)
        except ToolNotFoundError as gone:
            return ToolFailed(gone.for_model())
        confirmation = ToolConfirmation(confirmed=True) if approved else None
        args = call.args_as_dict() if deferred is None else deferred.args
        context = ToolContext(invocation, function_call_id=call.tool_call_id)
        outcome = await self._invoke(
            tool, args, ctx, context, confirmation, credential, resumed=deferred is not None
        )
        if not isinstance(outcome, CredentialNeeded):  # it ran, or asks for more: used up
            self._deferred.pop(call.tool_call_id, None)
        try:
            return self._answer(outcome, context, approved)
        except ModelRetry as retry:
            return retry
        except (ApprovalRequired, CallDeferred):
            what = "the user's approval" if approved is False else "more than a credential"
            return ToolFailed(f"The call of {call.tool_name!r} needs {what}; it did not run.")

    def __repr__(self) -> str:
        return f"PydanticAIToolset({self.toolset!r})"


# --- in: pydantic-ai's tools as a toolset -------------------------------------------------


def _no_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    raise UserError("this tool runs outside a pydantic-ai agent: it has no model to call")


_NO_MODEL: Model = FunctionModel(_no_model, model_name="toolsets")
"""The ``model`` of the run contexts made outside a pydantic-ai run: a tool that asks it
for anything is told there is none."""

Deps: TypeAlias = Callable[[ToolContext], Any]


class ImportedTool(BaseTool):
    """One pydantic-ai tool as a toolsets `Tool`.

    Its schema and description are pydantic-ai's; a tool needing approval
    (``requires_approval=True``, or ``ApprovalRequired`` raised while running) asks for
    confirmation; ``ModelRetry`` and ``ToolFailed`` become error results for the model;
    ``CallDeferred`` makes the call long-running (its result arrives later).
    """

    def __init__(self, source: ImportedToolset, listed: ToolsetTool[Any]) -> None:
        definition = listed.tool_def
        super().__init__(
            definition.name,
            definition.description or "",
            parameters=definition.parameters_json_schema,
            response_schema=definition.return_schema,
            is_concurrency_safe=not definition.sequential,
            requires_confirmation=definition.kind == "unapproved",
            timeout=definition.timeout,
        )
        self.listed = listed
        """pydantic-ai's tool."""
        self._source = source

    async def run(self, args: Mapping[str, Any], ctx: ToolContext) -> JsonValue:
        """Validate the arguments as pydantic-ai does, then call the tool."""
        listed = self.listed
        answer = ctx.tool_confirmation
        run_ctx = self._source.run_context(
            ctx,
            tool_name=self.name,
            max_retries=listed.max_retries,
            approved=answer is not None and answer.confirmed,
            metadata=None if answer is None else answer.payload,
        )
        try:
            valid = listed.args_validator.validate_python(dict(args))
            if listed.args_validator_func is not None:
                checked = listed.args_validator_func(run_ctx, **valid)
                if inspect.isawaitable(checked):
                    await checked
        except pydantic.ValidationError as exc:
            return invalid_arguments_result(validation_problems(exc, args))
        except (ModelRetry, ToolFailed) as exc:
            return error_result(exc.message)
        # A ValidationError raised in the tool itself is the tool's failure, not the
        # model's arguments: it reaches the call path's on_tool_error boundary.
        try:
            if listed.tool_def.kind == "external":
                raise CallDeferred()
            result = await self._source.wrapped.call_tool(self.name, valid, run_ctx, listed)
        except (ModelRetry, ToolFailed) as exc:
            return error_result(exc.message)
        except ApprovalRequired as exc:
            ctx.request_confirmation(payload=to_json_value(exc.metadata))
            return None
        except CallDeferred as exc:
            ctx.actions.long_running = True
            return {"status": "deferred", "metadata": to_json_value(exc.metadata)}
        return to_json_value(getattr(result, "return_value", result))


class ImportedToolset(BaseToolset):
    """pydantic-ai tools as a toolsets `Toolset`; see `from_pydantic_ai`."""

    def __init__(self, toolset: AbstractToolset[Any], *, deps: Any = None) -> None:
        self.wrapped = toolset
        """pydantic-ai's toolset."""
        self._deps: Deps = deps if callable(deps) else (lambda ctx: deps)
        self._entered = False

    def run_context(
        self,
        ctx: ToolContext | None,
        *,
        tool_name: str | None = None,
        max_retries: int = 0,
        approved: bool = False,
        metadata: Any = None,
    ) -> RunContext[Any]:
        """A pydantic-ai run context for a call (or a listing) in ``ctx``: the deps, the
        call's id, the session as the conversation, the invocation as the run."""
        ctx = ctx if ctx is not None else ToolContext()
        return RunContext(
            deps=self._deps(ctx),
            model=_NO_MODEL,
            usage=RunUsage(),
            tool_call_id=ctx.function_call_id,
            tool_name=tool_name,
            max_retries=max_retries,
            tool_call_approved=approved,
            tool_call_metadata=metadata,
            run_id=ctx.invocation_id,
            conversation_id=ctx.session_id,
        )

    async def __aenter__(self) -> ImportedToolset:
        if not self._entered:
            await self.wrapped.__aenter__()
            self._entered = True
        return self

    async def shutdown(self) -> None:
        """Leave pydantic-ai's toolset, if it was entered here."""
        if self._entered:
            self._entered = False
            await self.wrapped.__aexit__(None, None, None)

    async def list_tools(self, ctx: ToolContext | None = None) -> Sequence[Tool]:
        """pydantic-ai's tools, listed in a run context made from ``ctx``."""
        tools = await self.wrapped.get_tools(self.run_context(ctx))
        return tuple(ImportedTool(self, listed) for listed in tools.values())

    def __repr__(self) -> str:
        return f"from_pydantic_ai({self.wrapped!r})"


def from_pydantic_ai(
    tools: AbstractToolset[Any] | Iterable[PaiTool[Any] | Callable[..., Any]],
    *,
    deps: Any = None,
) -> ImportedToolset:
    """pydantic-ai's tools as a toolsets `Toolset`: to serve over MCP, or to run in
    toolsets' agent loop.

    Args:
        tools: A pydantic-ai toolset (a ``FunctionToolset``, or any other), or
            pydantic-ai ``Tool`` objects and functions (made a ``FunctionToolset``; a
            function whose first parameter is a ``RunContext`` gets one).
        deps: What the tools get as ``ctx.deps``: a value, or a function of the call's
            `ToolContext` returning it (e.g. per user).

    Returns:
        A toolset listing pydantic-ai's tools in each context; each call is validated
        by pydantic-ai's own validator and run by pydantic-ai's toolset.
    """
    if not isinstance(tools, AbstractToolset):
        tools = FunctionToolset(list(tools))
    return ImportedToolset(tools, deps=deps)
