from __future__ import annotations

import pytest

import toolsets
import toolsets.agent
import toolsets.models

EXPECTED = {
    "LONG_RUNNING_NOTE",
    "ArtifactService",
    "MissingClientCapabilityError",
    "Sampled",
    "Sample",
    "Root",
    "LogLevel",
    "Capability",
    "ListRoots",
    "Elicitation",
    "Elicit",
    "ClientRequest",
    "ClientChannel",
    "AccessPolicy",
    "AccessRule",
    "Answer",
    "AuthConfig",
    "AuthCredential",
    "AuthError",
    "BaseTool",
    "BaseToolset",
    "Blob",
    "Callbacks",
    "Cancellation",
    "CodeExecutionResult",
    "ConfirmPolicy",
    "ConfirmedTool",
    "ConnectionError",
    "Content",
    "CredentialKind",
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
    "LlmRequest",
    "MemoryEntry",
    "MemoryService",
    "Part",
    "RenamedTool",
    "Role",
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
}


def test_the_public_names_are_exactly_the_pinned_ones() -> None:
    assert set(toolsets.__all__) == EXPECTED
    assert len(toolsets.__all__) == len(EXPECTED), "a name is listed twice"


def test_every_public_name_is_importable_and_comes_from_a_private_module() -> None:
    for name in toolsets.__all__:
        member = getattr(toolsets, name)
        module = getattr(member, "__module__", None)
        if module is not None and isinstance(member, type):
            assert module.startswith("toolsets._"), (name, module)


def test_private_modules_declare_what_they_export() -> None:
    import importlib
    import pkgutil

    for info in pkgutil.iter_modules(toolsets.__path__):
        if info.name.startswith("_"):
            module = importlib.import_module(f"toolsets.{info.name}")
            assert hasattr(module, "__all__"), info.name


def test_what_a_module_imports_from_a_private_module_that_module_declares() -> None:
    import ast
    import importlib
    import inspect
    import pkgutil
    import sys

    undeclared = []
    for info in pkgutil.walk_packages(toolsets.__path__, "toolsets."):
        module = importlib.import_module(info.name)
        for node in ast.walk(ast.parse(inspect.getsource(module))):
            if not (isinstance(node, ast.ImportFrom) and node.level == 0 and node.module):
                continue
            parts = node.module.split(".")
            if parts[0] != "toolsets" or not any(p.startswith("_") for p in parts):
                continue
            declared = getattr(importlib.import_module(node.module), "__all__", ())
            undeclared += [
                f"{info.name}: {node.module}.{alias.name}"
                for alias in node.names
                if alias.name not in declared and f"{node.module}.{alias.name}" not in sys.modules
            ]
    assert undeclared == []


AGENT = {
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
}

SCHEMA = {
    "DROPPED_KEYWORDS",
    "GEMINI_RECURSION_DEPTH",
    "STRICT_LIMITS",
    "DialectSchema",
    "ToolCallMap",
    "ToolNameMap",
    "anthropic_input_schema",
    "gemini_parameters",
    "gemini_parameters_json_schema",
    "legal_tool_name",
    "openai_parameters",
    "openai_strict_parameters",
    "to_anthropic_tools",
    "to_gemini_declarations",
    "to_openai_tools",
}


MODELS = {
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
}


def test_the_agent_models_and_schema_packages_export_exactly_the_pinned_names() -> None:
    import toolsets.agent
    import toolsets.models
    import toolsets.schema

    assert set(toolsets.agent.__all__) == AGENT
    assert len(toolsets.agent.__all__) == len(AGENT)
    assert set(toolsets.models.__all__) == MODELS
    assert len(toolsets.models.__all__) == len(MODELS)
    assert set(toolsets.schema.__all__) == SCHEMA
    for module in (toolsets.agent, toolsets.models, toolsets.schema):
        for name in module.__all__:
            assert getattr(module, name) is not None


def test_private_modules_of_subpackages_declare_what_they_export() -> None:
    import importlib
    import pkgutil

    import toolsets.agent
    import toolsets.models
    import toolsets.schema

    for package in (toolsets.agent, toolsets.models, toolsets.schema):
        for info in pkgutil.iter_modules(package.__path__):
            module = importlib.import_module(f"{package.__name__}.{info.name}")
            assert hasattr(module, "__all__"), module.__name__


