"""LangChain and LangGraph: toolsets' tools as LangChain tools, and LangChain tools as a
toolset.

Needs ``pip install 'toolsets-ai[langchain]'``; interrupts in LangGraph graphs need
``pip install 'toolsets-ai[langgraph]'`` (imported only when a call runs in a graph).

Out: ``await to_langchain(toolset)`` lists the toolset's tools as langchain-core
``BaseTool`` objects (`ToolsetTool`), for any LangChain chat model, a LangGraph
``ToolNode`` or ``create_react_agent``. Every call goes through toolsets' one call path:

- the tool's own JSON Schema is the ``args_schema``; its name is made legal for the chat
  model providers (``^[A-Za-z0-9_-]{1,64}$``);
- a result is the message content (text as is, an MCP tool's images and audio as
  LangChain's standard ``image`` and ``file`` blocks, anything else as JSON text) with
  the raw value as the ``ToolMessage`` artifact; an ``{"error": ...}`` result (invalid arguments
  with the fields named, an API's 4xx, ...) is a ``ToolMessage`` with
  ``status="error"``, so the model can fix its call;
- a call that needs the user's approval interrupts the graph (LangGraph's
  ``interrupt``) with a `ConfirmationRequest`; resume with ``Command(resume=True)`` to
  run it once, ``Command(resume=False)`` to refuse it (it never runs). Outside a graph,
  the ``confirm=`` callback answers; without one the call is refused with an error
  result saying it needs the user's approval;
- a call that needs a credential gets it from ``credentials=``; failing that, it
  interrupts the graph with a `CredentialRequest` (resume with an `AuthCredential`, or
  None to refuse); outside a graph it is refused with an error result naming the
  missing credential. It is never sent without one;
- the ``RunnableConfig`` becomes the `ToolContext`: ``configurable.thread_id`` is the
  session, ``configurable.user_id`` the user, the tool call's id the function call id;
- what a tool writes to ``ctx.state`` (but ``temp:`` keys, which live for the call only)
  goes into the ``invocation=``'s ``state`` when it is a mutable mapping (a dict you
  keep), which later calls read.

Lifecycle: the tools call the toolset they were listed from, which must stay open while
they are used (``async with toolset:`` around the agent's runs; toolsets open lazily, so
a toolset that was never entered is opened by ``to_langchain`` and closed by its
``shutdown``). List again when the toolset's tools may have changed.

LangGraph's and LangChain's async paths (``graph.ainvoke``, ``ainvoke``) need asyncio.
`ToolsetTool.ainvoke` itself runs on trio too (through the sync path in a worker thread).
The sync path (``invoke``, ``graph.invoke``) works on any anyio backend: a sync call is
sent to the event loop the tools were listed on, from whatever thread LangChain calls it
in, so list the tools on a loop that keeps running (e.g. in
``anyio.from_thread.start_blocking_portal()``, asyncio or trio, entering the toolset with
the portal's ``wrap_async_context_manager``). A sync call made on that loop's own thread
would block it and is refused with `ToolCallError`; use ``ainvoke`` there, on the loop the
tools were listed on.

In: ``from_langchain(tools)`` makes LangChain tools (``@tool`` functions,
``StructuredTool``, any ``BaseTool``) a toolsets `Toolset`, to run in toolsets' agent
loop or to serve over MCP.
"""

from __future__ import annotations

try:
    from langchain_core.messages import ToolCall, ToolMessage
    from langchain_core.runnables import RunnableConfig
    from langchain_core.tools import BaseTool as LangChainBaseTool
    from langchain_core.tools import ToolException
    from langchain_core.utils.function_calling import convert_to_openai_tool
except ImportError as exc:  # pragma: no cover - exercised in a subprocess
    from toolsets._install import missing_extra

    raise missing_extra(__name__, "langchain", exc) from exc

import contextvars
import dataclasses
import functools
import typing
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias, TypedDict, TypeVar

import anyio
import anyio.from_thread
import sniffio
from anyio.lowlevel import EventLoopToken, current_token
from pydantic import PrivateAttr

