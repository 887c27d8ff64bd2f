"""The one call path (`toolsets._invoke.invoke`): a tool called outside any agent loop,
by a plain function that answers what the call asks, and the gates, deadline and
callbacks every consumer shares."""

from __future__ import annotations

import ast
import copy
import dataclasses
import functools
import importlib
import inspect
from collections.abc import Mapping
from typing import Any

import anyio
import pytest

from tests.agent.helpers import call, response_of, start
from tests.openapi.helpers import recording_server
from toolsets import (
    AuthConfig,
    AuthCredential,
    FunctionTool,
    JsonValue,
    Tool,
    ToolConfirmation,
    ToolContext,
    ToolNotFoundError,
    tool,
)
from toolsets._invoke import (
    DECLINED,
    TOO_DEEP,
    Callbacks,
    ConfirmationNeeded,
    CredentialNeeded,
    Done,
    LongRunning,
    Outcome,
    invoke,
)
from toolsets.agent import (
    InMemorySessionService,
    LlmAgent,
    Runner,
    SessionService,
    SharesEventsForRuns,
)
from toolsets.models import ScriptedModel
from toolsets.openapi import OpenApiToolset
from toolsets.schema import to_gemini_declarations

pytestmark = pytest.mark.anyio

KEY = AuthConfig(scheme_name="api_key", scheme={"type": "apiKey", "in": "header", "name": "X"})
SECRET = "s3cret-key"


async def call_one(
    called: Tool, args: Mapping[str, Any], credential: AuthCredential
) -> tuple[JsonValue, list[Outcome]]:
    """A second consumer of the call path, as an MCP server or a CLI would be: call one
    tool, confirm whatever it asks, give ``credential`` when it needs one."""
    asked: list[Outcome] = []
    confirmation: ToolConfirmation | None = None
    given: AuthCredential | None = None
    for _ in range(3):
        outcome = await invoke(
            called,
            args,
            ToolContext(function_call_id="call-1"),
            default_timeout=10,
            confirmation=confirmation,
            credential=given,
            resumed=bool(asked),
        )
        if isinstance(outcome, Done):
            return outcome.result, asked
        asked.append(outcome)
        args = outcome.args
        if isinstance(outcome, ConfirmationNeeded):
            confirmation = ToolConfirmation(confirmed=True)
        elif isinstance(outcome, CredentialNeeded):
            given = credential
    raise AssertionError(f"still not done after {asked}")


async def test_a_plain_caller_answers_confirmation_then_credential_and_the_tool_runs_once() -> None:
    runs: list[tuple[str, str | None]] = []

    @tool(requires_confirmation=True, auth_config=KEY, run_in_thread=False)
    def delete_file(path: str, ctx: ToolContext) -> str:
        """Deletes a file."""
        credential = ctx.auth_credential
        runs.append((path, str(credential.secret) if credential is not None else None))
        return f"deleted {path}"

    result, asked = await call_one(delete_file, {"path": "a.txt"}, AuthCredential.api_key(SECRET))

    assert result == "deleted a.txt"
    assert runs == [("a.txt", SECRET)]
    first, second = asked
    assert isinstance(first, ConfirmationNeeded)
    assert first.args == {"path": "a.txt"}
    assert "delete_file" in first.hint
    assert isinstance(second, CredentialNeeded)
    assert second.auth_config == KEY


async def test_the_user_is_never_asked_about_a_call_whose_arguments_could_not_run() -> None:
    runs: list[str] = []

    @tool(requires_confirmation=True, run_in_thread=False)
    def delete_file(path: str) -> str:
        """Deletes a file."""
        runs.append(path)
        return f"deleted {path}"

    @tool(auth_config=KEY, run_in_thread=False)
    def read_file(path: str) -> str:
        """Reads a file."""
        runs.append(path)
        return "text"

    for gated in (delete_file, read_file):
        outcome = await invoke(gated, {"path": 7}, ToolContext(), default_timeout=5)
        assert isinstance(outcome, Done)
        assert set(outcome.result["fields"]) == {"path"}  # type: ignore[index,call-overload]
        # Valid arguments are still asked about.
        asked = await invoke(gated, {"path": "a"}, ToolContext(), default_timeout=5)
        assert isinstance(asked, ConfirmationNeeded | CredentialNeeded)
    assert runs == []


