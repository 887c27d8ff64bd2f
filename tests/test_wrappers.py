from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from tests.helpers import MinimalTool
from toolsets import (
    BaseTool,
    BaseToolset,
    ConfirmedTool,
    ConnectionError,
    FunctionTool,
    Invocation,
    JsonValue,
    LlmRequest,
    RenamedTool,
    StaticToolset,
    Tool,
    ToolAnnotations,
    ToolContext,
    ToolDeclaration,
    ToolDefinitionError,
    combined,
    confirmed,
    filtered,
    prefixed,
    renamed,
    tool,
)

pytestmark = pytest.mark.anyio


@tool(read_only=True, required_scopes={"weather"})
def forecast(city: str) -> str:
    """Forecast."""
    return f"rain in {city}"


@tool(requires_confirmation=True, is_long_running=True)
def deploy(ctx: ToolContext, service: str) -> str:
    """Deploy a service."""
    ctx.state["deployed"] = service
    return "started"


@tool
def ping() -> str:
    return "pong"


class Hint(BaseTool):
    """A passive tool that adds an instruction."""

    def declaration(self) -> ToolDeclaration | None:
        return None

    async def run(self, args: Mapping[str, Any], ctx: ToolContext) -> JsonValue:
        raise AssertionError("never called")

    async def process_llm_request(self, req: LlmRequest, ctx: ToolContext) -> None:
        req.append_instructions("Be kind.")


class Recorder(BaseToolset):
    """Records lifecycle calls; fails to shut down when told to."""

    def __init__(self, tools: Sequence[Tool], *, fail_shutdown: bool = False) -> None:
        self.tools = tuple(tools)
        self.log: list[str] = []
        self.fail_shutdown = fail_shutdown

    async def __aenter__(self) -> Recorder:
        self.log.append("enter")
        return self

    async def list_tools(self, ctx: ToolContext | None = None) -> Sequence[Tool]:
        self.log.append("list")
        return self.tools

    async def shutdown(self) -> None:
        await anyio.lowlevel.checkpoint()  # where a cancellation would be delivered
        self.log.append("shutdown")
        if self.fail_shutdown:
            raise OSError("cannot close")


def names(tools: Sequence[Tool]) -> list[str]:
    return [t.name for t in tools]


# --- filtered ---------------------------------------------------------------------------


async def test_filtered_by_names_keeps_only_those_tools_in_order() -> None:
    toolset = filtered(StaticToolset([forecast, deploy, ping]), ["ping", "forecast"])
    assert names(await toolset.list_tools()) == ["forecast", "ping"]


async def test_filtered_by_a_predicate_sees_the_listing_context() -> None:
    def allowed(t: Tool, ctx: ToolContext) -> bool:
        return t.required_scopes <= ctx.scopes

    toolset = filtered(StaticToolset([forecast, ping]), allowed)
    scoped = ToolContext(Invocation(scopes=frozenset({"weather"})))
    assert names(await toolset.list_tools(scoped)) == ["forecast", "ping"]
    assert names(await toolset.list_tools(ToolContext())) == ["ping"]
    assert names(await toolset.list_tools()) == ["ping"]


async def test_filtered_warns_once_about_names_that_match_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    toolset = filtered(StaticToolset([ping]), ["ping", "pong"])
    with caplog.at_level(logging.WARNING, logger="toolsets"):
        assert names(await toolset.list_tools()) == ["ping"]
        assert names(await toolset.list_tools()) == ["ping"]
    warnings = [r.getMessage() for r in caplog.records]
    assert warnings == ["filtered(): no tools named pong"]


def test_filtered_rejects_a_bare_string() -> None:
    with pytest.raises(TypeError):
        filtered(StaticToolset([ping]), "ping")


# --- prefixed and renamed ---------------------------------------------------------------


