"""A model behind the Anthropic Messages API (``POST /v1/messages``), spoken over
httpx2 without Anthropic's SDK."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final, Literal

import anyio.to_thread
import httpx2

from toolsets._content import Content, FunctionCall, Part
from toolsets._declaration import ToolDeclaration
from toolsets._errors import ToolDefinitionError
from toolsets._results import is_error_result
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
from toolsets.schema import ToolCallMap, to_anthropic_tools

__all__ = [
    "ANTHROPIC_VERSION",
    "CONFIG_KEYS",
    "DEFAULT_BASE_URL",
    "TOOL_SEARCH_MODELS",
    "AnthropicModel",
    "ToolSearch",
]

DEFAULT_BASE_URL: Final = "https://api.anthropic.com"
"""Where requests go when neither ``base_url`` nor ``ANTHROPIC_BASE_URL`` says otherwise."""

ANTHROPIC_VERSION: Final = "2023-06-01"
"""The ``anthropic-version`` header sent (the API's current, and only stable, version)."""

DEFAULT_MAX_TOKENS: Final = 4096
"""``max_tokens`` when neither the model nor the request says (the API requires one)."""

CONFIG_KEYS: Final = frozenset(
    {
        "max_tokens",
        "temperature",
        "top_p",
        "top_k",
        "stop_sequences",
        "tool_choice",
        "metadata",
        "service_tier",
    }
)
"""``LlmRequest.config`` keys sent as they are. ``extra_body`` (a mapping) is merged into
the request for anything else the API takes; any other key is an error, so a misspelt
option does not go unnoticed. ``thinking`` is not offered: a conversation with tool use
and extended thinking must send each thinking block back with its signature, which
`Part` does not keep."""

_STOP_REASONS: Final[Mapping[str, FinishReason]] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "content_filter",
}

_PROVIDER: Final = "anthropic"
"""The key of a part's ``provider_data`` this model reads and writes."""

_IMAGE_TYPES: Final = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})

ToolSearch = Literal["auto", "bm25", "regex"]
"""Which of Anthropic's tool search tools finds a request's deferred tools: ``"bm25"``
(natural-language queries), ``"regex"`` (patterns), or ``"auto"``: BM25 for a model
of `TOOL_SEARCH_MODELS`, else none (the local search)."""

TOOL_SEARCH_MODELS: Final = (
    "claude-sonnet-4-5",
    "claude-haiku-4-5",
    "claude-opus-4-5",
    "claude-opus-4-6",
    "claude-sonnet-4-6",
    "claude-opus-4-7",
    "claude-opus-4-8",
    "claude-haiku-5-5",
    "claude-sonnet-5",
    "claude-opus-5",
    "claude-mythos-",
    "claude-fable-",
)
"""The models ``tool_search="auto"`` lets search on Anthropic's side: those the tool
search tool's documentation lists, each with its dated snapshots and later point
releases (``claude-sonnet-4-5`` covers ``claude-sonnet-4-5-20250929``; ``claude-opus-5``
covers ``claude-opus-5-5``), also under a cloud platform's id
(``anthropic.claude-sonnet-4-5-20250929-v1:0``, ``claude-sonnet-4-5@20250929``)."""

_SEARCH_VERSION: Final = "20251119"
"""The version of the tool search tools sent (``tool_search_tool_bm25_20251119``)."""

_SEARCH_BLOCKS: Final = frozenset({"server_tool_use", "tool_search_tool_result"})
"""The blocks of a provider-side tool search, kept in the conversation and sent back as
they came (in a part's ``provider_data``)."""


