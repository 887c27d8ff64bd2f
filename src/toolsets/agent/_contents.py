"""The conversation a model sees, built from the session's events (internal)."""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Sequence

from toolsets._content import Content, FunctionResponse, Part
from toolsets.agent._events import Event

__all__ = ["History", "HistoryCache", "build_contents"]


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
        if e.content is not None and e.branch == branch and not e.partial and e.error_code is None
    ]
    placeholders = {
        part.function_response.id
        for e in visible
        if e.author == agent_name
        for part in e.content.parts  # type: ignore[union-attr]
        if part.function_response is not None and part.function_response.will_continue
    }
    final: dict[str | None, FunctionResponse] = {}
    if placeholders:
        for event in visible:
            for part in event.content.parts:  # type: ignore[union-attr]
                answer = part.function_response
                if answer is not None and answer.id in placeholders and not answer.will_continue:
                    final[answer.id] = answer

    contents: list[Content] = []
    moved: set[str | None] = set()  # final results already placed where their placeholder was
    for event in visible:
        content = event.content
        assert content is not None
        if event.author == "user":
            contents.append(content)
        elif event.author != agent_name:
            context = _as_context(event)
            if context is not None:
                contents.append(context)
        elif not placeholders:
            contents.append(content)
        else:
            parts = _settled(content, final, moved)
            if parts:
                contents.append(Content(role=content.role, parts=parts))
    return contents


def _settled(
    content: Content, final: dict[str | None, FunctionResponse], moved: set[str | None]
) -> tuple[Part, ...]:
    parts: list[Part] = []
    for part in content.parts:
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
    return tuple(parts)


def _has_placeholder(event: Event, agent_name: str) -> bool:
    if event.author != agent_name or event.content is None:
        return False
    for part in event.content.parts:
        answer = part.function_response
        if answer is not None and answer.will_continue:
            return True
    return False


class History:
    """`build_contents` kept up to date as a run appends events, so each model turn
    costs only the new events (a run's events are only ever appended)."""

    def __init__(self, agent_name: str, branch: str | None) -> None:
        self._agent_name = agent_name
        self._branch = branch
        self._seen = 0
        self._last: Event | None = None  # events[_seen - 1], to tell the same events again
        self._contents: list[Content] = []
        self._settling = False  # a placeholder is involved: rebuild in full each time

    def continues(self, events: Sequence[Event]) -> bool:
        """Whether ``events`` begins with the very events this history has seen (as when a
        later run of the same session reads them again), so it can go on from there."""
        seen = self._seen
        return seen <= len(events) and (seen == 0 or events[seen - 1] is self._last)

    def contents(self, events: Sequence[Event]) -> list[Content]:
        """The turns to send now (a new list the caller may change)."""
        if not self._settling:
            for index in range(self._seen, len(events)):
                event = events[index]
                if _has_placeholder(event, self._agent_name):
                    self._settling = True
                    break
                self._add(event)
        self._seen = len(events)
        self._last = events[-1] if events else None
        if self._settling:
            self._contents = build_contents(events, self._agent_name, self._branch)
        return list(self._contents)

    def _add(self, event: Event) -> None:
        content = event.content
        if content is None or event.branch != self._branch or event.partial:
            return
        if event.error_code is not None:
            return
        if event.author == "user" or event.author == self._agent_name:
            self._contents.append(content)
        else:
            context = _as_context(event)
            if context is not None:
                self._contents.append(context)


class HistoryCache:
    """Histories kept from one run of a session to the next, so that a new run goes on
    from where the last one stopped instead of reading the whole conversation again.

    A history is taken out for a run (two runs at once never share one) and put back at
    its end; it is used again only if the session's events still begin with the very
    events it saw (`History.continues`), which holds when the session service hands runs
    its stored events (`InMemorySessionService.session_for_run`). The least recently used
    are dropped beyond ``size``.
    """

    def __init__(self, size: int = 256) -> None:
        self._size = size
        self._histories: OrderedDict[tuple[str, ...], History] = OrderedDict()

    def take(self, key: tuple[str, ...], events: Sequence[Event]) -> History | None:
        """The history kept under ``key``, if it goes on from ``events``."""
        history = self._histories.pop(key, None)
        return history if history is not None and history.continues(events) else None

    def keep(self, key: tuple[str, ...], history: History) -> None:
        """Keep ``history`` for the next run."""
        self._histories[key] = history
        self._histories.move_to_end(key)
        while len(self._histories) > self._size:
            self._histories.popitem(last=False)
