"""Asking the client mid-request: the `McpChannel` of a request that may ask (a tool's
call, a prompt, a resource of the server's own), the request state a 2026-07-28 request
brings back (sealed by the SDK's `RequestStateBoundary` under the server's keys, taken
once: see `toolsets.mcp.server._spent`), and what a request that asked answers."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Sequence
from typing import Any, TypeVar

import mcp.types as mt
from mcp import MCPError
from mcp.server.lowlevel.server import Server
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity

from toolsets._errors import MissingClientCapabilityError, ToolsetError
from toolsets._results import clip
from toolsets.mcp.server._channel import InputRequired, McpChannel
from toolsets.mcp.server._keys import STATE_TTL, check_state_keys, state_keys_from
from toolsets.mcp.server._logging import Logging
from toolsets.mcp.server._request import Context
from toolsets.mcp.server._spent import SpentStates

__all__ = ["Asking", "answering"]

_T = TypeVar("_T")

AskingParams = mt.CallToolRequestParams | mt.GetPromptRequestParams | mt.ReadResourceRequestParams
"""The requests that may ask their client (and end with ``input_required``)."""


class Asking:
    """Opens the channel of each request that may ask its client, taking the request
    state it brings (each once, in ``spent``).

    Args:
        server: The SDK's server, whose middleware seals the request states.
        audience: Whom the states are sealed for (the server's name).
        logging: The log levels the connections asked for.
        spent: Where the request states taken are remembered.
    """

    def __init__(
        self, server: Server[Any], audience: str, logging: Logging, spent: SpentStates
    ) -> None:
        self._server = server
        self._audience = audience
        self._logging = logging
        self._spent = spent
        self._state_ttl = 0.0
        """Seconds a request state this server seals lives (its security's)."""
        self.seal_with(state_keys_from(os.environ))

    def seal_with(self, keys: Sequence[bytes | str] | None) -> None:
        """Seal request states under ``keys`` (see `McpServer.use_request_state_keys`;
        None: a key of this process only; by default the environment's, see `_keys`).

        Raises:
            ValueError: a malformed key (named by its place, never shown).
        """
        security = (
            RequestStateSecurity.ephemeral(ttl=STATE_TTL)
            if keys is None
            else RequestStateSecurity(keys=check_state_keys(keys), ttl=STATE_TTL)
        )
        self._state_ttl = security.ttl
        boundary = RequestStateBoundary(security, default_audience=self._audience)
        middleware = self._server.middleware
        middleware[:] = [m for m in middleware if not isinstance(m, RequestStateBoundary)]
        middleware.append(boundary)

    async def channel(self, ctx: Context, params: AskingParams, name: str) -> McpChannel:
        """The channel to the client of a request that may ask it (``ctx.client`` of
        what serves it: a tool, a prompt); ``name`` is what is served. Run what uses it
        through `answering`. The request state it brings is taken (`_take_state`)."""
        channel = McpChannel(
            ctx,
            input_responses=params.input_responses,
            request_state=params.request_state,
            tool_name=name,
            level=self._logging.level(ctx),
        )
        await self._take_state(channel, name)
        return channel

    async def _take_state(self, channel: McpChannel, name: str) -> None:
        """Take the request state a request brings, once: answers sent again with a
        state already taken (a confirmation replayed) are refused, and nothing runs.

        Raises:
            MCPError: -32602 when the state was taken before (or is one without an
                id, which this server never issues); -32603 with ``data.reason``
                ``request_state_store_unavailable`` when the store of taken states
                cannot take it now (full, or Redis down: the request can be sent again).
        """
        if not channel.has_state:
            return
        if channel.state_id is None:
            raise MCPError(
                mt.INVALID_PARAMS,
                "Invalid or expired requestState",
                {"reason": "invalid_request_state"},
            )
        try:
            fresh = await self._spent.spend(channel.state_id, self._state_ttl)
        except ToolsetError as exc:
            raise MCPError(
                mt.INTERNAL_ERROR,
                f"The answers to {clip(name, 100)!r} could not be taken now ({exc}); nothing ran.",
                # The same request may be sent again later: nothing took its state.
                {"reason": "request_state_store_unavailable"},
            ) from exc
        if not fresh:
            raise MCPError(
                mt.INVALID_PARAMS,
                f"This requestState was already used: the answers it carries (a "
                f"confirmation above all) count once, and {clip(name, 100)!r} did not run "
                "again. To run it again, send the request without requestState and "
                "answer anew.",
                {"reason": "request_state_used"},
            )


async def answering(channel: McpChannel, work: Awaitable[_T]) -> _T | mt.InputRequiredResult:
    """What ``work`` (a tool call, a prompt, a resource of ours, which may ask the
    client through ``channel``) answers; on 2026-07-28, when it asks, the questions (the
    client asks them, then sends the request again with the answers).

    Raises:
        MCPError: -32021 with ``data.requiredCapabilities``, when ``work`` asked what
            the client cannot answer (a prompt, a resource: a tool's call makes that an
            error result first, see `Tools`); on both eras, since neither has an error
            result for these requests.
    """
    try:
        return await work
    except InputRequired as pending:
        return channel.input_required(pending)
    except MissingClientCapabilityError as exc:
        raise channel.missing_capability(exc.capability) from exc
    except BaseExceptionGroup as group:  # asked from tasks of its own
        within = InputRequired.within(group)
        if within is not None:
            return channel.input_required(within)
        lacking, other = group.split(MissingClientCapabilityError)
        if lacking is None or other is not None:
            raise
        first: BaseException = lacking
        while isinstance(first, BaseExceptionGroup):
            first = first.exceptions[0]
        capability = first.capability if isinstance(first, MissingClientCapabilityError) else None
        raise channel.missing_capability(capability) from group