from toolsets._auth import AuthConfig, AuthCredential
from toolsets._consumers import (
    CallsTools,
    ask,
    check_credentials,
    lookup_credential,
    toolset_of,
)
from toolsets._context import Invocation, ToolConfirmation, ToolContext
from toolsets._declaration import ToolDeclaration, empty_parameters
from toolsets._errors import ToolCallError
from toolsets._ids import new_id
from toolsets._invoke import (
    DEFAULT_TOOL_TIMEOUT,
    Callbacks,
    ConfirmationNeeded,
    CredentialNeeded,
    Done,
    Outcome,
)
from toolsets._json import JsonValue, copy_json, to_json_value
from toolsets._results import error_result, is_error_result
from toolsets._settle import MAX_PAUSES, keep_state
from toolsets._tool import BaseTool, Tool
from toolsets._toolset import StaticToolset, Toolset
from toolsets._validation import ArgumentChecker
from toolsets.adapters._shared import Media, json_text, media_blocks, with_ids
from toolsets.schema import ToolNameMap

__all__ = [
    "MAX_PAUSES",
    "ConfirmationRequest",
    "Confirm",
    "CredentialRequest",
    "Credentials",
    "LangChainTool",
    "ToolsetTool",
    "from_langchain",
    "to_langchain",
]

MAX_HELD = 1024
"""Pauses kept for graphs to resume (see ``_Bridge.paused``); older ones are dropped, and a
graph resumed after that runs its node from the start, as LangGraph does."""

_A = TypeVar("_A")

_SCRATCHPAD = "__pregel_scratchpad"
"""The key LangGraph puts in ``configurable`` when it runs a node, which its
``interrupt`` needs: a call that sees it runs inside a graph and may interrupt."""


class ConfirmationRequest(TypedDict):
    """What the user is asked before a gated call runs: the value of the LangGraph
    interrupt, and what the ``confirm=`` callback is given. JSON, so checkpointers keep
    it."""

    type: Literal["confirmation"]
    tool: str
    """The tool's name, as the model called it."""
    tool_call_id: str | None
    args: dict[str, Any]
    """The arguments the call will run with."""
    hint: str
    """What to ask the user, e.g. ``"Delete note 3?"``."""
    payload: JsonValue
    """What the tool attached, when it asked while running (else None)."""


class CredentialRequest(TypedDict):
    """What is needed before a call that needs a credential runs: the value of the
    LangGraph interrupt."""

    type: Literal["credential"]
    tool: str
    """The tool's name, as the model called it."""
    tool_call_id: str | None
    scheme_name: str
    """The security scheme, e.g. the key under ``components.securitySchemes``."""
    scheme: dict[str, Any]
    """The security scheme object (OpenAPI's vocabulary)."""
    scopes: list[str]
    """The OAuth2 scopes needed."""


ConfirmAnswer: TypeAlias = bool | ToolConfirmation | Mapping[str, Any]
"""An answer to a `ConfirmationRequest`: True / False, a `ToolConfirmation`, or
``{"confirmed": bool, "payload": ...}``."""
Confirm: TypeAlias = Callable[[ConfirmationRequest], "ConfirmAnswer | Awaitable[ConfirmAnswer]"]
"""Decides, outside LangGraph, whether a gated call may run (sync or async)."""
Credentials: TypeAlias = (
    Mapping[str, AuthCredential | str]
    | Callable[[AuthConfig], "AuthCredential | Awaitable[AuthCredential | None] | None"]
)
"""Credentials by security scheme name, or a function of the `AuthConfig` (sync or
async) returning one, or None when it has none."""


@dataclass(frozen=True, kw_only=True)
class _Call:
    """One call as LangChain hands it to `ToolsetTool` (the model's arguments kept
    apart from what LangChain injects, so no argument name can clash with those)."""

    args: dict[str, Any]
    id: str | None


@dataclass(frozen=True, kw_only=True)
class _Held:
    """A pause a graph was interrupted with, and the answers given before it."""

    outcome: Outcome
    confirmation: ToolConfirmation | None = None
    credential: AuthCredential | None = None
    answered: int = 0
    """The interrupts the call's node had answered before this pause (LangGraph hands
    each resume value to the interrupt of its place in the node's run)."""


