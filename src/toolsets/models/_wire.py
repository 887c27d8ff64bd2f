"""Small readers shared by the models that speak a provider's HTTP wire format."""

from __future__ import annotations

import json
from typing import Any, Final

from toolsets.models._llm import LlmResponse

__all__ = ["MAX_ERROR_MESSAGE", "invalid_response", "json_object", "str_or_none", "truncate"]

MAX_ERROR_MESSAGE: Final = 1000
"""The longest provider error message handed on (longer ones are cut, with an ellipsis)."""


def json_object(data: bytes | str) -> dict[str, Any] | None:
    """``data`` read as a JSON object; None when it is not one (or nests too deep)."""
    try:
        value = json.loads(data)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def str_or_none(value: Any) -> str | None:
    """``value`` when it is a non-empty string."""
    return value if isinstance(value, str) and value else None


def truncate(text: str) -> str:
    """``text`` cut to `MAX_ERROR_MESSAGE` characters."""
    if len(text) <= MAX_ERROR_MESSAGE:
        return text
    return text[: MAX_ERROR_MESSAGE - 1] + "\u2026"


def invalid_response(message: str) -> LlmResponse:
    """The answer to a response that cannot be read."""
    return LlmResponse(finish_reason="error", error_code="invalid_response", error_message=message)
