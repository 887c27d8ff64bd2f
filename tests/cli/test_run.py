"""``toolsets run``: an agent over the fixture MCP server's tools, its model a fake
OpenAI-compatible server on 127.0.0.1 (chat completions, or with ``--model-api
responses`` OpenAI's Responses API), the conversation (and the answers to its questions)
scripted on stdin."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming
from pydantic import TypeAdapter

from tests.cli.helpers import (
    FIXTURE_STDIO,
    error_line,
    toolsets_command,
    toolsets_process,
    write_sources,
)
from tests.models.test_openai import (
    FakeOpenAI,
    Reply,
    completion,
    server,  # noqa: F401 (the fake provider, one per module)
    tool_call,
)
from tests.models.test_openai_responses import (
    SEARCH_CALL,
    call,
    refused,
    response,
    said,
    search_output,
)
from toolsets._invoke import DECLINED
from toolsets.search import SEARCH_TOOL_NAME

ENV = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": "", "OPENAI_MODEL": ""}


def _tool_results(fake: FakeOpenAI, model: str) -> list[Any]:
    """What the model was told each tool returned, request by request (the last tool
    message of each)."""
    found = []
    for received in fake.requests(model):
        tools = [m for m in received.body["messages"] if m["role"] == "tool"]
        if tools:
            found.append(json.loads(tools[-1]["content"]))
    return found


def _run(
    fake: FakeOpenAI,
    model: str,
    stdin: str,
    *more: str,
    cwd: Path | None = None,
    command: Callable[..., Any] = toolsets_command,
) -> Any:
    """``toolsets run`` over the fixture MCP server's tools, or (with ``cwd``, where the
    module is) the Python module's; in this process, or with ``command`` (e.g.
    `toolsets_process`) as it runs the command."""
    source = ["clitools:everything"] if cwd is not None else ["--stdio", FIXTURE_STDIO]
    return command(
        "run",
        *source,
        "--model",
        model,
        "--model-url",
        fake.base_url,
        *more,
        stdin=stdin,
        env=ENV,
        cwd=cwd,
    )


@pytest.fixture(scope="module")
def module(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder of the Python module of tools."""
    return write_sources(tmp_path_factory.mktemp("sources"))["module"].parent


