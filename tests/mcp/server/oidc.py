"""A real OpenID provider for the tests of the served side's authorization: npm
``oidc-provider`` (certified) in a Node process of its own, configured by
``fixtures/oidc/provider.mjs`` from a file written here, with a signing key made here (so
that tests can also sign tokens with the issuer's own key: expired ones, ones for another
audience...). `OpenIdProvider` starts it and gets tokens from it.

Clients it knows (secrets in `SECRETS`): ``service`` (client credentials, JWT access
tokens), ``opaque-service`` (client credentials, opaque tokens), ``resource-server``
(what a server introspects as), ``exchanger`` (RFC 8693 token exchange); and any client
that registers itself (dynamic registration, as the `mcp` SDK's OAuth client does). Any
login name is an account at its login page; ``alice`` and ``service`` have claims
(`CLAIMS`).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from mcp.client.auth import AuthorizationCodeResult

from tests.helpers import NODE, ROOT
from tests.mcp.helpers import HttpServer

SCRIPT = ROOT / "fixtures" / "oidc" / "provider.mjs"
START_TIMEOUT = 30.0
REQUEST_TIMEOUT = 10.0
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"
SCOPES = "tools:read tools:call admin"
"""The scopes every resource on this machine has at the provider."""
SECRETS = {
    "service": "service-secret-0123456789abcdef",
    "opaque-service": "opaque-secret-0123456789abcdef",
    "resource-server": "resource-server-secret-0123456789",
    "exchanger": "exchanger-secret-0123456789abcdef",
}
CLAIMS = {
    "alice": {"email": "alice@example.com", "groups": ["staff"]},
    "service": {"roles": ["reader"], "email": "service@example.com"},
}


def private_jwk(kid: str) -> dict[str, Any]:
    """A new RSA signing key as a private JWK."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk: dict[str, Any] = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key))
    jwk.pop("key_ops", None)  # PyJWT's ["sign"]: the public half would not verify
    return {**jwk, "kid": kid, "use": "sig", "alg": "RS256"}


def public_jwk(jwk: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in jwk.items() if k not in ("d", "p", "q", "dp", "dq", "qi")}


def _client(client_id: str, grants: list[str]) -> dict[str, Any]:
    return {
        "client_id": client_id,
        "client_secret": SECRETS[client_id],
        "grant_types": grants,
        "response_types": [],
        "redirect_uris": [],
        "token_endpoint_auth_method": "client_secret_basic",
    }


