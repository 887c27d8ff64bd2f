"""`searchable`: the model finds tools with ``search_tools``, which loads them for its
session; judged through the agent loop, and over GitHub's real spec against a local
HTTP server."""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import AsyncIterator, Mapping
from typing import Any

import anyio
import pytest
from fixtures.mcp.searchable_server import (
    delete_file,
    get_weather,
    refund_payment,
    send_email,
    star_repository,
)
from fixtures.openapi.synthetic import synthetic_spec
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tests.agent.helpers import agent_with, approve, asked_to_confirm, response_of, start
from tests.helpers import PEERS
from tests.mcp.helpers import eventually
from toolsets import (
    BaseTool,
    FunctionCall,
    Invocation,
    JsonValue,
    LlmRequest,
    StaticToolset,
    ToolContext,
    ToolDefinitionError,
    renamed,
    searchable,
    tool,
)
from toolsets._install import install_line
from toolsets.agent import LlmAgent, Runner
from toolsets.models import ScriptedModel
from toolsets.openapi import OpenApiToolset
from toolsets.openapi._toolset import EAGER_OPERATIONS
from toolsets.search import SEARCH_TOOL_NAME, HiddenTool, SearchableToolset

pytestmark = pytest.mark.anyio

GITHUB = PEERS / "@octokit" / "openapi" / "generated" / "api.github.com.json"


def translate_text(text: str, language: str) -> str:
    """Translate a text into another language."""
    return f"{text} ({language})"


def catalogue() -> StaticToolset:
    return StaticToolset(
        [send_email, refund_payment, star_repository, get_weather, translate_text, delete_file]
    )


def offered(tools: Any) -> list[str]:
    """The names of the tools a listing offers a model (those with a declaration)."""
    return [t.name for t in tools if t.declaration() is not None]


class Session:
    """One session's state, as the agent loop keeps it: each call's writes applied."""

    def __init__(self, toolset: SearchableToolset) -> None:
        self.toolset = toolset
        self.state: dict[str, Any] = {}

    def context(self) -> ToolContext:
        return ToolContext(Invocation(session_id="s", state=dict(self.state)))

    async def offered(self) -> list[str]:
        return offered(await self.toolset.list_tools(self.context()))

    async def call(self, name: str, **args: Any) -> JsonValue:
        tools = {t.name: t for t in await self.toolset.list_tools(self.context())}
        ctx = self.context().for_call("c")
        result = await tools[name].run(args, ctx)
        self.state.update(ctx.actions.state_delta)
        return result


# --- the agent loop ------------------------------------------------------------------------


async def test_the_model_sees_only_the_search_tool_and_a_search_loads_its_matches_for_the_next_request() -> (  # noqa: E501
    None
):
    runner, model = agent_with(
        [
            FunctionCall(id="s", name=SEARCH_TOOL_NAME, args={"query": "refund a payment"}),
            FunctionCall(id="r", name="refund_payment", args={"payment_id": "pay_1"}),
            "done",
        ],
        [searchable(catalogue(), max_loaded=3)],
    )
    _, events = await start(runner, "give the customer their money back")
    found = response_of(events, SEARCH_TOOL_NAME)
    assert isinstance(found, dict)
    matches = found["matches"]
    assert isinstance(matches, list)
    assert matches
    first = matches[0]
    assert isinstance(first, dict)
    assert first["name"] == "refund_payment"
    assert first["summary"]
    assert first["why"]
    assert list(model.requests[0].declarations) == [SEARCH_TOOL_NAME]
    assert "refund_payment" in model.requests[1].declarations
    assert response_of(events, "refund_payment") == "refunded pay_1"


async def test_two_searches_in_one_model_turn_both_load_their_matches() -> None:
    runner, model = agent_with(
        [
            [
                FunctionCall(id="a", name=SEARCH_TOOL_NAME, args={"query": "refund a payment"}),
                FunctionCall(id="b", name=SEARCH_TOOL_NAME, args={"query": "weather forecast"}),
                FunctionCall(id="c", name="delete_file", args={"path": "/tmp/x"}),
            ],
            "done",
        ],
        [searchable(catalogue(), results=1)],
    )
    await start(runner, "refund, weather, and tidy up")
    offered = list(model.requests[1].declarations)
    assert offered == [SEARCH_TOOL_NAME, "refund_payment", "get_weather", "delete_file"]


