"""The smolagents adapter, judged by smolagents' own agents: a ToolCallingAgent and a
CodeAgent, driven by a scripted `smolagents.models.Model`, call an OpenAPI tool against
the notes API on 127.0.0.1 and MCP tools of the fixture server (and of
server-everything); and smolagents tools run by toolsets' own agent loop."""

from __future__ import annotations

import ast
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Annotated, Any

import anyio
import anyio.lowlevel
import pytest
import smolagents
from pydantic import Field
from smolagents import CodeAgent, ToolCallingAgent, tool
from smolagents.memory import ActionStep
from smolagents.models import (
    ChatMessage,
    ChatMessageToolCall,
    ChatMessageToolCallFunction,
    MessageRole,
    Model,
)
from smolagents.utils import AgentError, is_valid_name

from tests.adapters.helpers import NotesApi, everything, mcp_toolset, notes_api
from tests.agent.helpers import agent_with, approve, asked_to_confirm, call, response_of, start
from tests.helpers import NODE, PEERS
from toolsets import (
    AuthConfig,
    AuthCredential,
    BaseTool,
    BaseToolset,
    ConnectionError,
    FunctionTool,
    JsonValue,
    SpecError,
    StaticToolset,
    Tool,
    ToolCallError,
    ToolContext,
    ToolsetError,
)
from toolsets._install import install_line
from toolsets._invoke import DECLINED, Callbacks
from toolsets.adapters.smolagents import (
    SmolagentsToolError,
    from_smolagents,
    to_smolagents,
)
from toolsets.mcp import McpToolset, Stdio

EVERYTHING = PEERS / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"

# --- a scripted smolagents model ------------------------------------------------------


def calls(*pairs: tuple[str, dict[str, Any]]) -> ChatMessage:
    """A model turn calling tools, as smolagents' API models return it."""
    return ChatMessage(
        role=MessageRole.ASSISTANT,
        content="",
        tool_calls=[
            ChatMessageToolCall(
                id=f"call_{index}",
                type="function",
                function=ChatMessageToolCallFunction(name=name, arguments=args),
            )
            for index, (name, args) in enumerate(pairs)
        ],
    )


def answer(text: str) -> ChatMessage:
    return calls(("final_answer", {"answer": text}))


def code(source: str) -> ChatMessage:
    """A CodeAgent turn: Python between the agent's code tags."""
    return ChatMessage(role=MessageRole.ASSISTANT, content=f"<code>\n{source}\n</code>")


class ScriptedSmolModel(Model):  # type: ignore[misc]
    """A smolagents model that replays its turns, keeping what it was sent."""

    def __init__(self, turns: Sequence[ChatMessage]) -> None:
        super().__init__(model_id="scripted")
        self.turns = list(turns)
        self.sent: list[list[Any]] = []
        self.tools: list[Any] = []

    def generate(
        self,
        messages: list[Any],
        stop_sequences: list[str] | None = None,
        response_format: dict[str, str] | None = None,
        tools_to_call_from: list[Any] | None = None,
        **kwargs: Any,
    ) -> ChatMessage:
        self.sent.append(list(messages))
        self.tools = list(tools_to_call_from or [])
        return self.turns.pop(0)


def run_tool_calling(tools: list[Any], *turns: ChatMessage) -> tuple[Any, ToolCallingAgent]:
    agent = ToolCallingAgent(
        tools=tools, model=ScriptedSmolModel(turns), max_steps=len(turns), verbosity_level=-1
    )
    return agent.run("Do it."), agent


def step_errors(agent: Any) -> list[AgentError]:
    return [s.error for s in agent.memory.steps if isinstance(s, ActionStep) and s.error]


def tool_error(error: AgentError) -> SmolagentsToolError:
    """The adapter's error behind a step's error."""
    cause = error.__cause__
    assert isinstance(cause, SmolagentsToolError), error
    return cause


def observations(agent: Any) -> list[str]:
    return [s.observations for s in agent.memory.steps if isinstance(s, ActionStep)]


