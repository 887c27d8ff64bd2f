"""The door of `McpServer`'s HTTP app when it is a resource server: `AuthGuard`, ASGI
middleware letting through only requests with a good bearer token, and the protected
resource metadata (RFC 9728) that tells clients where to get one.

The answers, as RFC 6750 and the MCP authorization spec have them:

- no token: ``401``, ``WWW-Authenticate: Bearer resource_metadata="...", scope="..."``;
- a token that is not good (expired, another audience, a bad signature, ...): ``401``
  with ``error="invalid_token"`` and why, in fixed words;
- a token without a scope every request needs: ``403``, ``error="insufficient_scope"``;
- a token sent otherwise than in one ``Authorization: Bearer`` header (in the query
  string, twice, malformed): ``400``, ``error="invalid_request"``;
- the authorization server cannot be asked (its keys or introspection unreachable):
  ``503`` with ``Retry-After``, and the request is not served.

A request let through carries the SDK's ``AuthenticatedUser`` (``scope["user"]``, with the
`Identity` beside its access token) and ``AuthCredentials`` (``scope["auth"]``): the SDK's
transport binds a session to the principal that opened it, and the server's handlers read
the identity from there (`_request.identity_of`).
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any

from mcp.server.auth.json_response import PydanticJSONResponse
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.routes import cors_middleware
from mcp.shared.auth import ProtectedResourceMetadata
from starlette.authentication import AuthCredentials
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from toolsets._context import Identity
from toolsets._logs import calling_as
from toolsets.mcp.server._auth._config import MAX_TOKEN_LENGTH, OAuthResourceServer
from toolsets.mcp.server._auth._issuer import IssuerUnavailable
from toolsets.mcp.server._auth._tokens import InvalidToken, TokenValidator
from toolsets.mcp.server._envelope import header, route_path

__all__ = [
    "METADATA_PATH",
    "AuthGuard",
    "Caller",
    "metadata_routes",
    "metadata_url",
    "mounted_metadata_routes",
]

logger = logging.getLogger("toolsets.mcp.server.auth")

METADATA_PATH = "/.well-known/oauth-protected-resource"
"""Where the protected resource metadata is (RFC 9728), and, followed by the endpoint's
path, its form for this endpoint (``/.well-known/oauth-protected-resource/mcp``)."""
_BEARER = re.compile(r"[Bb][Ee][Aa][Rr][Ee][Rr] +([A-Za-z0-9\-._~+/]+=*) *")
"""``Bearer <token>`` with the token as RFC 6750 ``b64token`` has it."""
_QUERY_TOKEN = re.compile(rb"(?:^|&)access_token=")


class Caller(AuthenticatedUser):
    """The SDK's authenticated user, with the `Identity` the token gave."""

    def __init__(self, verified_token: Any, identity: Identity) -> None:
        super().__init__(verified_token)
        self.caller = identity
        """Who calls, as the token says."""


def resource_url(scope: Scope, config: OAuthResourceServer, path: str, mount: str = "") -> str:
    """This server's resource identifier: as configured, else the URL the request came
    to (its scheme, the ``Host`` header `RequestChecks` let through, the endpoint's path
    under any mount: the ``root_path`` the request has, then ``mount``, where the app is
    mounted in the one answering it)."""
    if config.resource is not None:
        return config.resource
    host = header(scope, b"host") or "{}:{}".format(*scope.get("server") or ("127.0.0.1", 80))
    return f"{scope.get('scheme', 'http')}://{host}{scope.get('root_path', '')}{mount}{path}"


def metadata_url(resource: str) -> str:
    """Where the metadata of ``resource`` is (RFC 9728 §3.1: the well-known path inserted
    between the host and the resource's path)."""
    scheme, _, rest = resource.partition("://")
    host, slash, path = rest.partition("/")
    path = (slash + path).rstrip("/")
    return f"{scheme}://{host}{METADATA_PATH}{path}"


def answering_metadata_url(scope: Scope, resource: str, path: str) -> str:
    """The metadata URL a ``401`` names: RFC 9728's form of ``resource``, or, for an app
    mounted under a prefix (a ``root_path``), the route the app itself answers under
    that prefix (the host's root answers the RFC form only if the outer app was given
    `mounted_metadata_routes`; a client follows the URL the ``401`` names first)."""
    root = scope.get("root_path", "")
    endpoint = root + path.rstrip("/")
    if root and resource.rstrip("/").endswith(endpoint):
        base = resource.rstrip("/").removesuffix(path.rstrip("/"))
        return f"{base}{METADATA_PATH}{path.rstrip('/')}"
    return metadata_url(resource)


def _metadata_endpoint(
    config: OAuthResourceServer, path: str, name: str, mount: str = ""
) -> ASGIApp:
    """The endpoint answering the metadata of the MCP endpoint at ``path`` (of an app
    mounted at ``mount`` in the app it answers in)."""

    async def metadata(request: Request) -> Response:
        resource = resource_url(request.scope, config, path, mount)
        # Validated by the SDK's model from strings: it keeps an empty path as it is
        # (an issuer is compared exactly, "https://as.example" is not "...example/").
        document = ProtectedResourceMetadata.model_validate(
            {
                "resource": resource,
                "authorization_servers": [config.issuer],
                "scopes_supported": list(config.advertised_scopes) or None,
                "resource_name": config.resource_name or name,
                "resource_documentation": config.resource_documentation,
            }
        )
        return PydanticJSONResponse(document, headers={"Cache-Control": "public, max-age=3600"})

    return cors_middleware(metadata, ["GET", "OPTIONS"])


