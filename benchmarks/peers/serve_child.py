"""One contender of benchmarks/serve.py: an OpenAPI spec served as an MCP server over stdio.

Run: python serve_child.py CONTENDER SPEC_PATH BASE_URL
(CONTENDER: ours or fastmcp; run by the benchmark with the contender's Python. Nothing but
the protocol goes to stdout.)
"""

from __future__ import annotations

import json
import sys


def ours(spec_path: str, base_url: str) -> None:
    import anyio

    from toolsets.mcp import McpServer
    from toolsets.openapi import OpenApiToolset

    server = McpServer(OpenApiToolset(spec_path, base_url=base_url))
    anyio.run(server.run_stdio)


def fastmcp(spec_path: str, base_url: str) -> None:
    import httpx2
    import yaml
    from fastmcp import FastMCP

    with open(spec_path, encoding="utf-8") as file:
        text = file.read()
    if spec_path.endswith((".yaml", ".yml")):
        spec = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    else:
        spec = json.loads(text)
    client = httpx2.AsyncClient(base_url=base_url, timeout=30.0)
    server = FastMCP.from_openapi(openapi_spec=spec, client=client)
    server.run(transport="stdio", show_banner=False)


if __name__ == "__main__":
    contender, spec_path, base_url = sys.argv[1:4]
    {"ours": ours, "fastmcp": fastmcp}[contender](spec_path, base_url)
