"""The request being prepared for a model, which tools add themselves to."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from toolsets._content import Content
from toolsets._declaration import ToolDeclaration
from toolsets._errors import ToolDefinitionError

if TYPE_CHECKING:
    from toolsets._tool import Tool

__all__ = ["LlmRequest"]


@dataclass(kw_only=True)
class LlmRequest:
    """What will be sent to the model: the conversation, instructions and tools.

    Tools edit it in ``process_llm_request``: most add their declaration with
    `add_tool`; passive tools change the instructions or contents instead.
    """

    model: str | None = None
    """The model to call, if the request names one."""
    contents: list[Content] = field(default_factory=list)
    """The conversation so far (the list is the request's own; the turns in it are the
    session's, read-only)."""
    system_instruction: str = ""
    """The system prompt."""
    config: dict[str, Any] = field(default_factory=dict)
    """Provider options (temperature, max tokens, ...)."""
    tools: dict[str, Tool] = field(default_factory=dict)
    """The callable tools, by the name the model uses."""
    declarations: dict[str, ToolDeclaration] = field(default_factory=dict)
    """Their declarations, by name, in the order they were added."""

    def add_tool(self, tool: Tool, declaration: ToolDeclaration | None = None) -> None:
        """Offer ``tool`` to the model under its declaration's name.

        Raises:
            ToolDefinitionError: the tool has no declaration, or another tool already
                uses the name.
        """
        decl = declaration if declaration is not None else tool.declaration()
        if decl is None:
            raise ToolDefinitionError(
                f"tool {tool.name!r} is passive (no declaration) and cannot be offered",
                tool_name=tool.name,
            )
        if decl.name in self.declarations:
            raise ToolDefinitionError(
                f"two tools are named {decl.name!r}; rename or prefix one of them",
                tool_name=decl.name,
            )
        self.tools[decl.name] = tool
        self.declarations[decl.name] = decl

    def append_instructions(self, *texts: str) -> None:
        """Add paragraphs to the system instruction."""
        self.system_instruction = "\n\n".join(t for t in (self.system_instruction, *texts) if t)

    def extend_contents(self, contents: Iterable[Content]) -> None:
        """Add turns to the end of the conversation."""
        self.contents.extend(contents)
