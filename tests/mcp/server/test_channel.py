"""Tools that talk back to the client `McpServer` serves them to: ``ctx.elicit`` /
``ctx.sample`` / ``ctx.list_roots`` / ``ctx.ask``, on both protocol eras (2025-11-25:
requests sent mid-call; 2026-07-28: ``input_required`` and the call made again), through
the SDK's own client (``ctx.log``: test_logging.py)."""

from __future__ import annotations

import functools
import json
from typing import Any

import anyio
import httpx2
import mcp.types as mt
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client

from tests.mcp.server_helpers import connected, texts, uvicorn_thread
from toolsets import (
    Blob,
    Callbacks,
    Content,
    Elicit,
    ListRoots,
    Part,
    Sample,
    StaticToolset,
    ToolContext,
    tool,
)
from toolsets.mcp import McpServer, prompt, resource

pytestmark = pytest.mark.anyio

MODES = pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
NAME_FORM = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


async def greet(ctx: ToolContext) -> str:
    """Asks the user's name."""
    answer = await ctx.elicit("What is your name?", NAME_FORM)
    return f"{answer.action}: {answer.content.get('name', '-')}"


async def capital(ctx: ToolContext) -> str:
    """Asks the client's model."""
    turns = [
        Content.user("You answer in one word."),
        Content(role="model", parts=(Part(text="Understood."),)),
        Content.user("The capital of France?"),
    ]
    said = await ctx.sample(turns, max_tokens=10, system_prompt="Be brief")
    return f"{said.text} ({said.model})"


async def roots(ctx: ToolContext) -> str:
    """Lists the client's roots."""
    found = await ctx.list_roots()
    return ", ".join(f"{root.name}={root.uri}" for root in found)


async def everything(ctx: ToolContext) -> str:
    """Asks three things at once."""
    answers = await ctx.ask(who=Elicit("Who?", NAME_FORM), said=Sample("Hi"), where=ListRoots())
    return json.dumps(sorted(answers))


def server_of(*tools: Any) -> McpServer:
    return McpServer(StaticToolset(list(tools)))


async def elicit_alice(ctx: Any, params: mt.ElicitRequestParams) -> mt.ElicitResult:
    return mt.ElicitResult(action="accept", content={"name": "Alice"})


async def sample_paris(ctx: Any, params: mt.CreateMessageRequestParams) -> mt.CreateMessageResult:
    return mt.CreateMessageResult(
        role="assistant", content=mt.TextContent(type="text", text="Paris"), model="m"
    )


async def two_roots(ctx: Any) -> mt.ListRootsResult:
    return mt.ListRootsResult(
        roots=[
            mt.Root(uri="file:///src", name="src"),  # type: ignore[arg-type]
            mt.Root(uri="file:///docs", name="docs"),  # type: ignore[arg-type]
        ]
    )


@MODES
async def test_a_tool_asks_the_clients_model_with_the_whole_conversation(mode: str) -> None:
    asked: list[mt.CreateMessageRequestParams] = []

    async def sample(ctx: Any, params: mt.CreateMessageRequestParams) -> mt.CreateMessageResult:
        asked.append(params)
        return await sample_paris(ctx, params)

    async with connected(server_of(capital), mode, sampling_callback=sample) as client:
        result = await client.call_tool("capital", {})
    assert texts(result) == ["Paris (m)"]
    (params,) = asked
    assert [(m.role, m.content.text) for m in params.messages] == [  # type: ignore[union-attr]
        ("user", "You answer in one word."),
        ("assistant", "Understood."),
        ("user", "The capital of France?"),
    ]
    assert params.max_tokens == 10
    assert params.system_prompt == "Be brief"


