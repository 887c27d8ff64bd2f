"""The one exception tree of toolsets.

What the *model* should see (bad arguments, an HTTP 4xx, an MCP ``isError``) is returned
as a result, ``{"error": ...}``; these exceptions are for the *operator*: bugs in a tool
definition, a broken spec, a server that cannot be reached, a service that was never
configured. Each carries the offending thing as an attribute, so callers (and tests)
branch on data, not on message text::

    ToolsetError
    ├── ToolDefinitionError        a tool or toolset is defined wrongly (.tool_name,
    │                              .field)
    ├── ToolNotFoundError          no tool of that name (.name, .available)
    ├── SpecError                  a spec document is broken (.pointer)
    ├── ConnectionError            a tool server cannot be reached (.target); also a
    │                              builtins.ConnectionError
    ├── ToolCallError              a tool call failed for a reason that is not the
    │   │                          model's to fix (.tool_name)
    │   └── ServerStatusError      (toolsets.mcp) an MCP server over HTTP answered 429
    │                              or 5xx (.status, .retry_after)
    ├── AuthError                  a credential could not be obtained, e.g. an OAuth 2
    │   │                          token endpoint refused (.scheme_name, .status_code,
    │   │                          .oauth_error)
    │   └── CredentialRefusedError (toolsets.mcp) an MCP server over HTTP refused the
    │                              session's credential: 401, or 403
    │                              insufficient_scope (.refusal)
    ├── ServiceNotConfiguredError  the context lacks a service a tool asked for (.service)
    ├── MissingClientCapabilityError
    │                              a tool asked its client for what the client cannot
    │                              do, or has no client to ask (.capability)
    ├── SessionNotFoundError       (toolsets.agent) no session of that id (.session_id);
    │                              also a builtins.LookupError
    ├── ScriptExhaustedError       (toolsets.models) a scripted model was called more
    │                              often than its script has steps
    ├── SmolagentsToolError        (toolsets.adapters.smolagents) a tool's error result,
    │                              raised into a smolagents program (.result, .tool_name)
    ├── SourceError                (toolsets.cli) a SOURCE argument names nothing the
    │                              command line can use (.source)
    └── CommandError               (toolsets.cli) what a command refuses to do

The last five are defined in their packages (the core imports none of them); the first
three of those are exported there, the command line's two are its own (the ``toolsets``
command prints them as one line).

Foreign exceptions (mcp, httpx2, openapi-core, pydantic) are translated into this tree at
the one boundary where they are met, with ``raise ... from exc``.

Beside the tree, ``close_names`` finds the "did you mean" names of not-found messages.
"""

from __future__ import annotations

import builtins
import difflib
from collections.abc import Iterable
from typing import Any

from toolsets._results import clip
from toolsets._urls import safe_url

__all__ = [
    "AuthError",
    "ConnectionError",
    "MissingClientCapabilityError",
    "ServiceNotConfiguredError",
    "SpecError",
    "ToolCallError",
    "ToolDefinitionError",
    "ToolNotFoundError",
    "ToolsetError",
    "close_names",
]

_MAX_COMPARED = 200
"""Names longer than this are not compared (difflib's cost grows with the product of
the lengths, and no real name is that long)."""
_MAX_SHOWN = 80
"""Characters of an unknown name quoted in an error's message (the name may be anything)."""
_SHOWN_TO_MODEL = 100
"""Characters of an unknown name quoted back to the model that called it."""
_SUGGESTED_TO_MODEL = 5
"""Close names a model that called an unknown name is offered (it cannot look the rest
up, unlike an operator reading ``available``)."""
_MAX_LISTED = 10
"""Up to this many names offered, a not-found message lists them all (else the closest
few: whoever reads it, a model or an operator, has the whole list elsewhere)."""


def close_names(name: str, names: Iterable[str], limit: int = 3) -> list[str]:
    """The few names most like ``name`` (closest first): for "did you mean" hints (here
    and in invalid-argument results; not part of the tree, so not exported by
    ``toolsets``)."""
    if len(name) > _MAX_COMPARED:
        return []
    return difflib.get_close_matches(name, list(names), n=limit, cutoff=0.6)


class ToolsetError(Exception):
    """Base class of every exception raised by toolsets."""

    def __reduce__(self) -> tuple[Any, ...]:
        # The default pickling calls cls(*self.args), which keyword-only attributes do
        # not survive; errors must cross process boundaries (anyio.to_process) intact.
        return (_rebuild, (type(self), str(self), self.__dict__))


def _rebuild(cls: type[ToolsetError], message: str, state: dict[str, Any]) -> ToolsetError:
    error = cls.__new__(cls)
    Exception.__init__(error, message)
    error.__dict__.update(state)
    return error


class ToolDefinitionError(ToolsetError):
    """A tool or toolset is defined in a way that cannot work.

    Raised when a tool is built (an unsupported parameter, a duplicate name in one
    toolset); or, for what only a call needs, when it is called (an OpenAPI tool whose
    server URL is relative, with nothing to resolve it against): the operator's to fix,
    never the model's.
    """

    def __init__(
        self, message: str, *, tool_name: str | None = None, field: str | None = None
    ) -> None:
        super().__init__(message)
        self.tool_name = tool_name
        """The tool the problem is about, when there is one."""
        self.field = field
        """The option (or its entry) that is wrong, when one is, e.g.
        ``"headers['X-Key']"``."""