class AnthropicModel(HttpModel[ToolCallMap]):
    """An `Llm` that calls ``POST {base_url}/v1/messages``.

    One pooled ``httpx2.AsyncClient`` is opened on first use and closed by `aclose` (or
    ``async with``); a client passed in is used as it is and left open.

    Tools are offered in the Anthropic dialect (`toolsets.schema.to_anthropic_tools`):
    names and property names are made legal on the way out, and each ``tool_use``
    block's name and input are mapped back to the tool's own on the way in. Results go
    back as ``tool_result`` blocks, with ``is_error`` when the result is an
    ``{"error": ...}``. Several calls in one turn (parallel tool use) come and go
    together. Images (and PDFs, and text documents) travel base64-encoded, or by URL.

    Tool search on Anthropic's side (``tool_search``): when a request has tools a
    search finds (`LlmRequest.deferred`: a `toolsets.search.searchable` catalogue's, but
    the pinned ones) and the model can search, every one of them is sent with
    ``"defer_loading": true`` (loaded or not: the list of tools stays the same from
    one request to the next), with Anthropic's tool search tool in place of the local
    one (`LlmRequest.local_search`). The search's ``server_tool_use`` and
    ``tool_search_tool_result`` blocks are kept in the answer (thought parts carrying
    the block in ``provider_data["anthropic"]``) and sent back as they came (but for
    references to tools no longer sent); a ``tool_use`` of a tool it found is a call
    like any other. Otherwise the request is sent as for any model: the local search
    tool and the loaded tools declared, the others left out, and the blocks of an
    earlier search on Anthropic's side left out of the conversation.

    Provider errors (an HTTP 4xx or 5xx, 529 when overloaded) are answered as an
    `LlmResponse` with ``error_code`` (``"http_429"``), ``error_message`` and, when the
    server says how long to wait, ``retry_after``; an ``error`` event in a stream gets the
    code of its type's status (``overloaded_error``: ``"http_529"``), as the same error
    answered over HTTP does (its message is the error's). A server that cannot be
    reached raises `toolsets.ConnectionError`. The API key never appears in either.
    """

    _SERVER = "Anthropic API at"
    _ERROR_STATUSES: ClassVar[Mapping[str, int]] = {
        "invalid_request_error": 400,
        "authentication_error": 401,
        "billing_error": 402,
        "permission_error": 403,
        "not_found_error": 404,
        "request_too_large": 413,
        "rate_limit_error": 429,
        "api_error": 500,
        "timeout_error": 504,
        "overloaded_error": 529,
    }
    _ENV = "ANTHROPIC"
    _API = "a Messages API"
    _CONFIG_KEYS = CONFIG_KEYS
    _KEY_SCHEME = "x-api-key"
    _KEY_HEADER = "x-api-key"
    _KEY_ENV = ("ANTHROPIC_API_KEY",)

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        http_client: httpx2.AsyncClient | None = None,
        timeout: float = 120.0,
        headers: Mapping[str, str] | None = None,
        tool_search: ToolSearch | None = "auto",
    ) -> None:
        """Configure the model; nothing is sent until `generate`.

        Args:
            model: The model to call, e.g. ``claude-sonnet-4-5``; default
                ``$ANTHROPIC_MODEL``. A request's own ``model`` wins over it.
            base_url: The API root, without ``/v1``; default ``$ANTHROPIC_BASE_URL``,
                else ``https://api.anthropic.com``.
            api_key: Sent as ``x-api-key``; default ``$ANTHROPIC_API_KEY``. With
                neither, no key is sent (a proxy that adds its own).
            max_tokens: The most tokens an answer may have, unless the request's
                ``config["max_tokens"]`` says.
            http_client: A client to use instead of opening one; never closed here,
                and its own timeouts apply.
            timeout: Seconds to wait for each read, write or pool slot of the client
                opened here (connecting waits at most 10 s).
            headers: Extra headers for every request (``anthropic-beta``, or another
                ``anthropic-version``).
            tool_search: Which Anthropic tool search finds the request's deferred
                tools: ``"bm25"`` or ``"regex"``; ``"auto"`` (the default) BM25 for a
                model that has it (`TOOL_SEARCH_MODELS`; the request's model when it
                names one), else none; None: never (the local search tool, as for any
                model).

        Raises:
            ValueError: no model is named, the base URL is not http(s), the timeout
                is not a positive number, ``max_tokens`` is not a positive integer,
                or ``tool_search`` is none of ``"auto"``, ``"bm25"``, ``"regex"``, None.
            AuthError: the API key holds a control character (a trailing newline) or
                a non-ASCII character, which no header can carry (the key is not shown).
        """
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise ValueError(f"max_tokens must be a positive integer, got {max_tokens!r}")
        if tool_search not in ("auto", "bm25", "regex", None):
            raise ValueError(
                f"tool_search must be 'auto', 'bm25', 'regex' or None, got {tool_search!r}"
            )
        super().__init__(
            model,
            base_url=base_url,
            default_base_url=DEFAULT_BASE_URL,
            endpoint="/v1/messages",
            api_key=api_key,
            http_client=http_client,
            timeout=timeout,
            headers=_with_version(headers or {}),
        )
        self._max_tokens = max_tokens
        self._tool_search: ToolSearch | None = tool_search
        self._searched: _Searched | None = None
        """The last tools sent with a tool search: the same catalogue (the same tool
        objects) is not translated again at every step (a catalogue of a thousand
        operations is a noticeable wait: benchmarks/tool_search.py)."""

    def _auth_headers(self) -> dict[str, str]:
        if self._api_key is None:
            return {}
        return {"x-api-key": str(self._api_key)}

    async def _prepare(self, request: LlmRequest) -> None:
        # A catalogue not translated yet is, in a worker thread: a thousand operations
        # would hold the event loop up.
        searched = self._searching(request)
        if searched is not None and not self._cached(*searched):
            variant, offered, deferred = searched
            self._searched = await anyio.to_thread.run_sync(
                _translate_searched, request, variant, offered, deferred
            )

    def _searching(
        self, request: LlmRequest
    ) -> tuple[Literal["bm25", "regex"], tuple[ToolDeclaration, ...], tuple[Tool, ...]] | None:
        """The search variant, the tools offered as they are and the deferred ones, of a
        request sent with Anthropic's tool search (None: sent without)."""
        variant = self._search_variant(request)
        if variant is None or not request.deferred:
            return None
        return variant, *searched_tools(request)

    def _cached(
        self,
        variant: Literal["bm25", "regex"],
        offered: tuple[ToolDeclaration, ...],
        deferred: tuple[Tool, ...],
    ) -> bool:
        cached = self._searched
        return (
            cached is not None
            and cached.variant == variant
            and cached.offered == offered
            and same_tools(cached.deferred, deferred)
        )

    def _translate(self, request: LlmRequest) -> tuple[dict[str, Any], ToolCallMap]:
        searched = self._searching(request)
        if searched is None:
            tools, calls = to_anthropic_tools(request.declarations.values())
            return self._body(request, tools, calls, searching=None), calls
        variant, offered, deferred = searched
        if self._cached(variant, offered, deferred):
            assert self._searched is not None
            translated = self._searched
        else:
            translated = _translate_searched(request, variant, offered, deferred)
            self._searched = translated
        if len(translated.tools) == len(offered) + 1:  # no deferred tool can be offered
            tools, calls = to_anthropic_tools(request.declarations.values())
            return self._body(request, tools, calls, searching=None), calls
        return self._body(
            request, list(translated.tools), translated.calls, searching=translated.sent
        ), translated.calls

    def _search_variant(self, request: LlmRequest) -> Literal["bm25", "regex"] | None:
        """The tool search to send with this request's deferred tools, if any."""
        if self._tool_search == "auto":
            return "bm25" if supports_tool_search(request.model or self._model) else None
        return self._tool_search

    def _stream_state(self, names: ToolCallMap) -> _StreamState:
        return _StreamState(calls=names)

    def _tool_choice(self, value: Any, calls: ToolCallMap) -> Any:
        # A forced tool is named by its declaration; the API knows it by its provider name.
        if isinstance(value, Mapping) and value.get("type") == "tool" and "name" in value:
            return {**value, "name": calls.to_provider(str(value["name"]))}
        return value

    def _stream_error(self, event: dict[str, Any]) -> bool:
        return event.get("type") == "error"

    # -- request ---------------------------------------------------------------------

    def _body(
        self,
        request: LlmRequest,
        tools: list[dict[str, Any]],
        calls: ToolCallMap,
        *,
        searching: frozenset[str] | None,
    ) -> dict[str, Any]:
        system, messages = _messages(request, calls, searching)
        body: dict[str, Any] = {
            "model": request.model or self._model,
            "max_tokens": self._max_tokens,
            "messages": messages,
        }
        if system:
            body["system"] = system
        return self._configured(body, tools, request, calls)

    # -- response --------------------------------------------------------------------

    def _parse(self, content: bytes, calls: ToolCallMap) -> LlmResponse:
        payload = self._payload(content)
        if isinstance(payload, LlmResponse):
            return payload
        blocks = payload.get("content")
        if not isinstance(blocks, list):
            return invalid_response("the body has no content")
        parts = [p for b in blocks if isinstance(b, Mapping) for p in _part(b, calls)]
        return LlmResponse(
            content=Content(role="model", parts=tuple(parts)),
            finish_reason=_stop_reason(payload.get("stop_reason")),
            usage=_usage(payload.get("usage")),
            model_version=str_or_none(payload.get("model")),
        )


