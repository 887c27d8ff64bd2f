from __future__ import annotations

import toolsets

EXPECTED = {
    "LONG_RUNNING_NOTE",
    "ArtifactService",
    "AuthConfig",
    "AuthCredential",
    "BaseTool",
    "BaseToolset",
    "Blob",
    "Cancellation",
    "ConnectionError",
    "Content",
    "CredentialKind",
    "EventActions",
    "FileData",
    "FunctionCall",
    "FunctionResponse",
    "FunctionTool",
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
    "Toolset",
    "ToolsetError",
    "combined",
    "error_result",
    "filtered",
    "invalid_arguments_result",
    "is_error_result",
    "prefixed",
    "renamed",
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
