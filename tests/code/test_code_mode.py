"""code_mode: one ``run_code`` tool running the model's program, whose calls go through
the one call path (function tools and an OpenAPI API served on 127.0.0.1)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from typing import Any, Literal

import anyio
import pytest
from typing_extensions import TypedDict

from tests.agent.helpers import call, response_of, start
from tests.code.helpers import APP, SPEC, run_code
from tests.helpers import PEERS, ROOT, serve_app
from toolsets import (
    AuthConfig,
    BaseToolset,
    Callbacks,
    FunctionTool,
    StaticToolset,
    Tool,
    ToolContext,
    ToolDefinitionError,
    code_mode,
    combined,
    tool,
)
from toolsets.agent import LlmAgent, Runner
from toolsets.code import CodeModeToolset, Limits
from toolsets.models import ScriptedModel
from toolsets.openapi import OpenApiToolset

pytestmark = pytest.mark.anyio


@tool
def discount(price: int, percent: int) -> int:
    """The price after a discount."""
    return price - price * percent // 100


@tool
async def shipping(country: str, ctx: ToolContext) -> int:
    """What shipping to a country costs."""
    ctx.state["asked"] = country
    return {"fr": 5, "de": 7}.get(country, 20)


@tool(required_scopes=frozenset({"admin"}))
def purge() -> str:
    """Purge the cache."""
    return "purged"


class Address(TypedDict):
    street: str
    country: Literal["fr", "de"]


@tool
def ship(items: list[str], to: Address, express: bool = False) -> str:
    """Ship items to an address."""
    return f"{len(items)} to {to['country']}"


async def test_a_program_calls_function_tools_and_an_openapi_api_and_combines_them() -> None:
    with serve_app(APP) as port:
        api = OpenApiToolset(SPEC, base_url=f"http://127.0.0.1:{port}")
        async with code_mode(combined(StaticToolset([discount, shipping]), api)) as toolset:
            result = await run_code(
                toolset,
                "import asyncio\n"
                "items = await tools.listItems(limit=5)\n"
                "one, cost = await asyncio.gather(\n"
                "    tools.getItem(id='1'), tools.shipping(country='fr'))\n"
                "price = await tools.discount(price=one['price'], percent=10)\n"
                "print('items:', len(items))\n"
                "{'name': one['name'], 'total': price + cost, 'names': [i['name'] for i in items]}",
            )
    assert result == {
        "result": {"name": "kettle", "total": 32, "names": ["kettle", "mug"]},
        "printed": "items: 2\n",
    }


async def test_an_api_error_raises_in_the_program_with_its_line() -> None:
    with serve_app(APP) as port:
        api = OpenApiToolset(SPEC, base_url=f"http://127.0.0.1:{port}")
        async with code_mode(api) as toolset:
            result = await run_code(toolset, "x = 1\nawait tools.getItem(id='9')\n")
    assert isinstance(result, dict)
    assert (result["line"], result["exception"]) == (2, "RuntimeError")
    assert "no such item" in str(result["error"])


async def test_a_program_may_catch_a_failed_call_and_go_on() -> None:
    async with code_mode(StaticToolset([discount])) as toolset:
        result = await run_code(
            toolset,
            "try:\n    await tools.discount(price='cheap', percent=1)\n"
            "except RuntimeError as e:\n    r = 'price' in str(e)\nr",
        )
    assert result == {"result": True}


async def test_each_call_from_the_program_passes_the_callers_callbacks() -> None:
    seen: list[tuple[str, dict[str, Any]]] = []

    def before(tool: Tool, args: dict[str, Any], ctx: ToolContext) -> None:
        seen.append((tool.name, dict(args)))
        if tool.name == "discount":
            args["percent"] = 50  # a callback may rewrite the call, as for a direct one
        return None

    async with code_mode(StaticToolset([discount])) as toolset:
        result = await run_code(
            toolset,
            "await tools.discount(price=100, percent=10)",
            callbacks=Callbacks(before_tool=[before]),
        )
    assert result == {"result": 50}
    assert seen == [
        ("run_code", {"code": "await tools.discount(price=100, percent=10)"}),
        ("discount", {"price": 100, "percent": 10}),
    ]


async def test_a_destructive_operation_of_an_api_is_refused_from_code() -> None:
    with serve_app(APP) as port:
        api = OpenApiToolset(SPEC, base_url=f"http://127.0.0.1:{port}")
        async with code_mode(api) as toolset:
            result = await run_code(toolset, "await tools.deleteItem(id='1')")
    assert isinstance(result, dict)
    assert result["exception"] == "PermissionError"


async def test_a_call_needs_the_scopes_of_the_caller() -> None:
    async with code_mode(StaticToolset([purge])) as toolset:
        refused = await run_code(toolset, "await tools.purge()")
        allowed = await run_code(toolset, "await tools.purge()", scopes=frozenset({"admin"}))
    assert isinstance(refused, dict)
    assert "admin" in str(refused["error"])
    assert allowed == {"result": "purged"}


async def test_what_a_called_tool_writes_to_the_state_is_kept_with_run_codes_call() -> None:
    ctx = ToolContext(function_call_id="c")
    async with code_mode(StaticToolset([shipping])) as toolset:
        result = await run_code(toolset, "await tools.shipping(country='de')", ctx=ctx)
    assert result == {"result": 7}
    assert ctx.actions.state_delta == {"asked": "de"}


async def test_an_agent_runs_a_program_that_calls_several_tools_in_one_turn() -> None:
    program = (
        "total = 0\n"
        "for country in ['fr', 'de', 'us']:\n"
        "    total += await tools.shipping(country=country)\n"
        "total"
    )
    model = ScriptedModel([call("run_code", code=program), "Shipping everywhere costs 32."])
    runner = Runner(LlmAgent("shop", model, tools=[code_mode(StaticToolset([shipping, discount]))]))
    session_id, events = await start(runner, "what does shipping cost?")
    assert response_of(events, "run_code") == {"result": 32}
    assert events[-1].text == "Shipping everywhere costs 32."
    first = model.requests[0]
    assert list(first.declarations) == ["run_code"]
    assert (
        "async def shipping(*, country: str) -> int:" in first.declarations["run_code"].description
    )
    session = await runner.get_session(user_id="u", session_id=session_id)
    assert session.state["asked"] == "us"


async def test_the_description_carries_typed_signatures_from_the_json_schemas() -> None:
    async with code_mode(StaticToolset([ship, discount])) as toolset:
        (run,) = await toolset.list_tools()
    text = run.description
    assert (
        "ShipAddress = TypedDict('ShipAddress', {'street': str, 'country': Literal['fr', 'de']})"
        in text
    )
    assert (
        "async def ship(*, items: list[str], to: ShipAddress, express: bool | None = None) -> str:"
        in text
    )
    assert '"""Ship items to an address."""' in text
    assert "async def discount(*, price: int, percent: int) -> int:" in text


async def test_signatures_past_the_budget_are_listed_by_name() -> None:
    tools = [FunctionTool(lambda x=0: x, name=f"op_{n}", description="An op.") for n in range(50)]
    async with code_mode(StaticToolset(tools), description_budget=500) as toolset:
        (run,) = await toolset.list_tools()
    assert "async def op_0(" in run.description
    assert "async def op_49(" not in run.description
    also = run.description.rsplit("# Also", 1)[1]
    assert "op_35 and 14 more" in also
    assert len(run.description) < 3000


async def test_a_tool_name_that_is_no_identifier_is_called_by_its_python_name() -> None:
    dashed = FunctionTool(lambda item="": 3, name="get-price", description="A price.")
    async with code_mode(StaticToolset([dashed]), namespace="shop") as toolset:
        (run,) = await toolset.list_tools()
        result = await run_code(toolset, "await shop.get_price(item='x')")
    assert "async def get_price(" in run.description
    assert result == {"result": 3}


class _Searchable(BaseToolset):
    """A toolset offering ``search_tools``, which loads (lists) the tools it finds from
    then on, per session (as `searchable` does)."""

    def __init__(self) -> None:
        self.loaded: set[str] = set()

        @tool
        def search_tools(query: str) -> list[str]:
            """Find tools."""
            found = [name for name in ("discount",) if name.startswith(query[:3])]
            self.loaded.update(found)
            return found

        self._search = search_tools

    async def list_tools(self, ctx: ToolContext | None = None) -> Sequence[Tool]:
        return [self._search, *([discount] if "discount" in self.loaded else [])]


async def test_with_a_search_tool_a_program_finds_a_tool_and_calls_it_at_once() -> None:
    async with code_mode(_Searchable()) as toolset:
        (before,) = await toolset.list_tools()
        result = await run_code(
            toolset,
            "found = await tools.search_tools(query='discount')\n"
            "await tools.discount(price=10, percent=50)",
        )
        (after,) = await toolset.list_tools()
    assert "tools.search_tools(query=...)" in before.description
    assert "async def discount(" not in before.description
    assert result == {"result": 5}
    assert "async def discount(" in after.description


async def test_an_unknown_tool_is_an_attribute_error_naming_it() -> None:
    async with code_mode(StaticToolset([discount])) as toolset:
        result = await run_code(toolset, "await tools.discont(price=1, percent=1)")
    assert isinstance(result, dict)
    assert (result["exception"], result["line"]) == ("AttributeError", 1)
    assert "'discont'" in str(result["error"])


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("timeout", 0),
        ("timeout", True),
        ("timeout", float("inf")),
        ("timeout", float("nan")),
        ("max_tool_calls", -1),
        ("max_tool_calls", 2.5),
        ("max_tool_calls", True),
        ("max_memory", 1e8),
        ("max_output", "big"),
        ("max_workers", 0),
        ("description_budget", 100.0),
        ("namespace", "my-tools"),
    ],
)
def test_a_bad_option_is_refused_naming_it(option: str, value: object) -> None:
    with pytest.raises(ToolDefinitionError) as caught:
        code_mode(StaticToolset([discount]), **{option: value})  # type: ignore[arg-type]
    assert caught.value.field == option


def test_without_the_extra_toolsets_imports_and_code_mode_names_the_install_line() -> None:
    program = (
        "import sys\nsys.modules['pydantic_monty'] = None\n"
        "import toolsets\n"
        "try:\n    toolsets.code_mode(toolsets.StaticToolset([]))\n"
        "except ImportError as e:\n    print(e)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT / "src"), "PATH": ""},
    )
    assert done.returncode == 0, done.stderr
    assert "pydantic-monty" in done.stdout
    assert "[code]" in done.stdout


async def test_calls_gathered_run_together_unless_a_tool_is_not_concurrency_safe() -> None:
    running = 0
    most = 0
    arrived = {"a": anyio.Event(), "b": anyio.Event()}

    @tool(read_only=True)
    async def wait_for(me: str, other: str) -> str:
        """Meet the other call (only possible when both run at once)."""
        arrived[me].set()
        await arrived[other].wait()
        return me

    @tool
    async def write(n: int) -> int:
        """Write (not concurrency-safe)."""
        nonlocal running, most
        running += 1
        most = max(most, running)
        await anyio.sleep(0.01)
        running -= 1
        return n

    async with code_mode(StaticToolset([wait_for, write])) as toolset:
        met = await run_code(
            toolset,
            "import asyncio\nawait asyncio.gather("
            "tools.wait_for(me='a', other='b'), tools.wait_for(me='b', other='a'))",
        )
        written = await run_code(
            toolset,
            "import asyncio\nawait asyncio.gather(*[tools.write(n=n) for n in range(3)])",
        )
    assert met == {"result": ["a", "b"]}
    assert written == {"result": [0, 1, 2]}
    assert most == 1


async def test_over_githubs_spec_the_description_is_bounded_valid_python_and_quick() -> None:
    import ast
    import time

    spec = PEERS / "@octokit" / "openapi" / "generated" / "api.github.com.json"
    async with code_mode(OpenApiToolset(spec, base_url="http://127.0.0.1:9")) as toolset:
        await toolset.list_tools()  # the spec loaded
        started = time.perf_counter()
        (run,) = await toolset.list_tools()
        took = time.perf_counter() - started
    budget = 40_000
    assert len(run.description) < budget * 1.25 + 2_000
    stubs = run.description.split("```python\n", 1)[1].rsplit("```", 1)[0]
    ast.parse(stubs)
    assert "async def meta_root() -> Any:" in stubs
    assert " more\n" in stubs  # the names past the budget, cut too
    assert took < 2.0


TOKEN = AuthConfig(scheme_name="token", scheme={"type": "http", "scheme": "bearer"})


@tool(auth_config=TOKEN)
def whoami(ctx: ToolContext) -> str:
    """Who am I at the API."""
    assert ctx.auth_credential is not None
    return f"token ends {ctx.auth_credential.secret[-2:]}"


@tool
def whoami_later(ctx: ToolContext) -> str:
    """Who am I at the API (asks for the token while running)."""
    if ctx.auth_credential is None:
        ctx.request_credential(TOKEN)
        return "asked"
    return f"later, token ends {ctx.auth_credential.secret[-2:]}"


async def test_a_tool_asking_for_a_credential_while_running_gets_the_one_given() -> None:
    async with code_mode(StaticToolset([whoami_later]), credentials={"token": "abc42"}) as given:
        result = await run_code(given, "await tools.whoami_later()")
    async with code_mode(StaticToolset([whoami_later])) as missing:
        refused = await run_code(missing, "await tools.whoami_later()")
    assert result == {"result": "later, token ends 42"}
    assert isinstance(refused, dict)
    assert refused["exception"] == "PermissionError"


async def test_an_unknown_tool_is_told_the_close_names() -> None:
    async with code_mode(StaticToolset([discount, shipping])) as toolset:
        result = await run_code(toolset, "await tools.discounts(price=1, percent=1)")
    assert isinstance(result, dict)
    assert "Did you mean discount?" in str(result["error"])


async def test_an_argument_json_cannot_carry_is_a_type_error_naming_it() -> None:
    async with code_mode(StaticToolset([ship])) as toolset:
        result = await run_code(
            toolset, "await tools.ship(items=[b'x'], to={'street': 's', 'country': 'fr'})"
        )
    assert isinstance(result, dict)
    assert result["exception"] == "TypeError"
    assert "items.0 is a bytes" in str(result["error"])


async def test_a_tool_read_without_a_call_is_called_later() -> None:
    async with code_mode(StaticToolset([discount])) as toolset:
        result = await run_code(
            toolset,
            "f = tools.discount\ng = getattr(tools, 'discount')\n"
            "[await f(price=10, percent=10), await g(price=20, percent=50)]",
        )
    assert result == {"result": [9, 10]}


async def test_arguments_may_be_one_dict_for_names_that_are_no_identifiers() -> None:
    async with code_mode(StaticToolset([discount])) as toolset:
        result = await run_code(toolset, "await tools.discount({'price': 10, 'percent': 50})")
    assert result == {"result": 5}


started: list[str] = []


@tool(is_long_running=True)
def start_export(name: str) -> str:
    """Start an export whose result arrives later."""
    started.append(name)
    return "started"


async def test_a_long_running_tool_is_refused_from_code_before_it_runs() -> None:
    started.clear()
    async with code_mode(StaticToolset([start_export])) as toolset:
        result = await run_code(toolset, "await tools.start_export(name='x')")
    assert started == []
    assert isinstance(result, dict)
    assert (result["exception"], result["line"]) == ("RuntimeError", 1)
    assert "it was not called" in str(result["error"])
    assert "call the tool 'start_export' directly" in str(result["error"])


async def test_a_tool_that_says_while_running_its_result_comes_later_gives_its_interim_once() -> (
    None
):
    runs: list[str] = []

    @tool
    def queue_job(name: str, ctx: ToolContext) -> dict[str, str]:
        """Queue a job; it may finish later."""
        runs.append(name)
        ctx.actions.long_running = True
        return {"job": name, "status": "queued"}

    async with code_mode(StaticToolset([queue_job])) as toolset:
        result = await run_code(toolset, "await tools.queue_job(name='j1')")
    assert runs == ["j1"]
    assert result == {"result": {"job": "j1", "status": "queued"}}


async def test_an_empty_program_is_an_error_saying_what_to_send() -> None:
    async with code_mode(StaticToolset([discount])) as toolset:
        result = await run_code(toolset, "  ")
    assert result == {"error": "Send the program as `code`, a non-empty string."}


async def test_a_result_of_python_values_comes_back_as_json() -> None:
    async with code_mode(StaticToolset([discount])) as toolset:
        result = await run_code(
            toolset,
            "class Point:\n    def __init__(self):\n        self.x = 1\n"
            "{'t': (1, 2), 's': {3, 1}, 'f': float('nan'), 'p': Point()}",
        )
    assert result == {"result": {"t": [1, 2], "s": [1, 3], "f": "nan", "p": {"x": 1}}}


async def test_shutting_down_stops_the_sandbox_and_a_later_program_starts_it_again() -> None:
    toolset = code_mode(StaticToolset([discount]))
    first = await run_code(toolset, "await tools.discount(price=10, percent=10)")
    await toolset.shutdown()
    await toolset.shutdown()  # idempotent
    again = await run_code(toolset, "await tools.discount(price=10, percent=10)")
    await toolset.shutdown()
    assert first == again == {"result": 9}


async def test_run_codes_own_timeout_outlasts_the_programs_time_limit_and_its_wait() -> None:
    async with code_mode(StaticToolset([discount]), timeout=5) as toolset:
        (run,) = await toolset.list_tools()
    assert run.timeout is not None
    assert run.timeout > 2 * 5


def test_code_mode_returns_a_code_mode_toolset_with_its_namespace_and_limits() -> None:
    toolset = code_mode(StaticToolset([discount]), namespace="shop", timeout=7, max_workers=3)
    assert isinstance(toolset, CodeModeToolset)
    assert toolset.namespace == "shop"
    assert toolset.limits == Limits(timeout=7.0, max_workers=3)


async def test_served_over_mcp_a_client_runs_a_program_with_the_servers_callbacks() -> None:
    import mcp.types as mt

    from tests.mcp.server_helpers import connected
    from toolsets.mcp import McpServer

    called: list[str] = []

    def before(tool: Tool, args: dict[str, Any], ctx: ToolContext) -> None:
        called.append(tool.name)

    server = McpServer(
        code_mode(StaticToolset([discount])), callbacks=Callbacks(before_tool=[before])
    )
    async with connected(server, "legacy") as client:
        (listed,) = (await client.list_tools()).tools
        result = await client.call_tool(
            "run_code", {"code": "await tools.discount(price=40, percent=25)"}
        )
    assert listed.name == "run_code"
    assert not result.is_error
    (block,) = result.content
    assert isinstance(block, mt.TextContent)
    assert json.loads(block.text) == {"result": 30}
    assert called == ["run_code", "discount"]


@tool(name="send-email")
def send_email(to: str) -> str:
    """Send an email message to a recipient."""
    return f"sent to {to}"


@tool(name="get-weather")
def get_weather(city: str) -> str:
    """Get the weather forecast for a city."""
    return "sunny"


async def test_a_tool_a_search_names_is_called_by_that_name_through_getattr() -> None:
    from toolsets import searchable

    async with code_mode(searchable(StaticToolset([send_email, get_weather]))) as toolset:
        result = await run_code(
            toolset,
            "found = await tools.search_tools(query='send an email')\n"
            "name = found['matches'][0]['name']\n"
            "[name, await getattr(tools, name)(to='a@b.c')]",
        )
    assert result == {"result": ["send-email", "sent to a@b.c"]}


async def test_a_name_read_in_vain_from_the_namespace_is_told_the_close_python_names() -> None:
    async with code_mode(StaticToolset([send_email, get_weather])) as toolset:
        result = await run_code(toolset, "f = getattr(tools, 'send-emial')")
        caught = await run_code(toolset, "hasattr(tools, 'nothing') or {}['x']")
    assert isinstance(result, dict)
    assert (result["exception"], result["line"]) == ("AttributeError", 1)
    assert "Did you mean send_email?" in str(result["error"])
    assert isinstance(caught, dict)
    assert caught["exception"] == "KeyError"
    assert "Did you mean" not in str(caught["error"])


async def test_a_failure_of_one_of_several_gathered_calls_reaches_the_model_as_itself() -> None:
    def vault(ctx: ToolContext, config: AuthConfig) -> str:
        raise ValueError("the vault is sealed")

    async with code_mode(StaticToolset([whoami]), credentials=vault) as toolset:
        result = await run_code(
            toolset, "import asyncio\nawait asyncio.gather(tools.whoami(), tools.whoami())"
        )
    assert isinstance(result, dict)
    assert "the vault is sealed" in str(result["error"])
    assert "TaskGroup" not in str(result["error"])