async def test_a_plain_caller_calls_a_rest_api_tool_with_the_api_key_it_was_given() -> None:
    spec = {
        "openapi": "3.1.0",
        "info": {"title": "files", "version": "1"},
        "paths": {
            "/files/{name}": {
                "delete": {
                    "operationId": "delete_file",
                    "parameters": [
                        {
                            "name": "name",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "string"},
                        }
                    ],
                    "security": [{"key": []}],
                    "responses": {"200": {"description": "ok"}},
                }
            }
        },
        "components": {
            "securitySchemes": {"key": {"type": "apiKey", "in": "header", "name": "X-Api-Key"}}
        },
    }
    with anyio.fail_after(10):
        async with (
            recording_server() as server,
            OpenApiToolset(spec, base_url=server.url) as toolset,
        ):
            rest = await toolset.get_tool("delete_file")
            result, asked = await call_one(rest, {"name": "a.txt"}, AuthCredential.api_key(SECRET))

    assert result == {"ok": True}
    assert [type(each) for each in asked] == [ConfirmationNeeded, CredentialNeeded]
    (request,) = server.requests
    assert request.request_line == "DELETE /files/a.txt HTTP/1.1"
    assert request.headers["x-api-key"] == SECRET


async def test_a_declined_confirmation_is_an_error_result_and_the_tool_does_not_run() -> None:
    runs: list[str] = []

    @tool(requires_confirmation=True, run_in_thread=False)
    def drop(table: str) -> None:
        """Drops a table."""
        runs.append(table)

    outcome = await invoke(
        drop,
        {"table": "t"},
        ToolContext(),
        default_timeout=10,
        confirmation=ToolConfirmation(confirmed=False),
        resumed=True,
    )

    assert outcome == Done(result={"error": DECLINED}, args={"table": "t"})
    assert runs == []


async def test_a_tool_needing_scopes_the_caller_lacks_does_not_run() -> None:
    @tool(required_scopes={"admin", "write"}, run_in_thread=False)
    def reset() -> str:
        """Resets everything."""
        raise AssertionError("ran")  # pragma: no cover

    refused = await invoke(reset, {}, ToolContext(), default_timeout=10, scopes={"write"})
    allowed = await invoke(
        FunctionTool(lambda: "ok", name="open", required_scopes={"write"}, run_in_thread=False),
        {},
        ToolContext(),
        default_timeout=10,
        scopes={"write"},
    )

    assert isinstance(refused, Done)
    assert isinstance(refused.result, dict)
    assert "admin" in str(refused.result["error"])
    assert "write" not in str(refused.result["error"])
    assert allowed == Done(result="ok", args={})


async def test_a_call_past_its_deadline_is_an_error_result_and_its_cancellation_is_set() -> None:
    @tool(timeout=0.05)
    async def hang() -> str:
        """Never answers."""
        await anyio.sleep_forever()
        raise AssertionError("unreachable")  # pragma: no cover

    ctx = ToolContext()
    with anyio.fail_after(5):
        outcome = await invoke(hang, {}, ctx, default_timeout=60)

    assert isinstance(outcome, Done)
    assert isinstance(outcome.result, dict)
    assert "timed out" in str(outcome.result["error"])
    assert ctx.cancellation.cancelled


async def test_without_a_timeout_of_its_own_a_tool_gets_the_callers_default() -> None:
    @tool
    async def hang() -> str:
        """Never answers."""
        await anyio.sleep_forever()
        raise AssertionError("unreachable")  # pragma: no cover

    assert hang.timeout is None
    with anyio.fail_after(5):
        outcome = await invoke(hang, {}, ToolContext(), default_timeout=0.05)
    assert isinstance(outcome, Done)
    assert "0.05" in str(outcome.result)


