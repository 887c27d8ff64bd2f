"""Where a person's login to an MCP server comes back: the loopback redirect URI
(``http://127.0.0.1:PORT/callback``) served while the user logs in, after the
authorization address was shown to them (and opened in a browser, where there is one).
`toolsets.mcp.client._login` hands it to the `mcp` SDK's OAuth client as its redirect
and callback handlers."""

from __future__ import annotations

import logging
import os
import socket
import sys
from collections.abc import Callable, Sequence
from urllib.parse import parse_qs, urlsplit

import anyio
import anyio.abc
import anyio.to_thread
from mcp.shared.auth import AuthorizationCodeResult
from pydantic import AnyUrl

from toolsets._errors import AuthError

__all__ = [
    "CALLBACK_PATH",
    "LOGIN_TIMEOUT",
    "LoginPrompt",
    "LoopbackRedirect",
    "browser_present",
    "free_port",
    "log_prompt",
    "registered_port",
]

logger = logging.getLogger("toolsets.mcp.login")

LOGIN_TIMEOUT = 300.0
"""Seconds the user has to log in (from the authorization address shown to the
authorization server's redirect back)."""
CALLBACK_PATH = "/callback"
"""The path of the loopback redirect URI (``http://127.0.0.1:PORT/callback``)."""
_REQUEST_TIMEOUT = 10.0
"""Seconds a connection to the loopback address has to send its request."""
_MAX_REQUEST = 65536
"""Bytes of a request to the loopback address read at most."""

LoginPrompt = Callable[[str, str, bool], None]
"""Shows the user where to log in: ``(server, authorization_url, opened)``, ``opened``
saying whether a browser was opened on it."""


def log_prompt(server: str, url: str, opened: bool) -> None:
    how = "a browser was opened on" if opened else "open this address in a browser:"
    logger.warning("to log in to %s, %s %s", server, how, url)


