"""Each user's own upstream credential (`UserCredentials`, `TokenExchange`): a served
OpenAPI tool's request reaches a real HTTP server on 127.0.0.1 with the calling user's
credential, never another user's, never the server's unless it is the fallback the
operator gave, and never the client's own token; a user without one gets an error
result naming the security scheme, and nothing is sent. Identities are set here by the
server's ``invocation`` function, from the bearer token the client sent."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

import toolsets
from tests.mcp.server_helpers import uvicorn_thread
from tests.openapi.helpers import RecordingServer, recording_server, secured, serving
from tests.openapi.oauth_server import CLIENT_ID, CLIENT_SECRET, OAuthServer, oauth_server
from toolsets import AuthConfig, AuthCredential, AuthError, Identity, Invocation, SpecError
from toolsets.mcp import IncomingRequest, McpServer, McpToolset, TokenExchange, UserCredentials
from toolsets.openapi import OpenApiToolset

pytestmark = pytest.mark.anyio

TOKENS = {"alice-at": "alice", "bob-at": "bob", "mallory-at": "mallory"}
"""The access tokens the clients send, and whose they are."""
KEY_SCHEME = {"type": "apiKey", "in": "header", "name": "X-Key"}
KEY = AuthConfig(scheme_name="key", scheme=KEY_SCHEME)


def identify(request: IncomingRequest) -> Invocation:
    """The identity a resource server would validate from the request's token (set
    directly here: the token is looked up, not checked)."""
    subject = TOKENS.get(request.bearer_token or "")
    if subject is None:
        return Invocation()
    identity = Identity(subject=subject, issuer="https://id.example", client_id="agent")
    return Invocation(identity=identity, user_id=subject)


async def call_as(url: str, token: str | None, args: dict[str, Any] | None = None) -> Any:
    """``get_thing`` called through the served server by a client sending ``token``."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with McpToolset(toolsets.mcp.StreamableHttp(url=url, headers=headers)) as served:
        thing = await served.get_tool("get_thing")
        return await thing.run(args or {"id": "7"}, toolsets.ToolContext())


@asynccontextmanager
async def served(credentials: Any, api: RecordingServer) -> AsyncIterator[str]:
    spec = secured("key", KEY_SCHEME)
    server = McpServer(
        OpenApiToolset(spec, base_url=api.url), credentials=credentials, invocation=identify
    )
    async with uvicorn_thread(server.http_app) as url:
        yield url


def sent_keys(api: RecordingServer) -> list[str | None]:
    return [r.headers.get("x-key") for r in api.requests]


def no_client_token_upstream(api: RecordingServer) -> None:
    """Neither the ``Authorization`` header nor any client token anywhere in what the
    upstream server received."""
    for request in api.requests:
        assert "authorization" not in request.headers
        raw = request.head + request.body
        assert not any(token.encode() in raw for token in TOKENS)


async def test_each_user_reaches_the_api_with_their_own_credential_never_the_clients_token() -> (
    None
):
    keys = {"alice": {"key": "alice-key"}, "bob": {"key": "bob-key"}}
    async with recording_server() as api, served(UserCredentials.from_mapping(keys), api) as url:
        assert await call_as(url, "alice-at") == {"ok": True}
        assert await call_as(url, "bob-at") == {"ok": True}
        assert await call_as(url, "alice-at") == {"ok": True}
    assert sent_keys(api) == ["alice-key", "bob-key", "alice-key"]
    no_client_token_upstream(api)


async def test_a_user_without_a_credential_gets_an_error_naming_the_scheme_nothing_sent() -> None:
    keys = {"alice": {"key": "alice-key"}}
    async with recording_server() as api, served(UserCredentials.from_mapping(keys), api) as url:
        refused = await call_as(url, "mallory-at")
        unidentified = await call_as(url, None)
    assert api.requests == []
    assert refused["credential"] == "key"
    assert "'key'" in refused["error"]
    assert "none for this user" in refused["error"]
    assert unidentified["credential"] == "key"
    assert "not identified" in unidentified["error"]


async def test_a_fallback_the_operator_gave_serves_users_without_one_and_no_one_else() -> None:
    keys = {"alice": {"key": "alice-key"}}
    credentials = UserCredentials.from_mapping(keys, fallback={"key": "shared-key"})
    async with recording_server() as api, served(credentials, api) as url:
        await call_as(url, "alice-at")
        await call_as(url, "mallory-at")
        await call_as(url, None)
    assert sent_keys(api) == ["alice-key", "shared-key", "shared-key"]
    no_client_token_upstream(api)


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_a_resolver_of_the_operators_finds_the_callers_credential(kind: str) -> None:
    asked: list[tuple[str, str]] = []

    def sync_resolve(identity: Identity, config: AuthConfig) -> str | None:
        asked.append((identity.subject, config.scheme_name))
        return None if identity.subject == "mallory" else f"{identity.subject}-key"

    async def async_resolve(identity: Identity, config: AuthConfig) -> AuthCredential | None:
        found = sync_resolve(identity, config)
        return None if found is None else AuthCredential.api_key(found)

    resolve = sync_resolve if kind == "sync" else async_resolve
    async with recording_server() as api, served(UserCredentials(resolve), api) as url:
        assert await call_as(url, "bob-at") == {"ok": True}
        refused = await call_as(url, "mallory-at")
    assert sent_keys(api) == ["bob-key"]
    assert refused["credential"] == "key"
    assert asked == [("bob", "key"), ("mallory", "key")]


