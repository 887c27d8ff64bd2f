"""What the libraries toolsets drives log, kept free of our secrets.

Our own log lines never hold a credential. The libraries we drive log what we make them
send and receive: the `mcp` SDK logs the URL it connects to (user info, ``?token=`` and
all) at DEBUG, httpx2 each request's URL at INFO (an API key in the query), httpcore2 each
response's headers at DEBUG (a redirect's ``Location`` repeating the key, a
``Set-Cookie``). `guard_library_logs` puts one filter on each of their loggers that masks,
in each record they emit: user info in URLs, the values of query parameters named like
credentials (``token``, ``key``, ``secret``, ``password``, ``signature``, ``code``...),
credential headers in httpcore2's header lists, and every secret handed to
`hide_in_logs` (an OpenAPI key sent in a query under any name). A filter runs only for a
record its logger lets through, so it costs nothing while those levels are off.

toolsets guards them itself, when it first opens a connection (an OpenAPI toolset's
client, an MCP connection, a model's client): a program that configures logging needs
to do nothing. The loggers httpcore2 makes only when its first connection opens
(`MADE_LATER`) are made, and guarded, then; another logger those libraries make later
is guarded at the next connection.

While a served call runs, every record those libraries and toolsets' own loggers
(``toolsets`` and its children) emit says who calls: the server sets the caller for the
request (`calling_as`, from the `Identity` its authorization validated), and a second
filter puts it on each record as ``record.subject`` and ``record.client_id`` (for a
structured handler) and at the end of its message, `` [caller alice, client agent-app]``.
Only those two names: never the token, nor another claim. Like the masking filter it runs
only for a record a logger lets through; a record outside a call is left as it is.
"""

from __future__ import annotations

import contextlib
import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextvars import ContextVar

from toolsets._auth import MASK, redact

__all__ = [
    "LIBRARIES",
    "MADE_LATER",
    "OWN",
    "calling_as",
    "guard_library_logs",
    "hide_in_logs",
]

LIBRARIES = ("mcp", "httpx2", "httpcore2")
"""The loggers (and their children) guarded: the libraries toolsets drives."""
OWN = "toolsets"
"""toolsets' own logger: it and its children say who calls, as the libraries' do."""
MADE_LATER = (
    "httpcore2.connection",
    "httpcore2.http11",
    "httpcore2.http2",
    "httpcore2.proxy",
    "httpcore2.socks",
)
"""Loggers of those libraries made only when their first connection opens (httpcore2
imports its connection modules then), after the guard ran: made by the guard itself,
so that they have the filter when the library takes them. Each logs a request's or a
response's headers."""

_KEPT_SECRETS = 1024
"""Secrets `hide_in_logs` remembers, the latest kept (a long-running server meets many)."""

_USER_INFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/?#@\s'\"<>]+@")
_CREDENTIAL_QUERY = re.compile(
    r"(?i)([?&;][^=&;#\s'\"<>]*?"
    r"(?:token|key|secret|passw|pwd|signature|sig|code|auth|credential|session|cookie)"
    r"[^=&;#\s'\"<>]*=)[^&;#\s'\"<>]+"
)
_CREDENTIAL_HEADER = re.compile(
    r"(?i)(\(b'(?:authorization|proxy-authorization|cookie|set-cookie|x-api-key|api-key|"
    r"x-auth-token|mcp-session-id)', b')[^']*(')"
)
_SESSION_ID = re.compile(r"(?i)(\bsession id:? )\S+")
"""A session id the SDK names in its words ("Received session ID: ..."): with it, anyone
who reaches the server speaks in the session."""


class _Redact(logging.Filter):
    """Masks secrets in the message of every record it sees (see the module's docs)."""

    def __init__(self) -> None:
        super().__init__()
        self.secrets: OrderedDict[str, None] = OrderedDict()
        self.lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except (TypeError, ValueError):  # a record its own library formats wrongly
            return True
        masked = _USER_INFO.sub(rf"\1{MASK}@", message)
        masked = _CREDENTIAL_QUERY.sub(rf"\1{MASK}", masked)
        masked = _CREDENTIAL_HEADER.sub(rf"\1{MASK}\2", masked)
        masked = _SESSION_ID.sub(rf"\1{MASK}", masked)
        if self.secrets:
            with self.lock:
                secrets = list(self.secrets)
            masked = redact(masked, secrets)
        if masked != message:
            record.msg, record.args = masked, None
        return True


_filter = _Redact()

_caller: ContextVar[tuple[str, str | None] | None] = ContextVar("toolsets_caller", default=None)
"""Who the request being served comes from (subject, client id), None outside one."""


@contextlib.contextmanager
def calling_as(subject: str | None, client_id: str | None = None) -> Iterator[None]:
    """While the block runs (in this task, and the tasks it starts), the records of
    toolsets' and the libraries' loggers name ``subject`` and ``client_id`` as the caller
    (see the module's docs); ``subject`` None: no caller (nothing is changed)."""
    if subject is None:
        yield
        return
    guard_library_logs()  # a logger made since the last walk gets the filters too
    reset = _caller.set((subject, client_id))
    try:
        yield
    finally:
        _caller.reset(reset)


class _Caller(logging.Filter):
    """Names the caller of the request being served on each record it sees."""

    def filter(self, record: logging.LogRecord) -> bool:
        caller = _caller.get()
        if caller is None or hasattr(record, "subject"):  # none, or the record says (audit)
            return True
        subject, client_id = caller
        record.subject, record.client_id = subject, client_id
        try:
            message = record.getMessage()
        except (TypeError, ValueError):  # a record its own library formats wrongly
            return True
        said = f"caller {subject}, client {client_id}" if client_id else f"caller {subject}"
        record.msg, record.args = f"{message} [{said}]", None
        return True


_caller_filter = _Caller()


class _Guard:
    """Which loggers have the filter: the logger registry only grows, so a walk is
    needed only when it has grown since the last."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.walked = 0

    def __call__(self) -> None:
        loggers = logging.Logger.manager.loggerDict
        if len(loggers) == self.walked:
            return
        with self.lock:
            # dict.copy() is atomic: another thread may make a logger meanwhile.
            for name in [OWN, *LIBRARIES, *MADE_LATER, *loggers.copy()]:
                top = name.split(".", 1)[0]
                if top in LIBRARIES or top == OWN:
                    logger = logging.getLogger(name)
                    if top != OWN and _filter not in logger.filters:
                        logger.addFilter(_filter)
                    # after the masking: the caller is said of the masked message
                    if _caller_filter not in logger.filters:
                        logger.addFilter(_caller_filter)
            self.walked = len(loggers)


guard_library_logs = _Guard()
"""Put the masking filter on every logger of `LIBRARIES` that has none yet, and the
caller's on those and toolsets' own (once each; nothing to do when no logger was made
since the last call)."""


def hide_in_logs(secret: str) -> None:
    """Mask ``secret`` (as is, percent-encoded or JSON-escaped) wherever those
    libraries log it, e.g. an API key sent in a query parameter of any name."""
    if not secret:
        return
    with _filter.lock:
        _filter.secrets[secret] = None
        _filter.secrets.move_to_end(secret)
        while len(_filter.secrets) > _KEPT_SECRETS:
            _filter.secrets.popitem(last=False)
    guard_library_logs()
