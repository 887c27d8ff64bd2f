"""The checks every HTTP request to `McpServer`'s app passes before the MCP endpoint
reads it: ``Host`` and ``Origin`` against the allow-lists (against DNS rebinding), and a
body within bounds that arrived whole.

Host and origin are parsed and compared exactly — name, and port — not by prefix as the
SDK's ``name:*`` patterns are (``Host: localhost:80@evil.example`` starts with
``localhost:``). What does not parse is refused: userinfo, a path, a bad port, an
IPv6 address without brackets, several ``Host`` or ``Origin`` headers. Names compare
without case and without one trailing dot (``localhost.`` is ``localhost``); IPv6
addresses compare as addresses (``[0:0::1]`` is ``[::1]``).

A client that goes away while its body is still arriving is not an error of the server:
one line at debug, and the endpoint never sees the request.
"""

from __future__ import annotations

import ipaddress
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = [
    "Authority",
    "Pattern",
    "RequestChecks",
    "WholeBody",
    "parse_authority",
    "parse_origin",
    "replaying",
]


def replaying(first: Message, receive: Receive) -> Receive:
    """``receive`` for the app a middleware hands a request on to, after reading its
    first message itself: that message again, then the rest as they come."""
    given = False

    async def replay() -> Message:
        nonlocal given
        if not given:
            given = True
            return first
        return await receive()

    return replay


logger = logging.getLogger("toolsets.mcp.server")

_NAME = re.compile(r"[a-z0-9_-]+(?:\.[a-z0-9_-]+)*\.?")
_PORT = re.compile(r"[0-9]{1,5}")
_SCHEME = re.compile(r"[a-z][a-z0-9+.-]*")
_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}
_SHOWN = 100
"""Characters of a refused header value put in the log."""


@dataclass(frozen=True)
class Authority:
    """A host and port as they appear in ``Host`` or an origin, normalised."""

    host: str
    """Lowercase, without a trailing dot; an IPv6 address compressed, in brackets."""
    port: int | None
    """None when the header names no port (the scheme's default)."""


def parse_authority(text: str) -> Authority | None:
    """``host[:port]`` (a name, an IPv4 address or a bracketed IPv6 address), or None
    when ``text`` is anything else."""
    text = text.lower()
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            return None
        try:
            address = ipaddress.IPv6Address(text[1:end])
        except ValueError:
            return None
        if address.scope_id is not None:
            return None
        host, rest = f"[{address.compressed}]", text[end + 1 :]
    else:
        name, colon, port = text.partition(":")
        if not _NAME.fullmatch(name):
            return None
        host, rest = name.removesuffix("."), colon + port
    if not rest:
        return Authority(host, None)
    if not (rest.startswith(":") and _PORT.fullmatch(rest[1:])):
        return None
    port_number = int(rest[1:])
    return Authority(host, port_number) if 0 < port_number < 65536 else None


def parse_origin(text: str) -> tuple[str, Authority] | None:
    """``scheme://host[:port]`` (an origin as browsers send it) as its scheme and
    authority, or None (``null``, a path, userinfo, anything else)."""
    scheme, separator, rest = text.lower().partition("://")
    if not separator or not _SCHEME.fullmatch(scheme):
        return None
    authority = parse_authority(rest)
    return None if authority is None else (scheme, authority)


@dataclass(frozen=True)
class Pattern:
    """An allowed host (``name``, ``name:PORT``, ``name:*``) or origin
    (``scheme://name[:PORT|:*]``, or ``null``)."""

    scheme: str | None
    """The origin's scheme; None for a host."""
    host: str
    port: int | Literal["*"] | None
    """A port, any port (``*``: or none), or None: the scheme's default port."""

    @classmethod
    def parse(cls, text: str, *, origin: bool, option: str) -> Pattern:
        """Raises:
        ValueError: ``text`` is not a host (or origin) pattern, naming ``option``."""
        scheme: str | None = None
        rest = text
        if origin:
            if text.lower() == "null":
                return cls("null", "", None)
            scheme, separator, rest = text.lower().partition("://")
            if not separator or not _SCHEME.fullmatch(scheme):
                raise ValueError(f"{option}: {text!r} is not SCHEME://HOST[:PORT|:*] or null")
        any_port = rest.endswith(":*")
        authority = parse_authority(rest.removesuffix(":*") if any_port else rest)
        if authority is None or (any_port and authority.port is not None):
            shape = "SCHEME://HOST[:PORT|:*]" if origin else "HOST[:PORT|:*]"
            raise ValueError(f"{option}: {text!r} is not {shape}")
        return cls(scheme, authority.host, "*" if any_port else authority.port)

    def admits(self, scheme: str, authority: Authority) -> bool:
        """Whether ``authority`` (of a request or origin with ``scheme``) is this one."""
        if authority.host != self.host or (self.scheme is not None and scheme != self.scheme):
            return False
        if self.port == "*":
            return True
        default = _DEFAULT_PORTS.get(scheme)
        wanted = default if self.port is None else self.port
        given = default if authority.port is None else authority.port
        if wanted is None or given is None:  # a scheme without a default port: as written
            return authority.port == self.port
        return given == wanted


