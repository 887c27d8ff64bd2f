"""Tools: ``tools/list`` (the requesting client's tools, page by page) and ``tools/call``
(through the one call path, `invoke`: arguments checked, scopes, confirmation asked
through elicitation, the credential the server's ``credentials`` give, the deadline, the
callbacks, errors as results; each call audited, see `_audit`); what a call writes to
``ctx.state`` kept for its client, which is told when that changes the tools it is
offered."""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Awaitable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import mcp.types as mt
from mcp import MCPError

from toolsets._auth import AuthCredential
from toolsets._client_channel import Elicitation
from toolsets._consumers import CallsTools, check_credentials, lookup_credential
from toolsets._context import Invocation, ToolConfirmation, ToolContext, state_writes
from toolsets._errors import (
    AuthError,
    MissingClientCapabilityError,
    ToolCallError,
    ToolsetError,
)
from toolsets._ids import new_id
from toolsets._invoke import CredentialNeeded, Done, Outcome
from toolsets._json import JsonValue
from toolsets._logs import calling_as
from toolsets._results import clip, error_result, is_error_result
from toolsets._tool import Tool
from toolsets._toolset import Toolset
from toolsets.mcp._convert import result_to_mcp
from toolsets.mcp._relay import TOOLS_CHANGED_META, confirmation_meta
from toolsets.mcp.server._asking import Asking, answering
from toolsets.mcp.server._audit import Audited, audited
from toolsets.mcp.server._changes import Changes
from toolsets.mcp.server._channel import ASK_TIMEOUT, McpChannel
from toolsets.mcp.server._feature import Registration, page
from toolsets.mcp.server._gateway import Gateway, protocol_error
from toolsets.mcp.server._listing import (
    ByName,
    Listing,
    Listings,
    check_param_headers,
    offered,
    same_offer,
)
from toolsets.mcp.server._request import Context, IncomingRequest
from toolsets.mcp.server._state import Requests
from toolsets.mcp.server._upstream import (
    ServerCredentials,
    UserCredentials,
    user_credential_result,
)

__all__ = ["CONFIRMATION_TIMEOUT", "Tools"]

logger = logging.getLogger("toolsets.mcp.server")

CONFIRMATION_TIMEOUT = ASK_TIMEOUT
"""Seconds the user has to answer a confirmation asked mid-request (2025-11-25)."""