async def test_prefixed_renames_every_tool_and_keeps_everything_else() -> None:
    toolset = prefixed(StaticToolset([forecast, deploy]), "ops")
    wrapped_forecast, wrapped_deploy = await toolset.list_tools()
    assert names([wrapped_forecast, wrapped_deploy]) == ["ops_forecast", "ops_deploy"]
    assert isinstance(wrapped_deploy, RenamedTool)
    assert wrapped_deploy.original_name == "deploy"
    assert wrapped_deploy.tool is deploy
    decl = wrapped_deploy.declaration()
    original = deploy.declaration()
    assert decl is not None
    assert original is not None
    assert decl.name == "ops_deploy"
    assert (decl.description, decl.parameters) == (original.description, original.parameters)
    assert wrapped_deploy.description == deploy.description
    assert wrapped_deploy.is_long_running
    assert wrapped_deploy.requires_confirmation({"service": "x"})
    assert wrapped_deploy.confirmation_hint({"service": "x"}) == deploy.confirmation_hint(
        {"service": "x"}
    ).replace("'deploy'", "'ops_deploy'")
    assert wrapped_forecast.is_read_only
    assert wrapped_forecast.is_concurrency_safe
    assert wrapped_forecast.required_scopes == {"weather"}
    assert wrapped_forecast.response_schema == forecast.response_schema
    assert wrapped_forecast.auth_config is None
    assert isinstance(wrapped_forecast, Tool)


async def test_a_wrapped_tools_confirmation_hint_names_it_as_the_model_and_user_see_it() -> None:
    toolset = renamed(prefixed(StaticToolset([deploy]), "ops"), {"ops_deploy": "ship"})
    (wrapped,) = await toolset.list_tools()
    hint = wrapped.confirmation_hint({"service": "web"})
    assert hint == 'Allow the tool \'ship\' to run with arguments {"service": "web"}?'
    # A hint the tool's author wrote is theirs: shown as written.
    own = tool(lambda service: "ok", name="own", confirmation_hint="Deploy for real?")
    (wrapped_own,) = await prefixed(StaticToolset([own]), "ops").list_tools()
    assert wrapped_own.confirmation_hint({"service": "web"}) == "Deploy for real?"


async def test_a_renamed_tool_runs_the_original_with_the_same_context() -> None:
    (wrapped,) = await prefixed(StaticToolset([deploy]), "ops", separator=".").list_tools()
    assert wrapped.name == "ops.deploy"
    ctx = ToolContext().for_call("c1")
    assert await wrapped.run({"service": "api"}, ctx) == "started"
    assert ctx.actions.state_delta == {"deployed": "api"}


async def test_a_renamed_tool_is_offered_to_the_model_under_its_new_name() -> None:
    toolset = prefixed(StaticToolset([forecast, Hint("hint")]), "w")
    req = LlmRequest()
    for t in await toolset.list_tools():
        await t.process_llm_request(req, ToolContext())
    assert list(req.declarations) == ["w_forecast"]
    assert req.declarations["w_forecast"].name == "w_forecast"
    assert isinstance(req.tools["w_forecast"], RenamedTool)
    assert req.system_instruction == "Be kind."


async def test_renamed_changes_only_the_given_names() -> None:
    toolset = renamed(StaticToolset([forecast, ping]), {"forecast": "weather_forecast"})
    tools = await toolset.list_tools()
    assert names(tools) == ["weather_forecast", "ping"]
    assert tools[1] is ping


async def test_renaming_two_tools_to_one_name_is_an_error_naming_it() -> None:
    toolset = renamed(StaticToolset([forecast, ping]), {"forecast": "ping"})
    with pytest.raises(ToolDefinitionError) as info:
        await toolset.list_tools()
    assert info.value.tool_name == "ping"


async def test_a_prefix_that_makes_an_illegal_name_is_rejected() -> None:
    with pytest.raises(ToolDefinitionError):
        await prefixed(StaticToolset([ping]), "has space").list_tools()
    with pytest.raises(ValueError, match="prefix"):
        prefixed(StaticToolset([ping]), "")


# --- combined ---------------------------------------------------------------------------


async def test_combined_lists_every_toolset_in_order() -> None:
    toolset = combined(StaticToolset([forecast]), StaticToolset([deploy, ping]))
    assert names(await toolset.list_tools()) == ["forecast", "deploy", "ping"]


async def test_combined_lists_its_toolsets_concurrently() -> None:
    both_started = anyio.Event()
    started = 0

    class Slow(BaseToolset):
        def __init__(self, t: Tool) -> None:
            self.t = t

        async def list_tools(self, ctx: ToolContext | None = None) -> Sequence[Tool]:
            nonlocal started
            started += 1
            if started == 2:
                both_started.set()
            await both_started.wait()  # deadlocks unless both list at the same time
            return (self.t,)

    with anyio.fail_after(5):
        tools = await combined(Slow(forecast), Slow(ping)).list_tools()
    assert names(tools) == ["forecast", "ping"]