async def test_cancelling_the_caller_sets_the_calls_cancellation_and_propagates() -> None:
    started = anyio.Event()
    ctx = ToolContext()

    @tool
    async def wait() -> str:
        """Waits."""
        started.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")  # pragma: no cover

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(functools.partial(invoke, wait, {}, ctx, default_timeout=60))
            await started.wait()
            tg.cancel_scope.cancel()
    assert ctx.cancellation.cancelled


async def test_on_tool_error_answers_for_a_failing_tool_and_after_tool_sees_that_answer() -> None:
    seen: list[tuple[str, JsonValue]] = []

    @tool(run_in_thread=False)
    def fail() -> None:
        """Fails."""
        raise ValueError("broken")

    def recover(t: Tool, args: Mapping[str, Any], ctx: ToolContext, error: Exception) -> JsonValue:
        return {"recovered": str(error)}

    def after(t: Tool, args: Mapping[str, Any], ctx: ToolContext, result: JsonValue) -> JsonValue:
        seen.append((t.name, result))
        return None  # keeps the result

    callbacks = Callbacks(on_tool_error=[recover], after_tool=[after])
    outcome = await invoke(fail, {}, ToolContext(), default_timeout=10, callbacks=callbacks)

    assert outcome == Done(result={"recovered": "broken"}, args={})
    assert seen == [("fail", {"recovered": "broken"})]


async def test_without_on_tool_error_the_model_is_told_the_real_cause() -> None:
    @tool(run_in_thread=False)
    def fail() -> None:
        """Fails."""
        raise ValueError("broken")

    outcome = await invoke(fail, {}, ToolContext(), default_timeout=10)

    assert outcome == Done(result={"error": "The tool 'fail' failed: ValueError: broken"}, args={})


async def test_before_tool_may_rewrite_the_arguments_or_answer_instead_of_the_tool() -> None:
    @tool(run_in_thread=False)
    def echo(text: str) -> str:
        """Echoes."""
        return text

    def shout(t: Tool, args: dict[str, Any], ctx: ToolContext) -> JsonValue:
        args["text"] = args["text"].upper()
        return None

    def cached(t: Tool, args: dict[str, Any], ctx: ToolContext) -> JsonValue:
        return "from cache" if args["text"] == "HIT" else None

    callbacks = Callbacks(before_tool=[shout, cached])
    rewritten = await invoke(
        echo, {"text": "hi"}, ToolContext(), default_timeout=10, callbacks=callbacks
    )
    answered = await invoke(
        echo, {"text": "hit"}, ToolContext(), default_timeout=10, callbacks=callbacks
    )
    resumed = await invoke(
        echo, {"text": "hit"}, ToolContext(), default_timeout=10, callbacks=callbacks, resumed=True
    )

    assert rewritten == Done(result="HI", args={"text": "HI"})
    assert answered == Done(result="from cache", args={"text": "HIT"})
    assert resumed == Done(result="hit", args={"text": "hit"})  # before_tool ran already


async def test_the_callers_arguments_are_never_changed() -> None:
    @tool(run_in_thread=False)
    def grab(items: list[Any]) -> int:
        """Changes what it was given."""
        items.append("tool")
        return len(items)

    def meddle(t: Tool, args: dict[str, Any], ctx: ToolContext) -> JsonValue:
        args["items"].append("callback")
        return None

    args = {"items": [{"deep": [1]}]}
    before = copy.deepcopy(args)
    outcome = await invoke(
        grab, args, ToolContext(), default_timeout=10, callbacks=Callbacks(before_tool=[meddle])
    )

    assert isinstance(outcome, Done)
    assert outcome.result == 3
    assert args == before


