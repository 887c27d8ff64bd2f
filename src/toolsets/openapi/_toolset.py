"""`OpenApiToolset`: every operation of an OpenAPI 3.0 / 3.1 or Swagger 2.0 spec as a tool."""

from __future__ import annotations

import contextlib
import os
import re
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any, Literal, TypeAlias
from urllib.parse import quote, urljoin, urlsplit

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
import httpx2

from toolsets._auth import MASK, AuthCredential, Secret, header_problem
from toolsets._concurrency import check_timeout
from toolsets._confirmed import ConfirmPolicy, confirm_rule
from toolsets._context import ToolContext
from toolsets._errors import SpecError, ToolDefinitionError, ToolNotFoundError
from toolsets._gc import collector_paused
from toolsets._http import map_http_errors
from toolsets._results import clip
from toolsets._toolset import BaseToolset, ListingVaries
from toolsets._urls import safe_url
from toolsets.openapi._api import RestApi
from toolsets.openapi._budget import DEFAULT_DECLARATION_BUDGET
from toolsets.openapi._cache import HttpCache
from toolsets.openapi._checking import ValidationProgress, count_operations, quicker
from toolsets.openapi._clients import ApiClients, LoopClients, new_client
from toolsets.openapi._document import (
    Document,
    RefPolicy,
    Resolver,
    file_uri,
    join_pointer,
    parse_text,
)
from toolsets.openapi._model import Operation, Server
from toolsets.openapi._names import tool_names
from toolsets.openapi._oauth import ClientCredentials
from toolsets.openapi._operations import Spec, read_spec
from toolsets.openapi._schema import SchemaBuilder
from toolsets.openapi._security import Credentials, check_credential, origin
from toolsets.openapi._tool import OperationSchemas, RestApiTool

__all__ = ["OpenApiToolset"]

DEFAULT_TIMEOUT = 30.0
"""Seconds for each request (connect, each read, each write) unless told otherwise."""
MAX_SPEC_REDIRECTS = 5
"""Redirects followed when fetching a spec document."""
EAGER_OPERATIONS = 2000
"""A spec of at most this many operations has every schema built as it is loaded (in a
fraction of a second); a bigger one builds each when its tool first needs it."""
DEFAULT_MAX_RESPONSE_BYTES = 1_000_000
"""Responses are cut (and marked so) beyond this many bytes: more would flood the model."""

SpecSource: TypeAlias = "str | os.PathLike[str] | Mapping[str, Any]"
"""A spec: a path, an http(s) URL, JSON or YAML text, or the parsed document."""


class _Headers(Mapping[str, str]):
    """The ``headers=`` given: a read-only mapping whose repr names them but hides every
    value (any of them may be a secret)."""

    def __init__(self, headers: Mapping[str, str]) -> None:
        # Secrets: hidden from vars() too, like credentials.
        self._headers = {name: Secret(value) for name, value in headers.items()}

    def __getitem__(self, name: str) -> str:
        return self._headers[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._headers)

    def __len__(self) -> int:
        return len(self._headers)

    def __repr__(self) -> str:
        return "{" + ", ".join(f"{name!r}: {MASK!r}" for name in self._headers) + "}"


def _checked_headers(headers: Mapping[str, str] | None) -> _Headers:
    """``headers`` if each can be sent as it is (`header_problem`); the error names the
    header, never its value (which may be a token)."""
    for name, value in (headers or {}).items():
        problem = header_problem(name, value)
        if problem is not None:
            field = f"headers[{name!r}]"
            raise ToolDefinitionError(f"{field}: {problem}", field=field)
    return _Headers(headers or {})


