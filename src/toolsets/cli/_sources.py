"""What the command line's SOURCE arguments name, as one toolset: OpenAPI specs, MCP
config files, MCP servers over stdio or HTTP, and Python toolsets, tools or functions.

Nothing here prints: the commands (`toolsets.cli._list`...) show progress and errors.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import shlex
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from fnmatch import fnmatchcase
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urljoin

import anyio
import anyio.to_thread

from toolsets._auth import AuthConfig, AuthCredential
from toolsets._confirmed import ConfirmPolicy, confirmed
from toolsets._consumers import given_credential
from toolsets._context import ToolContext
from toolsets._errors import ToolsetError
from toolsets._names import PREFIX_NAMES
from toolsets._tool import Tool
from toolsets._toolset import ListingVaries, StaticToolset, Toolset
from toolsets._wrappers import WrapperToolset, combined, filtered, prefixed
from toolsets.cli._errors import SourceError

if TYPE_CHECKING:
    from toolsets.mcp import McpServer, McpToolset, Stdio, Transport, UserBearer, UserCredentials
    from toolsets.openapi import HttpCache, OpenApiToolset

__all__ = [
    "CONFIRM_POLICIES",
    "CREDENTIAL_ENV_PREFIX",
    "DEFAULT_CONFIRM",
    "MAX_SPEC_REDIRECTS",
    "SPEC_FETCH_TIMEOUT",
    "ServedToolset",
    "SourceError",
    "SourceOptions",
    "Sources",
    "credential_env_name",
    "credential_for",
    "credentials_from_env",
    "kind_of",
    "no_credential",
    "pairs",
    "python_toolset",
    "read_spec",
    "read_spec_text",
    "security_scheme_names",
    "stdio_transport",
]

CONFIRM_POLICIES = ("never", "destructive", "always")
"""What ``--confirm`` takes (`toolsets.ConfirmPolicy`'s names)."""
DEFAULT_CONFIRM = "destructive"
"""``--confirm``'s default: a call that may destroy or overwrite asks first."""
CREDENTIAL_ENV_PREFIX = "TOOLSETS_CREDENTIAL_"
"""Environment variables naming a credential: ``TOOLSETS_CREDENTIAL_<SCHEME>``."""

SPEC_FETCH_TIMEOUT = 30.0
"""Seconds for each phase of fetching a spec's URL."""
MAX_SPEC_REDIRECTS = 5
"""Redirects followed when fetching a spec's URL."""
_OWN_ENV_PREFIX = "TOOLSETS_"
"""toolsets' own environment variables, never handed to an MCP server it starts."""
_MODULE_ATTRIBUTE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
_TAGS_SHOWN = 12
"""Tags named when a ``--tag`` matches nothing."""
_HEAD = 65536
"""Characters of a file read to tell a spec from an MCP config."""
_SPEC_KEY = re.compile(r"""^[\s{]*["']?(openapi|swagger)["']?\s*:""", re.M)


def credential_env_name(scheme: str) -> str:
    """The environment variable holding the credential of the security scheme
    ``scheme``: ``TOOLSETS_CREDENTIAL_`` then the name upper-cased, each character other
    than a letter or a digit made ``_`` (``api_key`` and ``api-key``: ``..._API_KEY``)."""
    return CREDENTIAL_ENV_PREFIX + re.sub(r"[^A-Z0-9]", "_", scheme.upper())


def credentials_from_env(
    schemes: Iterable[str], environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The credentials the environment holds for ``schemes`` (by scheme name)."""
    env = os.environ if environ is None else environ
    found = {}
    for scheme in schemes:
        value = env.get(credential_env_name(scheme))
        if value:
            found[scheme] = value
    return found


def pairs(given: Sequence[str], option: str) -> dict[str, str]:
    """``NAME=VALUE`` strings as a dict (the value may hold ``=``).

    Raises:
        SourceError: one has no ``=`` or no name (the value is never shown).
    """
    found: dict[str, str] = {}
    for item in given:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            # Only the part before any "=" is shown: the rest may be a secret.
            raise SourceError(
                f"{option} takes NAME=VALUE, got {name.strip()[:40]!r} with no '=' or no name",
                source=option,
            )
        found[name.strip()] = value
    return found


@dataclass(frozen=True, kw_only=True)
class SourceOptions:
    """The options every command that loads sources takes."""

    base_url: str | None = None
    """Where the API of every spec is, instead of the spec's servers."""
    credentials: Mapping[str, str] = field(default_factory=dict, repr=False)
    """From ``--credential``: by security scheme name (the environment adds more)."""
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    """Sent with every request to a spec's API (and when fetching a spec's URL), never
    to an MCP server."""
    mcp_headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    """Sent with every request to an MCP server over HTTP, never to a spec's API."""
    tags: tuple[str, ...] = ()
    methods: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    """Operations of specs to keep (glob patterns over the path templates)."""
    names: tuple[str, ...] = ()
    """Tools to keep, of every source: names or glob patterns."""
    stdio: tuple[str, ...] = ()
    """MCP servers to start: ``"command args"``, with this process's environment."""
    http: tuple[str, ...] = ()
    """MCP servers to reach over streamable HTTP: their URLs."""
    environ: Mapping[str, str] | None = field(default=None, repr=False)
    """Where ``TOOLSETS_CREDENTIAL_*`` are read (None: ``os.environ``)."""
    tool_timeout: float | None = None
    """Seconds a call to an MCP server's tool may take (None: `McpToolset`'s default)."""
    debug: bool = False
    """Let ``--stdio`` servers write to this process's stderr (else it is dropped)."""
    prefixes: tuple[tuple[str, int, str], ...] = ()
    """``--prefix``: ``(kind, index, NAME)``, the tools of the ``index``-th SOURCE
    (``"source"``), ``--stdio`` or ``--http`` offered as ``NAME_tool``."""
    confirm: str = DEFAULT_CONFIRM
    """When calls ask the user first (``never``, ``destructive``, ``always``): applied
    once, over every source (see `Sources.open`)."""
    spec_credentials: bool = True
    """Give the specs ``--credential`` and ``TOOLSETS_CREDENTIAL_*`` when they are read;
    False: every secured operation asks for its caller's own (``toolsets serve
    --user-credentials`` or ``--token-exchange``)."""
    retries: int = 0
    """``--retries``: runs of a call beyond the first when the API pushes back (`Retry`)."""
    rate_limit: tuple[float, float] | None = None
    """``--rate-limit``: (calls, seconds) to each upstream (`RateLimit`)."""
    max_result_bytes: int | None = None
    """``--max-result-bytes``: the most a result weighs as JSON (`ResultLimit`)."""
    max_result_tokens: int | None = None
    """``--max-result-tokens``: the most tokens a result counts, estimated (`ResultLimit`)."""
    cache_bytes: int | None = None
    """``--cache``/``--cache-size``: the budget of the `HttpCache` every spec shares (None:
    no cache)."""
    user_bearer: Mapping[str, Any] | None = None
    """``toolsets serve --user-bearer``: ``names``, each the credential each caller's
    bearer token is for the HTTP server of that name in an ``mcpServers`` file, or (one
    naming none of those) for every ``--mcp-url`` MCP server; and ``access``, where each
    user's credentials are found (`user_credentials`'s settings). None: the servers get
    their own headers (``--mcp-header``, the file's) only."""
    oauth: Mapping[str, Any] | None = None
    """How MCP servers over HTTP sending no credential of their own are logged in to
    (`toolsets.cli._login.login_settings`); None: they are not (``--no-login``)."""


def _production(toolset: Toolset, options: SourceOptions) -> Toolset:
    """``toolset`` with ``--max-result-bytes``/``--max-result-tokens``, ``--retries`` and
    ``--rate-limit`` around its calls, in that order (each try through the rate limit, the
    last result cut)."""
    max_bytes, max_tokens = options.max_result_bytes, options.max_result_tokens
    if not (options.retries or options.rate_limit or max_bytes or max_tokens):
        return toolset
    from toolsets.calls import RateLimit, ResultLimit, Retry, wrap_calls

    wrappers: list[Any] = []
    if max_bytes or max_tokens:
        wrappers.append(ResultLimit(max_bytes=max_bytes or None, max_tokens=max_tokens or None))
    if options.retries:
        wrappers.append(Retry(tries=options.retries + 1))
    if options.rate_limit is not None:
        calls, seconds = options.rate_limit
        wrappers.append(RateLimit(rate=calls, per=seconds))
    wrapped: Toolset = wrap_calls(toolset, *wrappers)
    return wrapped


def kind_of(source: str) -> str:
    """What a positional SOURCE names: ``"spec"``, ``"config"`` (an ``mcpServers``
    file) or ``"python"`` (``module:attribute``).

    Raises:
        SourceError: a path that does not exist and is neither a URL nor
            ``module:attribute``.
    """
    if source.startswith(("http://", "https://")):
        return "spec"
    path = Path(source)
    if not path.exists():
        if _MODULE_ATTRIBUTE.match(source):
            return "python"
        raise SourceError(
            f"no such file: {source} (a SOURCE is a spec's path or URL, an mcpServers "
            "file, or module:attribute)",
            source=source,
        )
    if path.is_dir():
        raise SourceError(f"{source} is a directory, not a spec or config file", source=source)
    try:
        with path.open(encoding="utf-8", errors="replace") as file:
            head = file.read(_HEAD)
    except OSError as exc:
        raise SourceError(f"cannot read {source}: {exc.strerror}", source=source) from exc
    if _SPEC_KEY.search(head):
        return "spec"
    if '"mcpServers"' in head:
        return "config"
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "spec"  # YAML, or broken: the spec loader says what is wrong
    if isinstance(document, Mapping) and isinstance(document.get("servers"), Mapping):
        return "config"  # VS Code's mcp.json
    return "spec"


def python_toolset(source: str) -> Toolset:
    """The toolset ``module:attribute`` names: a toolset, a tool, a function, or a list
    of them."""
    module_name, _, attribute = source.partition(":")
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # as `python -m` would: modules of this directory
    try:
        found: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise SourceError(f"cannot import {module_name}: {exc}", source=source) from exc
    for part in attribute.split("."):
        try:
            found = getattr(found, part)
        except AttributeError as exc:
            raise SourceError(f"{source}: {module_name} has no {attribute}", source=source) from exc
    items = list(found) if isinstance(found, list | tuple) else [found]
    toolsets: list[Toolset] = []
    tools: list[Tool | Callable[..., Any]] = []
    for item in items:
        if (server := _mcp_server(item)) is not None:
            toolsets.append(ServedToolset(server))
        elif isinstance(item, Toolset):
            toolsets.append(item)
        elif isinstance(item, Tool) or callable(item):
            tools.append(item)
        else:
            raise SourceError(
                f"{source} is a {type(item).__name__}, not a toolset, a tool or a function "
                "(or a list of them)",
                source=source,
            )
    if tools:
        try:
            toolsets.append(StaticToolset(tools))
        except ToolsetError as exc:
            raise SourceError(f"{source}: {exc}", source=source) from exc
    return toolsets[0] if len(toolsets) == 1 else combined(*toolsets)


def _mcp_server(item: object) -> McpServer | None:
    """``item`` if it is an `McpServer` (none was made unless the module imported
    `toolsets.mcp`: it is not imported for this)."""
    if "toolsets.mcp" not in sys.modules:
        return None
    from toolsets.mcp import McpServer

    return item if isinstance(item, McpServer) else None


class ServedToolset(WrapperToolset):
    """The tools of an `McpServer` that ``module:attribute`` names (``toolsets serve``
    serves that server itself: its name, resources and prompts too)."""

    keeps_names = True
    listing_varies: ListingVaries = "never"

    def __init__(self, server: McpServer) -> None:
        super().__init__(server.toolset)
        self.server = server

    async def list_tools(self, ctx: ToolContext | None = None) -> Sequence[Tool]:
        return await self.wrapped.list_tools(ctx)


def stdio_transport(command: str, *, debug: bool) -> Stdio:
    """The MCP server ``--stdio "command args"`` starts: with this process's
    environment but toolsets' own variables; its stderr dropped unless ``debug``.

    Raises:
        SourceError: the command cannot be split into words, or is empty.
    """
    from toolsets.mcp import Stdio

    try:
        words = shlex.split(command)
    except ValueError as exc:
        raise SourceError(f"--stdio {command!r}: {exc}", source=command) from exc
    if not words:
        raise SourceError("--stdio needs a command", source=command)
    # The whole environment, as the shell would give the command (PATH, a virtualenv,
    # the keys it reads), not the SDK's minimal one: the user typed this command. But
    # not toolsets' own variables: credentials meant for the specs, and what a serving
    # process hands its workers.
    env = {k: v for k, v in os.environ.items() if not k.startswith(_OWN_ENV_PREFIX)}
    stderr = sys.stderr if debug else None
    return Stdio(command=words[0], args=words[1:], env=env, stderr=stderr)


def _name_matches(patterns: tuple[str, ...]) -> Callable[[Tool, ToolContext], bool]:
    def keep(tool: Tool, ctx: ToolContext) -> bool:
        return any(fnmatchcase(tool.name, pattern) for pattern in patterns)

    return keep


async def read_spec(source: str, headers: Mapping[str, str]) -> tuple[Any, str]:
    """The parsed document of the spec at ``source`` (a path or an http(s) URL) and its
    URI (what its relative references resolve against), read once (`read_spec_text`).

    Raises:
        SpecError: the file cannot be read, the URL answers an error, or the text is
            not JSON or YAML.
        ConnectionError: the URL cannot be reached.
    """
    from toolsets.openapi._document import parse_text

    text, uri = await read_spec_text(source, headers)
    return await anyio.to_thread.run_sync(parse_text, text, uri), uri


async def read_spec_text(source: str, headers: Mapping[str, str]) -> tuple[str, str]:
    """The text of the spec at ``source`` (a path or an http(s) URL), as `OpenApiToolset`
    takes it, and its URI (what its relative references resolve against), read once:
    the command hands the text to the toolset, which parses it, and reads the security
    schemes from it first when credentials may apply.

    ``headers`` go with the request for a URL (a spec behind the API's own auth), to
    its origin only: a redirect elsewhere is followed without them.

    Raises:
        SpecError: the file cannot be read, or the URL answers an error.
        ConnectionError: the URL cannot be reached.
    """
    import httpx2  # here: the command starts sooner without what it does not use

    from toolsets._errors import SpecError
    from toolsets._http import map_http_errors
    from toolsets.openapi._document import file_uri
    from toolsets.openapi._security import origin

    if not source.startswith(("http://", "https://")):
        try:
            text = await anyio.Path(source).read_text(encoding="utf-8")
        except OSError as exc:
            raise SpecError(f"cannot read {source}: {exc.strerror}", source=source) from exc
        return _document_text(text), file_uri(source)
    url = source
    async with httpx2.AsyncClient(timeout=SPEC_FETCH_TIMEOUT) as client:
        for _ in range(MAX_SPEC_REDIRECTS + 1):
            sent = dict(headers) if origin(url) == origin(source) else {}
            with map_http_errors("fetching the spec", url, secrets=headers.values()):
                response = await client.get(url, headers=sent)
            if not (response.is_redirect and "location" in response.headers):
                break
            url = urljoin(url, response.headers["location"])
        else:
            raise SpecError(f"more than {MAX_SPEC_REDIRECTS} redirects", source=source)
    if response.status_code >= 400:
        raise SpecError(f"fetching it gave HTTP {response.status_code}", source=source)
    return _document_text(response.text), url


def _document_text(text: str) -> str:
    """``text`` as `OpenApiToolset` takes a spec's text: no byte order mark, and a line
    break (which tells it from a path: a one-line YAML file, say)."""
    text = text.removeprefix("\ufeff")
    return text if "\n" in text else text + "\n"


def security_scheme_names(document: Any) -> set[str]:
    """The names of the security schemes a parsed spec defines (OpenAPI 3's
    ``components.securitySchemes``, Swagger 2's ``securityDefinitions``)."""
    if not isinstance(document, Mapping):
        return set()
    components = document.get("components")
    found = components.get("securitySchemes") if isinstance(components, Mapping) else None
    if not isinstance(found, Mapping):
        found = document.get("securityDefinitions")
    return {str(name) for name in found} if isinstance(found, Mapping) else set()


class Sources:
    """The sources of one command, made into one toolset by `open`.

    Args:
        sources: The positional SOURCE arguments.
        options: The options every such command takes.
        login_prompt: Shows the user where to log in to a server (default: a warning
            logged).
    """

    def __init__(
        self,
        sources: Sequence[str],
        options: SourceOptions,
        *,
        login_prompt: Callable[[str, str, bool], None] | None = None,
    ) -> None:
        self.sources = tuple(sources)
        self.options = options
        self.login_prompt = login_prompt
        self.kinds = [kind_of(source) for source in self.sources]
        if not self.sources and not options.stdio and not options.http:
            raise SourceError(
                "no SOURCE given: name a spec, an mcpServers file, module:attribute, "
                "--stdio or --http",
                source="",
            )
        self._specs: list[OpenApiToolset] = []
        self._prefix: dict[tuple[str, int], str] = {}
        for kind, index, name in options.prefixes:
            if kind == "source" and index >= len(self.sources):
                raise SourceError(
                    f"--prefix {name} follows no SOURCE (it comes after the TOOL)",
                    source="--prefix",
                )
            self._prefix[kind, index] = name
        self._cache: HttpCache | None = None
        """The HTTP cache every spec shares (``--cache``; made with the first spec)."""
        self._users: UserCredentials | None = None
        """Each user's credentials, for ``--user-bearer`` (made once, on first use)."""
        self.empty: list[str] = []
        """The specs with no operation at all (``paths`` empty: webhooks only, say)."""
        self.parts: tuple[Toolset, ...] = ()
        self._unnamed: Toolset | None = None
        self.labels: list[str] = []
        """What each part of the toolset `open` makes was given as, in order."""

    @property
    def has_specs(self) -> bool:
        return "spec" in self.kinds

    async def open(self) -> Toolset:
        """One toolset of every source, with the selection applied (specs loaded,
        credentials matched to their security schemes; servers are reached when the
        toolset is first listed).

        Raises:
            SourceError: a source names nothing usable, or (all sources being specs) a
                ``--credential`` names a scheme no spec defines.
            SpecError: a spec cannot be read.
            ConnectionError: a spec's URL cannot be fetched.
        """
        # Imported here: the command starts sooner without what it does not use (the
        # MCP SDK is the heaviest import of a command's start).
        options = self.options
        parts: list[Toolset] = []
        used: set[str] = set()
        claimed: set[str] = set()  # the --user-bearer names of mcpServers files' servers
        self.labels = []

        def add(part: Toolset, kind: str, index: int, label: str, *, python: bool = False) -> None:
            part = self._confirmed(part, python=python)
            name = self._prefix.get((kind, index))
            parts.append(part if name is None else prefixed(part, name))
            self.labels.append(label)

        for index, (source, kind) in enumerate(zip(self.sources, self.kinds, strict=True)):
            if kind == "spec":
                spec, schemes = await self._spec(source)
                used |= schemes
                add(self._selected(spec), "source", index, source)
            elif kind == "config":
                add(self._config(source, claimed), "source", index, source)
            else:
                add(python_toolset(source), "source", index, source, python=True)
        for server, kind, index, label in self._servers(claimed):
            add(server, kind, index, label)
        self.parts = tuple(parts)
        self._check_credentials(used)
        toolset = parts[0] if len(parts) == 1 else combined(*parts)
        self._unnamed = toolset
        if options.names:
            toolset = filtered(toolset, _name_matches(options.names))
        return _production(toolset, options)

    def _config(self, source: str, claimed: set[str]) -> Toolset:
        """The servers of the ``mcpServers`` file ``source``, as `load_mcp_config` makes
        them (each prefixed with its name); the HTTP ones ``--user-bearer`` names called
        with each caller's own bearer token (their names added to ``claimed``).

        Raises:
            SourceError: ``--user-bearer`` names a server of the file that cannot carry
                a bearer token (started as a process, or over HTTP+SSE).
        """
        from toolsets.mcp import Stdio, StreamableHttp, read_mcp_config

        wanted = self._bearer_names()
        transports = read_mcp_config(source)
        for name, transport in transports.items():
            if name not in wanted:
                continue
            if not isinstance(transport, StreamableHttp):
                how = (
                    "is started as a process (stdio): no HTTP header carries a token to it"
                    if isinstance(transport, Stdio)
                    else "is reached over HTTP+SSE, which sends no per-caller headers (give "
                    'it "type": "http", streamable HTTP)'
                )
                raise SourceError(
                    f"--user-bearer {name}: the server {name!r} of {source} {how}",
                    source="--user-bearer",
                )
            transports[name] = replace(transport, header_provider=self._bearer(name))
            claimed.add(name)
        parts = [
            prefixed(self._server(transport, name=name), PREFIX_NAMES.legal(name))
            for name, transport in transports.items()
        ]
        return combined(*parts)

    def _server(self, transport: Transport, **options: Any) -> McpToolset:
        """The toolset of the server ``transport`` reaches: logging in to it over HTTP
        when it sends no credential of its own (`authorized`)."""
        from toolsets.cli._login import logged_in_toolset

        made = {**self._mcp_options, **options}
        return logged_in_toolset(transport, self.options.oauth, self.login_prompt, **made)

    def _servers(self, claimed: set[str]) -> list[tuple[Toolset, str, int, str]]:
        """The MCP servers of ``--stdio`` and ``--http``: each server's toolset, its
        option's name, its place among that option's values, and how it was given.

        Raises:
            SourceError: a ``--user-bearer`` name is not ``claimed`` by a server of an
                ``mcpServers`` file and there is no ``--mcp-url``, or two such are.
        """
        options = self.options
        unclaimed = [name for name in self._bearer_names() if name not in claimed]
        if unclaimed and not options.http:
            raise SourceError(
                f"--user-bearer {unclaimed[0]}: no HTTP server of an mcpServers file is "
                "called so, and no --mcp-url is given",
                source="--user-bearer",
            )
        if len(unclaimed) > 1:
            raise SourceError(
                f"--user-bearer {' and '.join(unclaimed)}: the --mcp-url servers take one "
                "credential name (the others are no server of an mcpServers file)",
                source="--user-bearer",
            )
        if not (options.stdio or options.http):
            return []
        from toolsets.mcp import McpToolset, StreamableHttp

        found: list[tuple[Toolset, str, int, str]] = []
        for index, command in enumerate(options.stdio):
            server = McpToolset(stdio_transport(command, debug=options.debug), **self._mcp_options)
            found.append((server, "stdio", index, f"--stdio {shlex.quote(command)}"))
        bearer = self._bearer(unclaimed[0]) if unclaimed else None
        for index, url in enumerate(options.http):
            try:
                transport = StreamableHttp(
                    url=url, headers=dict(options.mcp_headers), header_provider=bearer
                )
            except ValueError as exc:
                raise SourceError(f"--http {url}: {exc}", source=url) from exc
            found.append((self._server(transport), "http", index, f"--http {url}"))
        return found

    def _bearer_names(self) -> list[str]:
        """The ``--user-bearer`` names (none without it)."""
        given = self.options.user_bearer
        return list(given["names"]) if given is not None else []

    def _bearer(self, name: str) -> UserBearer:
        """Each caller's own bearer token, their credential ``name`` (``--user-bearer``),
        ``--credential NAME=...`` serving callers without one with
        ``--credential-fallback``. Every server's is found by the same users'
        credentials (one token exchange, one file)."""
        from toolsets.mcp import UserBearer

        if self._users is None:
            from toolsets.cli._serve_access import user_credentials

            given = self.options.user_bearer
            assert given is not None  # a name was given
            credentials = dict(self.options.credentials)
            self._users = user_credentials(given["access"], credentials, os.environ, credential_for)
            assert self._users is not None  # `access_settings` made sure
        return UserBearer(self._users, name=name)

    def _check_credentials(self, used: set[str]) -> None:
        """Raises:
        SourceError: the sources are all specs, and a ``--credential`` names a scheme
            none of them defines (``used``: the schemes they define)."""
        options = self.options
        unknown = sorted(set(options.credentials) - used)
        only_specs = set(self.kinds) == {"spec"} and not (options.stdio or options.http)
        if unknown and only_specs:
            # A misspelt scheme would otherwise be dropped silently. (A tool of another
            # source may ask for any credential by name when called.)
            raise SourceError(
                f"--credential for {', '.join(unknown)}, a security scheme no spec defines",
                source="--credential",
            )

    def _confirmed(self, part: Toolset, *, python: bool) -> Toolset:
        """``part`` under ``--confirm``: one policy, one layer over each source (each made
        with ``confirm="never"``), so a call is confirmed once and ``--confirm never``
        means no source asks on its own. A Python toolset, tool or function asks as its
        author said (``requires_confirmation``), and under ``--confirm always`` too."""
        policy = self.options.confirm
        if policy == "never" or (python and policy != "always"):
            return part
        return confirmed(part, cast("ConfirmPolicy", policy))

    @property
    def _mcp_options(self) -> dict[str, Any]:
        """What every MCP server's `McpToolset` is made with: no confirmation of its own
        (`open` applies ``--confirm`` over every source)."""
        timeout = self.options.tool_timeout
        # A server that confirms its own tools (another `toolsets serve`) is answered
        # for a call the user confirmed here: asked once, not once per server. Safe for
        # any server: only our server's tagged confirmation of the very call the user
        # confirmed is answered (once); any other question is declined.
        made: dict[str, Any] = {"confirm": "never", "relay_confirmations": True}
        if timeout is not None:
            made["timeout"] = timeout
        return made

    async def _spec(self, source: str) -> tuple[OpenApiToolset, set[str]]:
        """The spec's toolset with the credentials for its security schemes, and the
        names of those schemes (known only when credentials may apply: ``--credential``
        or a ``TOOLSETS_CREDENTIAL_*`` variable).

        The toolset is not loaded here: it reads the spec when first listed, and on a
        spec of thousands of operations builds each tool's schema only when that tool
        is declared or called (`OpenApiToolset`), so that listing Microsoft Graph's
        11,422 operations, or inspecting one, takes what the library's listing does.
        """
        from toolsets.openapi import OpenApiToolset
        from toolsets.openapi._document import parse_text

        options = self.options
        # Read here, once: the credentials must be given when the toolset is made, and
        # which apply is known from the document's security schemes. The toolset parses
        # the text itself (quicker than handing it the parsed document, which it would
        # walk for references to other documents), so the command parses it only when
        # there are credentials to match.
        text, uri = await read_spec_text(source, options.headers)
        schemes: set[str] = set()
        if self._credentials_given:
            document = await anyio.to_thread.run_sync(parse_text, text, uri)
            schemes = security_scheme_names(document)
        credentials = {**credentials_from_env(schemes, options.environ)}
        credentials.update({k: v for k, v in options.credentials.items() if k in schemes})
        if not options.spec_credentials:  # each caller's own, asked for by every call
            credentials = {}
        toolset = OpenApiToolset(
            text,
            spec_url=uri,
            base_url=options.base_url,
            headers=dict(options.headers),
            credentials=credentials,
            confirm="never",  # `open` applies --confirm over every source
            cache=self._http_cache(),
        )
        self._specs.append(toolset)
        if not await toolset.list_tools() and not toolset.problems:
            self.empty.append(source)
        return toolset, schemes

    def _http_cache(self) -> HttpCache | None:
        """The cache the specs share, made the first time (None: ``--cache`` not given)."""
        size = self.options.cache_bytes
        if size is None:
            return None
        if self._cache is None:
            from toolsets.openapi import HttpCache

            self._cache = HttpCache(max_bytes=size)
        return self._cache

    @property
    def _credentials_given(self) -> bool:
        """Whether a credential may apply to a spec: ``--credential`` was given, or the
        environment holds a ``TOOLSETS_CREDENTIAL_*`` variable."""
        environ = os.environ if self.options.environ is None else self.options.environ
        return bool(self.options.credentials) or any(
            name.startswith(CREDENTIAL_ENV_PREFIX) for name in environ
        )

    def _selected(self, spec: OpenApiToolset) -> Toolset:
        from toolsets.openapi import select_operations

        options = self.options
        if not (options.tags or options.methods or options.paths):
            return spec
        return filtered(
            spec,
            select_operations(
                tags=options.tags or None,
                methods=options.methods or None,
                paths=options.paths or None,
            ),
        )

    @property
    def selects(self) -> bool:
        """Whether a selection option (``--tag``, ``--method``, ``--path``, ``--name``)
        was given."""
        options = self.options
        return bool(options.tags or options.methods or options.paths or options.names)

    @property
    def selection(self) -> str:
        """The selection options given, as typed: ``--tag pets --method get``."""
        options = self.options
        given = [
            f"{option} {shlex.quote(value)}"
            for option, values in (
                ("--tag", options.tags),
                ("--method", options.methods),
                ("--path", options.paths),
                ("--name", options.names),
            )
            for value in values
        ]
        return " ".join(given)

    async def unmatched(self) -> list[str]:
        """The selection options that match no tool of the sources (each alone), as
        ``--tag x matches no operation (the tags: a, b)``."""
        from toolsets.openapi import RestApiTool, select_operations

        options = self.options
        operations = [
            tool
            for spec in self._specs
            for tool in await spec.list_tools()
            if isinstance(tool, RestApiTool)
        ]
        found: list[str] = []
        tag_missing = False
        for option, values, key in (
            ("--tag", options.tags, "tags"),
            ("--method", options.methods, "methods"),
            ("--path", options.paths, "paths"),
        ):
            for value in values:
                keep = select_operations(**{key: [value]})  # type: ignore[arg-type]
                if not any(keep(tool, ToolContext()) for tool in operations):
                    found.append(f"{option} {value} matches no operation")
                    tag_missing = tag_missing or option == "--tag"
        if tag_missing:
            tags = {tag for tool in operations for tag in tool.operation.tags}
            named = sorted(tags, key=str.casefold)
            shown = ", ".join(named[:_TAGS_SHOWN]) + (", …" if len(named) > _TAGS_SHOWN else "")
            found.append(f"the tags: {shown}" if named else "the specs have no tags")
        if options.names and self._unnamed is not None:
            names = [tool.name for tool in await self._unnamed.list_tools(ToolContext())]
            for pattern in options.names:
                if not any(fnmatchcase(name, pattern) for name in names):
                    found.append(f"--name {pattern} matches no tool")
        return found

    async def same_names(self, name: str) -> str:
        """Why the sources cannot be combined: those offering a tool ``name`` (each part
        of `open`'s toolset listed again: the listings are kept), and the way out."""
        owners = []
        for part, label in zip(self.parts, self.labels, strict=True):
            try:
                tools = await part.list_tools(ToolContext())
            except ToolsetError:
                continue
            if any(tool.name == name for tool in tools):
                owners.append(label)
        who = " and ".join(owners) if len(owners) > 1 else "two sources"
        return (
            f"{who} both offer a tool named {name!r}: put --prefix NAME after one of them "
            "(its tools become NAME_tool)"
        )

    async def shutdown_specs(self) -> None:
        for spec in self._specs:
            await spec.shutdown()


def credential_for(config: AuthConfig, given: Mapping[str, str]) -> AuthCredential | None:
    """The credential ``--credential`` or the environment holds for ``config`` (a
    ``user:password`` string for HTTP basic), or None."""
    known = {**credentials_from_env([config.scheme_name]), **given}
    value = known.get(config.key) or known.get(config.scheme_name)
    if value is None:
        return None
    kind = str(config.scheme.get("type", "")).lower()
    if kind == "http" and str(config.scheme.get("scheme", "")).lower() == "basic":
        user, _, password = value.partition(":")
        return AuthCredential.basic(user, password)
    return given_credential({config.scheme_name: value}, config)


def no_credential(tool_name: str, config: AuthConfig) -> str:
    """Why a call could not be made: the credential it needs, and the two ways to give it."""
    name = config.scheme_name
    return (
        f"{tool_name} needs the credential {name!r}: give --credential {name}=VALUE or set "
        f"{credential_env_name(name)}"
    )
