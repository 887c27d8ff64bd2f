"""Models: the `Llm` protocol the agent loop and MCP sampling call, what a model
answers, and the models themselves (a scripted one for tests and offline examples, and
any OpenAI-compatible chat API, Anthropic's Messages API)."""

from toolsets.models._anthropic import AnthropicModel
from toolsets.models._llm import INVALID_JSON_KEY, FinishReason, Llm, LlmResponse, Usage
from toolsets.models._openai import OpenAIChatModel
from toolsets.models._scripted import ScriptedModel, ScriptExhaustedError, Step

__all__ = [
    "AnthropicModel",
    "INVALID_JSON_KEY",
    "FinishReason",
    "Llm",
    "LlmResponse",
    "OpenAIChatModel",
    "ScriptExhaustedError",
    "ScriptedModel",
    "Step",
    "Usage",
]
