"""The tool contract: the `Tool` protocol, the `BaseTool` defaults, and the `LlmRequest`
tools add themselves to (the two refer to each other, so they share a module)."""

from __future__ import annotations

import abc
import contextlib
import json
import weakref
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, runtime_checkable

from toolsets._auth import AuthConfig
from toolsets._concurrency import FEW_ITEMS, LoopLocks, check_timeout, each_in_thread
from toolsets._content import Content
from toolsets._context import ToolContext
from toolsets._declaration import ToolAnnotations, ToolDeclaration, empty_parameters
from toolsets._errors import ToolDefinitionError
from toolsets._json import JsonValue

__all__ = [
    "LONG_RUNNING_NOTE",
    "BaseTool",
    "FirstTime",
    "LlmRequest",
    "ServerTool",
    "Tool",
]

R = TypeVar("R")

LONG_RUNNING_NOTE = (
    "This tool starts a long-running operation and may first return a pending status. "
    "While a call is pending, do not call the tool again for the same request."
)
"""Appended to a long-running tool's description, so the model does not call it twice."""


@runtime_checkable
class Tool(Protocol):
    """Anything a model can call (or, if passive, anything that shapes the request).

    Implement it directly, or subclass `BaseTool` for the defaults. Every member is
    read by the call path (`toolsets._invoke`), which runs each call the same way for
    every caller: ``refusal`` is asked first, ``timeout`` bounds ``run`` (None: the
    caller's default applies), ``required_scopes``, ``requires_confirmation`` and
    ``auth_config`` gate it, and its arguments are checked against
    ``call_declaration()`` before the user is asked anything. A streaming tool's ``run``
    returns a `ToolStream`.

    A wrapper forwards every member to the tool it wraps (`ForwardingTool` does, and
    states only what it changes); a tool that refuses should check again in ``run``, as
    `phased` tools do, since a wrapper of someone else's may not forward ``refusal``.
    """

    @property
    def name(self) -> str:
        """The name the model calls the tool by."""
        ...

    @property
    def description(self) -> str:
        """What the tool does."""
        ...

    def declaration(self) -> ToolDeclaration | None:
        """The declaration offered to the model; None for a passive tool.

        It may be asked for in a worker thread (the agent loop and the MCP server ask a
        catalogue of many tools met the first time off the event loop, `FirstTime`), so
        it must not need the event loop, and must be safe to ask from two threads."""
        ...

    def run(self, args: Mapping[str, Any], ctx: ToolContext) -> Awaitable[JsonValue]:
        """Run the tool. ``args`` is the model's arguments and must not be mutated.

        It returns an awaitable of the result: an ``async def`` is fine, and usual. A
        ``def`` may return one it made otherwise; `FunctionTool.run` does, for a plain
        function run on the event loop (``run_in_thread=False``): it calls the function
        right away and returns its result ready to await. A failure the model should see
        (bad arguments, an API's 4xx) is returned as ``{"error": ...}``; a fault the
        operator should see is raised. The call path runs it under the call's deadline.
        """
        ...

    @property
    def timeout(self) -> float | None:
        """Seconds a call may take; None leaves it to the caller's default."""
        ...

    @property
    def is_long_running(self) -> bool:
        """The call starts work whose result arrives later."""
        ...

    def requires_confirmation(self, args: Mapping[str, Any]) -> bool:
        """Whether the user must approve this call before it runs."""
        ...

    def confirmation_hint(self, args: Mapping[str, Any], *, name: str | None = None) -> str:
        """What the user is asked when confirmation is required.

        ``name`` is the name the user knows the tool by, when a wrapper offers it under
        another (None: the tool's own); a hint that does not name the tool may ignore it.
        """
        ...

    @property
    def auth_config(self) -> AuthConfig | None:
        """The credential the tool needs, if any; the agent obtains it before running."""
        ...

    @property
    def is_read_only(self) -> bool:
        """The tool does not change its environment."""
        ...

    @property
    def is_concurrency_safe(self) -> bool:
        """Calls may run concurrently with other calls of the same model turn."""
        ...

    @property
    def required_scopes(self) -> frozenset[str]:
        """Scopes the caller must hold (see `Invocation.scopes`)."""
        ...

    @property
    def response_schema(self) -> Mapping[str, Any] | None:
        """JSON Schema of the result, when known."""
        ...

    def call_declaration(self) -> ToolDeclaration | None:
        """The declaration a call is made under and its arguments checked against; None
        for a passive tool. Usually ``declaration()`` (`BaseTool`'s default); another
        when calls take more than the model is offered: a fuller one (an OpenAPI
        operation whose offered view is cut to a size budget is called under its whole
        schema), or one for a tool offered to no model yet callable by name (a
        `searchable` catalogue's tool not loaded)."""
        ...

    def refusal(self, args: Mapping[str, Any], ctx: ToolContext) -> JsonValue | None:
        """A result refusing this call in this context before anything else is done (no
        callback, gate or run), or None to let it go on (`BaseTool`'s default: `phased`
        tools refuse outside their phase)."""
        ...

    async def process_llm_request(self, req: LlmRequest, ctx: ToolContext) -> None:
        """Prepare the model request; the usual job is ``req.add_tool(self)``."""
        ...