async def test_a_tool_not_loaded_can_be_called_by_name_and_the_call_loads_it() -> None:
    runner, model = agent_with(
        [
            FunctionCall(id="w", name="get_weather", args={"city": "Paris"}),
            "done",
        ],
        [searchable(catalogue())],
    )
    _, events = await start(runner, "weather in Paris?")
    assert response_of(events, "get_weather") == "sunny in Paris"
    assert list(model.requests[0].declarations) == [SEARCH_TOOL_NAME]
    assert list(model.requests[1].declarations) == [SEARCH_TOOL_NAME, "get_weather"]


async def test_a_tool_not_loaded_that_needs_confirmation_pauses_and_runs_once_approved() -> None:
    wiped: list[str] = []

    @tool(requires_confirmation=True)
    def wipe_disk(disk: str) -> str:
        """Erase a whole disk."""
        wiped.append(disk)
        return f"{disk} wiped"

    runner, model = agent_with(
        [FunctionCall(id="w", name="wipe_disk", args={"disk": "sda"}), "done"],
        [searchable(StaticToolset([wipe_disk, get_weather]))],
    )
    session, events = await start(runner, "wipe sda")
    assert wiped == []
    resumed = await approve(runner, session, asked_to_confirm(events))
    assert response_of(resumed, "wipe_disk") == "sda wiped"
    assert wiped == ["sda"]
    assert "wipe_disk" in model.requests[-1].declarations


async def test_a_name_no_tool_has_gets_the_unknown_tool_error() -> None:
    runner, _ = agent_with(
        [FunctionCall(id="x", name="launch_rocket", args={}), "done"],
        [searchable(catalogue())],
    )
    _, events = await start(runner, "launch")
    answer = response_of(events, "launch_rocket")
    assert isinstance(answer, dict)
    assert "launch_rocket" in str(answer["error"])


async def test_loaded_tools_stay_loaded_in_the_session_for_its_next_messages() -> None:
    runner, model = agent_with(
        [
            FunctionCall(id="s", name=SEARCH_TOOL_NAME, args={"query": "translate text"}),
            "found it",
            "second message",
        ],
        [searchable(catalogue(), max_loaded=1)],
    )
    session, _ = await start(runner, "find a translator")
    with anyio.fail_after(30):
        async for _ in runner.run(user_id="u", session_id=session, message="again"):
            pass
    assert list(model.requests[-1].declarations) == [SEARCH_TOOL_NAME, "translate_text"]


async def test_a_hidden_tool_called_with_invalid_arguments_is_refused_before_asking_to_confirm() -> (  # noqa: E501
    None
):
    from toolsets._invoke import ConfirmationNeeded, Done, invoke

    @tool(requires_confirmation=True)
    async def delete_repo(owner: str, repo: str) -> str:
        """Delete a repository."""
        return f"deleted {owner}/{repo}"

    toolset = searchable(StaticToolset([delete_repo, get_weather]))
    listed = {t.name: t for t in await toolset.list_tools(ToolContext())}
    hidden = listed["delete_repo"]
    assert isinstance(hidden, HiddenTool)
    ctx = ToolContext(function_call_id="c")
    refused = await invoke(hidden, {"owner": 3}, ctx, default_timeout=5)
    assert isinstance(refused, Done)
    assert isinstance(refused.result, dict)
    assert set(refused.result["fields"]) == {"owner", "repo"}  # type: ignore[arg-type]
    valid = {"owner": "o", "repo": "r"}
    asked = await invoke(hidden, valid, ToolContext(function_call_id="d"), default_timeout=5)
    assert isinstance(asked, ConfirmationNeeded)


async def test_a_hidden_tool_called_with_invalid_arguments_is_refused_before_asking_a_credential() -> (  # noqa: E501
    None
):
    from toolsets import AuthConfig
    from toolsets._invoke import CredentialNeeded, Done, invoke

    @tool(auth_config=AuthConfig(scheme_name="api_key"))
    async def charge(amount: int) -> str:
        """Charge an amount."""
        return f"charged {amount}"

    toolset = searchable(StaticToolset([charge, get_weather]))
    listed = {t.name: t for t in await toolset.list_tools(ToolContext())}
    hidden = listed["charge"]
    assert isinstance(hidden, HiddenTool)
    refused = await invoke(hidden, {"amount": "ten"}, ToolContext(), default_timeout=5)
    assert isinstance(refused, Done)
    assert isinstance(refused.result, dict)
    assert set(refused.result["fields"]) == {"amount"}  # type: ignore[arg-type]
    asked = await invoke(hidden, {"amount": 10}, ToolContext(), default_timeout=5)
    assert isinstance(asked, CredentialNeeded)


