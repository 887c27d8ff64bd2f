"""Built-in tools: transfer, exit a loop, ask the user to choose, memory, artifacts, and
agents as tools."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toolsets._content import Content, Part
from toolsets._context import ToolContext
from toolsets._declaration import ToolAnnotations, ToolDeclaration
from toolsets._function_tool import FunctionTool, tool
from toolsets._json import JsonValue
from toolsets._request import LlmRequest
from toolsets._results import error_result
from toolsets._tool import BaseTool
from toolsets.agent._agents import BaseAgent, current_run

__all__ = [
    "AgentTool",
    "TransferToAgentTool",
    "exit_loop",
    "get_user_choice_tool",
    "load_artifacts_tool",
    "load_memory_tool",
    "preload_memory_tool",
    "transfer_to_agent_tool",
]


class TransferToAgentTool(BaseTool):
    """Hands the rest of the run to another agent of the tree.

    With ``targets`` (name → description) the model is offered exactly those names; an
    agent with sub-agents gets one automatically. Without, any name is accepted here and
    checked against the tree when the call is dispatched.
    """

    def __init__(self, targets: Mapping[str, str] | None = None) -> None:
        self.targets = dict(targets) if targets is not None else None
        name_schema: dict[str, Any] = {"type": "string", "description": "The agent's name."}
        description = "Hand the conversation over to another agent better suited to it."
        if self.targets:
            name_schema["enum"] = sorted(self.targets)
            listing = "\n".join(
                f"- {name}: {text}" if text else f"- {name}"
                for name, text in sorted(self.targets.items())
            )
            description += f" The agents:\n{listing}"
        super().__init__(
            "transfer_to_agent",
            description,
            parameters={
                "type": "object",
                "properties": {"agent_name": name_schema},
                "required": ["agent_name"],
                "additionalProperties": False,
            },
        )

    async def run(self, args: Mapping[str, Any], ctx: ToolContext) -> JsonValue:
        name = args.get("agent_name")
        if not isinstance(name, str):
            return error_result("agent_name must be a string", fields={"agent_name": "required"})
        if self.targets is not None and name not in self.targets:
            return error_result(
                f"There is no agent named {name!r} to transfer to. "
                f"Agents: {', '.join(sorted(self.targets))}."
            )
        ctx.actions.transfer_to_agent = name
        return {"transferred_to": name}


transfer_to_agent_tool = TransferToAgentTool()
"""Transfer to any agent of the tree (names are checked when the call is dispatched)."""


@tool
def exit_loop(ctx: ToolContext) -> dict[str, str]:
    """Stop the loop this agent runs in: call this only when the task is complete."""
    ctx.actions.escalate = True
    ctx.actions.skip_summarization = True
    return {"status": "loop exited"}


@tool(is_long_running=True, name="get_user_choice")
def get_user_choice_tool(options: list[str], ctx: ToolContext) -> dict[str, JsonValue]:
    """Ask the user to choose one of several options; the choice arrives later.

    Args:
        options: The options to show the user.
    """
    ctx.actions.skip_summarization = True
    return {"status": "waiting for the user's choice", "options": list(options)}


def _memory_text(entry_content: Content) -> str:
    return entry_content.text


@tool(read_only=True, name="load_memory")
async def load_memory_tool(query: str, ctx: ToolContext) -> dict[str, JsonValue]:
    """Search the user's long-term memory (earlier conversations).

    Args:
        query: What to look for.
    """
    entries = await ctx.search_memory(query)
    return {
        "memories": [
            {"author": e.author, "text": _memory_text(e.content), "timestamp": e.timestamp}
            for e in entries
        ]
    }


class _PreloadMemory(BaseTool):
    """Adds the memories relevant to the user's message to the system instruction."""

    def __init__(self, max_entries: int) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        super().__init__("preload_memory", "Recalls relevant memories before each turn.")
        self.max_entries = max_entries

    def declaration(self) -> ToolDeclaration | None:
        return None  # passive: it shapes the request, the model never calls it

    async def run(self, args: Mapping[str, Any], ctx: ToolContext) -> JsonValue:
        return error_result("preload_memory is not callable")

    async def process_llm_request(self, req: LlmRequest, ctx: ToolContext) -> None:
        message = ctx.user_content.text if ctx.user_content is not None else ""
        if not message.strip():
            return
        entries = list(await ctx.search_memory(message))[: self.max_entries]
        if not entries:
            return
        lines = [
            f"- {e.author}: {_memory_text(e.content)}"
            if e.author
            else f"- {_memory_text(e.content)}"
            for e in entries
        ]
        req.append_instructions(
            "Relevant memories from earlier conversations with this user:\n" + "\n".join(lines)
        )


