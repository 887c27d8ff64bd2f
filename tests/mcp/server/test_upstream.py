"""Each user's own upstream credential (`UserCredentials`, `TokenExchange`): a served
OpenAPI tool's request reaches a real HTTP server on 127.0.0.1 with the calling user's
credential, never another user's, never the server's unless it is the fallback the
operator gave, and never the client's own token; a user without one gets an error
result naming the security scheme, and nothing is sent. Identities are set here by the
server's ``invocation`` function, from the bearer token the client sent."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.mcp.server.helpers import KEY, KEY_SCHEME, TOKENS, call_as, identify
from tests.mcp.server_helpers import uvicorn_thread
from tests.openapi.helpers import RecordingServer, recording_server, secured
from toolsets import AuthConfig, AuthCredential, AuthError, Identity, SpecError
from toolsets.mcp import McpServer, UserCredentials
from toolsets.openapi import OpenApiToolset

pytestmark = pytest.mark.anyio


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
