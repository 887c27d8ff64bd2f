from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import functools
import inspect
import threading
import time
from collections.abc import Mapping
from typing import Annotated, Any, Literal

import anyio
import anyio.lowlevel
import pydantic
import pytest

from toolsets import (
    FunctionTool,
    JsonValue,
    StaticToolset,
    ToolAnnotations,
    ToolCallError,
    ToolContext,
    ToolDefinitionError,
    tool,
)
from toolsets._concurrency import Ready
from toolsets._invoke import Done, invoke

pytestmark = pytest.mark.anyio


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Address(pydantic.BaseModel):
    street: str
    zip_code: str = pydantic.Field(pattern=r"^\d{5}$")


@dataclasses.dataclass
class Point:
    x: float
    y: float


def describe_person(
    name: str,
    age: int,
    address: Address,
    tags: list[str] | None = None,
    color: Color = Color.RED,
    mode: Literal["short", "long"] = "short",
) -> str:
    """Describe a person.

    Used to test schema generation from hints and a Google-style docstring.

    Args:
        name: The person's full name.
        age: Age in years.
        address: Where they live.
        tags: Free-form labels.
        color: Favourite colour.
        mode: How much to say.

    Returns:
        One sentence.
    """
    return f"{name} ({age}) lives at {address.street}; {color.value}; {mode}; {tags}"


# --- the schema -------------------------------------------------------------------------


def test_the_schema_lists_every_parameter_with_its_type_and_docstring_description() -> None:
    t = FunctionTool(describe_person)
    decl = t.declaration()
    assert decl is not None
    params = decl.parameters
    assert params["type"] == "object"
    assert params["required"] == ["name", "age", "address"]
    props = params["properties"]
    assert props["name"] == {"type": "string", "description": "The person's full name."}
    assert props["age"] == {"type": "integer", "description": "Age in years."}
    assert props["mode"]["enum"] == ["short", "long"]
    assert props["mode"]["default"] == "short"
    assert props["color"]["default"] == "red"
    assert params["additionalProperties"] is False
    address = params["$defs"]["Address"]
    assert address["required"] == ["street", "zip_code"]
    assert address["properties"]["zip_code"]["pattern"] == r"^\d{5}$"


def test_the_description_is_the_docstring_without_its_argument_section() -> None:
    t = FunctionTool(describe_person)
    assert t.description == (
        "Describe a person.\n\n"
        "Used to test schema generation from hints and a Google-style docstring.\n\n"
        "Returns: One sentence."
    )
    assert "Args" not in t.description


