"""Models: the `Llm` protocol the agent loop and MCP sampling call, what a model
answers, and the models themselves (a scripted one for tests and offline examples, and
any OpenAI-compatible chat API, OpenAI's Responses API, Anthropic's Messages API, and
Gemini with its server-side tools)."""

from toolsets.models._anthropic import TOOL_SEARCH_MODELS, AnthropicModel, ToolSearch
from toolsets.models._gemini import GeminiModel
from toolsets.models._gemini_tools import (
    built_in_code_execution_tool,
    google_search_tool,
    url_context_tool,
)
from toolsets.models._llm import (
    INVALID_JSON_KEY,
    FinishReason,
    Grounding,
    GroundingSource,
    Llm,
    LlmResponse,
    Usage,
)
from toolsets.models._openai import OpenAIChatModel
from toolsets.models._openai_responses import (
    OPENAI_TOOL_SEARCH_MODELS,
    OpenAIResponsesModel,
    ResponsesToolSearch,
)
from toolsets.models._scripted import ScriptedModel, ScriptExhaustedError, Step

__all__ = [
    "AnthropicModel",
    "INVALID_JSON_KEY",
    "FinishReason",
    "GeminiModel",
    "Grounding",
    "GroundingSource",
    "Llm",
    "LlmResponse",
    "OPENAI_TOOL_SEARCH_MODELS",
    "OpenAIChatModel",
    "OpenAIResponsesModel",
    "ResponsesToolSearch",
    "ScriptExhaustedError",
    "ScriptedModel",
    "Step",
    "TOOL_SEARCH_MODELS",
    "ToolSearch",
    "Usage",
    "built_in_code_execution_tool",
    "google_search_tool",
    "url_context_tool",
]