class OpenApiToolset(BaseToolset):
    """One `RestApiTool` per operation of an OpenAPI spec.

    The spec is read on first use (`list_tools`, or ``await toolset.load()`` to see its
    errors early), in a worker thread: the event loop never waits on parsing. Operations
    that cannot be read are left out and listed in `problems`; a document that cannot be
    read at all raises `SpecError` naming the JSON pointer.

    On a spec of more than 2,000 operations (`EAGER_OPERATIONS`), `list_tools` does not
    translate the operations' schemas: each tool builds its own the first time its
    declaration is asked for or it is called (Microsoft Graph's 11,422 tools list in
    well under a second). An operation whose schema is broken is then a tool offered to
    no model, whose calls are an error result naming the JSON pointer; it is left out
    from then on (in `problems`). `load`
    builds every schema, so that all such operations are left out before the first
    listing; so does `list_tools` on a smaller spec, or on one that refers to other
    documents (they are fetched in a worker thread as it loads).

    Each declaration is kept within ``declaration_budget`` bytes: the model is sent a
    summary of deep branches of a big schema, never stricter than the schema (each
    call is still checked against the whole schema, before any confirmation, and a
    model that sends the whole structure has it sent as it is).

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
        confirm: When calls need the user's approval (see `ConfirmPolicy`), as
            ``confirmed(toolset, confirm)`` would ask. By default (``"destructive"``) a
            DELETE, PUT or PATCH waits for the user in an agent, so no call that
            removes or overwrites data runs unasked; ``"never"`` opts out.
        client: The HTTP client to send with (yours to close; it is used as it is from
            every event loop, so its pooled connections only work in the loop that
            opened them: for calls from several event loops, let the toolset make its
            clients). By default the toolset makes one pooled client per event loop,
            closed when that loop ends or by `shutdown`.
        timeout: Seconds for each request phase, with the default client.
        max_response_bytes: Responses are cut beyond this size.
        spec_url: Where a spec given as text or a dict came from: the URL its relative
            references are resolved against, and whose origin says what they may load
            (see ``allow_refs``). A path's or URL's own location is used otherwise.
        validate_responses: Check each successful JSON response against the schema the
            operation declares for it: ``"warn"`` logs what does not match, ``"error"``
            also gives the model an error (with the body and what is wrong) instead.
        headers: Headers sent with every request to the API, e.g. a token for a spec
            that defines no security scheme (``{"Authorization": "Bearer ..."}``). Like
            credentials, they go to the API's origin only (never to another origin a
            redirect leads to, nor to token endpoints) and their values are never shown
            in reprs or errors. A header the call sets itself (a header parameter the
            model gave, a security scheme's credential) takes precedence.

        allow_refs: Origins (``https://schemas.example``) or URL prefixes
            (``https://example.com/specs/``, ``file:///srv/specs/``) that the spec's
            ``$ref``s may load documents from, beyond what its own origin allows: a spec
            read from a file may refer to files and http(s) URLs; one fetched over
            http(s) only to its own origin (never to a file); one given as a dict or
            text only to what ``spec_url`` gives it (nothing outside itself without).
            A reference that is not allowed leaves its operation out (a `problems`
            entry naming it).
        declaration_budget: The most bytes a tool's declaration (its description and
            parameters, as compact JSON) may take, by default 4 KB (about a thousand
            tokens). A bigger one is cut down, giving up first the ends of long
            descriptions and of long enums, then the deepest branches of its schema
            (each summarized as its type, description and property names), then the
            descriptions of the top-level arguments (which always stay, required or
            not). None sends every declaration whole.
        cache: Keep the API's responses to GET requests and answer calls from them as
            HTTP caching allows (``Cache-Control``, ``ETag`` revalidation, ``Vary``),
            each identity its own entries (see `HttpCache`). None (the default) sends
            every call.

    Raises:
        ToolDefinitionError: an option cannot work (``.field`` names it), e.g. a header
            value with a line break.
    """

    listing_varies: ListingVaries = "never"

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
        headers: Mapping[str, str] | None = None,
        allow_refs: Sequence[str] = (),
        declaration_budget: int | None = DEFAULT_DECLARATION_BUDGET,
        cache: HttpCache | None = None,
    ) -> None:
        confirm_rule(confirm)  # an invalid policy fails here
        if declaration_budget is not None and (
            isinstance(declaration_budget, bool)
            or not isinstance(declaration_budget, int)
            or declaration_budget <= 0
        ):
            raise ToolDefinitionError(
                f"declaration_budget must be a number of bytes above 0, or None: "
                f"{declaration_budget!r}",
                field="declaration_budget",
            )
        self._budget = declaration_budget
        if not isinstance(spec, str | os.PathLike | Mapping):
            raise ToolDefinitionError(
                f"spec must be a path, an http(s) URL, JSON or YAML text, or a dict, "
                f"not {type(spec).__name__}"
            )
        if base_url is not None and ("?" in base_url or "#" in base_url):
            # Paths are appended to it: a query would end up inside the path. Keys go in
            # credentials= or headers=, where they are sent only to this API.
            raise ToolDefinitionError(
                f"base_url must be the API's root without a query or fragment, got "
                f"{safe_url(base_url)!r}; give keys as credentials= or headers=",
                field="base_url",
            )
        self._source = spec
        self._base_url = base_url
        self._server_variables = dict(server_variables or {})
        # Plain strings become Secrets: a repr or vars() of the toolset (or of what its
        # tools share) must not show them.
        self._credentials: dict[str, AuthCredential | ClientCredentials | str] = {
            name: Secret(value) if isinstance(value, str) else value
            for name, value in (credentials or {}).items()
        }
        self._headers = _checked_headers(headers)
        self._confirm = confirm
        make = partial(new_client, check_timeout(timeout, "timeout"))
        self._clients = LoopClients(make)
        self._http = ApiClients(client, self._clients, make)
        self._max_response_bytes = max_response_bytes
        self._spec_url = spec_url
        self._ref_policy = RefPolicy(allow_refs)
        if validate_responses not in (None, "warn", "error"):
            raise ToolDefinitionError(
                f"validate_responses must be None, 'warn' or 'error': {validate_responses!r}"
            )
        self._validate_responses: Literal["warn", "error"] | None = validate_responses
        if cache is not None and not isinstance(cache, HttpCache):
            raise ToolDefinitionError(
                f"cache must be an HttpCache or None, not {type(cache).__name__}", field="cache"
            )
        self._cache = cache
        self._guard = threading.Lock()  # never held across an await
        self._api: RestApi | None = None
        self._tools: tuple[RestApiTool, ...] = ()
        self._schemas: OperationSchemas | None = None
        self._listed: tuple[int, tuple[RestApiTool, ...]] = (0, ())
        """The tools listed, and how many broken ones they leave out."""
        self._checked = False
        """Every tool's schema has been built (`load`)."""

    # --- the toolset ----------------------------------------------------------------

    @property
    def confirm(self) -> ConfirmPolicy:
        """The confirmation policy its tools apply (as ``confirmed(toolset, confirm)``
        would), fixed when the toolset is made."""
        return self._confirm

    async def list_tools(self, ctx: ToolContext | None = None) -> Sequence[RestApiTool]:
        """Every operation's tool (the spec is read on the first call; the tools'
        schemas are built when first needed), but those whose schema was found broken."""
        if self._api is None:
            await self._load(check=False)
        schemas = self._schemas
        if schemas is None or not schemas.failed:
            return self._tools
        count, listed = self._listed
        if count != len(schemas.failed):
            failed = schemas.failed
            listed = tuple(t for t in self._tools if t.operation.pointer not in failed)
            self._listed = (len(failed), listed)
        return listed

    async def get_tool(self, name: str, ctx: ToolContext | None = None) -> RestApiTool:
        """The tool called ``name``, or else the one whose operation has that
        ``operationId`` as the spec writes it (``"repos/get"`` for ``repos_get``).

        Raises:
            ToolNotFoundError: neither; ``.suggestions`` has the closest names.
        """
        tools = await self.list_tools(ctx)
        for tool in tools:
            if tool.name == name:
                return tool
        for tool in tools:
            if tool.operation.operation_id == name:
                return tool
        raise ToolNotFoundError(name, (tool.name for tool in tools))

    async def load(self) -> Spec:
        """Read the spec now (once); return what was read.

        Every tool's schema is built too (most of the time `list_tools` takes on a big
        spec), so that the operations whose schema is broken are left out (`problems`)
        before the first listing.

        Raises:
            SpecError: the document cannot be read; ``.pointer`` says where.
            ConnectionError: the spec's URL cannot be fetched (a document it refers to
                that cannot be leaves the operations using it out, as `problems`).
        """
        return await self._load(check=True)

    async def _load(self, *, check: bool) -> Spec:
        """Read the spec (once), and build every tool's schema if ``check`` (once)."""
        loaded = self._api
        if loaded is not None:
            if check and not self._checked:
                await anyio.to_thread.run_sync(self._check_all)
            return loaded.spec
        # One load at a time per event loop; loops in other threads (each call of a
        # synchronous framework in a thread of its own) may load side by side, and the
        # first to finish is kept.
        async with self._http.lock():
            loaded = self._api
            if loaded is None:
                root, outside = await self._read()
                # Every schema is built now, in the worker thread, when asked (load),
                # when the spec is small enough (as quick as on demand, and its broken
                # operations are left out before it is listed), or when it refers to
                # other documents (fetching those needs a worker thread).
                built, tools, schemas, checked = await anyio.to_thread.run_sync(
                    self._build, root, check or outside
                )
                with self._guard:
                    if self._api is None:
                        self._api, self._tools, self._schemas = built, tools, schemas
                        self._checked = checked
                    loaded = self._api
            if check and not self._checked:
                await anyio.to_thread.run_sync(self._check_all)
            return loaded.spec

    def _check_all(self) -> None:
        """In a worker thread: build every tool's schema (the broken ones are then
        left out, as `problems`)."""
        with collector_paused():
            _build_all(self._tools)
        self._checked = True

    async def validate(
        self, *, max_errors: int = 1000, progress: ValidationProgress | None = None
    ) -> tuple[SpecError, ...]:
        """Check the whole document against the OpenAPI (or Swagger 2.0) specification,
        with openapi-spec-validator, in a worker thread, and load it: every error found
        (up to ``max_errors``), each naming its JSON pointer, then what loading found that
        the validator did not (`problems`: operations left out, say for a ``$ref`` that
        leads nowhere); empty when the document is valid and every operation loads.
        Referenced documents are read under the same rule as loading (``allow_refs``).

        Not part of loading: it reads every node of the document, seconds on a spec the
        size of GitHub's, and real-world specs often break a rule that does not matter
        to their tools (those that do are in `problems` after loading).

        ``progress``, if given, is told from the worker threads how far it is: the phase
        (``"loading"``, ``"the document's structure"``, ``"operations"``,
        ``"components"``), how much of it is done, and its size (None when unknown).

        Raises:
            SpecError: the document cannot be read at all.
            ConnectionError: the spec's URL cannot be fetched.
        """
        loading: tuple[SpecError, ...]
        if progress is not None:
            progress("loading", 0, None)
        try:
            await self.load()
        except SpecError as error:
            loading = (error,)
        else:
            loading = self.problems
        loaded = self._api
        if loaded is not None:
            resolver = loaded.resolver
        else:
            resolver = self._resolver(await self._read_root())
        errors, crashed = await anyio.to_thread.run_sync(_validate, resolver, max_errors, progress)
        if crashed and loading:  # over what loading names precisely (a $ref to nowhere)
            errors = tuple(e for e in errors if e is not crashed)
        seen = {error.pointer for error in errors}  # the validator said it, more precisely
        return errors + tuple(p for p in loading if p.pointer not in seen)

    @property
    def headers(self) -> Mapping[str, str]:
        """The ``headers=`` given (their repr hides the values)."""
        return self._headers

    @property
    def problems(self) -> tuple[SpecError, ...]:
        """The operations left out because they could not be read (empty before loading;
        those whose schema is broken once it has been built: by `load`, or when the tool
        was first declared or called)."""
        if self._api is None:
            return ()
        schemas = self._schemas
        failed = schemas.broken() if schemas is not None else ()
        return self._api.spec.problems + failed

    async def shutdown(self) -> None:
        """Close the HTTP clients the toolset made, those of every event loop, from any
        loop or thread (a given client is left open). Idempotent.

        An asyncio loop that is alive but not running (between two
        ``loop.run_until_complete`` calls) is not waited on: it closes its client as it
        ends (``loop.shutdown_asyncgens()``)."""
        if self._http.given is None:
            if self._api is not None:
                self._api.shut_down = True
            self._api = None
            self._tools = ()
            self._schemas = None
            self._listed = (0, ())
            self._checked = False
            await self._http.aclose()

    # --- loading --------------------------------------------------------------------

    @property
    def client(self) -> httpx2.AsyncClient:
        """The HTTP client the tools send with from the running event loop (the one given,
        or this loop's own, made now if needed)."""
        return self._http.current()

    async def _read_root(self) -> Document:
        return (await self._read())[0]

    async def _read(self) -> tuple[Document, bool]:
        """The spec's document, and whether it refers to other documents (asked only
        of a spec whose schemas may be built on demand: one of many operations)."""
        source = self._source
        if isinstance(source, Mapping):
            outside = _many_operations(source) and _refers_outside(source)
            return Document(source, self._spec_url or ""), outside
        text = os.fspath(source)
        if text.startswith(("http://", "https://")):
            fetched, url = await _fetch(self._http, text)
            parsed = await anyio.to_thread.run_sync(_parse, fetched, url)
            return Document(parsed, url), _many_operations(parsed) and _mentions_outside(fetched)
        if "\n" in text or text.lstrip().startswith("{"):
            parsed = await anyio.to_thread.run_sync(_parse, text, self._spec_url)
            outside = _many_operations(parsed) and _mentions_outside(text)
            return Document(parsed, self._spec_url or ""), outside
        path = Path(text)
        try:
            content = await anyio.Path(path).read_text(encoding="utf-8")
        except OSError as error:
            raise SpecError(f"cannot read {path}: {error.strerror}", source=str(path)) from error
        uri = file_uri(path)
        parsed = await anyio.to_thread.run_sync(_parse, content, uri)
        return Document(parsed, uri), _many_operations(parsed) and _mentions_outside(content)

    def _build(
        self, root: Document, check: bool
    ) -> tuple[RestApi, tuple[RestApiTool, ...], OperationSchemas, bool]:
        """In a worker thread: read the operations and make their tools, and build
        their schemas if ``check`` or there are few (the garbage collector paused, as
        `_parse` says); whether they were built."""
        with collector_paused():
            api, tools, schemas = self._build_tools(root)
            check = check or len(tools) <= EAGER_OPERATIONS
            if check:
                _build_all(tools)
            return api, tools, schemas, check

    def _build_tools(
        self, root: Document
    ) -> tuple[RestApi, tuple[RestApiTool, ...], OperationSchemas]:
        resolver = self._resolver(root)
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
            check_credential(name, spec.security_schemes[name], credential)
        builder = SchemaBuilder(resolver, openapi30=not spec.version.startswith("3.1"))
        schemas = OperationSchemas(builder, root.uri)
        api = RestApi(
            spec=spec,
            resolver=resolver,
            clients=self._http,
            credentials=self._credentials,
            headers=self._headers,
            max_response_bytes=self._max_response_bytes,
            check_responses=self._validate_responses,
            cache=self._cache,
        )
        operations = spec.operations
        names = tool_names(operations)
        tools = tuple(
            RestApiTool(
                name,
                op,
                schemas,
                api,
                base_url=self._resolve_base(op, root.uri),
                confirm=self._confirm,
                declaration_budget=self._budget,
            )
            for name, op in zip(names, operations, strict=True)
        )
        return api, tools, schemas

    def _resolver(self, root: Document) -> Resolver:
        """The resolver of ``root``'s references (used in a worker thread: documents
        are fetched through the event loop's client)."""

        clients = self._http  # not the toolset: what its tools share never holds it

        def fetch(url: str) -> str:
            text, _ = anyio.from_thread.run(partial(_fetch, clients, any_origin=False), url)
            return text

        return Resolver(root, fetch=fetch, policy=self._ref_policy)

    def _resolve_base(self, op: Operation, doc_uri: str) -> str | None:
        """Where ``op`` is sent: ``base_url``, else its first server, a relative one (no
        servers means ``/``) resolved against the spec's own http(s) URL; None when there
        is nothing to resolve it against (the tool is listed all the same, and a call
        says to pass ``base_url=``)."""
        if self._base_url is not None:
            return self._base_url.rstrip("/")
        server = op.servers[0] if op.servers else Server(url="/")
        url = server.url
        for name, variable in server.variables.items():
            value = self._server_variables.get(name, variable.get("default", ""))
            url = url.replace(f"{{{name}}}", quote(str(value), safe=":/.-_~"))
        if not urlsplit(url).scheme:
            if not doc_uri.startswith(("http://", "https://")):
                return None
            url = urljoin(doc_uri, url)
        return url.rstrip("/")


