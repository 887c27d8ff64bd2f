"""AnthropicModel with Anthropic's tool search: a `searchable` catalogue's tools sent
with ``defer_loading`` and the tool search tool, the search's blocks kept and sent back,
the tools it found called through the one call path; the local search where the model
cannot search.

The provider is a fake Messages API on 127.0.0.1 that answers with response fixtures
written here from the documented wire format, and checks every request it is sent and
every answer it gives against the types of Anthropic's own SDK (``anthropic``, in the
dev extra)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from anthropic.types import Message, RawMessageStreamEvent
from anthropic.types.message_create_params import (
    MessageCreateParamsNonStreaming,
    MessageCreateParamsStreaming,
)
from pydantic import TypeAdapter

from tests.models.replay import ReplayedApi, Wire, replayed
from tests.models.scenarios import collect
from tests.models.test_scenarios import run as run_agent
from toolsets import (
    BaseTool,
    Content,
    FunctionCall,
    FunctionResponse,
    LlmRequest,
    Part,
    StaticToolset,
    ToolContext,
    ToolDeclaration,
    ToolDefinitionError,
    tool,
)
from toolsets.agent import Event, LlmAgent, Runner
from toolsets.models import AnthropicModel
from toolsets.search import SEARCH_TOOL_NAME, searchable

pytestmark = pytest.mark.anyio

MODEL = "claude-sonnet-4-5-20250929"
"""A model the tool search tool's documentation lists."""
OLDER = "claude-sonnet-4-20250514"
"""One it does not."""

SEARCHING = {"type": "server_tool_use", "id": "srvtoolu_01Fq8vQm", "name": "tool_search_tool_bm25"}
SEARCH_USE: dict[str, Any] = {**SEARCHING, "input": {"query": "current weather in a city"}}
"""A recorded shape of the search Claude runs on Anthropic's side."""


def search_result(*names: str) -> dict[str, Any]:
    """A recorded shape of what the search found."""
    return {
        "type": "tool_search_tool_result",
        "tool_use_id": SEARCH_USE["id"],
        "content": {
            "type": "tool_search_tool_search_result",
            "tool_references": [{"type": "tool_reference", "tool_name": n} for n in names],
        },
    }


def message(*blocks: dict[str, Any], stop: str = "tool_use") -> dict[str, Any]:
    return {
        "id": "msg_01Ts9",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": list(blocks),
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 812, "output_tokens": 97},
    }


def found(name: str = "get_weather", called: str | None = None) -> dict[str, Any]:
    """Claude searches, finds ``name`` and calls ``called`` (by default what it found)."""
    return message(
        {"type": "text", "text": "Let me find a weather tool."},
        SEARCH_USE,
        search_result(name),
        {
            "type": "tool_use",
            "id": "toolu_01Wx3",
            "name": called or name,
            "input": {"city": "Paris"},
        },
    )


ANSWER = message({"type": "text", "text": "It is 18 °C in Paris."}, stop="end_turn")

_REQUEST = TypeAdapter(MessageCreateParamsNonStreaming)
_STREAM_REQUEST = TypeAdapter(MessageCreateParamsStreaming)
_EVENT: TypeAdapter[Any] = TypeAdapter(RawMessageStreamEvent)


def events_of(answer: dict[str, Any]) -> list[dict[str, Any]]:
    """``answer`` as the stream of events the API sends: each block started (a text and
    an input empty, then in deltas of two pieces; a search result whole), then
    stopped."""
    head = {**answer, "content": [], "stop_reason": None}
    head["usage"] = {"input_tokens": answer["usage"]["input_tokens"], "output_tokens": 1}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": head}]
    for index, block in enumerate(answer["content"]):
        start, pieces = dict(block), []
        if block["type"] == "text":
            start["text"] = ""
            text = block["text"]
            pieces = [{"type": "text_delta", "text": p} for p in (text[:5], text[5:])]
        elif "input" in block:
            start["input"] = {}
            text = json.dumps(block["input"])
            pieces = [{"type": "input_json_delta", "partial_json": p} for p in (text[:7], text[7:])]
        events.append({"type": "content_block_start", "index": index, "content_block": start})
        events += [{"type": "content_block_delta", "index": index, "delta": p} for p in pieces]
        events.append({"type": "content_block_stop", "index": index})
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": answer["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": answer["usage"]["output_tokens"]},
        }
    )
    events.append({"type": "message_stop"})
    return events


