"""Agents: the LLM agent's dispatch cycle, and the workflow agents that arrange others."""

from __future__ import annotations

import abc
import contextlib
import dataclasses
import functools
import itertools
import re
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable, Mapping, Sequence
from typing import Any

import anyio

from toolsets._concurrency import check_timeout, gather, start_detached
from toolsets._content import Content, FunctionCall, FunctionResponse, Part
from toolsets._context import EventActions, Invocation, ToolConfirmation, ToolContext
from toolsets._errors import ToolsetError
from toolsets._ids import new_id
from toolsets._invoke import DEFAULT_TOOL_TIMEOUT, AfterTool, BeforeTool, Callbacks, OnToolError
from toolsets._results import error_result
from toolsets._tool import FirstTime, LlmRequest, Tool
from toolsets._toolset import Toolset, as_tool, list_each
from toolsets.agent._background import BackgroundCalls, may_run_in_background
from toolsets.agent._dispatch import CallOutcome, Dispatcher, argument_problem
from toolsets.agent._events import (
    ConfirmationRequest,
    CredentialRequest,
    Event,
    LongRunningRequest,
    PendingRequest,
)
from toolsets.agent._run import RunContext, current_run
from toolsets.agent._transfer import TransferToAgentTool
from toolsets.models import INVALID_JSON_KEY, Llm

__all__ = [
    "DEFAULT_MAX_CALLS_PER_TURN",
    "DEFAULT_TOOL_TIMEOUT",
    "BaseAgent",
    "LlmAgent",
    "LoopAgent",
    "SequentialAgent",
    "unfinished_event",
]

DEFAULT_MAX_CALLS_PER_TURN = 64
"""Function calls one model turn may make unless the agent says otherwise."""

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    if callable(value):
        return [value]
    return list(value)


BACKGROUND_CLOSE_GRACE = 5.0
"""Seconds a run that stops waits for its cancelled background calls to clean up."""


class BaseAgent(abc.ABC):
    """An agent in a tree: a name, a description, sub-agents, and a `run`.

    Names are unique in a tree; an agent has at most one parent.
    """

    def __init__(
        self, name: str, *, description: str = "", sub_agents: Sequence[BaseAgent] = ()
    ) -> None:
        if not _NAME.match(name) or name == "user":
            raise ValueError(
                f"invalid agent name {name!r}: use letters, digits, _ and -, start with a "
                "letter or _, at most 64 characters, and not 'user'"
            )
        self.name = name
        """The agent's name, unique in its tree."""
        self.description = description
        """What the agent does (other agents read it to decide on a transfer)."""
        self.sub_agents: tuple[BaseAgent, ...] = tuple(sub_agents)
        """The agents below this one."""
        self.parent: BaseAgent | None = None
        """The agent above this one, if any."""
        for sub in self.sub_agents:
            if sub.parent is not None:
                raise ValueError(
                    f"agent {sub.name!r} already belongs to {sub.parent.name!r}; an agent "
                    "has one parent"
                )
            sub.parent = self
        seen: set[str] = set()
        for agent in self.walk():
            if agent.name in seen:
                raise ValueError(f"two agents in one tree are named {agent.name!r}")
            seen.add(agent.name)

    def walk(self) -> Iterable[BaseAgent]:
        """This agent and every agent below it, depth first."""
        yield self
        for sub in self.sub_agents:
            yield from sub.walk()

    @property
    def root_agent(self) -> BaseAgent:
        """The top of the tree."""
        agent = self
        while agent.parent is not None:
            agent = agent.parent
        return agent

    def find_agent(self, name: str) -> BaseAgent | None:
        """The agent of that name in this subtree."""
        return next((a for a in self.walk() if a.name == name), None)

    def path_to(self, name: str) -> list[str] | None:
        """Agent names from this one down to ``name``, or None if it is not below."""
        if self.name == name:
            return [self.name]
        for sub in self.sub_agents:
            rest = sub.path_to(name)
            if rest is not None:
                return [self.name, *rest]
        return None

    @abc.abstractmethod
    def run(self, ctx: RunContext) -> AsyncIterator[Event]:
        """Run for this invocation, yielding events (already recorded unless partial).

        Usually an async generator (an ``async def`` that yields). Any async iterator
        is accepted; the `Runner` closes it when the run ends or is stopped if it has an
        ``async aclose()`` (`toolsets.agent._runner.AsyncClosable`; an async generator
        has), so that its cleanup runs then rather than whenever it is collected.
        """

    def _resume_child(self, ctx: RunContext) -> int:
        """Where to start among the sub-agents when resuming through this agent."""
        if ctx.resume is None:
            return 0
        nxt = ctx.resume.next_on_path(self.name)
        names = [s.name for s in self.sub_agents]
        return names.index(nxt) if nxt in names else 0

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


