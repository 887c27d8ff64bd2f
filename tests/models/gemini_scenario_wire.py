"""The Gemini wire fake for the model-agnostic scenario suite (`tests.models.scenarios`,
from the anthropic branch): add ``GeminiWire()`` to its ``WIRES`` once both are merged.

It renders the suite's neutral turns with the same shapes as `tests.models.gemini_wire`
(`response_body`, `stream_chunks`), and reads what `GeminiModel` sent into the suite's
`Seen`. Gemini names the model and the streaming in the path
(``/gemini/v1beta/models/{model}:streamGenerateContent?alt=sse``); its calls carry the
ids the suite gives them (current Gemini models send ids), so results pair by id.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Mapping
from typing import Any

from starlette.requests import Request

from tests.models.gemini_wire import Turn as GeminiTurn
from tests.models.gemini_wire import response_body, stream_chunks
from tests.models.scenarios import (  # type: ignore[import-not-found, unused-ignore]
    Fail,
    Result,
    Seen,
    Turn,
    WireFake,
)
from toolsets.models import GeminiModel

_FINISH = {"stop": "STOP", "tool_calls": "STOP", "length": "MAX_TOKENS", "content_filter": "SAFETY"}
_STATUS = {
    "rate_limit": "RESOURCE_EXHAUSTED",
    "overloaded": "UNAVAILABLE",
    "server": "INTERNAL",
    "unauthorized": "UNAUTHENTICATED",
}


def _offered(body: dict[str, Any]) -> list[str]:
    return [
        d["name"] for tool in body.get("tools", []) for d in tool.get("functionDeclarations", [])
    ]


class GeminiWire(WireFake):  # type: ignore[misc, unused-ignore]
    """generateContent: ``POST /gemini/v1beta/models/{model}:generateContent``."""

    name = "gemini"
    prefix = "/gemini/v1beta"
    endpoint = "/models/{target}"
    model_class = GeminiModel
    stream_error_code = "stream_error"

    def model_name(self, request: Request, body: dict[str, Any]) -> str:
        return str(request.path_params["target"]).partition(":")[0]

    def is_stream(self, request: Request, body: dict[str, Any]) -> bool:
        return str(request.path_params["target"]).endswith(":streamGenerateContent")

    def _turn(self, turn: Turn, body: dict[str, Any]) -> GeminiTurn:
        offered = _offered(body)
        calls = []
        for call in turn.calls:
            # The name the tool was offered under: Gemini's rule keeps ``.`` and ``:``.
            wire = next((n for n in offered if _same(n, call.tool)), call.tool)
            calls.append((wire, dict(call.args)))
        return GeminiTurn(
            text=turn.text,
            calls=calls,
            call_ids=[c.id for c in turn.calls],
            finish=_FINISH[turn.stop_reason],
            usage={
                "promptTokenCount": turn.usage[0],
                "candidatesTokenCount": turn.usage[1],
                "totalTokenCount": sum(turn.usage),
            },
        )

    def render(self, turn: Turn, body: dict[str, Any]) -> dict[str, Any]:
        return response_body(self._turn(turn, body))

    def render_stream(self, turn: Turn, body: dict[str, Any]) -> list[tuple[str | None, Any]]:
        return [(None, chunk) for chunk in stream_chunks(self._turn(turn, body))]

    def render_error(self, fail: Fail) -> dict[str, Any]:
        status = self.statuses[fail.kind]
        error: dict[str, Any] = {
            "code": status,
            "message": fail.message,
            "status": _STATUS[fail.kind],
        }
        if fail.retry_after is not None:
            error["details"] = [
                {
                    "@type": "type.googleapis.com/google.rpc.RetryInfo",
                    "retryDelay": f"{fail.retry_after}s",
                }
            ]
        return {"error": error}

    def render_stream_failure(self, fail: Fail) -> list[tuple[str | None, Any]]:
        first = {"candidates": [{"content": {"role": "model", "parts": [{"text": "Hel"}]}}]}
        error = {"error": {"code": 500, "message": fail.message, "status": "INTERNAL"}}
        return [(None, first), (None, error)]

    def read(self, body: dict[str, Any], headers: Mapping[str, str]) -> Seen:
        calls: list[tuple[str, dict[str, Any], str]] = []
        results: list[Result] = []
        images: list[bytes] = []
        texts: list[str] = []
        for content in body["contents"]:
            for part in content["parts"]:
                if "functionCall" in part:
                    call = part["functionCall"]
                    calls.append((call["name"], call.get("args", {}), call.get("id", "")))
                elif "functionResponse" in part:
                    answer = part["functionResponse"]
                    response = answer["response"]
                    if set(response) == {"result"} and isinstance(response["result"], str):
                        text = response["result"]
                    else:
                        shown = response["result"] if set(response) == {"result"} else response
                        text = json.dumps(shown)
                    results.append(Result(answer.get("id", ""), text, None))
                elif "inlineData" in part:
                    images.append(base64.b64decode(part["inlineData"]["data"]))
                elif "text" in part and content["role"] == "user":
                    texts.append(part["text"])
        system = body.get("systemInstruction")
        return Seen(
            system="".join(p["text"] for p in system["parts"]) if system else None,
            tools=_offered(body),
            calls=calls,
            results=results,
            images=images,
            user_texts=texts,
            key=headers.get("x-goog-api-key"),
        )


def _same(wire: str, own: str) -> bool:
    """Whether ``wire`` is Gemini's legal form of the tool name ``own``."""
    return wire == re.sub(r"[^A-Za-z0-9_.:-]", "_", own)[:64]
