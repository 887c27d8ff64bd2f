"""The providers' tool search against the local one, for a huge catalogue: what
`AnthropicModel` and `OpenAIResponsesModel` send at each step of a run over
``searchable(OpenApiToolset(github))``, and how long it takes to make, side by side.

Run: python benchmarks/tool_search.py [--steps N]

The catalogue is GitHub's REST API (``@octokit/openapi``'s ``api.github.com.json``,
1,223 operations, installed in ``peers/``). Nothing is sent: each step is the model's
translation of the request the agent loop prepares (``_translate``), which runs on the
event loop.

Columns:
  search       ``anthropic``: ``AnthropicModel(tool_search="bm25")`` (every tool
               deferred, the search tool sent); ``openai``:
               ``OpenAIResponsesModel(tool_search="server")`` (the same, with OpenAI's
               hosted ``tool_search``); ``…-local``: ``tool_search=None``
               (``search_tools`` and the loaded tools, as for any model);
  tools        entries in the request's ``tools``;
  body KB      the request body as compact JSON (what the model pays for is the tools
               not deferred, and those a search found);
  first ms     the first step's translation (declarations made and converted);
  next ms      the median of the next steps' (the same catalogue: kept from the first).
Timings on a small shared machine vary by a third from run to run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

import anyio

from toolsets import LlmRequest, ToolContext, searchable
from toolsets.models import AnthropicModel, OpenAIResponsesModel
from toolsets.openapi import OpenApiToolset

GITHUB = (
    Path(__file__).parent.parent
    / "peers/node_modules/@octokit/openapi/generated/api.github.com.json"
)


async def _request(toolset: Any, ctx: ToolContext) -> LlmRequest:
    request = LlmRequest()
    for listed in await toolset.list_tools(ctx):
        await listed.process_llm_request(request, ctx)
    return request


async def _measure(search: str, steps: int) -> tuple[int, int, float, float]:
    toolset = searchable(OpenApiToolset(GITHUB))
    ctx = ToolContext()
    model: AnthropicModel | OpenAIResponsesModel
    if search.startswith("anthropic"):
        option: Any = None if search.endswith("-local") else "bm25"
        model = AnthropicModel("claude-sonnet-4-5", api_key="unused", tool_search=option)
    else:
        option = None if search.endswith("-local") else "server"
        model = OpenAIResponsesModel("gpt-5.4", api_key="unused", tool_search=option)
    times: list[float] = []
    body: dict[str, Any] = {}
    for _ in range(steps):
        request = await _request(toolset, ctx)
        start = time.perf_counter()
        body, _ = model._translate(request)
        times.append(time.perf_counter() - start)
    await model.aclose()
    size = len(json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode())
    return len(body.get("tools", [])), size, times[0], statistics.median(times[1:])


async def main(steps: int) -> None:
    print(f"{'search':<16} {'tools':>6} {'body KB':>8} {'first ms':>9} {'next ms':>8}")
    for search in ("anthropic", "anthropic-local", "openai", "openai-local"):
        tools, size, first, later = await _measure(search, steps)
        print(
            f"{search:<16} {tools:>6} {size / 1024:>8.0f} {first * 1e3:>9.1f} {later * 1e3:>8.2f}"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=20, help="steps of a run (default 20)")
    anyio.run(main, parser.parse_args().steps)
