"""A provider's API replayed on 127.0.0.1 from response fixtures written from its
documentation, judged by the provider's own SDK: every request it is sent and every
answer and event it gives is validated against the SDK's types, and what the API
would refuse (by its documented rules) is refused with a 400, as the API would.

Each test talks to it under its own ``x-test`` header, which selects its script and the
bodies recorded for it (`Wire`)."""

from __future__ import annotations

import copy
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from pydantic import TypeAdapter
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.models.scenarios import serve, sse_response

Answer = dict[str, Any] | Callable[[dict[str, Any]], dict[str, Any]]
"""A scripted answer, or a function of the request's body that makes one."""


@dataclass
class ReplayedApi:
    """One endpoint of a provider's API, replaying each test's scripted answers."""

    request: TypeAdapter[Any]
    """The SDK's type of a request body that does not stream."""
    stream_request: TypeAdapter[Any]
    """The SDK's type of a request body that streams."""
    answer: TypeAdapter[Any]
    """The SDK's type of an answer."""
    event: TypeAdapter[Any]
    """The SDK's type of a stream event."""
    refused: Callable[[dict[str, Any]], str | None]
    """Why the API would refuse a body, if it would."""
    error: Callable[[str], dict[str, Any]]
    """The provider's body of a 400 with this message."""
    events: Callable[[dict[str, Any]], list[dict[str, Any]]]
    """An answer as the stream of events the API sends."""
    scripts: dict[str, deque[Answer]] = field(default_factory=dict)
    bodies: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    async def handle(self, request: Request) -> Response:
        body = await request.json()
        test = request.headers["x-test"]
        self.bodies.setdefault(test, []).append(body)
        (self.stream_request if body.get("stream") else self.request).validate_python(body)
        problem = self.refused(body)
        if problem is not None:
            return JSONResponse(self.error(problem), status_code=400)
        scripted = self.scripts[test].popleft()
        answer = scripted(body) if callable(scripted) else scripted
        self.answer.validate_python(answer)
        if not body.get("stream"):
            return JSONResponse(answer)
        events = self.events(answer)
        for event in events:
            self.event.validate_python(event)
        return sse_response([(e["type"], e) for e in events])


@contextmanager
def replayed(api: ReplayedApi, path: str) -> Iterator[str]:
    """Serve ``api`` at ``path``; gives the server's root URL."""
    with serve(Starlette(routes=[Route(path, api.handle, methods=["POST"])])) as root:
        yield root


@dataclass
class Wire:
    """One test's view of the replayed API, and its model."""

    api: ReplayedApi
    test: str
    make: Callable[..., Any]
    """The model under test, given the model's name, ``headers`` and options."""
    default: str
    """The model's name unless a test names another."""

    def script(self, *answers: Answer) -> None:
        self.api.scripts[self.test] = deque(a if callable(a) else copy.deepcopy(a) for a in answers)

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return self.api.bodies.get(self.test, [])

    def model(self, model: str | None = None, **options: Any) -> Any:
        return self.make(model or self.default, headers={"x-test": self.test}, **options)