@MODES
@pytest.mark.parametrize("action", ["accept", "decline", "cancel"])
async def test_a_tool_asks_the_user_and_hears_whether_they_accepted(mode: str, action: str) -> None:
    asked: list[mt.ElicitRequestParams] = []

    async def elicit(ctx: Any, params: mt.ElicitRequestParams) -> mt.ElicitResult:
        asked.append(params)
        content = {"name": "Alice"} if action == "accept" else None
        return mt.ElicitResult(action=action, content=content)  # type: ignore[arg-type]

    async with connected(server_of(greet), mode, elicitation_callback=elicit) as client:
        result = await client.call_tool("greet", {})
    expected = {"accept": "accept: Alice", "decline": "decline: -", "cancel": "cancel: -"}
    assert texts(result) == [expected[action]]
    (params,) = asked
    assert isinstance(params, mt.ElicitRequestFormParams)
    assert params.message == "What is your name?"
    assert params.requested_schema == NAME_FORM


@MODES
async def test_a_tool_lists_the_roots_the_client_works_in(mode: str) -> None:
    async with connected(server_of(roots), mode, list_roots_callback=two_roots) as client:
        result = await client.call_tool("roots", {})
    assert texts(result) == ["src=file:///src, docs=file:///docs"]


@MODES
async def test_a_tool_that_asks_runs_again_from_the_top_on_2026_and_once_on_2025(
    mode: str,
) -> None:
    runs: list[str] = []

    async def counted(ctx: ToolContext) -> str:
        runs.append("started")
        answer = await ctx.elicit("Name?", NAME_FORM)
        return str(answer.content["name"])

    async with connected(server_of(counted), mode, elicitation_callback=elicit_alice) as client:
        result = await client.call_tool("counted", {})
    assert texts(result) == ["Alice"]
    assert len(runs) == (2 if mode == "2026-07-28" else 1)


async def test_on_2026_one_ask_is_one_round_with_every_question_and_sealed_state() -> None:
    server = server_of(everything)
    async with connected(
        server,
        "2026-07-28",
        elicitation_callback=elicit_alice,
        sampling_callback=sample_paris,
        list_roots_callback=two_roots,
    ) as client:
        first = await client.session.call_tool("everything", {}, allow_input_required=True)
        assert isinstance(first, mt.InputRequiredResult)
        assert first.input_requests is not None
        assert sorted(first.input_requests) == ["said", "where", "who"]
        assert first.request_state  # sealed: nothing of ours readable in it
        assert "answers" not in first.request_state
        done = await client.call_tool("everything", {})
    assert texts(done) == ['["said", "where", "who"]']


async def test_on_2026_answers_of_earlier_rounds_ride_in_the_request_state() -> None:
    async def two_steps(ctx: ToolContext) -> str:
        name = await ctx.elicit("Name?", NAME_FORM, key="step1")
        said = (await ctx.sample(f"Greet {name.content['name']}", key="step2")).text
        return said

    alice = mt.ElicitResult(action="accept", content={"name": "Alice"})
    async with connected(
        server_of(two_steps),
        "2026-07-28",
        elicitation_callback=elicit_alice,
        sampling_callback=sample_paris,
    ) as client:
        session = client.session
        first = await session.call_tool("two_steps", {}, allow_input_required=True)
        assert isinstance(first, mt.InputRequiredResult)
        assert list(first.input_requests or {}) == ["step1"]
        second = await session.call_tool(
            "two_steps",
            {},
            input_responses={"step1": alice},
            request_state=first.request_state,
            allow_input_required=True,
        )
        assert isinstance(second, mt.InputRequiredResult)
        assert list(second.input_requests or {}) == ["step2"]
        assert second.request_state != first.request_state
        paris = await sample_paris(None, None)  # type: ignore[arg-type]
        third = await session.call_tool(
            "two_steps",
            {},
            input_responses={"step2": paris},  # step1's answer is in the state only
            request_state=second.request_state,
            allow_input_required=True,
        )
    assert isinstance(third, mt.CallToolResult)
    assert texts(third) == ["Paris"]


