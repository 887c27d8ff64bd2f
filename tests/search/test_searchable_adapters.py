"""`searchable` through the framework adapters, judged by each framework itself:
pydantic-ai lists the tools at each step, openai-agents reads the agent's tool list at
each turn (the list `to_openai_agents` made is updated when a call loads tools)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from agents import Agent as AgentsAgent
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from tests.adapters.test_openai_agents import Call, Scripted, run
from tests.adapters.test_pydantic_ai import returned
from tests.search.test_searchable import catalogue
from toolsets import Invocation, ToolContext, searchable
from toolsets.adapters.openai_agents import to_openai_agents
from toolsets.adapters.pydantic_ai import PydanticAIToolset
from toolsets.search import SEARCH_TOOL_NAME

pytestmark = pytest.mark.anyio

asyncio_only = pytest.mark.parametrize("anyio_backend", ["asyncio"])
"""pydantic-ai's Agent and openai-agents' Runner do not run on trio."""


@asyncio_only
async def test_pydantic_ai_offers_the_tools_a_search_loaded_from_its_next_step() -> None:
    offered: list[list[str]] = []

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        offered.append([t.name for t in info.function_tools])
        if len(offered) == 1:
            call = ToolCallPart(SEARCH_TOOL_NAME, {"query": "refund a payment"}, tool_call_id="s")
            return ModelResponse(parts=[call])
        if len(offered) == 2:
            call = ToolCallPart("refund_payment", {"payment_id": "pay_1"}, tool_call_id="r")
            return ModelResponse(parts=[call])
        return ModelResponse(parts=[TextPart("Refunded.")])

    agent = Agent(FunctionModel(respond), toolsets=[PydanticAIToolset(searchable(catalogue()))])
    with anyio.fail_after(30):
        result = await agent.run("give the customer their money back")
    assert offered[0] == [SEARCH_TOOL_NAME]
    assert "refund_payment" in offered[1]
    assert returned(result.all_messages())["r"] == "refunded pay_1"
    assert result.output == "Refunded."


@asyncio_only
async def test_openai_agents_gets_the_tools_a_search_loaded_from_its_next_turn(
    anyio_backend: str,
) -> None:
    tools = await to_openai_agents(searchable(catalogue()))
    assert [t.name for t in tools] == [SEARCH_TOOL_NAME]
    model = Scripted(
        [
            [Call(SEARCH_TOOL_NAME, {"query": "star a repository"}, "s")],
            [Call("star_repository", {"owner": "octocat", "repo": "hello"}, "c")],
            "Starred.",
        ]
    )
    result = await run(AgentsAgent(name="hub", model=model, tools=tools), "star octocat/hello")
    found: Any = model.output("s")
    assert found["matches"][0]["name"] == "star_repository"
    assert model.output("c") == "starred octocat/hello"
    assert result.final_output == "Starred."
    assert "star_repository" in [t.name for t in tools]


@asyncio_only
async def test_openai_agents_with_an_invocation_function_lists_in_each_sessions_own_state(
    anyio_backend: str,
) -> None:
    catalog = searchable(catalogue())
    stores: dict[str, dict[str, Any]] = {"ann": {}, "bob": {}}

    async def tools_of(user: str) -> list[Any]:
        def invocation(run: Any) -> Invocation:
            return Invocation(user_id=user, session_id=user, state=stores[user])

        return await to_openai_agents(catalog, invocation=invocation)

    ann, bob = await tools_of("ann"), await tools_of("bob")
    model = Scripted(
        [
            [Call(SEARCH_TOOL_NAME, {"query": "star a repository"}, "s")],
            [Call("star_repository", {"owner": "octocat", "repo": "hello"}, "c")],
            "Starred.",
        ]
    )
    result = await run(AgentsAgent(name="hub", model=model, tools=ann), "star octocat/hello")
    assert model.output("c") == "starred octocat/hello"
    assert result.final_output == "Starred."
    assert "star_repository" in [t.name for t in ann]
    assert [t.name for t in bob] == [SEARCH_TOOL_NAME]  # the other session's list
    assert catalog.loaded(ToolContext(Invocation(state=stores["ann"]))) != []
    assert stores["bob"] == {}