def supports_tool_search(model: str) -> bool:
    """Whether ``model`` is one of `TOOL_SEARCH_MODELS` (a dated snapshot, a later point
    release or a cloud platform's id of one)."""
    at = model.find("claude-")
    if at < 0:
        return False
    name = model[at:]
    for prefix in TOOL_SEARCH_MODELS:
        if name.startswith(prefix):
            rest = name[len(prefix) :]
            if prefix.endswith("-") or not rest or rest[0] in "-@:":
                return True
    return False


@dataclass(frozen=True)
class _Searched:
    """The tools of a request with a tool search, as translated."""

    variant: str
    offered: tuple[ToolDeclaration, ...]
    """The declarations sent as they are (equal ones make the same tools)."""
    deferred: tuple[Tool, ...]
    """The deferred tools (the same objects make the same tools: a tool's declaration
    does not change, and `searchable` wraps a loaded tool in another object)."""
    tools: tuple[dict[str, Any], ...]
    """What goes in ``tools``: the search tool first."""
    calls: ToolCallMap
    sent: frozenset[str]
    """The names the tools are sent under."""


def _translate_searched(
    request: LlmRequest,
    variant: Literal["bm25", "regex"],
    offered: tuple[ToolDeclaration, ...],
    deferred: tuple[Tool, ...],
) -> _Searched:
    """The tools of ``request`` with Anthropic's tool search ``variant``: the search
    tool, ``offered`` as they are, and the deferred tools with ``defer_loading`` (a
    declared one under its declaration, another under its call declaration; one that
    has none left out).

    Raises:
        ToolDefinitionError: a tool has the search tool's name.
    """
    declarations = deferred_declarations(request, deferred)
    tools, calls = to_anthropic_tools([*offered, *declarations])
    for entry in tools[len(offered) :]:
        entry["defer_loading"] = True
    search = {"type": f"tool_search_tool_{variant}_{_SEARCH_VERSION}"}
    search["name"] = f"tool_search_tool_{variant}"
    if any(entry["name"] == search["name"] for entry in tools):
        raise ToolDefinitionError(
            f"a tool is named {search['name']!r}, the name of Anthropic's tool search "
            "tool; rename it, or pass tool_search=None",
            tool_name=calls.from_provider(search["name"]),
        )
    return _Searched(
        variant=variant,
        offered=offered,
        deferred=deferred,
        tools=(search, *tools),
        calls=calls,
        sent=frozenset(entry["name"] for entry in tools),
    )


