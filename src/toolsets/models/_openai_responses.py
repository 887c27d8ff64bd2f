"""A model behind OpenAI's Responses API (``POST /v1/responses``), spoken over httpx2
without OpenAI's SDK, statelessly: each request carries the whole conversation (its
reasoning items too), nothing is looked up by a previous response's id."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final, Literal

import anyio.to_thread
import httpx2

from toolsets._content import Content, FunctionCall, Part
from toolsets._declaration import ToolDeclaration
from toolsets._errors import ToolDefinitionError
from toolsets._tool import LlmRequest, Tool
from toolsets.models._http_model import (
    CallIds,
    HttpModel,
    arguments,
    deferred_declarations,
    invalid_response,
    same_tools,
    searched_tools,
    str_or_none,
)
from toolsets.models._llm import INVALID_JSON_KEY, FinishReason, LlmResponse, Usage
from toolsets.models._openai import DEFAULT_BASE_URL
from toolsets.schema import ToolCallMap, to_openai_tools

__all__ = [
    "CONFIG_KEYS",
    "OPENAI_TOOL_SEARCH_MODELS",
    "OpenAIResponsesModel",
    "ResponsesToolSearch",
]

CONFIG_KEYS: Final = frozenset(
    {
        "temperature",
        "top_p",
        "max_output_tokens",
        "max_tool_calls",
        "tool_choice",
        "parallel_tool_calls",
        "reasoning",
        "text",
        "truncation",
        "include",
        "metadata",
        "store",
        "service_tier",
        "prompt_cache_key",
        "safety_identifier",
        "user",
        "top_logprobs",
    }
)
"""``LlmRequest.config`` keys sent as they are. ``extra_body`` (a mapping) is merged into
the request for anything else the API takes; any other key is an error, so a misspelt
option does not go unnoticed. ``previous_response_id``, ``conversation`` and
``background`` are not offered: every request carries the whole conversation itself."""

ResponsesToolSearch = Literal["auto", "server"]
"""Whether OpenAI's tool search finds a request's deferred tools: ``"server"`` (the
hosted search, run on OpenAI's side), or ``"auto"``: the hosted search for a model of
`OPENAI_TOOL_SEARCH_MODELS`, else none (the local search)."""

OPENAI_TOOL_SEARCH_MODELS: Final = ("gpt-5.4", "gpt-5.5")
"""The models the tool search guide lists ("gpt-5.4 and later"): ``tool_search="auto"``
lets these search on OpenAI's side, with their snapshots and variants (``gpt-5.4-mini``,
``gpt-5.4-2026-03-05``, ``gpt-5.4-pro``) and every later GPT version (``gpt-5.6``,
``gpt-6``), also behind a router's prefix (``openai/gpt-5.4``)."""

_PROVIDER: Final = "openai"
"""The key of a part's ``provider_data`` this model reads and writes."""

_SEARCH_ITEMS: Final = frozenset({"tool_search_call", "tool_search_output"})
"""The output items of a tool search on OpenAI's side, kept in the conversation and
sent back as they came (in a part's ``provider_data``)."""

_KEPT_ITEMS: Final = frozenset({"reasoning", "message", *_SEARCH_ITEMS})
"""The output items sent back as they came: a reasoning model's reasoning must go back
with the calls and messages that followed it when the API keeps no state."""

_INCOMPLETE: Final[Mapping[str, FinishReason]] = {
    "max_output_tokens": "length",
    "content_filter": "content_filter",
}

_VERSION = re.compile(r"gpt-(\d+)(?:\.(\d+))?(?=$|[-@:])")