def browser_present() -> bool:
    """Whether a graphical browser can be opened (a console browser would take over the
    terminal the command runs in: on Linux and other Unixes, a display is needed)."""
    if sys.platform in ("darwin", "win32") or os.environ.get("BROWSER"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


class LoopbackRedirect:
    """The loopback redirect URI: shows the user the authorization address (`open`),
    then serves ``http://127.0.0.1:PORT/callback`` until the authorization server's
    redirect brings the code (`callback`)."""

    def __init__(
        self,
        server: str,
        port: int,
        *,
        browser: bool,
        prompt: LoginPrompt,
        timeout: float,
        interactive: bool = True,
    ) -> None:
        self.server = server
        self.interactive = interactive
        self.port = port
        self.browser = browser
        self.prompt = prompt
        self.timeout = timeout
        self._listener: anyio.abc.Listener[anyio.abc.SocketStream] | None = None
        self._result: AuthorizationCodeResult | AuthError | None = None
        self._arrived = anyio.Event()

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}{CALLBACK_PATH}"

    async def open(self, authorization_url: str) -> None:
        """Listen on the redirect URI, then show the authorization address.

        Raises:
            AuthError: nobody can log in here (not ``interactive``), or the port of the
                redirect URI is taken.
        """
        if not self.interactive:
            raise AuthError(
                f"the login to {self.server} has lapsed and a new one needs a person, "
                "who cannot log in here (no terminal, no browser): log in again where one "
                "can",
                scheme_name="oauth",
            )
        self._result, self._arrived = None, anyio.Event()
        try:
            self._listener = await anyio.create_tcp_listener(
                local_host="127.0.0.1", local_port=self.port
            )
        except OSError as exc:
            raise AuthError(
                f"cannot receive the login's redirect on 127.0.0.1:{self.port} "
                f"({exc.strerror}): free that port, or forget the login (forget_login, "
                "toolsets logout) to register on another",
                scheme_name="oauth",
            ) from exc
        try:
            opened = False
            if self.browser and browser_present():
                import webbrowser

                opened = await anyio.to_thread.run_sync(webbrowser.open, authorization_url)
            self.prompt(self.server, authorization_url, opened)
        except BaseException:
            listener, self._listener = self._listener, None
            with anyio.CancelScope(shield=True):
                await listener.aclose()
            raise

    async def callback(self) -> AuthorizationCodeResult:
        """The code the redirect brought.

        Raises:
            AuthError: no redirect within the timeout, or it said the login failed.
        """
        listener = self._listener
        assert listener is not None, "the redirect handler listens first"
        try:
            with anyio.move_on_after(self.timeout) as waited:
                async with anyio.create_task_group() as tasks:
                    tasks.start_soon(listener.serve, self._answer)
                    await self._arrived.wait()
                    tasks.cancel_scope.cancel()
        finally:
            self._listener = None
            with anyio.CancelScope(shield=True):
                await listener.aclose()
        result = self._result
        if waited.cancelled_caught or result is None:
            raise AuthError(
                f"no login to {self.server} within {self.timeout:g} s", scheme_name="oauth"
            )
        if isinstance(result, AuthError):
            raise result
        return result

    async def _answer(self, stream: anyio.abc.SocketStream) -> None:
        import h11

        async with stream:
            try:
                with anyio.fail_after(_REQUEST_TIMEOUT):
                    target = await _request_target(stream)
                    status, page = self._arrival(target)
                    await _respond(stream, status, page)
            except (
                TimeoutError,
                h11.ProtocolError,
                anyio.EndOfStream,
                anyio.BrokenResourceError,
                OSError,
            ):
                return  # a connection that said nothing usable (a browser's pre-connect)

    def _arrival(self, target: str) -> tuple[int, str]:
        """What a request for ``target`` means: its answer's status and page (the result
        kept when it is the redirect)."""
        parts = urlsplit(target)
        if parts.path != CALLBACK_PATH or self._arrived.is_set():
            return 404, "Nothing here."
        query = {name: values[0] for name, values in parse_qs(parts.query).items()}
        if "error" in query:
            # The authorization server's own words, not a secret: RFC 6749 §4.1.2.1.
            said = query.get("error_description") or query["error"]
            self._result = AuthError(
                f"the login to {self.server} failed: {said}",
                scheme_name="oauth",
                oauth_error=query["error"],
            )
            page = "The login failed; you may close this page."
        elif "code" in query:
            self._result = AuthorizationCodeResult(
                code=query["code"], state=query.get("state"), iss=query.get("iss")
            )
            page = "You are logged in; you may close this page and return to toolsets."
        else:
            return 400, "No code and no error."
        self._arrived.set()
        return 200, page


async def _request_target(stream: anyio.abc.SocketStream) -> str:
    """The target of the HTTP request on ``stream`` (its path and query)."""
    import h11

    connection = h11.Connection(h11.SERVER, max_incomplete_event_size=_MAX_REQUEST)
    while True:
        event = connection.next_event()
        if event is h11.NEED_DATA:
            connection.receive_data(await stream.receive())
            continue
        if isinstance(event, h11.Request):
            return bytes(event.target).decode("ascii", errors="replace")
        raise h11.RemoteProtocolError("not a request")


async def _respond(stream: anyio.abc.SocketStream, status: int, page: str) -> None:
    body = f"<!doctype html><title>toolsets</title><p>{page}</p>\n".encode()
    head = (
        f"HTTP/1.1 {status} {'OK' if status == 200 else 'Not found'}\r\n"
        "Content-Type: text/html; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\nCache-Control: no-store\r\n\r\n"
    )
    await stream.send(head.encode() + body)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def registered_port(uris: Sequence[AnyUrl] | None) -> int | None:
    """The port of the loopback redirect URI of a kept client registration."""
    for uri in uris or ():
        parts = urlsplit(str(uri))
        if parts.hostname == "127.0.0.1" and parts.path == CALLBACK_PATH and parts.port:
            return parts.port
    return None
