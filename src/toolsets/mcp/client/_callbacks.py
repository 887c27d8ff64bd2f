"""What the client answers when a server asks: sampling, elicitation, roots; where
the server's log messages go; and the SDK client's options made of them (internal)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, TypeAlias

import mcp.types as mt
from mcp.client.session import ClientRequestContext

from toolsets._client_channel import LOGGING_LEVELS
from toolsets._content import Content, Part
from toolsets._tool import LlmRequest
from toolsets.models import Llm

__all__ = [
    "ElicitationHandler",
    "RootsSource",
    "SamplingHandler",
    "client_kwargs",
    "elicitation_callback",
    "logging_callback",
    "roots_callback",
    "sampling_callback",
    "schema_defaults",
]

SamplingHandler: TypeAlias = Callable[
    [mt.CreateMessageRequestParams], Awaitable["mt.CreateMessageResult | mt.ErrorData"]
]
"""Answers a server's sampling request with a model's message (or an error)."""

ElicitationHandler: TypeAlias = Callable[
    [str, Mapping[str, Any]], Awaitable["Mapping[str, Any] | None"]
]
"""Asks the user: gets the server's message and the requested JSON Schema, returns the
answer (missing fields are filled from the schema's defaults) or None to decline."""

RootsSource: TypeAlias = Sequence["str | Path"] | Callable[[], Awaitable[Sequence["str | Path"]]]
"""The directories the server may work in: paths or file URIs, or a function giving them."""


def _sampling_text(content: Any) -> str:
    blocks = content if isinstance(content, list) else [content]
    return "\n".join(b.text for b in blocks if isinstance(b, mt.TextContent))


def sampling_callback(
    handler: SamplingHandler | Llm,
) -> Callable[[ClientRequestContext, mt.CreateMessageRequestParams], Awaitable[Any]]:
    """The SDK callback for ``handler``: an `Llm` (its answer becomes the message) or a
    function of the request's parameters."""

    async def answer(
        context: ClientRequestContext, params: mt.CreateMessageRequestParams
    ) -> mt.CreateMessageResult | mt.ErrorData:
        if not isinstance(handler, Llm):
            result: mt.CreateMessageResult | mt.ErrorData = await handler(params)
            return result
        contents = [
            Content(
                role="user" if message.role == "user" else "model",
                parts=(Part(text=_sampling_text(message.content)),),
            )
            for message in params.messages
        ]
        config: dict[str, Any] = {"max_tokens": params.max_tokens}
        if params.temperature is not None:
            config["temperature"] = params.temperature
        if params.stop_sequences:
            config["stop"] = list(params.stop_sequences)
        request = LlmRequest(
            contents=contents, system_instruction=params.system_prompt or "", config=config
        )
        final = None
        async for response in handler.generate(request):
            if not response.partial:
                final = response
        if final is None or final.error_code is not None or final.content is None:
            reason = final.error_message if final is not None else "no answer"
            return mt.ErrorData(code=mt.INTERNAL_ERROR, message=f"sampling failed: {reason}")
        return mt.CreateMessageResult(
            role="assistant",
            content=mt.TextContent(type="text", text=final.content.text),
            model=handler.model,
            stop_reason="maxTokens" if final.finish_reason == "length" else "endTurn",
        )

    return answer


def schema_defaults(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The ``default`` of each top-level property of an elicitation schema."""
    properties = schema.get("properties") or {}
    return {
        name: spec["default"]
        for name, spec in properties.items()
        if isinstance(spec, Mapping) and "default" in spec
    }


def elicitation_callback(
    handler: ElicitationHandler | Literal["defaults"],
) -> Callable[[ClientRequestContext, Any], Awaitable[Any]]:
    """The SDK callback for ``handler``; ``"defaults"`` accepts every form with its
    schema's defaults. URL elicitations (a page the user must visit) are declined."""

    async def answer(
        context: ClientRequestContext, params: mt.ElicitRequestParams
    ) -> mt.ElicitResult:
        if not isinstance(params, mt.ElicitRequestFormParams):  # a URL to visit
            return mt.ElicitResult(action="decline")
        schema = params.requested_schema
        defaults = schema_defaults(schema)
        if handler == "defaults":
            return mt.ElicitResult(action="accept", content=defaults)
        given = await handler(params.message, schema)
        if given is None:
            return mt.ElicitResult(action="decline")
        return mt.ElicitResult(action="accept", content={**defaults, **given})

    return answer


def _root(value: str | Path) -> mt.Root:
    if isinstance(value, Path) or "://" not in value:
        path = Path(value).resolve()
        return mt.Root(uri=path.as_uri(), name=path.name or str(path))
    return mt.Root(uri=value, name=value.rsplit("/", 1)[-1] or value)


def roots_callback(source: RootsSource) -> Callable[[ClientRequestContext], Awaitable[Any]]:
    """The SDK callback listing ``source`` as roots."""

    async def answer(context: ClientRequestContext) -> mt.ListRootsResult:
        values = await source() if callable(source) else source
        return mt.ListRootsResult(roots=[_root(v) for v in values])

    return answer


def logging_callback(
    server_logger: logging.Logger, server: str
) -> Callable[[mt.LoggingMessageNotificationParams], Awaitable[None]]:
    """The SDK callback sending the log messages of the MCP server named ``server`` to
    ``server_logger``: each begins with that name (so it is not read as the client's
    own), which the record also carries as ``mcp_server``."""

    async def log(params: mt.LoggingMessageNotificationParams) -> None:
        name = f" [{params.logger}]" if params.logger else ""
        server_logger.log(
            LOGGING_LEVELS.get(params.level, logging.INFO),
            "%s: %s%s",
            server,
            params.data,
            name,
            extra={"mcp_server": server},
        )

    return log


def client_kwargs(
    name: str,
    on_message: Callable[[Any], Awaitable[None]],
    mode: Literal["auto", "legacy", "2026-07-28"],
    log_level: mt.LoggingLevel | None,
    sampling: SamplingHandler | Llm | None,
    elicitation: ElicitationHandler | Literal["defaults"] | None,
    roots: RootsSource | None,
) -> dict[str, Any]:
    """The options of the SDK's client for each session of the toolset ``name``."""
    kwargs: dict[str, Any] = {
        "mode": mode,
        "read_timeout_seconds": None,  # each request gets its own bound instead
        "client_info": mt.Implementation(name="toolsets", version=_version()),
        "message_handler": on_message,
        "logging_callback": logging_callback(logging.getLogger("toolsets.mcp.server"), name),
        "cache": None,  # our own list cache, invalidated by list changes
    }
    if log_level is not None:
        kwargs["log_level"] = log_level
    if sampling is not None:
        kwargs["sampling_callback"] = sampling_callback(sampling)
    if elicitation is not None:
        kwargs["elicitation_callback"] = elicitation_callback(elicitation)
    if roots is not None:
        kwargs["list_roots_callback"] = roots_callback(roots)
    return kwargs


def _version() -> str:
    from toolsets import __version__

    return __version__