class OpenAIResponsesModel(HttpModel[ToolCallMap]):
    """An `Llm` that calls ``POST {base_url}/responses``, OpenAI's Responses API.

    One pooled ``httpx2.AsyncClient`` is opened on first use and closed by `aclose` (or
    ``async with``); a client passed in is used as it is and left open.

    The conversation goes as ``input`` items: messages, ``function_call`` items and
    their ``function_call_output`` s (paired by ``call_id``), and the output items the
    API asks to get back when it keeps no state: reasoning items (with their encrypted
    content) and assistant messages as they came, kept in the answer's parts
    (``provider_data["openai"]["item"]``). The system prompt is ``instructions``.
    Tools are ``{"type": "function", ...}`` with names made legal on the way out and
    mapped back on the way in (`toolsets.schema.to_openai_tools`), without strict mode
    (the schema as the tool declares it).

    Tool search on OpenAI's side (``tool_search``): when a request has tools a search
    finds (`LlmRequest.deferred`: a `toolsets.search.searchable` catalogue's, but the
    pinned ones) and the model can search, every one of them is sent with
    ``"defer_loading": true`` (loaded or not: the list of tools stays the same from
    one request to the next), with OpenAI's hosted ``tool_search`` tool in place of the
    local one (`LlmRequest.local_search`). The search's ``tool_search_call`` and
    ``tool_search_output`` items are kept in the answer (thought parts) and sent back
    as they came; a ``function_call`` of a tool it found is a call like any other.
    Otherwise the request is sent as for any model: the local search tool and the
    loaded tools declared, the others left out, and the items of an earlier search on
    OpenAI's side left out of the conversation.

    Provider errors (an HTTP 4xx or 5xx, a ``response.failed`` or ``error`` event) are
    answered as an `LlmResponse` with ``error_code`` (``"http_429"``, or the error's own
    code: ``"server_error"``), ``error_message`` and, when the server says how long to
    wait, ``retry_after``; a server that cannot be reached raises
    `toolsets.ConnectionError`. The API key never appears in either.
    """

    _SERVER = "OpenAI Responses API at"
    _ENV = "OPENAI"
    _API = "a Responses API"
    _CONFIG_KEYS = CONFIG_KEYS
    _KEY_SCHEME = "bearer"
    _KEY_HEADER = "authorization"
    _KEY_ENV = ("OPENAI_API_KEY",)
    _ERROR_STATUSES: ClassVar[Mapping[str, int]] = {"rate_limit_exceeded": 429}

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        http_client: httpx2.AsyncClient | None = None,
        timeout: float = 120.0,
        headers: Mapping[str, str] | None = None,
        tool_search: ResponsesToolSearch | None = "auto",
    ) -> None:
        """Configure the model; nothing is sent until `generate`.

        Args:
            model: The model to call, e.g. ``gpt-5.4``; default ``$OPENAI_MODEL``. A
                request's own ``model`` wins over it.
            base_url: The API root, up to and including ``/v1``; default
                ``$OPENAI_BASE_URL``, else ``https://api.openai.com/v1``.
            api_key: Sent as ``Authorization: Bearer ...``; default ``$OPENAI_API_KEY``.
                With neither, no key is sent (a server elsewhere that needs none).
            http_client: A client to use instead of opening one; never closed here,
                and its own timeouts apply.
            timeout: Seconds to wait for each read, write or pool slot of the client
                opened here (connecting waits at most 10 s).
            headers: Extra headers for every request (``OpenAI-Organization``, ...).
            tool_search: Whether OpenAI's hosted tool search finds the request's
                deferred tools: ``"server"`` always; ``"auto"`` (the default) for a
                model that has it (`OPENAI_TOOL_SEARCH_MODELS`; the request's model
                when it names one), else not; None: never (the local search tool, as
                for any model).

        Raises:
            ValueError: no model is named, the base URL is not http(s), the timeout
                is not a positive number, or ``tool_search`` is none of ``"auto"``,
                ``"server"``, None.
            AuthError: the API key holds a control character (a trailing newline) or
                a non-ASCII character, which no header can carry (the key is not shown).
        """
        if tool_search not in ("auto", "server", None):
            raise ValueError(f"tool_search must be 'auto', 'server' or None, got {tool_search!r}")
        super().__init__(
            model,
            base_url=base_url,
            default_base_url=DEFAULT_BASE_URL,
            endpoint="/responses",
            api_key=api_key,
            http_client=http_client,
            timeout=timeout,
            headers=headers,
        )
        self._tool_search: ResponsesToolSearch | None = tool_search
        self._searched: _Searched | None = None
        """The last tools sent with a tool search: the same catalogue (the same tool
        objects) is not translated again at every step."""

    def _auth_headers(self) -> dict[str, str]:
        if self._api_key is None:
            return {}
        return {"Authorization": f"Bearer {self._api_key}"}

    # -- tool search -------------------------------------------------------------------

    async def _prepare(self, request: LlmRequest) -> None:
        # A catalogue not translated yet is, in a worker thread: a thousand operations
        # would hold the event loop up.
        searched = self._searching(request)
        if searched is not None and not self._cached(*searched):
            self._searched = await anyio.to_thread.run_sync(_translate_searched, request, *searched)

    def _searching(
        self, request: LlmRequest
    ) -> tuple[tuple[ToolDeclaration, ...], tuple[Tool, ...]] | None:
        """The tools offered as they are and the deferred ones, of a request sent with
        OpenAI's tool search (None: sent without)."""
        if not request.deferred:
            return None
        if self._tool_search is None or (
            self._tool_search == "auto" and not supports_tool_search(request.model or self._model)
        ):
            return None
        return searched_tools(request)

    def _cached(self, offered: tuple[ToolDeclaration, ...], deferred: tuple[Tool, ...]) -> bool:
        cached = self._searched
        return (
            cached is not None
            and cached.offered == offered
            and same_tools(cached.deferred, deferred)
        )

    # -- request ---------------------------------------------------------------------

    def _translate(self, request: LlmRequest) -> tuple[dict[str, Any], ToolCallMap]:
        searched = self._searching(request)
        translated: _Searched | None = None
        if searched is not None:
            if not self._cached(*searched):
                self._searched = _translate_searched(request, *searched)
            translated = self._searched
            assert translated is not None
            if len(translated.tools) == len(translated.offered) + 1:
                translated = None  # no deferred tool can be offered
        if translated is None:
            tools, calls = _function_tools(request.declarations.values())
        else:
            tools, calls = list(translated.tools), translated.calls
        body: dict[str, Any] = {
            "model": request.model or self._model,
            "input": _input(request, calls, searching=translated is not None),
        }
        if request.system_instruction:
            body["instructions"] = request.system_instruction
        return self._configured(body, tools, request, calls), calls

    def _tool_choice(self, value: Any, calls: ToolCallMap) -> Any:
        # A forced tool is named by its declaration; the API knows it by its provider name.
        if isinstance(value, Mapping) and value.get("type") == "function" and "name" in value:
            return {**value, "name": calls.to_provider(str(value["name"]))}
        return value

    # -- response --------------------------------------------------------------------

    def _stream_state(self, names: ToolCallMap) -> _StreamState:
        return _StreamState(calls=names)

    def _stream_error(self, event: dict[str, Any]) -> bool:
        kind = event.get("type")
        if kind in ("error", "response.failed"):
            return True
        # A whole response (a body) that failed.
        return kind in (None, "response") and isinstance(event.get("error"), Mapping)

    def _provider_error(self, payload: Mapping[str, Any], *, code: str) -> LlmResponse:
        # The error event has its code and message at the top; a failed response has
        # them under "error", a response.failed event under its response's.
        kind = payload.get("type")
        if kind == "error":
            payload = {"error": {"code": payload.get("code"), "message": payload.get("message")}}
        elif kind == "response.failed" and isinstance(payload.get("response"), Mapping):
            payload = payload["response"]
        return super()._provider_error(payload, code=code)

    def _parse(self, content: bytes, calls: ToolCallMap) -> LlmResponse:
        payload = self._payload(content)
        if isinstance(payload, LlmResponse):
            return payload
        if not isinstance(payload.get("output"), list):
            return invalid_response("the body has no output")
        return _answer(payload, payload["output"], calls)


