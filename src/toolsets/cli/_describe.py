"""What ``toolsets list`` and ``inspect`` say about a tool: its hints, the HTTP request an
OpenAPI operation sends, what it returns, and its parameters.

A spec of thousands of operations builds each tool's schema only when it is first needed
(`toolsets.openapi.OpenApiToolset`): what a listing says of an operation without its
parameters (name, description, hints, method, path, URL) is read without building it.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from toolsets._errors import SpecError
from toolsets._forwarding import unwrapped
from toolsets._json import JsonValue
from toolsets._tool import Tool
from toolsets._urls import safe_url

if TYPE_CHECKING:
    from toolsets.openapi import RestApiTool
    from toolsets.openapi._returns import SuccessResponse

__all__ = [
    "SHORT",
    "Hints",
    "broken",
    "counted",
    "described",
    "first_line",
    "hints_of",
    "operation_details",
    "operation_of",
    "parameters_in_short",
    "parameters_of",
    "returns_of",
    "success_of",
    "unwrapped",
]

SHORT = 60
"""Characters of a listing's parameters or description column."""


@dataclass(frozen=True, kw_only=True)
class Hints:
    """What a listing says of a tool's behaviour."""

    read_only: bool
    destructive: bool | None
    """None: the tool does not say (a read-only one, say)."""
    asks: bool
    """A call asks the user first (under the command's ``--confirm``)."""

    def __str__(self) -> str:
        shown = []
        if self.read_only:
            shown.append("read-only")
        if self.destructive:
            shown.append("destructive")
        if self.asks:
            shown.append("asks")
        return ", ".join(shown)


def operation_of(tool: Tool) -> RestApiTool | None:
    """The OpenAPI operation ``tool`` calls (under its wrappers), or None (without
    importing the OpenAPI source when no spec was loaded)."""
    module = sys.modules.get("toolsets.openapi._tool")
    if module is None:
        return None
    base = unwrapped(tool)
    return base if isinstance(base, module.RestApiTool) else None


def hints_of(tool: Tool, confirm: str) -> Hints:
    """``tool``'s hints, ``confirm`` being the command's ``--confirm`` policy. An
    operation's come from its method, without building its schema: the command made it
    with ``confirm="never"`` and applies ``confirm`` over it, as `confirmed` does."""
    operation = operation_of(tool)
    if operation is None:
        declaration = tool.declaration()
        return Hints(
            read_only=tool.is_read_only,
            destructive=declaration.annotations.destructive if declaration is not None else None,
            asks=tool.requires_confirmation({}),
        )
    read_only = tool.is_read_only
    destructive = operation.annotations.destructive
    asks = confirm == "always" or (
        confirm == "destructive" and not read_only and destructive is not False
    )
    return Hints(read_only=read_only, destructive=destructive, asks=asks)


def parameters_of(tool: Tool) -> Mapping[str, Any]:
    """The parameters ``tool`` declares (building an operation's schema if it is not)."""
    declaration = tool.declaration()
    return declaration.parameters if declaration is not None else {}


def parameters_in_short(tool: Tool) -> str:
    """``a*, b, c`` (``*``: required), cut to `SHORT` characters."""
    schema = parameters_of(tool)
    required = set(schema.get("required") or ())
    names = [f"{name}*" if name in required else name for name in schema.get("properties", {})]
    text = ", ".join(names)
    return text if len(text) <= SHORT else text[: SHORT - 1] + "…"


def first_line(tool: Tool) -> str:
    """The first line of ``tool``'s description, cut to `SHORT` characters."""
    lines = tool.description.strip().splitlines()
    line = lines[0] if lines else ""
    return line if len(line) <= SHORT else line[: SHORT - 1] + "…"


def success_of(tool: Tool) -> SuccessResponse | SpecError | None:
    """What a successful call of an operation gets, as its spec says (None for a tool
    that is no operation, or an operation whose spec declares no success response), or
    why it cannot be read (a ``$ref`` on the way that leads nowhere)."""
    operation = operation_of(tool)
    if operation is None:
        return None
    try:
        return operation.success_response()
    except SpecError as error:
        return error


def operation_details(
    tool: Tool, success: SuccessResponse | None = None
) -> dict[str, JsonValue] | None:
    """The HTTP request an OpenAPI operation sends (``method``, ``path``, ``url``:
    without user info, None when the spec names no absolute server and no
    ``--base-url`` was given,
    ``operation_id``), and with ``success`` (`success_of`) what a successful call gets
    (``response``: ``status``, ``content_type``, ``description``); None for a tool
    that is no operation."""
    operation = operation_of(tool)
    if operation is None:
        return None
    op = operation.operation
    base = operation.base_url
    details: dict[str, JsonValue] = {
        "method": op.method.upper(),
        "path": op.path,
        # A --base-url may carry a password (Basic auth): never in what is printed.
        "url": safe_url(base) + op.path if base is not None else None,
        "operation_id": op.operation_id,
    }
    if success is not None:
        details["response"] = {
            "status": success.status,
            "content_type": success.content_type,
            "description": success.description,
        }
    return details


def returns_of(tool: Tool, success: SuccessResponse | None) -> Mapping[str, Any] | None:
    """The schema of what ``tool`` returns: its own ``response_schema``, else for an
    operation the schema of its success response (``success``, `success_of`)."""
    declared = tool.response_schema
    if declared is not None:
        return declared
    return success.schema if success is not None else None


def described(tool: Tool, confirm: str, *, schemas: bool) -> dict[str, JsonValue]:
    """``tool`` as ``list --json`` gives it: name, description, hints, and for an
    operation its HTTP request; with ``schemas`` its parameters' schema too (building
    an operation's schema if it is not)."""
    hints = hints_of(tool, confirm)
    entry: dict[str, JsonValue] = {
        "name": tool.name,
        "description": tool.description,
        "read_only": hints.read_only,
        "destructive": hints.destructive,
        "requires_confirmation": hints.asks,
    }
    details = operation_details(tool)
    if details is not None:
        entry["operation"] = details
    if schemas:
        entry["parameters"] = dict(parameters_of(tool))
    return entry


def broken(tool: Tool) -> SpecError | None:
    """Why an operation cannot be offered (its schema is broken), or None."""
    operation = operation_of(tool)
    if operation is None:
        return None
    try:
        operation.arguments_schema  # noqa: B018 - building it is the point
    except SpecError as error:
        return error
    return None


def counted(number: int, thing: str) -> str:
    """``1 tool``, ``2 tools``."""
    return f"{number} {thing}{'' if number == 1 else 's'}"
