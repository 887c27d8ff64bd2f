"""`RestApi`: what the tools of one loaded spec share, and how their calls go out.

It holds the spec and its resolver, the clients (`ApiClients`), the credentials and
``headers=``, OAuth's tokens and endpoints, and the response checker; it chooses the
credentials for a call (fetching tokens for `ClientCredentials`, and renewing one the API
refuses), sends the request a `RequestBuilder` made, follows redirects (credentials never
follow to another origin), reads the response (cut at a size, the secrets it quotes back
masked), decodes it for the model and checks it against the spec.

It knows nothing of the toolset that made it, nor of tools: a `RestApiTool` declares the
operation and checks the model's arguments, then calls `RestApi.call`.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property, partial
from typing import TYPE_CHECKING, Any, Literal, NamedTuple
from urllib.parse import parse_qsl, urlencode, urljoin, urlsplit

import anyio.to_thread
import httpx2

from toolsets import _telemetry
from toolsets._auth import AuthCredential, Secret, header_secrets, mask_bytes, secret_forms
from toolsets._errors import ToolCallError
from toolsets._http import essence, is_json, is_text, map_http_errors, retry_after
from toolsets._json import JsonValue
from toolsets._paging import NextPage
from toolsets._results import error_result
from toolsets.openapi._cache import HttpCache, identity
from toolsets.openapi._clients import ApiClients
from toolsets.openapi._document import Resolver
from toolsets.openapi._model import Operation
from toolsets.openapi._oauth import ClientCredentials, OAuth
from toolsets.openapi._operations import Spec
from toolsets.openapi._request import RequestBuilder
from toolsets.openapi._security import (
    Credentials,
    Requirement,
    choose,
    origin,
    sent_secrets,
    strip_credentials,
)

if TYPE_CHECKING:
    from toolsets.openapi._responses import ResponseChecker

__all__ = ["MAX_REDIRECTS", "RestApi"]

logger = logging.getLogger("toolsets.openapi")

MAX_REDIRECTS = 5
"""Redirects followed for one call."""

Sendable = dict[str, AuthCredential | str]
"""Credentials as a request carries them, by scheme name (tokens already fetched)."""


class _Checking(NamedTuple):
    """A response body to check against the spec before the model sees it."""

    content_type: str
    value: JsonValue


@dataclass(frozen=True, slots=True)
class _Sending:
    """The credentials one request goes with, and what they make secret."""

    credentials: Sendable
    requirement: Requirement | None
    """The alternative of the operation's security they meet (None: none is met)."""
    fetched: dict[str, AuthCredential]
    """The tokens fetched for it (renewed once if the API refuses them)."""
    secrets: list[str]
    """What an error message or the response must not show."""
    forms: tuple[bytes, ...]
    """The secrets as a response may quote them (`secret_forms`)."""


