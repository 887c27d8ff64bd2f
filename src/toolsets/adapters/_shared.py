"""What the framework adapters map the same way, whatever the framework: a result as the
model's content (an MCP tool's images and audio included), the `Invocation` a call runs
in from the ids a framework gives, and the one JSON text of a value. Each adapter keeps
only its framework's glue: which of its types stands for a text, an image, an audio.

(Answering a call's pauses, the missing-credential answer and what state outlives a call
are every consumer's, not only the adapters': `toolsets._settle`.)
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
from dataclasses import dataclass
from typing import Any, Literal

from toolsets._context import Invocation
from toolsets._json import JsonValue

__all__ = ["Media", "json_text", "media_blocks", "with_ids"]

_MEDIA = ("image", "audio")


@dataclass(frozen=True, kw_only=True)
class Media:
    """An image or audio block of a tool's result, decoded."""

    kind: Literal["image", "audio"]
    data: bytes
    """The bytes."""
    mime_type: str
    """Their media type, e.g. ``image/png``."""
    encoded: str
    """The bytes in base64, as the block carried them."""
    block: dict[str, JsonValue]
    """The block as it came (for a framework with no type for this kind)."""

    @property
    def data_url(self) -> str:
        """The bytes as a ``data:`` URL."""
        return f"data:{self.mime_type};base64,{self.encoded}"


def media_blocks(result: JsonValue) -> list[Media | str | JsonValue] | None:
    """The blocks of an MCP tool's result (``{"content": [blocks]}`` and nothing else)
    when one of them is an image or audio, for a framework to show the model as media
    rather than as base64 text: each image and audio block as `Media` (one whose data is
    not base64 stays the block it was), each text block as its text, any other block as
    it came. None for any other result, which the framework gives as it is (the usual
    case: answered at once)."""
    if type(result) is not dict or len(result) != 1:
        return None
    blocks = result.get("content")
    if not isinstance(blocks, list) or not any(
        isinstance(block, dict) and block.get("type") in _MEDIA for block in blocks
    ):
        return None
    return [_block(block) for block in blocks]


def _block(block: JsonValue) -> Media | str | JsonValue:
    if not isinstance(block, dict):
        return block
    kind, text = block.get("type"), block.get("text")
    if kind == "text" and isinstance(text, str):
        return text
    data, mime_type = block.get("data"), block.get("mime_type")
    if kind not in _MEDIA or not isinstance(data, str) or not isinstance(mime_type, str):
        return block
    try:
        decoded = base64.b64decode(data, validate=True)
    except binascii.Error:  # not base64 after all: the model reads it as it came
        return block
    media: Literal["image", "audio"] = "image" if kind == "image" else "audio"
    return Media(kind=media, data=decoded, mime_type=mime_type, encoded=data, block=block)


_JSON = json.JSONEncoder(ensure_ascii=False)
_SCALARS: dict[object, str] = {True: "true", False: "false", None: "null"}
"""JSON's words for the scalars Python writes otherwise."""


def json_text(value: JsonValue) -> str:
    """What a model reads of ``value`` where a framework takes text: text as it is,
    anything else as JSON text (non-ASCII kept)."""
    if isinstance(value, str):
        return value
    kind = type(value)
    if kind is int:  # as JSON writes it, without the encoder's set-up
        return str(value)
    if kind is bool or value is None:
        return _SCALARS[value]
    return _JSON.encode(value)


def with_ids(
    base: Invocation,
    *,
    user_id: str | None = None,
    session_id: str | None = None,
    invocation_id: str | None = None,
    agent_name: str | None = None,
) -> Invocation:
    """``base`` with the ids a framework gives for a call (those it does not give, None,
    stay ``base``'s); ``base`` itself when they are all its own. The state, scopes and
    services stay ``base``'s (the same objects)."""
    changed: dict[str, Any] = {}
    if user_id is not None and user_id != base.user_id:
        changed["user_id"] = user_id
    if session_id is not None and session_id != base.session_id:
        changed["session_id"] = session_id
    if invocation_id is not None and invocation_id != base.invocation_id:
        changed["invocation_id"] = invocation_id
    if agent_name is not None and agent_name != base.agent_name:
        changed["agent_name"] = agent_name
    return dataclasses.replace(base, **changed) if changed else base