class BaseTool(abc.ABC):
    """Defaults for every `Tool` member; subclasses implement `run`.

    Args:
        name: The name the model calls the tool by.
        description: What the tool does, for the model.
        parameters: JSON Schema (type ``object``) of the arguments.
        response_schema: JSON Schema of the result, when known.
        title: A human-readable name.
        annotations: Behaviour hints; ``read_only=True`` makes the tool read-only.
        is_long_running: The tool starts work whose result arrives later.
        is_concurrency_safe: May run alongside other calls; defaults to read-only-ness.
        requires_confirmation: True, or a predicate over the arguments, to make the user
            approve calls before they run.
        confirmation_hint: What the user is asked (text or a function of the arguments).
        auth_config: The credential the tool needs.
        required_scopes: Scopes the caller must hold.
        timeout: Seconds a call may take; None leaves it to the caller's default.
    """

    def __init__(
        self,
        name: str,
        description: str = "",
        *,
        parameters: Mapping[str, Any] | None = None,
        response_schema: Mapping[str, Any] | None = None,
        title: str | None = None,
        annotations: ToolAnnotations | None = None,
        is_long_running: bool = False,
        is_concurrency_safe: bool | None = None,
        requires_confirmation: bool | Callable[[Mapping[str, Any]], bool] = False,
        confirmation_hint: str | Callable[[Mapping[str, Any]], str] | None = None,
        auth_config: AuthConfig | None = None,
        required_scopes: frozenset[str] | set[str] | tuple[str, ...] = frozenset(),
        timeout: float | None = None,
    ) -> None:
        if timeout is not None:
            timeout = check_timeout(timeout, f"tool {name!r}: timeout")
        self._name = name
        self._timeout = timeout
        self._description = description
        self._parameters: Mapping[str, Any] = (
            parameters if parameters is not None else empty_parameters()
        )
        self._response_schema = response_schema
        self._title = title
        self._annotations = annotations if annotations is not None else ToolAnnotations()
        self._is_long_running = is_long_running
        self._is_concurrency_safe = is_concurrency_safe
        self._auth_config = auth_config
        self._required_scopes = frozenset(required_scopes)
        self._requires_confirmation = requires_confirmation
        self._confirmation_hint = confirmation_hint
        # Fail at definition time, not when the model first sees the tool.
        BaseTool.declaration(self)

    # Read-only properties, so that a subclass may compute any of them instead.
    @property
    def name(self) -> str:
        """The name the model calls the tool by."""
        return self._name

    @property
    def description(self) -> str:
        """What the tool does; a long-running tool's ends with `LONG_RUNNING_NOTE`."""
        if not self.is_long_running:
            return self._description
        if not self._description:
            return LONG_RUNNING_NOTE
        return f"{self._description}\n\n{LONG_RUNNING_NOTE}"

    @property
    def parameters(self) -> Mapping[str, Any]:
        """JSON Schema (type ``object``) of the arguments."""
        return self._parameters

    @property
    def response_schema(self) -> Mapping[str, Any] | None:
        """JSON Schema of the result, when known."""
        return self._response_schema

    @property
    def title(self) -> str | None:
        """A human-readable name."""
        return self._title

    @property
    def annotations(self) -> ToolAnnotations:
        """Behaviour hints."""
        return self._annotations

    @property
    def is_long_running(self) -> bool:
        """The call starts work whose result arrives later."""
        return self._is_long_running

    @property
    def is_read_only(self) -> bool:
        """True when the annotations say so."""
        return self.annotations.read_only is True

    @property
    def is_concurrency_safe(self) -> bool:
        """As configured; by default, read-only tools are concurrency-safe."""
        if self._is_concurrency_safe is None:
            return self.is_read_only
        return self._is_concurrency_safe

    @property
    def auth_config(self) -> AuthConfig | None:
        """The credential the tool needs, if any."""
        return self._auth_config

    @property
    def required_scopes(self) -> frozenset[str]:
        """Scopes the caller must hold."""
        return self._required_scopes

    @property
    def timeout(self) -> float | None:
        """Seconds a call may take; None leaves it to the caller's default."""
        return self._timeout

    def declaration(self) -> ToolDeclaration | None:
        """Name, description, parameters, response schema, title and hints."""
        return ToolDeclaration(
            name=self.name,
            description=self.description,
            parameters=self.parameters,
            response=self.response_schema,
            title=self.title,
            annotations=self.annotations,
        )

    @abc.abstractmethod
    def run(self, args: Mapping[str, Any], ctx: ToolContext) -> Awaitable[JsonValue]:
        """Run the tool (usually an ``async def``); see `Tool.run`."""

    def requires_confirmation(self, args: Mapping[str, Any]) -> bool:
        """As configured: always, never, or per a predicate over the arguments."""
        rule = self._requires_confirmation
        return rule(args) if callable(rule) else rule

    def confirmation_hint(self, args: Mapping[str, Any], *, name: str | None = None) -> str:
        """As configured, else a sentence naming the tool and its arguments.

        Args:
            args: The call's arguments.
            name: The name the model and the user know the tool by, when a wrapper
                offers it under another (``prefixed``, ``renamed``); default: its own.
        """
        hint = self._confirmation_hint
        if callable(hint):
            return hint(args)
        if hint is not None:
            return hint
        shown = json.dumps(dict(args), default=repr, ensure_ascii=False, sort_keys=True)
        return f"Allow the tool {name or self.name!r} to run with arguments {shown}?"

    def call_declaration(self) -> ToolDeclaration | None:
        """The declaration a call is made under and its arguments checked against: by
        default the one the model is offered, `declaration`. Override it when calls
        take more than the model is shown."""
        return self.declaration()

    def refusal(self, args: Mapping[str, Any], ctx: ToolContext) -> JsonValue | None:
        """None: the call goes on (see `Tool.refusal`; `phased` tools refuse outside
        their phase)."""
        return None

    async def process_llm_request(self, req: LlmRequest, ctx: ToolContext) -> None:
        """Offer this tool to the model (passive tools override this)."""
        declaration = self.declaration()
        if declaration is not None:
            req.add_tool(self, declaration)

    def __repr__(self) -> str:
        # getattr: repr must work on a tool whose __init__ failed part-way (tracebacks).
        return f"{type(self).__name__}(name={getattr(self, '_name', None)!r})"


