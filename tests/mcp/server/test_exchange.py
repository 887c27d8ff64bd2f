"""Token exchange (`TokenExchange`, RFC 8693) for each calling user's own upstream
credential, against a real OAuth 2 server on 127.0.0.1 that records what it receives:
the caller's token goes to the token endpoint only, with the server's client
authentication; tokens are kept per user until shortly before they expire and obtained
once for concurrent calls; every failure is an error saying why, and every wait is
bounded."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import anyio
import pytest

from tests.mcp.server.helpers import KEY, KEY_SCHEME, TOKENS, call_as, identify
from tests.mcp.server_helpers import uvicorn_thread
from tests.openapi.helpers import recording_server, secured, serving
from tests.openapi.oauth_server import CLIENT_ID, CLIENT_SECRET, OAuthServer, oauth_server
from toolsets import AuthConfig, AuthCredential, AuthError, Identity, Invocation
from toolsets.mcp import IncomingRequest, McpServer, TokenExchange, UserCredentials
from toolsets.openapi import OpenApiToolset

pytestmark = pytest.mark.anyio

API = "https://api.example"
OAUTH_SCHEME = {"type": "oauth2", "flows": {"clientCredentials": {"tokenUrl": "/t", "scopes": {}}}}


@pytest.fixture(scope="module")
def issuer() -> Iterator[OAuthServer]:
    with oauth_server() as state:
        state.subjects.update(TOKENS)
        yield state


def exchanging(endpoint: str, **options: Any) -> UserCredentials:
    """Credentials by `TokenExchange` at ``endpoint`` for `API`, as the test client."""
    return UserCredentials(
        TokenExchange(
            token_endpoint=endpoint,
            audience=options.pop("audience", API),
            client_id=CLIENT_ID,
            client_secret=CLIENT_SECRET,
            **options,
        )
    )


def exchange(issuer: OAuthServer, **options: Any) -> Callable[[str], UserCredentials]:
    """Credentials by `TokenExchange` with ``issuer``, the caller's token the one given
    last."""
    current: dict[str, str | None] = {"token": None}

    def made(token: str) -> UserCredentials:
        current["token"] = token
        given = dict(options)
        fallback = given.pop("fallback", None)
        exchanged = TokenExchange(
            token_endpoint=issuer.url + "/token",
            audience=API,
            client_id=CLIENT_ID,
            client_secret=CLIENT_SECRET,
            subject_token=lambda: current["token"],
            **given,
        )
        return UserCredentials(exchanged, fallback=fallback)

    return made


def user(subject: str, **fields: Any) -> Identity:
    return Identity(subject=subject, issuer="https://id.example", **fields)


async def test_token_exchange_sends_the_callers_token_to_the_issuer_only_and_keeps_the_result(
    issuer: OAuthServer,
) -> None:
    issuer.seen.clear()
    config = AuthConfig(scheme_name="oauth", scheme=OAUTH_SCHEME, scopes=("pets:read",))
    credentials = exchange(issuer)("alice-at")
    first = await credentials.credential(user("alice"), config)
    again = await credentials.credential(user("alice"), config)
    assert again is first
    assert issuer.exchanged[first.secret] == ("alice", API)
    (sent,) = issuer.requests_to("/token")
    form = {k: v[0] for k, v in sent.form.items()}
    assert form == {
        "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
        "subject_token": "alice-at",
        "subject_token_type": "urn:ietf:params:oauth:token-type:access_token",
        "requested_token_type": "urn:ietf:params:oauth:token-type:access_token",
        "audience": API,
        "scope": "pets:read",
    }
    assert sent.headers["authorization"].startswith("Basic ")  # the server's own client auth


async def test_token_exchange_keeps_one_token_per_user_and_asks_once_for_many_calls(
    issuer: OAuthServer,
) -> None:
    issuer.seen.clear()
    made = exchange(issuer)
    credentials = made("alice-at")
    found: list[AuthCredential] = []

    async def get() -> None:
        found.append(await credentials.credential(user("alice"), KEY))

    async with anyio.create_task_group() as tg:
        for _ in range(5):
            tg.start_soon(get)
    assert len({c.secret for c in found}) == 1
    made("bob-at")  # the caller's token is bob's now, for the same TokenExchange
    bobs = await credentials.credential(user("bob"), KEY)
    assert bobs.secret != found[0].secret
    assert issuer.exchanged[bobs.secret][0] == "bob"
    assert len(issuer.requests_to("/token")) == 2


async def test_an_exchanged_token_is_not_used_past_its_expiry_nor_past_the_callers(
    issuer: OAuthServer,
) -> None:
    issuer.seen.clear()
    credentials = exchange(issuer)("alice-at")
    try:
        issuer.expires_in = 20  # within the refresh margin: used for this call only
        first = await credentials.credential(user("alice"), KEY)
        issuer.expires_in = 3600
        second = await credentials.credential(user("alice"), KEY)
        third = await credentials.credential(user("alice"), KEY)
        # The caller's own token ends within the margin: what was obtained for it is
        # not kept (the next call comes with a new token, exchanged anew).
        ending = user("alice", expires_at=int(time.time()) + 20)
        other = AuthConfig(scheme_name="key", scheme=KEY_SCHEME, scopes=("other",))
        fourth = await credentials.credential(ending, other)
        fifth = await credentials.credential(ending, other)
    finally:
        issuer.expires_in = 3600
    assert second.secret != first.secret
    assert third is second
    assert fifth.secret != fourth.secret
    assert len(issuer.requests_to("/token")) == 4


async def test_an_exchange_the_issuer_refuses_is_an_error_saying_why_never_a_fallback(
    issuer: OAuthServer,
) -> None:
    credentials = exchange(issuer, fallback={"key": "shared"})("mallory-unknown-at")
    wrong_audience = exchanging(
        issuer.url + "/token",
        audience="https://elsewhere.example",
        subject_token=lambda: "alice-at",
    )
    with pytest.raises(AuthError) as raised:
        await credentials.credential(user("mallory"), KEY)
    assert "invalid_grant" in str(raised.value)
    assert "mallory-unknown-at" not in str(raised.value)
    with pytest.raises(AuthError, match="invalid_target"):
        await wrong_audience.credential(user("alice"), KEY)


async def test_an_exchange_without_the_callers_token_or_against_a_dead_issuer_is_an_error(
    issuer: OAuthServer,
) -> None:
    credentials = exchange(issuer)("")
    with pytest.raises(AuthError, match="came without one"):
        await credentials.credential(user("alice"), KEY)
    async with recording_server() as gone:
        url = gone.url
    dead = exchanging(url + "/token", subject_token=lambda: "alice-at")
    with pytest.raises(AuthError, match="could not be obtained by token exchange"):
        await dead.credential(user("alice"), KEY)


class Silent:
    """Accepts connections and never answers."""

    port = 0

    async def _handle(self, stream: Any) -> None:
        async with stream:
            await anyio.sleep_forever()


async def test_an_exchange_that_gets_no_answer_gives_up_after_its_timeout() -> None:
    async with serving(Silent()) as silent:
        slow = exchanging(
            f"http://127.0.0.1:{silent.port}/token", subject_token=lambda: "alice-at", timeout=0.2
        )
        with anyio.fail_after(10), pytest.raises(AuthError, match=r"no answer within 0\.2 s"):
            await slow.credential(user("alice"), KEY)


async def test_the_token_endpoint_is_discovered_from_the_issuer(issuer: OAuthServer) -> None:
    credentials = UserCredentials(
        TokenExchange(
            issuer=issuer.url,
            audience=API,
            client_id=CLIENT_ID,
            client_secret=CLIENT_SECRET,
            subject_token=lambda: "bob-at",
        )
    )
    token = await credentials.credential(user("bob"), KEY)
    assert issuer.exchanged[token.secret] == ("bob", API)


def test_token_exchange_refuses_what_cannot_work() -> None:
    common: dict[str, Any] = {"audience": API, "client_id": "c", "client_secret": "s"}
    with pytest.raises(ValueError, match="one of token_endpoint and issuer"):
        TokenExchange(**common)
    with pytest.raises(ValueError, match="https"):
        TokenExchange(token_endpoint="http://id.example/token", **common)
    exchange_ = TokenExchange(token_endpoint="https://id.example/token", **common)
    assert "s" not in repr(exchange_).replace("https", "")


async def test_token_exchange_reads_the_callers_token_the_sdk_validated_by_default(
    issuer: OAuthServer,
) -> None:
    from mcp.server.auth.middleware.auth_context import auth_context_var
    from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
    from mcp.server.auth.provider import AccessToken

    credentials = exchanging(issuer.url + "/token")
    validated = AccessToken(token="bob-at", client_id="agent", scopes=[], subject="bob")
    reset = auth_context_var.set(AuthenticatedUser(validated))
    try:
        token = await credentials.credential(user("bob"), KEY)
    finally:
        auth_context_var.reset(reset)
    assert issuer.exchanged[token.secret] == ("bob", API)


async def test_a_served_call_with_token_exchange_sends_the_exchanged_token_upstream(
    issuer: OAuthServer,
) -> None:
    """The whole path with identities set directly: the subject token is the one the
    client sent (the resource server's part will validate it)."""
    bearer: dict[str, str | None] = {"token": None}

    def identify_and_keep(request: IncomingRequest) -> Invocation:
        bearer["token"] = request.bearer_token  # what get_access_token() gives, once validated
        return identify(request)

    credentials = exchanging(issuer.url + "/token", subject_token=lambda: bearer["token"])
    spec = secured("oauth", OAUTH_SCHEME)
    async with recording_server() as api:
        server = McpServer(
            OpenApiToolset(spec, base_url=api.url),
            credentials=credentials,
            invocation=identify_and_keep,
        )
        async with uvicorn_thread(server.http_app) as url:
            assert await call_as(url, "alice-at") == {"ok": True}
            assert await call_as(url, "bob-at") == {"ok": True}
    sent = [r.headers["authorization"].removeprefix("Bearer ") for r in api.requests]
    assert [issuer.exchanged[token] for token in sent] == [("alice", API), ("bob", API)]
    raw = b"".join(r.head + r.body for r in api.requests)
    assert b"alice-at" not in raw
    assert b"bob-at" not in raw
