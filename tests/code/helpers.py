"""What the code mode tests share: a small API served on 127.0.0.1, its spec, and running
a program through ``run_code`` the way a caller does (the one call path)."""

from __future__ import annotations

from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from toolsets import JsonValue, ToolContext, Toolset
from toolsets._invoke import Callbacks, Done, invoke

RUN_TIMEOUT = 30.0
"""Seconds a program may take in a test before it counts as hung."""

ITEMS = {
    "1": {"id": "1", "name": "kettle", "price": 30},
    "2": {"id": "2", "name": "mug", "price": 8},
}


async def _list(request: Request) -> JSONResponse:
    limit = int(request.query_params.get("limit", "10"))
    return JSONResponse(list(ITEMS.values())[:limit])


async def _get(request: Request) -> JSONResponse:
    item = ITEMS.get(request.path_params["id"])
    if item is None:
        return JSONResponse({"message": "no such item"}, status_code=404)
    return JSONResponse(item)


async def _delete(request: Request) -> JSONResponse:
    return JSONResponse({"deleted": request.path_params["id"]})


APP = Starlette(
    routes=[
        Route("/items", _list, methods=["GET"]),
        Route("/items/{id}", _get, methods=["GET"]),
        Route("/items/{id}", _delete, methods=["DELETE"]),
    ]
)

_ITEM = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "name": {"type": "string"},
        "price": {"type": "integer"},
    },
    "required": ["id", "name", "price"],
}

SPEC: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {"title": "shop", "version": "1"},
    "paths": {
        "/items": {
            "get": {
                "operationId": "listItems",
                "summary": "List the items for sale.",
                "parameters": [{"name": "limit", "in": "query", "schema": {"type": "integer"}}],
                "responses": {
                    "200": {
                        "description": "the items",
                        "content": {
                            "application/json": {"schema": {"type": "array", "items": _ITEM}}
                        },
                    }
                },
            }
        },
        "/items/{id}": {
            "parameters": [
                {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}
            ],
            "get": {
                "operationId": "getItem",
                "summary": "One item.",
                "responses": {
                    "200": {
                        "description": "the item",
                        "content": {"application/json": {"schema": _ITEM}},
                    }
                },
            },
            "delete": {
                "operationId": "deleteItem",
                "summary": "Delete an item.",
                "responses": {"200": {"description": "deleted"}},
            },
        },
    },
}


async def run_code(
    toolset: Toolset,
    code: str,
    *,
    ctx: ToolContext | None = None,
    callbacks: Callbacks | None = None,
    scopes: frozenset[str] = frozenset(),
) -> JsonValue:
    """What ``run_code`` answers for ``code``, called through the one call path."""
    (tool,) = await toolset.list_tools(ctx)
    assert tool.name == "run_code"
    with anyio.fail_after(RUN_TIMEOUT):
        outcome = await invoke(
            tool,
            {"code": code},
            ctx or ToolContext(function_call_id="call-1"),
            default_timeout=RUN_TIMEOUT,
            callbacks=callbacks or Callbacks(),
            scopes=scopes,
        )
    assert isinstance(outcome, Done)
    return outcome.result