class FirstTime:
    """The tools a consumer has met, remembered weakly, for what declares a toolset's
    tools again and again (the agent loop's requests, the MCP server's listings): the
    first time it meets a tool, `make` asks for its declaration off the event loop, as a
    huge OpenAPI spec builds its operations' declarations on demand (Microsoft Graph has
    11,422); later, the tool has it made."""

    def __init__(self) -> None:
        self._seen: weakref.WeakSet[Tool] = weakref.WeakSet()
        self._lock = LoopLocks()
        """One batch made at a time in each loop."""

    def __len__(self) -> int:
        return len(self._seen)

    def __contains__(self, tool: object) -> bool:
        return tool in self._seen

    async def make(
        self, tools: Sequence[Tool], make: Callable[[Tool], R], *, only_many: bool = False
    ) -> list[tuple[Tool, R]]:
        """``make(tool)`` for each of ``tools`` not met before, which are then
        remembered; in a worker thread when they are many (`each_in_thread`). Callers
        at the same time take turns, so a tool is made once however many ask (the
        second finds it met). ``only_many``: when they are few, make none (for a caller
        that asks for their declarations on the loop next anyway). A tool that cannot be
        weakly referenced is never remembered: it is made each time. A cancelled caller
        remembers none of its batch."""
        if only_many and len(tools) <= FEW_ITEMS:  # so are the new ones: nothing to make
            return []
        if not any(tool not in self._seen for tool in tools):
            return []
        async with self._lock():
            new = [tool for tool in tools if tool not in self._seen]
            if not new or (only_many and len(new) <= FEW_ITEMS):
                self._remember(new)
                return []
            made = await each_in_thread(make, new)
            self._remember(new)
        return list(zip(new, made, strict=True))

    def _remember(self, tools: Iterable[Tool]) -> None:
        for tool in tools:
            with contextlib.suppress(TypeError):  # no weak reference to it: made each time
                self._seen.add(tool)