async def test_on_2026_a_wrong_answer_is_asked_again_and_a_tampered_state_refused() -> None:
    async with connected(
        server_of(greet), "2026-07-28", elicitation_callback=elicit_alice
    ) as client:
        session = client.session
        first = await session.call_tool("greet", {}, allow_input_required=True)
        assert isinstance(first, mt.InputRequiredResult)
        wrong = {
            "elicit-1": mt.ElicitResult(action="accept", content={"nom": "Alice"}),  # no name
            "elicit-9": mt.ElicitResult(action="accept", content={"name": "Bob"}),  # not asked
        }
        again = await session.call_tool(
            "greet",
            {},
            input_responses=wrong,  # type: ignore[arg-type]
            request_state=first.request_state,
            allow_input_required=True,
        )
        assert isinstance(again, mt.InputRequiredResult)
        assert list(again.input_requests or {}) == ["elicit-1"]
        assert first.request_state is not None
        with pytest.raises(MCPError) as tampered:
            await session.call_tool(
                "greet",
                {},
                input_responses={
                    "elicit-1": mt.ElicitResult(action="accept", content={"name": "A"})
                },
                request_state=first.request_state[:-4] + "AAAA",
                allow_input_required=True,
            )
    assert tampered.value.code == -32602


async def test_on_2026_asking_what_the_client_did_not_declare_is_a_protocol_error() -> None:
    async with connected(server_of(capital), "2026-07-28") as client:
        with pytest.raises(MCPError) as refused:
            await client.call_tool("capital", {})
    assert refused.value.code == -32021
    assert refused.value.data == {"requiredCapabilities": {"sampling": {}}}


async def test_on_2025_asking_what_the_client_did_not_declare_is_an_error_result() -> None:
    async with connected(server_of(capital, roots), "legacy") as client:
        sampled = await client.call_tool("capital", {})
        listed = await client.call_tool("roots", {})
    assert sampled.is_error
    assert listed.is_error
    assert "does not support sampling" in texts(sampled)[0]
    assert "does not support roots" in texts(listed)[0]


async def test_a_tool_may_check_what_the_client_supports_before_asking() -> None:
    async def careful(ctx: ToolContext) -> str:
        if ctx.client_supports("sampling"):
            return (await ctx.sample("Hi")).text
        return "asked nothing"

    async with connected(server_of(careful), "2026-07-28") as client:
        plain = await client.call_tool("careful", {})
    async with connected(
        server_of(careful), "2026-07-28", sampling_callback=sample_paris
    ) as client:
        sampled = await client.call_tool("careful", {})
    assert texts(plain) == ["asked nothing"]
    assert texts(sampled) == ["Paris"]


async def test_on_2025_a_client_answering_with_an_error_is_an_error_result() -> None:
    async def refuse(ctx: Any, params: mt.ElicitRequestParams) -> mt.ErrorData:
        return mt.ErrorData(code=-32603, message="no user at the keyboard")

    async with connected(server_of(greet), "legacy", elicitation_callback=refuse) as client:
        result = await client.call_tool("greet", {})
    assert result.is_error
    assert "no user at the keyboard" in texts(result)[0]


async def test_on_2025_an_accepted_form_that_does_not_fit_is_an_error_result() -> None:
    async def wrong(ctx: Any, params: mt.ElicitRequestParams) -> mt.ElicitResult:
        return mt.ElicitResult(action="accept", content={"nom": "Alice"})

    async with connected(server_of(greet), "legacy", elicitation_callback=wrong) as client:
        result = await client.call_tool("greet", {})
    assert result.is_error
    assert "does not fit the form" in texts(result)[0]


