"""``toolsets resources list|read`` and ``toolsets prompts list|get``: what MCP servers
offer besides tools, from the shell.

The servers are those the other commands take: each server of an ``mcpServers`` file,
``--stdio`` and ``--http`` ones, and ``module:attribute`` naming an `McpServer` of your
own (spoken to in this process). A spec or a plain Python toolset has neither.
"""

from __future__ import annotations

import base64
import contextlib
import sys
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from toolsets.cli._errors import CommandError, missing_cli

try:
    import click
except ImportError as exc:
    raise missing_cli(exc) from exc

import anyio
import mcp.types as mt
from mcp import Client, MCPError

from toolsets._errors import ToolCallError
from toolsets.cli._describe import SHORT
from toolsets.cli._login import logged_in_toolset, login_prompt, login_settings
from toolsets.cli._options import (
    debug_option,
    json_option,
    mcp_server_options,
    run_async,
)
from toolsets.cli._sources import (
    ServedToolset,
    SourceError,
    kind_of,
    pairs,
    python_toolset,
    stdio_transport,
)
from toolsets.cli._terminal import Terminal

if TYPE_CHECKING:
    from toolsets.mcp import McpServer

__all__ = ["prompts_group", "resources_group"]

_PAGES = 1000
"""Pages of a list read at most from one server (a server that keeps giving cursors)."""


class _Server(Protocol):
    """An MCP server's resources and prompts (`McpToolset` has them all)."""

    name: str

    async def list_resources(self) -> list[mt.Resource]: ...
    async def list_resource_templates(self) -> list[mt.ResourceTemplate]: ...
    async def read_resource(
        self, uri: str
    ) -> list[mt.TextResourceContents | mt.BlobResourceContents]: ...
    async def list_prompts(self) -> list[mt.Prompt]: ...
    async def get_prompt(
        self, name: str, arguments: Mapping[str, str] | None = None
    ) -> mt.GetPromptResult: ...
    async def shutdown(self) -> None: ...


class _InProcess:
    """An `McpServer` of this process, spoken to over MCP in memory."""

    def __init__(self, server: McpServer) -> None:
        self.name = server.name
        self._server = server
        self._stack = contextlib.AsyncExitStack()
        self._client: Client | None = None

    async def _connected(self) -> Client:
        if self._client is None:
            self._client = await self._stack.enter_async_context(Client(self._server.server))
        return self._client

    async def _pages(self, method: str, key: str) -> list[Any]:
        client = await self._connected()
        items: list[Any] = []
        cursor: str | None = None
        for _ in range(_PAGES):
            page = await getattr(client, method)(cursor=cursor)
            items.extend(getattr(page, key))
            cursor = page.next_cursor
            if not cursor:
                break
        return items

    async def list_resources(self) -> list[mt.Resource]:
        return await self._pages("list_resources", "resources")

    async def list_resource_templates(self) -> list[mt.ResourceTemplate]:
        return await self._pages("list_resource_templates", "resource_templates")

    async def read_resource(
        self, uri: str
    ) -> list[mt.TextResourceContents | mt.BlobResourceContents]:
        result = await (await self._connected()).read_resource(uri)
        return list(result.contents)

    async def list_prompts(self) -> list[mt.Prompt]:
        return await self._pages("list_prompts", "prompts")

    async def get_prompt(
        self, name: str, arguments: Mapping[str, str] | None = None
    ) -> mt.GetPromptResult:
        return await (await self._connected()).get_prompt(name, dict(arguments or {}))

    async def shutdown(self) -> None:
        await self._stack.aclose()


def _servers(
    sources: Sequence[str],
    params: Mapping[str, Any],
    prompt: Callable[[str, str, bool], None] | None = None,
) -> list[_Server]:
    """The MCP servers the sources name, not connected yet (those over HTTP sending no
    credential of their own logged in to, ``prompt`` showing where: `authorized`).

    Raises:
        SourceError: a source is a spec, or Python that is no `McpServer`.
    """
    from toolsets.mcp import StreamableHttp, read_mcp_config

    settings = login_settings(params)
    found: list[_Server] = []
    for source in sources:
        kind = kind_of(source)
        if kind == "spec":
            raise SourceError(
                f"{source} is an OpenAPI spec: resources and prompts come from MCP servers "
                "(an mcpServers file, --stdio, --http, or module:attribute naming an McpServer)",
                source=source,
            )
        if kind == "config":
            for name, transport in read_mcp_config(source).items():
                found.append(logged_in_toolset(transport, settings, prompt, name=name))
            continue
        made = python_toolset(source)
        if not isinstance(made, ServedToolset):
            raise SourceError(
                f"{source} is a toolset, not an McpServer: only MCP servers have resources "
                "and prompts",
                source=source,
            )
        found.append(_InProcess(made.server))
    debug = bool((click.get_current_context().find_root().obj or {}).get("debug"))
    for command in params["stdio"]:
        found.append(logged_in_toolset(stdio_transport(command, debug=debug), None, None))
    headers = pairs(params["mcp_headers"], "--mcp-header")
    for url in params["http"]:
        try:
            transport = StreamableHttp(url=url, headers=headers)
        except ValueError as exc:
            raise SourceError(f"--http {url}: {exc}", source=url) from exc
        found.append(logged_in_toolset(transport, settings, prompt))
    if not found:
        raise SourceError(
            "no MCP server given: name an mcpServers file, module:attribute naming an "
            "McpServer, --stdio or --http",
            source="",
        )
    return found