_OUTSIDE = re.compile(r"""\$ref["']?\s*:\s*["']?(?!#)[^\s"',{}\[\]]""")
"""A ``$ref`` (JSON or YAML) whose value is text that does not start with ``#``: to
another document (or to an ``$id``, which may be in another one)."""


def _build_all(tools: Sequence[RestApiTool]) -> None:
    """Build every tool's schema now; a broken one is remembered (a problem, and the
    tool is no longer listed)."""
    for tool in tools:
        with contextlib.suppress(SpecError):
            tool.arguments_schema  # noqa: B018 - building it is the point


def _many_operations(document: Any) -> bool:
    """Whether the document may have more than `EAGER_OPERATIONS` operations (counting
    every key of its path items: quick, and never too few)."""
    paths = document.get("paths") if isinstance(document, Mapping) else None
    if not isinstance(paths, Mapping):
        return False
    return sum(len(item) for item in paths.values() if isinstance(item, Mapping)) > (
        EAGER_OPERATIONS
    )


def _mentions_outside(text: str) -> bool:
    """Whether the spec's text may refer to another document (a scan of the text, far
    quicker than a walk over the parsed document; a false alarm only costs time)."""
    return _OUTSIDE.search(text) is not None


def _refers_outside(document: Any) -> bool:
    """Whether a spec given as a dict has a ``$ref`` to another document (or an ``$id``)."""
    todo = [document]
    while todo:
        node = todo.pop()
        if isinstance(node, Mapping):
            ref = node.get("$ref")
            if isinstance(ref, str) and not ref.startswith("#"):
                return True
            todo.extend(node.values())
        elif isinstance(node, list):
            todo.extend(node)
    return False