async def test_a_tool_shows_the_clients_model_an_image_and_only_user_and_model_turns() -> None:
    asked: list[mt.CreateMessageRequestParams] = []

    async def sample(ctx: Any, params: mt.CreateMessageRequestParams) -> mt.CreateMessageResult:
        asked.append(params)
        return await sample_paris(ctx, params)

    async def look(ctx: ToolContext) -> str:
        picture = Part(inline_data=Blob(mime_type="image/png", data=b"\x89PNG"))
        said = await ctx.sample([Content(role="user", parts=(Part(text="What?"), picture))])
        return said.text

    async def system(ctx: ToolContext) -> str:
        return (await ctx.sample([Content(role="system", parts=(Part(text="Be nice"),))])).text

    server = server_of(look, system)
    async with connected(server, "legacy", sampling_callback=sample) as client:
        looked = await client.call_tool("look", {})
        refused = await client.call_tool("system", {})
    assert texts(looked) == ["Paris"]
    (params,) = asked
    image = params.messages[1].content
    assert isinstance(image, mt.ImageContent)
    assert (image.mime_type, image.data) == ("image/png", "iVBORw==")
    assert refused.is_error
    assert "ValueError" in texts(refused)[0]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_over_http_a_tool_logs_and_asks_the_clients_model_in_both_eras(mode: str) -> None:
    heard: list[str] = []

    async def on_log(params: mt.LoggingMessageNotificationParams) -> None:
        heard.append(str(params.data))

    async def logged(ctx: ToolContext) -> str:
        await ctx.log("info", "asking")
        return (await ctx.sample("Capital of France?")).text

    server = server_of(logged)
    async with uvicorn_thread(server.http_app) as url:
        with anyio.fail_after(20):
            async with (
                httpx2.AsyncClient() as http,
                Client(
                    streamable_http_client(url, http_client=http),  # type: ignore[arg-type]
                    mode=mode,
                    sampling_callback=sample_paris,
                    logging_callback=on_log,
                    log_level="info",
                ) as client,
            ):
                result = await client.call_tool("logged", {})
    assert texts(result) == ["Paris"]
    # 2026-07-28 ("auto"): the tool ran again from the top with the answer, logging again.
    assert heard == ["asking"] * (1 if mode == "legacy" else 2)


async def test_over_stateless_http_a_2025_client_cannot_be_asked_and_the_tool_says_so() -> None:
    server = server_of(capital)
    async with uvicorn_thread(functools.partial(server.http_app, stateless=True)) as url:
        with anyio.fail_after(20):
            async with (
                httpx2.AsyncClient() as http,
                Client(
                    streamable_http_client(url, http_client=http),  # type: ignore[arg-type]
                    mode="legacy",
                    sampling_callback=sample_paris,
                ) as client,
            ):
                result = await client.call_tool("capital", {})
    assert result.is_error
    assert "MissingClientCapabilityError" in texts(result)[0]


@MODES
async def test_a_tool_that_needs_confirmation_and_asks_gets_both_answers_and_before_tool_once(
    mode: str,
) -> None:
    before: list[dict[str, Any]] = []
    asked: list[str] = []

    def audit(called: Any, args: dict[str, Any], ctx: ToolContext) -> None:
        before.append(dict(args))
        args["target"] = args["target"].upper()

    @tool(requires_confirmation=True)
    async def rename(target: str, ctx: ToolContext) -> str:
        """Renames after asking the new name."""
        answer = await ctx.elicit("New name?", NAME_FORM)
        return f"{target} -> {answer.content['name']}"

    async def elicit(ctx: Any, params: mt.ElicitRequestParams) -> mt.ElicitResult:
        asked.append(params.message)
        if params.message == "New name?":
            return await elicit_alice(ctx, params)
        return mt.ElicitResult(action="accept")

    server = McpServer([rename], callbacks=Callbacks(before_tool=[audit]))
    async with connected(server, mode, elicitation_callback=elicit) as client:
        result = await client.call_tool("rename", {"target": "disk"})
    assert texts(result) == ["DISK -> Alice"]
    assert before == [{"target": "disk"}]
    assert len(asked) == 2
    assert asked[1] == "New name?"


@MODES
async def test_a_tool_may_ask_from_tasks_of_its_own(mode: str) -> None:
    async def both(ctx: ToolContext) -> str:
        got: dict[str, str] = {}

        async def name() -> None:
            got["name"] = str((await ctx.elicit("Name?", NAME_FORM, key="name")).content["name"])

        async def city() -> None:
            got["city"] = (await ctx.sample("Capital?", key="city")).text

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(name)
            tasks.start_soon(city)
        return f"{got['name']} in {got['city']}"

    async with connected(
        server_of(both), mode, elicitation_callback=elicit_alice, sampling_callback=sample_paris
    ) as client:
        result = await client.call_tool("both", {})
    assert texts(result) == ["Alice in Paris"]