@contextlib.asynccontextmanager
async def _connected(
    terminal: Terminal, sources: Sequence[str], params: Mapping[str, Any]
) -> AsyncIterator[list[_Server]]:
    """The servers, each shut down when the block ends (their connections are made
    when first asked)."""
    servers = _servers(sources, params, login_prompt(terminal))
    chosen = params.get("server")
    if chosen is not None:
        servers = _named(servers, chosen)
    try:
        yield servers
    finally:
        for server in servers:
            with contextlib.suppress(Exception):  # the command's own error comes first
                await server.shutdown()


def _named(servers: list[_Server], name: str) -> list[_Server]:
    named = [server for server in servers if server.name == name]
    if not named:
        names = ", ".join(server.name for server in servers)
        raise CommandError(f"--server {name}: no such server (the servers: {names})")
    return named


async def _each(
    servers: Sequence[_Server], what: str, ask: Callable[[_Server], Any]
) -> list[tuple[_Server, list[Any]]]:
    """``ask`` of each server: its items (none from a server that does not offer
    ``what``)."""
    found = []
    for server in servers:
        try:
            found.append((server, list(await ask(server))))
        except (ToolCallError, MCPError) as exc:
            if _code(exc) == mt.METHOD_NOT_FOUND:
                found.append((server, []))  # it offers no such things
                continue
            raise _failed(server, what, exc) from exc
    return found


def _code(exc: BaseException) -> int | None:
    """The JSON-RPC error code of an MCP error (``McpToolset`` chains the SDK's)."""
    found: BaseException | None = exc
    while found is not None:
        if isinstance(found, MCPError):
            return found.code
        found = found.__cause__
    return None


def _failed(server: _Server, what: str, exc: BaseException) -> CommandError:
    if isinstance(exc, MCPError):
        return CommandError(f"{server.name}: {what}: error {exc.code}: {exc.message}")
    return CommandError(str(exc))


def _plain(item: Any, server: _Server, several: bool) -> dict[str, Any]:
    """An SDK model as MCP's JSON (its field names), with the server's name first when
    there are several."""
    dumped: dict[str, Any] = item.model_dump(mode="json", by_alias=True, exclude_none=True)
    return {"server": server.name, **dumped} if several else dumped


def _table(terminal: Terminal, headers: list[str], rows: list[list[str]], several: bool) -> None:
    """The rows, with the server column only when there are several servers."""
    if several:
        terminal.table(headers, rows)
    else:
        terminal.table(headers[1:], [row[1:] for row in rows])


def _clip(text: str | None) -> str:
    line = " ".join((text or "").split())
    return line if len(line) <= SHORT else line[: SHORT - 1] + "…"


_SERVER_HELP = """
\b
The servers: each of an mcpServers file (Claude Desktop, Cursor, VS Code), --stdio
"command args" and --http URL (repeatable), module:attribute naming an McpServer of your
own (spoken to in this process). --server NAME keeps one (a config file's name for it,
the --stdio command, the --http URL).
"""


def _server_options(function: Callable[..., Any]) -> Callable[..., Any]:
    decorators = [
        *mcp_server_options(),
        click.option("--server", metavar="NAME", help="Only the server of this name."),
        json_option,
        debug_option,
    ]
    for decorator in reversed(decorators):
        function = decorator(function)
    return function


# --- resources ---------------------------------------------------------------------------


@click.group(
    "resources",
    epilog="""
\b
Examples:
  toolsets resources list claude_desktop_config.json
  toolsets resources read --stdio "npx -y @modelcontextprotocol/server-everything" demo://resource/static/document/architecture.md
  toolsets resources read myapp.server:server file:///logo.png --output logo.png
""",
)
def resources_group() -> None:
    """List and read the resources of MCP servers."""


