"""`RestApiTool`: one operation as a tool. Checks the model's arguments against the
operation, builds the request exactly as the spec says, sends it with the toolset's pooled
client, and turns the response into a result for the model."""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urljoin

import anyio.to_thread
import httpx2

from toolsets._auth import AuthConfig, AuthCredential, redact_bytes
from toolsets._confirmed import ConfirmPolicy, confirm_rule
from toolsets._context import ToolContext
from toolsets._declaration import ToolAnnotations
from toolsets._errors import ConnectionError, ToolCallError, ToolDefinitionError, close_names
from toolsets._json import JsonValue
from toolsets._results import error_result, invalid_arguments_result
from toolsets._tool import BaseTool
from toolsets._validation import ArgumentChecker
from toolsets.openapi._model import Operation, Parameter
from toolsets.openapi._oauth import ClientCredentials, is_expired
from toolsets.openapi._schema import OperationSchema, plain_text
from toolsets.openapi._security import (
    Requirement,
    apply_security,
    choose,
    credential_problem_for,
    missing_credential,
    origin,
    sent_secrets,
    strip_credentials,
)
from toolsets.openapi._serialize import (
    SerializationError,
    cookie_pairs,
    encode_body,
    essence,
    header_value,
    path_value,
    query_pairs,
    split_path_key,
)

if TYPE_CHECKING:
    from toolsets.openapi._toolset import _Loaded

__all__ = ["RestApiTool"]

logger = logging.getLogger("toolsets.openapi")

MAX_REDIRECTS = 5
_READ_ONLY_METHODS = frozenset(("get", "head", "options"))
DESTRUCTIVE_METHODS = frozenset(("delete", "put", "patch"))
"""Methods that may remove or overwrite what is there (a PUT replaces the whole resource,
a PATCH changes it): destructive in MCP's sense. A POST is taken to add (use the
``writes`` policy for APIs whose POSTs do more)."""