@dataclass(eq=False)
class Tools:
    """The tools feature (see the module's docstring)."""

    calls: CallsTools
    """The server: the one call path, its deadline and callbacks."""
    toolset: Toolset
    requests: Requests
    asking: Asking
    changes: Changes
    credentials: ServerCredentials
    page_size: int
    gateway: Gateway
    """The upstream MCP servers behind ``toolset``."""
    _listings: Listings = field(default_factory=Listings, init=False)
    _by_name: ByName = field(default_factory=ByName, init=False)

    def __post_init__(self) -> None:
        if not isinstance(self.credentials, UserCredentials):
            check_credentials(self.credentials)

    def handlers(self) -> Iterator[Registration]:
        yield "tools/list", mt.PaginatedRequestParams, self.list
        yield "tools/call", mt.CallToolRequestParams, self.call

    async def _tools(self, ctx: ToolContext) -> Sequence[Tool]:
        try:
            return await self.toolset.list_tools(ctx)
        except (ToolsetError, TimeoutError) as exc:
            raise protocol_error("listing the tools", exc) from exc

    async def list(
        self, ctx: Context, params: mt.PaginatedRequestParams | None
    ) -> mt.ListToolsResult:
        _, invocation = await self.requests.context(ctx)
        tools = await self._tools(ToolContext(invocation))
        made = await self._listings.make(tools)
        listing = self._listings.of
        listings = (
            map(listing, tools)
            if not made
            else (made[id(t)] if id(t) in made else listing(t) for t in tools)
        )
        offer = [each.tool for each in listings if each is not None]
        shown, next_cursor = page(offer, params, self.page_size)
        return mt.ListToolsResult(tools=shown, next_cursor=next_cursor)

    async def call(
        self, ctx: Context, params: mt.CallToolRequestParams
    ) -> mt.CallToolResult | mt.InputRequiredResult:
        request, invocation = await self.requests.context(ctx)
        who = invocation.identity  # the token's, or an `invocation` function's
        with (
            calling_as(who.subject, who.client_id) if who else contextlib.nullcontext(),
            audited(params.name, invocation, ctx.request_id) as audit,
        ):
            audit.answer = await self._call(ctx, params, request, invocation, audit)
            return audit.answer

    async def _call(
        self,
        ctx: Context,
        params: mt.CallToolRequestParams,
        request: IncomingRequest,
        invocation: Invocation,
        audit: Audited,
    ) -> mt.CallToolResult | mt.InputRequiredResult:
        try:
            tools = await self.toolset.list_tools(ToolContext(invocation))
        except AuthError as exc:
            # The caller has no credential of their own for an upstream server (a
            # `UserBearer`'s): the model is told which, and nothing was sent.
            return result_to_mcp(error_result(str(exc), credential=exc.scheme_name))
        except (ToolsetError, TimeoutError) as exc:
            raise protocol_error("listing the tools", exc) from exc
        tool = self._by_name.find(tools, params.name)
        listing = self._listings.of(tool, called=True) if tool is not None else None
        if tool is None or listing is None:
            withheld = await self.gateway.withheld(ToolContext(invocation))
            if withheld:  # maybe a tool of an upstream server that offers them nothing
                return result_to_mcp(_withheld(params.name, withheld))
            await self._listings.make(tools)  # the names offered: each declaration made
            return result_to_mcp(_unknown(params.name, tools))
        audit.declared = listing.parameter_names
        audit.arguments = params.arguments or {}
        check_param_headers(ctx, params, listing)
        call = ToolContext(invocation, function_call_id=new_id())
        channel = await self.asking.channel(ctx, params, tool.name)
        call.client = channel
        channel.keeper = functools.partial(self._keep, ctx, invocation)
        answer = await answering(
            channel, self._run_call(request, params, tool, listing, call, channel)
        )
        if channel.kept and isinstance(answer, mt.CallToolResult) and not answer.is_error:
            answer.content = [*answer.content, *channel.kept]  # links to the whole results
        if await self._keep_state(ctx, invocation, call, tools, answer):
            assert isinstance(answer, mt.CallToolResult)
            answer.meta = {**(answer.meta or {}), TOOLS_CHANGED_META: True}
        return answer

    def _keep(
        self, ctx: Context, invocation: Invocation, text: str, mime_type: str, tool_name: str
    ) -> mt.ResourceLink | None:
        """Keep a cut result's whole for the caller of the request of ``ctx`` (`_kept`;
        who that is is found only for a call that keeps one)."""
        owner = self.requests.owner(ctx, invocation)
        return self.requests.kept.keep(owner, text, mime_type, tool_name)

    async def _keep_state(
        self,
        ctx: Context,
        invocation: Invocation,
        call: ToolContext,
        tools: Sequence[Tool],
        answer: mt.CallToolResult | mt.InputRequiredResult,
    ) -> bool:
        """Keep what a call wrote to ``ctx.state`` for the later requests of its client
        (see `Requests.client`; ``temp:`` keys live for the call only, as in an agent
        loop's run); when that changes the tools the client is offered (a `searchable`
        toolset's search loads some), tell it (`Changes.tell_client`), and the caller
        in ``answer``'s ``_meta``. Whether it should be told there (a `CallToolResult`
        whose tools changed).

        The call ran whatever happens here: the state is kept first, and a failure to
        list the tools again (an upstream server reconnecting) is logged and skipped,
        never the call's answer (a client told a payment failed would send it twice)."""
        client = self.requests.client(ctx, invocation)
        writes = state_writes(call.actions_set, lasting=True)
        if not writes or client is None:
            return False
        self.requests.keep(client, writes)
        answered = isinstance(answer, mt.CallToolResult)
        if not (answered or self.changes.hears(client)):
            return False  # nobody would be told: the tools are not listed again
        now = replace(invocation, state={**invocation.state, **writes})
        try:
            after = await self._tools(ToolContext(now))
        except MCPError as exc:
            logger.warning(
                "after a call to %r, listing the tools again to see whether they changed "
                "failed (error %s); the client was not told of a change",
                call.tool_name,
                exc.error.code,
            )
            return False
        if same_offer(tools, after):
            return False
        await self.changes.tell_client(client)
        return answered

    async def _run_call(
        self,
        request: IncomingRequest,
        params: mt.CallToolRequestParams,
        tool: Tool,
        listing: Listing,
        call: ToolContext,
        channel: McpChannel,
    ) -> mt.CallToolResult:
        outcome: Outcome
        if channel.args is None:
            outcome = await self._first_round(tool, params.arguments or {}, call, channel)
        else:  # a later round of a call that asked (2026-07-28): before_tool ran in the first
            outcome = await self.calls.invoke(tool, channel.args, call, resumed=True)
        if type(outcome) is Done:  # most calls: nothing to settle
            result = outcome.result
        else:
            settled = await self.calls.settle(
                tool,
                outcome,
                call,
                confirm=lambda needed: self._confirm(channel, tool.name, needed.hint, needed.args),
                lookup=lambda needed: self._credential(needed, request, call),
            )
            if isinstance(settled, mt.CallToolResult):
                return settled
            result = settled.result if isinstance(settled, Done) else settled.interim
        if channel.missing is not None and is_error_result(result) and channel.modern:
            # The tool asked what the client did not declare it can answer: the
            # client's to know (2026-07-28), and the tool did not get round to an answer.
            raise channel.missing_capability()
        if listing.output is None or is_error_result(result):
            return result_to_mcp(result)
        # MCP: a structured result must match the outputSchema (the SDK's client raises
        # on one that does not); one that does not is an error, with the whole result.
        problem = listing.output.first_problem(result)
        if problem is not None:
            return result_to_mcp(_not_as_listed(tool.name, problem, result))
        return result_to_mcp(result, output_schema=True)

    def _first_round(
        self, tool: Tool, args: Mapping[str, Any], call: ToolContext, channel: McpChannel
    ) -> Awaitable[Outcome]:
        """The call, ``before_tool`` and all; on 2026-07-28 ``channel`` keeps the
        arguments as ``before_tool`` left them, so that when the call ends asking
        (``input_required``) the next round resumes with them, without running
        ``before_tool`` again (as a 2025-11-25 call, which waits for its answers)."""
        callbacks = self.calls.callbacks
        if not channel.modern or not callbacks.before_tool:
            return self.calls.invoke(tool, args, call)
        kept = replace(callbacks, before_tool=(*callbacks.before_tool, channel.keep_args))
        return self.calls.invoke(tool, args, call, callbacks=kept)

    async def _credential(
        self, needed: CredentialNeeded, request: IncomingRequest, call: ToolContext
    ) -> AuthCredential | mt.CallToolResult | None:
        """The credential the server's ``credentials`` give for what the call needs: the
        calling user's own (`UserCredentials`: an error result when there is none), or
        the one given for the scheme or found for the request."""
        if isinstance(self.credentials, UserCredentials):
            return await user_credential_result(self.credentials, needed, call)
        return await lookup_credential(self.credentials, needed.auth_config, request)

    async def _confirm(
        self, channel: McpChannel, tool_name: str, hint: str, args: Mapping[str, Any]
    ) -> ToolConfirmation | mt.CallToolResult:
        """The user's answer to ``hint``, asked through elicitation (on 2026-07-28 the
        call ends with the question, see `McpChannel`; the next round carries ``args``
        as ``before_tool`` left them); or an error result saying why the call did not
        run."""
        message = hint or f"Allow the call to {tool_name!r}?"
        channel.args = dict(args)
        try:
            meta = confirmation_meta(tool_name, args)  # what a gateway relays: see _relay
            answer = await channel.confirm(message, meta=meta)
        except MissingClientCapabilityError:
            channel.missing = None  # the user's to answer, not the client's to declare
            return result_to_mcp(
                error_result(
                    f"This call needs the user's confirmation ({message}), and this client "
                    "cannot be asked (it does not support elicitation, or the connection "
                    "is stateless); it did not run.",
                    confirmation_needed=True,
                )
            )
        except ToolCallError as exc:
            return result_to_mcp(
                error_result(f"The user was asked to confirm this call but {exc}; it did not run.")
            )
        return ToolConfirmation(confirmed=isinstance(answer, Elicitation) and answer.accepted)