# --- loading, bounded ----------------------------------------------------------------------


async def test_at_most_max_loaded_tools_stay_loaded_the_least_recently_used_dropped_first() -> None:
    session = Session(searchable(catalogue(), max_loaded=2, results=1))
    await session.call(SEARCH_TOOL_NAME, query="send an email")
    await session.call(SEARCH_TOOL_NAME, query="weather forecast")
    await session.call("send_email", to="a@b.c", subject="hi")  # a call counts as use
    answer = await session.call(SEARCH_TOOL_NAME, query="translate a text")
    assert await session.offered() == [SEARCH_TOOL_NAME, "send_email", "translate_text"]
    assert isinstance(answer, dict)
    assert answer["unloaded"] == ["get_weather"]


async def test_a_search_loads_at_most_max_loaded_matches_keeping_the_best() -> None:
    session = Session(searchable(catalogue(), max_loaded=1))
    answer = await session.call(SEARCH_TOOL_NAME, query="refund payment money")
    assert isinstance(answer, dict)
    assert await session.offered() == [SEARCH_TOOL_NAME, "refund_payment"]


async def test_each_session_loads_its_own_tools() -> None:
    toolset = searchable(catalogue())
    one, two = Session(toolset), Session(toolset)
    await one.call(SEARCH_TOOL_NAME, query="delete a file")
    assert "delete_file" in await one.offered()
    assert await two.offered() == [SEARCH_TOOL_NAME]


async def test_two_searchable_toolsets_of_other_tools_keep_their_loaded_tools_apart() -> None:
    first = searchable(catalogue())
    second = searchable(StaticToolset([send_email, get_weather]))
    state: dict[str, Any] = {}

    def context() -> ToolContext:
        return ToolContext(Invocation(session_id="s", state=dict(state))).for_call("c")

    for toolset in (first, second):
        await toolset.list_tools(context())
    ctx = context()
    await first.search("send an email", ctx, 1)
    state.update(ctx.actions.state_delta)
    assert first.loaded(context()) == ["send_email"]
    assert second.loaded(context()) == []  # the same state, the other catalogue's key


async def test_the_default_state_key_is_the_same_for_the_same_catalogue_after_a_restart() -> None:
    before, after = searchable(catalogue()), searchable(catalogue())
    assert before.state_key is None  # not known before the catalogue lists
    await before.list_tools()
    await after.list_tools()
    assert before.state_key == after.state_key
    assert (before.state_key or "").startswith("toolsets.searchable:")
    assert searchable(catalogue(), state_key="mine").state_key == "mine"


async def test_an_empty_query_is_an_error_naming_the_field() -> None:
    session = Session(searchable(catalogue()))
    answer = await session.call(SEARCH_TOOL_NAME, query="  ")
    assert isinstance(answer, dict)
    assert answer["fields"] == {"query": "a non-empty string is required"}


async def test_a_query_nothing_matches_says_so_and_loads_nothing() -> None:
    session = Session(searchable(catalogue()))
    answer = await session.call(SEARCH_TOOL_NAME, query="zzyzx qwerty")
    assert isinstance(answer, dict)
    assert answer["matches"] == []
    assert await session.offered() == [SEARCH_TOOL_NAME]


# --- pinned --------------------------------------------------------------------------------


async def test_pinned_tools_are_always_offered_and_never_take_a_loaded_slot() -> None:
    session = Session(searchable(catalogue(), pinned=["get_weather"], max_loaded=1))
    assert await session.offered() == [SEARCH_TOOL_NAME, "get_weather"]
    await session.call(SEARCH_TOOL_NAME, query="weather forecast for a city")
    await session.call(SEARCH_TOOL_NAME, query="star a repository")
    assert await session.offered() == [SEARCH_TOOL_NAME, "star_repository", "get_weather"]


async def test_tools_may_be_pinned_by_a_predicate_over_the_tool_and_the_context() -> None:
    toolset = searchable(catalogue(), pinned=lambda tool, ctx: tool.name.startswith("get_"))
    assert offered(await toolset.list_tools()) == [SEARCH_TOOL_NAME, "get_weather"]


