"""The client channel of a call `McpServer` serves: a tool's ``ctx.log``, ``ctx.ask``
(elicitation, sampling, roots) and ``ctx.report_progress``, on both protocol eras.

On 2025-11-25 each question is a request sent to the client while the call waits (on
the call's own stream). On 2026-07-28 there is no back channel: the call ends with an
``input_required`` result holding the questions, and the client calls again with the
answers (``inputResponses``) and the request state it was given, in which this server
keeps the answers of earlier rounds and the keys of the questions it asked (sealed by
the SDK's `RequestStateBoundary`: encrypted, bound to the tool and its arguments,
short-lived), and an id of its own: the server takes each state once (`McpServer`, see
`toolsets.mcp.server._spent`). The tool runs again from the top and, this time, its ``ask``
returns. An answer counts only for a question that was asked: one under a key the state
does not name, or with no state at all (sent before anything was asked), is ignored,
and the question is asked. (The questions and answers in MCP's words: `_questions`.)
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Mapping
from typing import Any

import mcp.types as mt
import pydantic
from mcp import MCPError
from mcp.server.connection import allowed_log_levels
from mcp.server.context import ServerRequestContext
from mcp.shared.message import ServerMessageMetadata
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from toolsets._client_channel import (
    LOG_LEVELS,
    Answer,
    Capability,
    ClientRequest,
    Elicit,
    LogLevel,
    check_keys,
)
from toolsets._errors import MissingClientCapabilityError, ToolCallError
from toolsets._json import JsonValue, copy_json
from toolsets._results import clip
from toolsets.mcp._relay import CONFIRM_KEY
from toolsets.mcp.server._questions import ANSWER_TYPES, answer_from_mcp, request_to_mcp

__all__ = ["ASK_TIMEOUT", "McpChannel", "InputRequired"]

ASK_TIMEOUT = 300.0
"""Seconds a 2025-11-25 client has to answer a question asked mid-call (a user may
take a while to fill in a form)."""

_ANSWERS = "answers"
_ASKED = "asked"
_ARGS = "args"
_ID = "id"


class InputRequired(BaseException):
    """The questions of a 2026-07-28 call whose answers have not come (yet): raised
    through the tool by ``ctx.ask``, turned by the server into the ``input_required``
    result. A BaseException, so that neither the tool's own ``except Exception`` nor the
    call path's error handling mistakes it for a failure."""

    def __init__(self, requests: dict[str, mt.InputRequest]) -> None:
        super().__init__(f"input required: {', '.join(requests)}")
        self.requests = requests

    @classmethod
    def within(cls, group: BaseExceptionGroup[BaseException]) -> InputRequired | None:
        """The questions of every `InputRequired` in ``group`` (raised in tasks the tool
        started), when that is all it holds; else None."""
        asked, other = group.split(cls)
        if asked is None or other is not None:
            return None
        requests: dict[str, mt.InputRequest] = {}
        pending: list[BaseException] = [asked]
        while pending:
            error = pending.pop()
            if isinstance(error, BaseExceptionGroup):
                pending.extend(error.exceptions)
            elif isinstance(error, cls):
                requests.update(error.requests)
        return cls(requests)