def refused(body: dict[str, Any]) -> str | None:
    """Why the API would refuse ``body`` (the documented rules of tool search), if it
    would."""
    tools = body.get("tools", [])
    names = {t["name"] for t in tools}
    searches = [t for t in tools if str(t.get("type", "")).startswith("tool_search_tool_")]
    deferred = [t["name"] for t in tools if t.get("defer_loading")]
    if deferred and not searches:
        return f"deferred tools without a tool search tool: {deferred}"
    if any(t.get("defer_loading") for t in searches):
        return "the tool search tool cannot be deferred"
    if deferred and len(deferred) == len(tools):
        return "at least one tool must not be deferred"
    for turn in body["messages"]:
        for block in turn["content"] if isinstance(turn["content"], list) else []:
            if block["type"] in ("server_tool_use", "tool_search_tool_result") and not searches:
                return f"a {block['type']} block without the tool search tool"
            if block["type"] == "tool_search_tool_result":
                for reference in block["content"].get("tool_references", []):
                    if reference["tool_name"] not in names:
                        return f"tool_reference to unknown tool {reference['tool_name']!r}"
    return None


def error(message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": "invalid_request_error", "message": message}}


@pytest.fixture(scope="module")
def api() -> Iterator[tuple[ReplayedApi, str]]:
    """``POST /v1/messages`` replayed. What the API refuses is refused: a body the
    SDK's types reject, a deferred tool without a search tool, a reference to a tool
    the request does not send, a search block without the search tool."""
    fake = ReplayedApi(
        _REQUEST, _STREAM_REQUEST, TypeAdapter(Message), _EVENT, refused, error, events_of
    )
    with replayed(fake, "/v1/messages") as root:
        yield fake, root


@pytest.fixture
def wire(api: tuple[ReplayedApi, str], request: pytest.FixtureRequest) -> Wire:
    fake, root = api

    def make(model: str, **options: Any) -> AnthropicModel:
        return AnthropicModel(model, base_url=root, api_key="sk-ant-test", **options)

    return Wire(fake, request.node.nodeid, make, MODEL)


# -- the catalogue -------------------------------------------------------------------


@dataclass
class Catalogue:
    """Three tools behind `searchable`, ``send_email`` pinned; the calls that ran."""

    ran: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def toolset(self, *more: Any) -> Any:
        ran = self.ran

        @tool
        def get_weather(city: str) -> dict[str, Any]:
            """Current weather in a city."""
            ran.append(("get_weather", {"city": city}))
            return {"city": city, "temp_c": 18}

        @tool
        def send_email(to: str, subject: str) -> str:
            """Send an email."""
            ran.append(("send_email", {"to": to}))
            return "sent"

        @tool
        def refund_payment(payment_id: str) -> str:
            """Refund a payment."""
            ran.append(("refund_payment", {"payment_id": payment_id}))
            return "refunded"

        tools = StaticToolset([get_weather, send_email, refund_payment, *more])
        return searchable(tools, pinned=["send_email"])


async def prepared(toolset: Any) -> LlmRequest:
    """The request the agent loop prepares from ``toolset``'s listing."""
    request = LlmRequest(contents=[Content.user("Weather in Paris?")])
    ctx = ToolContext()
    for listed in await toolset.list_tools(ctx):
        await listed.process_llm_request(request, ctx)
    return request


async def run(model: AnthropicModel, toolset: Any, *, stream: bool = False) -> list[Event]:
    """The final events of an agent run of ``toolset`` on ``model``."""
    runner = Runner(LlmAgent("assistant", model, tools=[toolset]))
    _, events = await run_agent(runner, "Weather in Paris?", stream=stream)
    return [e for e in events if not e.partial]


def weather_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    }


# -- the request -----------------------------------------------------------------------


