"""What our server and our client agree on (internal): the keys by which our server tags
what it sends, which a toolsets client reads.

Relayed confirmations: our server tags the confirmation it asks with the call it is
about, and a gateway (``McpToolset(relay_confirmations=True)``, see
`toolsets.mcp.client._relay`) answers yes to that question only, once, for a call its
user confirmed already.

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
from collections.abc import Mapping
from typing import Any

from toolsets._client_channel import RESERVED_KEY_PREFIX

__all__ = [
    "CONFIRM_KEY",
    "CONFIRM_META",
    "TOOLS_CHANGED_META",
    "args_digest",
    "call_digest",
    "confirmation_meta",
]

CONFIRM_KEY = f"{RESERVED_KEY_PREFIX}confirm"
"""The key of the server's confirmation of a call (no tool may ask under it)."""
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


def call_digest(tool_name: str, digest: str) -> str:
    """What names one call: the SHA-256 (hex) of its tool's name and its arguments'
    `args_digest`."""
    return hashlib.sha256(f"{tool_name}\n{digest}".encode()).hexdigest()


def confirmation_meta(tool_name: str, args: Mapping[str, Any]) -> dict[str, Any]:
    """The ``_meta`` of the question a server asks to confirm the call of ``tool_name``
    with ``args``: the tag naming the call."""
    return {CONFIRM_META: {"tool": tool_name, "args_sha256": args_digest(args)}}
