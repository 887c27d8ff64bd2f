"""Relayed confirmations (internal): our server tags the confirmation it asks with the
call it is about, and a gateway (``McpToolset(relay_confirmations=True)``) answers yes
to that question only, once, for a call its user confirmed already.

The gateway answers a question yes when it asks for nothing but yes or no and is our
server's confirmation of a call under way on the very session it came over, which the
user confirmed at the gateway, whose confirmation was not answered yet:

- 2025-11-25 (asked mid-call): the question's ``_meta`` entry `CONFIRM_META` names the
  call, ``{"tool": <tool name>, "args_sha256": <SHA-256 of the arguments' canonical
  JSON>}``, and a call to that tool with those arguments is under way on the session;
- 2026-07-28 (its input requests carry no ``_meta``): the question comes in the
  ``input_required`` result of the call itself, under the key our server asks its
  confirmation under (`CONFIRM_KEY`).

Every other question is left to the toolset's own ``elicitation`` handler (declined
without one): a tool's own questions, an unconfirmed call's, one asked while listing or
reading a prompt or resource, a second one for the same call.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import mcp.types as mt
from mcp.client.session import ClientRequestContext

from toolsets.mcp._channel import CONFIRM_KEY

__all__ = [
    "CONFIRM_META",
    "TOOLS_CHANGED_META",
    "ConfirmationRelay",
    "args_digest",
    "confirmation_meta",
]

CONFIRM_META = "io.toolsets/confirm"
"""The ``_meta`` key tagging a server's confirmation of a call with the call."""
TOOLS_CHANGED_META = "io.toolsets/toolsChanged"
"""The ``_meta`` key (true) of a call's result telling the caller that the call changed
the tools it is offered (a `searchable` search loaded some): a toolsets client lists
again at once, rather than when the announcement reaches it."""


def args_digest(args: Mapping[str, Any]) -> str:
    """The SHA-256 (hex) of ``args``' canonical JSON (sorted keys, no spaces, UTF-8)."""
    canonical = json.dumps(
        args, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=repr
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


def _call_digest(tool_name: str, digest: str) -> str:
    return hashlib.sha256(f"{tool_name}\n{digest}".encode()).hexdigest()


def confirmation_meta(tool_name: str, args: Mapping[str, Any]) -> dict[str, Any]:
    """The ``_meta`` of the question a server asks to confirm the call of ``tool_name``
    with ``args``: the tag naming the call."""
    return {CONFIRM_META: {"tool": tool_name, "args_sha256": args_digest(args)}}


@dataclass(eq=False)
class _ConfirmedCall:
    session: object
    digest: str
    """`_call_digest` of its tool and arguments."""
    relayed: bool = False


def _asks_nothing(params: Any) -> bool:
    schema = getattr(params, "requested_schema", None)
    return isinstance(schema, Mapping) and not schema.get("properties")


def _tag(params: Any) -> str | None:
    """The call (`_call_digest`) a question's ``_meta`` says it confirms, if it says."""
    meta = getattr(params, "meta", None)
    tag = meta.get(CONFIRM_META) if isinstance(meta, Mapping) else None
    if not isinstance(tag, Mapping):
        return None
    tool, digest = tag.get("tool"), tag.get("args_sha256")
    if not isinstance(tool, str) or not isinstance(digest, str):
        return None
    return _call_digest(tool, digest)


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
        call = _ConfirmedCall(session, _call_digest(tool, args_digest(args)))
        self._calls.append(call)
        token = _CALL.set(call)
        try:
            yield
        finally:
            _CALL.reset(token)
            self._calls.remove(call)

    def _take(self, context: ClientRequestContext, params: Any) -> bool:
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

    async def __call__(self, context: ClientRequestContext, params: Any) -> Any:
        if self._take(context, params):
            return mt.ElicitResult(action="accept", content={})
        if self._inner is None:
            return mt.ElicitResult(action="decline")
        return await self._inner(context, params)