async def test_a_failing_toolset_in_combined_raises_its_own_error_not_a_group() -> None:
    class Down(BaseToolset):
        async def list_tools(self, ctx: ToolContext | None = None) -> Sequence[Tool]:
            raise ConnectionError("server down", target="http://127.0.0.1:9/mcp")

    with pytest.raises(ConnectionError) as info:
        await combined(StaticToolset([ping]), Down()).list_tools()
    assert info.value.target == "http://127.0.0.1:9/mcp"


async def test_combined_rejects_a_name_offered_twice_and_says_how_to_fix_it() -> None:
    toolset = combined(StaticToolset([ping]), StaticToolset([forecast]), StaticToolset([ping]))
    with pytest.raises(ToolDefinitionError, match="prefixed") as info:
        await toolset.list_tools()
    assert info.value.tool_name == "ping"
    fixed = combined(StaticToolset([ping]), prefixed(StaticToolset([ping]), "b"))
    assert names(await fixed.list_tools()) == ["ping", "b_ping"]


async def test_the_context_reaches_every_wrapped_toolset() -> None:
    seen: list[str] = []

    class Spy(BaseToolset):
        async def list_tools(self, ctx: ToolContext | None = None) -> Sequence[Tool]:
            assert ctx is not None
            seen.append(ctx.user_id)
            return (ping,)

    ctx = ToolContext(Invocation(user_id="ann"))
    toolset = combined(
        prefixed(Spy(), "a"), renamed(Spy(), {"ping": "b"}), filtered(Spy(), ["ping"])
    )
    await toolset.list_tools(ctx)
    assert seen == ["ann", "ann", "ann"]


# --- lifecycles through wrappers --------------------------------------------------------


async def test_async_with_on_a_wrapper_opens_and_shuts_down_the_wrapped_toolset() -> None:
    inner = Recorder([ping])
    async with prefixed(filtered(inner, ["ping"]), "p") as toolset:
        assert names(await toolset.list_tools()) == ["p_ping"]
    assert inner.log == ["enter", "list", "shutdown"]


async def test_async_with_on_combined_opens_all_and_shuts_all_down_in_reverse() -> None:
    order: list[str] = []

    class Named(Recorder):
        def __init__(self, label: str) -> None:
            super().__init__([])
            self.label = label

        async def __aenter__(self) -> Named:
            order.append(f"enter {self.label}")
            return self

        async def shutdown(self) -> None:
            order.append(f"shutdown {self.label}")

    async with combined(Named("a"), Named("b")):
        pass
    assert order == ["enter a", "enter b", "shutdown b", "shutdown a"]


async def test_if_one_toolset_fails_to_open_the_opened_ones_are_shut_down() -> None:
    opened = Recorder([ping])

    class Broken(Recorder):
        async def __aenter__(self) -> Broken:
            raise OSError("server not found")

    with pytest.raises(OSError, match="server not found"):
        async with combined(opened, Broken([forecast])):
            pass
    assert opened.log == ["enter", "shutdown"]


async def test_combined_shutdown_reaches_every_toolset_even_when_one_fails() -> None:
    first = Recorder([], fail_shutdown=True)
    second = Recorder([])
    with pytest.raises(OSError, match="cannot close"):
        await combined(first, second).shutdown()
    assert first.log == ["shutdown"]
    assert second.log == ["shutdown"]


async def test_combined_shutdown_raises_every_failure_together() -> None:
    toolset = combined(Recorder([], fail_shutdown=True), Recorder([], fail_shutdown=True))
    with pytest.raises(ExceptionGroup) as info:
        await toolset.shutdown()
    assert len(info.value.exceptions) == 2


async def test_wrapper_shutdown_forwards_every_call_from_any_task_to_the_wrapped_toolset() -> None:
    # Wrappers keep no state of their own: idempotence is the wrapped toolset's (the
    # `Toolset` protocol asks it of every toolset), so each call reaches it.
    inner = Recorder([ping])
    toolset = combined(prefixed(inner, "a"))
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(toolset.shutdown)
            tg.start_soon(toolset.shutdown)
    await toolset.shutdown()
    assert inner.log == ["shutdown", "shutdown", "shutdown"]


def test_wrappers_have_readable_reprs() -> None:
    inner = StaticToolset([ping])
    assert repr(prefixed(inner, "a")) == "prefixed[a](StaticToolset(['ping']))"
    assert repr(filtered(inner, ["ping"])) == "filtered(StaticToolset(['ping']), ['ping'])"
    assert repr(combined(inner, inner)).startswith("combined(StaticToolset")


