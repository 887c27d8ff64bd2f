"""The consumers of tools, each driven through its own entry, for the contract every one of
them owes (``test_contract.py``): how a call's pauses are answered (`toolsets._settle`)
and what outlives a call.

A `Consumer` calls the contract's tools (`TOOLS`) the way its users do: the MCP server
through the SDK's client in this process (both protocol eras), the command line through
its command, the adapters through their frameworks (LangChain's ``ainvoke``, a real
openai-agents ``Runner.run`` and pydantic-ai ``Agent.run`` with their scripted models,
smolagents' tool call from its own thread), code mode through ``run_code``. Each is made
with the user's answer to a confirmation (`Consumer.answer`) and the key its credential
source holds (`Consumer.key`), and hands back a `Reply`: what its user (a model, a person
at a shell, a program) was given.

**Adding a consumer.** Write one `Consumer` subclass: its ``name``, ``call``, and
``__aenter__`` / ``__aexit__`` when it holds something open; the class attributes say
where it differs by design (a framework that always asks its user itself, a consumer that
keeps no state, its own words for a refusal). Add it to `CONSUMERS`: every scenario runs
for it.
"""

from __future__ import annotations

import contextlib
import io
import json
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass
from types import TracebackType
from typing import Any, ClassVar, Self

import anyio
import anyio.to_thread
import mcp.types as mt
from agents import Agent as AgentsAgent
from pydantic_ai import Agent as PaiAgent
from pydantic_ai import DeferredToolRequests, DeferredToolResults, ToolDenied

from tests.adapters.fakes import Call, Scripted, calling, returned, run, scripted
from tests.cli.helpers import as_a_new_process
from tests.code.helpers import run_code
from tests.mcp.server_helpers import connected, texts
from toolsets import AuthConfig, Invocation, JsonValue, StaticToolset, ToolContext, code_mode, tool
from toolsets._results import is_error_result
from toolsets._settle import NEEDS_APPROVAL, keep_state, no_credential_result
from toolsets.adapters.langchain import to_langchain
from toolsets.adapters.openai_agents import to_openai_agents
from toolsets.adapters.pydantic_ai import PydanticAIToolset
from toolsets.adapters.smolagents import SmolagentsAdapter, to_smolagents
from toolsets.mcp import McpServer

TIMEOUT = 30.0
"""Seconds one call through a consumer may take before it counts as hung."""
KEY = "k3y"
"""The key a consumer's credential source holds, when it holds one."""

RUNS: list[str] = []
"""The runs of the contract's tools, by name, in order (emptied before each test)."""

NOTES_KEY = AuthConfig(
    scheme_name="notes_key", scheme={"type": "apiKey", "in": "header", "name": "X-Key"}
)


@tool(requires_confirmation=True)
def wipe(disk: str) -> str:
    """Erase every file on a disk.

    Args:
        disk: The disk's name, e.g. ``sda``.
    """
    RUNS.append("wipe")
    return f"{disk} wiped"


@tool(auth_config=NOTES_KEY)
def read_private(ctx: ToolContext) -> str:
    """Read the private notes (needs the notes key)."""
    RUNS.append("read_private")
    assert ctx.auth_credential is not None
    return f"read with a key of {len(ctx.auth_credential.secret or '')} characters"


@tool(requires_confirmation=True, auth_config=NOTES_KEY)
def wipe_private(ctx: ToolContext) -> str:
    """Erase the private notes (asks for confirmation, and needs the notes key)."""
    RUNS.append("wipe_private")
    return "private notes wiped"


@tool
def always_asking(ctx: ToolContext) -> str:
    """Ask for the notes key on every run, whatever it is given."""
    RUNS.append("always_asking")
    ctx.request_credential(NOTES_KEY)
    return "asked"


@tool
def remember(ctx: ToolContext) -> str:
    """Write a note to the state, and a scratch value for this call only."""
    RUNS.append("remember")
    ctx.state["note"] = "kept"
    ctx.state["temp:scratch"] = "for this call"
    return "remembered"


@tool
def recall(ctx: ToolContext) -> dict[str, Any]:
    """What the state holds of what ``remember`` wrote."""
    RUNS.append("recall")
    return {"note": ctx.state.get("note"), "scratch": ctx.state.get("temp:scratch")}


