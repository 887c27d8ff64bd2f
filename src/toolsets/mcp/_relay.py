"""Relayed confirmations (internal): our server tags the confirmation it asks with the
call it is about, and a gateway (``McpToolset(relay_confirmations=True)``) answers yes
to that question only, once, for a call its user confirmed already.

The tag is the question's ``_meta`` entry `CONFIRM_META`: ``{"tool": <tool name>,
"args_sha256": <SHA-256 of the arguments' canonical JSON>}`` (2025-11-25); on
2026-07-28, whose input requests carry no ``_meta``, its key in the ``input_required``
result: ``io.toolsets/confirm:<SHA-256 of the tool name, a newline, and that
digest>``. The gateway answers a
question yes when it asks for nothing but yes or no, carries the tag, and the tag names
a call under way on the very session the question came over, which the user confirmed
at the gateway, to the same tool with the same arguments, whose confirmation was not
answered yet. Every other question is left to the toolset's own ``elicitation``
handler (declined without one): a tool's own questions, an unconfirmed call's, one
asked during a listing or a prompt or resource read, a second one for the same call.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import mcp.types as mt
from mcp.client.session import ClientRequestContext

from toolsets._client import Elicit

__all__ = [
    "CONFIRM_META",
    "ConfirmationRelay",
    "args_digest",
    "confirmation_request",
]

CONFIRM_META = "io.toolsets/confirm"
"""The ``_meta`` key tagging a server's confirmation of a call with the call."""


def args_digest(args: Mapping[str, Any]) -> str:
    """The SHA-256 (hex) of ``args``' canonical JSON (sorted keys, no spaces, UTF-8)."""
    canonical = json.dumps(
        args, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=repr
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


def _call_digest(tool_name: str, digest: str) -> str:
    return hashlib.sha256(f"{tool_name}\n{digest}".encode()).hexdigest()


def confirmation_request(
    message: str, tool_name: str, args: Mapping[str, Any]
) -> tuple[str, Elicit]:
    """The question a server asks to confirm the call of ``tool_name`` with ``args`` (a
    yes or no), and its key; both tagged with the call (see the module's docstring)."""
    digest = args_digest(args)
    tag = {"tool": tool_name, "args_sha256": digest}
    key = f"{CONFIRM_META}:{_call_digest(tool_name, digest)}"
    return key, Elicit(message, meta={CONFIRM_META: tag})


@dataclass(eq=False)
class _ConfirmedCall:
    session: object
    digest: str
    """`_call_digest` of its tool and arguments."""
    relayed: bool = False


def _asks_nothing(params: Any) -> bool:
    schema = getattr(params, "requested_schema", None)
    return isinstance(schema, Mapping) and not schema.get("properties")


def _tag(context: ClientRequestContext, params: Any) -> str | None:
    """The call a question says it confirms (`_call_digest`): from its ``_meta``
    (2025-11-25), or its key in an ``input_required`` result (2026-07-28, whose input
    requests carry no ``_meta``)."""
    meta = getattr(params, "meta", None)
    tag = meta.get(CONFIRM_META) if isinstance(meta, Mapping) else None
    if isinstance(tag, Mapping):
        tool, digest = tag.get("tool"), tag.get("args_sha256")
        if isinstance(tool, str) and isinstance(digest, str):
            return _call_digest(tool, digest)
    key = context.request_id
    if isinstance(key, str) and key.startswith(f"{CONFIRM_META}:"):
        return key.removeprefix(f"{CONFIRM_META}:")
    return None


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
        try:
            yield
        finally:
            self._calls.remove(call)

    def _take(self, context: ClientRequestContext, params: Any) -> bool:
        tag = _tag(context, params) if _asks_nothing(params) else None
        if tag is None:
            return False
        for call in self._calls:
            if call.session is context.session and call.digest == tag and not call.relayed:
                call.relayed = True
                return True
        return False

    async def __call__(self, context: ClientRequestContext, params: Any) -> Any:
        if self._take(context, params):
            return mt.ElicitResult(action="accept", content={})
        if self._inner is None:
            return mt.ElicitResult(action="decline")
        return await self._inner(context, params)
