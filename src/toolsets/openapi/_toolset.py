"""`OpenApiToolset`: every operation of an OpenAPI 3.0 / 3.1 or Swagger 2.0 spec as a tool."""

from __future__ import annotations

import dataclasses
import gc
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http.cookiejar import CookieJar, DefaultCookiePolicy
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeAlias
from urllib.parse import quote, urljoin, urlsplit

import anyio
import anyio.from_thread
import anyio.to_thread
import httpx2

from toolsets._context import ToolContext
from toolsets._errors import ConnectionError, SpecError, ToolDefinitionError
from toolsets._toolset import BaseToolset
from toolsets.openapi._document import Document, Resolver, file_uri, join_pointer, parse_text
from toolsets.openapi._model import Operation
from toolsets.openapi._names import tool_names
from toolsets.openapi._oauth import ClientCredentials, OAuth
from toolsets.openapi._operations import Spec, read_spec
from toolsets.openapi._responses import ResponseChecker
from toolsets.openapi._schema import SchemaBuilder
from toolsets.openapi._security import Credentials, origin

if TYPE_CHECKING:
    from toolsets.openapi._tool import RestApiTool

__all__ = ["ConfirmPolicy", "OpenApiToolset"]

DEFAULT_TIMEOUT = 30.0
"""Seconds for each request (connect, each read, each write) unless told otherwise."""
DEFAULT_MAX_RESPONSE_BYTES = 1_000_000
"""Responses are cut (and marked so) beyond this many bytes: more would flood the model."""

ConfirmPolicy: TypeAlias = (
    "Literal['never', 'writes', 'destructive', 'always'] "
    "| Callable[[RestApiTool, Mapping[str, Any]], bool]"
)
"""When calls need the user's approval: never; for every method but GET, HEAD and OPTIONS
(``writes``); for DELETE, PUT and PATCH, which remove or overwrite (``destructive``, the
default); always; or decided per call."""

SpecSource: TypeAlias = "str | os.PathLike[str] | Mapping[str, Any]"
"""A spec: a path, an http(s) URL, JSON or YAML text, or the parsed document."""


@dataclass(eq=False)
class _Loaded:
    """A loaded spec and what its tools share."""

    spec: Spec
    resolver: Resolver
    toolset: OpenApiToolset
    """Whose client the tools send with."""
    credentials: Credentials
    max_response_bytes: int
    check_responses: Literal["warn", "error"] | None
    responses: ResponseChecker
    oauth: OAuth = field(init=False)
    shut_down: bool = False
    """Set when the toolset shuts down: tools kept from before must not send."""

    def __post_init__(self) -> None:
        self.oauth = OAuth(self.http)

    async def http(self) -> httpx2.AsyncClient:
        """The toolset's client, made off the event loop the first time."""
        return await self.toolset._http()

    @property
    def client(self) -> httpx2.AsyncClient:
        """The toolset's client, made here if it was not yet."""
        return self.toolset.client

    def follow(self, schema: Mapping[str, Any], base: str = "") -> Mapping[str, Any]:
        """``schema`` (in the document at ``base``, by default the spec's own) with its
        top-level ``$ref``s followed (for the body encoder)."""
        target, _, _ = self.resolver.resolve(schema, base or self.resolver.root.uri, "")
        return target if isinstance(target, Mapping) else schema