TOOLS = [wipe, read_private, wipe_private, always_asking, remember, recall]
"""The contract's tools (the command line loads them as ``tests.consumers.contract:TOOLS``)."""


@dataclass(frozen=True)
class Reply:
    """What a consumer's user was given for one call."""

    error: bool
    """Whether it was given as a failure (an error result, a refusal, an exception)."""
    text: str
    """The result as its user reads it (JSON text for anything but text)."""
    note: str = ""
    """What else it was told (the command line's stderr)."""

    @property
    def value(self) -> Any:
        """The result as a value: its JSON read, else its text."""
        try:
            return json.loads(self.text)
        except ValueError:
            return self.text.strip()

    @property
    def said(self) -> str:
        """Everything its user was told, as one text."""
        return f"{self.text}\n{self.note}"


def _text(value: JsonValue) -> str:
    return value if isinstance(value, str) else json.dumps(value)


class Consumer(ABC):
    """One consumer of tools, made for a test: ``async with Kind(answer=..., key=...)``."""

    name: ClassVar[str]
    backends: ClassVar[tuple[str, ...]] = ("asyncio", "trio")
    """The anyio backends its entry runs on."""
    asks_itself: ClassVar[bool] = False
    """Its framework asks the user about every gated call itself (there is no "no one
    to ask")."""
    can_ask: ClassVar[bool] = True
    """It has a user to ask about a gated call (code mode's program has none)."""
    keeps_state: ClassVar[bool] = True
    """It keeps what a call wrote to the state for its later calls."""
    declined: ClassVar[str | None] = None
    """Its own words for a call the user declined (None: toolsets' `DECLINED`)."""
    unasked: ClassVar[str] = NEEDS_APPROVAL
    """What it says about a gated call no one could be asked about."""
    no_credential: ClassVar[str | None] = None
    """Its own words for a missing credential (None: `no_credential_result`'s)."""

    def __init__(self, *, answer: bool | None = True, key: str | None = KEY) -> None:
        self.answer = answer
        """The user's answer to each confirmation (None: no one can be asked)."""
        self.key = key
        """The notes key its credential source holds (None: none)."""
        self.state: dict[str, Any] = {}
        """The state its calls read and write, where it keeps one in a dict."""

    @property
    def credentials(self) -> dict[str, str] | None:
        return None if self.key is None else {NOTES_KEY.scheme_name: self.key}

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        return None

    @abstractmethod
    async def call(self, name: str, args: dict[str, Any] | None = None) -> Reply:
        """Call the tool ``name`` as the consumer's user does."""


class McpServerConsumer(Consumer):
    """`McpServer`, called by the SDK's client in this process; the client confirms
    through elicitation (no elicitation: the client cannot be asked)."""

    mode: ClassVar[str]
    unasked = "this client cannot be asked"

    async def __aenter__(self) -> Self:
        self._stack = contextlib.AsyncExitStack()
        options: dict[str, Any] = {}
        if self.answer is not None:
            action = "accept" if self.answer else "decline"

            async def elicit(ctx: Any, params: mt.ElicitRequestParams) -> mt.ElicitResult:
                return mt.ElicitResult(action=action)

            options["elicitation_callback"] = elicit
        # The session whose state is kept where the transport has none (2026-07-28).
        server = McpServer(
            TOOLS, credentials=self.credentials, invocation=Invocation(session_id="contract")
        )
        self._client = await self._stack.enter_async_context(
            connected(server, self.mode, **options)
        )
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self._stack.aclose()

    async def call(self, name: str, args: dict[str, Any] | None = None) -> Reply:
        result = await self._client.call_tool(name, args or {})
        return Reply(error=bool(result.is_error), text="\n".join(texts(result)))


class McpServer2025(McpServerConsumer):
    name = "mcp-server-2025-11-25"
    mode = "legacy"


class McpServer2026(McpServerConsumer):
    name = "mcp-server-2026-07-28"
    mode = "2026-07-28"


class _Typed(io.StringIO):
    """A terminal the user typed ``text`` into."""

    def isatty(self) -> bool:
        return True


@contextlib.contextmanager
def _console(stdin: io.StringIO) -> Iterator[tuple[io.StringIO, io.StringIO]]:
    """The process's stdin, stdout and stderr for a command run in it."""
    out, err = io.StringIO(), io.StringIO()
    with (
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
        _stdin(stdin),
    ):
        yield out, err


