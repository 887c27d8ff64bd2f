"""The client half of relayed confirmations (see `toolsets.mcp._relay`): the elicitation
callback of a gateway (``McpToolset(relay_confirmations=True)``) that answers yes to our
server's confirmation of a call its user confirmed already, once."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import mcp.types as mt
from mcp.client.session import ClientRequestContext

from toolsets.mcp._relay import CONFIRM_KEY, CONFIRM_META, args_digest, call_digest

__all__ = ["ConfirmationRelay"]


@dataclass(eq=False)
class _ConfirmedCall:
    session: object
    digest: str
    """`call_digest` of its tool and arguments."""
    relayed: bool = False


def _asks_nothing(params: mt.ElicitRequestParams) -> bool:
    """Whether a question is a form asking for nothing but yes or no."""
    return isinstance(params, mt.ElicitRequestFormParams) and not params.requested_schema.get(
        "properties"
    )


def _tag(params: mt.ElicitRequestParams) -> str | None:
    """The call (`call_digest`) a question's ``_meta`` says it confirms, if it says."""
    meta = params.meta
    tag = meta.get(CONFIRM_META) if isinstance(meta, Mapping) else None
    if not isinstance(tag, Mapping):
        return None
    tool, digest = tag.get("tool"), tag.get("args_sha256")
    if not isinstance(tool, str) or not isinstance(digest, str):
        return None
    return call_digest(tool, digest)


_CALL: ContextVar[_ConfirmedCall | None] = ContextVar("toolsets_confirmed_call", default=None)
"""The confirmed call the current task is making (where 2026-07-28's questions come)."""


class ConfirmationRelay:
    """The SDK elicitation callback of a relaying toolset, and the confirmed calls it
    may answer for (see the module's docstring); other questions go to ``inner``
    (declined without one)."""

    def __init__(self, inner: Callable[[ClientRequestContext, Any], Awaitable[Any]] | None) -> None:
        self._inner = inner
        self._calls: list[_ConfirmedCall] = []

    @contextmanager
    def confirmed_call(self, session: object, tool: str, args: Mapping[str, Any]) -> Iterator[None]:
        """While the call of ``tool`` with ``args``, confirmed by the user, runs on
        ``session`` (the SDK's client session): its confirmation may be answered once."""
        call = _ConfirmedCall(session, call_digest(tool, args_digest(args)))
        self._calls.append(call)
        token = _CALL.set(call)
        try:
            yield
        finally:
            _CALL.reset(token)
            self._calls.remove(call)

    def _take(self, context: ClientRequestContext, params: mt.ElicitRequestParams) -> bool:
        if not _asks_nothing(params):
            return False
        tag = _tag(params)
        if tag is not None:  # 2025-11-25: asked over the session, tagged with its call
            calls = [c for c in self._calls if c.session is context.session and c.digest == tag]
        elif context.request_id == CONFIRM_KEY:  # 2026-07-28: in the call's result
            current = _CALL.get()
            calls = [current] if current is not None and current.session is context.session else []
        else:
            return False
        for call in calls:
            if not call.relayed:
                call.relayed = True
                return True
        return False

    async def __call__(self, context: ClientRequestContext, params: mt.ElicitRequestParams) -> Any:
        if self._take(context, params):
            return mt.ElicitResult(action="accept", content={})
        if self._inner is None:
            return mt.ElicitResult(action="decline")
        return await self._inner(context, params)
