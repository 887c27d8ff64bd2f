"""An agent using a REST API's tools from its OpenAPI spec, offline: a small bookshop API
(fixtures/openapi/bookshop.yaml) is served for real over HTTP on 127.0.0.1, and a scripted
stand-in for a model decides the calls.

Shows: the spec's operations as tools (one left out with a wrapper), the API key sent as
the spec's security scheme says, two read-only calls run side by side, a DELETE that waits
for the user's approval, and an HTTP 404 handed to the model as a result, not raised.

Run: python examples/agent_openapi.py
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from toolsets import FunctionCall, ToolContext, filtered
from toolsets.agent import ConfirmationRequest, Event, LlmAgent, LlmRequest, Runner
from toolsets.models import ScriptedModel, Step
from toolsets.openapi import OpenApiToolset, select_operations

SPEC = Path(__file__).resolve().parent.parent / "fixtures" / "openapi" / "bookshop.yaml"
SHOP_KEY = "shop-key-123"


# --- the bookshop: a real HTTP server implementing the spec -------------------------------


def bookshop(log: list[str]) -> Starlette:
    """The API of bookshop.yaml, in memory; every request it answers goes into ``log``."""
    books: dict[str, dict[str, Any]] = {
        "9780141439587": {"title": "Emma", "author": "Jane Austen", "price": 7.5, "year": 1815},
        "9780141439686": {"title": "Persuasion", "author": "Jane Austen", "price": 6.99},
        "9780141439518": {"title": "Pride and Prejudice", "author": "Jane Austen", "price": 12},
        "9780141439600": {"title": "Middlemarch", "author": "George Eliot", "price": 9.99},
    }
    copies = {"9780141439587": 3, "9780141439686": 0, "9780141439518": 5}

    def problem(status: int, title: str) -> Response:
        body = json.dumps({"title": title})
        return Response(body, status, media_type="application/problem+json")

    def book(isbn: str) -> dict[str, Any]:
        return {"isbn": isbn, **books[isbn]}

    async def search(request: Request) -> Response:
        words = request.query_params["q"].lower().split()
        max_price = float(request.query_params.get("max_price", "inf"))
        limit = int(request.query_params.get("limit", "10"))
        found = [
            book(isbn)
            for isbn, b in books.items()
            if all(w in f"{b['title']} {b['author']}".lower() for w in words)
            and b["price"] <= max_price
        ]
        return JSONResponse(sorted(found, key=lambda b: b["price"])[:limit])

    async def add(request: Request) -> Response:
        new = await request.json()
        isbn = new.pop("isbn")
        if isbn in books:
            return problem(409, "that ISBN is in the catalogue already")
        books[isbn] = {**new, "added": datetime.now(UTC).isoformat(timespec="seconds")}
        return JSONResponse(book(isbn), 201)

    async def one(request: Request) -> Response:
        isbn = request.path_params["isbn"]
        if isbn not in books:
            return problem(404, f"no book with ISBN {isbn}")
        if request.method == "DELETE":
            del books[isbn]
            copies.pop(isbn, None)
            return Response(status_code=204)
        return JSONResponse(book(isbn))

    async def stock(request: Request) -> Response:
        isbn = request.path_params["isbn"]
        return JSONResponse({"isbn": isbn, "copies": copies.get(isbn, 0)})

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "up"})

    def keyed(endpoint: Any) -> Any:
        async def checked(request: Request) -> Response:
            if request.headers.get("x-shop-key") != SHOP_KEY:
                response = problem(401, "a valid X-Shop-Key header is needed")
            else:
                response = await endpoint(request)
            target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
            log.append(f"{request.method} {target} → {response.status_code}")
            return response

        return checked

    return Starlette(
        routes=[
            Route("/api/v1/books", keyed(search), methods=["GET"]),
            Route("/api/v1/books", keyed(add), methods=["POST"]),
            Route("/api/v1/books/{isbn}", keyed(one), methods=["GET", "DELETE"]),
            Route("/api/v1/books/{isbn}/stock", keyed(stock), methods=["GET"]),
            Route("/api/v1/health", health, methods=["GET"]),
        ]
    )


@contextlib.contextmanager
def serve(app: Starlette) -> Iterator[str]:
    """``app`` under uvicorn on 127.0.0.1 (a free port) in a thread; yields its URL."""
    # Bound and listening before the thread starts: early clients wait in the backlog.
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    config = uvicorn.Config(
        app, lifespan="off", ws="none", http="h11", log_level="warning", access_log=False
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


# --- the agent -----------------------------------------------------------------------------


def model(request: LlmRequest) -> Step:
    """A stand-in for an LLM: search, check the shelf, take sold-out books out, report."""
    answers: dict[str, list[Any]] = {}
    for content in request.contents:
        for part in content.parts:
            if part.function_response is not None:
                response = part.function_response
                answers.setdefault(response.name, []).append(response.response)
    if "books_search" not in answers:
        return FunctionCall(name="books_search", args={"q": "austen", "max_price": 10})
    found: list[dict[str, Any]] = answers["books_search"][0]
    if "stock_get" not in answers:  # read-only calls of one turn run side by side
        return [FunctionCall(name="stock_get", args={"isbn": book["isbn"]}) for book in found]
    copies = {stock["isbn"]: stock["copies"] for stock in answers["stock_get"]}
    sold_out = [book for book in found if not copies[book["isbn"]]]
    if sold_out and "books_remove" not in answers:
        return [FunctionCall(name="books_remove", args={"isbn": b["isbn"]}) for b in sold_out]
    shelf = ", ".join(
        f"{book['title']} (€{book['price']:.2f}, {copies[book['isbn']]} copies)"
        for book in found
        if copies[book["isbn"]]
    )
    gone = " and ".join(book["title"] for book in sold_out)
    return f"On the shelf: {shelf}. {gone} had sold out; I took it out of the catalogue."


def show(event: Event) -> None:
    for call in event.function_calls:
        print(f"calls {call.name}({json.dumps(dict(call.args))})")
    for response in event.function_responses:
        if not response.will_continue:
            shown = json.dumps(response.response, ensure_ascii=False)
            print(f"  {response.name} → {shown}")
    if event.is_final_response() and event.text:
        print(f"assistant: {event.text}")


async def main() -> None:
    log: list[str] = []
    with serve(bookshop(log)) as url:
        toolset = OpenApiToolset(
            SPEC,
            base_url=f"{url}/api/v1",  # instead of the spec's https://bookshop.example/api/v1
            credentials={"shop_key": SHOP_KEY},  # by security scheme name
            # (by default, DELETE, PUT and PATCH wait for the user's approval)
        )
        async with toolset:
            shop = filtered(toolset, select_operations(tags=["books", "stock"]))
            for tool in await shop.list_tools():
                flags = "read-only" if tool.is_read_only else "writes"
                if tool.requires_confirmation({}):
                    flags += ", asks first"
                print(f"  {tool.name}: {tool.description.splitlines()[0]} ({flags})")

            runner = Runner(LlmAgent("clerk", ScriptedModel(respond=model), tools=[shop]))
            session = await runner.create_session(user_id="ann")
            message = "Which Austen novels under €10 do we have? Drop any that are sold out."
            print(f"ann: {message}")
            pending: list[ConfirmationRequest] = []
            async for event in runner.run(user_id="ann", session_id=session.id, message=message):
                show(event)
                pending = [r for r in event.pending if isinstance(r, ConfirmationRequest)]
            for request in pending:
                print(f"asks ann: {request.hint}  yes")
            answers = {request.function_call_id: True for request in pending}
            async for event in runner.resume(
                user_id="ann", session_id=session.id, confirmations=answers
            ):
                show(event)

            # An API's 4xx is a result the model can read, not an exception.
            get = await toolset.get_tool("books_get")
            gone = await get.run({"isbn": "9780141439686"}, ToolContext())
            print(f"books_get after the DELETE → {json.dumps(gone)}")
    print("the server saw:")
    for line in log:
        print(f"  {line}")


if __name__ == "__main__":
    anyio.run(main)