def _parse(text: str, source: str | None) -> Any:
    """`parse_text`, in a worker thread, with the garbage collector paused: a big spec
    makes hundreds of thousands of long-lived objects and no cycles to collect, and
    every full collection as they pile up would walk them all again
    (`benchmarks/openapi_load.py` measures the parse)."""
    with collector_paused():
        return parse_text(text, source)


async def _fetch(clients: ApiClients, url: str, *, any_origin: bool = True) -> tuple[str, str]:
    """The text at ``url``, and the URL it came from after redirects (its references
    are relative to that); redirects to another origin are followed only when
    ``any_origin`` (the spec's own URL, which the user gave, but not the documents it
    refers to: the origin was what allowed them)."""
    client = await clients.get()
    asked = url
    for _ in range(MAX_SPEC_REDIRECTS + 1):
        try:
            with map_http_errors("fetching the spec", url):
                response = await client.get(url, follow_redirects=False)
        except httpx2.InvalidURL as error:  # not a transport fault: the URL itself
            raise SpecError(f"cannot fetch {safe_url(url)}: {error}", source=asked) from error
        if not (response.is_redirect and "location" in response.headers):
            break
        url = urljoin(url, response.headers["location"])
        if not any_origin and origin(url) != origin(asked):
            raise SpecError(
                f"fetching it was redirected to another origin, {origin(url)}", source=asked
            )
    else:
        raise SpecError(f"more than {MAX_SPEC_REDIRECTS} redirects", source=asked)
    if response.status_code >= 400:
        raise SpecError(f"fetching it gave HTTP {response.status_code}", source=asked)
    return response.text, url


