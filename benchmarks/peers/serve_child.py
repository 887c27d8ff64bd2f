"""A server of benchmarks/serve.py over stdio other than ``toolsets serve`` itself.

Run: python serve_child.py CONTENDER SPEC_PATH BASE_URL [PORT]
(CONTENDER: ``fastmcp``, the spec served by ``FastMCP.from_openapi``; ``fastmcp-http``,
the same over streamable HTTP on PORT of 127.0.0.1; ``sdk``, the ``mcp``
SDK's low-level server listing the pages of tools in the JSON file SPEC_PATH names (as
another server listed them) and one more tool that answers at once; ``sdk+run``, that
server listing only the spec's ``repos/get``, called with `RestApiTool.run`: what any
server on the SDK costs, with nothing of toolsets' server. Run by the benchmark with the
contender's Python. Nothing but the protocol goes to stdout.)
"""

from __future__ import annotations

import json
import sys


def sdk(spec_path: str, base_url: str, *, run: bool = False) -> None:
    """The SDK's low-level server listing the pages of tools in the file ``spec_path``
    and ``echo``, which answers ``{}`` at once; or (``run``) ``repos/get`` as toolsets
    lists it, answered by `RestApiTool.run` with the result as structured content and
    as JSON text (as MCP asks), nothing else. It loads as ``toolsets serve`` does: the
    garbage collector paused until it serves, what is loaded then frozen."""
    import gc
    from typing import Any

    gc.disable()

    import anyio
    import mcp.types as mt
    from mcp.server.lowlevel.server import Server
    from mcp.server.stdio import stdio_server

    echo = mt.Tool(name="echo", input_schema={"type": "object"})
    pages: list[list[mt.Tool]] = [[]]
    if not run:
        with open(spec_path, encoding="utf-8") as file:
            pages = [[mt.Tool.model_validate(t) for t in page] for page in json.load(file)]
    pages[-1].append(echo)
    gc.freeze()
    gc.enable()

    async def serve() -> None:
        nonlocal pages
        tool: Any = None
        if run:
            from toolsets import ToolContext
            from toolsets.mcp._convert import tool_to_mcp
            from toolsets.openapi import OpenApiToolset

            toolset = OpenApiToolset(spec_path, base_url=base_url)
            tool = await toolset.get_tool("repos/get")
            made = tool_to_mcp(tool)
            assert made is not None
            pages = [[made]]

        async def list_tools(ctx: Any, params: Any) -> mt.ListToolsResult:
            at = int(params.cursor) if params is not None and params.cursor else 0
            after = str(at + 1) if at + 1 < len(pages) else None
            return mt.ListToolsResult(tools=pages[at], next_cursor=after)

        async def call_tool(ctx: Any, params: mt.CallToolRequestParams) -> mt.CallToolResult:
            if tool is None:
                return mt.CallToolResult(content=[mt.TextContent(text="{}")], structured_content={})
            result = await tool.run(params.arguments or {}, ToolContext())
            text = json.dumps(result, ensure_ascii=False)
            return mt.CallToolResult(content=[mt.TextContent(text=text)], structured_content=result)

        server: Server[Any] = Server("sdk", on_list_tools=list_tools, on_call_tool=call_tool)
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(serve)


def fastmcp(spec_path: str, base_url: str, port: int | None = None) -> None:
    """``FastMCP.from_openapi`` over stdio, or over streamable HTTP on ``port`` of
    127.0.0.1 (benchmarks/serve_load.py)."""
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
    if port is None:
        server.run(transport="stdio", show_banner=False)
    else:
        server.run(
            transport="http", host="127.0.0.1", port=port, show_banner=False, log_level="warning"
        )


if __name__ == "__main__":
    contender, spec_path, base_url = sys.argv[1:4]
    if contender == "fastmcp":
        fastmcp(spec_path, base_url)
    elif contender == "fastmcp-http":
        fastmcp(spec_path, base_url, int(sys.argv[4]))
    else:
        sdk(spec_path, base_url, run=contender == "sdk+run")
