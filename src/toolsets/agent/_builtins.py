"""Built-in tools: exit a loop, ask the user to choose, memory and artifacts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toolsets._content import Content
from toolsets._context import ToolContext
from toolsets._declaration import ToolDeclaration
from toolsets._function_tool import FunctionTool, tool
from toolsets._json import JsonValue
from toolsets._results import error_result
from toolsets._tool import BaseTool, LlmRequest

__all__ = [
    "exit_loop",
    "get_user_choice_tool",
    "load_artifacts_tool",
    "load_memory_tool",
    "preload_memory_tool",
]


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