@resources_group.command("list", epilog=_SERVER_HELP)
@click.argument("sources", nargs=-1, metavar="SOURCE…")
@_server_options
def resources_list(sources: tuple[str, ...], as_json: bool, **params: Any) -> None:
    """List the resources and resource templates of every server: URI (or template),
    name, media type and description."""
    terminal = Terminal()

    async def go() -> None:
        async with (
            _connected(terminal, sources, params) as servers,
            terminal.progress("Listing the resources…"),
        ):
            listed = await _each(servers, "resources/list", lambda s: s.list_resources())
            templates = await _each(
                servers, "resources/templates/list", lambda s: s.list_resource_templates()
            )
        several = len(servers) > 1
        if as_json:
            terminal.result(
                {
                    "resources": [
                        _plain(item, server, several) for server, items in listed for item in items
                    ],
                    "resourceTemplates": [
                        _plain(item, server, several)
                        for server, items in templates
                        for item in items
                    ],
                }
            )
            return
        rows = [
            [server.name, str(item.uri), item.name, item.mime_type or "", _clip(item.description)]
            for server, items in listed
            for item in items
        ]
        rows += [
            [
                server.name,
                item.uri_template,
                item.name,
                item.mime_type or "",
                _clip(item.description),
            ]
            for server, items in templates
            for item in items
        ]
        count = sum(len(items) for _, items in listed)
        made = sum(len(items) for _, items in templates)
        if rows:
            _table(terminal, ["server", "uri", "name", "type", "description"], rows, several)
        terminal.note(
            f"{count} resource{'' if count == 1 else 's'}"
            + (f", {made} template{'' if made == 1 else 's'}" if made else "")
        )

    run_async(go)


@resources_group.command("read", epilog=_SERVER_HELP)
@click.argument("arguments", nargs=-1, required=True, metavar="SOURCE… URI")
@_server_options
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    help="Write the contents to this file (text as UTF-8, binary as it is).",
)
def resources_read(
    arguments: tuple[str, ...], as_json: bool, output: Path | None, **params: Any
) -> None:
    """Read one resource: its text on stdout (binary contents with --output FILE, or to
    a pipe; --json gives each content as MCP's JSON, binary as base64)."""
    *sources, uri = arguments
    terminal = Terminal()

    async def go() -> None:
        async with (
            _connected(terminal, sources, params) as servers,
            terminal.progress(f"Reading {uri}…"),
        ):
            server = await _owner(servers, uri)
            try:
                contents = await server.read_resource(uri)
            except (ToolCallError, MCPError) as exc:
                raise _failed(server, f"reading {uri}", exc) from exc
        if as_json:
            terminal.result({"contents": [_plain(c, server, False) for c in contents]})
            return
        data = [_bytes(content) for content in contents]
        if output is not None:
            await anyio.Path(output).write_bytes(b"".join(data))
            terminal.note(f"{uri}: {sum(map(len, data)):,} bytes written to {output}")
            return
        if any(isinstance(c, mt.BlobResourceContents) for c in contents) and sys.stdout.isatty():
            kinds = ", ".join(sorted({c.mime_type or "binary" for c in contents}))
            raise CommandError(
                f"{uri} is binary ({kinds}, {sum(map(len, data)):,} bytes): write it with "
                "--output FILE or to a pipe, or see it as base64 with --json"
            )
        out = sys.stdout.buffer
        for chunk in data:
            out.write(chunk)
        if (
            data
            and not data[-1].endswith(b"\n")
            and not any(isinstance(c, mt.BlobResourceContents) for c in contents)
        ):
            out.write(b"\n")
        out.flush()

    run_async(go)


def _bytes(content: mt.TextResourceContents | mt.BlobResourceContents) -> bytes:
    if isinstance(content, mt.TextResourceContents):
        return content.text.encode("utf-8")
    return base64.b64decode(content.blob)


async def _owner(servers: Sequence[_Server], uri: str) -> _Server:
    """The server ``uri`` belongs to: the only one, or the one that lists it, or whose
    template it fits (the longest fixed start).

    Raises:
        CommandError: none does, or several do (``--server`` says which).
    """
    if len(servers) == 1:
        return servers[0]
    listed = await _each(servers, "resources/list", lambda s: s.list_resources())
    owners = [server for server, items in listed if any(str(r.uri) == uri for r in items)]
    if not owners:
        templates = await _each(
            servers, "resources/templates/list", lambda s: s.list_resource_templates()
        )
        fits = [
            (len(start), server)
            for server, items in templates
            for item in items
            if (start := item.uri_template.split("{", 1)[0]) and uri.startswith(start)
        ]
        longest = max((length for length, _ in fits), default=0)
        owners = list(dict.fromkeys(server for length, server in fits if length == longest))
    names = ", ".join(server.name for server in servers)
    if not owners:
        raise CommandError(
            f"no server lists {uri} or has a template it fits: give --server NAME (the "
            f"servers: {names})"
        )
    if len(owners) > 1:
        raise CommandError(
            f"several servers offer {uri}: give --server NAME (the servers: {names})"
        )
    return owners[0]