async def test_the_catalogues_tools_go_deferred_with_the_search_tool_in_place_of_the_local_one(
    wire: Wire,
) -> None:
    wire.script(ANSWER)
    request = await prepared(Catalogue().toolset())

    async with wire.model() as model:
        await collect(model, request)

    (body,) = wire.bodies
    tools = {t["name"]: t for t in body["tools"]}
    assert list(tools) == ["tool_search_tool_bm25", "send_email", "get_weather", "refund_payment"]
    assert tools["tool_search_tool_bm25"] == {
        "type": "tool_search_tool_bm25_20251119",
        "name": "tool_search_tool_bm25",
    }
    assert "defer_loading" not in tools["send_email"]
    assert tools["get_weather"] == {
        "name": "get_weather",
        "description": "Current weather in a city.",
        "input_schema": tools["get_weather"]["input_schema"],
        "defer_loading": True,
    }
    assert tools["get_weather"]["input_schema"]["properties"] == weather_schema()["properties"]
    assert tools["refund_payment"]["defer_loading"] is True
    assert SEARCH_TOOL_NAME not in tools


async def test_the_regex_search_is_sent_when_asked_for_whatever_the_model(wire: Wire) -> None:
    wire.script(ANSWER)
    request = await prepared(Catalogue().toolset())

    async with wire.model("claude-via-my-proxy", tool_search="regex") as model:
        await collect(model, request)

    (body,) = wire.bodies
    assert body["tools"][0] == {
        "type": "tool_search_tool_regex_20251119",
        "name": "tool_search_tool_regex",
    }
    assert [t["name"] for t in body["tools"] if t.get("defer_loading")] == [
        "get_weather",
        "refund_payment",
    ]


async def test_a_loaded_tool_stays_deferred_so_the_list_of_tools_does_not_change(
    wire: Wire,
) -> None:
    wire.script(ANSWER, ANSWER)
    toolset = Catalogue().toolset()
    ctx = ToolContext()
    before = await prepared(toolset)
    toolset.use(ctx, ["get_weather"])  # loaded, as a local search or a call loads it
    after = LlmRequest(contents=[Content.user("Weather in Paris?")])
    for listed in await toolset.list_tools(ctx):
        await listed.process_llm_request(after, ctx)
    assert "get_weather" in after.declarations  # a model without search is offered it

    async with wire.model() as model:
        await collect(model, before)
        await collect(model, after)

    first, second = wire.bodies
    assert first["tools"] == second["tools"]


class Lookup(BaseTool):
    """A tool that counts how often its declaration is asked for."""

    def __init__(self) -> None:
        super().__init__("lookup", "Look a word up.", parameters=weather_schema())
        self.asked = 0

    def call_declaration(self) -> ToolDeclaration | None:
        self.asked += 1
        return super().call_declaration()

    async def run(self, args: Any, ctx: ToolContext) -> Any:
        return "found"


async def test_the_same_catalogue_is_translated_once_for_the_steps_of_a_run(wire: Wire) -> None:
    wire.script(ANSWER, ANSWER)
    lookup = Lookup()
    toolset = Catalogue().toolset(lookup)

    async with wire.model() as model:
        await collect(model, await prepared(toolset))
        await collect(model, await prepared(toolset))

    assert lookup.asked == 1
    first, second = wire.bodies
    assert first["tools"] == second["tools"]
    assert next(t for t in first["tools"] if t["name"] == "lookup")["defer_loading"] is True


# -- a run -----------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
async def test_a_tool_anthropic_found_is_called_through_the_one_call_path_and_the_search_goes_back(
    wire: Wire, stream: bool
) -> None:
    wire.script(found(), ANSWER)
    catalogue = Catalogue()

    async with wire.model() as model:
        events = await run(model, catalogue.toolset(), stream=stream)

    assert catalogue.ran == [("get_weather", {"city": "Paris"})]
    model_turn, tool_turn, answer = events
    assert model_turn.content is not None
    thoughts = [p.text for p in model_turn.content.parts if p.thought]
    assert thoughts == [
        'Searching the tools: {"query": "current weather in a city"}',
        "Found tools: get_weather",
    ]
    assert model_turn.content.function_calls == (
        FunctionCall(name="get_weather", args={"city": "Paris"}, id="toolu_01Wx3"),
    )
    assert tool_turn.function_responses[0].response == {"city": "Paris", "temp_c": 18}
    assert answer.text == "It is 18 °C in Paris."

    _, second = wire.bodies
    user, assistant, results = second["messages"]
    assert user["role"] == "user"
    # The search goes back exactly as it came, in its place among the blocks.
    assert assistant == {"role": "assistant", "content": found()["content"]}
    assert results["content"] == [
        {
            "type": "tool_result",
            "tool_use_id": "toolu_01Wx3",
            "content": json.dumps({"city": "Paris", "temp_c": 18}),
        }
    ]
    # The tools are the same: the one found is still deferred, and expanded by its
    # reference in the conversation.
    assert second["tools"] == wire.bodies[0]["tools"]


