"""``--retries`` and ``--rate-limit`` on the commands that call tools, run as a user runs
them, against a real HTTP server on 127.0.0.1 that pushes back."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from tests.calls.test_retry import Arrivals, spec, upstream
from tests.cli.helpers import entry_point, environment, error_line, stdout_json, toolsets_command
from tests.helpers import serve_app


@pytest.fixture(scope="module")
def arrivals() -> Arrivals:
    return Arrivals()


@pytest.fixture(scope="module")
def url(arrivals: Arrivals) -> Iterator[str]:
    with serve_app(upstream(arrivals)) as port:
        yield f"http://127.0.0.1:{port}"


@pytest.fixture(scope="module")
def spec_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("calls") / "flaky.json"
    path.write_text(json.dumps(spec()))
    return path


@pytest.fixture(autouse=True)
def fresh(arrivals: Arrivals) -> None:
    arrivals.seen.clear()
    arrivals.plan.clear()


def test_call_with_retries_gets_past_a_503(arrivals: Arrivals, url: str, spec_file: Path) -> None:
    arrivals.plan["/items"] = [(503, {"retry-after": "0"})]
    done = toolsets_command(
        "call", str(spec_file), "listItems", "--base-url", url, "--retries", "2", "--json"
    )
    assert done.returncode == 0, done.stderr
    assert stdout_json(done) == {"ok": True}
    assert arrivals.count("/items") == 2


def test_call_without_retries_gives_the_503_as_it_came(
    arrivals: Arrivals, url: str, spec_file: Path
) -> None:
    arrivals.plan["/items"] = [(503, {"retry-after": "0"})]
    done = toolsets_command("call", str(spec_file), "listItems", "--base-url", url, "--json")
    assert arrivals.count("/items") == 1
    assert "503" in done.stdout + done.stderr


@pytest.mark.anyio
async def test_serve_keeps_calls_under_its_rate_limit_and_says_when_to_try_again(
    arrivals: Arrivals, url: str, spec_file: Path
) -> None:
    # One call a minute to the API: the second's turn comes after its deadline (the
    # --tool-timeout), so it is not sent and its result says when to try again.
    command = entry_point()
    args = [*command[1:], "serve", str(spec_file), "--base-url", url, "--rate-limit", "1/min"]
    params = StdioServerParameters(
        command=command[0], args=[*args, "--tool-timeout", "5"], env=environment()
    )
    with anyio.fail_after(30):
        async with Client(params) as client:
            first = await client.call_tool("listItems", {})
            second = await client.call_tool("listItems", {})
    assert not first.is_error
    assert second.is_error
    said = second.structured_content or {}
    assert "rate limit of 1 calls per 60 s to 127.0.0.1" in said["error"]
    assert 50 < said["retry_after"] <= 60
    assert arrivals.count("/items") == 1


@pytest.mark.parametrize("rate", ["fast", "0/s", "10/fortnight", "-1"])
def test_a_rate_that_is_no_rate_is_one_line_naming_the_option(spec_file: Path, rate: str) -> None:
    done = toolsets_command("call", str(spec_file), "listItems", "--rate-limit", rate)
    assert done.returncode == 2
    assert "--rate-limit" in error_line(done)
    assert "is not a rate" in error_line(done)


def test_retries_below_zero_are_refused(spec_file: Path) -> None:
    done = toolsets_command("call", str(spec_file), "listItems", "--retries", "-1")
    assert done.returncode == 2
    assert "--retries" in error_line(done)


def test_serve_takes_the_calls_options(spec_file: Path) -> None:
    done = toolsets_command("serve", "--help")
    assert "--retries N" in done.stdout
    assert "--rate-limit RATE" in done.stdout
    assert "--max-result-bytes N" in done.stdout
    assert "--max-result-tokens N" in done.stdout


def test_a_token_limit_below_what_result_limit_takes_is_refused(spec_file: Path) -> None:
    from toolsets.calls._result_limit import MIN_MAX_TOKENS

    args = ("call", str(spec_file), "listItems", "--max-result-tokens")
    done = toolsets_command(*args, str(MIN_MAX_TOKENS - 1))
    assert done.returncode == 2
    assert "--max-result-tokens" in error_line(done)
    assert f">={MIN_MAX_TOKENS}" in error_line(done)


@pytest.mark.anyio
async def test_serve_with_a_cache_answers_a_fresh_get_again_without_reaching_the_api(
    arrivals: Arrivals, url: str, spec_file: Path
) -> None:
    arrivals.plan["/items"] = [(200, {"cache-control": "max-age=60"})]
    command = entry_point()
    args = [*command[1:], "serve", str(spec_file), "--base-url", url, "--cache-size", "1M"]
    params = StdioServerParameters(command=command[0], args=args, env=environment())
    with anyio.fail_after(30):
        async with Client(params) as client:
            first = await client.call_tool("listItems", {})
            second = await client.call_tool("listItems", {})
    assert first.structured_content == second.structured_content
    assert not second.is_error
    assert arrivals.count("/items") == 1


def test_call_with_cache_sends_a_no_store_get_as_usual(
    arrivals: Arrivals, url: str, spec_file: Path
) -> None:
    arrivals.plan["/items"] = [(200, {"cache-control": "no-store"})]
    done = toolsets_command(
        "call", str(spec_file), "listItems", "--base-url", url, "--cache", "--json"
    )
    assert done.returncode == 0, done.stderr
    assert stdout_json(done) == {"ok": True}
    assert arrivals.count("/items") == 1


@pytest.mark.parametrize("size", ["big", "0", "-1M", "12X"])
def test_a_cache_size_that_is_no_size_is_one_line_naming_the_option(
    spec_file: Path, size: str
) -> None:
    done = toolsets_command("call", str(spec_file), "listItems", "--cache-size", size)
    assert done.returncode == 2
    assert "--cache-size" in error_line(done)
    assert "is not a size" in error_line(done)


def test_run_and_serve_take_the_cache_options() -> None:
    for command in ("run", "serve", "call"):
        done = toolsets_command(command, "--help")
        assert "--cache " in done.stdout
        assert "--cache-size SIZE" in done.stdout
