"""The sessions of one `McpToolset`, and one request over them (internal).

A toolset keeps one session per distinct set of per-call headers (one, without a
``header_provider``; one per user token with one), the least recently used closed past
``max_sessions``. Each session's owner task lives in the task group of the task that
entered the toolset (``async with``), or on a background loop before that (`Host`). A
request goes over the session serving its caller, is bounded by its own deadline, and is
sent once more on a new session when the server refused the old one before running it;
a refusal of the session's credential (HTTP 401, or 403 ``insufficient_scope``) is an
`AuthError`, the header provider that gave it told (see `_refusal`); a 429 or 5xx answer
is a `ServerStatusError` (see `_pushback`), the session kept; every other failure is
mapped into ours, a secret of the session quoted by the server masked."""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio
import mcp.types as mt
import pydantic
from anyio.abc import TaskGroup
from mcp import MCPError

from toolsets._auth import check_headers, redact
from toolsets._context import ToolContext
from toolsets._errors import AuthError, ConnectionError, ToolCallError
from toolsets._tool import Tool
from toolsets.mcp.client._connection import (
    Connection,
    ConnectionOptions,
    SessionRefusedError,
    StaleConnectionError,
    is_connection_lost,
)
from toolsets.mcp.client._host import Host
from toolsets.mcp.client._pushback import PushedBackError, ServerStatusError
from toolsets.mcp.client._refusal import CredentialRefusedError, tell_refused
from toolsets.mcp.client._transports import StreamableHttp, Transport

__all__ = ["Sessions", "result_of_invalid_params"]

logger = logging.getLogger("toolsets.mcp")