def test_renamed_tool_validates_the_new_name_at_once() -> None:
    with pytest.raises(ToolDefinitionError):
        RenamedTool(ping, "bad name")
    assert RenamedTool(ping, "ok").declaration() is not None
    assert RenamedTool(Hint("hint"), "h").declaration() is None
    assert repr(RenamedTool(ping, "ok")) == "RenamedTool(FunctionTool(name='ping'), name='ok')"
    assert ToolAnnotations() == ToolAnnotations()


async def test_an_argument_error_from_a_renamed_tool_does_not_name_the_hidden_tool() -> None:
    (weather,) = await renamed(StaticToolset([forecast]), {"forecast": "weather"}).list_tools()
    result = await weather.run({"town": "Oslo"}, ToolContext())
    assert isinstance(result, dict)
    assert set(result["fields"]) == {"city", "town"}  # type: ignore[arg-type]
    assert "forecast" not in str(result)


async def test_a_renamed_tool_keeps_what_the_wrapped_tool_adds_to_the_request() -> None:
    class SearchWithInstructions(BaseTool):
        async def run(self, args: Mapping[str, Any], ctx: ToolContext) -> JsonValue:
            return []

        async def process_llm_request(self, req: LlmRequest, ctx: ToolContext) -> None:
            req.append_instructions("Cite your sources.")
            req.config["temperature"] = 0
            req.add_tool(self)

    inner = SearchWithInstructions("search")
    req = LlmRequest(system_instruction="Be brief.")
    (wrapped,) = await prefixed(StaticToolset([inner]), "web").list_tools()
    await wrapped.process_llm_request(req, ToolContext())
    assert list(req.declarations) == ["web_search"]
    assert req.tools["web_search"] is wrapped
    assert req.system_instruction == "Be brief.\n\nCite your sources."
    assert req.config == {"temperature": 0}


async def test_a_renamed_long_running_tool_keeps_the_note_in_its_description() -> None:
    (wrapped,) = await prefixed(StaticToolset([deploy]), "ops").list_tools()
    assert wrapped.description == deploy.description
    assert "do not call the tool again" in wrapped.description


async def test_combined_shutdown_from_a_cancelled_scope_still_reaches_every_toolset() -> None:
    first, second = Recorder([]), Recorder([])
    with anyio.CancelScope() as scope:
        scope.cancel()
        await combined(first, second).shutdown()
    assert first.log == ["shutdown"]
    assert second.log == ["shutdown"]


async def test_renamed_warns_once_about_old_names_that_match_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    toolset = renamed(StaticToolset([ping]), {"pong": "x", "ping": "p"})
    with caplog.at_level(logging.WARNING, logger="toolsets"):
        assert names(await toolset.list_tools()) == ["p"]
        assert names(await toolset.list_tools()) == ["p"]
    assert [r.getMessage() for r in caplog.records] == ["renamed(): no tools named pong"]


@tool(name="search")
def shop_search(query: str) -> list[str]:
    """Search the catalogue."""
    return [query.upper()]


@tool
def delete_item(item_id: int) -> str:
    """Delete an item."""
    return f"deleted {item_id}"