class McpChannel:
    """The `ClientChannel` of one ``tools/call`` (or another request that may end with
    ``input_required``, such as ``prompts/get``; see the module's docstring).

    Args:
        ctx: The SDK's context of the request.
        input_responses: The answers a call made again brings (2026-07-28).
        request_state: Its request state, as the SDK unsealed it (2026-07-28).
        tool_name: What is called (for errors): a tool's name (or a prompt's).
        level: The lowest log level the client's session asked for (2025-11-25).
    """

    def __init__(
        self,
        ctx: ServerRequestContext[Any, Any],
        *,
        input_responses: Mapping[str, mt.InputResponse] | None,
        request_state: str | None,
        tool_name: str,
        level: LogLevel,
    ) -> None:
        self._ctx = ctx
        self._tool_name = tool_name
        self.modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
        """Whether the client speaks 2026-07-28 (no back channel: questions end the call)."""
        self._level = LOG_LEVELS.index(level)
        self._responses: Mapping[str, mt.InputResponse] = input_responses or {}
        self.answers: dict[str, dict[str, Any]] = {}
        """The answers got so far (2026-07-28), as JSON: carried to the next round."""
        self.args: dict[str, Any] | None = None
        """The call's arguments as ``before_tool`` left them, once the call went past it
        (2026-07-28: carried to the next round, which then does not run it again)."""
        self.missing: str | None = None
        """A capability a question needed and the client lacks, once one did."""
        state = _state(request_state)
        answers = state.get(_ANSWERS)
        if isinstance(answers, dict):
            self.answers = {k: v for k, v in answers.items() if isinstance(v, dict)}
        asked = state.get(_ASKED)
        self._asked = frozenset(
            key for key in (asked if isinstance(asked, list) else ()) if isinstance(key, str)
        )
        """The keys of the questions the last round asked: the only answers taken from
        ``input_responses`` (none without a request state: nothing was asked)."""
        args = state.get(_ARGS)
        if isinstance(args, dict):
            self.args = args
        state_id = state.get(_ID) if request_state else None
        self.state_id: str | None = state_id if isinstance(state_id, str) else None
        """The id of the request state the call brings (2026-07-28), for the server to
        take it once; None when it brings none, or one without an id."""
        self.has_state = bool(request_state)
        """Whether the call brings a request state (2026-07-28: a round after the first)."""
        self.keeper: Callable[[str, str, str], mt.ResourceLink | None] | None = None
        """Keeps a whole result for the caller (text, media type, tool name; see
        `_kept`), set by the tools feature; None: nothing is kept (a prompt's)."""
        self.kept: list[mt.ResourceLink] = []
        """The links to what the call kept, for its result."""

    def keep_result(self, text: str, *, mime_type: str, tool_name: str) -> str | None:
        """Keep the whole of a result too big to send (`toolsets.calls.KeepsResults`),
        for this caller to read: its URI (None: not kept)."""
        link = self.keeper(text, mime_type, tool_name) if self.keeper is not None else None
        if link is None:
            return None
        self.kept.append(link)
        return str(link.uri)

    def keep_args(self, tool: object, args: dict[str, Any], ctx: object) -> None:
        """A ``before_tool`` callback run after the others (2026-07-28): keeps the
        arguments as they left them, for the next round of a call that asks."""
        self.args = copy_json(args)

    def supports(self, capability: Capability) -> bool:
        """Whether the client declared ``capability`` and can be asked now (a stateless
        2025-11-25 connection cannot be)."""
        capabilities = self._ctx.session.client_capabilities
        if capabilities is None:
            return False
        if not self.modern and not self._ctx.session.can_send_request:
            return False
        if capability == "elicitation":
            elicitation = capabilities.elicitation
            # An empty elicitation capability means form mode (the spec's default).
            return elicitation is not None and (
                elicitation.form is not None or elicitation.url is None
            )
        if capability == "sampling":
            return capabilities.sampling is not None
        return capabilities.roots is not None

    async def log(
        self, level: LogLevel, message: str, data: Mapping[str, JsonValue], logger: str
    ) -> None:
        """``notifications/message`` on the call's own stream, at or above the level the
        client asked for (2026-07-28: in the request's ``_meta``; 2025-11-25: with
        ``logging/setLevel``)."""
        if self.modern:
            ctx = self._ctx
            if level not in allowed_log_levels(ctx.protocol_version, ctx.meta):
                return
        elif LOG_LEVELS.index(level) < self._level:
            return
        sent: JsonValue = {**data, "message": message} if data else message
        notification = mt.LoggingMessageNotification(
            params=mt.LoggingMessageNotificationParams(level=level, data=sent, logger=logger)
        )
        await self._ctx.session.send_notification(
            notification, related_request_id=self._ctx.request_id
        )

    async def report_progress(
        self, progress: float, total: float | None, message: str | None
    ) -> None:
        """``notifications/progress`` (a no-op unless the client asked for progress)."""
        await self._ctx.session.report_progress(progress, total, message)

    async def close_stream(self) -> bool:
        """Close the event stream the request answers on (streamable HTTP with an event
        store, a 2025-11-25 or later client): the client reconnects with
        ``Last-Event-ID`` and gets what was sent meanwhile, the result too. False: the
        transport has no such stream (stdio, stateless HTTP, no event store)."""
        close = self._ctx.close_sse_stream
        if close is None:
            return False
        await close()
        return True

    async def ask(self, requests: Mapping[str, ClientRequest]) -> dict[str, Answer]:
        """The client's answers (see the module's docstring).

        Raises:
            MissingClientCapabilityError: the client cannot be asked one of them.
            InputRequired: (2026-07-28) some answers have not come yet.
            ToolCallError: (2025-11-25) the client answered with an error, not in
                time, or with something else than the answer.
            ValueError: a key is toolsets' own (see `RESERVED_KEY_PREFIX`).
        """
        check_keys(requests)
        return await self._ask(requests)

    async def confirm(self, message: str, *, meta: Mapping[str, Any] | None = None) -> Answer:
        """The user's answer to the server's confirmation of the call (a yes or no,
        under `CONFIRM_KEY`; ``meta`` rides with the question on 2025-11-25); raises as
        `ask` does."""
        answers = await self._ask({CONFIRM_KEY: Elicit(message, meta=meta)})
        return answers[CONFIRM_KEY]

    async def _ask(self, requests: Mapping[str, ClientRequest]) -> dict[str, Answer]:
        for request in requests.values():
            if not self.supports(request.capability):
                self.missing = request.capability
                raise MissingClientCapabilityError(request.capability)
        if self.modern:
            return self._answered(requests)
        return {key: await self._send(key, request) for key, request in requests.items()}

    def _answered(self, requests: Mapping[str, ClientRequest]) -> dict[str, Answer]:
        answers: dict[str, Answer] = {}
        pending: dict[str, mt.InputRequest] = {}
        for key, request in requests.items():
            answer = self._carried(key, request)
            if answer is None:
                pending[key] = request_to_mcp(request)
            else:
                answers[key] = answer
        if pending:
            raise InputRequired(pending)
        return answers

    def _carried(self, key: str, request: ClientRequest) -> Answer | None:
        """The answer to ``request`` from an earlier round, or else from this one's
        responses when the last round asked it (kept for the rounds to come); None when
        there is none that fits."""
        kinds = ANSWER_TYPES[type(request)]
        carried = self.answers.get(key)
        if carried is not None:
            for kind in kinds:
                try:
                    answer = answer_from_mcp(request, kind.model_validate(carried))
                except pydantic.ValidationError:
                    continue
                if answer is not None:
                    return answer
        if key not in self._asked:  # unsolicited: an answer to nothing asked
            return None
        given = self._responses.get(key)
        if not isinstance(given, kinds):
            return None
        answer = answer_from_mcp(request, given)
        if answer is not None:
            self.answers[key] = given.model_dump(mode="json", by_alias=True, exclude_none=True)
        return answer

    async def _send(self, key: str, request: ClientRequest) -> Answer:
        asked = request_to_mcp(request)
        kind = ANSWER_TYPES[type(request)][0]
        tool_name = self._tool_name
        try:
            got = await self._ctx.session.send_request(
                asked,
                kind,
                request_read_timeout_seconds=ASK_TIMEOUT,
                metadata=ServerMessageMetadata(related_request_id=self._ctx.request_id),
            )
        except MCPError as exc:
            raise ToolCallError(
                f"the client gave no answer to {asked.method} ({key!r}): "
                f"{clip(exc.error.message, 200)}",
                tool_name=tool_name,
            ) from exc
        except pydantic.ValidationError as exc:
            raise ToolCallError(
                f"the client's answer to {asked.method} ({key!r}) is not one",
                tool_name=tool_name,
            ) from exc
        answer = answer_from_mcp(request, got)
        if answer is None:
            raise ToolCallError(
                f"the client's answer to {asked.method} ({key!r}) does not fit the form asked",
                tool_name=tool_name,
            )
        return answer

    def input_required(self, pending: InputRequired) -> mt.InputRequiredResult:
        """The ``input_required`` result asking ``pending``'s questions, with a new id, the
        answers got so far, the keys asked, and the arguments as ``before_tool`` left
        them, as its request state."""
        state: dict[str, Any] = {
            _ID: secrets.token_urlsafe(16),
            _ANSWERS: self.answers,
            _ASKED: list(pending.requests),
        }
        if self.args is not None:
            state[_ARGS] = self.args
        # Sealed by the SDK (encrypted, bound to the tool and the client's arguments).
        return mt.InputRequiredResult(
            input_requests=pending.requests,
            request_state=json.dumps(state, ensure_ascii=False),
        )

    def missing_capability(self, capability: str | None = None) -> MCPError:
        """The JSON-RPC error for a question the client could not be asked (about
        ``capability``, by default the one the last question missed)."""
        capability = capability or self.missing or "elicitation"
        return MCPError(
            mt.MISSING_REQUIRED_CLIENT_CAPABILITY,
            f"{self._tool_name!r} needs the client capability {capability!r}, which the "
            "request did not declare (or cannot be asked on this connection)",
            {"requiredCapabilities": {capability: {}}},
        )


def _state(sealed: str | None) -> dict[str, Any]:
    """The request state of a call made again (the SDK unsealed it: it is ours)."""
    if not sealed:
        return {}
    try:
        state = json.loads(sealed)
    except ValueError:
        return {}
    return state if isinstance(state, dict) else {}