@MODES
async def test_a_prompt_and_a_resource_of_the_servers_own_ask_the_user_as_a_tool_does(
    mode: str,
) -> None:
    @prompt
    async def greeting(ctx: ToolContext) -> str:
        """Greets whoever the user says."""
        answer = await ctx.elicit("Whom to greet?", NAME_FORM)
        return f"Greet {answer.content['name']}."

    @resource("note://mine")
    async def mine(ctx: ToolContext) -> str:
        answer = await ctx.elicit("Whose note?", NAME_FORM)
        return f"{answer.content['name']}'s note"

    server = McpServer([], prompts=[greeting], resources=[mine])
    async with connected(server, mode, elicitation_callback=elicit_alice) as client:
        got = await client.get_prompt("greeting")
        read = await client.read_resource("note://mine")
    assert [m.content.text for m in got.messages] == ["Greet Alice."]  # type: ignore[union-attr]
    assert [c.text for c in read.contents] == ["Alice's note"]  # type: ignore[union-attr]


async def decline_all(ctx: Any, params: mt.ElicitRequestParams) -> mt.ElicitResult:
    return mt.ElicitResult(action="decline")


@pytest.mark.parametrize("key", ["toolsets/confirm", "confirm"])
async def test_on_2026_a_confirmation_answered_before_it_was_asked_is_asked_all_the_same(
    key: str,
) -> None:
    ran: list[str] = []
    asked: list[str] = []

    @tool(requires_confirmation=True)
    def wipe(target: str) -> str:
        """Wipe."""
        ran.append(target)
        return "wiped"

    async def decline(ctx: Any, params: mt.ElicitRequestParams) -> mt.ElicitResult:
        asked.append(params.message)
        return await decline_all(ctx, params)

    accept = mt.ElicitResult(action="accept", content={})
    async with connected(McpServer([wipe]), "2026-07-28", elicitation_callback=decline) as client:
        first = await client.session.call_tool(
            "wipe", {"target": "disk"}, input_responses={key: accept}, allow_input_required=True
        )
        result = await client.call_tool("wipe", {"target": "disk"}, input_responses={key: accept})
    assert isinstance(first, mt.InputRequiredResult)
    assert list(first.input_requests or {}) == ["toolsets/confirm"]
    assert result.is_error
    assert ran == []
    assert len(asked) == 1  # the question, asked once the answer sent ahead was ignored


async def test_on_2026_an_answer_to_a_question_not_asked_is_ignored_and_the_question_asked() -> (
    None
):
    async def two_steps(ctx: ToolContext) -> str:
        first = await ctx.elicit("Name?", NAME_FORM, key="step1")
        second = await ctx.elicit("Friend?", NAME_FORM, key="step2")
        return f"{first.content['name']} and {second.content['name']}"

    alice = mt.ElicitResult(action="accept", content={"name": "Alice"})
    bob = mt.ElicitResult(action="accept", content={"name": "Bob"})
    async with connected(
        server_of(greet, two_steps), "2026-07-28", elicitation_callback=elicit_alice
    ) as client:
        session = client.session
        cold = await session.call_tool(
            "greet", {}, input_responses={"elicit-1": alice}, allow_input_required=True
        )
        first = await session.call_tool("two_steps", {}, allow_input_required=True)
        assert isinstance(first, mt.InputRequiredResult)
        ahead = await session.call_tool(
            "two_steps",
            {},
            input_responses={"step1": alice, "step2": bob},  # step2 was not asked yet
            request_state=first.request_state,
            allow_input_required=True,
        )
    assert isinstance(cold, mt.InputRequiredResult)
    assert list(cold.input_requests or {}) == ["elicit-1"]
    assert isinstance(ahead, mt.InputRequiredResult)
    assert list(ahead.input_requests or {}) == ["step2"]