class RestApi:
    """The runtime the tools of one spec share.

    Args:
        spec: The operations and security schemes read.
        resolver: The spec's references (body schemas are followed through it).
        clients: What requests are built and sent with.
        credentials: By scheme name, as given (checked when the spec was read).
        headers: Sent with every request to the API (not to another origin it
            redirects to).
        max_response_bytes: Responses are cut beyond this size.
        check_responses: Check successful JSON responses against the spec: ``"warn"``
            logs, ``"error"`` also gives the model an error; None does not check.
        cache: Answers GET requests it may (per identity), and keeps their responses.
    """

    def __init__(
        self,
        *,
        spec: Spec,
        resolver: Resolver,
        clients: ApiClients,
        credentials: Credentials,
        headers: Mapping[str, str],
        max_response_bytes: int,
        check_responses: Literal["warn", "error"] | None,
        cache: HttpCache | None = None,
    ) -> None:
        self.spec = spec
        self.resolver = resolver
        self.clients = clients
        self.credentials = credentials
        self.headers = headers
        self.header_secrets = [Secret(s) for s in header_secrets(headers)]
        """The secrets ``headers`` carry, masked in what the API sends back."""
        self.max_response_bytes = max_response_bytes
        self.check_responses = check_responses
        self.cache = cache
        self.oauth = OAuth(clients.get)
        self._given: dict[str, _Sending] = {}
        """By operation (its pointer): what it sends with the toolset's own credentials,
        when no token is to be fetched for it."""
        self._origins: dict[tuple[str, str], str] = {}
        """By base URL and operation: the origin of the operation's requests."""
        self.shut_down = False
        """Set when the toolset shuts down: tools kept from before must not send."""

    @cached_property
    def responses(self) -> ResponseChecker:
        """Checks responses against the spec (made when first needed: it brings in
        jsonschema, which most toolsets never use for responses)."""
        from toolsets.openapi._responses import ResponseChecker

        return ResponseChecker(self.resolver, version=self.spec.version)

    def follow(self, schema: Mapping[str, Any], base: str = "") -> Mapping[str, Any]:
        """``schema`` (in the document at ``base``, by default the spec's own) with its
        top-level ``$ref``s followed (for the body encoder)."""
        target, _, _ = self.resolver.resolve(schema, base or self.resolver.root.uri, "")
        return target if isinstance(target, Mapping) else schema

    def given_credentials(self, op: Operation) -> tuple[Sendable, Requirement | None]:
        """The credentials given up front that are ready to send (no token to fetch),
        and the first alternative of ``op`` they meet."""
        ready: Sendable = {
            name: credential
            for name, credential in self.credentials.items()
            if not isinstance(credential, ClientCredentials)
        }
        return ready, choose(op, self.spec, ready)

    async def client(self, tool_name: str) -> httpx2.AsyncClient:
        """The running loop's client (made off the event loop the first time).

        Raises:
            ToolCallError: the toolset was shut down (or the client given closed).
        """
        client = await self.clients.get() if not self.shut_down else None
        if client is None or client.is_closed:
            raise ToolCallError(
                "the toolset this tool came from was shut down (or its client closed): "
                "list its tools again",
                tool_name=tool_name,
            )
        return client

    def call(
        self,
        tool_name: str,
        request: RequestBuilder,
        op: Operation,
        args: Mapping[str, Any],
        *,
        user: tuple[str, AuthCredential] | None = None,
        base_url: str,
        next_page: NextPage | None = None,
    ) -> Awaitable[tuple[int | None, JsonValue]]:
        """Send the request for ``args`` (already checked), with the user's credential
        (scheme name and credential) if one was given; the final status (None: too many
        redirects) and the result for the model. A token the toolset fetched that the
        API refuses (401) is renewed once. ``next_page``, when given, gets the URL of
        the next page a successful response's ``Link`` header names (`_next_link`).

        Most calls (the toolset's own keys, its client ready) are built at once and sent
        by the coroutine returned: one frame fewer between the tool and httpx2 while
        the request waits.

        Raises:
            SerializationError: a value cannot be sent as the spec says.
            ConnectionError: the API cannot be reached.
            ToolCallError: the toolset was shut down.
            AuthError: no token could be had for `ClientCredentials`.
        """
        client = self.clients.ready() if not self.shut_down else None
        sending = None if user is not None else self._given.get(op.pointer)
        if client is None or client.is_closed or sending is None:
            return self._call(
                tool_name, request, op, args, user=user, base_url=base_url, next_page=next_page
            )
        built = request.build(args, sending.credentials, sending.requirement, self.clients.template)
        first = self._origin(base_url, op, built)
        if next_page is None:
            return self._send(client, built, op, tool_name, sending, first)
        return self._send(client, built, op, tool_name, sending, first, (next_page, base_url))

    async def _call(
        self,
        tool_name: str,
        request: RequestBuilder,
        op: Operation,
        args: Mapping[str, Any],
        *,
        user: tuple[str, AuthCredential] | None,
        base_url: str,
        next_page: NextPage | None,
    ) -> tuple[int | None, JsonValue]:
        """`call`, when credentials are to be found (or fetched) or the client made."""
        client = await self.client(tool_name)
        for attempt in range(2):
            sending = await self._credentials(op, user, base_url)
            template = self.clients.template
            built = request.build(args, sending.credentials, sending.requirement, template)
            first = self._origin(base_url, op, built)
            paging = (next_page, base_url) if next_page is not None else None
            status, result = await self._send(client, built, op, tool_name, sending, first, paging)
            if status != 401 or not sending.fetched or attempt:
                return status, result
            for name, token in sending.fetched.items():  # a token we got ourselves: renew it
                self.oauth.forget(name, token)
        raise AssertionError("the second attempt returns")  # pragma: no cover

    def _origin(self, base_url: str, op: Operation, request: httpx2.Request) -> str:
        """The origin of ``op``'s requests to ``base_url``: the same for all of them (the
        values in a path are percent-encoded), found once."""
        found = self._origins.get((base_url, op.pointer))
        if found is None:
            found = self._origins[base_url, op.pointer] = origin(request.url)
        return found

    async def _credentials(
        self, op: Operation, user: tuple[str, AuthCredential] | None, base_url: str
    ) -> _Sending:
        """The credentials of the alternative to use, tokens fetched where the toolset
        holds client credentials, and what they make secret. An operation called with
        the toolset's own keys alone sends the same ones every time: found once (kept in
        ``_given``)."""
        given = self.credentials
        if user is not None:
            given = {**given, user[0]: user[1]}
        requirement = choose(op, self.spec, given)
        ready: Sendable = {}
        fetched: dict[str, AuthCredential] = {}
        for name, scopes in (requirement or {}).items():
            credential = given[name]
            if isinstance(credential, ClientCredentials):
                scheme = self.spec.security_schemes[name]
                token = await self.oauth.token(name, scheme, credential, scopes, base_url)
                ready[name] = fetched[name] = token
            else:
                ready[name] = credential
        secrets = sent_secrets(ready) + self.header_secrets
        sending = _Sending(ready, requirement, fetched, secrets, secret_forms(secrets))
        if user is None and not fetched:
            self._given[op.pointer] = sending
        return sending

    async def _send(
        self,
        client: httpx2.AsyncClient,
        request: httpx2.Request,
        op: Operation,
        tool_name: str,
        sending: _Sending,
        first: str,
        paging: tuple[NextPage, str] | None = None,
    ) -> tuple[int | None, JsonValue]:
        """Send, following redirects; the final status (None: too many redirects) and the
        result for the model. ``first`` is the request's origin: credentials never
        follow a redirect to another. ``paging``: the `NextPage` to give the next
        page's URL to, and the API's base URL it must be under."""
        secrets = sending.secrets
        target = first
        for _ in range(MAX_REDIRECTS + 1):
            url = request.url
            with map_http_errors(request.method, url, target=target, secrets=secrets):
                if self.cache is not None:
                    response = await self.cache.send(
                        request,
                        identity(request, sending.credentials, self.headers),
                        partial(_sent, client, op.path),
                    )
                else:
                    response = await _sent(client, op.path, request)
                try:
                    if response.is_redirect and "location" in response.headers:
                        request = self._redirected(request, response, op, first)
                        target = origin(request.url)
                        continue
                    # The body, read here rather than in a coroutine of its own: one
                    # frame fewer while it arrives.
                    limit = self.max_response_bytes
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
                    status = response.status_code
                    if paging is not None and status < 300:
                        page, base_url = paging
                        page.url = _next_link(response, request.url, base_url, first, secrets)
                    result = self._result(response, b"".join(chunks), truncated, sending.forms)
                    if isinstance(result, _Checking):
                        return status, await self._checked(op, tool_name, status, *result)
                    return status, result
                finally:
                    await response.aclose()
        return None, error_result(f"more than {MAX_REDIRECTS} redirects")

    def _redirected(
        self, request: httpx2.Request, response: httpx2.Response, op: Operation, first: str
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
            url = strip_credentials(url, op, self.spec, headers)
            fixed = {name.lower() for name in self.headers}  # nor do headers=
            headers = {name: value for name, value in headers.items() if name.lower() not in fixed}
        return self.clients.template.build_request(method, url, headers=headers, content=content)

    def _result(
        self, response: httpx2.Response, data: bytes, truncated: bool, forms: Sequence[bytes]
    ) -> JsonValue | _Checking:
        """What the model is given of the response whose body is ``data`` (cut at
        ``max_response_bytes`` when ``truncated``); or, when the body is to be checked
        against the spec first, what `_checked` checks."""
        # An API may quote a credential it was sent (a "bad key: ..." message): the model
        # must never see it.
        if forms:
            data = mask_bytes(data, forms)
        limit = self.max_response_bytes
        content_type = _content_type(response)
        value = _decode(data, content_type, truncated, limit)
        status = response.status_code
        checking = self.check_responses is not None and status < 400
        if checking and not truncated and is_json(content_type) and isinstance(value, dict | list):
            return _Checking(content_type, value)
        if status >= 400:
            waited = retry_after(response.headers)
            if waited is not None:  # the API says when to try again (429, 503)
                return error_result(
                    f"HTTP {status} {response.reason_phrase}".strip(),
                    status=status,
                    retry_after=waited,
                    body=value,
                )
            return error_result(
                f"HTTP {status} {response.reason_phrase}".strip(), status=status, body=value
            )
        return value

    async def _checked(
        self, op: Operation, tool_name: str, status: int, content_type: str, value: JsonValue
    ) -> JsonValue:
        """``value``, checked against the spec's schema for the response (in a worker
        thread: a big body takes a while)."""
        problems = await anyio.to_thread.run_sync(
            self.responses.problems, op, status, content_type, value
        )
        if not problems:
            return value
        listed: list[JsonValue] = [
            {"field": field or "(the body)", "problem": text} for field, text in problems
        ]
        logger.warning(
            "%s: the HTTP %d response does not match the spec (%d problems; first: %s: %s)",
            tool_name,
            status,
            len(problems),
            problems[0][0] or "(the body)",
            problems[0][1][:200],
        )
        if self.check_responses == "warn":
            return value
        return error_result(
            f"the API's HTTP {status} response does not match its spec",
            status=status,
            problems=listed[:20],
            body=value,
        )


async def _sent(client: httpx2.AsyncClient, path: str, request: httpx2.Request) -> httpx2.Response:
    """``request`` sent (streamed, no redirect followed); a CLIENT span while telemetry is
    on, sending traceparent on."""
    telemetry = _telemetry.current
    if telemetry is None:
        return await client.send(request, stream=True, follow_redirects=False)
    return await telemetry.send(client, request, path)


def _next_link(
    response: httpx2.Response,
    url: httpx2.URL,
    base_url: str,
    first: str,
    secrets: Sequence[str],
) -> str | None:
    """The next page's URL the ``Link`` header of ``response`` (to a request for
    ``url``) names (RFC 8288 ``rel="next"``, as httpx2 parses it; a relative one
    resolved against ``url``): only one on the origin the call went to (``first``;
    not after a redirect to another) and under the API's base URL's path; its query
    parameters that quote a credential sent (an API key in the query, echoed) left
    out. None otherwise."""
    link = response.links.get("next")
    if not link or not link.get("url"):
        return None
    found = urljoin(str(url), link["url"])
    if origin(found) != first or origin(url) != first:
        return None  # another host's link is never the tool's arguments
    within = urlsplit(base_url).path.rstrip("/")
    path = urlsplit(found).path
    if path != within and not path.startswith(within + "/"):
        return None
    parts = urlsplit(found)
    if secrets and any(secret in parts.query for secret in secrets):
        pairs = parse_qsl(parts.query, keep_blank_values=True)
        kept = [(k, v) for k, v in pairs if not any(s in k or s in v for s in secrets)]
        found = parts._replace(query=urlencode(kept)).geturl()
    return found


def _content_type(response: httpx2.Response) -> str:
    """The response's ``Content-Type`` (``""``: none), read from the raw headers: httpx2's
    lookup decodes every header first, on every response."""
    for name, value in response.headers.raw:
        if name.lower() == b"content-type":
            return value.decode("latin-1")
    return ""


def _decode(data: bytes, content_type: str, truncated: bool, limit: int) -> JsonValue:
    """A response body as the model is given it: JSON parsed, text as text, anything
    else a base64 blob; a body cut at ``limit`` bytes says so."""
    kind = essence(content_type)
    if truncated:
        note = f"[the response was cut at {limit} bytes]"
        if is_text(kind):
            return {"truncated": True, "text": data.decode("utf-8", "replace"), "note": note}
        return {"truncated": True, "note": note}
    if not data:
        return None
    if is_json(kind) or (not kind and data[:1] in b"{["):
        try:
            return json.loads(data)  # type: ignore[no-any-return]
        except (ValueError, RecursionError):  # not JSON, or nested past what Python reads
            return data.decode("utf-8", "replace")
    if is_text(kind) or not kind:
        return data.decode("utf-8", "replace")
    return {
        "type": "blob",
        "mime_type": kind,
        "data": base64.b64encode(data).decode("ascii"),
    }
