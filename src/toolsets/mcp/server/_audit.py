"""An audit record of every served tool call: who called (the subject, issuer and client
of the caller's `Identity`), which tool, the outcome, how long it took; logged to the
logger `AUDIT_LOGGER` (``toolsets.audit``), which the operator routes like any other (a
handler of its own, a file, a log shipper), at INFO.

Each record is one readable line, and its fields are on the log record (``extra``) for a
structured handler: ``audit`` (the `AuditRecord` itself) and each of its fields by name
(``tool``, ``outcome``, ``subject``, ``issuer``, ``client_id``, ``duration_ms``,
``reason``, ``request_id``, ``session_id``, ``arguments``, ``parent``).

What is never in a record: an argument's value (a value may be a secret, or a person's
data, and the record goes wherever logs go). The arguments are named, and only those the
tool declares: a name a client made up could itself carry a secret, or forge a line.
Nor is the reason an error happened, which may quote a value: only a refusal's (the
scopes, roles or groups the caller lacks, the credential it has none of), which never
does.

A call a served tool makes from inside its run — each call of the program a code mode
``run_code`` runs (``search_tools`` and the tools of a `searchable` catalogue among
them) — has a record of its own: the same caller, session and request, the tool it
called, its outcome and duration, and ``parent``, the tool the client called; the outer
call's record comes after them.

A resource read (``resources/read``) and a prompt got (``prompts/get``) have a record
too, its ``method`` saying which and its ``tool`` the resource's URI (a kept result's
with its key cut: that URI alone may read the result) or the prompt's name: refused when
an access policy refused the caller the item.

Outcomes: ``ok``; ``error`` (an error result, or a protocol error); ``refused`` (the call
did not run: the caller lacks access, or a credential); ``input_required`` (on
2026-07-28, the call ended asking its client, and comes again with the answer: each
round has a record); ``cancelled`` (the client cancelled it, or the server stopped).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass
from typing import Any, Literal, TypeAlias

import mcp.types as mt
from mcp import MCPError

from toolsets._access import ACCESS_REFUSAL_KEYS
from toolsets._context import Invocation, ToolContext
from toolsets._invoke import ConfirmationNeeded, CredentialNeeded, LongRunning, Outcome
from toolsets._nested import NestedCall, watching_nested
from toolsets._results import clip, is_error_result
from toolsets._tool import Tool

__all__ = ["AUDIT_LOGGER", "AuditOutcome", "AuditRecord", "Audited", "audited", "audited_item"]

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
    parent: str | None = None
    """The tool whose run made this call (``run_code``, for a call of its program); None
    for a call the client made."""
    method: str = "tools/call"
    """The request: ``tools/call``; or ``resources/read`` or ``prompts/get``, whose
    ``tool`` is the resource's URI or the prompt's name."""

    def message(self) -> str:
        """The record as one line."""
        who = self.subject or "an unidentified caller"
        if self.client_id:
            who += f" (client {self.client_id})"
        said = f": {self.reason}" if self.reason else ""
        within = f" within {self.parent!r}" if self.parent is not None else ""
        return (
            f"{self.method} {self.tool!r}{within} by {who}: {self.outcome} in "
            f"{self.duration_ms:.1f} ms{said}"
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
        names = (name for name in self.arguments if name in self.declared)
        return self._record(self.tool, names, outcome, reason, duration_ms)

    def _record(
        self,
        tool: str,
        names: Iterable[str],
        outcome: AuditOutcome,
        reason: str | None,
        duration_ms: float,
        parent: str | None = None,
        method: str = "tools/call",
    ) -> AuditRecord:
        """The record of a call of ``tool`` (``names``: the declared arguments given)."""
        identity = self.invocation.identity
        return AuditRecord(
            tool=clip(tool, 200),
            outcome=outcome,
            duration_ms=round(duration_ms, 3),
            subject=identity.subject if identity is not None else None,
            issuer=identity.issuer if identity is not None else None,
            client_id=identity.client_id if identity is not None else None,
            session_id=self.invocation.session_id,
            request_id=self.request_id,
            arguments=tuple(sorted(names)[:_SHOWN_NAMES]),
            reason=reason,
            parent=None if parent is None else clip(parent, 200),
            method=method,
        )

    @contextlib.contextmanager
    def nested(self, tool: Tool, ctx: ToolContext) -> Iterator[NestedCall]:
        """Audit a call of ``tool`` the called tool makes from inside its run (a
        `NestedWatch`): a record of its own, the same caller's, naming this call's tool
        as its ``parent``."""
        seen = NestedCall()
        started = time.perf_counter()
        failed: BaseException | None = None
        try:
            yield seen
        except BaseException as exc:  # recorded, and raised on as it is
            failed = exc
            raise
        finally:
            outcome, reason = _nested_outcome(seen.outcome, failed)
            declared = _declared(tool)
            names = (name for name in seen.arguments if name in declared)
            duration_ms = (time.perf_counter() - started) * 1000
            record = self._record(tool.name, names, outcome, reason, duration_ms, self.tool)
            logger.info(record.message(), extra={"audit": record, **asdict(record)})


def _declared(tool: Tool) -> frozenset[str]:
    """The names of the parameters ``tool`` is called under (a `searchable` catalogue's
    tool not loaded has them too)."""
    declaration = tool.call_declaration()
    properties = declaration.parameters.get("properties") if declaration is not None else None
    return frozenset(properties) if isinstance(properties, Mapping) else frozenset()


def _nested_outcome(
    outcome: Outcome | None, failed: BaseException | None
) -> tuple[AuditOutcome, str | None]:
    if failed is not None and not isinstance(failed, Exception):
        return "cancelled", None
    if failed is not None or outcome is None:
        return "error", None
    if isinstance(outcome, ConfirmationNeeded):
        return "refused", "it needs the user's confirmation, which a program cannot ask for"
    if isinstance(outcome, CredentialNeeded):
        return "refused", f"no credential for {outcome.auth_config.scheme_name!r} was given"
    result = outcome.interim if isinstance(outcome, LongRunning) else outcome.result
    if not is_error_result(result):
        return "ok", None
    assert isinstance(result, Mapping)
    if REFUSAL_KEYS.isdisjoint(result):
        return "error", None
    message = result.get("error")
    return "refused", clip(str(message), _SHOWN_REASON) if message else None


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
        with watching_nested(call.nested):
            yield call
    except BaseException as exc:  # recorded, and raised on as it is
        failed = exc
        raise
    finally:
        record = call.record((time.perf_counter() - started) * 1000, failed)
        logger.info(record.message(), extra={"audit": record, **asdict(record)})


@contextlib.contextmanager
def audited_item(
    method: str, name: str, invocation: Invocation, request_id: object
) -> Iterator[list[object]]:
    """Audit the ``resources/read`` or ``prompts/get`` (``method``) of ``name`` the block
    answers: the block puts its answer in the list it gets (an ``InputRequiredResult``
    is ``input_required``); a protocol error naming what the caller lacks is
    ``refused``, another ``error``."""
    answer: list[object] = []
    if not logger.isEnabledFor(logging.INFO):
        yield answer
        return
    started = time.perf_counter()
    outcome: AuditOutcome = "ok"
    reason: str | None = None
    try:
        yield answer
    except MCPError as exc:
        data = exc.error.data
        refused = isinstance(data, Mapping) and not ACCESS_REFUSAL_KEYS.isdisjoint(data)
        outcome, reason = (
            ("refused", clip(exc.error.message, _SHOWN_REASON)) if refused else ("error", None)
        )
        raise
    except Exception:
        outcome = "error"
        raise
    except BaseException:
        outcome = "cancelled"
        raise
    else:
        if answer and isinstance(answer[0], mt.InputRequiredResult):
            outcome = "input_required"
    finally:
        call = Audited(name, invocation, request_id)
        duration_ms = (time.perf_counter() - started) * 1000
        record = call._record(name, (), outcome, reason, duration_ms, method=method)
        logger.info(record.message(), extra={"audit": record, **asdict(record)})
