"""Gemini's server-side tools: Google Search, URL context and code execution, which
Gemini runs itself while it answers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toolsets._context import ToolContext
from toolsets._declaration import ToolDeclaration
from toolsets._json import JsonValue
from toolsets._results import error_result
from toolsets._tool import BaseTool, LlmRequest, ServerTool

__all__ = ["built_in_code_execution_tool", "google_search_tool", "url_context_tool"]


class _GeminiServerTool(BaseTool):
    """A passive tool that asks Gemini to offer one of its own tools."""

    def __init__(self, name: str, description: str) -> None:
        super().__init__(name, description)
        self._server_tool = ServerTool(name=name, provider="gemini", wire={name: {}})

    def declaration(self) -> ToolDeclaration | None:
        return None  # passive: Gemini runs it, the loop never dispatches a call to it

    async def run(self, args: Mapping[str, Any], ctx: ToolContext) -> JsonValue:
        return error_result(f"{self.name} runs on Gemini's servers and is not callable here")

    async def process_llm_request(self, req: LlmRequest, ctx: ToolContext) -> None:
        req.add_server_tool(self._server_tool)


def google_search_tool() -> BaseTool:
    """Let Gemini search the web with Google Search while it answers.

    The request gets ``{"google_search": {}}`` (once, however many of these tools an
    agent holds); the answer's sources come back as the model event's ``grounding``. Only
    a `GeminiModel` can send it: another model raises `ToolDefinitionError` naming the
    tool and the model.
    """
    return _GeminiServerTool("google_search", "Gemini searches the web with Google Search.")


def url_context_tool() -> BaseTool:
    """Let Gemini read the web pages named in the conversation (``{"url_context": {}}``);
    what it retrieved comes back in the model event's ``grounding.raw``.
    Gemini only, as `google_search_tool`."""
    return _GeminiServerTool("url_context", "Gemini reads the pages at URLs in the prompt.")


def built_in_code_execution_tool() -> BaseTool:
    """Let Gemini write and run Python in Google's sandbox while it answers
    (``{"code_execution": {}}``); the code and its output come back as parts of the
    model event (`toolsets.ExecutableCode`, `toolsets.CodeExecutionResult`, see
    ``Event.code_executions``). Gemini only, as `google_search_tool`."""
    return _GeminiServerTool("code_execution", "Gemini runs Python code it writes.")