def metadata_routes(config: OAuthResourceServer, path: str, name: str) -> list[Route]:
    """The routes answering the protected resource metadata of the endpoint at ``path``:
    at ``/.well-known/oauth-protected-resource`` followed by the path (RFC 9728), and
    without it (clients that look there first)."""
    endpoint = _metadata_endpoint(config, path, name)
    paths = dict.fromkeys([METADATA_PATH + path.rstrip("/"), METADATA_PATH])
    return [Route(each, endpoint=endpoint, methods=["GET", "OPTIONS"]) for each in paths]


def mounted_metadata_routes(
    config: OAuthResourceServer, mount: str, path: str, name: str
) -> list[Route]:
    """The route answering, at the root of an app that mounts the server's app at
    ``mount``, the metadata of its endpoint at ``path``: RFC 9728's
    ``/.well-known/oauth-protected-resource`` followed by ``mount`` and ``path``."""
    endpoint = _metadata_endpoint(config, path, name, mount)
    where = METADATA_PATH + mount + path.rstrip("/")
    return [Route(where, endpoint=endpoint, methods=["GET", "OPTIONS"])]


class AuthGuard:
    """ASGI middleware letting through to ``app`` only the requests with a good bearer
    token (the metadata routes excepted), as the module's docstring says.

    Args:
        app: What is guarded.
        config: The server's authorization settings.
        validator: Checks the tokens.
        path: The MCP endpoint's path (for the resource URL).
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        config: OAuthResourceServer,
        validator: TokenValidator,
        path: str,
    ) -> None:
        self.app = app
        self.config = config
        self.validator = validator
        self.path = path
        self._scope_parameter = " ".join(config.required_scopes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or route_path(scope).startswith(METADATA_PATH):
            await self.app(scope, receive, send)
            return
        resource = resource_url(scope, self.config, self.path)
        named = answering_metadata_url(scope, resource, self.path)
        refuse = _Refusal(send, named, self._scope_parameter)
        token = _token_of(scope)
        if isinstance(token, tuple):
            await refuse(*token)
            return
        try:
            verified = await self.validator.validate(token, resource)
        except InvalidToken as exc:
            logger.info("refused an access token: %s", exc.description)
            await refuse(401, "invalid_token", exc.description)
            return
        except IssuerUnavailable as exc:
            logger.info("answered 503: the authorization server cannot be asked: %s", exc.reason)
            await refuse.unavailable(self.validator.issuer.retry_after)
            return
        identity = verified.identity
        missing = [each for each in self.config.required_scopes if each not in identity.scopes]
        if missing:
            logger.info(
                "refused %s (client %s): lacks the scope(s) %s",
                identity.subject,
                identity.client_id,
                " ".join(missing),
            )
            await refuse(
                403,
                "insufficient_scope",
                f"the access token lacks the scope(s) {' '.join(missing)}",
            )
            return
        logger.debug("authorized %s (client %s)", identity.subject, identity.client_id)
        scope["user"] = Caller(verified.access_token, identity)
        scope["auth"] = AuthCredentials(sorted(identity.scopes))
        with calling_as(identity.subject, identity.client_id):  # named in each log line
            await self.app(scope, receive, send)


def _token_of(scope: Scope) -> str | tuple[int, str | None, str]:
    """The bearer token a request sends, or why it is refused: its status, error code
    (None: no error code, a request that sent no token) and description."""
    if _QUERY_TOKEN.search(scope.get("query_string", b"")):
        logger.info("refused a request with an access token in its URL (not logged)")
        return (
            400,
            "invalid_request",
            "send the access token in the Authorization header, never in the URL",
        )
    given = [value for name, value in scope["headers"] if name == b"authorization"]
    if not given:
        return 401, None, "this server needs an access token (Authorization: Bearer)"
    if len(given) > 1:
        return 400, "invalid_request", "send one Authorization header, not several"
    if len(given[0]) > MAX_TOKEN_LENGTH + 16:
        return (
            401,
            "invalid_token",
            f"the access token is longer than {MAX_TOKEN_LENGTH} characters",
        )
    header = given[0].decode("latin-1")
    matched = _BEARER.fullmatch(header)
    if matched is not None:
        return matched.group(1)
    if header.split(" ", 1)[0].lower() != "bearer":
        return 401, None, "this server takes bearer access tokens (Authorization: Bearer)"
    return 400, "invalid_request", "the Authorization header is not 'Bearer <token>'"


class _Refusal:
    """Answers a refused request (JSON body, ``WWW-Authenticate`` challenge)."""

    def __init__(self, send: Send, metadata: str, scope: str) -> None:
        self.send = send
        self.metadata = metadata
        self.scope = scope

    async def __call__(self, status: int, error: str | None, description: str) -> None:
        parameters = [f'error="{error}"'] if error else []
        parameters.append(f'error_description="{description}"')
        parameters.append(f'resource_metadata="{self.metadata}"')
        if self.scope:
            parameters.append(f'scope="{self.scope}"')
        body = {"error": error or "unauthorized", "error_description": description}
        challenge = "Bearer " + ", ".join(parameters)
        await self._answer(status, body, [(b"www-authenticate", challenge.encode("latin-1"))])

    async def unavailable(self, retry_after: float) -> None:
        body = {
            "error": "temporarily_unavailable",
            "error_description": "the authorization server cannot be asked now; try again",
        }
        await self._answer(503, body, [(b"retry-after", str(max(1, round(retry_after))).encode())])

    async def _answer(
        self, status: int, body: dict[str, str], extra: list[tuple[bytes, bytes]]
    ) -> None:
        content = json.dumps(body).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(content)).encode()),
            (b"cache-control", b"no-store"),
            *extra,
        ]
        await self.send({"type": "http.response.start", "status": status, "headers": headers})
        await self.send({"type": "http.response.body", "body": content})
