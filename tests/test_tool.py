from __future__ import annotations

import importlib
import inspect
import pkgutil
import sys
from collections.abc import Callable, Mapping
from typing import Any

import anyio
import anyio.from_thread
import pytest

import toolsets
from tests.helpers import MinimalTool
from toolsets import (
    LONG_RUNNING_NOTE,
    AuthConfig,
    BaseTool,
    JsonValue,
    LlmRequest,
    RenamedTool,
    StaticToolset,
    Tool,
    ToolAnnotations,
    ToolContext,
    ToolDeclaration,
    ToolDefinitionError,
)
from toolsets._concurrency import FEW_ITEMS
from toolsets._tool import FirstTime

pytestmark = pytest.mark.anyio


class Echo(BaseTool):
    """A minimal tool: everything but run comes from BaseTool."""

    def __init__(self, name: str = "echo", **options: Any) -> None:
        super().__init__(
            name,
            "Echo the text back.",
            parameters={
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "required": ["text"],
            },
            **options,
        )

    async def run(self, args: Mapping[str, Any], ctx: ToolContext) -> JsonValue:
        return {"text": args["text"]}


class InstructionOnly(BaseTool):
    """A passive tool: no declaration; it edits the request instead."""

    def declaration(self) -> ToolDeclaration | None:
        return None

    async def run(self, args: Mapping[str, Any], ctx: ToolContext) -> JsonValue:
        raise AssertionError("a passive tool is never called")

    async def process_llm_request(self, req: LlmRequest, ctx: ToolContext) -> None:
        req.append_instructions(f"The user is {ctx.user_id}.")


def test_base_tool_defaults() -> None:
    t = Echo()
    assert isinstance(t, Tool)
    assert t.is_long_running is False
    assert t.is_read_only is False
    assert t.is_concurrency_safe is False
    assert t.auth_config is None
    assert t.required_scopes == frozenset()
    assert t.response_schema is None
    assert t.requires_confirmation({"text": "x"}) is False
    assert repr(t) == "Echo(name='echo')"


def test_the_declaration_carries_name_description_parameters_and_hints() -> None:
    t = Echo(
        response_schema={"type": "object"},
        title="Echo",
        annotations=ToolAnnotations(read_only=True, idempotent=True, open_world=False),
    )
    decl = t.declaration()
    assert decl == ToolDeclaration(
        name="echo",
        description="Echo the text back.",
        parameters=t.parameters,
        response={"type": "object"},
        title="Echo",
        annotations=ToolAnnotations(read_only=True, idempotent=True, open_world=False),
    )
    assert decl.to_json() == {
        "name": "echo",
        "description": "Echo the text back.",
        "parameters": dict(t.parameters),
        "response": {"type": "object"},
        "title": "Echo",
        "annotations": {"read_only": True, "idempotent": True, "open_world": False},
    }


def test_read_only_annotation_makes_the_tool_read_only_and_concurrency_safe() -> None:
    t = Echo(annotations=ToolAnnotations(read_only=True))
    assert t.is_read_only
    assert t.is_concurrency_safe


def test_concurrency_safety_can_be_set_apart_from_read_only() -> None:
    assert Echo(is_concurrency_safe=True).is_concurrency_safe
    assert not Echo(
        annotations=ToolAnnotations(read_only=True), is_concurrency_safe=False
    ).is_concurrency_safe


def test_a_long_running_tool_tells_the_model_not_to_call_again_while_pending() -> None:
    decl = Echo(is_long_running=True).declaration()
    assert decl is not None
    assert decl.description == f"Echo the text back.\n\n{LONG_RUNNING_NOTE}"
    assert Echo(is_long_running=True).description == decl.description
    assert Echo().declaration().description == "Echo the text back."  # type: ignore[union-attr]


def test_confirmation_can_be_always_never_or_decided_per_call() -> None:
    assert Echo(requires_confirmation=True).requires_confirmation({"text": "a"})
    risky = Echo(requires_confirmation=lambda args: args["text"].startswith("rm"))
    assert risky.requires_confirmation({"text": "rm -rf"})
    assert not risky.requires_confirmation({"text": "ls"})


def test_the_confirmation_hint_is_configurable_with_a_readable_default() -> None:
    assert Echo().confirmation_hint({"text": "hi"}) == (
        'Allow the tool \'echo\' to run with arguments {"text": "hi"}?'
    )
    assert Echo(confirmation_hint="Sure?").confirmation_hint({"text": "hi"}) == "Sure?"
    per_call = Echo(confirmation_hint=lambda args: f"Echo {args['text']!r}?")
    assert per_call.confirmation_hint({"text": "hi"}) == "Echo 'hi'?"


def test_auth_config_and_required_scopes_are_kept() -> None:
    config = AuthConfig(scheme_name="token", scheme={"type": "http", "scheme": "bearer"})
    t = Echo(auth_config=config, required_scopes=["admin", "admin", "write"])  # type: ignore[arg-type]
    assert t.auth_config is config
    assert t.required_scopes == frozenset({"admin", "write"})