def observed(agent: Any, step: int) -> Any:
    """The value a ToolCallingAgent showed the model as the observation of one call."""
    return ast.literal_eval(observations(agent)[step])


@pytest.fixture
def api() -> Iterator[NotesApi]:
    with notes_api() as running:
        yield running


# --- out: a toolset in smolagents' agents -----------------------------------------------


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_tool_calling_agent_calls_an_openapi_tool_and_an_mcp_tool(
    api: NotesApi, backend: Any
) -> None:
    with to_smolagents(everything(api), backend=backend) as tools:
        result, agent = run_tool_calling(
            tools,
            calls(("create_note", {"title": "milk", "body": "2 l"})),
            calls(("add", {"a": 40, "b": 2})),
            answer("noted; 42"),
        )
    assert result == "noted; 42"
    assert api.requests == ["POST /notes"]
    assert api.notes == {1: {"id": 1, "title": "milk", "body": "2 l"}}
    seen = observations(agent)
    assert "'title': 'milk'" in seen[0]
    assert seen[1] == "{'total': 42}"


def test_a_code_agent_calls_the_tools_as_python_functions(api: NotesApi) -> None:
    program = 'note = create_note(title="milk")\ntotal = add(note["id"], 41)\nfinal_answer(total)'
    with to_smolagents(everything(api)) as tools:
        agent = CodeAgent(
            tools=tools, model=ScriptedSmolModel([code(program)]), max_steps=1, verbosity_level=-1
        )
        result = agent.run("Do it.")
    assert result == {"total": 42}
    assert api.requests == ["POST /notes"]


def test_the_tools_are_offered_with_their_description_inputs_and_output(api: NotesApi) -> None:
    with to_smolagents(everything(api)) as tools:
        by_name = {t.name: t for t in tools}
    create, listing, add = by_name["create_note"], by_name["list_notes"], by_name["add"]
    assert create.description == "Create a note"
    assert create.inputs["title"] == {"type": "string", "minLength": 1, "description": ""}
    assert create.inputs["body"]["nullable"] is True
    assert listing.inputs["limit"]["type"] == "integer"
    assert listing.inputs["limit"]["nullable"] is True
    assert add.output_type == "object"
    assert add.output_schema["properties"]["total"]["type"] == "integer"
    assert by_name["wipe_disk"].output_type == "string"


def test_invalid_arguments_come_back_to_the_model_naming_the_field(api: NotesApi) -> None:
    with to_smolagents(everything(api)) as tools:
        _, agent = run_tool_calling(
            tools,
            calls(("create_note", {"title": ""})),
            calls(("create_note", {"title": "milk"})),
            answer("done"),
        )
    assert step_errors(agent) == []
    assert list(observed(agent, 0)["fields"]) == ["title"]
    # What the model is sent next holds the field and its problem.
    assert "'fields': {'title'" in agent.model.sent[1][-1].content[0]["text"]
    assert api.requests == ["POST /notes"]  # only the fixed call reached the API


def test_a_failing_call_keeps_the_results_of_the_other_calls_of_its_turn(api: NotesApi) -> None:
    with to_smolagents(everything(api)) as tools:
        _, agent = run_tool_calling(
            tools,
            calls(("create_note", {"title": "a"}), ("create_note", {"title": ""})),
            answer(""),
        )
    assert step_errors(agent) == []
    created, invalid = observations(agent)[0].split("\n")
    assert ast.literal_eval(created) == {"id": 1, "title": "a"}
    assert list(ast.literal_eval(invalid)["fields"]) == ["title"]
    assert api.requests == ["POST /notes"]


def test_with_errors_raise_the_step_of_a_tool_calling_agent_fails(api: NotesApi) -> None:
    with to_smolagents(everything(api), errors="raise") as tools:
        _, agent = run_tool_calling(tools, calls(("create_note", {"title": ""})), answer(""))
    (error,) = step_errors(agent)
    assert list(tool_error(error).result["fields"]) == ["title"]
    assert tool_error(error).tool_name == "create_note"


