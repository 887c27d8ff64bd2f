"""`AgentTool`: an agent offered as a tool to another agent's model."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toolsets._content import Content, Part
from toolsets._context import ToolContext
from toolsets._declaration import ToolAnnotations
from toolsets._json import JsonValue
from toolsets._results import error_result
from toolsets._tool import BaseTool
from toolsets.agent._agents import BaseAgent
from toolsets.agent._run import current_run
from toolsets.agent._runner import Runner

__all__ = ["AgentTool"]


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
        self._agent_names = frozenset(a.name for a in agent.walk())
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
        child = run.branched(branch, content, self._agent_names)
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