MCP = {
    "AUDIT_LOGGER",
    "AssertionSource",
    "AuditOutcome",
    "AuditRecord",
    "CredentialResolver",
    "ServerCredentials",
    "TOKEN_EXCHANGE_TIMEOUT",
    "TokenExchange",
    "UserBearer",
    "UserCredentials",
    "DEFAULT_CALL_TIMEOUT",
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_PAGE_SIZE",
    "MAX_SESSION_STATES",
    "SESSION_STATE_TTL",
    "LIST_TTL",
    "GATEWAY_LIST_TTL",
    "KILL_GRACE",
    "Completer",
    "CredentialsFor",
    "ElicitationHandler",
    "HeaderProvider",
    "IncomingRequest",
    "InputValues",
    "Introspection",
    "InvocationFor",
    "McpServer",
    "McpTool",
    "McpToolset",
    "MemorySpentStates",
    "OAuthResourceServer",
    "FileLoginStore",
    "KeyringLoginStore",
    "LOGIN_TIMEOUT",
    "LoginPrompt",
    "LoginStore",
    "LoginStoreKind",
    "ProgressHandler",
    "Prompt",
    "PromptArgument",
    "PromptMessages",
    "RedisSpentStates",
    "Resource",
    "ResourceTemplate",
    "RootsSource",
    "SamplingHandler",
    "SessionEventStore",
    "SpentStates",
    "Sse",
    "StderrTarget",
    "Stdio",
    "StreamableHttp",
    "Transport",
    "WorkloadIdentity",
    "convert_result",
    "forget_login",
    "load_mcp_config",
    "oauth_client_credentials",
    "oauth_login",
    "prompt",
    "read_mcp_config",
    "resource",
    "resource_template",
}


def test_the_mcp_package_exports_exactly_the_pinned_names() -> None:
    import importlib
    import pkgutil

    import toolsets.mcp

    assert set(toolsets.mcp.__all__) == MCP
    assert len(toolsets.mcp.__all__) == len(MCP)
    for info in pkgutil.iter_modules(toolsets.mcp.__path__):
        module = importlib.import_module(f"toolsets.mcp.{info.name}")
        assert hasattr(module, "__all__"), module.__name__


SEARCH = {
    "DEFAULT_MAX_LOADED",
    "SEARCH_TOOL_NAME",
    "HiddenTool",
    "IndexEntry",
    "Match",
    "SearchableToolset",
    "ToolIndex",
    "searchable",
}


def test_the_search_package_exports_exactly_the_pinned_names() -> None:
    """One way to ask the declaration a call is made under: `call_declaration` (a
    `HiddenTool` has the method), no second helper beside it."""
    import toolsets.search

    assert set(toolsets.search.__all__) == SEARCH
    assert len(toolsets.search.__all__) == len(SEARCH)
    for name in toolsets.search.__all__:
        assert getattr(toolsets.search, name) is not None
    assert not hasattr(toolsets.search, "hidden_declaration")
    assert not hasattr(toolsets.search.HiddenTool, "hidden_declaration")


@pytest.mark.parametrize("name", ["ScriptedModel", "OpenAIChatModel", "Llm"])
def test_a_model_name_asked_of_the_agent_package_says_where_it_is(name: str) -> None:
    with pytest.raises(ImportError) as caught:
        exec(f"from toolsets.agent import {name}", {})

    assert f"from toolsets.models import {name}" in str(caught.value)
    assert getattr(toolsets.models, name) is not None


def test_other_missing_names_of_the_agent_package_are_plain_attribute_errors() -> None:
    assert not hasattr(toolsets.agent, "no_such_name")


CALLS = {
    "BYTES_PER_TOKEN",
    "DEFAULT_MAX_RESULT_BYTES",
    "DEFAULT_RETRY_STATUSES",
    "CallNext",
    "CallWrapper",
    "RateLimit",
    "ResultLimit",
    "Retry",
    "ToolCall",
    "Try",
    "WrappedTool",
    "upstream_of",
    "wrap_calls",
}


def test_the_calls_package_exports_exactly_the_pinned_names() -> None:
    import toolsets.calls

    assert set(toolsets.calls.__all__) == CALLS
    assert len(toolsets.calls.__all__) == len(CALLS)
    for name in toolsets.calls.__all__:
        assert getattr(toolsets.calls, name) is not None
