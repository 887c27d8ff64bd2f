"""A real OAuth 2 authorization server and protected API on 127.0.0.1, in a thread.

It implements what `toolsets.openapi` speaks to — OpenID Connect discovery, the token
endpoint (client credentials with basic or form client authentication, authorization code
with PKCE S256, refresh token, and RFC 8693 token exchange for the subjects' tokens it
knows), the authorization endpoint (redirects back with a code) —
and an API that accepts only the tokens it issued and has not revoked. Everything it
receives is recorded, so tests can check what was sent where.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlencode, urlsplit

CLIENT_ID = "toolsets-app"
CLIENT_SECRET = "cl13nt-s3cret"


@dataclass
class Seen:
    """One request as the server got it."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    form: dict[str, list[str]]


@dataclass
class OAuthServer:
    """The server's state; tests change ``expires_in``, ``issuer`` or revoke tokens."""

    url: str = ""
    seen: list[Seen] = field(default_factory=list)
    expires_in: int | str | None = 3600
    issuer: str | None = None  # None: the server's own URL
    quote_secret: bool = False  # a refusal quotes the client secret it got (some servers do)
    tokens: dict[str, tuple[str, ...]] = field(default_factory=dict)  # token → scopes
    refresh_tokens: dict[str, tuple[str, ...]] = field(default_factory=dict)
    codes: dict[str, tuple[str, str, tuple[str, ...]]] = field(default_factory=dict)
    subjects: dict[str, str] = field(default_factory=dict)  # a user's access token → subject
    audiences: tuple[str, ...] = ("https://api.example",)  # what token exchange issues for
    exchanged: dict[str, tuple[str, str]] = field(default_factory=dict)  # token → (sub, aud)
    _counter: Iterator[int] = field(default_factory=itertools.count)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def requests_to(self, path: str) -> list[Seen]:
        return [s for s in self.seen if s.path == path]

    def revoke_all(self) -> None:
        with self.lock:
            self.tokens.clear()

    def _issue(self, scopes: tuple[str, ...], refresh: bool, prefix: str = "at") -> dict[str, Any]:
        with self.lock:
            token = f"{prefix}-{next(self._counter)}"
            self.tokens[token] = scopes
            body: dict[str, Any] = {"access_token": token, "token_type": "Bearer"}
            if self.expires_in is not None:
                body["expires_in"] = self.expires_in
            if scopes:
                body["scope"] = " ".join(scopes)
            if refresh:
                refresh_token = f"rt-{next(self._counter)}"
                self.refresh_tokens[refresh_token] = scopes
                body["refresh_token"] = refresh_token
        return body

    # --- the endpoints, each returning (status, headers, JSON body) ---------------------

    def handle(self, seen: Seen) -> tuple[int, dict[str, str], Any]:
        if seen.path == "/.well-known/openid-configuration":
            return 200, {}, self.discovery()
        if seen.path == "/token" and seen.method == "POST":
            return self.token(seen)
        if seen.path == "/authorize":
            return self.authorize(seen)
        if seen.path.startswith("/api/"):
            auth = seen.headers.get("authorization", "")
            token = auth.removeprefix("Bearer ")
            if not auth.startswith("Bearer ") or token not in self.tokens:
                return 401, {"WWW-Authenticate": "Bearer"}, {"message": "bad credentials"}
            return 200, {}, {"ok": True, "path": seen.path, "scopes": list(self.tokens[token])}
        return 404, {}, {"message": "no such thing"}

    def discovery(self) -> dict[str, Any]:
        return {
            "issuer": self.issuer if self.issuer is not None else self.url,
            "authorization_endpoint": self.url + "/authorize",
            "token_endpoint": self.url + "/token",
            "response_types_supported": ["code"],
        }

    def _client_ok(self, seen: Seen) -> bool:
        auth = seen.headers.get("authorization", "")
        if auth.startswith("Basic "):
            pair = base64.b64decode(auth[6:]).decode()
            client_id, _, secret = pair.partition(":")
            return (unquote(client_id), unquote(secret)) == (CLIENT_ID, CLIENT_SECRET)
        form = seen.form
        return form.get("client_id") == [CLIENT_ID] and (
            form.get("client_secret") in ([CLIENT_SECRET], None)
        )

    def token(self, seen: Seen) -> tuple[int, dict[str, str], Any]:
        form = {k: v[0] for k, v in seen.form.items()}
        if not self._client_ok(seen):
            described = "who are you?"
            if self.quote_secret:
                auth = seen.headers.get("authorization", "")
                pair = base64.b64decode(auth[6:]).decode() if auth.startswith("Basic ") else ""
                given = unquote(pair.partition(":")[2]) or form.get("client_secret", "")
                described = f"client secret {given!r} is not valid for this client"
            return 401, {}, {"error": "invalid_client", "error_description": described}
        grant = form.get("grant_type")
        scopes = tuple(form.get("scope", "").split())
        if grant == "client_credentials":
            return 200, {}, self._issue(scopes, refresh=False)
        if grant == "authorization_code":
            found = self.codes.pop(form.get("code", ""), None)
            if found is None:
                return 400, {}, {"error": "invalid_grant"}
            challenge, redirect_uri, granted = found
            verifier = form.get("code_verifier", "")
            digest = hashlib.sha256(verifier.encode()).digest()
            if base64.urlsafe_b64encode(digest).rstrip(b"=").decode() != challenge:
                return 400, {}, {"error": "invalid_grant", "error_description": "PKCE failed"}
            if form.get("redirect_uri") != redirect_uri:
                return 400, {}, {"error": "invalid_grant", "error_description": "redirect"}
            return 200, {}, self._issue(granted, refresh=True)
        if grant == "refresh_token":
            granted = self.refresh_tokens.get(form.get("refresh_token", ""))
            if granted is None:
                return 400, {}, {"error": "invalid_grant"}
            body = self._issue(granted, refresh=False)
            return 200, {}, body
        if grant == "urn:ietf:params:oauth:grant-type:token-exchange":
            return self.exchange(form, scopes)
        return 400, {}, {"error": "unsupported_grant_type"}

    def exchange(
        self, form: dict[str, str], scopes: tuple[str, ...]
    ) -> tuple[int, dict[str, str], Any]:
        """RFC 8693: a token for ``audience`` for the user whose access token came."""
        subject = self.subjects.get(form.get("subject_token", ""))
        if form.get("subject_token_type") != "urn:ietf:params:oauth:token-type:access_token":
            return 400, {}, {"error": "invalid_request", "error_description": "token type"}
        if subject is None:
            return 400, {}, {"error": "invalid_grant", "error_description": "unknown subject token"}
        audience = form.get("audience", "")
        if audience not in self.audiences:
            return 400, {}, {"error": "invalid_target", "error_description": "unknown audience"}
        body = self._issue(scopes, refresh=False, prefix=f"xt-{subject}")
        body["issued_token_type"] = "urn:ietf:params:oauth:token-type:access_token"
        self.exchanged[body["access_token"]] = (subject, audience)
        return 200, {}, body

    def authorize(self, seen: Seen) -> tuple[int, dict[str, str], Any]:
        query = {k: v[0] for k, v in seen.query.items()}
        redirect = query.get("redirect_uri", "")
        if query.get("client_id") != CLIENT_ID or query.get("code_challenge_method") != "S256":
            back = {"error": "invalid_request", "state": query.get("state", "")}
            return 302, {"Location": redirect + "?" + urlencode(back)}, None
        with self.lock:
            code = f"code-{next(self._counter)}"
        scopes = tuple(query.get("scope", "").split())
        self.codes[code] = (query["code_challenge"], redirect, scopes)
        back = {"code": code, "state": query.get("state", "")}
        return 302, {"Location": redirect + "?" + urlencode(back)}, None


def _handler(server: OAuthServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def _serve(self) -> None:
            parts = urlsplit(self.path)
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length).decode() if length else ""
            seen = Seen(
                method=self.command,
                path=parts.path,
                query=parse_qs(parts.query),
                headers={k.lower(): v for k, v in self.headers.items()},
                form=parse_qs(body),
            )
            server.seen.append(seen)
            status, headers, payload = server.handle(seen)
            data = b"" if payload is None else json.dumps(payload).encode()
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_DELETE = _serve

    return Handler


@contextmanager
def oauth_server() -> Iterator[OAuthServer]:
    """A started `OAuthServer`, stopped on exit."""
    state = OAuthServer()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    httpd.daemon_threads = True
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)
