"""Results that tell the model a call failed, in one shape for every source of tools."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from toolsets._json import JsonValue

__all__ = [
    "INVALID_JSON_KEY",
    "MAX_FIELDS",
    "clip",
    "error_result",
    "invalid_arguments_result",
    "is_error_result",
]

INVALID_JSON_KEY = "_invalid_json"
"""Arguments a model sent that cannot be read are handed on as ``{INVALID_JSON_KEY:
...}``: the text of the whole arguments when it is no JSON object (a model hands it on
so), or ``{field path: what is wrong}`` for values a provider dialect made the model
write as JSON text that is no JSON (`toolsets.schema`'s ``restore`` hands them on so).
No tool sees them: the agent loop and the call path tell the model what was wrong."""

MAX_PROBLEM = 200
"""Characters of one field's problem (or path) an invalid-arguments result keeps: a
problem often quotes the value, which may be huge."""
MAX_FIELDS = 20
"""Fields an invalid-arguments result names; the rest are counted."""


def clip(text: str, limit: int) -> str:
    """``text``, cut to at most ``limit`` characters (marked with an ellipsis)."""
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


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
        ``{"error": "<sentence naming the fields>", "fields": {path: problem}}``. Each
        problem is said once (in ``fields``), cut to `MAX_PROBLEM` characters; at most
        `MAX_FIELDS` fields are named.
    """
    fields: dict[str, str] = {}
    more = 0
    for path, problem in problems:
        key = clip(path, MAX_PROBLEM) if path else "(arguments)"
        if key in fields:
            fields[key] = clip(f"{fields[key]}; {problem}", MAX_PROBLEM)
        elif len(fields) < MAX_FIELDS:
            fields[key] = clip(problem, MAX_PROBLEM)
        else:
            more += 1
    listing = ", ".join(fields) + (f" and {more} more" if more else "")
    return error_result(
        f"Invalid arguments: {listing} (see fields). Fix them and call the tool again.",
        fields=dict(fields),
    )


def is_error_result(result: JsonValue) -> bool:
    """True for a result in the ``{"error": ...}`` shape."""
    return isinstance(result, Mapping) and "error" in result