class OpenApiToolset(BaseToolset):
    """One `RestApiTool` per operation of an OpenAPI spec.

    The spec is read on first use (`list_tools`, or ``await toolset.load()`` to see its
    errors early), in a worker thread: the event loop never waits on parsing. Operations
    that cannot be read are left out and listed in `problems`; a document that cannot be
    read at all raises `SpecError` naming the JSON pointer.

    Select tools with the toolset wrappers (``filtered(toolset, ...)`` by name or by a
    predicate over the `RestApiTool`, whose ``operation`` has the method, path and tags).

    Args:
        spec: A path, an http(s) URL, JSON or YAML text, or the parsed document.
        base_url: Where the API is, overriding the spec's servers (e.g. a test server).
        server_variables: Values for the chosen server's ``{variables}`` (defaults from
            the spec otherwise).
        credentials: By security scheme name: an `AuthCredential`, the key/token string
            (``"user:password"`` for HTTP basic), or `ClientCredentials` for an OAuth 2 /
            OpenID Connect scheme (tokens are then fetched and renewed automatically).
            An operation none of whose alternatives can be met asks for the missing
            credential through the agent's auth flow (its tool's ``auth_config``).
        confirm: When calls need the user's approval (see `ConfirmPolicy`). By default
            (``"destructive"``) a DELETE, PUT or PATCH waits for the user in an agent, so
            no call that removes or overwrites data runs unasked; ``"never"`` opts out.
        client: The HTTP client to send with (yours to close); by default the toolset
            makes one, pooled, closed by `shutdown`.
        timeout: Seconds for each request phase, with the default client.
        max_response_bytes: Responses are cut beyond this size.
        spec_url: The URL relative references are resolved against, for a spec given as
            text or a dict (a path's or URL's own location is used otherwise).
        validate_responses: Check each successful JSON response against the schema the
            operation declares for it: ``"warn"`` logs what does not match, ``"error"``
            also gives the model an error (with the body and what is wrong) instead.
    """

    def __init__(
        self,
        spec: SpecSource,
        *,
        base_url: str | None = None,
        server_variables: Mapping[str, str] | None = None,
        credentials: Credentials | None = None,
        confirm: ConfirmPolicy = "destructive",
        client: httpx2.AsyncClient | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        spec_url: str | None = None,
        validate_responses: Literal["warn", "error"] | None = None,
    ) -> None:
        if confirm not in ("never", "writes", "destructive", "always") and not callable(confirm):
            raise ToolDefinitionError(
                f"confirm must be never, writes, destructive, always or a function: {confirm!r}"
            )
        self._source = spec
        self._base_url = base_url
        self._server_variables = dict(server_variables or {})
        self._credentials = dict(credentials or {})
        self.confirm = confirm
        """The confirmation policy."""
        self._own_client = client is None
        self._client = client
        self._timeout = timeout
        self._max_response_bytes = max_response_bytes
        self._spec_url = spec_url
        if validate_responses not in (None, "warn", "error"):
            raise ToolDefinitionError(
                f"validate_responses must be None, 'warn' or 'error': {validate_responses!r}"
            )
        self._validate_responses: Literal["warn", "error"] | None = validate_responses
        self._lock = anyio.Lock()
        self._client_lock = anyio.Lock()
        self._loaded: _Loaded | None = None
        self._tools: tuple[RestApiTool, ...] = ()

    # --- the toolset ----------------------------------------------------------------

    async def list_tools(self, ctx: ToolContext | None = None) -> Sequence[RestApiTool]:
        """Every operation's tool (the spec is read on the first call)."""
        if self._loaded is None:
            await self.load()
        return self._tools

    async def load(self) -> Spec:
        """Read the spec now (once); return what was read.

        Raises:
            SpecError: the document cannot be read; ``.pointer`` says where.
            ConnectionError: the spec's URL (or one it refers to) cannot be fetched.
        """
        async with self._lock:
            if self._loaded is None:
                root = await self._read_root()
                loaded, self._tools = await anyio.to_thread.run_sync(self._build, root)
                self._loaded = loaded
                return loaded.spec
            return self._loaded.spec

    async def validate(self, *, max_errors: int = 1000) -> tuple[SpecError, ...]:
        """Check the whole document against the OpenAPI (or Swagger 2.0) specification,
        with openapi-spec-validator, in a worker thread: every error found (up to
        ``max_errors``), each naming its JSON pointer; empty when the document is valid.

        Not part of loading: it reads every node of the document, tens of seconds on a
        spec the size of GitHub's, and real-world specs often break a rule that does not
        matter to their tools (those that do are in `problems` after loading).
        """
        loaded = self._loaded
        root = loaded.resolver.root if loaded is not None else await self._read_root()
        return await anyio.to_thread.run_sync(_validate, root, max_errors)

    @property
    def problems(self) -> tuple[SpecError, ...]:
        """The operations left out because they could not be read (empty before loading)."""
        return self._loaded.spec.problems if self._loaded is not None else ()

    async def shutdown(self) -> None:
        """Close the default HTTP client (a given one is left open). Idempotent."""
        if self._own_client:
            if self._loaded is not None:
                self._loaded.shut_down = True
            self._loaded = None
            self._tools = ()
            if self._client is not None:
                client, self._client = self._client, None
                await client.aclose()

    # --- loading --------------------------------------------------------------------

    @property
    def client(self) -> httpx2.AsyncClient:
        """The HTTP client the tools send with."""
        if self._client is None:
            self._client = self._new_client()
        return self._client

    async def _http(self) -> httpx2.AsyncClient:
        """`client`, made in a worker thread the first time (loading certificates takes
        a while: the event loop does not wait, and neither does loading the spec)."""
        if self._client is None:
            async with self._client_lock:
                if self._client is None:
                    self._client = await anyio.to_thread.run_sync(self._new_client)
        return self._client

    def _new_client(self) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(
            timeout=self._timeout,
            follow_redirects=False,
            trust_env=False,
            # One client serves every user of the toolset: cookies an API sets for one
            # must never be sent for another. Cookie parameters are sent per call.
            cookies=CookieJar(policy=DefaultCookiePolicy(allowed_domains=[])),
        )

    async def _read_root(self) -> Document:
        source = self._source
        if isinstance(source, Mapping):
            return Document(source, self._spec_url or "")
        text = os.fspath(source)
        if text.startswith(("http://", "https://")):
            fetched = await self._fetch(text)
            return Document(await anyio.to_thread.run_sync(parse_text, fetched, text), text)
        if "\n" in text or text.lstrip().startswith("{"):
            parsed = await anyio.to_thread.run_sync(parse_text, text, self._spec_url)
            return Document(parsed, self._spec_url or "")
        path = Path(text)
        try:
            content = await anyio.Path(path).read_text(encoding="utf-8")
        except OSError as error:
            raise SpecError(f"cannot read {path}: {error.strerror}", source=str(path)) from error
        uri = file_uri(path)
        return Document(await anyio.to_thread.run_sync(parse_text, content, uri), uri)

    async def _fetch(self, url: str) -> str:
        try:
            client = await self._http()
            response = await client.get(url, follow_redirects=True)
        except httpx2.HTTPError as error:
            raise ConnectionError(
                f"cannot fetch the spec {url}: {type(error).__name__}", target=url
            ) from error
        if response.status_code >= 400:
            raise SpecError(f"fetching it gave HTTP {response.status_code}", source=url)
        return response.text

    def _build(self, root: Document) -> tuple[_Loaded, tuple[RestApiTool, ...]]:
        """In a worker thread: read the operations and make their tools.

        The garbage collector is paused meanwhile: a big spec makes hundreds of thousands
        of long-lived objects and no cycles to collect, and full collections over them
        were a third of the time.
        """
        enabled = gc.isenabled()
        gc.disable()
        try:
            return self._build_tools(root)
        finally:
            if enabled:
                gc.enable()

    def _build_tools(self, root: Document) -> tuple[_Loaded, tuple[RestApiTool, ...]]:
        from toolsets.openapi._tool import RestApiTool

        def fetch(url: str) -> str:
            return anyio.from_thread.run(self._fetch, url)

        resolver = Resolver(root, fetch=fetch)
        spec = read_spec(resolver)
        unknown = sorted(set(self._credentials) - set(spec.security_schemes))
        if unknown:  # a misspelt scheme name would otherwise drop the credential silently
            defined = ", ".join(sorted(spec.security_schemes)) or "none"
            raise ToolDefinitionError(
                f"credentials given for security schemes the spec does not define: "
                f"{', '.join(unknown)} (it defines: {defined})"
            )
        for name, credential in self._credentials.items():
            if isinstance(credential, ClientCredentials):
                _check_client_credentials(name, spec.security_schemes[name], credential)
        builder = SchemaBuilder(resolver, openapi30=not spec.version.startswith("3.1"))
        problems = list(spec.problems)
        built = []
        for op in spec.operations:
            try:
                built.append((op, builder.operation(op, root.uri)))
            except SpecError as error:  # one broken operation never breaks the rest
                problems.append(error)
        if len(problems) > len(spec.problems):
            spec = dataclasses.replace(spec, problems=tuple(problems))
        loaded = _Loaded(
            spec=spec,
            resolver=resolver,
            toolset=self,
            credentials=self._credentials,
            max_response_bytes=self._max_response_bytes,
            check_responses=self._validate_responses,
            responses=ResponseChecker(resolver, version=spec.version),
        )
        names = tool_names([op for op, _ in built])
        tools = tuple(
            RestApiTool(
                name,
                op,
                schema,
                loaded,
                base_url=self._resolve_base(op, root.uri),
                confirm=self.confirm,
            )
            for name, (op, schema) in zip(names, built, strict=True)
        )
        return loaded, tools

    def _resolve_base(self, op: Operation, doc_uri: str) -> str:
        if self._base_url is not None:
            return self._base_url.rstrip("/")
        if not op.servers:
            base = doc_uri if doc_uri.startswith(("http://", "https://")) else ""
            if not base:
                raise SpecError(
                    "no servers in the spec and no base_url given: where is the API?",
                    pointer=op.pointer,
                )
            return origin(base)
        server = op.servers[0]
        url = server.url
        for name, variable in server.variables.items():
            value = self._server_variables.get(name, variable.get("default", ""))
            url = url.replace(f"{{{name}}}", quote(str(value), safe=":/.-_~"))
        if not urlsplit(url).scheme:
            if not doc_uri.startswith(("http://", "https://")):
                raise SpecError(
                    f"the server URL {server.url!r} is relative and the spec has no URL to "
                    "resolve it against: pass base_url=",
                    pointer=op.pointer,
                )
            url = urljoin(doc_uri, url)
        return url.rstrip("/")


