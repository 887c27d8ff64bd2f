"""The questions a tool asks its client (toolsets' `Elicit`, `Sample`, `ListRoots`) as
MCP requests, and MCP's answers as toolsets' (`Elicitation`, `Sampled`, roots): both
protocol eras ask with the same requests, whether sent mid-call (2025-11-25) or returned
in an ``input_required`` result (2026-07-28)."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any, cast

import mcp.types as mt
import pydantic

from toolsets._client_channel import (
    Answer,
    ClientRequest,
    Elicit,
    Elicitation,
    ListRoots,
    Root,
    Sample,
    Sampled,
)
from toolsets._content import Content
from toolsets._json import JsonValue
from toolsets._validation import ArgumentChecker

__all__ = ["ANSWER_TYPES", "answer_from_mcp", "request_to_mcp"]

_NOTHING_ASKED: dict[str, Any] = {"type": "object", "properties": {}}
"""The form of a question that asks for nothing but the answer itself."""

ANSWER_TYPES: dict[type[ClientRequest], tuple[type[pydantic.BaseModel], ...]] = {
    Elicit: (mt.ElicitResult,),
    Sample: (mt.CreateMessageResult, mt.CreateMessageResultWithTools),
    ListRoots: (mt.ListRootsResult,),
}
"""The MCP results that answer each kind of question (the first: what is asked for)."""


def request_to_mcp(request: ClientRequest) -> mt.InputRequest:
    """``request`` as the MCP request that asks it."""
    if isinstance(request, Elicit):
        schema = dict(request.schema) if request.schema else _NOTHING_ASKED
        return mt.ElicitRequest(
            params=mt.ElicitRequestFormParams(
                message=request.message,
                requested_schema=schema,
                meta=cast("mt.RequestParamsMeta", dict(request.meta)) if request.meta else None,
            )
        )
    if isinstance(request, Sample):
        return mt.CreateMessageRequest(
            params=mt.CreateMessageRequestParams(
                messages=_sampling_messages(request.messages),
                max_tokens=request.max_tokens,
                system_prompt=request.system_prompt,
                temperature=request.temperature,
            )
        )
    return mt.ListRootsRequest()


def _sampling_messages(messages: str | Sequence[Content]) -> list[mt.SamplingMessage]:
    if isinstance(messages, str):
        return [mt.SamplingMessage(role="user", content=mt.TextContent(type="text", text=messages))]
    made: list[mt.SamplingMessage] = []
    for turn in messages:
        if turn.role not in ("user", "model"):
            raise ValueError(
                f"a sampling message is the user's or the model's, not {turn.role!r}'s"
            )
        role = "user" if turn.role == "user" else "assistant"
        for part in turn.parts:
            content: mt.TextContent | mt.ImageContent | mt.AudioContent
            if part.text is not None:
                content = mt.TextContent(type="text", text=part.text)
            elif part.inline_data is not None and part.inline_data.mime_type.startswith(
                ("image/", "audio/")
            ):
                blob = part.inline_data
                data = base64.b64encode(blob.data).decode("ascii")
                if blob.mime_type.startswith("image/"):
                    content = mt.ImageContent(type="image", data=data, mime_type=blob.mime_type)
                else:
                    content = mt.AudioContent(type="audio", data=data, mime_type=blob.mime_type)
            else:
                raise ValueError("a sampling message holds text, images and audio only")
            made.append(mt.SamplingMessage(role=role, content=content))
    return made


def answer_from_mcp(request: ClientRequest, got: pydantic.BaseModel) -> Answer | None:
    """``got`` as the answer to ``request``; None when it is not one (an accepted form
    whose values do not fit the form asked)."""
    if isinstance(got, mt.ElicitResult):
        content = cast("dict[str, JsonValue]", dict(got.content or {}))
        if got.action == "accept" and isinstance(request, Elicit) and request.schema:
            checker = ArgumentChecker(request.schema, tool_name="elicitation", checks="answers")
            if checker.first_problem(content) is not None:
                return None
        return Elicitation(got.action, content)
    if isinstance(got, mt.CreateMessageResult | mt.CreateMessageResultWithTools):
        blocks = got.content if isinstance(got.content, list) else [got.content]
        text = "".join(b.text for b in blocks if isinstance(b, mt.TextContent))
        return Sampled(text, model=got.model, stop_reason=got.stop_reason)
    if isinstance(got, mt.ListRootsResult):
        return [Root(str(root.uri), root.name) for root in got.roots]
    return None