class LlmAgent(BaseAgent):
    """An agent driven by a model, calling tools until it has a final answer.

    Each step: the tools prepare the request (``process_llm_request``), the model is
    called, call ids are filled in, and each call goes through confirmation → auth →
    run, wrapped by the callbacks; the results are recorded with their actions and the
    model is called again, until it answers without calls, a tool ends the turn
    (``skip_summarization``, ``escalate``, ``transfer_to_agent``), the run pauses for
    the user, or a limit is reached.

    Args:
        name: Unique in the tree.
        model: The `Llm` to call.
        instruction: The system instruction, or a function of the `Invocation` making it.
        description: What this agent does, for agents that may transfer to it.
        tools: Tools, toolsets, and plain functions (wrapped as `FunctionTool`).
        sub_agents: Agents this one may transfer to.
        before_tool: Callback(s) before each call; see `BeforeTool`.
        after_tool: Callback(s) after each call; see `AfterTool`.
        on_tool_error: Callback(s) when a tool raises; see `OnToolError`.
        max_iterations: Model calls this agent may make for one user message.
        max_calls_per_turn: Function calls one model turn may make; a turn with more
            runs none of them, and each gets an error result asking for fewer.
        tool_timeout: Seconds a tool call may take (a tool's own ``timeout`` wins).
        output_key: Save the final answer's text in the session state under this key.
        generate_config: Provider options put in every request (temperature, ...).
        transfer: Offer the ``transfer_to_agent`` tool when there are agents to transfer
            to (sub-agents, and an LLM parent).
    """

    def __init__(
        self,
        name: str,
        model: Llm,
        *,
        instruction: str | Callable[[Invocation], str] = "",
        description: str = "",
        tools: Sequence[Tool | Toolset | Callable[..., Any]] = (),
        sub_agents: Sequence[BaseAgent] = (),
        before_tool: BeforeTool | Sequence[BeforeTool] | None = None,
        after_tool: AfterTool | Sequence[AfterTool] | None = None,
        on_tool_error: OnToolError | Sequence[OnToolError] | None = None,
        max_iterations: int = 25,
        max_calls_per_turn: int = DEFAULT_MAX_CALLS_PER_TURN,
        tool_timeout: float = DEFAULT_TOOL_TIMEOUT,
        output_key: str | None = None,
        generate_config: Mapping[str, Any] | None = None,
        transfer: bool = True,
    ) -> None:
        super().__init__(name, description=description, sub_agents=sub_agents)
        if max_iterations < 1:
            raise ValueError("max_iterations must be at least 1")
        if max_calls_per_turn < 1:
            raise ValueError("max_calls_per_turn must be at least 1")
        check_timeout(tool_timeout, "tool_timeout")
        self.model = model
        self.instruction = instruction
        self._tools: list[Tool] = []
        self._toolsets: list[Toolset] = []
        for item in tools:
            if isinstance(item, Toolset) and not isinstance(item, Tool):
                self._toolsets.append(item)
            else:
                self._tools.append(as_tool(item, toolsets=True))
        self.callbacks = Callbacks(
            before_tool=tuple(_as_list(before_tool)),
            after_tool=tuple(_as_list(after_tool)),
            on_tool_error=tuple(_as_list(on_tool_error)),
        )
        self.max_iterations = max_iterations
        self.max_calls_per_turn = max_calls_per_turn
        self.tool_timeout = tool_timeout
        self.output_key = output_key
        self.generate_config = dict(generate_config or {})
        self.transfer = transfer
        self._transfer: TransferToAgentTool | None = None
        self._transfer_made = False
        self._declared = FirstTime()
        """The tools whose declarations were made (see `_prepare`)."""
        self._may_background = may_run_in_background([*self._tools, *self._toolsets])

    # --- the pieces of a step -----------------------------------------------------------

    def transfer_targets(self) -> dict[str, str]:
        """Agents this one may hand over to: name → description."""
        if not self.transfer:
            return {}
        targets = {sub.name: sub.description for sub in self.sub_agents}
        if isinstance(self.parent, LlmAgent):
            targets[self.parent.name] = self.parent.description
        return targets

    async def tools(self, ctx: ToolContext) -> list[Tool]:
        """Every tool offered in this context (toolsets are listed concurrently)."""
        tools: list[Tool] = [*self._tools]
        if self._toolsets:
            for group in await list_each(self._toolsets, ctx):
                tools.extend(group)
        transfer = self._transfer_tool()
        if transfer is not None:
            tools.append(transfer)
        return tools

    def _transfer_tool(self) -> Tool | None:
        # Made on first use, when the tree is complete (a parent is set after its
        # children are made), and kept (None too): a tree does not change afterwards.
        if not self._transfer_made:
            targets = self.transfer_targets()
            if targets:
                self._transfer = TransferToAgentTool(targets)
            self._transfer_made = True
        return self._transfer

    async def _prepare(self, ctx: RunContext) -> tuple[LlmRequest, ToolContext]:
        tool_ctx = ToolContext(ctx.invocation(self.name))
        instruction = self.instruction
        request = LlmRequest(
            model=None,
            contents=ctx.history(self.name).contents(ctx.session.events),
            system_instruction=instruction(tool_ctx.invocation)
            if callable(instruction)
            else instruction,
            config=dict(self.generate_config) if self.generate_config else {},
        )
        tools = await self.tools(tool_ctx)
        # Many tools' declarations first made off the event loop (a huge spec's, built
        # on demand), then asked for below.
        await self._declared.make(tools, _declaration, only_many=True)
        for tool in tools:
            await tool.process_llm_request(request, tool_ctx)
        return request, tool_ctx

    def _dispatcher(
        self, ctx: RunContext, tools: Mapping[str, Tool], background: BackgroundCalls | None
    ) -> Dispatcher:
        return Dispatcher(
            ctx=ctx,
            agent_name=self.name,
            tools=tools,
            callbacks=self.callbacks,
            default_timeout=self.tool_timeout,
            background=background,
        )

    async def _pull(
        self, ctx: RunContext, dispatcher: Dispatcher, outcomes: list[CallOutcome]
    ) -> AsyncGenerator[Event]:
        """Run the streaming calls among ``outcomes``, one after the other: each result
        is yielded as a partial event while the call runs, and its outcome replaces the
        placeholder once it ends."""
        for index, outcome in enumerate(outcomes):
            run = outcome.running
            if run is None:
                continue
            placeholder = outcome.response
            try:
                while True:
                    token = current_run.set(ctx)
                    try:
                        value = await run.__anext__()
                    except StopAsyncIteration:
                        break
                    finally:
                        current_run.reset(token)
                    update = dataclasses.replace(placeholder, response=value)
                    yield ctx.event(
                        author=self.name,
                        content=Content(role="tool", parts=(Part(function_response=update),)),
                        partial=True,
                    )
            finally:
                await run.aclose()
            assert run.outcome is not None
            assert placeholder.id is not None
            outcomes[index] = dispatcher.recorded(placeholder.id, placeholder.name, run.outcome)

    def _arrived(self, ctx: RunContext, background: BackgroundCalls | None) -> Event | None:
        """The event telling the model what background calls ended, if any did."""
        ended = background.take() if background is not None else None
        if ended is None:
            return None
        content, actions = ended
        return ctx.event(author=self.name, content=content, actions=actions)

    async def _dispatch_all(
        self, dispatcher: Dispatcher, calls: Sequence[FunctionCall]
    ) -> list[CallOutcome]:
        # Consecutive concurrency-safe calls run side by side; any other call runs alone,
        # in order. Results keep the calls' order.
        outcomes: list[CallOutcome] = []
        for safe, group in itertools.groupby(calls, dispatcher.is_concurrency_safe):
            if safe:
                outcomes.extend(
                    await gather([functools.partial(dispatcher.dispatch, c) for c in group])
                )
            else:
                for call in group:
                    outcomes.append(await dispatcher.dispatch(call))
        return outcomes

    def _fields(self, ctx: RunContext) -> dict[str, Any]:
        return {"author": self.name, "invocation_id": ctx.invocation_id, "branch": ctx.branch}

    async def _dispatch_admitted(
        self, dispatcher: Dispatcher, calls: Sequence[FunctionCall], refusals: Mapping[str, str]
    ) -> list[CallOutcome]:
        """The outcomes of a turn some of whose calls were refused before dispatch."""
        admitted = [c for c in calls if c.id not in refusals]
        ran = iter(await self._dispatch_all(dispatcher, admitted) if admitted else ())
        return [
            dispatcher.refused(c, refusals[c.id]) if c.id in refusals else next(ran)
            for c in calls
            if c.id is not None
        ]

    def _tool_event(
        self,
        ctx: RunContext,
        outcomes: Sequence[CallOutcome],
        waiting: Sequence[PendingRequest] = (),
    ) -> Event:
        actions = EventActions()
        pending = list(waiting)
        for outcome in outcomes:
            done = outcome.actions
            if done is not None:
                actions.state_delta.update(done.state_delta)
                actions.artifact_delta.update(done.artifact_delta)
                actions.skip_summarization |= done.skip_summarization
                actions.escalate |= done.escalate
                if done.transfer_to_agent is not None:
                    actions.transfer_to_agent = done.transfer_to_agent
            if outcome.pending is not None:
                pending.append(outcome.pending)
        if pending:
            actions.long_running = any(isinstance(p, LongRunningRequest) for p in pending)
        parts = tuple([Part(function_response=o.response) for o in outcomes])
        return Event(
            author=self.name,
            invocation_id=ctx.invocation_id,
            branch=ctx.branch,
            content=Content(role="tool", parts=parts) if parts else None,
            actions=actions,
            pending=tuple(pending),
            resume_state=dict(ctx.agent_states) if pending else {},
        )

    def _act_on(self, ctx: RunContext, event: Event) -> tuple[bool, BaseAgent | None]:
        """Act on a recorded tool-response event: whether this agent's turn is over (a
        pause, escalation, transfer, or a result to be returned as is), and the agent to
        hand over to, if any."""
        if event.pending:
            ctx.paused = True
            return True, None
        actions = event.actions
        if actions.escalate:
            ctx.escalated = True
        target = actions.transfer_to_agent
        if target is None:
            return actions.escalate or actions.skip_summarization, None
        agent = self.root_agent.find_agent(target)
        assert agent is not None  # the dispatcher checked the name
        return True, agent

    # --- the cycle ----------------------------------------------------------------------

    def run(self, ctx: RunContext) -> AsyncIterator[Event]:
        if self._may_background:
            return self._with_background(ctx)
        # A fresh run is the loop itself, one generator less for every event to pass.
        return self._loop(ctx) if ctx.resume is None else self._run_resumed(ctx)

    async def _with_background(self, ctx: RunContext) -> AsyncIterator[Event]:
        """The run, with a task group its background calls run in (only an agent that
        may call a background tool has one): calls still running when it ends are
        cancelled, and the model is told so in the session.

        The task group is held by a task of its own (`_BackgroundHost`), not by this
        generator: no cancel scope spans a ``yield``, so a caller may stop listening
        (``break``, an error, dropping the iterator) without closing it, and the calls
        end as soon as the generator is closed or collected."""
        host = _BackgroundHost(self, ctx)
        host.start()
        try:
            async with host.events:
                async for event in host.events:
                    yield event
            await host.ended.wait()
        finally:
            if not host.ended.is_set():
                host.scope.cancel()
                # A background call's cleanup that never ends does not hold the caller:
                # past the grace, the host ends on its own (it is cancelled already).
                with anyio.move_on_after(BACKGROUND_CLOSE_GRACE, shield=True):
                    await host.ended.wait()
        if host.failure is not None:
            raise host.failure

    async def _run_resumed(
        self, ctx: RunContext, background: BackgroundCalls | None = None
    ) -> AsyncGenerator[Event]:
        assert ctx.resume is not None
        nxt = ctx.resume.next_on_path(self.name)
        if nxt is not None:  # we had handed over to the agent that paused
            child = self.find_agent(nxt)
            assert child is not None
            async for event in child.run(ctx):
                yield event
            return
        turn = _Turn()
        async for event in self._resume(ctx, turn, background):
            yield event
        if turn.ended or ctx.stopped:
            return
        async for event in self._loop(ctx, background):
            yield event

    async def _loop(
        self, ctx: RunContext, background: BackgroundCalls | None = None
    ) -> AsyncGenerator[Event]:
        for _ in range(self.max_iterations):
            if ctx.stopped:
                return
            if background is not None:
                told = self._arrived(ctx, background)
                if told is not None:
                    await ctx.append(told)
                    yield told
            if ctx.counter.llm_calls >= ctx.run_config.max_llm_calls:
                async for event in self._fail(
                    ctx,
                    "max_llm_calls",
                    f"the run reached its limit of {ctx.run_config.max_llm_calls} model calls",
                ):
                    yield event
                return
            request, _ = await self._prepare(ctx)
            ctx.counter.llm_calls += 1
            final = None
            async for response in self.model.generate(request, stream=ctx.run_config.streaming):
                if response.partial:
                    yield ctx.event(author=self.name, content=response.content, partial=True)
                else:
                    final = response
            if final is None:
                raise ToolsetError(f"model {self.model.model!r} ended without a final response")
            if final.error_code is not None:
                async for event in self._fail(
                    ctx, final.error_code, final.error_message or "the model failed", final.usage
                ):
                    yield event
                return

            content, refusals = _admitted(final.content, self.max_calls_per_turn)
            calls = content.function_calls if content is not None else ()
            actions = EventActions()
            if not calls and self.output_key is not None and content is not None:
                actions.state_delta[self.output_key] = content.text
            model_event = Event(
                author=self.name,
                invocation_id=ctx.invocation_id,
                branch=ctx.branch,
                content=content,
                actions=actions,
                usage=final.usage,
                grounding=final.grounding,
            )
            await ctx.append(model_event)
            yield model_event
            if not calls:
                if background is None or not background.waiting:
                    return
                # The model answered while background calls run: their results are
                # what it waits for, and it is called again with the first to end.
                await background.wait()
                continue

            dispatcher = self._dispatcher(ctx, request.tools, background)
            try:
                token = current_run.set(ctx)
                try:
                    if refusals:
                        outcomes = await self._dispatch_admitted(dispatcher, calls, refusals)
                    elif len(calls) == 1:  # most turns: nothing to group or run side by side
                        outcomes = [await dispatcher.dispatch(calls[0])]
                    else:
                        outcomes = await self._dispatch_all(dispatcher, calls)
                finally:
                    current_run.reset(token)
                if _streaming(outcomes):
                    async with contextlib.aclosing(self._pull(ctx, dispatcher, outcomes)) as pulled:
                        async for partial in pulled:
                            yield partial
            except BaseException as exc:
                # The calls are recorded: each gets a result even now, or the session
                # would hold calls without results, which providers refuse ever after.
                with anyio.CancelScope(shield=True):
                    await ctx.append(unfinished_event(calls, exc, **self._fields(ctx)))
                raise
            event = self._tool_event(ctx, outcomes)
            await ctx.append(event)
            yield event
            ended, successor = self._act_on(ctx, event)
            if successor is not None:
                async for handed_over in successor.run(ctx):
                    yield handed_over
            if ended or ctx.stopped:
                return
        async for event in self._fail(
            ctx,
            "max_iterations",
            f"agent {self.name!r} reached its limit of {self.max_iterations} model calls "
            "for one message",
        ):
            yield event

    async def _fail(
        self, ctx: RunContext, code: str, message: str, usage: Any = None
    ) -> AsyncIterator[Event]:
        event = ctx.event(author=self.name, error_code=code, error_message=message, usage=usage)
        await ctx.append(event)
        yield event
        ctx.ended = True

    async def _resume(
        self, ctx: RunContext, turn: _Turn, background: BackgroundCalls | None
    ) -> AsyncIterator[Event]:
        resume = ctx.resume
        assert resume is not None
        ctx.resume = None
        answers = resume.answers
        _, tool_ctx = await self._prepare(ctx)
        tools = {t.name: t for t in await self.tools(tool_ctx)}
        dispatcher = self._dispatcher(ctx, tools, background)
        outcomes: list[CallOutcome] = []
        waiting: list[PendingRequest] = []
        token = current_run.set(ctx)
        try:
            for request in resume.event.pending:
                call_id = request.function_call_id
                call = FunctionCall(id=call_id, name=request.tool_name, args=request.args)
                if call_id not in answers.ids:
                    waiting.append(request)
                elif isinstance(request, ConfirmationRequest):
                    outcomes.append(
                        await dispatcher.dispatch(
                            call, confirmation=answers.confirmations[call_id], resumed=True
                        )
                    )
                elif isinstance(request, CredentialRequest):
                    # It passed the confirmation gate (if any) before asking for this.
                    outcomes.append(
                        await dispatcher.dispatch(
                            call,
                            confirmation=ToolConfirmation(confirmed=True),
                            credential=answers.credentials[call_id],
                            resumed=True,
                        )
                    )
                else:
                    response = FunctionResponse(
                        id=call_id, name=request.tool_name, response=answers.results[call_id]
                    )
                    outcomes.append(CallOutcome(response=response))
        finally:
            current_run.reset(token)
        if _streaming(outcomes):
            async with contextlib.aclosing(self._pull(ctx, dispatcher, outcomes)) as pulled:
                async for partial in pulled:
                    yield partial
        event = self._tool_event(ctx, outcomes, waiting)
        await ctx.append(event)
        yield event
        turn.ended, successor = self._act_on(ctx, event)
        if successor is not None:
            async for handed_over in successor.run(ctx):
                yield handed_over