@dataclass(frozen=True, kw_only=True)
class _Bridge(CallsTools):
    """What every tool of one `to_langchain` shares: the options, and the event loop the
    toolset lives on."""

    invocation: Invocation
    confirm: Confirm | None
    credentials: Credentials | None
    default_timeout: float
    callbacks: Callbacks
    token: EventLoopToken
    paused: dict[tuple[str | None, str], _Held] = dataclasses.field(default_factory=dict)
    """The pause each gated call interrupted its graph with, by (thread, call id): when
    LangGraph resumes the graph it runs the node again, and the call takes up the pause
    where it was (``before_tool`` and the tool itself not run again, the arguments the
    user approved unchanged, the answers given before it kept) instead of starting
    over."""

    def hold(self, key: tuple[str | None, str], held: _Held) -> None:
        """Keep ``held`` for the resumed run of its node (the oldest of more than
        `MAX_HELD` dropped: a graph never resumed must not grow this forever)."""
        self.paused[key] = held
        if len(self.paused) > MAX_HELD:
            del self.paused[next(iter(self.paused))]

    def context(self, config: RunnableConfig | None, call_id: str | None) -> ToolContext:
        """The call's context: the thread as the session, the configured user."""
        invocation = self.invocation
        configurable = config.get("configurable") if config else None
        if configurable:
            thread, user = configurable.get("thread_id"), configurable.get("user_id")
            invocation = with_ids(
                invocation,
                session_id=None if thread is None else str(thread),
                user_id=None if user is None else str(user),
            )
        return ToolContext(invocation, function_call_id=call_id)

    async def stored_credential(self, config: AuthConfig) -> AuthCredential | None:
        """The credential ``credentials=`` has for ``config``, or None."""
        return await lookup_credential(self.credentials, config)


def _in_graph(config: RunnableConfig | None) -> bool:
    """Whether the call runs in a LangGraph node, where it may interrupt."""
    configurable = config.get("configurable") if config else None
    return configurable is not None and _SCRATCHPAD in configurable


def _interrupt(value: JsonValue, context: contextvars.Context | None) -> Any:
    """LangGraph's ``interrupt(value)``: raises to pause the graph, or returns the
    answer once it is resumed. ``context`` is the caller's, when called from another
    thread (``interrupt`` reads the node's config from it)."""
    from langgraph.types import interrupt  # under LangGraph only: its own extra

    return interrupt(value) if context is None else context.run(interrupt, value)


def _confirmation(answer: object, tool_name: str) -> ToolConfirmation:
    """The user's answer to a `ConfirmationRequest`, as toolsets takes it.

    Raises:
        ToolCallError: the answer is none of the accepted kinds.
    """
    if isinstance(answer, ToolConfirmation):
        return answer
    if isinstance(answer, bool):
        return ToolConfirmation(confirmed=answer)
    if isinstance(answer, Mapping) and isinstance(answer.get("confirmed"), bool):
        return ToolConfirmation(confirmed=answer["confirmed"], payload=answer.get("payload"))
    raise ToolCallError(
        "the answer to a confirmation request must be True or False, a ToolConfirmation "
        f'or {{"confirmed": bool, "payload": ...}}, not {type(answer).__name__}',
        tool_name=tool_name,
    )


def _credential(answer: object, tool_name: str) -> AuthCredential | None:
    """The user's answer to a `CredentialRequest` (None: they gave none).

    Raises:
        ToolCallError: the answer is none of the accepted kinds.
    """
    if answer is None or isinstance(answer, AuthCredential):
        return answer
    if isinstance(answer, Mapping):
        try:
            return AuthCredential(**answer)
        except (TypeError, ValueError) as exc:
            raise ToolCallError(
                f"the answer to a credential request is not a credential: {exc}",
                tool_name=tool_name,
            ) from exc
    raise ToolCallError(
        "the answer to a credential request must be an AuthCredential, a mapping of its "
        f"fields, or None, not {type(answer).__name__}",
        tool_name=tool_name,
    )


def _content(result: JsonValue) -> str | list[str | dict[str, Any]]:
    """What the model reads: text as is, an MCP tool's images and audio as LangChain's
    standard image and file blocks (`media_blocks`), anything else as JSON text."""
    blocks = media_blocks(result)
    if blocks is None:
        return json_text(result)
    return [_block(block) for block in blocks]


def _block(block: Media | str | JsonValue) -> dict[str, Any]:
    if isinstance(block, Media):  # audio: a file, the one kind a tool message takes it as
        kind = "image" if block.kind == "image" else "file"
        return {"type": kind, "base64": block.encoded, "mime_type": block.mime_type}
    return {"type": "text", "text": json_text(block)}