@pytest.mark.parametrize("bad", ["", "has space", "x" * 129, "emoji😀"])
def test_an_illegal_name_is_rejected_when_the_tool_is_made(bad: str) -> None:
    with pytest.raises(ToolDefinitionError) as info:
        Echo(bad)
    assert info.value.tool_name == bad


def test_a_non_object_parameter_schema_is_rejected() -> None:
    class Bad(Echo):
        def __init__(self) -> None:
            BaseTool.__init__(self, "bad", parameters={"type": "string"})

    with pytest.raises(ToolDefinitionError, match="type 'object'") as info:
        Bad()
    assert info.value.tool_name == "bad"


async def test_process_llm_request_adds_the_declaration_by_default() -> None:
    req = LlmRequest()
    t = Echo()
    await t.process_llm_request(req, ToolContext())
    assert req.tools == {"echo": t}
    assert list(req.declarations) == ["echo"]
    assert req.declarations["echo"] == t.declaration()


async def test_a_passive_tool_changes_the_request_instead_of_declaring_itself() -> None:
    from toolsets import Invocation

    req = LlmRequest(system_instruction="Be brief.")
    await InstructionOnly("who").process_llm_request(req, ToolContext(Invocation(user_id="ann")))
    assert req.tools == {}
    assert req.system_instruction == "Be brief.\n\nThe user is ann."


async def test_two_tools_with_one_name_cannot_share_a_request() -> None:
    req = LlmRequest()
    await Echo().process_llm_request(req, ToolContext())
    with pytest.raises(ToolDefinitionError) as info:
        await Echo().process_llm_request(req, ToolContext())
    assert info.value.tool_name == "echo"


def test_a_passive_tool_cannot_be_added_as_a_callable_one() -> None:
    with pytest.raises(ToolDefinitionError):
        LlmRequest().add_tool(InstructionOnly("who"))


async def test_run_returns_the_result() -> None:
    assert await Echo().run({"text": "hi"}, ToolContext()) == {"text": "hi"}


async def test_a_class_implementing_the_protocol_without_base_tool_is_a_tool() -> None:
    assert signature_drift(MinimalTool) == []
    tool: Tool = MinimalTool()
    assert isinstance(tool, Tool)
    assert await StaticToolset([tool]).list_tools() == (tool,)  # taken as it is, not wrapped


def library_tool_classes() -> list[type]:
    """Every class in ``toolsets`` that implements the `Tool` protocol's methods."""
    for info in pkgutil.walk_packages(toolsets.__path__, "toolsets."):
        importlib.import_module(info.name)
    methods = protocol_methods()
    found = {
        cls
        for module in list(sys.modules.values())
        if module is not None and module.__name__.startswith("toolsets")
        for cls in vars(module).values()
        if inspect.isclass(cls)
        and cls.__module__.startswith("toolsets")
        and cls is not Tool
        and all(hasattr(cls, name) for name in methods)
    }
    return sorted(found, key=lambda cls: f"{cls.__module__}.{cls.__qualname__}")


def protocol_methods() -> dict[str, Callable[..., Any]]:
    """The `Tool` protocol's methods (its other members are properties)."""
    return {
        name: member
        for name, member in vars(Tool).items()
        if not name.startswith("_") and inspect.isfunction(member)
    }


def _awaits_alike(declared: Any, method: Any) -> bool:
    """Both async, or both sync; a method declared to return an awaitable may be either
    an ``async def`` or a ``def`` that says it returns one."""
    if "Awaitable" in str(inspect.signature(declared).return_annotation):
        returned = str(inspect.signature(method).return_annotation)
        return inspect.iscoroutinefunction(method) or "Awaitable" in returned
    return inspect.iscoroutinefunction(method) == inspect.iscoroutinefunction(declared)


def signature_drift(cls: type) -> list[str]:
    """How ``cls``'s methods differ from the protocol's: a parameter missing, renamed or of
    another kind, one more without a default, or sync where async is declared."""
    drift = []
    for name, declared in protocol_methods().items():
        method = inspect.getattr_static(cls, name, None)
        if not inspect.isfunction(method):
            drift.append(f"{name}: not a method")
            continue
        if not _awaits_alike(declared, method):
            drift.append(f"{name}: async differs")
        wanted = list(inspect.signature(declared).parameters.values())
        given = list(inspect.signature(method).parameters.values())
        if [(p.name, p.kind) for p in given[: len(wanted)]] != [(p.name, p.kind) for p in wanted]:
            drift.append(f"{name}: {given} for {wanted}")
        if any(
            p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
            for p in given[len(wanted) :]
        ):
            drift.append(f"{name}: a parameter more without a default")
    return drift


def test_every_tool_class_of_the_library_has_the_protocols_method_signatures() -> None:
    classes = library_tool_classes()
    names = {cls.__name__ for cls in classes}
    assert {"BaseTool", "FunctionTool", "McpTool", "RestApiTool", "RenamedTool"} <= names
    assert {cls.__name__: signature_drift(cls) for cls in classes if signature_drift(cls)} == {}