def test_invalid_arguments_fail_a_code_agents_line_with_the_field_named(api: NotesApi) -> None:
    with to_smolagents(everything(api)) as tools:
        model = ScriptedSmolModel(
            [code('create_note(title="")'), code('final_answer(create_note(title="x"))')]
        )
        agent = CodeAgent(tools=tools, model=model, max_steps=2, verbosity_level=-1)
        result = agent.run("Do it.")
    assert result == {"id": 1, "title": "x"}
    (error,) = step_errors(agent)
    assert "SmolagentsToolError" in error.message
    assert '"fields": {"title"' in error.message


def test_with_errors_return_a_code_agent_gets_the_error_result_as_a_value(api: NotesApi) -> None:
    with to_smolagents(everything(api), errors="return") as tools:
        model = ScriptedSmolModel([code("final_answer(get_note(note_id=7))")])
        agent = CodeAgent(tools=tools, model=model, max_steps=1, verbosity_level=-1)
        result = agent.run("Do it.")
    assert step_errors(agent) == []
    assert "404" in result["error"]


@pytest.mark.parametrize("approve", [True, False])
def test_confirm_decides_each_call_and_a_declined_one_never_reaches_the_server(
    api: NotesApi, approve: bool
) -> None:
    api.notes[1] = {"id": 1, "title": "old"}
    asked: list[tuple[str, dict[str, Any]]] = []

    def confirm(hint: str, args: dict[str, Any]) -> bool:
        asked.append((hint, args))
        return approve

    with to_smolagents(everything(api), confirm=confirm) as tools:
        _, agent = run_tool_calling(
            tools,
            calls(("delete_note", {"note_id": 1})),
            calls(("list_notes", {})),
            answer("done"),
        )
    assert [args for _, args in asked] == [{"note_id": 1}]  # list_notes asks nothing
    assert asked[0][0].startswith("Allow DELETE /notes/")
    if approve:
        assert api.requests == ["DELETE /notes/1", "GET /notes"]
        assert step_errors(agent) == []
    else:
        assert api.requests == ["GET /notes"]
        assert observed(agent, 0) == {"error": DECLINED}


def test_confirm_sees_the_tools_own_argument_names() -> None:
    @FunctionTool
    def purge(days_old: Annotated[int, Field(alias="days-old")]) -> str:
        """Purge old files."""
        return f"purged {days_old}"

    gated = FunctionTool(purge.fn, name="files.purge", requires_confirmation=True)
    asked: list[dict[str, Any]] = []
    with to_smolagents([gated], confirm=lambda hint, args: asked.append(args) is None) as tools:
        (smol,) = tools
        assert (smol.name, list(smol.inputs)) == ("files_purge", ["days_old"])
        assert smol(days_old=3) == "purged 3"
    assert asked == [{"days-old": 3}]


def test_optional_arguments_are_nullable_and_null_means_not_given(api: NotesApi) -> None:
    with to_smolagents(everything(api)) as tools:
        _, agent = run_tool_calling(
            tools,
            calls(("list_notes", {"limit": None})),
            calls(("create_note", {"title": "a", "body": None})),
            answer("done"),
        )
    assert step_errors(agent) == []
    assert api.requests == ["GET /notes", "POST /notes"]
    assert api.notes[1] == {"id": 1, "title": "a"}


@pytest.fixture(scope="module")
def everything_tools() -> Iterator[list[Any]]:
    server = McpToolset(Stdio(command=str(NODE), args=[str(EVERYTHING), "stdio"]))
    with to_smolagents(server) as tools:
        yield tools


def test_server_everythings_names_become_python_identifiers(everything_tools: list[Any]) -> None:
    names = {t.toolset_tool.name: t.name for t in everything_tools}
    assert len(names) == 13
    assert names["get-sum"] == "get_sum"
    assert names["trigger-long-running-operation"] == "trigger_long_running_operation"
    for smol in everything_tools:
        assert is_valid_name(smol.name)
        assert all(is_valid_name(arg) for arg in smol.inputs)