def _not_as_listed(name: str, problem: tuple[str, str], result: JsonValue) -> JsonValue:
    pointer, what = problem
    return error_result(
        f"The result of {name!r} does not match the tool's output schema (at "
        f"{pointer or 'the top'!r}: {clip(what, 200)}); the whole result is under 'result'.",
        pointer=pointer,
        result=result,
    )


def _withheld(name: str, refusals: Sequence[AuthError]) -> JsonValue:
    """The answer to a call of a tool not offered to its caller, when some upstream
    servers offer them nothing for want of their own credential: the tool may be one of
    those servers', so the credential is named (the first, when several are missing)."""
    names = ", ".join(repr(each.scheme_name) for each in refusals)
    return error_result(
        f"No tool {clip(name, 100)!r} is offered to this caller, and the tools of an "
        f"upstream server that needs their own credential ({names}) are not offered to "
        f"them: {refusals[0]}",
        credential=refusals[0].scheme_name,
    )


def _unknown(name: str, tools: Sequence[Tool]) -> JsonValue:
    names = offered(tools)
    shown = ", ".join(names[:20]) + (f" and {len(names) - 20} more" if len(names) > 20 else "")
    return error_result(
        f"Unknown tool {clip(name, 100)!r}; this server offers: {shown or 'no tools'}.",
        fields={"name": "no tool of this name"},
    )
