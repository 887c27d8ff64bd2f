"""What a POST to the MCP endpoint must be before the SDK's streamable HTTP transport takes
it, answered as JSON-RPC errors that say what is wrong.

The SDK routes a request by its ``MCP-Protocol-Version`` header alone: 2026-07-28 ones to
its per-request entry, which answers a bad body well; anything else (no header, or a
2025-11-25 one) to the session transport, which answers a JSON-RPC batch or a malformed
message with -32602 and pydantic's report, and a 2026-07-28 request that forgot the
header with "Missing session ID" (or, stateless, serves it as a 2025-11-25 one).
`EnvelopeChecks` reads the body of such a POST first (within the body limit) and answers:

- -32600 Invalid Request for valid JSON that is no single JSON-RPC message (a batch, which
  MCP has not allowed since 2025-06-18; an array; a number; an object with no ``method``,
  ``result`` or ``error``; a ``jsonrpc`` other than ``"2.0"``; an ``id`` or ``params`` of
  the wrong type);
- -32020 (header mismatch) for a request whose ``params._meta`` says it speaks 2026-07-28
  but whose ``MCP-Protocol-Version`` header is missing or says otherwise;
- -32600 naming the ``Mcp-Session-Id`` header for a 2025-11-25 message other than
  ``initialize`` sent without a session to a server that keeps sessions;
- -32600 for an ``initialize`` notification, -32602 naming the field for an
  ``initialize`` whose params are not one's: the SDK would open a session for either
  and keep it (answered 202, or 200 with an error in the stream) until its idle timeout.

Everything else (and a body that is not JSON, which the transport answers -32700) goes on
to the transport unchanged.
"""

from __future__ import annotations

import json
from typing import Any

from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.server.transport_security import RequestBodyLimitMiddleware
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp_types import HEADER_MISMATCH, INVALID_PARAMS, INVALID_REQUEST, PROTOCOL_VERSION_META_KEY
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from toolsets._results import clip
from toolsets.mcp.server._checks import replaying
from toolsets.schema._restore import json_kind

__all__ = ["EnvelopeChecks", "header", "route_path"]

_VERSION_HEADER = MCP_PROTOCOL_VERSION_HEADER.encode("ascii")
_SESSION_HEADER = MCP_SESSION_ID_HEADER.encode("ascii")

_Problem = tuple[int, str, "str | int | None"]
"""A JSON-RPC error's code and message, and the id of the request it answers."""


