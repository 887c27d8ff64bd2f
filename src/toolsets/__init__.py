"""toolsets: give LLM agents tools from MCP servers, OpenAPI specs and Python functions.

Everything is a `Tool`, and tools come from a `Toolset`. See the documentation (docs/) for a tour.
"""

from typing import TYPE_CHECKING

from toolsets import telemetry as telemetry  # reads the OTEL_* environment, once
from toolsets._access import AccessPolicy, AccessRule
from toolsets._auth import AuthConfig, AuthCredential, CredentialKind
from toolsets._client_channel import (
    Answer,
    Capability,
    ClientChannel,
    ClientRequest,
    Elicit,
    Elicitation,
    ListRoots,
    LogLevel,
    Root,
    Sample,
    Sampled,
)
from toolsets._confirmed import ConfirmedTool, ConfirmPolicy, confirmed
from toolsets._content import (
    Blob,
    CodeExecutionResult,
    Content,
    ExecutableCode,
    FileData,
    FunctionCall,
    FunctionResponse,
    Part,
    Role,
)
from toolsets._context import (
    Cancellation,
    EventActions,
    Identity,
    Invocation,
    State,
    ToolConfirmation,
    ToolContext,
)
from toolsets._declaration import ToolAnnotations, ToolDeclaration
from toolsets._errors import (
    AuthError,
    ConnectionError,
    MissingClientCapabilityError,
    ServiceNotConfiguredError,
    SpecError,
    ToolCallError,
    ToolDefinitionError,
    ToolNotFoundError,
    ToolsetError,
)
from toolsets._function_tool import FunctionTool, tool
from toolsets._invoke import Callbacks, intercept
from toolsets._json import JsonObject, JsonValue
from toolsets._phased import phased
from toolsets._restricted import restricted
from toolsets._results import error_result, invalid_arguments_result, is_error_result
from toolsets._services import (
    ArtifactService,
    InMemoryArtifactService,
    InMemoryMemoryService,
    MemoryEntry,
    MemoryService,
)
from toolsets._streaming import ToolStream
from toolsets._tool import LONG_RUNNING_NOTE, BaseTool, LlmRequest, ServerTool, Tool
from toolsets._toolset import BaseToolset, StaticToolset, Toolset
from toolsets._wrappers import RenamedTool, combined, filtered, prefixed, renamed
from toolsets.search._searchable import searchable  # bm25s is imported on first search

if TYPE_CHECKING:  # what `__getattr__` gives, for the type checker
    from toolsets.code import code_mode

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    # Imported when first used: code mode is an extra's (pydantic-monty).
    if name == "code_mode":
        from toolsets.code import code_mode

        return code_mode
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "LONG_RUNNING_NOTE",
    "AccessPolicy",
    "AccessRule",
    "Answer",
    "ArtifactService",
    "AuthConfig",
    "AuthCredential",
    "AuthError",
    "BaseTool",
    "BaseToolset",
    "Blob",
    "Callbacks",
    "Cancellation",
    "Capability",
    "ClientChannel",
    "ClientRequest",
    "CodeExecutionResult",
    "ConfirmPolicy",
    "ConfirmedTool",
    "ConnectionError",
    "Content",
    "CredentialKind",
    "Elicit",
    "Elicitation",
    "EventActions",
    "ExecutableCode",
    "FileData",
    "FunctionCall",
    "FunctionResponse",
    "FunctionTool",
    "Identity",
    "InMemoryArtifactService",
    "InMemoryMemoryService",
    "Invocation",
    "JsonObject",
    "JsonValue",
    "ListRoots",
    "LlmRequest",
    "LogLevel",
    "MemoryEntry",
    "MemoryService",
    "MissingClientCapabilityError",
    "Part",
    "RenamedTool",
    "Role",
    "Root",
    "Sample",
    "Sampled",
    "ServerTool",
    "ServiceNotConfiguredError",
    "SpecError",
    "State",
    "StaticToolset",
    "Tool",
    "ToolAnnotations",
    "ToolCallError",
    "ToolConfirmation",
    "ToolContext",
    "ToolDeclaration",
    "ToolDefinitionError",
    "ToolNotFoundError",
    "ToolStream",
    "Toolset",
    "ToolsetError",
    "code_mode",
    "combined",
    "confirmed",
    "error_result",
    "filtered",
    "intercept",
    "invalid_arguments_result",
    "is_error_result",
    "phased",
    "prefixed",
    "renamed",
    "restricted",
    "searchable",
    "tool",
]
