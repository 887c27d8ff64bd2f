"""The ``{"mcpServers": {...}}`` config files of desktop apps and IDEs, as one toolset."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from toolsets._errors import SpecError
from toolsets._toolset import BaseToolset
from toolsets._wrappers import combined, prefixed
from toolsets.mcp._toolset import McpToolset
from toolsets.mcp._transports import Stdio, StreamableHttp, Transport

__all__ = ["load_mcp_config", "read_mcp_config"]

_VARIABLE = re.compile(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)\}")
_HTTP_TYPES = {None, "http", "streamable-http", "streamableHttp", "streamable_http"}
_ILLEGAL_PREFIX = re.compile(r"[^A-Za-z0-9_-]")


def _pointer(*parts: str) -> str:
    return "".join("/" + p.replace("~", "~0").replace("/", "~1") for p in parts)


def _expand(value: Any, pointer: str, source: str | None) -> Any:
    """``${VAR}`` and ``${env:VAR}`` replaced from the environment."""
    if isinstance(value, str):

        def lookup(match: re.Match[str]) -> str:
            name = match.group(1)
            if name not in os.environ:
                raise SpecError(
                    f"the environment variable {name} is not set", pointer=pointer, source=source
                )
            return os.environ[name]

        return _VARIABLE.sub(lookup, value)
    if isinstance(value, list):
        return [_expand(v, f"{pointer}/{i}", source) for i, v in enumerate(value)]
    if isinstance(value, dict):
        return {k: _expand(v, pointer + _pointer(k), source) for k, v in value.items()}
    return value


def _strings(value: Any, pointer: str, source: str | None, what: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise SpecError(f"{what} must map names to strings", pointer=pointer, source=source)
    return dict(value)


def _transport(name: str, entry: Any, root: str, source: str | None) -> Transport | None:
    where = root + _pointer(name)
    if not isinstance(entry, dict):
        raise SpecError("a server entry must be an object", pointer=where, source=source)
    if entry.get("disabled") is True:
        return None
    entry = _expand(entry, where, source)
    if "command" in entry:
        command = entry["command"]
        args = entry.get("args", [])
        if not isinstance(command, str) or not command:
            raise SpecError(
                "command must be a non-empty string", pointer=where + "/command", source=source
            )
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise SpecError(
                "args must be a list of strings", pointer=where + "/args", source=source
            )
        cwd = entry.get("cwd")
        if cwd is not None and not isinstance(cwd, str):
            raise SpecError("cwd must be a string", pointer=where + "/cwd", source=source)
        env = _strings(entry.get("env"), where + "/env", source, "env")
        return Stdio(command=command, args=args, env=env or None, cwd=cwd)
    if "url" in entry:
        kind = entry.get("type", entry.get("transport"))
        if kind not in _HTTP_TYPES:
            raise SpecError(
                f"transport {kind!r} is not supported (use streamable HTTP or a command)",
                pointer=where + ("/type" if "type" in entry else "/transport"),
                source=source,
            )
        url = entry["url"]
        headers = _strings(entry.get("headers"), where + "/headers", source, "headers")
        try:
            return StreamableHttp(url=url, headers=headers)
        except ValueError as exc:
            raise SpecError(str(exc), pointer=where + "/url", source=source) from exc
    raise SpecError("a server needs a command or a url", pointer=where, source=source)


def read_mcp_config(source: str | Path | Mapping[str, Any]) -> dict[str, Transport]:
    """The servers of a config file (or its parsed content): name → transport.

    Reads the ``mcpServers`` key (Claude Desktop, Cursor, ...) or ``servers`` (VS Code).
    ``${VAR}`` and ``${env:VAR}`` in values come from the environment; entries with
    ``"disabled": true`` are left out.

    Raises:
        SpecError: the file cannot be read or an entry is wrong (``.pointer`` names it).
    """
    origin: str | None = None
    if isinstance(source, str | Path):
        origin = str(source)
        try:
            document = json.loads(Path(source).read_text(encoding="utf-8"))
        except OSError as exc:
            raise SpecError(f"cannot read the config: {exc}", source=origin) from exc
        except json.JSONDecodeError as exc:
            raise SpecError(
                f"not JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})", source=origin
            ) from exc
    else:
        document = source
    if not isinstance(document, Mapping):
        raise SpecError("the config must be a JSON object", source=origin)
    key = "mcpServers" if "mcpServers" in document else "servers"
    servers = document.get(key)
    if not isinstance(servers, Mapping):
        raise SpecError("no mcpServers (or servers) object", pointer=_pointer(key), source=origin)
    transports: dict[str, Transport] = {}
    for name, entry in servers.items():
        transport = _transport(name, entry, _pointer(key), origin)
        if transport is not None:
            transports[name] = transport
    return transports


def load_mcp_config(
    source: str | Path | Mapping[str, Any], *, prefix: bool = True, **options: Any
) -> BaseToolset:
    """Every server of a config file as one toolset: each an `McpToolset` (with
    ``options``), its tools prefixed with the server's name (``github_create_issue``),
    so that names never collide across servers. As for `McpToolset`, calls of tools a
    server does not mark read-only or non-destructive wait for the user's approval in an
    agent unless ``confirm="never"`` is passed.

    Raises:
        SpecError: the config is wrong (``.pointer`` names the entry).
    """
    toolsets = []
    for name, transport in read_mcp_config(source).items():
        toolset = McpToolset(transport, name=name, **options)
        label = _ILLEGAL_PREFIX.sub("_", name) or "server"
        toolsets.append(prefixed(toolset, label) if prefix else toolset)
    return combined(*toolsets)