def supports_tool_search(model: str) -> bool:
    """Whether ``model`` is a GPT of a version `OPENAI_TOOL_SEARCH_MODELS` lists, or a
    later one (a snapshot or variant of one too: ``gpt-5.4-mini``, ``gpt-5.4-2026-03-05``)."""
    found = _VERSION.search(model)
    if found is None:
        return False
    version = (int(found[1]), int(found[2] or 0))
    first = min(
        (int(m[1]), int(m[2] or 0))
        for m in (_VERSION.search(name) for name in OPENAI_TOOL_SEARCH_MODELS)
        if m is not None
    )
    return version >= first


# -- tools ---------------------------------------------------------------------------


def _function_tools(
    declarations: Iterable[ToolDeclaration],
) -> tuple[list[dict[str, Any]], ToolCallMap]:
    """Responses API function tools for ``declarations`` (the Chat Completions ones,
    flattened), and the map back."""
    tools, calls = to_openai_tools(declarations)
    # ``strict`` is said: left out, the API makes a schema strict when it can, which
    # changes what the model may send for optional parameters.
    return [{"type": "function", "strict": False, **t["function"]} for t in tools], calls


@dataclass(frozen=True)
class _Searched:
    """The tools of a request with a tool search, as translated."""

    offered: tuple[ToolDeclaration, ...]
    """The declarations sent as they are (equal ones make the same tools)."""
    deferred: tuple[Tool, ...]
    """The deferred tools (the same objects make the same tools)."""
    tools: tuple[dict[str, Any], ...]
    """What goes in ``tools``: the search tool first."""
    calls: ToolCallMap