class RestApiTool(BaseTool):
    """One API operation. Made by `OpenApiToolset`; the model's arguments are checked
    against the operation's schema before anything is sent."""

    def __init__(
        self,
        name: str,
        operation: Operation,
        schema: OperationSchema,
        loaded: _Loaded,
        *,
        base_url: str | None,
        confirm: ConfirmPolicy,
    ) -> None:
        method = operation.method
        super().__init__(
            name,
            _description(operation),
            parameters=schema.parameters,
            title=operation.summary or None,
            annotations=ToolAnnotations(
                read_only=method in _READ_ONLY_METHODS,
                destructive=(
                    method in DESTRUCTIVE_METHODS if method not in _READ_ONLY_METHODS else None
                ),
                idempotent=method in ("get", "head", "options", "put", "delete"),
                open_world=True,
            ),
            confirmation_hint=lambda args: (
                f"Allow {method.upper()} {operation.path} with "
                f"{json.dumps(dict(args), default=repr, ensure_ascii=False, sort_keys=True)}?"
            ),
            auth_config=missing_credential(operation, loaded.spec, loaded.credentials),
        )
        self._confirm = confirm_rule(confirm)
        self.operation = operation
        """The operation this tool calls."""
        self._schema = schema
        self._loaded = loaded
        self._base_url = base_url or ""
        """Where requests go (``""``: nowhere known; a call raises)."""
        by_place: dict[tuple[str, str], Parameter] = {
            (p.location, p.name): p for p in operation.parameters
        }
        self._places = [
            (key, argument, by_place.get((argument.location, argument.name)))
            for key, argument in schema.arguments.items()
        ]
        """Each argument, where it goes, and its parameter (None for the body)."""
        self._checker = ArgumentChecker(schema.parameters, tool_name=name)
        self._route, self._key_query = split_path_key(operation.path)
        """The path template sent to, and the query pairs the path key itself fixes."""

    def requires_confirmation(self, args: Mapping[str, Any]) -> bool:
        """As the toolset's ``confirm`` says: the check `confirmed` makes (over the
        method-derived hints: GET, HEAD, OPTIONS read-only; DELETE, PUT, PATCH
        destructive)."""
        return self._confirm(self, args)

    async def run(self, args: Mapping[str, Any], ctx: ToolContext) -> JsonValue:
        self._check_base()
        if isinstance(args, Mapping):  # null for an optional argument: not given (strict hosts)
            args = self._checker.without_null_options(args)
        problems = self._check(args)
        if problems:
            return invalid_arguments_result(problems)
        asked = self.auth_config
        user = ctx.auth_credential if asked is not None else None
        if asked is not None and user is not None:
            if is_expired(user):
                return self._ask_again(ctx, asked, "has expired")
            problem = credential_problem_for(asked.scheme, user)
            if problem is not None:  # e.g. pasted with a newline: the user can fix it
                logger.warning(
                    "%s: the credential given for security scheme %r %s; asking again",
                    self.name,
                    asked.scheme_name,
                    problem,
                )
                return self._ask_again(ctx, asked, problem)
        client = await self._client()
        for attempt in range(2):
            credentials, requirement, fetched = await self._credentials(user)
            try:
                request = self.build_request(args, credentials=credentials, requirement=requirement)
            except SerializationError as error:
                return invalid_arguments_result([(self._argument_of(error), str(error))])
            secrets = sent_secrets(credentials) + self._loaded.header_secrets
            status, result = await self._send(client, request, secrets)
            if status != 401:
                break
            if fetched and attempt == 0:  # a token we got ourselves was refused: renew it
                for name, token in fetched.items():
                    self._loaded.oauth.forget(name, token)
                continue
            if asked is not None and user is not None:
                return self._ask_again(ctx, asked, "was refused (HTTP 401)", result)
            break
        return result

    def _ask_again(
        self, ctx: ToolContext, asked: AuthConfig, why: str, result: JsonValue = None
    ) -> JsonValue:
        """The user's credential is no good: ask for a new one (the call pauses and runs
        again with it), or, outside an agent, say so."""
        message = f"the credential for security scheme {asked.scheme_name!r} {why}"
        if ctx.function_call_id is None:
            return result if result is not None else error_result(message)
        ctx.request_credential(asked)
        return error_result(message + "; a new one was asked for")

    async def _credentials(
        self, user: AuthCredential | None
    ) -> tuple[dict[str, AuthCredential | str], Requirement | None, dict[str, AuthCredential]]:
        """The credentials of the alternative to use, tokens fetched where the toolset
        holds client credentials; the alternative; and the tokens fetched."""
        loaded = self._loaded
        given = loaded.credentials
        if user is not None and self.auth_config is not None:
            given = {**given, self.auth_config.scheme_name: user}
        requirement = choose(self.operation, loaded.spec, given)
        if not requirement:
            return {}, requirement, {}
        ready: dict[str, AuthCredential | str] = {}
        fetched: dict[str, AuthCredential] = {}
        for name, scopes in requirement.items():
            credential = given[name]
            if isinstance(credential, ClientCredentials):
                scheme = loaded.spec.security_schemes[name]
                token = await loaded.oauth.token(name, scheme, credential, scopes, self._base_url)
                ready[name] = fetched[name] = token
            else:
                ready[name] = credential
        return ready, requirement, fetched

    def _argument_of(self, error: SerializationError) -> str:
        """The argument (as the model named it) a value that cannot be sent came from."""
        keys: dict[tuple[str, str], str] = {
            (a.location, a.name): key for key, a in self._schema.arguments.items()
        }
        if error.location != "body":
            return keys.get((error.location, error.field), error.field)
        lifted = keys.get(("body_property", error.field))
        if lifted is not None:
            return lifted
        whole = keys.get(("body", ""), "body")
        return f"{whole}.{error.field}" if error.field else whole

    def _check(self, args: Mapping[str, Any]) -> list[tuple[str, str]]:
        """What is wrong with ``args``: each field's path and problem."""
        received: object = args  # typed as a Mapping, but it is whatever the model sent
        if not isinstance(received, Mapping):
            return self._checker.problems(received)
        problems: list[tuple[str, str]] = []
        taken = self._schema.arguments
        if not self._schema.extra_to_body and any(key not in taken for key in args):
            # One problem per unknown name (the schema's additionalProperties: false would
            # give one for them all, naming no field); the rest is checked as usual.
            for key in args:
                if key not in taken:
                    near = close_names(str(key), taken)
                    hint = f" (did you mean {', '.join(map(repr, near))}?)" if near else ""
                    problems.append((str(key), f"this tool takes no such argument{hint}"))
            args = {key: value for key, value in args.items() if key in taken}
        problems.extend(self._checker.problems(args))
        return problems

    def build_request(
        self,
        args: Mapping[str, Any],
        *,
        credentials: Mapping[str, AuthCredential | str] | None = None,
        requirement: Requirement | None = None,
    ) -> httpx2.Request:
        """The request for ``args`` (already checked), with ``credentials`` for
        ``requirement`` (by default: the toolset's given keys and tokens, for the first
        alternative they meet; tokens still to be fetched are not included)."""
        self._check_base()
        op = self.operation
        if credentials is None:
            credentials = {
                name: credential
                for name, credential in self._loaded.credentials.items()
                if not isinstance(credential, ClientCredentials)
            }
            requirement = choose(op, self._loaded.spec, credentials)
        path, key_query = self._route, self._key_query
        query: list[tuple[str, str]] = []
        headers: dict[str, str] = {}
        cookies: list[tuple[str, str]] = []
        body: Any = None
        lifted: dict[str, Any] = {}
        in_url: dict[tuple[str, str], int] = {}  # how much of the URL each argument makes
        for key, argument, param in self._places:
            if key not in args:
                continue
            value = args[key]
            if param is None:  # the body, whole or one lifted property
                if argument.location == "body":
                    body = value
                else:
                    lifted[argument.name] = value
            elif param.location == "path":
                text = path_value(param, value)
                in_url[param.location, param.name] = len(text)
                path = path.replace(f"{{{param.name}}}", text)
                if key_query:  # a path key may place a path parameter in its query
                    template = quote(f"{{{param.name}}}", safe="")
                    key_query = [(k, v.replace(template, text)) for k, v in key_query]
            elif param.location == "query":
                pairs = query_pairs(param, value)
                in_url[param.location, param.name] = sum(len(k) + len(v) + 2 for k, v in pairs)
                query.extend(pairs)
            elif param.location == "header":
                headers[param.name] = header_value(param, value)
            else:
                cookies.extend(cookie_pairs(param, value))
        if self._schema.extra_to_body:  # what the body takes besides its properties
            taken = self._schema.arguments
            lifted.update((key, value) for key, value in args.items() if key not in taken)
        content: bytes | None = None
        media = self._schema.media_type
        if media is not None:
            if lifted:
                body = lifted
            if body is not None or (op.body is not None and op.body.required):
                loaded, base = self._loaded, media.base
                encoded = encode_body(
                    media,
                    body if body is not None else {},
                    resolve=lambda schema: loaded.follow(schema, base),
                )
                content = encoded.content
                headers["Content-Type"] = encoded.content_type
        if key_query:
            given = {name for name, _ in query}
            query[:0] = [pair for pair in key_query if pair[0] not in given]
        url = self._base_url + path
        if query:
            url += "?" + "&".join(f"{k}={v}" for k, v in query)
        if requirement:
            security_query = apply_security(
                requirement, self._loaded.spec, credentials, headers, cookies
            )
            if security_query:
                url += ("&" if "?" in url else "?") + "&".join(
                    f"{k}={v}" for k, v in security_query
                )
        if cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in cookies)
        if self._loaded.headers:  # the toolset's fixed headers, unless the call set one
            own = {name.lower() for name in headers}
            headers.update(
                (name, value)
                for name, value in self._loaded.headers.items()
                if name.lower() not in own
            )
        # Built by the client: its timeouts and default headers (User-Agent: some APIs,
        # GitHub's among them, refuse requests without one) apply.
        try:
            return self._loaded.client.build_request(
                op.method.upper(), url, headers=headers, content=content
            )
        except httpx2.InvalidURL as error:
            if not in_url:  # the base URL, not the model's arguments
                raise ToolCallError(f"invalid URL: {error}", tool_name=self.name) from error
            # What a URL built from encoded values cannot carry is their length: the
            # longest value is the one to cut.
            location, name = max(in_url, key=in_url.__getitem__)
            too_long = "too long" in str(error)
            reason = (
                f"too long for a URL ({len(url):,} characters)"
                if too_long
                else f"cannot be sent in a URL: {error}"
            )
            raise SerializationError(location, name, reason) from error

    def _check_base(self) -> None:
        """Raise, naming what to pass, when the spec's server URL could not be made
        absolute (the tool can be listed and inspected, but not called)."""
        if self._base_url:
            return
        servers = self.operation.servers
        where = (
            f"its server URL {servers[0].url!r} is relative"
            if servers
            else "the spec names no server"
        )
        raise ToolDefinitionError(
            f"{self.name}: {where} and the spec was not loaded from an http(s) URL to "
            "resolve it against: pass base_url= (the API's URL) or spec_url= (the "
            "spec's) to OpenApiToolset",
            tool_name=self.name,
        )

    async def _client(self) -> httpx2.AsyncClient:
        """The toolset's client (made off the event loop the first time, before requests
        are built with it), unless the toolset was shut down."""
        loaded = self._loaded
        client = await loaded.http() if not loaded.shut_down else None
        if client is None or client.is_closed:
            raise ToolCallError(
                "the toolset this tool came from was shut down (or its client closed): "
                "list its tools again",
                tool_name=self.name,
            )
        return client

    async def _send(
        self, client: httpx2.AsyncClient, request: httpx2.Request, secrets: Sequence[str] = ()
    ) -> tuple[int | None, JsonValue]:
        """Send, following redirects; the final status (None: too many redirects) and the
        result for the model."""
        first = origin(request.url)
        for _ in range(MAX_REDIRECTS + 1):
            try:
                response = await client.send(request, stream=True, follow_redirects=False)
            except httpx2.TimeoutException as error:
                raise ConnectionError(
                    f"{request.method} {origin(request.url)}{request.url.path}: no answer in time",
                    target=origin(request.url),
                ) from error
            except httpx2.TransportError as error:
                raise ConnectionError(
                    f"cannot reach {origin(request.url)}: {type(error).__name__}",
                    target=origin(request.url),
                ) from error
            try:
                if response.is_redirect and "location" in response.headers:
                    request = self._redirected(request, response, first)
                    continue
                return response.status_code, await self._result(response, secrets)
            finally:
                await response.aclose()
        return None, error_result(f"more than {MAX_REDIRECTS} redirects")

    def _redirected(
        self, request: httpx2.Request, response: httpx2.Response, first: str
    ) -> httpx2.Request:
        url = httpx2.URL(urljoin(str(request.url), response.headers["location"]))
        method = request.method
        content: bytes | None = request.content
        headers = dict(request.headers)
        if response.status_code == 303 or (response.status_code in (301, 302) and method == "POST"):
            method, content = "GET", None
            headers.pop("content-type", None)
            headers.pop("content-length", None)
        headers.pop("host", None)
        if origin(url) != first:  # credentials never follow to another origin
            url = strip_credentials(url, self.operation, self._loaded.spec, headers)
            fixed = {name.lower() for name in self._loaded.headers}  # nor do headers=
            headers = {name: value for name, value in headers.items() if name.lower() not in fixed}
        return self._loaded.client.build_request(method, url, headers=headers, content=content)

    async def _checked(self, status: int, content_type: str, value: JsonValue) -> JsonValue:
        """``value``, checked against the spec's schema for the response (in a worker
        thread: a big body takes a while)."""
        loaded = self._loaded
        problems = await anyio.to_thread.run_sync(
            loaded.responses.problems, self.operation, status, content_type, value
        )
        if not problems:
            return value
        listed: list[JsonValue] = [
            {"field": field or "(the body)", "problem": text} for field, text in problems
        ]
        logger.warning(
            "%s: the HTTP %d response does not match the spec (%d problems; first: %s: %s)",
            self.name,
            status,
            len(problems),
            problems[0][0] or "(the body)",
            problems[0][1][:200],
        )
        if loaded.check_responses == "warn":
            return value
        return error_result(
            f"the API's HTTP {status} response does not match its spec",
            status=status,
            problems=listed[:20],
            body=value,
        )

    async def _result(self, response: httpx2.Response, secrets: Sequence[str] = ()) -> JsonValue:
        limit = self._loaded.max_response_bytes
        chunks: list[bytes] = []
        size = 0
        truncated = False
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > limit:
                chunks.append(chunk[: len(chunk) - (size - limit)])
                truncated = True
                break
            chunks.append(chunk)
        # An API may quote a credential it was sent (a "bad key: ..." message): the model
        # must never see it.
        data = redact_bytes(b"".join(chunks), secrets) if secrets else b"".join(chunks)
        content_type = response.headers.get("content-type", "")
        value = _decode(data, content_type, truncated, limit)
        checking = self._loaded.check_responses is not None and response.status_code < 400
        if checking and not truncated and _is_json(content_type) and isinstance(value, dict | list):
            return await self._checked(response.status_code, content_type, value)
        if response.status_code >= 400:
            return error_result(
                f"HTTP {response.status_code} {response.reason_phrase}".strip(),
                status=response.status_code,
                body=value,
            )
        return value