async def test_a_confirmation_asked_while_running_comes_back_with_the_tools_hint() -> None:
    @tool(run_in_thread=False)
    def transfer(amount: int, ctx: ToolContext) -> JsonValue:
        """Moves money, asking above a limit."""
        confirmation = ctx.tool_confirmation
        if amount > 100 and confirmation is None:
            ctx.request_confirmation(hint=f"Move {amount}?", payload={"limit": 100})
            return {"status": "asked"}
        return {"moved": amount}

    asked = await invoke(
        transfer, {"amount": 500}, ToolContext(function_call_id="c1"), default_timeout=10
    )
    answered = await invoke(
        transfer,
        {"amount": 500},
        ToolContext(function_call_id="c1"),
        default_timeout=10,
        confirmation=ToolConfirmation(confirmed=True),
        resumed=True,
    )

    assert isinstance(asked, ConfirmationNeeded)
    assert (asked.hint, asked.payload) == ("Move 500?", {"limit": 100})
    assert answered == Done(result={"moved": 500}, args={"amount": 500})


async def test_a_long_running_tool_gives_its_interim_result() -> None:
    @tool(is_long_running=True, run_in_thread=False)
    def start_job() -> JsonValue:
        """Starts a job."""
        return {"job": "j1"}

    outcome = await invoke(start_job, {}, ToolContext(), default_timeout=10)

    assert outcome == LongRunning(interim={"job": "j1"}, args={})


async def test_a_result_nested_too_deep_is_dropped_for_an_error() -> None:
    deep: JsonValue = []
    for _ in range(200):
        deep = [deep]

    outcome = await invoke(
        FunctionTool(lambda: deep, name="deep", run_in_thread=False),
        {},
        ToolContext(),
        default_timeout=10,
    )

    assert isinstance(outcome, Done)
    assert "too deep" in str(outcome.result)


# --- the declared members the agent reads: timeout, session_for_run, aclose -----------


def test_timeout_is_part_of_the_tool_contract() -> None:
    @tool(timeout=2.5)
    def slow() -> None:
        """Takes its time."""

    assert isinstance(slow, Tool)
    assert slow.timeout == 2.5
    assert FunctionTool(lambda: None, name="quick").timeout is None


def test_the_in_memory_service_declares_its_cheaper_read_for_runs() -> None:
    service = InMemorySessionService()
    assert isinstance(service, SessionService)
    assert isinstance(service, SharesEventsForRuns)


async def test_the_agent_refuses_a_transfer_to_an_agent_that_does_not_exist() -> None:
    @tool(run_in_thread=False)
    def hand_over(ctx: ToolContext) -> str:
        """Hands the conversation to another agent."""
        ctx.actions.transfer_to_agent = "nobody"
        return "handed over"

    model = ScriptedModel([call("hand_over"), "still here"])
    runner = Runner(LlmAgent("front", model, tools=[hand_over]))
    with anyio.fail_after(5):
        _, events = await start(runner, "go")

    assert response_of(events, "hand_over") == {
        "error": "There is no agent named 'nobody' to transfer to. Agents: front."
    }
    assert all(e.actions.transfer_to_agent is None for e in events)
    assert events[-1].text == "still here"


def test_the_model_is_told_of_a_missing_tool_from_the_error_toolsets_raise_for_it() -> None:
    few = ToolNotFoundError("ad", ["sub", "add"])
    many = ToolNotFoundError("tool_12x", [f"tool_{i}" for i in range(300)])
    huge = ToolNotFoundError("x" * 10_000, ["a"])

    assert few.for_model() == "There is no tool named 'ad'. Available tools: add, sub."
    assert many.for_model() == (
        "There is no tool named 'tool_12x' (of 300 tools). "
        "The closest: tool_12, tool_212, tool_192, tool_182, tool_172."
    )
    assert many.suggestions == ("tool_12", "tool_212", "tool_192")
    assert len(huge.for_model()) < 200


