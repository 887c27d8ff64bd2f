"""The routing headers of protocol 2026-07-28 (``Mcp-Method``, ``Mcp-Name``), which a
gateway or load balancer routes on: `McpToolset` sends them with each request (through
the SDK), and a served call whose headers are malformed or disagree with its body is
refused with a 400 naming the header, and nothing runs."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.helpers import serve_app
from tests.mcp.server.test_http import modern_call, post
from toolsets import ToolContext, tool
from toolsets._ids import new_id
from toolsets.mcp import McpServer, McpToolset, StreamableHttp

pytestmark = pytest.mark.anyio


class Recorded:
    """What the served app saw: the notes the tool took, and each POST's routing headers."""

    def __init__(self) -> None:
        self.notes: list[str] = []
        self.headers: list[dict[str, str]] = []
        self.url = ""

    def app(self) -> Any:
        @tool
        def note(text: str) -> str:
            """Take a note.

            Args:
                text: The note.
            """
            self.notes.append(text)
            return f"noted {text}"

        inner = McpServer([note]).http_app(stateless=True)

        async def recording(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] == "http" and scope["method"] == "POST":
                raw = dict(scope["headers"])
                self.headers.append(
                    {
                        name: raw[name.encode()].decode("latin-1")
                        for name in ("mcp-method", "mcp-name", "mcp-protocol-version")
                        if name.encode() in raw
                    }
                )
            await inner(scope, receive, send)

        return recording


@pytest.fixture(scope="module")
def served() -> Iterator[Recorded]:
    recorded = Recorded()
    with serve_app(recorded.app, factory=True) as port:
        recorded.url = f"http://127.0.0.1:{port}/mcp"
        yield recorded


async def test_mcp_toolset_sends_the_method_and_name_with_each_2026_request(
    served: Recorded,
) -> None:
    text = new_id()
    before = len(served.headers)
    async with McpToolset(StreamableHttp(url=served.url), mode="2026-07-28") as upstream:
        note = await upstream.get_tool("note")
        assert await note.run({"text": text}, ToolContext()) == f"noted {text}"
    sent = served.headers[before:]
    assert {"mcp-method": "tools/list", "mcp-protocol-version": "2026-07-28"} in sent
    call = {"mcp-method": "tools/call", "mcp-name": "note", "mcp-protocol-version": "2026-07-28"}
    assert call in sent


@pytest.mark.parametrize(
    ("changed", "header"),
    [
        ({"Mcp-Method": "tools/list"}, "mcp-method"),  # disagrees with the body
        ({"Mcp-Method": "tools call"}, "mcp-method"),  # malformed
        ({"Mcp-Method": ""}, "mcp-method"),
        ({"Mcp-Name": "other"}, "mcp-name"),
        ({"Mcp-Name": "=?base64?bm90ZQ"}, "mcp-name"),  # malformed encoding
        ({"Mcp-Name": "=?base64?b3RoZXI=?="}, "mcp-name"),  # well encoded, another name
    ],
)
async def test_a_call_whose_routing_headers_disagree_with_its_body_gets_400_and_runs_nothing(
    served: Recorded, changed: dict[str, str], header: str
) -> None:
    text = new_id()
    body, headers = modern_call("note", {"text": text})
    status, answer = await post(served.url, body, {**headers, **changed})
    assert status == 400
    assert answer["error"]["code"] == -32020  # header mismatch
    assert header in answer["error"]["message"].lower()
    assert text not in served.notes


async def test_a_call_without_its_routing_headers_gets_400_and_runs_nothing(
    served: Recorded,
) -> None:
    text = new_id()
    body, headers = modern_call("note", {"text": text})
    for left_out in ("Mcp-Method", "Mcp-Name"):
        kept = {name: value for name, value in headers.items() if name != left_out}
        status, answer = await post(served.url, body, kept)
        assert status == 400, left_out
        assert left_out.lower() in answer["error"]["message"].lower()
    assert text not in served.notes


async def test_the_same_call_with_agreeing_headers_runs(served: Recorded) -> None:
    text = new_id()
    body, headers = modern_call("note", {"text": text})
    status, answer = await post(served.url, body, headers)
    assert status == 200
    assert answer["result"]["content"] == [{"type": "text", "text": f"noted {text}"}]
    assert served.notes.count(text) == 1