async def test_a_tool_named_as_anthropic_refuses_is_found_by_a_legal_name_and_called_by_its_own(
    wire: Wire,
) -> None:
    catalogue = Catalogue()

    @tool(name="weather.now")
    def weather_now(city: str) -> str:
        """The weather right now, in a city."""
        catalogue.ran.append(("weather.now", {"city": city}))
        return "sunny"

    def finding(body: dict[str, Any]) -> dict[str, Any]:
        (sent,) = [
            t["name"]
            for t in body["tools"]
            if t.get("description", "").startswith("The weather right")
        ]
        return found(sent)

    wire.script(finding, ANSWER)

    async with wire.model() as model:
        events = await run(model, catalogue.toolset(weather_now))

    assert catalogue.ran == [("weather.now", {"city": "Paris"})]
    model_turn = events[0]
    assert model_turn.content is not None
    assert model_turn.content.function_calls[0].name == "weather.now"
    assert [p.text for p in model_turn.content.parts if p.thought][1] == "Found tools: weather.now"
    first, second = wire.bodies
    legal = next(
        t["name"]
        for t in first["tools"]
        if t.get("description", "").startswith("The weather right")
    )
    assert legal != "weather.now"
    result = second["messages"][1]["content"][2]
    assert result["content"]["tool_references"] == [{"type": "tool_reference", "tool_name": legal}]


async def test_a_failed_search_is_kept_and_sent_back_and_the_model_goes_on(wire: Wire) -> None:
    failed = {
        "type": "tool_search_tool_result",
        "tool_use_id": SEARCH_USE["id"],
        "content": {"type": "tool_search_tool_result_error", "error_code": "unavailable"},
    }
    wire.script(
        message(
            SEARCH_USE, failed, {"type": "text", "text": "I cannot search now."}, stop="end_turn"
        ),
        ANSWER,
    )
    request = await prepared(Catalogue().toolset())

    async with wire.model() as model:
        (turn,) = await collect(model, request)
        assert turn.content is not None
        assert [p.text for p in turn.content.parts if p.thought] == [
            'Searching the tools: {"query": "current weather in a city"}',
            "The tool search failed: unavailable",
        ]
        request.contents.append(turn.content)
        request.contents.append(Content.user("Try again."))
        await collect(model, request, stream=True)

    _, second = wire.bodies
    assert second["messages"][1]["content"] == [
        SEARCH_USE,
        failed,
        {"type": "text", "text": "I cannot search now."},
    ]


# -- the local search where Anthropic's is not used --------------------------------------


@pytest.mark.parametrize(
    ("model_name", "option"), [(OLDER, "auto"), (MODEL, None)], ids=["older-model", "off"]
)
async def test_without_anthropics_search_the_local_search_tool_is_offered_as_for_any_model(
    wire: Wire, model_name: str, option: Any
) -> None:
    wire.script(
        message(
            {
                "type": "tool_use",
                "id": "toolu_01S",
                "name": SEARCH_TOOL_NAME,
                "input": {"query": "weather"},
            }
        ),
        message(
            {
                "type": "tool_use",
                "id": "toolu_01W",
                "name": "get_weather",
                "input": {"city": "Paris"},
            }
        ),
        ANSWER,
    )
    catalogue = Catalogue()

    async with wire.model(model_name, tool_search=option) as model:
        events = await run(model, catalogue.toolset())

    assert catalogue.ran == [("get_weather", {"city": "Paris"})]
    assert events[-1].text == "It is 18 °C in Paris."
    first, _, third = wire.bodies
    assert [t["name"] for t in first["tools"]] == [SEARCH_TOOL_NAME, "send_email"]
    assert [t["name"] for t in third["tools"]] == [SEARCH_TOOL_NAME, "get_weather", "send_email"]
    assert not any("defer_loading" in t or "type" in t for b in wire.bodies for t in b["tools"])