def _declaration(tool: Tool) -> object:
    return tool.declaration()


def _streaming(outcomes: list[CallOutcome]) -> bool:
    """Whether a call among ``outcomes`` streams (a loop: cheaper than ``any`` over a
    generator, on the path of every turn)."""
    for outcome in outcomes:  # noqa: SIM110  # (see above)
        if outcome.running is not None:
            return True
    return False


@dataclasses.dataclass
class _Turn:
    ended: bool = False
    """Set when this agent's turn is over (a pause, escalation, transfer, or a result
    to be returned as is)."""


def _admitted(content: Content | None, max_calls: int) -> tuple[Content | None, dict[str, str]]:
    """The model's content as it is recorded, and the calls refused before dispatch (by
    id: why).

    Every call gets an id (models may omit them; recorded with the event, the ids stay
    stable across pause and resume). Arguments no tool may see (not an object, nested
    too deep) are recorded as ``{}``: the record must stay readable and sendable back to
    the model. A turn with more than ``max_calls`` calls has every call refused.
    """
    if content is None:
        return None, {}
    calls = content.function_calls
    if not calls:
        return content, {}
    refusals: dict[str, str] = {}
    parts: list[Part] = []
    changed = False
    for part in content.parts:
        call = part.function_call
        if call is not None:
            problem = argument_problem(call.args)
            if problem is not None or not call.id:
                args = call.args if isinstance(call.args, Mapping) else {}
                if problem is not None and not args.keys() <= {INVALID_JSON_KEY}:
                    args = {}
                call = FunctionCall(name=call.name, args=args, id=call.id or new_id("call_"))
                part = Part(function_call=call, provider_data=part.provider_data)
                changed = True
            if problem is not None:
                assert call.id is not None
                refusals[call.id] = problem
        parts.append(part)
    if len(calls) > max_calls:
        refusals = {
            part.function_call.id: (
                f"Not run: this turn made {len(calls)} calls, and at most {max_calls} may "
                f"be made in one turn. Make at most {max_calls} calls at a time."
            )
            for part in parts
            if part.function_call is not None and part.function_call.id is not None
        }
    if not changed:
        return content, refusals
    return Content(role=content.role, parts=tuple(parts)), refusals


