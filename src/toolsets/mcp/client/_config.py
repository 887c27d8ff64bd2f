"""The ``{"mcpServers": {...}}`` config files of desktop apps and IDEs, as one toolset."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeAlias
from urllib.parse import urlsplit

from toolsets._errors import SpecError
from toolsets._jsonschema import join_pointer
from toolsets._names import PREFIX_NAMES
from toolsets._toolset import BaseToolset
from toolsets._wrappers import combined, prefixed
from toolsets.mcp.client._toolset import McpToolset
from toolsets.mcp.client._transports import Sse, Stdio, StreamableHttp, Transport

__all__ = ["InputValues", "load_mcp_config", "read_mcp_config"]

_VARIABLE = re.compile(r"\$\{([^{}]*)\}")
_ENV_NAME = re.compile(r"(?:env:)?([A-Za-z_][A-Za-z0-9_]*)")

InputValues: TypeAlias = "Mapping[str, str] | Callable[[str, Mapping[str, Any]], str]"
"""Values for VS Code's ``${input:ID}`` variables: by id, or a function of the id and the
input's definition in the file's ``inputs`` list (``description``, ``password``, ...;
empty when the file does not define it), e.g. one that asks the user."""
_HTTP_TYPES = {None, "http", "streamable-http", "streamableHttp", "streamable_http"}


@dataclass(frozen=True)
class _Variables:
    """What ``${...}`` in a config's values may stand for."""

    source: str | None
    inputs: InputValues | None
    definitions: Mapping[str, Mapping[str, Any]]
    """The file's ``inputs`` list, by id."""

    def value(self, variable: str, pointer: str) -> str:
        env = _ENV_NAME.fullmatch(variable)
        if env is not None:
            name = env.group(1)
            if name not in os.environ:
                raise SpecError(
                    f"the environment variable {name} is not set",
                    pointer=pointer,
                    source=self.source,
                )
            return os.environ[name]
        if variable.startswith("input:"):
            return self._input(variable.removeprefix("input:"), pointer)
        raise SpecError(
            f"${{{variable}}} is not a variable toolsets can expand (it knows ${{VAR}}, "
            "${env:VAR} and ${input:ID})",
            pointer=pointer,
            source=self.source,
        )

    def _input(self, name: str, pointer: str) -> str:
        inputs = self.inputs
        value: object = None
        if callable(inputs):
            value = inputs(name, self.definitions.get(name, {}))
        elif inputs is not None:
            value = inputs.get(name)
        if value is None:
            raise SpecError(
                f"${{input:{name}}} needs a value: pass inputs= (a mapping, or a function "
                "that asks the user) to read_mcp_config or load_mcp_config",
                pointer=pointer,
                source=self.source,
            )
        if not isinstance(value, str):
            raise SpecError(
                f"the value given for ${{input:{name}}} is not a string",
                pointer=pointer,
                source=self.source,
            )
        return value

    def expand(self, value: Any, pointer: str) -> Any:
        """``value`` with every ``${...}`` replaced; one that cannot be is a `SpecError`
        naming where it is (never sent as it is)."""
        if isinstance(value, str):
            return _VARIABLE.sub(lambda match: self.value(match.group(1), pointer), value)
        if isinstance(value, list):
            return [self.expand(v, f"{pointer}/{i}") for i, v in enumerate(value)]
        if isinstance(value, dict):
            return {k: self.expand(v, join_pointer(pointer, k)) for k, v in value.items()}
        return value


def _definitions(document: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """VS Code's ``inputs`` list, by id (entries that are not objects with an id are
    left out: they define nothing a value could be asked for)."""
    listed = document.get("inputs")
    if not isinstance(listed, list):
        return {}
    return {
        entry["id"]: entry
        for entry in listed
        if isinstance(entry, Mapping) and isinstance(entry.get("id"), str)
    }


def _strings(value: Any, pointer: str, source: str | None, what: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise SpecError(f"{what} must map names to strings", pointer=pointer, source=source)
    return dict(value)


def _transport(name: str, entry: Any, root: str, variables: _Variables) -> Transport | None:
    source = variables.source
    where = join_pointer(root, name)
    if not isinstance(entry, dict):
        raise SpecError("a server entry must be an object", pointer=where, source=source)
    if entry.get("disabled") is True:
        return None
    entry = variables.expand(entry, where)
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
        if kind not in _HTTP_TYPES and kind != "sse":
            raise SpecError(
                f"transport {kind!r} is not supported (use streamable HTTP, sse or a command)",
                pointer=where + ("/type" if "type" in entry else "/transport"),
                source=source,
            )
        url = entry["url"]
        if not isinstance(url, str):
            raise SpecError("url must be a string", pointer=where + "/url", source=source)
        headers = _strings(entry.get("headers"), where + "/headers", source, "headers")
        if kind is None and urlsplit(url).path.rstrip("/").endswith("/sse"):
            kind = "sse"  # Cursor's entries give no type; an /sse endpoint speaks SSE
        try:
            if kind == "sse":
                return Sse(url=url, headers=headers)
            return StreamableHttp(url=url, headers=headers)
        except ValueError as exc:
            raise SpecError(str(exc), pointer=where + "/url", source=source) from exc
    raise SpecError("a server needs a command or a url", pointer=where, source=source)


def read_mcp_config(
    source: str | Path | Mapping[str, Any], *, inputs: InputValues | None = None
) -> dict[str, Transport]:
    """The servers of a config file (or its parsed content): name → transport.

    Reads the ``mcpServers`` key (Claude Desktop, Cursor, ...) or ``servers`` (VS Code).
    A ``url`` entry is streamable HTTP unless its ``type`` is ``"sse"`` (or it has no
    type and its path ends in ``/sse``, as in Cursor's files): then MCP's older HTTP+SSE.
    ``${VAR}`` and ``${env:VAR}`` in values come from the environment, VS Code's
    ``${input:ID}`` from ``inputs``; any other ``${...}``, or one without a value, is a
    `SpecError` naming where it is, never sent as it is. Entries with
    ``"disabled": true`` are left out.

    Args:
        source: A path, or the parsed content.
        inputs: Values for ``${input:ID}``: by id, or a function of the id and the
            input's definition in the file (e.g. one that asks the user).

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
        raise SpecError(
            "no mcpServers (or servers) object", pointer=join_pointer("", key), source=origin
        )
    variables = _Variables(origin, inputs, _definitions(document))
    transports: dict[str, Transport] = {}
    for name, entry in servers.items():
        transport = _transport(name, entry, join_pointer("", key), variables)
        if transport is not None:
            transports[name] = transport
    return transports


def load_mcp_config(
    source: str | Path | Mapping[str, Any],
    *,
    prefix: bool = True,
    inputs: InputValues | None = None,
    **options: Any,
) -> BaseToolset:
    """Every server of a config file as one toolset: each an `McpToolset` (with
    ``options``), its tools prefixed with the server's name (``github_create_issue``),
    so that names never collide across servers. As for `McpToolset`, calls of tools a
    server does not mark read-only or non-destructive wait for the user's approval in an
    agent unless ``confirm="never"`` is passed.

    ``inputs`` gives the values of VS Code's ``${input:ID}`` (see `read_mcp_config`).

    Raises:
        SpecError: the config is wrong (``.pointer`` names the entry).
    """
    toolsets = []
    for name, transport in read_mcp_config(source, inputs=inputs).items():
        toolset = McpToolset(transport, name=name, **options)
        label = PREFIX_NAMES.legal(name)
        toolsets.append(prefixed(toolset, label) if prefix else toolset)
    return combined(*toolsets)
