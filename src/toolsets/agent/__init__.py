"""The agent loop: `LlmAgent` and workflow agents, the `Runner`, sessions, models and
built-in tools."""

from toolsets._json import MAX_JSON_DEPTH
from toolsets._request import LlmRequest
from toolsets.agent._agents import (
    DEFAULT_MAX_CALLS_PER_TURN,
    DEFAULT_TOOL_TIMEOUT,
    BaseAgent,
    LlmAgent,
    LoopAgent,
    SequentialAgent,
)
from toolsets.agent._builtins import (
    AgentTool,
    TransferToAgentTool,
    exit_loop,
    get_user_choice_tool,
    load_artifacts_tool,
    load_memory_tool,
    preload_memory_tool,
    transfer_to_agent_tool,
)
from toolsets.agent._credentials import CredentialStore, InMemoryCredentialStore
from toolsets.agent._dispatch import AfterTool, BeforeTool, OnToolError
from toolsets.agent._events import (
    ConfirmationRequest,
    CredentialRequest,
    Event,
    LongRunningRequest,
    PendingRequest,
)
from toolsets.agent._llm import INVALID_JSON_KEY, FinishReason, Llm, LlmResponse, Usage
from toolsets.agent._openai import OpenAIChatModel
from toolsets.agent._run import RunConfig
from toolsets.agent._runner import Runner
from toolsets.agent._scripted import ScriptedModel, ScriptExhaustedError, Step
from toolsets.agent._session import (
    InMemorySessionService,
    Session,
    SessionNotFoundError,
    SessionService,
    SharesEventsForRuns,
)

__all__ = [
    "DEFAULT_MAX_CALLS_PER_TURN",
    "DEFAULT_TOOL_TIMEOUT",
    "INVALID_JSON_KEY",
    "MAX_JSON_DEPTH",
    "AfterTool",
    "AgentTool",
    "BaseAgent",
    "BeforeTool",
    "ConfirmationRequest",
    "CredentialRequest",
    "CredentialStore",
    "Event",
    "FinishReason",
    "InMemoryCredentialStore",
    "InMemorySessionService",
    "Llm",
    "LlmAgent",
    "LlmRequest",
    "LlmResponse",
    "LongRunningRequest",
    "LoopAgent",
    "OnToolError",
    "OpenAIChatModel",
    "PendingRequest",
    "RunConfig",
    "Runner",
    "ScriptExhaustedError",
    "ScriptedModel",
    "SequentialAgent",
    "Session",
    "SessionNotFoundError",
    "SessionService",
    "SharesEventsForRuns",
    "Step",
    "TransferToAgentTool",
    "Usage",
    "exit_loop",
    "get_user_choice_tool",
    "load_artifacts_tool",
    "load_memory_tool",
    "preload_memory_tool",
    "transfer_to_agent_tool",
]
