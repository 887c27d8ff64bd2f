"""What every adapter's tests share: a real REST API on 127.0.0.1 with its OpenAPI spec,
the fixture MCP server, and a toolset of both plus a confirmation-gated function.

The REST API runs in a thread of its own (the standard library's HTTP server), so it
answers whatever event loop, thread or sync framework calls it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.mcp.helpers import stdio_toolset
from toolsets import StaticToolset, Toolset, combined, tool
from toolsets.mcp import McpToolset
from toolsets.openapi import OpenApiToolset

NOTES_SPEC: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {"title": "Notes", "version": "1"},
    "paths": {
        "/notes": {
            "get": {
                "operationId": "list_notes",
                "summary": "List the notes",
                "parameters": [
                    {
                        "name": "limit",
                        "in": "query",
                        "schema": {"type": "integer", "minimum": 1, "maximum": 100},
                    }
                ],
                "responses": {"200": {"description": "the notes"}},
            },
            "post": {
                "operationId": "create_note",
                "summary": "Create a note",
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "required": ["title"],
                                "properties": {
                                    "title": {"type": "string", "minLength": 1},
                                    "body": {"type": "string"},
                                },
                                "additionalProperties": False,
                            }
                        }
                    },
                },
                "responses": {"201": {"description": "created"}},
            },
        },
        "/notes/{note_id}": {
            "parameters": [
                {"name": "note_id", "in": "path", "required": True, "schema": {"type": "integer"}}
            ],
            "get": {
                "operationId": "get_note",
                "summary": "Read one note",
                "responses": {"200": {"description": "the note"}, "404": {"description": "no"}},
            },
            "delete": {
                "operationId": "delete_note",
                "summary": "Delete a note for good",
                "responses": {"204": {"description": "deleted"}},
            },
        },
    },
}
"""A small notes API: ``list_notes``, ``create_note``, ``get_note`` and ``delete_note``
(a DELETE, so `OpenApiToolset` asks for confirmation before it runs)."""


@dataclass
class NotesApi:
    """The notes API's state, and every request it received (``"GET /notes/1"``) with
    its ``Authorization`` header."""

    url: str = ""
    notes: dict[int, dict[str, Any]] = field(default_factory=dict)
    requests: list[str] = field(default_factory=list)
    authorizations: list[str | None] = field(default_factory=list)
    """The ``Authorization`` header of each request (None: it had none)."""
    lock: threading.Lock = field(default_factory=threading.Lock)


def _handler(api: NotesApi) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def _send(self, status: int, body: object = None) -> None:
            payload = b"" if body is None else json.dumps(body).encode()
            self.send_response(status)
            if body is not None:
                self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def _note_id(self) -> int | None:
            parts = self.path.split("?")[0].strip("/").split("/")
            if len(parts) == 2 and parts[0] == "notes" and parts[1].isdigit():
                return int(parts[1])
            return None

        def do_GET(self) -> None:
            with api.lock:
                api.requests.append(f"GET {self.path}")
                api.authorizations.append(self.headers.get("Authorization"))
                if self.path.split("?")[0] == "/notes":
                    self._send(200, list(api.notes.values()))
                    return
                note_id = self._note_id()
                if note_id in api.notes:
                    self._send(200, api.notes[note_id])
                else:
                    self._send(404, {"message": "no such note"})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            with api.lock:
                api.requests.append(f"POST {self.path}")
                api.authorizations.append(self.headers.get("Authorization"))
                note = {"id": len(api.notes) + 1, **body}
                api.notes[note["id"]] = note
                self._send(201, note)

        def do_DELETE(self) -> None:
            with api.lock:
                api.requests.append(f"DELETE {self.path}")
                api.authorizations.append(self.headers.get("Authorization"))
                note_id = self._note_id()
                if note_id in api.notes:
                    del api.notes[note_id]
                    self._send(204)
                else:
                    self._send(404, {"message": "no such note"})

    return Handler


@contextmanager
def notes_api() -> Iterator[NotesApi]:
    """The notes API serving on a free 127.0.0.1 port until the block ends."""
    api = NotesApi()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(api))
    server.daemon_threads = True
    api.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield api
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def notes_toolset(api: NotesApi) -> OpenApiToolset:
    """The notes API's tools (``delete_note`` asks for confirmation)."""
    return OpenApiToolset(NOTES_SPEC, base_url=api.url)


def mcp_toolset() -> McpToolset:
    """The fixture MCP server over stdio (tools ``add``, ``echo``, ``delete_file``...)."""
    return stdio_toolset()


@tool(requires_confirmation=True)
def wipe_disk(disk: str) -> str:
    """Erase every file on a disk.

    Args:
        disk: The disk's name, e.g. ``sda``.
    """
    return f"{disk} wiped"


def everything(api: NotesApi) -> Toolset:
    """The notes API, the fixture MCP server and ``wipe_disk`` (confirmation-gated), as
    one toolset: what each adapter's agent-turn tests hand to the framework."""
    return combined(notes_toolset(api), mcp_toolset(), StaticToolset([wipe_disk]))