def _translate_searched(
    request: LlmRequest, offered: tuple[ToolDeclaration, ...], deferred: tuple[Tool, ...]
) -> _Searched:
    """The tools of ``request`` with OpenAI's hosted tool search: the search tool,
    ``offered`` as they are, and the deferred tools with ``defer_loading`` (a declared
    one under its declaration, another under its call declaration; one that has none
    left out).

    Raises:
        ToolDefinitionError: a tool is named ``tool_search``.
    """
    declarations = deferred_declarations(request, deferred)
    tools, calls = _function_tools([*offered, *declarations])
    for entry in tools[len(offered) :]:
        entry["defer_loading"] = True
    if any(entry["name"] == "tool_search" for entry in tools):
        raise ToolDefinitionError(
            "a tool is named 'tool_search', the name of OpenAI's tool search tool; rename "
            "it, or pass tool_search=None",
            tool_name=calls.from_provider("tool_search"),
        )
    search = {"type": "tool_search", "execution": "server"}
    return _Searched(offered=offered, deferred=deferred, tools=(search, *tools), calls=calls)


# -- the conversation, in input items ------------------------------------------------------


def _input(request: LlmRequest, calls: ToolCallMap, *, searching: bool) -> list[dict[str, Any]]:
    """The conversation as input items. The items of an earlier tool search on OpenAI's
    side go back when this request searches too, else they are left out."""
    items: list[dict[str, Any]] = []
    ids = CallIds()
    for content in request.contents:
        if content.role == "model":
            items.extend(_model_items(content.parts, calls, ids, searching=searching))
            continue
        rest: list[Part] = []
        for part in content.parts:
            if part.thought:
                continue
            if part.function_response is not None:
                answer = part.function_response
                result = answer.response
                output = (
                    result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
                )
                items.append(
                    {
                        "type": "function_call_output",
                        "call_id": ids.for_response(answer.name, answer.id),
                        "output": output,
                    }
                )
            elif part.function_call is None:
                rest.append(part)
        if not rest:
            continue
        if content.role == "system":
            text = "".join(p.text or "" for p in rest)
            items.append({"role": "system", "content": text})
        else:
            # A tool turn's text or images cannot go in a call's output (text only, one
            # per call), so they follow as the user's.
            items.append({"role": "user", "content": _user_content(rest)})
    return items


def _model_items(
    parts: Sequence[Part], calls: ToolCallMap, ids: CallIds, *, searching: bool
) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for part in parts:
        data = (part.provider_data or {}).get(_PROVIDER) or {}
        kept = data.get("item")
        if isinstance(kept, Mapping) and kept.get("type") in _KEPT_ITEMS:
            if kept.get("type") not in _SEARCH_ITEMS or searching:
                items.append(dict(kept))
            continue
        if part.thought:
            continue
        if part.function_call is not None:
            call = part.function_call
            item: dict[str, Any] = {
                "type": "function_call",
                "call_id": ids.for_call(call),
                "name": calls.to_provider(call.name),
                "arguments": _arguments_text(call.args),
            }
            for key in ("id", "namespace"):
                if isinstance(data.get(key), str):
                    item[key] = data[key]
            items.append(item)
        elif part.text:
            items.append({"role": "assistant", "content": part.text})
    return items