async def test_renamed_is_silent_about_a_tool_a_per_context_filter_hides(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The composition example of docs/concepts.md: a non-admin does not see delete_item,
    # an admin does.
    shop = StaticToolset([shop_search, delete_item])
    toolset = combined(
        prefixed(filtered(shop, ["search"]), "shop"),
        renamed(filtered(shop, lambda t, ctx: ctx.user_id == "admin"), {"delete_item": "rm"}),
    )
    nested = renamed(
        prefixed(filtered(shop, lambda t, ctx: ctx.user_id == "admin"), "x"),
        {"x_delete_item": "rm"},
    )
    admin = ToolContext(Invocation(user_id="admin"))
    with caplog.at_level(logging.WARNING, logger="toolsets"):
        assert names(await toolset.list_tools()) == ["shop_search"]
        assert names(await toolset.list_tools(admin)) == ["shop_search", "search", "rm"]
        assert names(await nested.list_tools()) == []
        assert names(await nested.list_tools(admin)) == ["x_search", "rm"]
    assert caplog.records == []


async def test_renamed_and_filtered_still_warn_about_a_name_no_context_can_show(
    caplog: pytest.LogCaptureFixture,
) -> None:
    shop = StaticToolset([shop_search, delete_item])
    admins_only = filtered(shop, lambda t, ctx: ctx.user_id == "admin")
    with caplog.at_level(logging.WARNING, logger="toolsets"):
        await renamed(admins_only, {"delete_itme": "rm"}).list_tools()
        await filtered(admins_only, ["delete_item", "serach"]).list_tools()
    assert [r.getMessage() for r in caplog.records] == [
        "renamed(): no tools named delete_itme",
        "filtered(): no tools named serach",
    ]


@pytest.mark.parametrize(
    "wrap",
    [lambda t: RenamedTool(t, "jot"), lambda t: ConfirmedTool(t, "always")],
    ids=["renamed", "confirmed"],
)
async def test_a_wrapped_function_tool_on_the_loop_is_called_as_soon_as_run_is(
    wrap: Callable[[Tool], Tool],
) -> None:
    calls: list[str] = []

    @tool(run_in_thread=False)
    def note(text: str) -> str:
        """Notes a text."""
        calls.append(text)
        return text.upper()

    running = wrap(note).run({"text": "hi"}, ToolContext())

    assert calls == ["hi"]  # the wrapper hands on the function tool's own awaitable
    assert await running == "HI"


def test_a_renamed_tool_of_ones_own_making_is_asked_about_under_its_offered_name() -> None:
    assert RenamedTool(MinimalTool(), "other").confirmation_hint({}) == "Run other?"


def _tool_list() -> list[FunctionTool[..., str]]:
    def hello() -> str:
        """Say hello."""
        return "hello"

    return [FunctionTool(hello)]


@pytest.mark.parametrize(
    "wrap",
    [
        lambda given: filtered(given, ["hello"]),
        lambda given: prefixed(given, "p"),
        lambda given: renamed(given, {"hello": "hi"}),
        lambda given: confirmed(given, "always"),
        lambda given: combined(StaticToolset([]), given),
    ],
    ids=["filtered", "prefixed", "renamed", "confirmed", "combined"],
)
@pytest.mark.parametrize("given", [_tool_list(), _tool_list()[0]], ids=["list", "tool"])
def test_a_wrapper_over_tools_instead_of_a_toolset_is_refused_when_built(
    wrap: Callable[[object], object], given: object
) -> None:
    with pytest.raises(ToolDefinitionError) as caught:
        wrap(given)

    assert caught.value.field == "toolset"
    assert "StaticToolset" in str(caught.value)


class _Listing(BaseToolset):
    """Lists the tuple it holds (the same object each time, as an OpenAPI toolset)."""

    def __init__(self, *tools: Tool) -> None:
        self.tools = tools

    async def list_tools(self, ctx: ToolContext | None = None) -> Sequence[Tool]:
        return self.tools


def _wrappers(inner: BaseToolset) -> list[BaseToolset]:
    return [
        prefixed(inner, "w_"),
        renamed(inner, {"forecast": "weather"}),
        filtered(inner, ["forecast"]),
        filtered(inner, lambda t, ctx: t.name == "forecast"),
        combined(inner, StaticToolset([tool(name="other")(lambda: None)])),
        confirmed(inner, "always"),
    ]


async def test_a_wrapper_lists_the_same_tuple_while_the_wrapped_listing_is_the_same() -> None:
    inner = _Listing(forecast)
    for wrapper in _wrappers(inner):
        first = await wrapper.list_tools()
        again = await wrapper.list_tools()
        assert again is first, wrapper
        assert isinstance(first, tuple)


async def test_a_wrapper_lists_anew_when_the_wrapped_listing_changes() -> None:
    inner = _Listing(forecast)
    for wrapper in _wrappers(inner):
        inner.tools = (forecast,)
        first = await wrapper.list_tools()
        inner.tools = (tool(name="forecast")(lambda: None),)  # another tool, same name
        changed = await wrapper.list_tools()
        assert changed is not first, wrapper
        assert [t.name for t in changed] == [t.name for t in first]


async def test_a_wrapper_over_a_new_tuple_of_the_same_tools_lists_the_same_tuple() -> None:
    inner = StaticToolset([forecast])  # a new tuple each listing
    assert await inner.list_tools() is not await inner.list_tools()
    for wrapper in _wrappers(inner):
        assert await wrapper.list_tools() is await wrapper.list_tools(), wrapper
