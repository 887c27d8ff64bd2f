"""The conversation a model sees, built from the session's events (internal)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from toolsets._content import Content, FunctionResponse, Part
from toolsets.agent._events import Event

__all__ = ["build_contents"]


def _as_context(event: Event) -> Content | None:
    """Another agent's turn, retold to this one as user-side context."""
    lines: list[str] = []
    for part in event.content.parts if event.content else ():
        if part.text is not None and not part.thought:
            lines.append(f"[{event.author}] said: {part.text}")
        elif part.function_call is not None:
            args = json.dumps(dict(part.function_call.args), default=str)
            lines.append(f"[{event.author}] called tool {part.function_call.name} with {args}")
        elif part.function_response is not None:
            result = json.dumps(part.function_response.response, default=str)
            lines.append(f"[{event.author}] tool {part.function_response.name} returned {result}")
    if not lines:
        return None
    return Content(role="user", parts=(Part(text="For context:\n" + "\n".join(lines)),))


def build_contents(events: Sequence[Event], agent_name: str, branch: str | None) -> list[Content]:
    """The turns to send: this branch's user, model and tool turns, in order.

    Another agent's turns become user-side context. A pending call's placeholder (or
    interim long-running result) is replaced, in its place, by the call's final result
    once there is one, since providers want each call answered right after it was made.
    """
    visible = [
        e
        for e in events
        if not e.partial and e.branch == branch and e.content is not None and e.error_code is None
    ]
    final: dict[str, FunctionResponse] = {}
    for event in visible:
        for response in event.function_responses:
            if response.id is not None and not response.will_continue:
                final[response.id] = response

    contents: list[Content] = []
    moved: set[str] = set()  # final responses already placed where their placeholder was
    for event in visible:
        assert event.content is not None
        if event.author == "user":
            contents.append(event.content)
            continue
        if event.author != agent_name:
            context = _as_context(event)
            if context is not None:
                contents.append(context)
            continue
        parts: list[Part] = []
        for part in event.content.parts:
            answer = part.function_response
            if answer is not None and answer.id is not None:
                if answer.will_continue:
                    if answer.id in final:
                        parts.append(Part(function_response=final[answer.id]))
                        moved.add(answer.id)
                    continue  # still pending: the model is not called meanwhile
                if answer.id in moved:
                    continue
            parts.append(part)
        if parts:
            contents.append(Content(role=event.content.role, parts=tuple(parts)))
    return contents