def test_the_agent_calls_tools_and_answers_each_message_on_stdout(server: FakeOpenAI) -> None:  # noqa: F811
    model = "cli-run-chat"
    server.script(
        model,
        Reply(body=completion(tool_calls=[tool_call("c1", "add", '{"a": 1, "b": 2}')])),
        Reply(body=completion(content="1 + 2 = 3")),
        Reply(body=completion(content="You are welcome.")),
    )
    done = _run(server, model, "add 1 and 2\nthanks\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["1 + 2 = 3", "You are welcome."]
    assert '→ add {"a": 1, "b": 2}' in done.stderr  # the call, shown on stderr
    assert _tool_results(server, model)[0] == {"total": 3}


def test_a_call_that_needs_confirmation_asks_and_runs_only_if_confirmed(
    server: FakeOpenAI,  # noqa: F811
) -> None:
    model = "cli-run-confirm"
    delete = tool_call("c1", "delete_file", '{"path": "/tmp/a"}')
    server.script(
        model,
        Reply(body=completion(tool_calls=[delete])),
        Reply(body=completion(content="Deleted.")),
        Reply(body=completion(tool_calls=[{**delete, "id": "c2"}])),
        Reply(body=completion(content="Kept it.")),
    )
    done = _run(server, model, "delete /tmp/a\ny\nagain\nn\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["Deleted.", "Kept it."]
    assert "Allow the tool 'delete_file' to run" in done.stderr
    results = _tool_results(server, model)
    assert results[0] == {"result": "deleted /tmp/a"}
    assert results[-1]["error"] == DECLINED


def test_yes_confirms_every_call(server: FakeOpenAI, module: Path) -> None:  # noqa: F811
    model = "cli-run-yes"
    server.script(
        model,
        Reply(body=completion(tool_calls=[tool_call("c1", "wipe", '{"disk": "sdb"}')])),
        Reply(body=completion(content="Wiped.")),
    )
    done = _run(server, model, "wipe sdb\n", "--yes", cwd=module)
    assert done.stdout.splitlines() == ["Wiped."]
    assert _tool_results(server, model) == ["sdb wiped"]


def test_a_model_error_is_one_line_and_exit_status_1(
    server: FakeOpenAI,  # noqa: F811
    module: Path,
) -> None:
    model = "cli-run-error"
    server.script(model, Reply(status=500, body={"error": {"message": "overloaded"}}))
    done = _run(server, model, "hello\n", cwd=module)
    assert done.returncode == 1
    assert done.stdout == ""
    assert "overloaded" in error_line(done)


def test_a_call_longer_than_the_tool_timeout_gives_the_model_an_error(
    server: FakeOpenAI,  # noqa: F811
) -> None:
    model = "cli-run-timeout"
    server.script(
        model,
        Reply(body=completion(tool_calls=[tool_call("c1", "sleep", '{"seconds": 30}')])),
        Reply(body=completion(content="It took too long.")),
    )
    done = _run(server, model, "sleep\n", "--yes", "--tool-timeout", "0.5")
    assert done.stdout.splitlines() == ["It took too long."]
    [result] = _tool_results(server, model)
    assert "0.5 s" in result["error"]


def test_confirm_never_lets_the_agent_call_a_destructive_tool_without_asking(
    server: FakeOpenAI,  # noqa: F811
) -> None:
    model = "cli-run-confirm-never"
    delete = tool_call("c1", "delete_file", '{"path": "/tmp/b"}')
    server.script(
        model,
        Reply(body=completion(tool_calls=[delete])),
        Reply(body=completion(content="Deleted.")),
    )
    done = _run(server, model, "delete /tmp/b\n", "--confirm", "never")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["Deleted."]
    assert "Allow the tool" not in done.stderr
    assert _tool_results(server, model) == [{"result": "deleted /tmp/b"}]


def _offered(fake: FakeOpenAI, model: str) -> list[list[str]]:
    """The tools each request offered the model, by name."""
    return [
        [tool["function"]["name"] for tool in received.body.get("tools", [])]
        for received in fake.requests(model)
    ]


def test_json_prints_each_call_result_and_answer_as_a_line_of_json(
    server: FakeOpenAI,  # noqa: F811
) -> None:
    model = "cli-run-json"
    server.script(
        model,
        Reply(body=completion(tool_calls=[tool_call("c1", "add", '{"a": 1, "b": 2}')])),
        Reply(body=completion(content="1 + 2 = 3")),
    )
    done = _run(server, model, "add 1 and 2\n", "--json")
    assert done.returncode == 0, done.stderr
    assert [json.loads(line) for line in done.stdout.splitlines()] == [
        {"call": "add", "args": {"a": 1, "b": 2}},
        {"result": "add", "response": {"total": 3}},
        {"answer": "1 + 2 = 3"},
    ]
    assert "→ add" not in done.stderr


def test_search_offers_one_search_tool_that_loads_what_it_finds(
    server: FakeOpenAI,  # noqa: F811
) -> None:
    model = "cli-run-search"
    server.script(
        model,
        Reply(body=completion(tool_calls=[tool_call("c1", "search_tools", '{"query": "add"}')])),
        Reply(body=completion(tool_calls=[tool_call("c2", "add", '{"a": 2, "b": 40}')])),
        Reply(body=completion(content="42")),
    )
    done = _run(server, model, "add 2 and 40\n", "--search", "--max-loaded", "3")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["42"]
    offered = _offered(server, model)
    assert offered[0] == ["search_tools"]
    assert "add" in offered[1]
    assert _tool_results(server, model)[-1] == {"total": 42}


def test_code_mode_offers_one_tool_that_runs_the_models_program(
    server: FakeOpenAI,  # noqa: F811
) -> None:
    model = "cli-run-code"
    program = json.dumps({"code": "r = await tools.add(a=20, b=22)\nr['total']"})
    server.script(
        model,
        Reply(body=completion(tool_calls=[tool_call("c1", "run_code", program)])),
        Reply(body=completion(content="42")),
    )
    done = _run(server, model, "add them\n", "--code-mode", "--code-timeout", "20")
    assert done.returncode == 0, done.stderr
    assert _offered(server, model)[0] == ["run_code"]
    assert _tool_results(server, model)[-1]["result"] == 42


def test_an_option_of_search_or_code_mode_without_it_is_a_usage_error(
    server: FakeOpenAI,  # noqa: F811
) -> None:
    line = error_line(_run(server, "unused", "", "--pin", "add"))
    assert "--max-loaded and --pin are for --search" in line
    line = error_line(_run(server, "unused", "", "--code-timeout", "5"))
    assert "--code-timeout and --max-tool-calls are for --code-mode" in line


# -- --model-api responses: OpenAI's Responses API ----------------------------------------

_RESPONSES_REQUEST = TypeAdapter(ResponseCreateParamsNonStreaming)


def _responses_bodies(fake: FakeOpenAI, model: str) -> list[dict[str, Any]]:
    """The bodies sent for ``model``, each to ``/v1/responses``, each one the API takes:
    valid by OpenAI's SDK's types, and none it refuses (a deferred tool without the
    ``tool_search`` tool, a search item without it...)."""
    bodies = []
    for received in fake.requests(model):
        assert received.path == "/v1/responses"
        _RESPONSES_REQUEST.validate_python(received.body)
        assert refused(received.body) is None
        bodies.append(received.body)
    return bodies


def _outputs(body: dict[str, Any]) -> list[Any]:
    """What the model was told the calls returned, in a Responses API body."""
    return [
        json.loads(i["output"]) for i in body["input"] if i.get("type") == "function_call_output"
    ]


def test_model_api_responses_calls_a_tool_and_answers_through_openais_responses_api(
    server: FakeOpenAI,  # noqa: F811
) -> None:
    model = "cli-run-responses"
    server.script(
        model,
        Reply(body=response(call("add", '{"a": 1, "b": 2}', "call_A"))),
        Reply(body=response(said("1 + 2 = 3"))),
    )
    done = _run(
        server, model, "add 1 and 2\n", "--model-api", "responses", command=toolsets_process
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["1 + 2 = 3"]
    assert '→ add {"a": 1, "b": 2}' in done.stderr
    first, second = _responses_bodies(server, model)
    assert first["input"] == [{"role": "user", "content": "add 1 and 2"}]
    assert "add" in [t["name"] for t in first["tools"]]
    assert _outputs(second) == [{"total": 3}]


def test_model_api_responses_with_search_lets_a_model_that_can_search_on_openais_side(
    server: FakeOpenAI,  # noqa: F811
) -> None:
    model = "gpt-5.4-cli-run-search"  # gpt-5.4 and later search on OpenAI's side

    def finding(body: dict[str, Any]) -> Reply:
        (add,) = [t for t in body["tools"] if t.get("name") == "add"]
        found = search_output(add)
        return Reply(body=response(SEARCH_CALL, found, call("add", '{"a": 2, "b": 40}')))

    server.script(model, finding, Reply(body=response(said("42"))))
    done = _run(server, model, "add 2 and 40\n", "--model-api", "responses", "--search")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["42"]
    first, second = _responses_bodies(server, model)
    search, *functions = first["tools"]
    assert search == {"type": "tool_search", "execution": "server"}
    assert "add" in [t["name"] for t in functions]
    assert all(t["defer_loading"] is True for t in functions)
    assert SEARCH_TOOL_NAME not in [t["name"] for t in functions]
    kinds = [item.get("type") for item in second["input"]]
    assert kinds[1:3] == ["tool_search_call", "tool_search_output"]  # sent back as they came
    assert _outputs(second) == [{"total": 42}]


def test_model_api_responses_with_search_offers_search_tools_to_an_older_model(
    server: FakeOpenAI,  # noqa: F811
) -> None:
    model = "gpt-4.1-cli-run-search"
    server.script(
        model,
        Reply(body=response(call(SEARCH_TOOL_NAME, '{"query": "add"}', "call_S"))),
        Reply(body=response(call("add", '{"a": 2, "b": 40}', "call_A"))),
        Reply(body=response(said("42"))),
    )
    done = _run(server, model, "add 2 and 40\n", "--model-api", "responses", "--search")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["42"]
    bodies = _responses_bodies(server, model)
    assert [t["name"] for t in bodies[0]["tools"]] == [SEARCH_TOOL_NAME]
    assert "add" in [t["name"] for t in bodies[1]["tools"]]
    assert not any(
        t["type"] == "tool_search" or t.get("defer_loading") for b in bodies for t in b["tools"]
    )
    assert _outputs(bodies[-1])[-1] == {"total": 42}


def test_model_api_chat_is_the_default_and_named_in_the_help() -> None:
    done = toolsets_command("run", "--help")
    assert "--model-api [chat|responses]" in done.stdout
    assert "[default: chat]" in done.stdout.split("--model-api", 1)[1]


def test_a_model_api_that_is_neither_is_a_usage_error_naming_the_choices(
    server: FakeOpenAI,  # noqa: F811
) -> None:
    done = _run(server, "unused", "", "--model-api", "completions")
    assert done.returncode == 2
    line = error_line(done)
    assert "--model-api" in line
    assert "'chat', 'responses'" in line
    assert server.requests("unused") == []
