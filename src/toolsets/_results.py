"""Results that tell the model a call failed, in one shape for every source of tools."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from toolsets._json import JsonValue

__all__ = ["error_result", "invalid_arguments_result", "is_error_result"]


def error_result(message: str, **details: JsonValue) -> dict[str, JsonValue]:
    """``{"error": message, **details}``: a failure the model should see and may fix."""
    return {"error": message, **details}


def invalid_arguments_result(problems: Iterable[tuple[str, str]]) -> dict[str, JsonValue]:
    """The result for arguments that do not fit the tool's schema.

    The message names no tool: the model knows which call it made, and a wrapped tool's
    own name (before `prefixed` or `renamed`) would only confuse it.

    Args:
        problems: ``(field path, what is wrong)`` pairs; the path is dotted
            (``items.0.name``), ``""`` for the arguments object itself.

    Returns:
        ``{"error": "<sentence naming every field>", "fields": {path: problem}}``.
    """
    fields: dict[str, str] = {}
    for path, problem in problems:
        key = path or "(arguments)"
        fields[key] = f"{fields[key]}; {problem}" if key in fields else problem
    listing = "; ".join(f"{path}: {problem}" for path, problem in fields.items())
    return error_result(
        f"Invalid arguments: {listing}. Fix these fields and call the tool again.",
        fields=dict(fields),
    )


def is_error_result(result: JsonValue) -> bool:
    """True for a result in the ``{"error": ...}`` shape."""
    return isinstance(result, Mapping) and "error" in result