UNFINISHED = (
    "The call did not complete: the run stopped{} before its result was recorded; it "
    "may or may not have run."
)


def unfinished_event(
    calls: Sequence[FunctionCall], error: BaseException | None, **fields: Any
) -> Event:
    """An event (with ``fields``) holding an error result for each of ``calls``, which
    were recorded but will get no other."""
    why = f" ({type(error).__name__})" if error is not None else ""
    parts = tuple(
        Part(
            function_response=FunctionResponse(
                id=call.id, name=call.name, response=error_result(UNFINISHED.format(why))
            )
        )
        for call in calls
    )
    return Event(content=Content(role="tool", parts=parts), **fields)


class SequentialAgent(BaseAgent):
    """Runs its sub-agents one after the other, once each."""

    async def run(self, ctx: RunContext) -> AsyncIterator[Event]:
        for sub in self.sub_agents[self._resume_child(ctx) :]:
            async for event in sub.run(ctx):
                yield event
            if ctx.stopped or ctx.escalated:
                return


class LoopAgent(BaseAgent):
    """Runs its sub-agents in order, again and again, until one escalates (e.g. with
    `exit_loop`) or ``max_iterations`` rounds are done (None: until an escalation or the
    run's ``max_llm_calls``)."""

    def __init__(
        self,
        name: str,
        *,
        description: str = "",
        sub_agents: Sequence[BaseAgent] = (),
        max_iterations: int | None = None,
    ) -> None:
        super().__init__(name, description=description, sub_agents=sub_agents)
        if max_iterations is not None and max_iterations < 1:
            raise ValueError("max_iterations must be at least 1 (or None)")
        self.max_iterations = max_iterations

    async def run(self, ctx: RunContext) -> AsyncIterator[Event]:
        start = self._resume_child(ctx)
        saved = ctx.agent_states.get(self.name)
        iteration = int(saved["iteration"]) if isinstance(saved, dict) else 0
        while self.max_iterations is None or iteration < self.max_iterations:
            ctx.agent_states[self.name] = {"iteration": iteration}
            for sub in self.sub_agents[start:]:
                async for event in sub.run(ctx):
                    yield event
                if ctx.escalated:
                    ctx.escalated = False  # the loop is what an escalation breaks
                    ctx.agent_states.pop(self.name, None)
                    return
                if ctx.stopped:
                    return
            start = 0
            iteration += 1
        ctx.agent_states.pop(self.name, None)


