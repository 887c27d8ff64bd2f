"""The agent loop: `LlmAgent` and workflow agents, the `Runner`, sessions and built-in
tools. The models it calls live in `toolsets.models`."""

import toolsets.models
from toolsets._invoke import AfterTool, BeforeTool, OnToolError
from toolsets._json import MAX_JSON_DEPTH
from toolsets._tool import LlmRequest
from toolsets.agent._agent_tool import AgentTool
from toolsets.agent._agents import (
    DEFAULT_MAX_CALLS_PER_TURN,
    DEFAULT_TOOL_TIMEOUT,
    BaseAgent,
    LlmAgent,
    LoopAgent,
    SequentialAgent,
)
from toolsets.agent._background import (
    BackgroundFormatter,
    BackgroundStatus,
    BackgroundTool,
    BackgroundUpdate,
    background,
    default_background_format,
)
from toolsets.agent._builtins import (
    exit_loop,
    get_user_choice_tool,
    load_artifacts_tool,
    load_memory_tool,
    preload_memory_tool,
)
from toolsets.agent._credentials import CredentialStore, InMemoryCredentialStore
from toolsets.agent._events import (
    ConfirmationRequest,
    CredentialRequest,
    Event,
    LongRunningRequest,
    PendingRequest,
)
from toolsets.agent._run import RunConfig
from toolsets.agent._runner import Runner
from toolsets.agent._session import (
    InMemorySessionService,
    Session,
    SessionNotFoundError,
    SessionService,
    SharesEventsForRuns,
)
from toolsets.agent._transfer import TransferToAgentTool, transfer_to_agent_tool

__all__ = [
    "DEFAULT_MAX_CALLS_PER_TURN",
    "DEFAULT_TOOL_TIMEOUT",
    "MAX_JSON_DEPTH",
    "AfterTool",
    "AgentTool",
    "BackgroundFormatter",
    "BackgroundStatus",
    "BackgroundTool",
    "BackgroundUpdate",
    "BaseAgent",
    "BeforeTool",
    "ConfirmationRequest",
    "CredentialRequest",
    "CredentialStore",
    "Event",
    "InMemoryCredentialStore",
    "InMemorySessionService",
    "LlmAgent",
    "LlmRequest",
    "LongRunningRequest",
    "LoopAgent",
    "OnToolError",
    "PendingRequest",
    "RunConfig",
    "Runner",
    "SequentialAgent",
    "Session",
    "SessionNotFoundError",
    "SessionService",
    "SharesEventsForRuns",
    "TransferToAgentTool",
    "background",
    "default_background_format",
    "exit_loop",
    "get_user_choice_tool",
    "load_artifacts_tool",
    "load_memory_tool",
    "preload_memory_tool",
    "transfer_to_agent_tool",
]


def __getattr__(name: str) -> object:
    # The models live in toolsets.models; say so to code written for toolsets.agent.
    if name in toolsets.models.__all__:
        # An ImportError, not an AttributeError: ``from toolsets.agent import X`` shows
        # an AttributeError's message as a bare "cannot import name".
        raise ImportError(
            f"{name} is in toolsets.models, not toolsets.agent: from toolsets.models import {name}",
            name=__name__,
            path=__file__,
        )
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