@contextlib.contextmanager
def _stdin(given: io.StringIO) -> Iterator[None]:
    import sys

    saved = sys.stdin
    sys.stdin = given
    try:
        yield
    finally:
        sys.stdin = saved


class CliConsumer(Consumer):
    """``toolsets call``, run in this process (its own event loop, in a worker thread):
    ``--yes`` confirms; a no is typed on a terminal; no terminal and no ``--yes``, no
    one can be asked. ``--credential`` gives the key. Each call is a process of its own:
    nothing is kept between calls."""

    name = "cli"
    backends = ("asyncio",)  # the command runs its own event loop, whichever the test's
    keeps_state = False
    unasked = "pass --yes, or run it on a terminal"
    no_credential = "needs the credential 'notes_key': give --credential notes_key=VALUE"

    async def call(self, name: str, args: dict[str, Any] | None = None) -> Reply:
        from toolsets.cli import main

        argv = ["call", "tests.consumers.contract:TOOLS", name]
        argv += [f"{key}={value}" for key, value in (args or {}).items()]
        if self.answer:
            argv.append("--yes")
        if self.key is not None:
            argv += ["--credential", f"notes_key={self.key}"]
        stdin = _Typed("n\n") if self.answer is False else io.StringIO()

        def command() -> tuple[int, str, str]:
            # What the command changes in this process (the objects its loading froze
            # for the garbage collector among them) is put back after.
            with as_a_new_process(argv, None, None), _console(stdin) as (out, err):
                try:
                    main(argv)
                except SystemExit as exit:
                    status = exit.code if isinstance(exit.code, int) else 1
                else:
                    status = 0
            return status, out.getvalue(), err.getvalue()

        status, out, err = await anyio.to_thread.run_sync(command)
        return Reply(error=status != 0, text=out, note=err)


class LangChainConsumer(Consumer):
    """`to_langchain`'s tools called by ``ainvoke`` as LangGraph's ``ToolNode`` calls
    them, outside a graph: the ``confirm=`` callback answers (none: no one to ask)."""

    name = "langchain"

    async def __aenter__(self) -> Self:
        answer = self.answer
        made = await to_langchain(
            TOOLS,
            confirm=None if answer is None else (lambda request: answer),
            credentials=self.credentials,
            invocation=Invocation(state=self.state),
        )
        self._tools = {made_tool.name: made_tool for made_tool in made}
        return self

    async def call(self, name: str, args: dict[str, Any] | None = None) -> Reply:
        called = {"type": "tool_call", "id": "call-0", "name": name, "args": args or {}}
        message = await self._tools[name].ainvoke(called)
        return Reply(error=message.status == "error", text=message.content)


class OpenAIAgentsConsumer(Consumer):
    """`to_openai_agents`' tools in a real ``Runner.run`` turn of a scripted model; a
    gated call interrupts the run, which resumes approved or rejected (openai-agents
    asks its user itself)."""

    name = "openai-agents"
    backends = ("asyncio",)  # Runner.run makes asyncio tasks
    asks_itself = True
    declined = "Tool execution was not approved."

    async def __aenter__(self) -> Self:
        self._tools = await to_openai_agents(
            TOOLS, credentials=self.credentials, invocation=Invocation(state=self.state)
        )
        return self

    async def call(self, name: str, args: dict[str, Any] | None = None) -> Reply:
        model = Scripted([[Call(name, args or {}, "c1")], "Done."])
        agent = AgentsAgent(name="contract", model=model, tools=self._tools)
        result = await run(agent, "go")
        if result.interruptions:
            state = result.to_state()
            (item,) = result.interruptions
            if self.answer:
                state.approve(item)
            else:
                state.reject(item)
            result = await run(agent, state)
        output = model.output("c1")
        refused = self.answer is False and output == self.declined
        return Reply(error=is_error_result(output) or refused, text=_text(output))