async def test_a_pinned_name_no_tool_has_fails_the_first_listing_naming_it() -> None:
    toolset = searchable(catalogue(), pinned=["get_weather", "get_wether"])
    with pytest.raises(ToolDefinitionError) as raised:
        await toolset.list_tools()
    assert raised.value.tool_name == "get_wether"
    assert raised.value.field == "pinned"


async def test_a_catalogue_tool_named_like_the_search_tool_is_refused() -> None:
    def search_tools(query: str) -> str:
        """Search."""
        return query

    with pytest.raises(ToolDefinitionError) as raised:
        await searchable(StaticToolset([search_tools])).list_tools()
    assert raised.value.tool_name == SEARCH_TOOL_NAME


async def test_bad_bounds_are_refused_when_made() -> None:
    with pytest.raises(ValueError, match="max_loaded"):
        searchable(catalogue(), max_loaded=0)
    with pytest.raises(TypeError):
        searchable(catalogue(), pinned="get_weather")


# --- the index -------------------------------------------------------------------------------


async def test_the_index_is_kept_while_the_tools_are_the_same_and_rebuilt_when_they_change() -> (
    None
):
    wrapped = catalogue()
    toolset = searchable(wrapped)
    session = Session(toolset)
    tools = await wrapped.list_tools()
    first = await toolset.index(tools)
    assert await toolset.index(tuple(tools)) is first  # the same tools: the same index

    def cancel_subscription(subscription_id: str) -> str:
        """Cancel a subscription so that it renews no more."""
        return f"cancelled {subscription_id}"

    wrapped.push(cancel_subscription)
    answer = await session.call(SEARCH_TOOL_NAME, query="cancel subscription")
    assert isinstance(answer, dict)
    names = [m["name"] for m in answer["matches"]]  # type: ignore[index, union-attr]
    assert names[0] == "cancel_subscription"
    assert await toolset.index(await wrapped.list_tools()) is not first


async def test_concurrent_first_searches_share_one_index_built_off_the_event_loop() -> None:
    wrapped = catalogue()
    toolset = searchable(wrapped)
    tools = await wrapped.list_tools()
    built: list[int] = []
    loop_thread = threading.get_ident()
    from toolsets.search import _index

    real = _index.ToolIndex.build

    def counted(entries: Any) -> Any:
        built.append(threading.get_ident())
        return real(entries)

    indexes: list[Any] = []

    async def search() -> None:
        indexes.append(await toolset.index(tools))

    with pytest.MonkeyPatch.context() as patch, anyio.fail_after(30):
        patch.setattr(_index.ToolIndex, "build", counted)
        async with anyio.create_task_group() as tasks:
            for _ in range(4):
                tasks.start_soon(search)
    assert len(built) == 1  # one build for the four searches
    assert built[0] != loop_thread  # in a worker thread
    assert all(index is indexes[0] for index in indexes)


class Counted(BaseTool):
    """A tool that counts how often its declaration is asked for."""

    made = 0

    def __init__(self, name: str) -> None:
        super().__init__(name, f"Do {name.replace('_', ' ')}.")
        Counted.made = 0

    def declaration(self) -> Any:
        Counted.made += 1
        return super().declaration()

    async def run(self, args: Mapping[str, Any], ctx: ToolContext) -> JsonValue:
        return self.name


async def test_listing_and_searching_build_no_declaration_of_an_unloaded_tool() -> None:
    tools = [Counted(f"task_{n}_thing") for n in range(50)]
    session = Session(searchable(StaticToolset(tools)))
    Counted.made = 0
    await session.call(SEARCH_TOOL_NAME, query="task 7 thing")
    listed = await session.toolset.list_tools(session.context())
    hidden = [t for t in listed if isinstance(t, HiddenTool)]
    assert len(hidden) == 50 - 5
    assert all(t.declaration() is None for t in hidden)
    # The five matches are declared once, to skip any no model can be offered (they are
    # the loaded ones); none of the others.
    assert Counted.made == 5


# --- tools no model can be offered -----------------------------------------------------------

NOWHERE = "http://127.0.0.1:9"
SHIPPING = ("now", "abroad", "overnight")
"""The parcel operations whose schema is broken (``ship_parcel_<how>``)."""
HANDLING = ("weigh", "track", "insure", "label", "return", "hold", "open")
"""Those that work (``<what>_parcel``)."""


