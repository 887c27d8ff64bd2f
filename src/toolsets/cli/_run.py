"""``toolsets run``: an interactive agent over the tools of some sources, with a model
behind an OpenAI-compatible chat API or OpenAI's Responses API; confirmations asked on
the terminal."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Mapping
from typing import Any

import anyio

from toolsets.cli._errors import CommandError, missing_cli

try:
    import click
except ImportError as exc:
    raise missing_cli(exc) from exc

from toolsets._auth import AuthCredential
from toolsets._context import ToolConfirmation
from toolsets.agent import (
    ConfirmationRequest,
    CredentialRequest,
    Event,
    LlmAgent,
    Runner,
)
from toolsets.cli._catalog import catalog_of, catalog_options, check_extras, offered
from toolsets.cli._options import (
    SourceCommand,
    calls_options,
    json_option,
    opened,
    run_async,
    source_options,
    tool_timeout_option,
)
from toolsets.cli._sources import credential_for, no_credential, pairs
from toolsets.cli._terminal import Terminal
from toolsets.models import OpenAIChatModel, OpenAIResponsesModel

__all__ = ["run_command"]

_MODEL_APIS = ("chat", "responses")
"""``--model-api``'s choices, the first the default: an OpenAI-compatible chat
completions API (`OpenAIChatModel`), or OpenAI's Responses API (`OpenAIResponsesModel`)."""

_USER = "you"
_SHOWN = 200
"""Characters of a tool's arguments or result shown on stderr."""
_QUIT = {"exit", "quit", ":q"}


@click.command(
    "run",
    cls=SourceCommand,
    epilog="""
\b
Type a message and press Enter; the agent answers on stdout, its tool calls are shown
on stderr. End with an empty stdin (Ctrl-D) or "exit". A call that requires
confirmation asks first (--yes confirms every call without asking). With stdin not a
terminal, each line is a message and the answer to a question is the next line.

\b
The model is behind --model-url (or $OPENAI_BASE_URL), the key in $OPENAI_API_KEY, and
--model-api says which API it speaks: chat (the default), any OpenAI-compatible chat
completions API (OpenAI, Ollama, vLLM, a router...); responses, OpenAI's Responses API.

\b
A catalogue too big to send at every step (GitHub's 1,223 operations): --search offers
one search_tools tool that loads what it finds (with --model-api responses, a model
that searches tools on OpenAI's side, gpt-5.4 and later, gets the tools deferred and
OpenAI's tool_search instead); --code-mode one run_code tool running the model's Python
programs that call the tools in a sandbox; both together, programs that search and call.

\b
--json prints one JSON object per line on stdout, for scripts: {"call": NAME, "args":
{...}}, {"result": NAME, "response": ...}, {"answer": TEXT}, {"error": CODE, "message":
TEXT}.

\b
Examples:
  toolsets run petstore.yaml --model gpt-4.1-mini
  toolsets run --stdio "python server.py" --model llama3.1 --model-url http://127.0.0.1:11434/v1
  toolsets run github.json --search --code-mode --model gpt-4.1-mini
  toolsets run github.json --search --model gpt-5.4 --model-api responses
""",
)
@click.argument("sources", nargs=-1, metavar="SOURCE…")
@source_options
@click.option("--model", required=True, help="The model's name, e.g. gpt-4.1-mini.")
@click.option("--model-url", metavar="URL", help="The model API's base URL, up to its /v1.")
@click.option(
    "--model-api",
    type=click.Choice(_MODEL_APIS, case_sensitive=False),
    default=_MODEL_APIS[0],
    show_default=True,
    help="The API the model speaks: chat, an OpenAI-compatible chat completions API "
    "(POST /chat/completions); responses, OpenAI's Responses API (POST /responses), "
    "where --search lets a model that can (gpt-5.4 and later) search the tools on "
    "OpenAI's side.",
)
@click.option("--instruction", default="", help="The agent's system instruction.")
@click.option("--yes", "-y", is_flag=True, help="Confirm every call without asking.")
@tool_timeout_option
@calls_options
@catalog_options
@json_option
def run_command(
    sources: tuple[str, ...],
    model: str,
    model_url: str | None,
    model_api: str,
    instruction: str,
    yes: bool,
    as_json: bool,
    **params: Any,
) -> None:
    """Chat with an agent that uses the tools of every SOURCE."""
    catalog = catalog_of(params)
    check_extras(catalog)
    terminal = Terminal()
    credentials = pairs(params["credentials"], "--credential")
    show = _Shown(terminal, as_json=as_json)

    async def go() -> int:
        async with (
            opened(terminal, sources, params) as (toolset, tools),
            _model(model_api, model, model_url) as llm,
        ):
            given = offered(toolset, catalog, lambda config: credential_for(config, credentials))
            try:
                agent = LlmAgent(
                    "assistant",
                    llm,
                    instruction=instruction,
                    tools=[given],
                    tool_timeout=params["tool_timeout"],
                )
                offer = _offer(len(tools), catalog.wraps)
                return await _chat(terminal, show, agent, f"{offer}; {llm.model}", yes, credentials)
            finally:
                if given is not toolset:  # its sandbox's workers (the rest is shut anyway)
                    with anyio.CancelScope(shield=True):
                        await given.shutdown()

    status = run_async(go)
    if status:
        sys.exit(status)