def _arguments_text(args: Mapping[str, Any]) -> str:
    # Arguments that were not JSON go back as the model sent them.
    if set(args) == {INVALID_JSON_KEY} and isinstance(args[INVALID_JSON_KEY], str):
        return str(args[INVALID_JSON_KEY])
    return json.dumps(dict(args), ensure_ascii=False)


def _user_content(parts: list[Part]) -> str | list[dict[str, Any]]:
    if all(p.text is not None for p in parts):
        return "".join(p.text or "" for p in parts)
    out: list[dict[str, Any]] = []
    for part in parts:
        if part.text is not None:
            out.append({"type": "input_text", "text": part.text})
        elif part.inline_data is not None:
            blob = part.inline_data
            url = f"data:{blob.mime_type};base64,{base64.b64encode(blob.data).decode('ascii')}"
            if blob.mime_type.startswith("image/"):
                out.append({"type": "input_image", "image_url": url, "detail": "auto"})
            else:
                out.append({"type": "input_file", "file_data": url, "filename": "file"})
        elif part.file_data is not None:
            file = part.file_data
            mime = (file.mime_type or "").lower()
            if mime.startswith("image/"):
                out.append({"type": "input_image", "image_url": file.uri, "detail": "auto"})
            elif mime == "application/pdf":
                out.append({"type": "input_file", "file_url": file.uri})
            else:
                out.append({"type": "input_text", "text": f"[file: {file.uri}]"})
    return out


# -- output items --------------------------------------------------------------------------


def _answer(response: Mapping[str, Any], output: Sequence[Any], calls: ToolCallMap) -> LlmResponse:
    """The answer of a whole response object with its ``output`` items."""
    items = [item for item in output if isinstance(item, Mapping)]
    parts = [p for item in items for p in _parts(item, calls)]
    return LlmResponse(
        content=Content(role="model", parts=tuple(parts)),
        finish_reason="content_filter" if _refused(items) else _finish_reason(response, parts),
        usage=_usage(response.get("usage")),
        model_version=str_or_none(response.get("model")),
    )


def _kept(item: Mapping[str, Any]) -> dict[str, Any]:
    """An output item as it came, a JSON value of its own, to be sent back."""
    raw: dict[str, Any] = json.loads(json.dumps(item))
    return {_PROVIDER: {"item": raw}}


def _parts(item: Mapping[str, Any], calls: ToolCallMap) -> list[Part]:
    kind = item.get("type")
    if kind == "message":
        content = item.get("content")
        pieces = [
            str(c.get("text") if c.get("type") == "output_text" else c.get("refusal") or "")
            for c in (content if isinstance(content, list) else ())
            if isinstance(c, Mapping)
        ]
        return [Part(text="".join(pieces), provider_data=_kept(item))]
    if kind == "function_call":
        return [Part(function_call=_call(item, calls), provider_data=_call_data(item))]
    if kind == "reasoning":
        summary = item.get("summary")
        text = "\n\n".join(
            str(s.get("text") or "")
            for s in (summary if isinstance(summary, list) else ())
            if isinstance(s, Mapping)
        )
        return [Part(text=text, thought=True, provider_data=_kept(item))]
    if kind == "tool_search_call":
        shown = json.dumps(item.get("arguments"), ensure_ascii=False)
        return [Part(text=f"Searching the tools: {shown}", thought=True, provider_data=_kept(item))]
    if kind == "tool_search_output":
        names = ", ".join(_found(item.get("tools"), calls)) or "none"
        return [Part(text=f"Found tools: {names}", thought=True, provider_data=_kept(item))]
    return []  # other hosted tools' items: nothing the loop acts on