class _BackgroundHost:
    """The task an agent's run with background calls runs in: it holds their task group
    and hands the run's events over a zero-buffer stream to the generator the caller
    iterates (`LlmAgent._with_background`), which cancels it when it is closed.

    A task that is no task's child (`start_detached`): a cancel scope held by the
    caller's task across the generator's ``yield`` would be left in another task (or
    never) when the caller stops listening without closing it. Starting it costs a task,
    and the generator waits for it to end (bounded by the grace)."""

    def __init__(self, agent: LlmAgent, ctx: RunContext) -> None:
        self._agent = agent
        self._ctx = ctx
        self._send, self.events = anyio.create_memory_object_stream[Event]()
        self.scope = anyio.CancelScope()
        """Cancelled when the caller stops listening."""
        self.ended = anyio.Event()
        """Set when the run and its background calls have ended."""
        self.failure: BaseException | None = None
        """What ended the run, to be raised to the caller."""
        self._task: object = None

    def start(self) -> None:
        self._task = start_detached(self._run, name=f"toolsets.background-host.{self._agent.name}")

    async def _run(self) -> None:
        try:
            await self._host()
        except BaseException as exc:  # nothing awaits this task: the caller gets it
            if self.failure is None:
                self.failure = exc
        finally:
            self.ended.set()

    async def _host(self) -> None:
        agent, ctx = self._agent, self._ctx
        calls: BackgroundCalls | None = None
        try:
            with self.scope:
                async with anyio.create_task_group() as group:
                    calls = BackgroundCalls(task_group=group)
                    events = (
                        agent._loop(ctx, calls)
                        if ctx.resume is None
                        else agent._run_resumed(ctx, calls)
                    )
                    try:
                        async with self._send, contextlib.aclosing(events):
                            async for event in events:
                                await self._send.send(event)
                    except anyio.BrokenResourceError:
                        pass  # the caller stopped listening
                    except BaseException as exc:  # the run's failure, raised to the caller
                        # Kept here rather than let through the task group, which
                        # would wrap it in an exception group.
                        self.failure = exc
                    calls.cancel("the run ended before the call did")
        finally:
            told = agent._arrived(ctx, calls)
            if told is not None:
                with anyio.CancelScope(shield=True):
                    await ctx.append(told)