async def test_an_earlier_search_on_anthropics_side_is_left_out_when_the_local_search_is_used(
    wire: Wire,
) -> None:
    wire.script(ANSWER)
    earlier = found()
    request = await prepared(Catalogue().toolset())
    parts = [
        Part(text="Let me find a weather tool."),
        Part(text="searching", thought=True, provider_data={"anthropic": {"block": SEARCH_USE}}),
        Part(
            text="found",
            thought=True,
            provider_data={"anthropic": {"block": search_result("get_weather")}},
        ),
        Part(
            function_call=FunctionCall(name="get_weather", args={"city": "Paris"}, id="toolu_01Wx3")
        ),
    ]
    assert earlier["content"][0]["text"] == parts[0].text
    request.contents.append(Content(role="model", parts=tuple(parts)))
    answered = FunctionResponse(name="get_weather", response={"temp_c": 18}, id="toolu_01Wx3")
    request.contents.append(Content(role="user", parts=(Part(function_response=answered),)))

    async with wire.model(tool_search=None) as model:
        await collect(model, request)

    (body,) = wire.bodies
    assert [b["type"] for b in body["messages"][1]["content"]] == ["text", "tool_use"]


# -- what cannot be sent -------------------------------------------------------------------


async def test_a_found_tool_that_does_not_exist_gets_an_error_naming_it_and_nothing_runs(
    wire: Wire,
) -> None:
    wire.script(found("get_wether"), ANSWER)
    catalogue = Catalogue()

    async with wire.model() as model:
        events = await run(model, catalogue.toolset())

    assert catalogue.ran == []
    (response,) = events[1].function_responses
    assert response.name == "get_wether"
    assert isinstance(response.response, dict)
    assert "'get_wether'" in str(response.response["error"])
    # The reference to it is not sent back: the API refuses a reference to a tool it
    # was not given.
    _, second = wire.bodies
    (result,) = [
        b for b in second["messages"][1]["content"] if b["type"] == "tool_search_tool_result"
    ]
    assert result["content"]["tool_references"] == []


async def test_a_tool_named_as_the_search_tool_is_refused_before_anything_is_sent(
    wire: Wire,
) -> None:
    @tool
    def tool_search_tool_bm25(query: str) -> str:
        """Mine."""
        return query

    request = await prepared(Catalogue().toolset(tool_search_tool_bm25))

    async with wire.model() as model:
        with pytest.raises(ToolDefinitionError) as caught:
            await collect(model, request)

    assert caught.value.tool_name == "tool_search_tool_bm25"
    assert wire.bodies == []


def test_an_unknown_tool_search_option_is_refused() -> None:
    with pytest.raises(ValueError, match="tool_search"):
        AnthropicModel(MODEL, tool_search="fuzzy")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("model", "supported"),
    [
        ("claude-sonnet-4-5", True),
        ("claude-sonnet-4-5-20250929", True),
        ("claude-haiku-4-5-20251001", True),
        ("claude-opus-4-6", True),
        ("claude-opus-5-5", True),
        ("claude-mythos-preview", True),
        ("anthropic.claude-sonnet-4-5-20250929-v1:0", True),
        ("claude-sonnet-4-5@20250929", True),
        ("claude-sonnet-4-20250514", False),
        ("claude-opus-4-1-20250805", False),
        ("claude-3-7-sonnet-20250219", False),
        ("claude-sonnet-4-50", False),
        ("gpt-5.4", False),
    ],
)
def test_auto_searches_on_anthropics_side_for_the_documented_models(
    model: str, supported: bool
) -> None:
    from toolsets.models._anthropic import supports_tool_search

    assert supports_tool_search(model) is supported