def parcels_spec() -> dict[str, Any]:
    """A spec of more operations than are built as it loads, with parcel operations: the
    best matches for shipping one are broken (a ``$ref`` to nowhere), found only when
    their schema is built."""
    spec = synthetic_spec(EAGER_OPERATIONS)

    def post(operation_id: str, summary: str, schema: dict[str, Any]) -> dict[str, Any]:
        body = {"required": True, "content": {"application/json": {"schema": schema}}}
        return {
            "post": {
                "operationId": operation_id,
                "summary": summary,
                "requestBody": body,
                "responses": {"200": {"description": "ok"}},
            }
        }

    broken = {"$ref": "#/components/schemas/Nowhere"}
    fine = {"type": "object", "properties": {"weight": {"type": "number"}}}
    for how in SHIPPING:
        summary = f"Ship a parcel {how}, frobnicated"
        spec["paths"][f"/parcels/ship-{how}"] = post(f"ship_parcel_{how}", summary, broken)
    for what in HANDLING:
        summary = f"{what.capitalize()} a parcel"
        spec["paths"][f"/parcels/{what}"] = post(f"{what}_parcel", summary, fine)
    return spec


BROKEN = {f"ship_parcel_{how}" for how in SHIPPING}


async def test_a_search_skips_a_match_found_broken_and_loads_the_next_ones_in_its_place() -> None:
    async with OpenApiToolset(parcels_spec(), base_url=NOWHERE) as api:
        toolset = searchable(api)
        session = Session(toolset)
        query = "ship a parcel"
        ranked = [m.name for m in (await toolset.index(await api.list_tools())).search(query, 30)]
        assert BROKEN & set(ranked[:5])  # the index ranks broken ones among the best five

        answer = await session.call(SEARCH_TOOL_NAME, query=query)

        assert isinstance(answer, dict)
        names = [m["name"] for m in answer["matches"]]
        assert names == [name for name in ranked if name not in BROKEN][:5]
        assert sorted(await session.offered()) == sorted([SEARCH_TOOL_NAME, *names])
        found = {p.pointer for p in api.problems}  # built as the search skipped them
        assert found
        assert found <= {f"/paths/~1parcels~1ship-{how}/post" for how in SHIPPING}
        assert "now available" in str(answer["note"])


async def test_a_search_whose_only_matches_are_broken_loads_nothing_and_says_why() -> None:
    async with OpenApiToolset(parcels_spec(), base_url=NOWHERE) as api:
        session = Session(searchable(api))

        answer = await session.call(SEARCH_TOOL_NAME, query="frobnicated")

        assert isinstance(answer, dict)
        assert answer["matches"] == []
        note = str(answer["note"])
        assert all(name in note for name in BROKEN)
        assert "now available" not in note
        assert await session.offered() == [SEARCH_TOOL_NAME]
        assert len(api.problems) == len(BROKEN)


class Passive(BaseTool):
    """A tool offered to no model: it changes the instructions instead."""

    def declaration(self) -> Any:
        return None

    async def run(self, args: Mapping[str, Any], ctx: ToolContext) -> JsonValue:
        return None


async def test_a_search_skips_a_passive_tool_that_matches() -> None:
    passive = Passive("refund_policy", "Refund a payment: the policy the model follows.")
    session = Session(searchable(StaticToolset([passive, refund_payment, send_email])))

    answer = await session.call(SEARCH_TOOL_NAME, query="refund a payment")

    assert isinstance(answer, dict)
    assert [m["name"] for m in answer["matches"]][:1] == ["refund_payment"]
    assert "refund_policy" not in [m["name"] for m in answer["matches"]]


# --- GitHub's spec, served on 127.0.0.1 ------------------------------------------------------


@contextlib.asynccontextmanager
async def github_api() -> AsyncIterator[tuple[str, list[tuple[str, str]]]]:
    """A starlette app standing in for GitHub on 127.0.0.1, served by uvicorn in a
    thread; its URL and the requests it got (method, path)."""
    import uvicorn

    seen: list[tuple[str, str]] = []

    async def anything(request: Request) -> Response:
        seen.append((request.method, request.url.path))
        return Response(status_code=204)

    app = Starlette(routes=[Route("/{path:path}", anything, methods=["GET", "PUT", "POST"])])
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()

    async def started() -> bool:
        return server.started

    try:
        await eventually(started, within=20)
        port = server.servers[0].sockets[0].getsockname()[1]
        yield f"http://127.0.0.1:{port}", seen
    finally:
        server.should_exit = True
        await anyio.to_thread.run_sync(thread.join, 20)