def _validate(root: Document, max_errors: int) -> tuple[SpecError, ...]:
    from openapi_spec_validator import (
        OpenAPIV2SpecValidator,
        OpenAPIV30SpecValidator,
        OpenAPIV31SpecValidator,
        OpenAPIV32SpecValidator,
    )

    document = root.root
    source = root.uri or None
    if not isinstance(document, Mapping):
        return (SpecError("the document is not an object", source=source),)
    version = str(document.get("openapi") or document.get("swagger") or "")
    validators: dict[str, Any] = {
        "2.0": OpenAPIV2SpecValidator,
        "3.0": OpenAPIV30SpecValidator,
        "3.1": OpenAPIV31SpecValidator,
        "3.2": OpenAPIV32SpecValidator,
    }
    validator = validators.get(version[:3])
    if validator is None:
        where = "/openapi" if "openapi" in document else "/swagger"
        return (SpecError(f"unknown version {version!r}", pointer=where, source=source),)
    errors: list[SpecError] = []
    try:
        for error in validator(document, base_uri=root.uri).iter_errors():
            pointer = join_pointer("", *error.absolute_path)
            errors.append(SpecError(error.message, pointer=pointer, source=source))
            if len(errors) >= max_errors:
                break
    except Exception as error:  # the validator trips over some documents it already faulted
        if not errors:
            errors.append(
                SpecError(f"the validator failed: {type(error).__name__}: {error}", source=source)
            )
    return tuple(errors)


def _check_client_credentials(
    name: str, scheme: Mapping[str, Any], credential: ClientCredentials
) -> None:
    """Client credentials only make sense where a token endpoint can be found."""
    kind = scheme.get("type")
    if kind == "openIdConnect" or credential.token_url:
        if kind in ("oauth2", "openIdConnect"):
            return
    elif kind == "oauth2":
        flows = scheme.get("flows")
        if isinstance(flows, Mapping) and "clientCredentials" in flows:
            return
        raise ToolDefinitionError(
            f"client credentials given for scheme {name!r}, which has no clientCredentials "
            "flow: pass token_url= to use its token endpoint anyway"
        )
    raise ToolDefinitionError(
        f"client credentials given for scheme {name!r}, which is {kind!r}, not oauth2 or "
        "openIdConnect"
    )