def test_an_agent_calls_a_server_everything_tool_by_its_mapped_name(
    everything_tools: list[Any],
) -> None:
    _result, agent = run_tool_calling(
        everything_tools,
        calls(("get_sum", {"a": 2, "b": 40})),
        calls(("echo", {"message": "hi"})),
        answer("42"),
    )
    assert step_errors(agent) == []
    seen = observations(agent)
    assert "42" in seen[0]
    assert "hi" in seen[1]


def test_names_with_dots_dashes_and_keywords_map_back_exactly() -> None:
    got: list[tuple[int, str]] = []

    def search(
        max_items: Annotated[int, Field(alias="max-items")],
        klass: Annotated[str, Field(alias="class")],
    ) -> str:
        """Search."""
        got.append((max_items, klass))
        return "ok"

    tools_in = [
        FunctionTool(search, name="db.search-all"),
        FunctionTool(search, name="db_search_all"),
        FunctionTool(search, name="final_answer"),
        FunctionTool(search, name="import"),
    ]
    adapter = to_smolagents(tools_in)
    with adapter as tools:
        names = adapter.names
        assert names["db_search_all"] == "db_search_all"  # legal names are claimed first
        assert names["db.search-all"].startswith("db_search_all_")  # then a hash
        assert (names["final_answer"], names["import"]) == ("final_answer_", "import_")
        assert all(is_valid_name(name) for name in names.values())
        smol = tools[0]
        assert list(smol.inputs) == ["max_items", "class_"]
        _, agent = run_tool_calling(
            tools, calls((smol.name, {"max_items": 3, "class_": "note"})), answer("ok")
        )
    assert step_errors(agent) == []
    assert got == [(3, "note")]


def test_a_credential_comes_from_credentials_else_the_call_is_refused_naming_it() -> None:
    config = AuthConfig(scheme_name="notes_key")

    def whoami(ctx: ToolContext) -> str:
        """Who the API thinks you are."""
        assert ctx.auth_credential is not None
        return f"token {ctx.auth_credential.secret}"

    secured = FunctionTool(whoami, auth_config=config)
    with to_smolagents([secured]) as tools, pytest.raises(SmolagentsToolError) as refused:
        tools[0]()
    assert refused.value.result["credential"] == "notes_key"
    given = {"notes_key": AuthCredential.bearer("s3cret")}
    with to_smolagents([secured], credentials=given) as tools:
        assert tools[0]() == "token s3cret"
    with to_smolagents(
        [secured], credentials=lambda needed: given.get(needed.scheme_name)
    ) as tools:
        assert tools[0]() == "token s3cret"


def test_the_context_carries_the_user_session_and_state_across_calls() -> None:
    seen: list[tuple[str, str, Any]] = []

    def count(ctx: ToolContext) -> int:
        """Count the calls."""
        value = int(ctx.state.get("count", 0)) + 1
        ctx.state["count"] = value
        seen.append((ctx.invocation.user_id, ctx.invocation.session_id, ctx.function_call_id))
        return value

    state: dict[str, Any] = {"count": 10}
    adapter = to_smolagents([count], user_id="ann", session_id="s1", state=state)
    with adapter as tools:
        assert [tools[0](), tools[0]()] == [11, 12]
    assert state == {"count": 12}
    assert adapter.state is state
    assert [(user, session) for user, session, _ in seen] == [("ann", "s1"), ("ann", "s1")]
    assert seen[0][2] != seen[1][2]  # each call has its own id


def test_a_plain_function_runs_in_the_callers_thread_and_others_on_the_loop() -> None:
    threads: dict[str, int] = {}

    def at_once(x: int) -> int:
        """Returns at once."""
        threads["at_once"] = threading.get_ident()
        return x

    def in_worker(x: int) -> int:
        """Runs in a worker thread."""
        threads["in_worker"] = threading.get_ident()
        return x

    def failing(x: int) -> int:
        """Fails."""
        raise ValueError(f"no {x}")

    fast = FunctionTool(at_once, run_in_thread=False)
    broken = FunctionTool(failing, run_in_thread=False)
    with to_smolagents([fast, in_worker, broken]) as tools:
        assert [tools[0](x=1), tools[1](x=2)] == [1, 2]
        with pytest.raises(SmolagentsToolError) as failed:
            tools[2](x=3)
    assert threads["at_once"] == threading.get_ident()
    assert threads["in_worker"] != threading.get_ident()
    assert failed.value.result == {"error": "The tool 'failing' failed: ValueError: no 3"}