class RequestChecks:
    """An ASGI middleware checking a request's headers: one whose ``Host`` or ``Origin``
    is not allowed is refused (400 when malformed or repeated, else 421 for a host, 403
    for an origin); one declaring a body over ``max_body_bytes`` is refused with 413.
    Nothing of the body is read here (`WholeBody` reads it, after what else looks only
    at headers: authorization)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        allowed_hosts: Sequence[str],
        allowed_origins: Sequence[str],
        max_body_bytes: int,
    ) -> None:
        self.app = app
        self.hosts = [Pattern.parse(h, origin=False, option="allowed_hosts") for h in allowed_hosts]
        self.origins = [
            Pattern.parse(o, origin=True, option="allowed_origins") for o in allowed_origins
        ]
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self._refusal(scope)
        if refusal is not None:
            status, text = refusal
            await PlainTextResponse(text, status_code=status)(scope, receive, send)
            return
        declared = _header(scope, b"content-length") or ""
        if declared.isascii() and declared.isdigit() and int(declared) > self.max_body_bytes:
            await PlainTextResponse("Request body too large", status_code=413)(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _refusal(self, scope: Scope) -> tuple[int, str] | None:
        """The status and text refusing the request for its Host or Origin, if any."""
        hosts = [v for k, v in scope["headers"] if k == b"host"]
        if len(hosts) != 1:
            _refused("a request with %d Host headers", len(hosts))
            return 400, "Exactly one Host header is required"
        host_text = hosts[0].decode("latin-1")
        host = parse_authority(host_text)
        if host is None:
            _refused("a malformed Host header %r", host_text[:_SHOWN])
            return 400, "Malformed Host header"
        scheme = scope.get("scheme", "http")
        if not any(pattern.admits(scheme, host) for pattern in self.hosts):
            _refused("Host %r: not among allowed_hosts", host_text[:_SHOWN])
            return 421, "Invalid Host header"
        origins = [v for k, v in scope["headers"] if k == b"origin"]
        if not origins:
            return None  # not from a browser page
        if len(origins) > 1:
            _refused("a request with %d Origin headers", len(origins))
            return 400, "At most one Origin header is allowed"
        origin_text = origins[0].decode("latin-1")
        if origin_text.lower() == "null":
            allowed = any(pattern.scheme == "null" for pattern in self.origins)
        else:
            origin = parse_origin(origin_text)
            allowed = origin is not None and any(
                pattern.admits(*origin) for pattern in self.origins
            )
        if not allowed:
            _refused("Origin %r: not among allowed_origins", origin_text[:_SHOWN])
            return 403, "Invalid Origin header"
        return None


class WholeBody:
    """An ASGI middleware reading a request's body whole before ``app`` sees it: over
    ``max_body_bytes`` it is refused with 413; a request whose client leaves before its
    body is whole is dropped with one debug line. Others reach ``app`` with their body
    as one message."""

    def __init__(self, app: ASGIApp, *, max_body_bytes: int) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                logger.debug(
                    "%s left before its request body was whole (%d bytes came)",
                    _client(scope),
                    size,
                )
                return
            body = message.get("body", b"")
            size += len(body)
            if size > self.max_body_bytes:
                await PlainTextResponse("Request body too large", status_code=413)(
                    scope, receive, send
                )
                return
            chunks.append(body)
            if not message.get("more_body", False):
                break
        whole: Message = {"type": "http.request", "body": b"".join(chunks), "more_body": False}
        await self.app(scope, replaying(whole, receive), send)


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key == name:
            return str(value.decode("latin-1"))
    return None


def _client(scope: Scope) -> str:
    client = scope.get("client")
    return f"{client[0]}:{client[1]}" if client else "a client"


def _refused(message: str, *args: object) -> None:
    logger.warning("refused " + message, *args)