def test_no_generated_titles_are_sent_to_the_model() -> None:
    decl = FunctionTool(describe_person).declaration()
    assert decl is not None

    def walk(node: Any, path: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "title":
                    raise AssertionError(f"title at {path}")
                # A property may legitimately be *named* title; only keywords are checked.
                walk(value, f"{path}/{key}") if key != "properties" else [
                    walk(v, f"{path}/properties/{k}") for k, v in value.items()
                ]
        elif isinstance(node, list):
            for i, item in enumerate(node):
                walk(item, f"{path}/{i}")

    walk(dict(decl.parameters), "")


def test_a_parameter_may_be_called_title_or_start_with_an_underscore() -> None:
    def f(title: str, _private: int, model_config: str = "x") -> str:
        return f"{title}{_private}{model_config}"

    decl = FunctionTool(f).declaration()
    assert decl is not None
    assert list(decl.parameters["properties"]) == ["title", "_private", "model_config"]


def test_numpy_and_rest_docstrings_give_parameter_descriptions_too() -> None:
    def numpy_style(x: int) -> int:
        """Double.

        Parameters
        ----------
        x : int
            The number to double.
        """
        return 2 * x

    def rest_style(x: int) -> int:
        """Triple.

        :param x: The number to triple.
        """
        return 3 * x

    for fn, expected in (
        (numpy_style, "The number to double."),
        (rest_style, "The number to triple."),
    ):
        decl = FunctionTool(fn).declaration()
        assert decl is not None
        assert decl.parameters["properties"]["x"]["description"] == expected


def test_annotated_field_constraints_reach_the_schema() -> None:
    def f(count: Annotated[int, pydantic.Field(ge=1, le=10, description="How many")]) -> None:
        return None

    decl = FunctionTool(f).declaration()
    assert decl is not None
    assert decl.parameters["properties"]["count"] == {
        "type": "integer",
        "minimum": 1,
        "maximum": 10,
        "description": "How many",
    }


def test_a_function_without_parameters_has_an_empty_object_schema() -> None:
    def now() -> str:
        return "noon"

    decl = FunctionTool(now).declaration()
    assert decl is not None
    assert decl.parameters == {"type": "object", "properties": {}, "additionalProperties": False}


def test_unannotated_parameters_accept_any_value() -> None:
    def echo(value):  # type: ignore[no-untyped-def]
        return value

    decl = FunctionTool(echo).declaration()
    assert decl is not None
    assert decl.parameters["properties"]["value"] == {}


def test_the_return_annotation_becomes_the_response_schema() -> None:
    def area(p: Point) -> dict[str, float]:
        return {"area": p.x * p.y}

    def nothing() -> None:
        return None

    t = FunctionTool(area)
    assert t.response_schema == {"type": "object", "additionalProperties": {"type": "number"}}
    decl = t.declaration()
    assert decl is not None
    assert decl.response == t.response_schema
    assert FunctionTool(nothing).response_schema is None


def test_name_and_description_can_be_overridden() -> None:
    t = FunctionTool(describe_person, name="people_describe", description="Say who.")
    assert (t.name, t.description) == ("people_describe", "Say who.")


# --- definition errors ------------------------------------------------------------------


def test_star_args_are_rejected_at_definition_naming_the_tool() -> None:
    def f(*values: int) -> int:
        return sum(values)

    with pytest.raises(ToolDefinitionError) as info:
        FunctionTool(f)
    assert info.value.tool_name == "f"


def test_star_star_kwargs_are_rejected_at_definition() -> None:
    def f(**values: int) -> int:
        return sum(values.values())

    with pytest.raises(ToolDefinitionError):
        FunctionTool(f)


def test_a_parameter_type_without_json_schema_is_rejected_at_definition() -> None:
    class Opaque:
        pass

    def f(thing: Opaque) -> None:
        return None

    with pytest.raises(ToolDefinitionError) as info:
        FunctionTool(f)
    assert info.value.tool_name == "f"


def test_a_return_type_without_json_schema_is_rejected_at_definition() -> None:
    class Opaque:
        pass

    def f() -> Opaque:
        return Opaque()

    with pytest.raises(ToolDefinitionError):
        FunctionTool(f)


def test_an_unresolvable_forward_reference_is_rejected_at_definition() -> None:
    def f(x: NoSuchType) -> None:  # type: ignore[name-defined]  # noqa: F821
        return None

    with pytest.raises(ToolDefinitionError):
        FunctionTool(f)


def test_generator_functions_are_rejected() -> None:
    def gen() -> Any:
        yield 1

    with pytest.raises(ToolDefinitionError):
        FunctionTool(gen)


def test_a_lambda_needs_a_real_name() -> None:
    with pytest.raises(ToolDefinitionError):
        FunctionTool(lambda: 1)
    assert FunctionTool(lambda: 1, name="one").name == "one"


# --- calling ----------------------------------------------------------------------------


async def test_valid_arguments_are_converted_to_the_annotated_types() -> None:
    received: dict[str, Any] = {}

    def f(when: dt.date, point: Point, color: Color, address: Address) -> str:
        received.update(when=when, point=point, color=color, address=address)
        return "ok"

    result = await FunctionTool(f).run(
        {
            "when": "2026-11-22",
            "point": {"x": 1, "y": "2.5"},
            "color": "blue",
            "address": {"street": "Main", "zip_code": "12345"},
        },
        ToolContext(),
    )
    assert result == "ok"
    assert received["when"] == dt.date(2026, 11, 22)
    assert received["point"] == Point(1.0, 2.5)
    assert received["color"] is Color.BLUE
    assert received["address"] == Address(street="Main", zip_code="12345")


async def test_invalid_arguments_come_back_as_an_error_naming_each_field() -> None:
    called = False

    def f(name: str, age: int, address: Address) -> str:
        nonlocal called
        called = True
        return "never"

    result = await FunctionTool(f).run(
        {"age": "old", "address": {"street": "Main", "zip_code": "abc"}, "extra": 1},
        ToolContext(),
    )
    assert not called
    assert isinstance(result, dict)
    assert set(result["fields"]) == {"name", "age", "address.zip_code", "extra"}  # type: ignore[arg-type]
    assert result["fields"]["name"] == "Field required"  # type: ignore[index,call-overload]
    assert "'old'" in result["fields"]["age"]  # type: ignore[index,call-overload]
    message = result["error"]
    assert isinstance(message, str)
    for field in ("name", "age", "address.zip_code", "extra"):
        assert field in message


async def test_arguments_that_are_not_an_object_come_back_as_an_error() -> None:
    def f(x: int) -> int:
        return x

    result = await FunctionTool(f).run(["not", "an", "object"], ToolContext())  # type: ignore[arg-type]
    assert isinstance(result, dict)
    assert "(arguments)" in result["fields"]  # type: ignore[operator]


async def test_the_callers_arguments_are_never_mutated() -> None:
    def f(items: list[int], scale: int = 2) -> list[int]:
        items.append(99)
        return [i * scale for i in items]

    args = {"items": [1, 2]}
    snapshot = {"items": [1, 2]}
    assert await FunctionTool(f).run(args, ToolContext()) == [2, 4, 198]
    assert args == snapshot


async def test_defaults_fill_in_missing_optional_arguments() -> None:
    def f(a: int, b: int = 10, *, c: str = "c") -> str:
        return f"{a}-{b}-{c}"

    assert await FunctionTool(f).run({"a": 1}, ToolContext()) == "1-10-c"
    assert await FunctionTool(f).run({"a": 1, "b": 2, "c": "z"}, ToolContext()) == "1-2-z"


async def test_positional_only_parameters_are_passed_by_position() -> None:
    def f(a: int, b: int, /, c: int = 0) -> list[int]:
        return [a, b, c]

    assert await FunctionTool(f).run({"b": 2, "a": 1, "c": 3}, ToolContext()) == [1, 2, 3]


async def test_the_context_is_injected_by_annotation_and_hidden_from_the_schema() -> None:
    seen: list[ToolContext] = []

    async def remember(key: str, value: str, tool_context: ToolContext) -> str:
        seen.append(tool_context)
        tool_context.state[key] = value
        return "saved"

    t = FunctionTool(remember)
    decl = t.declaration()
    assert decl is not None
    assert set(decl.parameters["properties"]) == {"key", "value"}
    ctx = ToolContext().for_call("call-1")
    assert await t.run({"key": "k", "value": "v"}, ctx) == "saved"
    assert seen == [ctx]
    assert ctx.actions.state_delta == {"k": "v"}


async def test_an_optional_context_annotation_is_recognised_too() -> None:
    def f(x: int, ctx: ToolContext | None = None) -> str:
        return "has context" if isinstance(ctx, ToolContext) else "no context"

    t = FunctionTool(f)
    decl = t.declaration()
    assert decl is not None
    assert set(decl.parameters["properties"]) == {"x"}
    assert await t.run({"x": 1}, ToolContext()) == "has context"


async def test_a_context_value_sent_by_the_model_is_rejected_not_injected() -> None:
    def f(x: int, ctx: ToolContext) -> int:
        return x

    result = await FunctionTool(f).run({"x": 1, "ctx": "spoofed"}, ToolContext())
    assert isinstance(result, dict)
    assert "ctx" in result["fields"]  # type: ignore[operator]


async def test_results_are_converted_to_json_values() -> None:
    def f() -> Any:
        return {
            "model": Address(street="s", zip_code="12345"),
            "point": Point(1, 2),
            "color": Color.BLUE,
            "when": dt.date(2026, 1, 2),
            "raw": b"\x00\x01",
            "set": {3},
        }

    assert await FunctionTool(f).run({}, ToolContext()) == {
        "model": {"street": "s", "zip_code": "12345"},
        "point": {"x": 1, "y": 2},
        "color": "blue",
        "when": "2026-01-02",
        "raw": "AAE=",
        "set": [3],
    }


async def test_a_result_json_cannot_carry_raises_a_tool_call_error() -> None:
    class Opaque:
        pass

    def f():  # type: ignore[no-untyped-def]
        return Opaque()

    with pytest.raises(ToolCallError) as info:
        await FunctionTool(f).run({}, ToolContext())
    assert info.value.tool_name == "f"


async def test_an_exception_in_the_function_reaches_the_caller_unchanged() -> None:
    def f() -> None:
        raise KeyError("boom")

    with pytest.raises(KeyError, match="boom"):
        await FunctionTool(f).run({}, ToolContext())


async def test_sync_functions_run_in_a_worker_thread_and_do_not_block_the_loop() -> None:
    entered = threading.Event()
    release = threading.Event()
    loop_thread = threading.get_ident()
    ran_on: list[int] = []

    def blocking() -> str:
        ran_on.append(threading.get_ident())
        entered.set()
        assert release.wait(5)
        return "done"

    result: list[Any] = []

    async def call() -> None:
        result.append(await FunctionTool(blocking).run({}, ToolContext()))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            # This task runs while the function blocks: the loop is free.
            await anyio.to_thread.run_sync(entered.wait, 5)
            release.set()
    assert result == ["done"]
    assert ran_on[0] != loop_thread


async def test_run_in_thread_false_runs_a_sync_function_on_the_loop_thread() -> None:
    loop_thread = threading.get_ident()

    def where() -> bool:
        return threading.get_ident() == loop_thread

    assert await FunctionTool(where, run_in_thread=False).run({}, ToolContext()) is True


async def test_cancelling_a_sync_call_sets_the_context_cancellation_flag() -> None:
    started = threading.Event()
    stopped = threading.Event()

    def slow(ctx: ToolContext) -> str:
        started.set()
        deadline = time.monotonic() + 5
        while not ctx.cancellation.cancelled and time.monotonic() < deadline:
            time.sleep(0.005)
        stopped.set()
        return "stopped"

    ctx = ToolContext().for_call("c1")
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(FunctionTool(slow).run, {}, ctx)
            await anyio.to_thread.run_sync(started.wait, 5)
            tg.cancel_scope.cancel()
        await anyio.to_thread.run_sync(stopped.wait, 5)
    assert ctx.cancellation.cancelled
    assert ctx.cancellation.reason == "the tool call was cancelled"


async def test_async_callable_objects_are_awaited() -> None:
    class Greeter:
        __name__ = "greet"

        async def __call__(self, who: str) -> str:
            await anyio.lowlevel.checkpoint()
            return f"hi {who}"

    assert await FunctionTool(Greeter()).run({"who": "ann"}, ToolContext()) == "hi ann"


# --- the decorator ----------------------------------------------------------------------


def test_the_bare_decorator_makes_a_function_tool_that_is_still_callable() -> None:
    @tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    assert isinstance(add, FunctionTool)
    assert add(2, 3) == 5
    assert add.name == "add"
    assert add.description == "Add two numbers."
    assert inspect.signature(add) == inspect.signature(add.fn)


async def test_the_decorator_with_options_sets_them() -> None:
    @tool(
        name="remove_file",
        requires_confirmation=lambda args: not args.get("dry_run", False),
        annotations=ToolAnnotations(destructive=True),
        required_scopes={"files:write"},
    )
    def delete(path: str, dry_run: bool = False) -> str:
        return f"deleted {path}"

    assert delete.name == "remove_file"
    assert delete.requires_confirmation({"path": "/tmp/x"})
    assert not delete.requires_confirmation({"path": "/tmp/x", "dry_run": True})
    assert delete.required_scopes == frozenset({"files:write"})
    decl = delete.declaration()
    assert decl is not None
    assert decl.annotations.destructive is True
    assert not delete.is_read_only
    assert await delete.run({"path": "a"}, ToolContext()) == "deleted a"


def test_read_only_makes_the_tool_read_only_and_concurrency_safe() -> None:
    @tool(read_only=True)
    def look() -> str:
        return "x"

    @tool
    def touch() -> str:
        return "x"

    assert look.is_read_only
    assert look.is_concurrency_safe
    assert not touch.is_read_only
    assert not touch.is_concurrency_safe
    decl = look.declaration()
    assert decl is not None
    assert decl.annotations == ToolAnnotations(read_only=True)


def test_read_only_keeps_the_other_annotations() -> None:
    @tool(read_only=True, annotations=ToolAnnotations(idempotent=True, open_world=False))
    def look() -> str:
        return "x"

    assert look.annotations == ToolAnnotations(read_only=True, idempotent=True, open_world=False)


async def test_a_static_toolset_wraps_plain_functions_as_function_tools() -> None:
    def ping() -> str:
        return "pong"

    toolset = StaticToolset([ping])
    (only,) = await toolset.list_tools()
    assert isinstance(only, FunctionTool)
    assert await only.run({}, ToolContext()) == "pong"


def test_the_tool_satisfies_the_tool_protocol_structurally() -> None:
    from toolsets import Tool

    assert isinstance(FunctionTool(describe_person), Tool)


async def test_a_long_running_function_tool_warns_the_model_in_its_description() -> None:
    @tool(is_long_running=True)
    def start_job(name: str) -> Mapping[str, str]:
        """Start a job."""
        return {"status": "pending", "job": name}

    decl = start_job.declaration()
    assert decl is not None
    assert decl.description.startswith("Start a job.")
    assert "do not call the tool again" in decl.description
    assert start_job.description == decl.description


# --- signatures of every shape ----------------------------------------------------------


async def test_string_annotations_resolve_even_with_a_type_checking_only_context_import() -> None:
    from tests.deferred_annotations import count_items

    t = FunctionTool(count_items)
    decl = t.declaration()
    assert decl is not None
    assert list(decl.parameters["properties"]) == ["items"]
    ctx = ToolContext()
    assert await t.run({"items": [{"name": "a", "qty": 2}, {"name": "b"}]}, ctx) == 3
    assert ctx.actions.state_delta == {"counted_for": "user"}


async def test_decorated_functions_keep_their_hints_and_their_asyncness() -> None:
    def logged(fn: Any) -> Any:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            return fn(*args, **kwargs)

        return wrapper

    @functools.lru_cache
    def multiply(x: int, y: int) -> int:
        return x * y

    @logged
    async def fetch(key: str) -> str:
        await anyio.lowlevel.checkpoint()
        return f"value of {key}"

    cached = FunctionTool(multiply)
    decl = cached.declaration()
    assert decl is not None
    assert decl.parameters["properties"] == {"x": {"type": "integer"}, "y": {"type": "integer"}}
    assert await cached.run({"x": "2", "y": 3}, ToolContext()) == 6
    assert await FunctionTool(fetch).run({"key": "k"}, ToolContext()) == "value of k"


async def test_bound_methods_and_static_methods_are_tools_but_unbound_methods_are_refused() -> None:
    class Shop:
        def __init__(self) -> None:
            self.stock = {"tea": 3}

        def count(self, item: str) -> int:
            return self.stock.get(item, 0)

        @staticmethod
        def double(x: int) -> int:
            return 2 * x

    assert await FunctionTool(Shop().count).run({"item": "tea"}, ToolContext()) == 3
    static = FunctionTool(Shop.__dict__["double"], name="double")
    assert await static.run({"x": 4}, ToolContext()) == 8
    with pytest.raises(ToolDefinitionError, match="bound method"):
        FunctionTool(Shop.count)


async def test_a_positional_only_context_is_passed_in_its_position() -> None:
    def f(a: int, ctx: ToolContext, /, b: int = 0) -> list[Any]:
        return [a, isinstance(ctx, ToolContext), b]

    assert await FunctionTool(f).run({"a": 1, "b": 2}, ToolContext()) == [1, True, 2]


async def test_argument_errors_name_real_fields_not_union_members() -> None:
    def f(x: int | str, m: Address | int) -> None:
        return None

    result = await FunctionTool(f).run(
        {"x": [1], "m": {"street": "Main", "zip": "12345"}}, ToolContext()
    )
    assert isinstance(result, dict)
    assert set(result["fields"]) == {"x", "m", "m.zip_code"}  # type: ignore[arg-type]


async def test_an_alias_given_in_annotated_is_the_name_the_model_uses() -> None:
    def f(source: Annotated[str, pydantic.Field(alias="from")]) -> str:
        return source

    t = FunctionTool(f)
    decl = t.declaration()
    assert decl is not None
    assert list(decl.parameters["properties"]) == ["from"]
    assert await t.run({"from": "here"}, ToolContext()) == "here"


async def test_values_of_any_typed_parameters_are_copies() -> None:
    def f(payload: Any) -> str:
        payload["changed"] = True
        return "ok"

    args = {"payload": {"a": [1]}}
    assert await FunctionTool(f).run(args, ToolContext()) == "ok"
    assert args == {"payload": {"a": [1]}}


async def test_numbers_are_accepted_for_string_parameters() -> None:
    def f(order_id: str) -> str:
        return order_id

    assert await FunctionTool(f).run({"order_id": 12345}, ToolContext()) == "12345"


def test_a_default_json_cannot_show_is_a_definition_error() -> None:
    sentinel = object()

    def f(x: Any = sentinel) -> None:
        return None

    with pytest.raises(ToolDefinitionError):
        FunctionTool(f)


async def test_a_tool_annotated_with_json_value_has_a_response_schema() -> None:
    def f() -> dict[str, JsonValue]:
        return {"a": [1, {"b": None}]}

    t = FunctionTool(f)
    assert t.response_schema is not None
    assert t.response_schema["type"] == "object"
    assert await t.run({}, ToolContext()) == {"a": [1, {"b": None}]}


# --- a plain function on the event loop: called at once, its result ready ---------------


async def test_a_plain_function_on_the_loop_is_called_when_run_is_called_not_awaited() -> None:
    calls: list[int] = []

    @tool(run_in_thread=False)
    def double(x: int) -> int:
        """Twice x."""
        calls.append(x)
        return 2 * x

    running = double.run({"x": 4}, ToolContext())
    assert calls == [4]  # no wait, so nothing a deadline could interrupt
    assert await running == 8
    invalid = await double.run({"x": "many"}, ToolContext())
    assert isinstance(invalid, dict)
    assert "x" in str(invalid["error"])
    assert calls == [4]


async def test_a_plain_function_on_the_loop_may_hand_back_an_awaitable_that_run_awaits() -> None:
    async def later() -> str:
        await anyio.lowlevel.checkpoint()
        return "later"

    @tool(run_in_thread=False)
    def wrapper() -> Any:
        """Hands back a coroutine."""
        return later()

    assert await wrapper.run({}, ToolContext()) == "later"


async def test_a_threaded_or_async_function_runs_only_when_awaited() -> None:
    calls: list[str] = []

    @tool
    def threaded() -> str:
        """Runs in a worker thread."""
        calls.append("threaded")
        return "x"

    @tool
    async def asynchronous() -> str:
        """A coroutine function that waits."""
        calls.append("asynchronous")
        await anyio.lowlevel.checkpoint()
        return "x"

    for each in (threaded, asynchronous):
        running = each.run({}, ToolContext())
        assert calls == []
        assert await running == "x"
        calls.clear()


async def test_an_async_function_that_never_awaits_runs_at_once_like_a_plain_one() -> None:
    calls: list[int] = []

    @tool
    async def double(x: int) -> int:
        """Twice x, without waiting for anything."""
        calls.append(x)
        return 2 * x

    running = double.run({"x": 4}, ToolContext())
    assert calls == [4]  # it cannot wait, so nothing a deadline could interrupt
    assert isinstance(running, Ready)
    assert await running == 8

    @tool
    async def fails() -> str:
        """Raises at once."""
        raise LookupError("no such thing")

    with pytest.raises(LookupError, match="no such thing"):
        fails.run({}, ToolContext())
    outcome = await invoke(fails, {}, ToolContext(), default_timeout=1.0)
    assert isinstance(outcome, Done)
    assert outcome.result == {"error": "The tool 'fails' failed: LookupError: no such thing"}


async def _inner() -> str:
    await anyio.lowlevel.checkpoint()
    return "inner"


class _Resource:
    async def __aenter__(self) -> _Resource:
        await anyio.lowlevel.checkpoint()
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None


class _Items:
    def __aiter__(self) -> _Items:
        self.left = 2
        return self

    async def __anext__(self) -> int:
        self.left -= 1
        if self.left < 0:
            raise StopAsyncIteration
        await anyio.lowlevel.checkpoint()
        return self.left


async def test_an_async_function_that_may_wait_is_never_run_at_once() -> None:
    """Each way a coroutine can wait (await, async with, async for, an async
    comprehension, and a wrapper awaiting the function) leaves it to the awaitable, under
    the call's deadline."""

    async def awaits() -> str:
        return await _inner()

    async def with_block() -> str:
        async with _Resource():
            return "in"

    async def loops() -> list[int]:
        found = []
        async for item in _Items():
            found.append(item)
        return found

    async def comprehends() -> list[int]:
        return [item async for item in _Items()]

    async def plain() -> str:
        return "plain"

    @functools.wraps(plain)
    async def wrapped() -> str:
        return await plain()

    class Holder:
        async def method(self) -> str:
            return "bound"

    expected = {
        awaits: "inner",
        with_block: "in",
        loops: [1, 0],
        comprehends: [1, 0],
        wrapped: "plain",
    }
    for fn, result in expected.items():
        running = FunctionTool(fn).run({}, ToolContext())
        assert not isinstance(running, Ready), fn.__name__
        assert await running == result
    # A bound method that never awaits runs at once; a partial is not looked into.
    assert isinstance(FunctionTool(Holder().method).run({}, ToolContext()), Ready)
    running = FunctionTool(functools.partial(plain), name="p").run({}, ToolContext())
    assert not isinstance(running, Ready)
    assert await running == "plain"


async def test_an_async_function_that_never_awaits_still_gets_its_awaitable_result() -> None:
    @tool
    async def hands_back() -> Any:
        """Returns a coroutine of a function that waits."""
        return _inner()

    assert await hands_back.run({}, ToolContext()) == "inner"


async def test_a_plain_function_on_the_loop_returning_what_json_cannot_carry_raises() -> None:
    @tool(run_in_thread=False)
    def opaque() -> Any:
        """Returns something JSON cannot carry."""
        return object()

    with pytest.raises(ToolCallError) as caught:
        await opaque.run({}, ToolContext())
    assert caught.value.tool_name == "opaque"