def _with_version(headers: Mapping[str, str]) -> dict[str, str]:
    # The caller's own anthropic-version (in whatever case) wins over ours.
    if any(name.lower() == "anthropic-version" for name in headers):
        return dict(headers)
    return {"anthropic-version": ANTHROPIC_VERSION, **headers}


# -- the conversation, in Messages API messages ------------------------------------------


def _messages(
    request: LlmRequest, calls: ToolCallMap, searching: frozenset[str] | None
) -> tuple[str, list[dict[str, Any]]]:
    """The system text and the messages: user and assistant taking turns (consecutive
    turns of one role are joined, tool results first, as the API requires). The blocks
    of an earlier tool search on Anthropic's side go back when this request searches
    too (``searching``: the names of the tools it sends), else they are left out."""
    system = [request.system_instruction] if request.system_instruction else []
    messages: list[dict[str, Any]] = []
    ids = CallIds(prefix="toolu_")
    for content in request.contents:
        if content.role == "model":
            role, blocks = "assistant", _assistant_blocks(content.parts, calls, ids, searching)
            if not blocks:
                continue
            _append(messages, role, blocks)
            continue
        parts = [p for p in content.parts if not p.thought]
        if content.role == "system":
            system.append("".join(p.text or "" for p in parts))
            continue
        else:
            role, blocks = "user", _user_blocks(parts, ids)
        if blocks:
            _append(messages, role, blocks)
    return "\n\n".join(s for s in system if s), messages