class PydanticAIConsumer(Consumer):
    """`PydanticAIToolset` in a real pydantic-ai ``Agent`` run of a scripted
    ``FunctionModel``; a gated call ends the run with deferred requests, and the next run
    carries the user's approval or denial (pydantic-ai asks its user itself), as it
    carries a credential the adapter could not find."""

    name = "pydantic-ai"
    backends = ("asyncio",)  # pydantic-ai's Agent runs on asyncio only
    asks_itself = True
    declined = "Not that one."
    no_credential = '"auth_config": {"scheme_name": "notes_key"'

    async def __aenter__(self) -> Self:
        state = self.state
        self._toolset: PydanticAIToolset[None] = PydanticAIToolset(
            TOOLS, credentials=self.credentials, context=lambda ctx: Invocation(state=state)
        )
        await self._toolset.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self._toolset.__aexit__(*exc_info)

    async def call(self, name: str, args: dict[str, Any] | None = None) -> Reply:
        model, _ = scripted(calling(name, "c1", **(args or {})), "Done.")
        agent = PaiAgent(model, toolsets=[self._toolset], output_type=[str, DeferredToolRequests])
        with anyio.fail_after(TIMEOUT):
            result = await agent.run("go")
            requests = result.output
            if isinstance(requests, DeferredToolRequests) and requests.approvals:
                decision = True if self.answer else ToolDenied(self.declined or "")
                result = await agent.run(
                    message_history=result.all_messages(),
                    deferred_tool_results=DeferredToolResults(approvals={"c1": decision}),
                )
        requests = result.output
        if isinstance(requests, DeferredToolRequests):  # a credential it could not find
            return Reply(error=True, text=json.dumps(requests.metadata["c1"]))
        content = returned(result.all_messages())["c1"]
        refused = self.answer is False and content == self.declined
        return Reply(error=is_error_result(content) or refused, text=_text(content))


class SmolagentsConsumer(Consumer):
    """`to_smolagents`' tools called from smolagents' own (sync) thread, the adapter's
    event loop in its own: ``confirm=`` answers (none: no one to ask); error results are
    returned, as a ToolCallingAgent shows them."""

    name = "smolagents"

    async def __aenter__(self) -> Self:
        answer = self.answer
        self._adapter: SmolagentsAdapter = to_smolagents(
            TOOLS,
            confirm=None if answer is None else (lambda hint, args: answer),
            credentials=self.credentials,
            state=self.state,
            errors="return",
        )
        tools = await anyio.to_thread.run_sync(self._adapter.open)
        self._tools = {made.name: made for made in tools}
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await anyio.to_thread.run_sync(self._adapter.close)

    async def call(self, name: str, args: dict[str, Any] | None = None) -> Reply:
        given = args or {}
        value = await anyio.to_thread.run_sync(lambda: self._tools[name](**given))
        return Reply(error=is_error_result(value), text=_text(value))


class CodeModeConsumer(Consumer):
    """`code_mode`'s ``run_code`` running a program that calls the tool, through the one
    call path; what its calls wrote is kept with ``run_code``'s call, whose own caller
    keeps the lasting part (`keep_state`, as every consumer does). A program has no user
    to ask about a gated call."""

    name = "code-mode"
    can_ask = False
    unasked = "needs the user's confirmation, which a program cannot ask for"
    no_credential = "needs a credential (notes_key) that was not given"

    async def __aenter__(self) -> Self:
        self._toolset = code_mode(StaticToolset(TOOLS), credentials=self.credentials)
        await self._toolset.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self._toolset.__aexit__(*exc_info)

    async def call(self, name: str, args: dict[str, Any] | None = None) -> Reply:
        ctx = ToolContext(Invocation(state=self.state), function_call_id="c1")
        result = await run_code(self._toolset, f"await tools.{name}(**{args or {}!r})", ctx=ctx)
        keep_state(ctx)
        assert isinstance(result, dict)
        if "exception" in result:
            return Reply(error=True, text=json.dumps(result))
        return Reply(error=is_error_result(result["result"]), text=_text(result["result"]))


CONSUMERS: list[type[Consumer]] = [
    McpServer2025,
    McpServer2026,
    CliConsumer,
    LangChainConsumer,
    OpenAIAgentsConsumer,
    PydanticAIConsumer,
    SmolagentsConsumer,
    CodeModeConsumer,
]
"""Every consumer of tools that settles a call's pauses (`toolsets._settle.settle`)."""

NO_CREDENTIAL = no_credential_result(NOTES_KEY)
"""What toolsets tells a model about the missing notes key."""