async def test_arguments_that_are_not_an_object_or_nest_too_deep_never_reach_the_tool() -> None:
    runs: list[object] = []

    @tool(run_in_thread=False)
    def echo(a: Any = None) -> None:
        """Records what it was given."""
        runs.append(a)  # pragma: no cover

    deep: dict[str, Any] = {}
    for _ in range(5000):
        deep = {"a": deep}

    listed = await invoke(echo, ["a"], ToolContext(), default_timeout=10)  # type: ignore[arg-type]
    nested = await invoke(echo, deep, ToolContext(), default_timeout=10)

    assert listed == Done(
        result={"error": "The arguments must be a JSON object, not an array."}, args={}
    )
    assert nested == Done(result={"error": TOO_DEEP}, args={})
    assert runs == []


async def test_fields_a_dialect_could_not_read_back_never_reach_the_tool_and_are_named() -> None:
    runs: list[object] = []

    @tool(run_in_thread=False)
    def tag(labels: dict[str, Any]) -> None:
        """Records what it was given."""
        runs.append(labels)  # pragma: no cover

    _, calls = to_gemini_declarations([tag.declaration()], form="parameters")
    _, args = calls.restore("tag", {"labels": '{"env": prod}'})

    outcome = await invoke(tag, args, ToolContext(), default_timeout=10)

    assert isinstance(outcome, Done)
    assert outcome.args == {}
    message = outcome.result["error"]  # type: ignore[index,call-overload]
    assert message.startswith("Invalid arguments, not sent: labels: not valid JSON")
    assert "write an object as JSON text" in message
    assert runs == []


def test_an_interrupt_in_a_plain_function_run_without_a_loop_reaches_the_caller() -> None:
    # The smolagents adapter drives a plain function's call with no event loop running.
    @tool(run_in_thread=False)
    def stop(x: int) -> int:
        """Stops."""
        raise KeyboardInterrupt

    running = invoke(stop, {"x": 1}, ToolContext(), default_timeout=5)
    with pytest.raises(KeyboardInterrupt):
        running.send(None)
    running.close()


def test_a_done_is_a_frozen_value_with_every_field() -> None:
    args = {"x": 1}
    done = Done(result=[1, 2], args=args)
    assert vars(done) == {"result": [1, 2], "args": args, "actions": None}
    with pytest.raises(dataclasses.FrozenInstanceError):
        done.result = 3  # type: ignore[misc]


def shortcuts(source: str) -> list[str]:
    """Where ``source`` makes an instance with ``__new__``, looks for a member with
    ``getattr`` (but on ``self``, as a ``__repr__`` may), or compares something with a
    class's attribute by identity."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr == "__new__":
            found.append(f"{node.lineno}: __new__")
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "getattr":
            if getattr(node.args[0], "id", None) != "self":
                found.append(f"{node.lineno}: getattr")
        elif isinstance(node, ast.Compare) and isinstance(node.ops[0], ast.Is | ast.IsNot):
            found += [
                f"{node.lineno}: is {side.value.id}.{side.attr}"
                for side in (node.left, *node.comparators)
                if isinstance(side, ast.Attribute)
                and isinstance(side.value, ast.Name)
                and side.value.id[:1].isupper()
            ]
    return found


@pytest.mark.parametrize(
    "module",
    ["_invoke", "_tool", "_forwarding", "agent._session", "agent._background", "search._index"],
)
def test_the_call_path_makes_its_values_with_their_constructors_and_probes_no_member(
    module: str,
) -> None:
    """What the call path reads is declared, and what it makes is made by the
    constructor (so that a field added to a value cannot be left unset); what looks
    through the library's wrappers knows them by their types."""
    source = inspect.getsource(importlib.import_module(f"toolsets.{module}"))
    assert shortcuts(source) == []


def test_the_shortcut_finder_finds_each_kind() -> None:
    source = (
        "x = object.__new__(Done)\n"
        "y = getattr(tool, 'refusal', None)\n"
        "z = refusal is not BaseTool.refusal\n"
        "r = getattr(self, '_name', None)\n"
        "n = value is None\n"
    )
    assert sorted(shortcuts(source)) == ["1: __new__", "2: getattr", "3: is BaseTool.refusal"]