async def test_an_agent_over_githubs_spec_finds_and_calls_the_right_operation_through_search_tools() -> (  # noqa: E501
    None
):
    def respond(request: Any) -> Any:
        turn = len(model.requests)
        if turn == 1:
            return FunctionCall(id="s", name=SEARCH_TOOL_NAME, args={"query": "star a repository"})
        if turn == 2:  # the model reads the matches' summaries, and takes the one it needs
            found = request.contents[-1].parts[0].function_response.response
            best = next(
                match["name"]
                for match in found["matches"]
                if match["summary"].lower().startswith("star a repo")
            )
            assert best in request.declarations
            return FunctionCall(id="c", name=best, args={"owner": "octocat", "repo": "hello"})
        return "Starred."

    model = ScriptedModel(respond=respond)
    async with github_api() as (url, seen):
        github = OpenApiToolset(GITHUB, base_url=url, confirm="never")
        runner = Runner(LlmAgent("assistant", model, tools=[searchable(github)]))
        _, events = await start(runner, "bookmark octocat/hello for me")
    assert seen == [("PUT", "/user/starred/octocat/hello")]
    assert list(model.requests[0].declarations) == [SEARCH_TOOL_NAME]
    assert len(model.requests[1].declarations) <= 6  # search_tools and the five found
    assert events[-1].content is not None
    assert events[-1].content.text == "Starred."


@pytest.mark.parametrize("module", ["bm25s", "Stemmer"])
def test_without_bm25s_making_one_names_the_line_that_installs_the_search_extra(
    monkeypatch: pytest.MonkeyPatch, module: str
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # as if not installed
    with pytest.raises(ImportError) as raised:
        searchable(catalogue())
    assert raised.value.name == module
    assert install_line("search") in str(raised.value)


async def test_a_catalogue_whose_tools_come_and_go_is_listed_as_it_is_now() -> None:
    wrapped = catalogue()
    session = Session(searchable(wrapped))
    await session.call(SEARCH_TOOL_NAME, query="translate a text")
    for round_ in range(40):  # each round's tools listed, then gone
        wrapped.push(*(BaseToolLike(f"task_{round_}_{n}") for n in range(5)))
        assert len(await session.toolset.list_tools(session.context())) == 1 + 6 + 5
        wrapped.remove(*(f"task_{round_}_{n}" for n in range(5)))
    listed = await session.toolset.list_tools(session.context())
    assert [t.name for t in listed] == [
        SEARCH_TOOL_NAME,
        *(t.name for t in await wrapped.list_tools()),
    ]
    assert await session.offered() == [SEARCH_TOOL_NAME, "translate_text"]


class BaseToolLike(BaseTool):
    async def run(self, args: Mapping[str, Any], ctx: ToolContext) -> JsonValue:
        return self.name


# -- for a model whose provider searches ------------------------------------------------


async def prepared(toolset: Any, ctx: ToolContext) -> LlmRequest:
    request = LlmRequest()
    for listed in await toolset.list_tools(ctx):
        await listed.process_llm_request(request, ctx)
    return request


async def test_a_listing_tells_the_model_which_tools_a_search_finds_and_which_tool_searches() -> (
    None
):
    toolset = searchable(catalogue(), pinned=["get_weather"])
    ctx = ToolContext()
    await toolset.list_tools(ctx)
    toolset.use(ctx, ["send_email"])

    request = await prepared(toolset, ctx)

    assert request.local_search == SEARCH_TOOL_NAME
    # Every tool but the pinned one, loaded (declared) or not (callable by name only).
    assert set(request.deferred) == {
        "send_email",
        "refund_payment",
        "star_repository",
        "translate_text",
        "delete_file",
    }
    assert list(request.declarations) == [SEARCH_TOOL_NAME, "send_email", "get_weather"]
    assert all(request.tools[name] is t for name, t in request.deferred.items())


async def test_a_renamed_catalogue_tells_the_model_its_tools_and_its_search_tool_by_new_names() -> (
    None
):
    toolset = renamed(
        searchable(catalogue()), {SEARCH_TOOL_NAME: "find_tools", "refund_payment": "refund"}
    )
    ctx = ToolContext()

    request = await prepared(toolset, ctx)

    assert request.local_search == "find_tools"
    assert "refund" in request.deferred
    assert "refund_payment" not in request.deferred
    declaration = request.deferred["refund"].call_declaration()
    assert declaration is not None
    assert declaration.name == "refund"