@dataclass(frozen=True, kw_only=True)
class ServerTool:
    """A tool the model's provider runs on its own servers (Gemini's Google Search, say):
    the request names it, and only that provider's models can send it."""

    name: str
    """The tool's name, as errors name it (``google_search``)."""
    provider: str
    """The provider whose models run it (``gemini``)."""
    wire: Mapping[str, JsonValue]
    """Its entry in the provider's list of tools, as sent (``{"google_search": {}}``)."""


@dataclass(kw_only=True)
class LlmRequest:
    """What will be sent to the model: the conversation, instructions and tools.

    Tools edit it in ``process_llm_request``: most add their declaration with
    `add_tool`; passive tools change the instructions or contents instead.
    """

    model: str | None = None
    """The model to call, if the request names one."""
    contents: list[Content] = field(default_factory=list)
    """The conversation so far (the list is the request's own; the turns in it are the
    session's, read-only)."""
    system_instruction: str = ""
    """The system prompt."""
    config: dict[str, Any] = field(default_factory=dict)
    """Provider options (temperature, max tokens, ...)."""
    tools: dict[str, Tool] = field(default_factory=dict)
    """The callable tools, by the name the model uses."""
    declarations: dict[str, ToolDeclaration] = field(default_factory=dict)
    """Their declarations, by name, in the order they were added."""
    server_tools: dict[str, ServerTool] = field(default_factory=dict)
    """Tools the provider runs itself, by name; a model that cannot send one raises
    `ToolDefinitionError` naming it."""
    deferred: dict[str, Tool] = field(default_factory=dict)
    """Tools a search finds, by name: a `searchable` catalogue's, those not loaded
    (`defer_tool`: in `tools` too, without a declaration) and those loaded (declared
    too). A model whose provider searches tools itself (``AnthropicModel(tool_search=
    ...)``) offers all of them marked deferred (the declared ones under their
    declaration, the others under their call declaration), with the provider's search
    tool in place of the `local_search` one; any other model offers the declared ones
    as declared and leaves the others out."""
    local_search: str | None = None
    """The name of the declared tool that finds the `deferred` ones here (`searchable`'s
    ``search_tools``): a model that has its provider search leaves it out."""

    def add_tool(self, tool: Tool, declaration: ToolDeclaration | None = None) -> None:
        """Offer ``tool`` to the model under its declaration's name.

        Raises:
            ToolDefinitionError: the tool has no declaration, or another tool already
                uses the name.
        """
        decl = declaration if declaration is not None else tool.declaration()
        if decl is None:
            raise ToolDefinitionError(
                f"tool {tool.name!r} is passive (no declaration) and cannot be offered",
                tool_name=tool.name,
            )
        if decl.name in self.declarations:
            raise ToolDefinitionError(
                f"two tools are named {decl.name!r}; rename or prefix one of them",
                tool_name=decl.name,
            )
        self.tools[decl.name] = tool
        self.declarations[decl.name] = decl

    def add_server_tool(self, tool: ServerTool) -> None:
        """Ask the provider to offer ``tool``; a tool already asked for is asked for once."""
        self.server_tools.setdefault(tool.name, tool)

    def defer_tool(self, tool: Tool) -> None:
        """Make ``tool`` callable by its name without offering it up front: see
        `deferred` (a tool already registered under the name is kept)."""
        self.tools.setdefault(tool.name, tool)
        self.deferred.setdefault(tool.name, tool)

    def append_instructions(self, *texts: str) -> None:
        """Add paragraphs to the system instruction."""
        self.system_instruction = "\n\n".join(t for t in (self.system_instruction, *texts) if t)

    def extend_contents(self, contents: Iterable[Content]) -> None:
        """Add turns to the end of the conversation."""
        self.contents.extend(contents)
