"""`TransferToAgentTool`: the built-in tool that hands the run to another agent."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toolsets._context import ToolContext
from toolsets._json import JsonValue
from toolsets._results import error_result
from toolsets._tool import BaseTool

__all__ = ["TransferToAgentTool", "transfer_to_agent_tool"]


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