def _is_json(content_type: str) -> bool:
    kind = essence(content_type)
    return kind == "application/json" or kind.endswith("+json")


def _decode(data: bytes, content_type: str, truncated: bool, limit: int) -> JsonValue:
    kind = essence(content_type)
    if truncated:
        note = f"[the response was cut at {limit} bytes]"
        if kind.startswith("text/") or "json" in kind or "xml" in kind:
            return {"truncated": True, "text": data.decode("utf-8", "replace"), "note": note}
        return {"truncated": True, "note": note}
    if not data:
        return None
    if kind == "application/json" or kind.endswith("+json") or (not kind and data[:1] in b"{["):
        try:
            return json.loads(data)  # type: ignore[no-any-return]
        except (ValueError, RecursionError):  # not JSON, or nested past what Python reads
            return data.decode("utf-8", "replace")
    if kind.startswith("text/") or kind.endswith("+xml") or kind in ("application/xml", ""):
        return data.decode("utf-8", "replace")
    return {
        "type": "blob",
        "mime_type": kind,
        "data": base64.b64encode(data).decode("ascii"),
    }


def _description(op: Operation) -> str:
    text = op.summary
    if op.description and op.description != op.summary:
        text = f"{text}\n\n{op.description}" if text else op.description
    if op.deprecated:
        text = f"(Deprecated.) {text}"
    return plain_text(text) or f"{op.method.upper()} {op.path}"
