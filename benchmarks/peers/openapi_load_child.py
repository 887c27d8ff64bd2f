"""One contender of benchmarks/openapi_load.py loads an OpenAPI spec and makes every
declaration, in a process of its own; prints one JSON line.

Run: python openapi_load_child.py CONTENDER SPEC_PATH MEMORY_LIMIT_BYTES
(CONTENDER: ours, google-adk or fastmcp; run by the benchmark with the contender's Python.)
"""

from __future__ import annotations

import json
import resource
import sys
import time
from collections.abc import Awaitable, Callable
from importlib.metadata import version
from typing import Any

import anyio

Contender = tuple[str, Callable[[], Awaitable[list[Any]]], Callable[[Any], dict[str, Any]]]
"""Its version, the load (returns the declarations) and a declaration as JSON."""


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def read_text(spec_path: str) -> str:
    with open(spec_path, encoding="utf-8") as file:
        return file.read()


def ours(spec_path: str) -> Contender:
    from toolsets.openapi import OpenApiToolset

    async def load() -> list[Any]:
        toolset = OpenApiToolset(spec_path)
        tools = await toolset.list_tools()
        return [d for d in (t.declaration() for t in tools) if d is not None]

    def dump(d: Any) -> dict[str, Any]:
        return {"name": d.name, "description": d.description, "parameters": d.parameters}

    return version("toolsets-ai"), load, dump


def google_adk(spec_path: str) -> Contender:
    from google.adk.tools.openapi_tool.openapi_spec_parser.openapi_toolset import (
        OpenAPIToolset,
    )

    is_yaml = spec_path.endswith((".yaml", ".yml"))

    async def load() -> list[Any]:
        text = read_text(spec_path)
        toolset = OpenAPIToolset(spec_str=text, spec_str_type="yaml" if is_yaml else "json")
        tools = await toolset.get_tools()
        return [t._get_declaration() for t in tools]

    def dump(d: Any) -> dict[str, Any]:
        data = d.model_dump(mode="json", exclude_none=True)
        parameters = data.get("parameters_json_schema", data.get("parameters"))
        return {"name": d.name, "description": d.description, "parameters": parameters}

    return version("google-adk"), load, dump


def fastmcp(spec_path: str) -> Contender:
    import fastmcp.server.providers.openapi  # noqa: F401 (from_openapi imports it on first use)
    import httpx2
    import yaml
    from fastmcp import FastMCP

    is_yaml = spec_path.endswith((".yaml", ".yml"))
    client = httpx2.AsyncClient(base_url="http://127.0.0.1")

    async def load() -> list[Any]:
        text = read_text(spec_path)
        if is_yaml:
            spec = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        else:
            spec = json.loads(text)
        server = FastMCP.from_openapi(openapi_spec=spec, client=client)
        tools = await server.list_tools()
        return [t.to_mcp_tool() for t in tools]

    def dump(d: Any) -> dict[str, Any]:
        schema = getattr(d, "input_schema", None) or getattr(d, "inputSchema", None)
        return {"name": d.name, "description": d.description, "parameters": schema}

    return version("fastmcp"), load, dump


CONTENDERS: dict[str, Callable[[str], Contender]] = {
    "ours": ours,
    "google-adk": google_adk,
    "fastmcp": fastmcp,
}


async def main() -> None:
    contender, spec_path, memory_limit = sys.argv[1], sys.argv[2], int(sys.argv[3])
    resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))
    start = time.perf_counter()
    try:
        release, load, dump = CONTENDERS[contender](spec_path)
    except ImportError as exc:
        print(json.dumps({"error": f"not available ({type(exc).__name__}: {exc})"}))
        return
    import_s = time.perf_counter() - start
    imports_mb = peak_mb()
    try:
        start = time.perf_counter()
        decls = await load()
        seconds = time.perf_counter() - start
        peak = peak_mb()
        decl_bytes = len(json.dumps([dump(d) for d in decls], separators=(",", ":")))
    except MemoryError:
        gb = memory_limit / 2**30
        print(json.dumps({"error": f"out of memory (MemoryError at the {gb:g} GB limit)"}))
        return
    print(
        json.dumps(
            {
                "version": release,
                "tools": len(decls),
                "seconds": seconds,
                "import_s": import_s,
                "peak_mb": peak,
                "imports_mb": imports_mb,
                "decl_mb": decl_bytes / 1e6,
            }
        )
    )


if __name__ == "__main__":
    anyio.run(main)