def test_tools_refuse_once_the_adapter_is_closed() -> None:
    adapter = to_smolagents(mcp_toolset())
    with adapter as tools:
        add = next(t for t in tools if t.name == "add")
        assert add(a=1, b=1) == {"total": 2}
    with pytest.raises(ToolCallError) as refused:
        add(a=1, b=1)
    assert refused.value.tool_name == "add"
    adapter.close()  # idempotent
    with pytest.raises(ToolsetError):
        adapter.open()


def test_a_toolset_that_cannot_open_raises_when_the_adapter_opens() -> None:
    broken = McpToolset(Stdio(command=sys.executable, args=["-c", "raise SystemExit(3)"]))
    with pytest.raises(ConnectionError), to_smolagents(broken, open_timeout=30):
        pass


def test_without_the_extra_the_import_names_the_install_line() -> None:
    program = (
        "import sys; sys.modules['smolagents'] = None\n"
        "try:\n    import toolsets.adapters.smolagents\n"
        "except ImportError as exc:\n    print(exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=True
    )
    assert install_line("smolagents") in done.stdout  # toolsets-ai is not on PyPI


# --- in: smolagents tools in toolsets' agent loop ----------------------------------------


@tool
def get_weather(city: str, unit: str | None = None) -> str:
    """Today's weather in a city.

    Args:
        city: The city.
        unit: "C" or "F".
    """
    if city == "Atlantis":
        raise ValueError("no such city")
    return f"sunny in {city}, 24 {unit or 'C'}"


def test_a_smolagents_tools_inputs_become_a_json_schema() -> None:
    (converted,) = anyio.run(from_smolagents([get_weather]).list_tools)
    declaration = converted.declaration()
    assert declaration is not None
    assert declaration.parameters == {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "The city."},
            "unit": {"type": ["string", "null"], "description": '"C" or "F".'},
        },
        "required": ["city"],
        "additionalProperties": False,
    }
    assert declaration.response == {"type": "string"}


@pytest.mark.anyio
async def test_our_agent_loop_calls_a_smolagents_tool_in_a_worker_thread() -> None:
    runner, _ = agent_with(
        [
            call("get_weather", city="Lisbon"),
            call("get_weather", city=7),
            call("get_weather", city="Atlantis"),
            "Sunny in Lisbon.",
        ],
        [from_smolagents([get_weather])],
    )
    _, events = await start(runner, "Weather?")
    responses = [r.response for e in events for r in e.function_responses]
    assert responses[0] == "sunny in Lisbon, 24 C"
    assert isinstance(responses[1], dict)
    assert list(responses[1]["fields"]) == ["city"]
    assert responses[2] == {"error": "The tool 'get_weather' failed: ValueError: no such city"}
    assert response_of(events, "get_weather") == responses[2]
    assert events[-1].text == "Sunny in Lisbon."


def test_the_toolset_of_smolagents_tools_is_a_static_toolset() -> None:
    assert isinstance(from_smolagents([get_weather]), StaticToolset)


# --- bounded waits ----------------------------------------------------------------------


class Stuck(BaseToolset):
    """A toolset that hangs where it is told to: listing, or closing."""

    def __init__(self, *, listing: bool = False, closing: bool = False) -> None:
        self.listing, self.closing = listing, closing

    async def list_tools(self, ctx: ToolContext | None = None) -> Sequence[Tool]:
        if self.listing:
            await anyio.sleep_forever()
        return [FunctionTool(hang, timeout=0.2)]

    async def shutdown(self) -> None:
        if self.closing:
            await anyio.sleep_forever()


async def hang() -> str:
    """Never answers."""
    await anyio.sleep_forever()
    return "never"