class ToolNotFoundError(ToolsetError):
    """No tool of the given name is offered.

    The message stays short whatever the catalogue and the name: it lists the names
    offered when there are a few, else the closest few (``suggestions``); it is also what
    a model may be shown.
    """

    def __init__(self, name: str, available: Iterable[str] = ()) -> None:
        self.name = name
        """The name that was asked for."""
        self.available = tuple(sorted(available))
        """The names that are offered, sorted."""
        self.suggestions = tuple(close_names(name, self.available))
        """The few offered names closest to ``name``, closest first (maybe none)."""
        if len(self.available) <= _MAX_LISTED:
            listing = ", ".join(self.available) if self.available else "none"
            super().__init__(f"no tool named {self._shown}; available: {listing}")
            return
        count = f"{len(self.available)} tools are offered"
        if self.suggestions:
            hint = f"did you mean {', '.join(self.suggestions)}? ({count})"
        else:
            hint = f"{count}; none is named like it"
        super().__init__(f"no tool named {self._shown}; {hint}")

    @property
    def _shown(self) -> str:
        name = self.name
        return repr(name) if len(name) <= _MAX_SHOWN else f"{name[:_MAX_SHOWN]!r}..."

    def for_model(self) -> str:
        """What a model that called this name is told: the same facts as the message, in
        a sentence addressed to it, with a few more close names than ``suggestions``."""
        shown = repr(clip(self.name, _SHOWN_TO_MODEL))
        if len(self.available) <= _MAX_LISTED:
            names = ", ".join(self.available) or "none"
            return f"There is no tool named {shown}. Available tools: {names}."
        close = close_names(self.name, self.available, limit=_SUGGESTED_TO_MODEL)
        hint = f"The closest: {', '.join(close)}." if close else "Call one of the tools declared."
        return f"There is no tool named {shown} (of {len(self.available)} tools). {hint}"


class SpecError(ToolsetError):
    """A specification document (OpenAPI, a config file) is broken.

    ``pointer`` is the JSON pointer (RFC 6901) of the offending node, ``""`` for the
    whole document.
    """

    def __init__(self, message: str, *, pointer: str = "", source: str | None = None) -> None:
        self.pointer = pointer
        """JSON pointer of the broken node."""
        if source is not None and source.startswith(("http://", "https://")):
            source = safe_url(source)  # a spec URL may carry a token in its query
        self.source = source
        """Where the document came from (a path, or a URL without user info, query or
        fragment), when known."""
        where = f"{source}#{pointer}" if source else f"#{pointer}"
        super().__init__(f"{where}: {message}")


class ConnectionError(ToolsetError, builtins.ConnectionError):
    """A tool server (MCP, HTTP) cannot be reached or went away.

    Also an instance of the built-in ``ConnectionError``, so existing handlers catch it.
    """

    def __init__(self, message: str, *, target: str | None = None) -> None:
        super().__init__(message)
        self.target = target
        """The server (command line or URL) that failed, with no credentials in it."""


class ToolCallError(ToolsetError):
    """A tool call failed for a reason the model cannot fix (a fault, not bad input)."""

    def __init__(self, message: str, *, tool_name: str) -> None:
        super().__init__(message)
        self.tool_name = tool_name
        """The tool whose call failed."""


class AuthError(ToolsetError):
    """A credential could not be obtained: a token endpoint refused or could not be
    read, or a flow's answer did not check out. The message never holds a secret."""

    def __init__(
        self,
        message: str,
        *,
        scheme_name: str,
        status_code: int | None = None,
        oauth_error: str | None = None,
    ) -> None:
        super().__init__(message)
        self.scheme_name = scheme_name
        """The security scheme the credential was for."""
        self.status_code = status_code
        """The HTTP status of the token endpoint's refusal (None: it did not answer one)."""
        self.oauth_error = oauth_error
        """The OAuth error code the token endpoint answered (RFC 6749 §5.2, e.g.
        ``invalid_grant``), if it named one."""


class ServiceNotConfiguredError(ToolsetError):
    """A tool used a context service (artifacts, memory, ...) that was not configured."""

    def __init__(self, service: str) -> None:
        self.service = service
        """The missing service, e.g. ``"artifact_service"``."""
        super().__init__(
            f"this ToolContext has no {service}; pass {service}=... when creating the "
            "context (or to the Runner that creates it)"
        )


class MissingClientCapabilityError(ToolsetError):
    """A tool asked its client (``ctx.ask``, ``ctx.elicit``, ``ctx.sample``,
    ``ctx.list_roots``) for something the client did not declare it can do, or the call
    has no client to ask (it is not served to an MCP client). Raised in the tool, it
    reaches the model as an error result; an MCP server tells its client instead (the
    JSON-RPC error ``mcp.types.MISSING_REQUIRED_CLIENT_CAPABILITY`` naming the
    capability: on protocol 2026-07-28 for a tool, on both eras for a prompt or resource
    of the server's own)."""

    def __init__(self, capability: str, *, client: bool = True) -> None:
        self.capability = capability
        """What was asked: ``"elicitation"``, ``"sampling"`` or ``"roots"``."""
        self.client = client
        """Whether there was a client at all (False: the call is not served to one)."""
        if client:
            message = f"the client does not support {capability}, which this tool needs"
        else:
            message = (
                f"this tool needs {capability} from an MCP client, and the call has none "
                "(it is not served by an MCP server)"
            )
        super().__init__(message)