# --- prompts -----------------------------------------------------------------------------


@click.group(
    "prompts",
    epilog="""
\b
Examples:
  toolsets prompts list claude_desktop_config.json
  toolsets prompts get --stdio "python server.py" review code='x = 1'
""",
)
def prompts_group() -> None:
    """List the prompts of MCP servers and get one, filled in."""


@prompts_group.command("list", epilog=_SERVER_HELP)
@click.argument("sources", nargs=-1, metavar="SOURCE…")
@_server_options
def prompts_list(sources: tuple[str, ...], as_json: bool, **params: Any) -> None:
    """List the prompts of every server: name, arguments (* required) and description."""
    terminal = Terminal()

    async def go() -> None:
        async with (
            _connected(terminal, sources, params) as servers,
            terminal.progress("Listing the prompts…"),
        ):
            listed = await _each(servers, "prompts/list", lambda s: s.list_prompts())
        several = len(servers) > 1
        if as_json:
            terminal.result(
                {"prompts": [_plain(p, server, several) for server, items in listed for p in items]}
            )
            return
        rows = [
            [server.name, prompt.name, _arguments(prompt), _clip(prompt.description)]
            for server, items in listed
            for prompt in items
        ]
        if rows:
            _table(terminal, ["server", "prompt", "arguments", "description"], rows, several)
        terminal.note(f"{len(rows)} prompt{'' if len(rows) == 1 else 's'}")

    run_async(go)


def _arguments(prompt: mt.Prompt) -> str:
    names = [f"{a.name}*" if a.required else a.name for a in prompt.arguments or ()]
    return _clip(", ".join(names))


@prompts_group.command("get", epilog=_SERVER_HELP)
@click.argument("arguments", nargs=-1, required=True, metavar="SOURCE… NAME [KEY=VALUE…]")
@_server_options
def prompts_get(arguments: tuple[str, ...], as_json: bool, **params: Any) -> None:
    """Get one prompt filled in with its arguments (KEY=VALUE, each a string): its
    messages, each under its role (--json: MCP's JSON of the result)."""
    words = list(arguments)
    given: list[str] = []
    while words and _is_pair(words[-1]):
        given.insert(0, words.pop())
    if not words:
        raise click.UsageError("prompts get needs the NAME of a prompt")
    *sources, name = words
    values = pairs(given, "KEY=VALUE")
    terminal = Terminal()

    async def go() -> None:
        async with (
            _connected(terminal, sources, params) as servers,
            terminal.progress(f"Getting the prompt {name}…"),
        ):
            server = await _prompt_owner(servers, name)
            try:
                result = await server.get_prompt(name, values)
            except (ToolCallError, MCPError) as exc:
                raise _failed(server, f"the prompt {name}", exc) from exc
        if as_json:
            terminal.result(_plain(result, server, False))
            return
        for index, message in enumerate(result.messages):
            if index:
                terminal.line("")
            terminal.line(f"{message.role}:")
            terminal.line(_shown(message.content))

    run_async(go)


def _is_pair(word: str) -> bool:
    key, sep, _ = word.partition("=")
    return bool(sep) and bool(key) and "/" not in key and ":" not in key


async def _prompt_owner(servers: Sequence[_Server], name: str) -> _Server:
    if len(servers) == 1:
        return servers[0]
    listed = await _each(servers, "prompts/list", lambda s: s.list_prompts())
    owners = [server for server, items in listed if any(p.name == name for p in items)]
    names = ", ".join(server.name for server in servers)
    if len(owners) != 1:
        said = "no server offers" if not owners else "several servers offer"
        raise CommandError(f"{said} a prompt {name!r}: give --server NAME (the servers: {names})")
    return owners[0]


def _shown(content: mt.ContentBlock) -> str:
    """A message's content as text: its text, or what it is."""
    if isinstance(content, mt.TextContent):
        return content.text
    if isinstance(content, mt.ImageContent | mt.AudioContent):
        size = len(base64.b64decode(content.data))
        return f"[{content.type}: {content.mime_type}, {size:,} bytes]"
    if isinstance(content, mt.EmbeddedResource):
        inner = content.resource
        if isinstance(inner, mt.TextResourceContents):
            return f"[resource {inner.uri}]\n{inner.text}"
        return f"[resource {inner.uri}: {inner.mime_type or 'binary'}]"
    return f"[link to {content.uri}]"  # a ResourceLink