class Sessions:
    """The sessions of one toolset, keyed by their callers' headers ("" for the one
    without), and the tools listed over each (dropped with it).

    Args:
        transport: The toolset's transport (a session with per-call headers gets a copy
            carrying them).
        name: The toolset's name, for errors and logs.
        connect_timeout: Seconds to start or reach the server and finish the handshake.
        client_kwargs: The SDK client's options for each session (`client_kwargs`).
        max_sessions: How many sessions with per-call headers stay open.
        on_list_changed: Called when a session hears that the server's tools changed.
    """

    def __init__(
        self,
        transport: Transport,
        *,
        name: str,
        connect_timeout: float,
        client_kwargs: dict[str, Any],
        max_sessions: int,
        on_list_changed: Callable[[], None],
    ) -> None:
        self.transport = transport
        self.name = name
        self.connect_timeout = connect_timeout
        self.client_kwargs = client_kwargs
        self.max_sessions = max_sessions
        self._on_list_changed = on_list_changed
        self.hosts: dict[str, Host] = {}
        """Each session's host, the least recently used first."""
        self.listings: dict[str, tuple[Any, list[Tool]]] = {}
        """Per session: the connection a listing came from, and the listing."""
        self.task_group: TaskGroup | None = None
        """Where new sessions' owner tasks run: the toolset's ``async with``, if entered."""
        self._entered = 0
        self._entered_by: int | None = None
        self.per_call_headers = (
            isinstance(transport, StreamableHttp) and transport.header_provider is not None
        )
        """Whether a header provider picks each call's session (else one is shared)."""
        self.answers_input = any(
            key in client_kwargs for key in ("elicitation_callback", "sampling_callback")
        )
        """Whether the sessions answer a server's questions (elicitation, sampling),
        as a task that is ``input_required`` asks them."""

    # --- where they live -------------------------------------------------------------

    async def enter(self, owner: object) -> None:
        """``async with owner`` (the toolset): from now on the sessions' owner tasks run
        in a task group of the entering task's, and the shared session opens now.

        Raises:
            RuntimeError: another task entered ``owner`` already.
            ConnectionError: the server cannot be reached (or did not answer in time).
        """
        task = anyio.get_current_task().id
        if self.task_group is not None and task != self._entered_by:
            raise RuntimeError(
                f"{owner!r} is already entered by another task; enter it once, in the task "
                "that outlives its users (its session is shared by every task anyway)"
            )
        if self.task_group is None:
            if self.hosts:
                # Sessions opened on first use live on a background loop: close them, so
                # that every session from now on lives in this task group.
                await self.close()
            self._entered_by = task
            task_group = anyio.create_task_group()
            await task_group.__aenter__()
            self.task_group = task_group
            for host in self.hosts.values():
                host.attach(task_group)
        self._entered += 1
        # Connect now, so that a wrong command or URL fails here rather than at the first
        # call (with per-call headers, sessions open per caller instead).
        if not self.per_call_headers:
            try:
                await self.host(None).connect()
            except BaseException:
                await self.exit()
                raise

    async def exit(self) -> None:
        """Leave ``async with``: the last one out closes every session and the task
        group they lived in."""
        self._entered -= 1
        if self._entered > 0:
            return
        await self.close()
        task_group, self.task_group = self.task_group, None
        if task_group is not None:
            await task_group.__aexit__(None, None, None)

    async def close(self) -> None:
        """Close every session (ending a stdio server's process), shielded from
        cancellation; the next request opens a new one."""
        hosts = list(self.hosts.values())
        self.hosts.clear()
        self.listings.clear()
        with anyio.CancelScope(shield=True):
            for host in hosts:
                await host.close()

    # --- which session --------------------------------------------------------------

    async def _headers(self, ctx: ToolContext | None) -> dict[str, str]:
        transport = self.transport
        if not isinstance(transport, StreamableHttp) or transport.header_provider is None:
            return {}
        headers = transport.header_provider(ctx)
        if inspect.isawaitable(headers):
            headers = await headers
        check_headers(headers)
        return dict(headers)

    def host(self, key: str | None, headers: Mapping[str, str] | None = None) -> Host:
        """The host of session ``key`` (None: the one without per-call headers), made
        with ``headers`` if there is none yet."""
        # One session per distinct set of per-call headers (e.g. one per user token):
        # a session's headers are fixed when it opens.
        key = key or ""
        host = self.hosts.get(key)
        if host is None:
            extra = dict(headers or {})
            secrets = self._transport(extra).secrets
            host = self.hosts[key] = Host(lambda: self._options(extra), secrets)
            if self.task_group is not None:
                host.attach(self.task_group)
        return host

    def shared_host(self) -> Host | None:
        """The host of the one session every call shares, when no header provider picks
        a session per call (None: ask `host_for`)."""
        if self.per_call_headers:
            return None
        return self.hosts.get("") or self.host(None)

    async def host_for(self, ctx: ToolContext | None) -> tuple[str, Host]:
        """The key and host of the session serving ``ctx`` (its header provider's
        headers say which)."""
        headers = await self._headers(ctx)
        if not headers:
            return "", self.host(None)
        key = hashlib.sha256(json.dumps(sorted(headers.items())).encode()).hexdigest()
        host = self.host(key, headers)
        self.hosts[key] = self.hosts.pop(key)  # most recently used last
        while len(self.hosts) > self.max_sessions:
            # The least recently used caller's session is closed; it reopens if needed.
            oldest = next(iter(self.hosts))
            self.listings.pop(oldest, None)
            await self.hosts.pop(oldest).close()
        return key, host

    def _transport(self, extra_headers: Mapping[str, str]) -> Transport:
        """The transport of a session with ``extra_headers`` (a header provider's)."""
        transport = self.transport
        if extra_headers and isinstance(transport, StreamableHttp):
            # A per-call header replaces the transport's of the same name in any case
            # (a caller's own Authorization, never sent beside the server's).
            replaced = {name.lower() for name in extra_headers}
            kept = {k: v for k, v in transport.headers.items() if k.lower() not in replaced}
            transport = dataclasses.replace(
                transport, headers={**kept, **extra_headers}, header_provider=None
            )
        return transport

    def _options(self, extra_headers: Mapping[str, str]) -> ConnectionOptions:
        return ConnectionOptions(
            transport=self._transport(extra_headers),
            name=self.name,
            connect_timeout=self.connect_timeout,
            client_kwargs=self.client_kwargs,
            on_list_changed=self._on_list_changed,
        )

    # --- one request ------------------------------------------------------------------

    async def request(
        self,
        ctx: ToolContext | None,
        what: str,
        fn: Callable[..., Awaitable[Any]],
        limit: float,
        *,
        tool_name: str = "",
        retry_expired: bool = True,
        host: Host | None = None,
        fn_args: tuple[Any, ...] = (),
        invalid_params_result: bool = False,
    ) -> Any:
        """Run one request, ``fn(client, *fn_args)``, on the session (``host``'s, by
        default the one serving ``ctx``), mapping the SDK's failures into ours; a secret
        of the session that the server quotes in an error is masked. With
        ``invalid_params_result``, a JSON-RPC "invalid params" answer is an error result
        (a tool call's arguments, which the model can fix)."""
        if host is None:
            _, host = await self.host_for(ctx)
        for attempt in (1, 2):
            connection = host.connection
            if connection is None or not connection.alive:
                connection = await self._connect(ctx, host, what)
            try:
                # A bare cancel scope: anyio.fail_after wraps one in another object.
                with anyio.CancelScope(deadline=anyio.current_time() + limit) as scope:
                    result = await host.call(connection, fn, fn_args)
                if scope.cancelled_caught:
                    raise TimeoutError(f"{what} got no answer within {limit:g} s")
                return result
            except CredentialRefusedError as exc:
                raise await self._refused(ctx, host, what, exc) from exc
            except PushedBackError as exc:
                raise self._pushed_back(exc, what, tool_name, host.secrets) from exc
            except StaleConnectionError as exc:
                if attempt == 2:
                    raise self._failure(exc, what, tool_name, host.secrets) from exc
                await host.discard(connection)  # nothing was sent: a new session
            except SessionRefusedError as exc:
                await host.discard(connection)
                if not retry_expired or attempt == 2:
                    raise self._failure(exc, what, tool_name, host.secrets) from exc
                # Refused before it ran: a new session, and the same request once more.
                logger.info("MCP session with %s expired; reconnecting", self.name)
            except MCPError as exc:
                if invalid_params_result and exc.code == mt.INVALID_PARAMS:
                    return result_of_invalid_params(exc)
                if is_connection_lost(exc):
                    await host.discard(connection)
                raise self._failure(exc, what, tool_name, host.secrets) from exc
            except ToolCallError as exc:  # made by the request itself (a task's end)
                message = redact(str(exc), host.secrets)
                if message == str(exc):
                    raise
                raise ToolCallError(message, tool_name=exc.tool_name) from exc
            except pydantic.ValidationError as exc:
                raise self._failure(exc, what, tool_name, host.secrets) from exc
        raise AssertionError("unreachable")  # pragma: no cover

    async def _connect(self, ctx: ToolContext | None, host: Host, what: str) -> Connection:
        """``host``'s live connection, opened if needed, for ``what``."""
        try:
            return await host.connect()
        except CredentialRefusedError as exc:
            raise await self._refused(ctx, host, what, exc) from exc

    async def _refused(
        self, ctx: ToolContext | None, host: Host, what: str, exc: CredentialRefusedError
    ) -> AuthError:
        """The error of the server's refusal of the credential ``host``'s session
        carries, for ``what``. The header provider that gave it is told (a `UserBearer`
        drops it: the caller's next request obtains a new one, and nothing is sent
        again now) and the session closed; without one hearing refusals, the credential
        is the toolset's own, and its session is closed on a 401 only (a 403 names a
        scope one request lacks: the session serves others)."""
        transport = self.transport
        provider = transport.header_provider if isinstance(transport, StreamableHttp) else None
        name = await tell_refused(provider, ctx)
        refusal = exc.refusal
        if name is not None or refusal.status == 401:
            for key in [key for key, each in self.hosts.items() if each is host]:
                del self.hosts[key]
                self.listings.pop(key, None)
            await host.close()
        whose = f"the credential {name!r}" if name else "the credential"
        after = "; it was dropped, and the next call obtains a new one" if name else ""
        message = f"MCP server {self.name} refused {whose} for {what} ({refusal})"
        message += f", so it did not run{after}."
        return AuthError(redact(message, host.secrets), scheme_name=name or self.name)

    def _pushed_back(
        self, exc: PushedBackError, what: str, tool_name: str, secrets: tuple[str, ...]
    ) -> ServerStatusError:
        """The error of a 429 or 5xx answer to ``what``: who said what, and how long to
        wait when the server said (the server's own message masked of secrets)."""
        pushback = exc.pushback
        how = "and refused" if pushback.status in (429, 503) else "answering"
        message = f"MCP server {self.name} {pushback} {how} {what}"
        if exc.said:
            message += f": {redact(exc.said, secrets)}"
        wait = pushback.retry_after
        message += f"; try again in {wait:g} s." if wait is not None else "."
        return ServerStatusError(
            message, tool_name=tool_name, status=pushback.status, retry_after=wait
        )

    def _failure(
        self,
        exc: MCPError | pydantic.ValidationError | StaleConnectionError | SessionRefusedError,
        what: str,
        tool_name: str,
        secrets: tuple[str, ...],
    ) -> Exception:
        """What a request's failure is raised as (a secret the server quoted masked):
        the server gone again before the request was sent, or refusing the session,
        or gone during the request; a timeout it reported, its protocol error, or a
        malformed result."""
        if isinstance(exc, StaleConnectionError):
            return ConnectionError(
                f"MCP server {self.name} went away again before {what} was sent",
                target=self.transport.target,
            )
        if isinstance(exc, SessionRefusedError):
            return ConnectionError(
                f"MCP server {self.name} refused the session for {what}: "
                + redact(str(exc), secrets),
                target=self.transport.target,
            )
        if isinstance(exc, pydantic.ValidationError):
            return ToolCallError(
                f"MCP server {self.name} answered {what} with a malformed result "
                f"({exc.error_count()} errors, the first: {_first_error(exc)})",
                tool_name=tool_name,
            )
        if is_connection_lost(exc):
            return ConnectionError(
                f"MCP server {self.name} went away during {what}; it is not retried "
                "because it may have run (the next call starts a new session)",
                target=self.transport.target,
            )
        message = redact(exc.message, secrets)
        if exc.code == mt.REQUEST_TIMEOUT:
            return TimeoutError(f"{what} timed out on the server: {message}")
        return ToolCallError(
            f"MCP server {self.name} answered {what} with error {exc.code}: {message}",
            tool_name=tool_name,
        )


def _first_error(exc: pydantic.ValidationError) -> str:
    error = exc.errors(include_url=False, include_input=False)[0]
    where = ".".join(str(part) for part in error["loc"]) or "the result"
    return f"{where}: {error['msg']}"


def result_of_invalid_params(exc: MCPError) -> mt.CallToolResult:
    """A JSON-RPC "invalid params" answer (how many servers report bad arguments) as an
    error result, which the model can act on; anything else is raised again."""
    if exc.code != mt.INVALID_PARAMS:
        raise exc
    text = mt.TextContent(type="text", text=exc.message)
    return mt.CallToolResult(content=[text], is_error=True)