def _found(tools: Any, calls: ToolCallMap) -> list[str]:
    """The tools' own names of what a tool search loaded (a namespace's as
    ``namespace.name``)."""
    names: list[str] = []
    for tool in tools if isinstance(tools, list) else ():
        if not isinstance(tool, Mapping):
            continue
        if tool.get("type") == "namespace":
            inner = tool.get("tools")
            names += [f"{tool.get('name')}.{n}" for n in _found(inner, calls)]
        elif isinstance(tool.get("name"), str):
            names.append(calls.from_provider(tool["name"]))
    return names


def _call(item: Mapping[str, Any], calls: ToolCallMap) -> FunctionCall:
    args = arguments(item.get("arguments"))
    wire = str(item.get("name") or "")
    if INVALID_JSON_KEY in args:
        own = calls.from_provider(wire)
    else:
        own, args = calls.restore(wire, args)
    call_id = item.get("call_id")
    return FunctionCall(name=own, args=args, id=call_id if isinstance(call_id, str) else None)


def _call_data(item: Mapping[str, Any]) -> dict[str, Any] | None:
    """What goes back with a call besides its name, arguments and call id: the item's
    id (a reasoning item before it names it) and its namespace."""
    data = {key: item[key] for key in ("id", "namespace") if isinstance(item.get(key), str)}
    return {_PROVIDER: data} if data else None


def _refused(items: Sequence[Mapping[str, Any]]) -> bool:
    """Whether a message says the model refused (its text is the refusal's)."""
    return any(
        isinstance(piece, Mapping) and piece.get("type") == "refusal"
        for item in items
        if item.get("type") == "message" and isinstance(item.get("content"), list)
        for piece in item["content"]
    )


def _finish_reason(response: Mapping[str, Any], parts: Sequence[Part]) -> FinishReason | None:
    status = response.get("status")
    if status == "incomplete":
        details = response.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, Mapping) else None
        return _INCOMPLETE.get(str(reason), "other")
    if any(p.function_call is not None for p in parts):
        return "tool_calls"
    if status in ("completed", None):
        return "stop"
    return "other"


def _usage(value: Any) -> Usage | None:
    if not isinstance(value, Mapping):
        return None
    given, made = value.get("input_tokens"), value.get("output_tokens")
    return Usage(
        input_tokens=given if isinstance(given, int) else 0,
        output_tokens=made if isinstance(made, int) else 0,
    )


# -- streaming -----------------------------------------------------------------------


@dataclass
class _StreamState:
    """What the events of one stream add up to: the text deltas shown as they come,
    the finished items by their place in the output, and the response the last event
    carries."""

    calls: ToolCallMap
    items: dict[int, Mapping[str, Any]] = field(default_factory=dict)
    response: Mapping[str, Any] = field(default_factory=dict)
    model_version: str | None = None

    def add(self, event: dict[str, Any]) -> list[LlmResponse]:
        """Take one event in; return the partial responses it makes (text deltas)."""
        kind = event.get("type")
        if kind in ("response.created", "response.completed", "response.incomplete"):
            response = event.get("response")
            if isinstance(response, Mapping):
                self.response = response
                self.model_version = str_or_none(response.get("model")) or self.model_version
        elif kind == "response.output_item.done":
            index, item = event.get("output_index"), event.get("item")
            if isinstance(index, int) and isinstance(item, Mapping):
                self.items[index] = item
        elif kind in ("response.output_text.delta", "response.reasoning_summary_text.delta"):
            delta = event.get("delta")
            if isinstance(delta, str) and delta:
                part = Part(text=delta, thought=kind != "response.output_text.delta")
                return [
                    LlmResponse(
                        content=Content(role="model", parts=(part,)),
                        partial=True,
                        model_version=self.model_version,
                    )
                ]
        return []  # argument deltas, item starts, and events not known here

    def final(self) -> LlmResponse:
        # The last event's response holds every item; the items finished one by one
        # stand in where it has none.
        output = self.response.get("output")
        if not isinstance(output, list) or not output:
            output = [self.items[i] for i in sorted(self.items)]
        return _answer(self.response, output, self.calls)