def _model(api: str, model: str, base_url: str | None) -> OpenAIChatModel | OpenAIResponsesModel:
    """The model ``--model-api`` names. With ``responses``, a ``--search`` catalogue is
    searched on OpenAI's side where the model can (``tool_search="auto"``, as from
    Python), else through ``search_tools`` as with any model."""
    if api == "responses":
        return OpenAIResponsesModel(model=model, base_url=base_url)
    return OpenAIChatModel(model=model, base_url=base_url)


def _offer(count: int, wrapped: str | None) -> str:
    """``1 tool``, ``1,223 tools``, ``1,223 tools behind --search``."""
    said = f"{count:,} tool{'' if count == 1 else 's'}"
    return f"{said} behind {wrapped}" if wrapped else said


async def _chat(
    terminal: Terminal,
    show: _Shown,
    agent: LlmAgent,
    banner: str,
    yes: bool,
    credentials: Mapping[str, str],
) -> int:
    """The conversation, message by message from stdin; the exit status (1 if a run
    ended with an error)."""
    status = 0
    runner = Runner(agent)
    session = await runner.create_session(user_id=_USER)
    if terminal.interactive:
        terminal.note(f"{banner}. Ctrl-D or 'exit' ends.")
    while True:
        message = await terminal.read_line("> ")
        if message is None or message.strip() in _QUIT:
            return status
        if not message.strip():
            continue
        events = runner.run(user_id=_USER, session_id=session.id, message=message)
        while True:
            pending, failed = await show.run(events)
            if failed:
                status = 1  # the session goes on; the exit status says so
            if not pending:
                break
            confirmations, found = await _answers(terminal, pending, yes, credentials)
            events = runner.resume(
                user_id=_USER,
                session_id=session.id,
                confirmations=confirmations,
                credentials=found,
            )


class _Shown:
    """What a run shows: its calls and their results on stderr, the answers on stdout;
    with ``--json``, each of them as one JSON object per line on stdout."""

    def __init__(self, terminal: Terminal, *, as_json: bool) -> None:
        self.terminal = terminal
        self.as_json = as_json

    def _line(self, value: dict[str, Any]) -> None:
        self.terminal.line(json.dumps(value, ensure_ascii=False, default=str))

    async def run(self, events: AsyncIterator[Event]) -> tuple[list[Any], bool]:
        """Show a run's events; what it waits for, and whether it ended with an error."""
        terminal = self.terminal
        pending: list[Any] = []
        failed = False
        async for event in events:
            for call in event.function_calls:
                if self.as_json:
                    self._line({"call": call.name, "args": call.args})
                else:
                    terminal.note(f"→ {call.name} {_clip(call.args)}")
            for response in event.function_responses:
                if self.as_json:
                    self._line({"result": response.name, "response": response.response})
                else:
                    terminal.note(f"← {response.name} {_clip(response.response)}")
            if event.error_code is not None:
                if self.as_json:
                    self._line({"error": event.error_code, "message": event.error_message})
                terminal.err.print(
                    f"toolsets: the agent stopped: {event.error_code}: {event.error_message}",
                    markup=False,
                )
                failed = True
            if event.is_final_response() and event.text:
                if self.as_json:
                    self._line({"answer": event.text})
                else:
                    terminal.line(event.text)
            pending.extend(event.pending)
        return pending, failed


async def _answers(
    terminal: Terminal, pending: list[Any], yes: bool, credentials: Mapping[str, str]
) -> tuple[dict[str, ToolConfirmation | bool], dict[str, AuthCredential]]:
    confirmations: dict[str, ToolConfirmation | bool] = {}
    found: dict[str, AuthCredential] = {}
    for request in pending:
        if isinstance(request, ConfirmationRequest):
            answer = yes or await terminal.ask(request.hint)
            confirmations[request.function_call_id] = answer
            terminal.note(f"{'confirmed' if answer else 'declined'}: {request.tool_name}")
        elif isinstance(request, CredentialRequest):
            credential = credential_for(request.auth_config, credentials)
            if credential is None:
                raise CommandError(no_credential(request.tool_name, request.auth_config))
            found[request.function_call_id] = credential
        else:  # a long-running call: its result comes later, from outside
            raise CommandError(
                f"{request.tool_name} started work whose result comes later; the command "
                "line cannot wait for it"
            )
    return confirmations, found


def _clip(value: object) -> str:
    """``value`` as JSON on one line, cut to `_SHOWN` characters."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"