class OpenIdProvider(HttpServer):
    """``oidc-provider`` on 127.0.0.1, in a Node process (`start`, `stop`); it picks its
    own port and says its issuer URL once it serves."""

    def __init__(self) -> None:
        super().__init__()
        self.key = private_jwk("issuer-key-1")
        self.issuer = ""
        self._folder = tempfile.TemporaryDirectory(prefix="oidc-")

    def config(self) -> dict[str, Any]:
        return {
            "jwks": {"keys": [self.key]},
            "clients": [
                _client("service", ["client_credentials"]),
                _client("opaque-service", ["client_credentials"]),
                _client("resource-server", ["client_credentials"]),
                _client("exchanger", [TOKEN_EXCHANGE]),
            ],
            "resource_scopes": SCOPES,
            "opaque_clients": ["opaque-service"],
            "token_claims": CLAIMS,
            "access_token_ttl": 300,
        }

    def command(self) -> tuple[list[str], dict[str, str]]:
        path = Path(self._folder.name) / "config.json"
        path.write_text(json.dumps(self.config()))
        return [str(NODE), str(SCRIPT), str(path)], dict(os.environ)

    def spawn(self) -> subprocess.Popen[bytes]:
        args, env = self.command()
        return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)

    def start(self) -> None:
        process = self.process = self.spawn()
        assert process.stdout is not None
        # The first line says where it serves (a pipe read has no timeout of its own:
        # a timer ends the process if it never comes).
        timer = threading.Timer(START_TIMEOUT, process.kill)
        timer.start()
        try:
            line = process.stdout.readline()
        finally:
            timer.cancel()
        if not line:
            self.stop()
            raise RuntimeError(f"oidc-provider did not start within {START_TIMEOUT} s")
        self.issuer = json.loads(line)["issuer"]

    def stop(self) -> None:
        process = self.process
        super().stop()
        if process is not None and process.stdout is not None:
            process.stdout.close()
        self._folder.cleanup()

    @property
    def token_endpoint(self) -> str:
        return f"{self.issuer}/token"

    async def token(
        self, resource: str, *, client: str = "service", scope: str | None = SCOPES
    ) -> str:
        """An access token for ``resource`` by client credentials."""
        form = {"grant_type": "client_credentials", "resource": resource}
        if scope is not None:
            form["scope"] = scope
        answer = await self.post_token(form, client)
        return str(answer["access_token"])

    async def post_token(self, form: dict[str, str], client: str) -> dict[str, Any]:
        async with httpx2.AsyncClient(timeout=REQUEST_TIMEOUT) as http:
            response = await http.post(
                self.token_endpoint, data=form, auth=(client, SECRETS[client])
            )
        assert response.status_code == 200, response.text
        answer: dict[str, Any] = response.json()
        return answer

    def sign(
        self,
        claims: dict[str, Any],
        *,
        key: dict[str, Any] | None = None,
        headers: dict[str, Any] | None = None,
    ) -> str:
        """A JWT access token with ``claims`` over sensible defaults (this issuer, now,
        five minutes), signed with the issuer's own key unless ``key`` is given."""
        now = int(time.time())
        payload = {
            "iss": self.issuer,
            "sub": "alice",
            "client_id": "service",
            "scope": SCOPES,
            "iat": now,
            "exp": now + 300,
            "jti": f"t{time.monotonic_ns()}",
            **claims,
        }
        payload = {k: v for k, v in payload.items() if v is not None}
        signing = key or self.key
        private = jwt.algorithms.RSAAlgorithm.from_jwk(json.dumps(signing))
        header = {"kid": signing["kid"], "typ": "at+jwt", **(headers or {})}
        return jwt.encode(payload, private, algorithm="RS256", headers=header)

    async def state(self, **changes: Any) -> dict[str, Any]:
        """The fault switches and request counts of the provider (after ``changes``)."""
        async with httpx2.AsyncClient(timeout=REQUEST_TIMEOUT) as http:
            if changes:
                response = await http.post(f"{self.issuer}/__test__/state", json=changes)
            else:
                response = await http.get(f"{self.issuer}/__test__/state")
        state: dict[str, Any] = response.json()
        return state


class Login:
    """Plays a user's browser at the provider's login and consent pages: follows the
    authorization URL's redirects, signs in as ``user`` and consents, and keeps the code
    of the last redirect (to the client's redirect URI, which nothing serves) for the
    client's callback."""

    def __init__(self, redirect_uri: str, user: str = "alice") -> None:
        self.redirect_uri = redirect_uri
        self.user = user
        self.result: AuthorizationCodeResult | None = None
        self.pages: list[str] = []
        """The prompts answered (``login``, ``consent``), in order."""

    async def open(self, authorization_url: str) -> None:
        async with httpx2.AsyncClient(timeout=REQUEST_TIMEOUT) as browser:
            response = await browser.get(authorization_url)
            for _ in range(10):
                location = response.headers.get("location")
                if response.is_redirect and location is not None:
                    target = str(response.url.join(location))
                    if target.startswith(self.redirect_uri):
                        self._arrived(target)
                        return
                    response = await browser.get(target)
                    continue
                prompt = _PROMPT.search(response.text)
                assert prompt is not None, f"not a login or consent page: {response.text[:300]}"
                self.pages.append(prompt.group(1))
                form = {"prompt": prompt.group(1), "login": self.user, "password": "any"}
                response = await browser.post(str(response.url), data=form)
        raise AssertionError("the provider's pages did not lead to the redirect URI")

    def _arrived(self, url: str) -> None:
        query = parse_qs(urlsplit(url).query)
        assert "code" in query, f"the redirect carries no code: {query}"
        self.result = AuthorizationCodeResult(
            code=query["code"][0],
            state=query.get("state", [None])[0],
            iss=query.get("iss", [None])[0],
        )

    async def callback(self) -> AuthorizationCodeResult:
        result, self.result = self.result, None
        assert result is not None, "the callback came before the redirect"
        return result


_PROMPT = re.compile(r'name="prompt" value="(login|consent)"')