async def test_a_resolver_that_refuses_a_user_says_why_in_the_result() -> None:
    def resolve(identity: Identity, config: AuthConfig) -> str:
        raise AuthError(f"{identity.subject}'s account is suspended", scheme_name="key")

    async with recording_server() as api, served(UserCredentials(resolve), api) as url:
        refused = await call_as(url, "bob-at")
    assert api.requests == []
    assert refused == {"error": "bob's account is suspended", "credential": "key"}


async def test_a_credential_the_api_refuses_is_found_again_and_the_same_one_is_not_resent() -> None:
    keys = {"alice": {"key": "stale-key"}}
    async with recording_server() as api, served(UserCredentials.from_mapping(keys), api) as url:
        api.status = 401
        api.body = {"message": "bad key"}
        refused = await call_as(url, "alice-at")
    assert sent_keys(api) == ["stale-key"]
    assert refused["credential"] == "key"
    assert "refused this user's credential" in refused["error"]


async def test_a_user_whose_credential_changed_after_a_refusal_is_served_with_the_new_one() -> None:
    keys = iter(["old-key", "new-key"])

    def resolve(identity: Identity, config: AuthConfig) -> str:
        return next(keys)

    async with recording_server() as api, served(UserCredentials(resolve), api) as url:
        api.first = [(401, {})]
        assert await call_as(url, "alice-at") == {"ok": True}
    assert sent_keys(api) == ["old-key", "new-key"]


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


async def test_credentials_by_subject_are_read_from_yaml_json_toml_and_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    alice = Identity(subject="alice@example.com", issuer="i")
    basic = AuthConfig(scheme_name="b", scheme={"type": "http", "scheme": "basic"})
    sources = [
        UserCredentials.from_file(
            write(tmp_path, "u.yaml", "alice@example.com:\n  key: k1\n  b: al:pw\n")
        ),
        UserCredentials.from_file(
            write(tmp_path, "u.json", '{"alice@example.com": {"key": "k1", "b": "al:pw"}}')
        ),
        UserCredentials.from_file(
            write(tmp_path, "u.toml", '["alice@example.com"]\nkey = "k1"\nb = "al:pw"\n')
        ),
    ]
    monkeypatch.setenv(
        "TOOLSETS_USER_CREDENTIALS", '{"alice@example.com": {"key": "k1", "b": "al:pw"}}'
    )
    sources.append(UserCredentials.from_env())
    for source in sources:
        assert await source.credential(alice, KEY) == AuthCredential.api_key("k1")
        assert await source.credential(alice, basic) == AuthCredential.basic("al", "pw")
        with pytest.raises(AuthError, match="none for this user"):
            await source.credential(Identity(subject="bob", issuer="i"), KEY)


@pytest.mark.parametrize(
    ("text", "pointer"),
    [
        ("alice: s3cret-value\n", "/alice"),
        ("alice:\n  key: [s3cret-value]\n", "/alice/key"),
        ("alice:\n  key: ''\n", "/alice/key"),
        ("- s3cret-value\n", ""),
    ],
)
def test_a_credentials_file_that_is_wrong_says_where_and_never_quotes_a_value(
    tmp_path: Path, text: str, pointer: str
) -> None:
    with pytest.raises(SpecError) as raised:
        UserCredentials.from_file(write(tmp_path, "u.yaml", text))
    assert raised.value.pointer == pointer
    assert "s3cret" not in str(raised.value)


def test_a_credentials_file_that_does_not_parse_never_quotes_its_text(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as raised:
        UserCredentials.from_file(write(tmp_path, "u.yaml", 'alice: {key: "s3cret-value\n'))
    assert "s3cret" not in str(raised.value)
    assert raised.value.__cause__ is None
    assert raised.value.__suppress_context__
    with pytest.raises(SpecError, match="not set"):
        UserCredentials.from_env("TOOLSETS_NO_SUCH_VARIABLE")


# --- token exchange -------------------------------------------------------------------------


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
    try:
        first = await credentials.credential(user("alice"), config)
        again = await credentials.credential(user("alice"), config)
    finally:
        await credentials.aclose()
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

    try:
        async with anyio.create_task_group() as tg:
            for _ in range(5):
                tg.start_soon(get)
        assert len({c.secret for c in found}) == 1
        made("bob-at")  # the caller's token is bob's now, for the same TokenExchange
        bobs = await credentials.credential(user("bob"), KEY)
    finally:
        await credentials.aclose()
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
        await credentials.aclose()
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
    try:
        with pytest.raises(AuthError) as raised:
            await credentials.credential(user("mallory"), KEY)
        assert "invalid_grant" in str(raised.value)
        assert "mallory-unknown-at" not in str(raised.value)
        with pytest.raises(AuthError, match="invalid_target"):
            await wrong_audience.credential(user("alice"), KEY)
    finally:
        await credentials.aclose()
        await wrong_audience.aclose()


async def test_an_exchange_without_the_callers_token_or_against_a_dead_issuer_is_an_error(
    issuer: OAuthServer,
) -> None:
    credentials = exchange(issuer)("")
    with pytest.raises(AuthError, match="came without one"):
        await credentials.credential(user("alice"), KEY)
    async with recording_server() as gone:
        url = gone.url
    dead = exchanging(url + "/token", subject_token=lambda: "alice-at")
    try:
        with pytest.raises(AuthError, match="could not be obtained by token exchange"):
            await dead.credential(user("alice"), KEY)
    finally:
        await dead.aclose()


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
        try:
            with anyio.fail_after(10), pytest.raises(AuthError, match=r"no answer within 0\.2 s"):
                await slow.credential(user("alice"), KEY)
        finally:
            await slow.aclose()


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
    try:
        token = await credentials.credential(user("bob"), KEY)
    finally:
        await credentials.aclose()
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
        await credentials.aclose()
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