def preload_memory_tool(max_entries: int = 5) -> BaseTool:
    """A passive tool putting up to ``max_entries`` memories relevant to the user's
    message into the system instruction before each model call."""
    return _PreloadMemory(max_entries)


class _LoadArtifacts(FunctionTool[..., Any]):
    """Tells the model which artifacts exist and loads them on request."""

    async def process_llm_request(self, req: LlmRequest, ctx: ToolContext) -> None:
        if ctx.invocation.artifact_service is not None:
            names = await ctx.list_artifacts()
            if names:
                req.append_instructions(
                    "Artifacts you can load with load_artifacts: " + ", ".join(names)
                )
        await super().process_llm_request(req, ctx)


async def _load_artifacts(artifact_names: list[str], ctx: ToolContext) -> dict[str, JsonValue]:
    """Load artifacts (stored files) by name.

    Args:
        artifact_names: The names to load.
    """
    loaded: list[JsonValue] = []
    for name in artifact_names:
        part = await ctx.load_artifact(name)
        if part is None:
            loaded.append({"name": name, "error": "no such artifact"})
        elif part.text is not None:
            loaded.append({"name": name, "text": part.text})
        elif part.inline_data is not None:
            loaded.append({"name": name, **part.inline_data.to_json()})
        elif part.file_data is not None:
            loaded.append({"name": name, "uri": part.file_data.uri})
        else:
            loaded.append({"name": name, "error": "this artifact holds no content"})
    return {"artifacts": loaded}


load_artifacts_tool: FunctionTool[..., Any] = _LoadArtifacts(
    _load_artifacts, name="load_artifacts", read_only=True
)
"""Lists the session's artifacts in the instruction and loads them on request."""


class AgentTool(BaseTool):
    """An agent offered as a tool: the model sends a request, the agent runs as a
    sub-invocation (sharing the session, its state and the services; its events are
    recorded on their own branch) and its final text comes back as ``{"text": ...}``.

    Outside an agent run it runs in a private in-memory session.
    """

    def __init__(self, agent: BaseAgent, *, name: str | None = None) -> None:
        if agent.parent is not None:
            raise ValueError(f"agent {agent.name!r} belongs to a tree; wrap a root agent")
        self.agent = agent
        super().__init__(
            name or agent.name,
            agent.description or f"Ask the agent {agent.name!r}.",
            parameters={
                "type": "object",
                "properties": {
                    "request": {"type": "string", "description": "What to ask the agent."}
                },
                "required": ["request"],
                "additionalProperties": False,
            },
            annotations=ToolAnnotations(),
        )

    @classmethod
    def wrap(cls, agent: BaseAgent, *, name: str | None = None) -> AgentTool:
        """The agent as a tool."""
        return cls(agent, name=name)

    async def run(self, args: Mapping[str, Any], ctx: ToolContext) -> JsonValue:
        request = args.get("request")
        if not isinstance(request, str) or not request:
            return error_result(
                "request must be a non-empty string", fields={"request": "required"}
            )
        content = Content(role="user", parts=(Part(text=request),))
        run = current_run.get()
        if run is None:
            from toolsets.agent._runner import Runner

            runner = Runner(self.agent)
            session = await runner.create_session(user_id=ctx.user_id)
            texts = [
                e.text
                async for e in runner.run(
                    user_id=ctx.user_id, session_id=session.id, message=content
                )
                if e.is_final_response() and e.text
            ]
            return {"text": texts[-1] if texts else ""}

        branch = f"{run.branch}.{self.agent.name}" if run.branch else self.agent.name
        child = run.branched(branch, content, self.agent)
        await child.append(child.event(author="user", content=content))
        final = ""
        async for event in self.agent.run(child):
            if event.is_final_response() and event.text:
                final = event.text
        if child.paused:
            return error_result(
                f"The agent {self.agent.name!r} needed the user's input (a confirmation, a "
                "credential or a choice), which an agent used as a tool cannot ask for."
            )
        if child.ended:
            last = run.session.events[-1]
            return error_result(f"The agent {self.agent.name!r} failed: {last.error_message}")
        return {"text": final}