class ToolsetTool(LangChainBaseTool):
    """A toolsets `Tool` as a LangChain tool; made by `to_langchain`.

    ``ainvoke`` (what LangGraph's ``ToolNode`` calls) runs it on the running event
    loop; ``invoke`` sends it to the loop the tools were listed on (see the module's
    docstring).
    """

    response_format: Literal["content", "content_and_artifact"] = "content_and_artifact"
    handle_tool_error: Any = True
    _tool: Tool = PrivateAttr()
    _bridge: _Bridge = PrivateAttr()

    @classmethod
    def _made(
        cls, tool: Tool, declaration: ToolDeclaration, name: str, bridge: _Bridge
    ) -> ToolsetTool:
        made = cls(
            name=name,
            description=declaration.description or declaration.title or tool.name,
            args_schema=_parameters(declaration),
            metadata={"toolsets_name": tool.name} if name != tool.name else None,
        )
        made._tool = tool
        made._bridge = bridge
        return made

    @property
    def tool(self) -> Tool:
        """The toolsets tool it calls."""
        return self._tool

    async def ainvoke(
        self,
        input: str | dict[str, Any] | ToolCall,
        config: RunnableConfig | None = None,
        **kwargs: Any,
    ) -> Any:
        """Run the tool (LangChain's async entry point) on any anyio backend.

        On asyncio this is LangChain's own ``ainvoke``. langchain-core's async path needs
        asyncio, so elsewhere (trio) LangChain's sync path runs in a worker thread and
        sends the call back to this loop; a cancelled caller then waits for the call to
        end (within its deadline).
        """
        if sniffio.current_async_library() == "asyncio":
            return await super().ainvoke(input, config, **kwargs)
        return await anyio.to_thread.run_sync(
            functools.partial(self.invoke, input, config, **kwargs)
        )

    def _to_args_and_kwargs(
        self, tool_input: str | dict[str, Any], tool_call_id: str | None
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        if isinstance(tool_input, str):  # LangChain refuses text for a JSON-schema tool
            return super()._to_args_and_kwargs(tool_input, tool_call_id)
        return (), {"call": _Call(args=tool_input, id=tool_call_id)}

    async def _arun(self, *, call: _Call, config: RunnableConfig, **_: Any) -> tuple[Any, Any]:
        return await self._call(call, config, None)

    def _run(self, *, call: _Call, config: RunnableConfig, **_: Any) -> tuple[Any, Any]:
        try:
            current_token()
        except anyio.NoEventLoopError:
            pass
        else:
            raise ToolCallError(
                f"{self.name!r} was called synchronously on a running event loop, which "
                "it would block; call it with ainvoke (graph.ainvoke) there",
                tool_name=self.name,
            )
        context = contextvars.copy_context()
        try:
            return anyio.from_thread.run(
                self._call, call, config, context, token=self._bridge.token
            )
        except anyio.RunFinishedError as exc:
            raise ToolCallError(
                f"{self.name!r} was called synchronously, but the event loop its tools "
                "were listed on has finished; list them on a loop that keeps running "
                "(e.g. anyio.from_thread.start_blocking_portal())",
                tool_name=self.name,
            ) from exc

    async def _call(
        self, call: _Call, config: RunnableConfig | None, context: contextvars.Context | None
    ) -> tuple[Any, Any]:
        """Run the call through the call path, answering what it waits for; the
        content and the artifact, or ToolException with an error result."""
        bridge, tool = self._bridge, self._tool
        ctx = bridge.context(config, call.id)
        key = None
        if call.id is not None and _in_graph(config):
            key = (ctx.session_id, call.id)
        held = bridge.paused.pop(key, None) if key is not None else None
        if held is None:
            held = _Held(outcome=await bridge.invoke(tool, call.args, ctx))
        answering = _Answering(self, call.id, key, held, context, _in_graph(config))
        outcome = await bridge.settle(
            tool,
            held.outcome,
            ctx,
            confirm=answering.confirm,
            lookup=answering.lookup,
            confirmation=held.confirmation,
            credential=held.credential,
        )
        keep_state(ctx)
        result = outcome.result if isinstance(outcome, Done) else outcome.interim
        if is_error_result(result):
            raise ToolException(json_text(result))
        return _content(result), result

    async def _confirm(
        self,
        needed: ConfirmationNeeded,
        call_id: str | None,
        interrupt: Callable[[JsonValue], Any] | None,
    ) -> ToolConfirmation | None:
        """The user's answer: through LangGraph's ``interrupt`` in a graph (None:
        outside one), else the ``confirm=`` callback; None when there is no one to
        ask."""
        request = ConfirmationRequest(
            type="confirmation",
            tool=self.name,
            tool_call_id=call_id,
            args=copy_json(needed.args),
            hint=needed.hint,
            payload=needed.payload,
        )
        if interrupt is not None:
            return _confirmation(interrupt(request), self.name)  # type: ignore[arg-type]
        confirm = self._bridge.confirm
        if confirm is None:
            return None
        return _confirmation(await ask(confirm, request), self.name)

    async def _credential(
        self,
        needed: CredentialNeeded,
        call_id: str | None,
        interrupt: Callable[[JsonValue], Any] | None,
    ) -> AuthCredential | None:
        """The credential: from ``credentials=``, else asked through LangGraph's
        ``interrupt`` in a graph (None: outside one); None when there is none."""
        auth = needed.auth_config
        stored = await self._bridge.stored_credential(auth)
        if stored is not None or interrupt is None:
            return stored
        request = CredentialRequest(
            type="credential",
            tool=self.name,
            tool_call_id=call_id,
            scheme_name=auth.scheme_name,
            scheme=dict(auth.scheme),
            scopes=list(auth.scopes),
        )
        return _credential(interrupt(request), self.name)  # type: ignore[arg-type]


class _Answering:
    """The answers one call of a `ToolsetTool` was given so far, and in a graph its
    place among its node's interrupts; each pause it asks about is held with them, for
    the node's run when LangGraph resumes it (see `_Bridge.paused`)."""

    def __init__(
        self,
        made: ToolsetTool,
        call_id: str | None,
        key: tuple[str | None, str] | None,
        held: _Held,
        context: contextvars.Context | None,
        in_graph: bool,
    ) -> None:
        self._made, self._call_id, self._key, self._context = made, call_id, key, context
        self.confirmation, self.credential = held.confirmation, held.credential
        self.answered = 0
        for _ in range(held.answered):  # the node's answered interrupts, in their places
            self._interrupt(None)
        self._graph = self._interrupt if in_graph else None

    def _interrupt(self, value: JsonValue) -> Any:
        answer = _interrupt(value, self._context)
        self.answered += 1
        return answer

    async def _asked(self, needed: Outcome, ask: Callable[..., Awaitable[_A]]) -> _A:
        # Asking may interrupt the graph (the node stops here); LangGraph runs the node
        # again when it is resumed, and the call goes on from this pause.
        bridge, key = self._made._bridge, self._key
        if key is not None:
            pause = _Held(
                outcome=needed,
                confirmation=self.confirmation,
                credential=self.credential,
                answered=self.answered,
            )
            bridge.hold(key, pause)
        answer = await ask(needed, self._call_id, self._graph)
        if key is not None:
            bridge.paused.pop(key, None)
        return answer

    async def confirm(self, needed: ConfirmationNeeded) -> ToolConfirmation | None:
        self.confirmation = await self._asked(needed, self._made._confirm)
        return self.confirmation

    async def lookup(self, needed: CredentialNeeded) -> AuthCredential | None:
        self.credential = await self._asked(needed, self._made._credential)
        return self.credential


# LangChain looks for the RunnableConfig parameter of _arun / _run on every call, with
# typing.get_type_hints: annotations already evaluated spare it compiling them each time.
for _method in (ToolsetTool._arun, ToolsetTool._run):
    _method.__annotations__ = typing.get_type_hints(_method)


def _parameters(declaration: ToolDeclaration) -> dict[str, Any]:
    """The ``args_schema`` LangChain is given: the one place the schema is chosen
    (LangChain passes a JSON-schema dict on to the chat model as it is)."""
    schema: dict[str, Any] = copy_json(dict(declaration.parameters))
    return schema


async def to_langchain(
    toolset: Toolset | Iterable[Tool | Callable[..., Any]],
    *,
    invocation: Invocation | None = None,
    confirm: Confirm | None = None,
    credentials: Credentials | None = None,
    tool_timeout: float = DEFAULT_TOOL_TIMEOUT,
    callbacks: Callbacks | None = None,
) -> list[ToolsetTool]:
    """The toolset's tools, listed now, as LangChain tools.

    Args:
        toolset: A `Toolset`, or tools and plain functions. Keep a toolset open while
            the tools are used (``async with toolset:``).
        invocation: Who calls by default (app, user, session, scopes, services): the
            context the tools are listed in, and the base of every call's context
            (``configurable.thread_id`` and ``configurable.user_id`` override it).
        confirm: Outside LangGraph, decides whether a call that needs the user's
            approval runs; None refuses them (in a graph, ``interrupt`` asks instead).
        credentials: Credentials by security scheme name, or a function of the
            `AuthConfig` returning one; asked for by ``interrupt`` in a graph when
            this has none. Credentials given as an interrupt's answer are kept in the
            graph's checkpoints like any answer: prefer this option for secrets.
        tool_timeout: Seconds a call may take when its tool sets no ``timeout``.
        callbacks: toolsets' tool callbacks (a `Callbacks`).

    Returns:
        One `ToolsetTool` per tool the model may call (passive tools are left out),
        named as the providers of LangChain's chat models allow.
    """
    check_credentials(credentials)
    toolset = toolset_of(toolset)
    invocation = invocation if invocation is not None else Invocation()
    bridge = _Bridge(
        invocation=invocation,
        confirm=confirm,
        credentials=credentials,
        default_timeout=tool_timeout,
        callbacks=callbacks if callbacks is not None else Callbacks(),
        token=current_token(),
    )
    declared: list[tuple[Tool, ToolDeclaration]] = []
    for tool in await toolset.list_tools(ToolContext(invocation)):
        declaration = tool.declaration()
        if declaration is not None:
            declared.append((tool, declaration))
    names = ToolNameMap.build(declaration.name for _, declaration in declared)
    return [
        ToolsetTool._made(tool, declaration, names.to_provider(declaration.name), bridge)
        for tool, declaration in declared
    ]


class LangChainTool(BaseTool):
    """A LangChain tool as a toolsets `Tool`; made by `from_langchain`.

    Its parameters are the JSON Schema LangChain gives chat models for it; arguments
    are checked against it first (an invalid-arguments result names the fields). On
    asyncio it runs through ``ainvoke``; on another backend through ``invoke`` in a
    worker thread (langchain-core's async path needs asyncio, so a tool that only has
    an async implementation runs on asyncio only). ``return_direct`` tools end the
    agent's turn with their result (``skip_summarization``).
    """

    def __init__(self, tool: LangChainBaseTool) -> None:
        function = convert_to_openai_tool(tool)["function"]
        parameters = function.get("parameters") or empty_parameters()
        super().__init__(tool.name, function.get("description") or "", parameters=parameters)
        self._tool = tool
        self._checker = ArgumentChecker(parameters, tool_name=tool.name)

    @property
    def langchain_tool(self) -> LangChainBaseTool:
        """The LangChain tool it calls."""
        return self._tool

    async def run(self, args: Mapping[str, Any], ctx: ToolContext) -> JsonValue:
        """Call the LangChain tool as a tool call (with the context's session, user and
        call id in its config); its message's content is the result."""
        invalid = self._checker.result(args)
        if invalid is not None:
            return invalid
        call = {
            "type": "tool_call",
            "id": ctx.function_call_id or new_id(),
            "name": self._tool.name,
            "args": dict(args),
        }
        config: RunnableConfig = {
            "configurable": {"thread_id": ctx.session_id, "user_id": ctx.user_id}
        }
        if sniffio.current_async_library() == "asyncio":
            output = await self._tool.ainvoke(call, config)
        else:
            output = await anyio.to_thread.run_sync(
                functools.partial(self._tool.invoke, call, config)
            )
        if self._tool.return_direct:
            ctx.actions.skip_summarization = True
        if not isinstance(output, ToolMessage):
            return to_json_value(output)
        content = (
            output.content if isinstance(output.content, str) else to_json_value(output.content)
        )
        if output.status == "error":
            return error_result(json_text(content))
        return content


def from_langchain(tools: LangChainBaseTool | Sequence[LangChainBaseTool]) -> StaticToolset:
    """LangChain tools (``@tool`` functions, ``StructuredTool``, any ``BaseTool``) as a
    toolset, for toolsets' agent loop or an MCP server.

    Raises:
        ToolDefinitionError: two tools have the same name.
    """
    if isinstance(tools, LangChainBaseTool):
        tools = [tools]
    return StaticToolset(LangChainTool(t) for t in tools)