def _append(messages: list[dict[str, Any]], role: str, blocks: list[dict[str, Any]]) -> None:
    if messages and messages[-1]["role"] == role:
        joined = messages[-1]["content"] + blocks
        # tool_result blocks lead a user message.
        joined.sort(key=lambda b: b["type"] != "tool_result")
        messages[-1]["content"] = joined
    else:
        messages.append({"role": role, "content": blocks})


def _assistant_blocks(
    parts: Sequence[Part], calls: ToolCallMap, ids: CallIds, searching: frozenset[str] | None
) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for part in parts:
        kept = _search_block(part)
        if kept is not None:
            if searching is not None:
                blocks.append(_resent(kept, searching))
            continue
        if part.thought:
            continue
        if part.text:  # the API refuses empty text blocks
            blocks.append({"type": "text", "text": part.text})
        elif part.function_call is not None:
            call = part.function_call
            blocks.append(
                {
                    "type": "tool_use",
                    "id": ids.for_call(call),
                    "name": calls.to_provider(call.name),
                    "input": dict(call.args),
                }
            )
    return blocks


def _search_block(part: Part) -> Mapping[str, Any] | None:
    """The tool search block a part keeps, if it keeps one."""
    data = (part.provider_data or {}).get(_PROVIDER)
    block = data.get("block") if data is not None else None
    if isinstance(block, Mapping) and block.get("type") in _SEARCH_BLOCKS:
        return block
    return None


def _resent(block: Mapping[str, Any], sent: frozenset[str]) -> dict[str, Any]:
    """A tool search block as it came, but for references to tools this request does
    not send (the catalogue changed since): the API refuses a reference to a tool it
    was not given."""
    out = dict(block)
    content = block.get("content")
    if block.get("type") == "tool_search_tool_result" and isinstance(content, Mapping):
        references = content.get("tool_references")
        if isinstance(references, list):
            kept = [
                r for r in references if not isinstance(r, Mapping) or r.get("tool_name") in sent
            ]
            if len(kept) != len(references):
                out["content"] = {**content, "tool_references": kept}
    return out


def _user_blocks(parts: list[Part], ids: CallIds) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = []
    rest: list[dict[str, Any]] = []
    for part in parts:
        if part.function_response is not None:
            answer = part.function_response
            result = answer.response
            block: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": ids.for_response(answer.name, answer.id),
            }
            # A text result goes as it is (the API refuses an empty one: it is left
            # out); any other value as JSON.
            if not isinstance(result, str):
                block["content"] = json.dumps(result, ensure_ascii=False)
            elif result:
                block["content"] = result
            if is_error_result(result):
                block["is_error"] = True
            results.append(block)
        elif part.text:
            rest.append({"type": "text", "text": part.text})
        elif part.inline_data is not None:
            rest.append(_inline_block(part.inline_data.mime_type, part.inline_data.data))
        elif part.file_data is not None:
            file = part.file_data
            mime = (file.mime_type or "").lower()
            if mime.startswith("image/"):
                rest.append({"type": "image", "source": {"type": "url", "url": file.uri}})
            elif mime == "application/pdf":
                rest.append({"type": "document", "source": {"type": "url", "url": file.uri}})
            else:
                rest.append({"type": "text", "text": f"[file: {file.uri}]"})
    return results + rest


