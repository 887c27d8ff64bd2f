"""An audit record of every served tool call: who called (the subject, issuer and client
of the caller's `Identity`), which tool, the outcome, how long it took; logged to the
logger `AUDIT_LOGGER` (``toolsets.audit``), which the operator routes like any other (a
handler of its own, a file, a log shipper), at INFO.

Each record is one readable line, and its fields are on the log record (``extra``) for a
structured handler: ``audit`` (the `AuditRecord` itself) and each of its fields by name
(``tool``, ``outcome``, ``subject``, ``issuer``, ``client_id``, ``duration_ms``,
``reason``, ``request_id``, ``session_id``, ``arguments``).

What is never in a record: an argument's value (a value may be a secret, or a person's
data, and the record goes wherever logs go). The arguments are named, and only those the
tool declares: a name a client made up could itself carry a secret, or forge a line.
Nor is the reason an error happened, which may quote a value: only a refusal's (the
scopes, roles or groups the caller lacks, the credential it has none of), which never
does.

Outcomes: ``ok``; ``error`` (an error result, or a protocol error); ``refused`` (the call
did not run: the caller lacks access, or a credential); ``input_required`` (on
2026-07-28, the call ended asking its client, and comes again with the answer: each
round has a record); ``cancelled`` (the client cancelled it, or the server stopped).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass
from typing import Any, Literal, TypeAlias

import mcp.types as mt

from toolsets._access import ACCESS_REFUSAL_KEYS
from toolsets._context import Invocation
from toolsets._results import clip

__all__ = ["AUDIT_LOGGER", "AuditOutcome", "AuditRecord", "Audited", "audited"]

AUDIT_LOGGER = "toolsets.audit"
"""The name of the logger the audit records go to."""

logger = logging.getLogger(AUDIT_LOGGER)

AuditOutcome: TypeAlias = Literal["ok", "error", "refused", "input_required", "cancelled"]
"""How a call ended (see the module's docstring)."""

REFUSAL_KEYS = ACCESS_REFUSAL_KEYS | {"credential"}
"""The fields of an error result that say the call was refused before it ran: for want
of access (`toolsets.restricted`, a tool's required scopes) or of a credential."""
_SHOWN_REASON = 300
"""Characters of a refusal's message kept as its reason."""
_SHOWN_NAMES = 50
"""Argument names recorded at most."""


@dataclass(frozen=True, kw_only=True)
class AuditRecord:
    """One served tool call, as the audit logger records it."""

    tool: str
    """The tool's name, as the client called it."""
    outcome: AuditOutcome
    """How the call ended."""
    duration_ms: float
    """Milliseconds from the request's arrival to its answer."""
    subject: str | None
    """The caller (its token's ``sub``); None: not identified (no authorization)."""
    issuer: str | None
    """Who issued the caller's token."""
    client_id: str | None
    """The OAuth client the caller called through."""
    session_id: str | None
    """The client's session, when the server knows one."""
    request_id: str | None
    """The JSON-RPC id of the ``tools/call`` request."""
    arguments: tuple[str, ...]
    """The names of the arguments given that the tool declares (never their values)."""
    reason: str | None = None
    """Why the call was refused (None for any other outcome)."""

    def message(self) -> str:
        """The record as one line."""
        who = self.subject or "an unidentified caller"
        if self.client_id:
            who += f" (client {self.client_id})"
        said = f": {self.reason}" if self.reason else ""
        return (
            f"tools/call {self.tool!r} by {who}: {self.outcome} in {self.duration_ms:.1f} ms{said}"
        )


class Audited:
    """A call being audited: what the tools feature learns of it as it goes."""

    def __init__(self, tool: str, invocation: Invocation, request_id: object) -> None:
        self.tool = tool
        self.invocation = invocation
        self.request_id = None if request_id is None else str(request_id)
        self.declared: frozenset[str] = frozenset()
        """The names of the tool's parameters (none until the tool is found)."""
        self.arguments: Mapping[str, Any] = {}
        """The arguments the call came with."""
        self.answer: mt.CallToolResult | mt.InputRequiredResult | None = None
        """The answer, once there is one."""

    def record(self, duration_ms: float, failed: BaseException | None) -> AuditRecord:
        outcome, reason = _outcome(self.answer, failed)
        identity = self.invocation.identity
        names = sorted(name for name in self.arguments if name in self.declared)
        return AuditRecord(
            tool=clip(self.tool, 200),
            outcome=outcome,
            duration_ms=round(duration_ms, 3),
            subject=identity.subject if identity is not None else None,
            issuer=identity.issuer if identity is not None else None,
            client_id=identity.client_id if identity is not None else None,
            session_id=self.invocation.session_id,
            request_id=self.request_id,
            arguments=tuple(names[:_SHOWN_NAMES]),
            reason=reason,
        )


def _outcome(
    answer: mt.CallToolResult | mt.InputRequiredResult | None, failed: BaseException | None
) -> tuple[AuditOutcome, str | None]:
    if failed is not None and not isinstance(failed, Exception):
        return "cancelled", None
    if failed is not None or answer is None:
        return "error", None
    if isinstance(answer, mt.InputRequiredResult):
        return "input_required", None
    if not answer.is_error:
        return "ok", None
    fields = answer.structured_content
    if not isinstance(fields, Mapping) or REFUSAL_KEYS.isdisjoint(fields):
        return "error", None
    message = fields.get("error")
    return "refused", clip(str(message), _SHOWN_REASON) if message else None


@contextlib.contextmanager
def audited(tool: str, invocation: Invocation, request_id: object) -> Iterator[Audited]:
    """Audit the call of ``tool`` the block answers (its `Audited` learns the tool's
    parameters, the arguments and the answer): the record is logged when the block
    ends, also when it raises (an ``error``, or ``cancelled``)."""
    call = Audited(tool, invocation, request_id)
    if not logger.isEnabledFor(logging.INFO):  # nobody listens: nothing to make
        yield call
        return
    started = time.perf_counter()
    failed: BaseException | None = None
    try:
        yield call
    except BaseException as exc:  # recorded, and raised on as it is
        failed = exc
        raise
    finally:
        record = call.record((time.perf_counter() - started) * 1000, failed)
        logger.info(record.message(), extra={"audit": record, **asdict(record)})