@MODES
async def test_a_tools_own_question_keyed_confirm_is_asked_apart_from_the_confirmation(
    mode: str,
) -> None:
    asked: list[str] = []

    @tool(requires_confirmation=True)
    async def wipe(ctx: ToolContext) -> str:
        """Wipe, and the backups if the user says so."""
        backups = await ctx.elicit("Also wipe the backups?", key="confirm")
        return f"wiped, backups: {backups.action}"

    async def elicit(ctx: Any, params: mt.ElicitRequestParams) -> mt.ElicitResult:
        asked.append(params.message)
        return mt.ElicitResult(action="accept" if len(asked) == 1 else "decline")

    async with connected(McpServer([wipe]), mode, elicitation_callback=elicit) as client:
        result = await client.call_tool("wipe", {})
    assert texts(result) == ["wiped, backups: decline"]
    assert len(asked) == 2
    assert asked[1] == "Also wipe the backups?"


@MODES
async def test_a_tool_may_not_ask_under_a_key_reserved_for_toolsets(mode: str) -> None:
    async def sneaky(ctx: ToolContext) -> str:
        """Asks under the confirmation's key."""
        answer = await ctx.elicit("Allow?", key="toolsets/confirm")
        return answer.action

    asked: list[str] = []

    async def elicit(ctx: Any, params: mt.ElicitRequestParams) -> mt.ElicitResult:
        asked.append(params.message)
        return mt.ElicitResult(action="accept")

    async with connected(server_of(sneaky), mode, elicitation_callback=elicit) as client:
        result = await client.call_tool("sneaky", {})
    assert result.is_error
    assert "ValueError" in texts(result)[0]
    assert "'toolsets/confirm' is reserved" in texts(result)[0]
    assert asked == []


@MODES
async def test_before_tool_runs_once_for_a_tool_that_asks_twice_in_both_eras(mode: str) -> None:
    before: list[dict[str, Any]] = []

    def audit(called: Any, args: dict[str, Any], ctx: ToolContext) -> None:
        before.append(dict(args))
        args["greeting"] = args["greeting"].upper()

    async def introduce(greeting: str, ctx: ToolContext) -> str:
        """Asks two names."""
        first = await ctx.elicit("Name?", NAME_FORM)
        second = await ctx.elicit("Friend's name?", NAME_FORM)
        return f"{greeting} {first.content['name']} and {second.content['name']}"

    server = McpServer([introduce], callbacks=Callbacks(before_tool=[audit]))
    async with connected(server, mode, elicitation_callback=elicit_alice) as client:
        result = await client.call_tool("introduce", {"greeting": "hi"})
    assert texts(result) == ["HI Alice and Alice"]
    assert before == [{"greeting": "hi"}]


@MODES
async def test_a_prompt_or_resource_asking_what_the_client_lacks_is_a_protocol_error(
    mode: str,
) -> None:
    @prompt
    async def summary(ctx: ToolContext) -> str:
        """Has the client's model write it."""
        return (await ctx.sample("Summarise")).text

    @resource("note://roots")
    async def where(ctx: ToolContext) -> str:
        return str(len(await ctx.list_roots()))

    @resource("note://both")
    async def both(ctx: ToolContext) -> str:
        async with anyio.create_task_group() as tasks:  # asked from a task of its own
            tasks.start_soon(ctx.sample, "Hi")
        return "never"

    server = McpServer([], prompts=[summary], resources=[where, both])
    async with connected(server, mode) as client:
        with pytest.raises(MCPError) as sampled:
            await client.get_prompt("summary")
        with pytest.raises(MCPError) as rooted:
            await client.read_resource("note://roots")
        with pytest.raises(MCPError) as in_task:
            await client.read_resource("note://both")
    assert sampled.value.code == rooted.value.code == in_task.value.code == -32021
    assert sampled.value.data == {"requiredCapabilities": {"sampling": {}}}
    assert rooted.value.data == {"requiredCapabilities": {"roots": {}}}
    assert in_task.value.data == {"requiredCapabilities": {"sampling": {}}}