def _inline_block(mime_type: str, data: bytes) -> dict[str, Any]:
    mime = mime_type.lower()
    if mime in _IMAGE_TYPES:
        encoded = base64.b64encode(data).decode("ascii")
        return {"type": "image", "source": {"type": "base64", "media_type": mime, "data": encoded}}
    if mime == "application/pdf":
        encoded = base64.b64encode(data).decode("ascii")
        source = {"type": "base64", "media_type": mime, "data": encoded}
        return {"type": "document", "source": source}
    if mime.startswith("text/"):
        text = data.decode("utf-8", "replace")
        return {
            "type": "document",
            "source": {"type": "text", "media_type": "text/plain", "data": text},
        }
    raise ValueError(
        f"the Messages API takes images ({', '.join(sorted(_IMAGE_TYPES))}), PDFs and text "
        f"documents inline, not {mime_type!r}"
    )


# -- content blocks and stream events ----------------------------------------------------


def _part(block: Mapping[str, Any], calls: ToolCallMap) -> list[Part]:
    kind = block.get("type")
    if kind == "text" and isinstance(block.get("text"), str) and block["text"]:
        return [Part(text=block["text"])]
    if kind == "thinking" and isinstance(block.get("thinking"), str) and block["thinking"]:
        return [Part(text=block["thinking"], thought=True)]
    if kind == "tool_use":
        return [Part(function_call=_call(block.get("name"), block.get("input"), block, calls))]
    if _is_search_block(block):
        return [_search_part(block, calls)]
    return []  # redacted thinking, other server tools' blocks: nothing the loop acts on


def _is_search_block(block: Mapping[str, Any]) -> bool:
    kind = block.get("type")
    if kind == "server_tool_use":
        return str(block.get("name", "")).startswith("tool_search_tool_")
    return kind == "tool_search_tool_result"


def _search_part(block: Mapping[str, Any], calls: ToolCallMap) -> Part:
    """A tool search block as a thought part: a line saying what was searched or found
    (by the tools' own names), and the block as it came, to be sent back."""
    raw = json.loads(json.dumps(block))  # a JSON value of its own, whatever it holds
    if block.get("type") == "server_tool_use":
        query = block.get("input")
        text = f"Searching the tools: {json.dumps(query, ensure_ascii=False)}"
    else:
        content = block.get("content")
        content = content if isinstance(content, Mapping) else {}
        references = content.get("tool_references")
        if isinstance(references, list):
            names = [
                calls.from_provider(str(r.get("tool_name")))
                for r in references
                if isinstance(r, Mapping)
            ]
            text = f"Found tools: {', '.join(names) or 'none'}"
        else:
            text = f"The tool search failed: {content.get('error_code', 'unknown error')}"
    return Part(text=text, thought=True, provider_data={_PROVIDER: {"block": raw}})


def _call(name: Any, raw: Any, block: Mapping[str, Any], calls: ToolCallMap) -> FunctionCall:
    args = arguments(raw)
    wire = str(name or "")
    if INVALID_JSON_KEY in args:
        own = calls.from_provider(wire)
    else:
        own, args = calls.restore(wire, args)
    call_id = block.get("id")
    return FunctionCall(name=own, args=args, id=call_id if isinstance(call_id, str) else None)


@dataclass
class _Block:
    """One content block as its deltas arrive."""

    kind: str
    pieces: list[str] = field(default_factory=list)
    start: Mapping[str, Any] = field(default_factory=dict)