def in_thread(work: Callable[[], object], seconds: float = 20) -> None:
    """Run ``work`` in a thread; fail if it is still running after ``seconds``."""
    failures: list[BaseException] = []

    def run() -> None:
        try:
            work()
        except BaseException as exc:  # handed to the test's thread
            failures.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), "it hung"
    if failures:
        raise failures[0]


def test_a_toolset_that_never_lists_fails_to_open_within_open_timeout() -> None:
    def open_it() -> None:
        with to_smolagents(Stuck(listing=True), open_timeout=0.3):
            pass

    with pytest.raises(TimeoutError):
        in_thread(open_it)


def test_a_toolset_that_never_closes_is_cancelled_after_close_timeout() -> None:
    def use_it() -> None:
        with to_smolagents(Stuck(closing=True), close_timeout=0.3) as tools:
            assert [t.name for t in tools] == ["hang"]

    in_thread(use_it)


def test_a_call_that_never_answers_ends_at_its_deadline_with_an_error() -> None:
    def call_it() -> None:
        with to_smolagents(Stuck()) as tools, pytest.raises(SmolagentsToolError) as late:
            tools[0]()
        assert late.value.result["error"].startswith("The tool 'hang' timed out")

    in_thread(call_it)


# --- schemas ----------------------------------------------------------------------------


class Echo(BaseTool):
    """A tool with a given schema that returns its arguments."""

    async def run(self, args: Mapping[str, Any], ctx: ToolContext) -> JsonValue:
        return dict(args)


NODE_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "child": {"$ref": "#/$defs/Node"}},
}
SHAPES = {
    "type": "object",
    "properties": {
        "text": {"type": ["string", "null"], "description": "Some text."},
        "count": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        "id": {"type": ["string", "integer"]},
        "mode": {"enum": ["fast", "slow"]},
        "limit": {"type": "integer"},
        "anything": {},
        "tree": {"$ref": "#/$defs/Node"},
        "either": {"oneOf": [{"$ref": "#/$defs/Node"}, {"type": "string"}]},
    },
    "required": ["text", "id", "mode"],
    "$defs": {"Node": NODE_SCHEMA},
}


def test_json_schema_shapes_become_inputs_smolagents_accepts() -> None:
    with to_smolagents([Echo("shapes", "Shapes.", parameters=SHAPES)]) as (smol,):
        inputs = smol.inputs
        assert inputs["text"] == {"type": "string", "description": "Some text.", "nullable": True}
        assert inputs["count"]["type"] == "integer"
        assert inputs["count"]["nullable"] is True
        assert inputs["id"]["type"] == ["string", "integer"]
        assert "nullable" not in inputs["id"]
        assert inputs["mode"]["type"] == "string"
        assert inputs["anything"]["type"] == "any"
        # A recursive definition is inlined once, then left open: inputs carry no $defs.
        assert inputs["tree"]["type"] == "object"
        assert inputs["tree"]["properties"]["child"] == {}
        assert "$ref" not in str(inputs)
        assert inputs["either"]["type"] == ["object", "string"]
        _, agent = run_tool_calling(
            [smol],
            calls(
                ("shapes", {"text": None, "count": None, "id": 7, "mode": "fast", "limit": None})
            ),
            answer("ok"),
        )
    assert step_errors(agent) == []
    # null for an optional argument that does not take null ("limit") means "not given".
    assert observations(agent)[0] == "{'text': None, 'count': None, 'id': 7, 'mode': 'fast'}"


def test_a_schema_whose_reference_points_at_nothing_fails_the_open_and_closes() -> None:
    broken = {"type": "object", "properties": {"a": {"$ref": "#/$defs/Missing"}}}
    adapter = to_smolagents([Echo("broken", parameters=broken)])
    with pytest.raises(SpecError) as failed:
        adapter.open()
    assert failed.value.pointer == "/properties/a/$ref"
    adapter.close()


def test_positional_arguments_map_to_the_inputs_in_order_as_python_would() -> None:
    def power(base: int, exponent: int = 2) -> int:
        """base ** exponent."""
        return int(base**exponent)

    with to_smolagents([FunctionTool(power, run_in_thread=False)]) as (smol,):
        assert [smol(3), smol(2, 5), smol(2, exponent=3)] == [9, 32, 8]
        with pytest.raises(TypeError):
            smol(2, base=3)
        with pytest.raises(TypeError):
            smol(1, 2, 3)