def test_a_call_is_made_under_the_offered_declaration_unless_the_tool_says_otherwise() -> None:
    """`call_declaration` is a member the `Tool` protocol declares and `BaseTool` gives
    its default: the offered declaration, unless the tool says otherwise."""

    class CalledUnderMore(Echo):
        def call_declaration(self) -> ToolDeclaration | None:
            return ToolDeclaration(
                name=self.name, description="more", parameters={"type": "object"}
            )

    echo = Echo()
    assert echo.call_declaration() == echo.declaration()
    assert InstructionOnly("passive").call_declaration() is None
    assert CalledUnderMore().call_declaration().description == "more"  # type: ignore[union-attr]
    assert "call_declaration" in protocol_methods()


def test_refusal_is_a_declared_member_that_refuses_nothing_by_default() -> None:
    """`refusal` is a member the `Tool` protocol declares (asked on every call, never
    probed for): `BaseTool`'s refuses nothing, and a wrapper forwards it."""
    assert "refusal" in protocol_methods()
    assert Echo().refusal({}, ToolContext()) is None
    assert RenamedTool(Echo(), "other").refusal({}, ToolContext()) is None


def test_the_request_joins_instructions_and_contents() -> None:
    from toolsets import Content

    req = LlmRequest()
    req.append_instructions("One.", "", "Two.")
    req.extend_contents([Content.user("hi")])
    assert req.system_instruction == "One.\n\nTwo."
    assert [c.text for c in req.contents] == ["hi"]


def test_a_subclass_may_compute_any_member_as_a_property() -> None:
    class Dynamic(Echo):
        @property
        def description(self) -> str:
            return "computed"

        @property
        def is_long_running(self) -> bool:
            return True

        @property
        def required_scopes(self) -> frozenset[str]:
            return frozenset({"x"})

    t = Dynamic()
    decl = t.declaration()
    assert decl is not None
    assert decl.description == "computed"
    assert t.is_long_running
    assert t.required_scopes == {"x"}


def test_tools_without_parameters_do_not_share_one_schema_object() -> None:
    class NoArgs(BaseTool):
        async def run(self, args: Mapping[str, Any], ctx: ToolContext) -> JsonValue:
            return None

    a, b = NoArgs("a"), NoArgs("b")
    a.parameters["properties"]["injected"] = {}  # type: ignore[index]
    assert b.parameters == {"type": "object", "properties": {}}
    assert ToolDeclaration(name="c").parameters == {"type": "object", "properties": {}}


# --- FirstTime -----------------------------------------------------------------------------


async def test_only_tools_met_the_first_time_are_made_and_then_remembered() -> None:
    tools = [MinimalTool() for _ in range(FEW_ITEMS + 1)]
    seen = FirstTime()
    first = await seen.make(tools, lambda tool: tool.name)
    assert [tool for tool, _ in first] == tools
    more = MinimalTool()
    again = await seen.make([*tools, more], lambda tool: tool.name)
    assert again == [(more, "m")]


async def test_tools_made_for_a_cancelled_caller_are_not_remembered() -> None:
    tools = [MinimalTool() for _ in range(FEW_ITEMS * 2)]
    seen = FirstTime()
    with anyio.CancelScope() as scope:

        def make(tool: Tool) -> str:
            if tool is tools[3]:
                anyio.from_thread.run_sync(scope.cancel)
            return tool.name

        with anyio.fail_after(10):
            await seen.make(tools, make)
    assert scope.cancelled_caught
    assert len(seen) == 0  # so the next round makes them all
    assert len(await seen.make(tools, lambda tool: tool.name)) == len(tools)


async def test_a_few_tools_are_left_to_the_caller_when_only_many_are_to_be_made() -> None:
    tools = [MinimalTool() for _ in range(FEW_ITEMS)]
    seen = FirstTime()
    made: list[Tool] = []

    assert await seen.make(tools, made.append, only_many=True) == []
    assert made == []
    more = [*tools, *(MinimalTool() for _ in range(FEW_ITEMS))]
    await seen.make(more[: FEW_ITEMS * 2 - 3], lambda tool: None)
    assert await seen.make(more, made.append, only_many=True) == []
    assert made == []  # three new ones: left to the caller too
    assert len(seen) == FEW_ITEMS * 2


class Slotted:
    """A tool that cannot be weakly referenced (``__slots__`` without ``__weakref__``)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


async def test_a_tool_that_cannot_be_weakly_referenced_is_made_each_time() -> None:
    tools: list[Any] = [Slotted(f"s{n}") for n in range(FEW_ITEMS + 1)]
    seen = FirstTime()
    assert len(await seen.make(tools, lambda tool: tool.name)) == len(tools)
    assert len(await seen.make(tools, lambda tool: tool.name)) == len(tools)
    assert len(seen) == 0


async def test_callers_at_the_same_time_make_each_tool_once() -> None:
    tools = [MinimalTool() for _ in range(FEW_ITEMS * 3)]
    seen = FirstTime()
    made: list[Tool] = []
    results: list[list[tuple[Tool, None]]] = []

    async def listing() -> None:
        results.append(await seen.make(tools, made.append))

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tasks:
            for _ in range(3):
                tasks.start_soon(listing)
    assert len(made) == len(tools)
    assert sorted(len(found) for found in results) == [0, 0, len(tools)]