class EnvelopeChecks:
    """ASGI middleware answering the POSTs to ``path`` that the SDK's session transport
    would answer vaguely (see the module's docstring).

    Args:
        app: The SDK's streamable HTTP app.
        path: The MCP endpoint.
        stateful: Whether the server keeps sessions (a 2025-11-25 message other than
            ``initialize`` then needs an ``Mcp-Session-Id``).
        max_body_bytes: The largest body read (a bigger one is refused with 413, as
            the transport would).
    """

    def __init__(self, app: ASGIApp, *, path: str, stateful: bool, max_body_bytes: int) -> None:
        self.app = app
        self.path = path
        self.stateful = stateful
        self._read = RequestBodyLimitMiddleware(self._check, max_body_bytes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or route_path(scope) != self.path:
            await self.app(scope, receive, send)
            return
        version = header(scope, _VERSION_HEADER)
        if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
            await self.app(scope, receive, send)  # the SDK's 2026-07-28 entry checks it all
            return
        await self._read(scope, receive, send)

    async def _check(self, scope: Scope, receive: Receive, send: Send) -> None:
        """With the body read whole (`RequestBodyLimitMiddleware` hands it over as one
        message): answer a problem, or hand the body on."""
        first = await receive()
        whole = first["type"] == "http.request" and not first.get("more_body", False)
        # A body cut short (the client left) is the transport's to meet, as it would.
        problem = self._problem(scope, first.get("body", b"")) if whole else None
        if problem is not None:
            code, text, request_id = problem
            error = {"code": code, "message": text}
            answer = {"jsonrpc": "2.0", "id": request_id, "error": error}
            await JSONResponse(answer, status_code=400)(scope, receive, send)
            return
        await self.app(scope, replaying(first, receive), send)

    def _problem(self, scope: Scope, body: bytes) -> _Problem | None:
        try:
            message = json.loads(body)
        except (ValueError, RecursionError):
            return None  # the transport answers -32700 (parse error)
        if isinstance(message, list):
            return (
                INVALID_REQUEST,
                "Invalid Request: a JSON-RPC batch (an array) is not accepted (MCP has "
                "none since 2025-06-18); send each message in a POST of its own",
                None,
            )
        if not isinstance(message, dict):
            return (
                INVALID_REQUEST,
                f"Invalid Request: the body is a JSON {json_kind(message)}, not a JSON-RPC "
                "message (an object)",
                None,
            )
        request_id = message.get("id")
        known_id = request_id if _is_id(request_id) else None
        shape = _shape_problem(message)
        if shape is not None:
            return INVALID_REQUEST, f"Invalid Request: {shape}", known_id
        version = header(scope, _VERSION_HEADER)
        said = _meta_version(message)
        if said is not None and said in MODERN_PROTOCOL_VERSIONS and version != said:
            wrong = "is missing" if version is None else f"says {clip(version, 40)!r}"
            return (
                HEADER_MISMATCH,
                f"The MCP-Protocol-Version header {wrong}, but the request's params._meta "
                f"({PROTOCOL_VERSION_META_KEY}) says it speaks {said}, whose requests "
                f"send 'MCP-Protocol-Version: {said}'",
                known_id,
            )
        if (
            self.stateful
            and "method" in message
            and message["method"] != "initialize"
            and header(scope, _SESSION_HEADER) is None
        ):
            return (
                INVALID_REQUEST,
                "Bad Request: the Mcp-Session-Id header is missing: a 2025-11-25 client "
                "opens a session with 'initialize' and sends its id with every later "
                "request (a 2026-07-28 client sends 'MCP-Protocol-Version: 2026-07-28' "
                "and needs none)",
                known_id,
            )
        if (
            self.stateful
            and message.get("method") == "initialize"
            and header(scope, _SESSION_HEADER) is None
        ):
            return _initialize_problem(message, known_id)
        return None


def _initialize_problem(message: dict[str, Any], request_id: str | int | None) -> _Problem | None:
    """Why an ``initialize`` cannot open a session, if it cannot: the SDK would make one
    for it and keep it (until its idle timeout) however it answered."""
    if "id" not in message:
        return (
            INVALID_REQUEST,
            "Invalid Request: 'initialize' must be a request (with an 'id')",
            None,
        )
    from mcp_types import InitializeRequestParams
    from pydantic import ValidationError

    try:
        InitializeRequestParams.model_validate(message.get("params", {}))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "params"
        text = f"Invalid params: 'initialize' params.{where}: {first['msg']}"
        return INVALID_PARAMS, clip(text, 300), request_id
    return None


def _shape_problem(message: dict[str, Any]) -> str | None:
    """What makes ``message`` (an object) no JSON-RPC 2.0 message, if anything. Only the
    envelope: what a request's params hold is its method's to check."""
    if message.get("jsonrpc") != "2.0":
        return "'jsonrpc' must be \"2.0\""
    if "method" in message:
        if "id" in message and not _is_id(message["id"]):
            return "a request's 'id' must be a string or an integer"
        if not isinstance(message["method"], str):
            return "'method' must be a string"
        if "params" in message and not isinstance(message["params"], dict):
            return "'params' must be an object"
        return None
    if "result" in message or "error" in message:
        if "id" not in message:
            return "a response needs the 'id' of the request it answers"
        return None
    return "no 'method' (a request or notification), nor 'result' or 'error' (a response)"


def _is_id(value: object) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _meta_version(message: dict[str, Any]) -> str | None:
    """The protocol version a request's ``params._meta`` says it speaks (2026-07-28)."""
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    said = meta.get(PROTOCOL_VERSION_META_KEY) if isinstance(meta, dict) else None
    return said if isinstance(said, str) else None


def header(scope: Scope, name: bytes) -> str | None:
    """The first value of the header ``name`` (lower case), None without one."""
    for key, value in scope["headers"]:
        if key == name:
            decoded: str = value.decode("latin-1")
            return decoded
    return None


def route_path(scope: Scope) -> str:
    """The request's path within the app (as Starlette routes it, under a mount)."""
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    return path[len(root) :] if root and path.startswith(root) else path