class _Retrievers(Mapping[str, Callable[[str], Any]]):
    """openapi-spec-validator's document handlers, by URI scheme: for every scheme, the
    spec's `Resolver` (what the spec may refer to, ``$id``s found where they are), never
    the validator's own file and urllib readers. Remembers what it refused."""

    def __init__(self, resolver: Resolver) -> None:
        self._resolver = resolver
        self.refused: SpecError | None = None

    def _retrieve(self, uri: str) -> Any:
        try:
            return self._resolver.retrieve(uri)
        except SpecError as error:
            self.refused = self.refused or error
            raise

    def __getitem__(self, scheme: str) -> Callable[[str], Any]:
        return self._retrieve

    def __contains__(self, scheme: object) -> bool:
        return True

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


def _validate(
    resolver: Resolver, max_errors: int, progress: ValidationProgress | None = None
) -> tuple[tuple[SpecError, ...], SpecError | None]:
    """The validator's errors, and the one saying it failed (None if it did not); its
    keyword validators made `quicker` (and telling ``progress`` how far they are)."""
    from openapi_spec_validator import (
        OpenAPIV2SpecValidator,
        OpenAPIV30SpecValidator,
        OpenAPIV31SpecValidator,
        OpenAPIV32SpecValidator,
    )

    root = resolver.root
    document = root.root
    source = root.uri or None
    if not isinstance(document, Mapping):
        return (SpecError("the document is not an object", source=source),), None
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
        return (SpecError(f"unknown version {version!r}", pointer=where, source=source),), None
    retrievers = _Retrievers(resolver)
    keywords = quicker(validator.keyword_validators, progress, count_operations(document))
    validator = type(
        validator.__name__,
        (validator,),
        {"resolver_handlers": retrievers, "keyword_validators": keywords},
    )
    errors: list[SpecError] = []
    crashed: SpecError | None = None
    if progress is not None:
        progress("the document's structure", 0, None)
    try:
        for error in validator(document, base_uri=root.uri).iter_errors():
            pointer = join_pointer("", *error.absolute_path)
            errors.append(SpecError(error.message, pointer=pointer, source=source))
            if len(errors) >= max_errors:
                break
    except Exception as error:  # the validator trips over some documents it already faulted
        if retrievers.refused is not None:
            errors.append(retrievers.refused)
        elif not errors:
            # Its message may quote the whole document: the first line, clipped.
            said = clip(str(error).partition("\n")[0], _SAID)
            crashed = SpecError(
                f"the validator failed: {type(error).__name__}: {said}", source=source
            )
            errors.append(crashed)
    return tuple(errors), crashed


_SAID = 200
"""Characters of the validator's own message kept when it fails."""


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