def test_a_tool_that_asks_for_confirmation_while_running_runs_again_with_the_answer() -> None:
    def transfer(amount: int, ctx: ToolContext) -> str:
        """Move money."""
        if amount > 100 and ctx.tool_confirmation is None:
            ctx.request_confirmation(hint=f"Transfer {amount}?")
            return "waiting"
        if ctx.tool_confirmation is not None and not ctx.tool_confirmation.confirmed:
            return "cancelled"
        return f"moved {amount}"

    hints: list[str] = []
    with to_smolagents([transfer], confirm=lambda hint, args: hints.append(hint) is None) as tools:
        assert [tools[0](amount=5), tools[0](amount=500)] == ["moved 5", "moved 500"]
    assert hints == ["Transfer 500?"]


def test_a_long_running_tool_gives_its_interim_result() -> None:
    def start_job(name: str) -> dict[str, str]:
        """Start a job."""
        return {"status": "started", "job": name}

    job = FunctionTool(start_job, is_long_running=True)
    with to_smolagents([job]) as (smol,):
        assert smol(name="backup") == {"status": "started", "job": "backup"}
        assert "long-running" in smol.description


class Resize(smolagents.Tool):  # type: ignore[misc]
    """A smolagents tool written as a class, with every kind of input."""

    name = "resize"
    description = "Resize an image."
    inputs = {  # noqa: RUF012 - smolagents reads these class attributes
        "image": {"type": "image", "description": "Path or URL of the image."},
        "size": {"type": ["integer", "number"], "description": "The new width."},
        "options": {"type": "any", "description": "Anything.", "nullable": True},
    }
    output_type = "object"
    output_schema = {"type": "object", "properties": {"width": {"type": "number"}}}  # noqa: RUF012

    def forward(self, image: str, size: float, options: Any = None) -> dict[str, Any]:
        return {"width": size, "image": image, "options": options}


def test_a_smolagents_tool_class_with_any_kind_of_input_becomes_a_tool() -> None:
    (converted,) = anyio.run(from_smolagents([Resize()]).list_tools)
    declaration = converted.declaration()
    assert declaration is not None
    assert declaration.parameters["properties"] == {
        "image": {"type": "string", "description": "Path or URL of the image."},
        "size": {"type": ["integer", "number"], "description": "The new width."},
        "options": {"description": "Anything."},
    }
    assert declaration.parameters["required"] == ["image", "size"]
    assert declaration.response == Resize.output_schema


@pytest.mark.anyio
async def test_a_smolagents_tool_can_be_made_to_ask_for_confirmation_in_our_loop() -> None:
    runner, _ = agent_with(
        [call("resize", image="a.png", size=10), "Resized."],
        [from_smolagents([Resize()], requires_confirmation=True)],
    )
    session_id, events = await start(runner, "Resize it.")
    request = asked_to_confirm(events)
    assert request.args == {"image": "a.png", "size": 10}
    resumed = await approve(runner, session_id, request)
    assert response_of(resumed, "resize") == {"width": 10, "image": "a.png", "options": None}


def test_callbacks_run_around_each_call_on_the_adapters_loop() -> None:
    seen: list[str] = []

    def double(disk: str) -> str:
        """Echo a disk's name."""
        return disk

    def before(tool: Any, args: dict[str, Any], ctx: Any) -> None:
        seen.append(f"before {args['disk']}")
        args["disk"] = args["disk"].upper()

    async def after(tool: Any, args: Any, ctx: Any, result: Any) -> Any:
        await anyio.lowlevel.checkpoint()  # an async callback that waits: not on the fast path
        return f"{result}!"

    callbacks = Callbacks(before_tool=[before], after_tool=[after])
    fast = FunctionTool(double, run_in_thread=False)
    with to_smolagents([fast], callbacks=callbacks) as (echo,):
        assert echo(disk="sda") == "SDA!"
    assert seen == ["before sda"]