@dataclass
class _StreamState:
    """What the events of one stream add up to."""

    calls: ToolCallMap
    blocks: dict[int, _Block] = field(default_factory=dict)
    finish_reason: FinishReason | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    counted: bool = False
    model_version: str | None = None

    def add(self, event: dict[str, Any]) -> list[LlmResponse]:
        """Take one event in; return the partial responses it makes (text deltas)."""
        kind = event.get("type")
        index = event.get("index")
        if kind == "message_start" and isinstance(event.get("message"), Mapping):
            message = event["message"]
            self.model_version = str_or_none(message.get("model"))
            self._count(message.get("usage"))
        elif kind == "content_block_start" and isinstance(index, int):
            start = event.get("content_block")
            start = start if isinstance(start, Mapping) else {}
            block = self.blocks[index] = _Block(kind=str(start.get("type")), start=start)
            first = start.get("text") or start.get("thinking")
            if isinstance(first, str) and first:
                block.pieces.append(first)
                return [self._partial(first, thought=block.kind == "thinking")]
        elif kind == "content_block_delta" and isinstance(index, int) and index in self.blocks:
            return self._delta(self.blocks[index], event.get("delta"))
        elif kind == "message_delta":
            delta = event.get("delta")
            if isinstance(delta, Mapping) and delta.get("stop_reason") is not None:
                self.finish_reason = _stop_reason(delta["stop_reason"])
            self._count(event.get("usage"))
        return []  # ping, content_block_stop, message_stop, and events not known here

    def _delta(self, block: _Block, delta: Any) -> list[LlmResponse]:
        if not isinstance(delta, Mapping):
            return []
        kind = delta.get("type")
        for name, key, thought in (
            ("text_delta", "text", False),
            ("thinking_delta", "thinking", True),
        ):
            if kind == name and isinstance(delta.get(key), str) and delta[key]:
                block.pieces.append(delta[key])
                return [self._partial(delta[key], thought=thought)]
        if kind == "input_json_delta" and isinstance(delta.get("partial_json"), str):
            block.pieces.append(delta["partial_json"])
        return []

    def _count(self, usage: Any) -> None:
        # message_start counts the input; message_delta's counts are running totals.
        if not isinstance(usage, Mapping):
            return
        read = _usage(usage)
        if read is None:
            return
        self.counted = True
        self.input_tokens = max(read.input_tokens, self.input_tokens)
        self.output_tokens = max(read.output_tokens, self.output_tokens)

    def _partial(self, text: str, *, thought: bool) -> LlmResponse:
        return LlmResponse(
            content=Content(role="model", parts=(Part(text=text, thought=thought),)),
            partial=True,
            model_version=self.model_version,
        )

    def final(self) -> LlmResponse:
        calls = self.calls
        parts: list[Part] = []
        for index in sorted(self.blocks):
            block = self.blocks[index]
            text = "".join(block.pieces)
            if block.kind == "text" and text:
                parts.append(Part(text=text))
            elif block.kind == "thinking" and text:
                parts.append(Part(text=text, thought=True))
            elif block.kind == "tool_use":
                # The input arrives as JSON text in pieces; a block without any has the
                # (empty) input its start gave.
                raw = text if block.pieces else block.start.get("input")
                name = block.start.get("name")
                parts.append(Part(function_call=_call(name, raw, block.start, calls)))
            elif _is_search_block(block.start):
                whole = dict(block.start)
                if block.pieces:  # a server_tool_use's input, as a tool_use's
                    whole["input"] = arguments(text)
                parts.append(_search_part(whole, calls))
        usage = Usage(input_tokens=self.input_tokens, output_tokens=self.output_tokens)
        return LlmResponse(
            content=Content(role="model", parts=tuple(parts)),
            finish_reason=self.finish_reason,
            usage=usage if self.counted else None,
            model_version=self.model_version,
        )


# -- small parsers -------------------------------------------------------------------


def _stop_reason(value: Any) -> FinishReason | None:
    if value is None:
        return None
    return _STOP_REASONS.get(str(value), "other")


def _usage(value: Any) -> Usage | None:
    if not isinstance(value, Mapping):
        return None
    # Tokens read from or written to the prompt cache are in the request too.
    keys = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    counts = [value.get(k) for k in keys]
    output = value.get("output_tokens")
    return Usage(
        input_tokens=sum(c for c in counts if isinstance(c, int)),
        output_tokens=output if isinstance(output, int) else 0,
    )
