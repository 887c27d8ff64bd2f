"""What the adapters share: asking the user's callbacks off the event loop, and reading
the credentials a user gave (strings included)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from toolsets import AuthConfig, AuthCredential, AuthError, StaticToolset, ToolDefinitionError
from toolsets._consumers import (
    ask,
    check_credentials,
    given_credential,
    lookup_credential,
    toolset_of,
)

pytestmark = pytest.mark.anyio


def config(scheme: dict[str, Any], scopes: tuple[str, ...] = ()) -> AuthConfig:
    return AuthConfig(scheme_name="auth", scheme=scheme, scopes=scopes)


@pytest.mark.parametrize(
    ("scheme", "kind"),
    [
        ({"type": "apiKey", "in": "header", "name": "X-Key"}, "api_key"),
        ({"type": "http", "scheme": "Bearer"}, "bearer"),
        ({"type": "oauth2", "flows": {}}, "oauth2"),
        ({"type": "openIdConnect", "openIdConnectUrl": "https://id.example"}, "oauth2"),
    ],
)
def test_a_string_becomes_the_schemes_kind_of_credential(scheme: dict[str, Any], kind: str) -> None:
    found = given_credential({"auth": "s3cret"}, config(scheme))
    assert found is not None
    assert (found.kind, found.secret) == (kind, "s3cret")


def test_a_string_for_basic_auth_is_refused_naming_the_scheme_not_the_value() -> None:
    with pytest.raises(AuthError) as refused:
        given_credential({"auth": "s3cret"}, config({"type": "http", "scheme": "basic"}))
    assert refused.value.scheme_name == "auth"
    assert "s3cret" not in str(refused.value)


def test_the_configs_key_with_its_scopes_wins_over_the_scheme_name() -> None:
    wanted = config({"type": "oauth2"}, ("repo",))
    narrow, wide = AuthCredential.oauth2("narrow"), AuthCredential.oauth2("wide")
    assert given_credential({"auth": wide, wanted.key: narrow}, wanted) is narrow
    assert given_credential({"auth": wide}, wanted) is wide
    assert given_credential({"other": wide}, wanted) is None


def test_credentials_no_call_could_use_are_refused_up_front() -> None:
    check_credentials(None)
    check_credentials({"auth": "k", "other": AuthCredential.api_key("k")})
    check_credentials(lambda config: None)
    for bad in ({"auth": 42}, ["k"]):
        with pytest.raises(ToolDefinitionError) as refused:
            check_credentials(bad)
        assert refused.value.field == "credentials"


async def test_a_sync_callback_runs_off_the_event_loops_thread_and_an_async_one_on_it() -> None:
    loop_thread = threading.get_ident()

    def sync(x: int) -> tuple[int, int]:
        return x + 1, threading.get_ident()

    async def asynchronous(x: int) -> tuple[int, int]:
        return x + 2, threading.get_ident()

    answer, thread = await ask(sync, 1)
    assert answer == 2
    assert thread != loop_thread
    assert await ask(asynchronous, 1) == (3, loop_thread)


async def test_a_credentials_function_may_answer_the_token_as_a_string_and_nothing_else() -> None:
    bearer = config({"type": "http", "scheme": "bearer"})
    found = await lookup_credential(lambda ctx, cfg: "t0k", bearer, "ctx")
    assert found is not None
    assert (found.kind, found.secret) == ("bearer", "t0k")
    assert await lookup_credential(lambda cfg: None, bearer) is None
    assert await lookup_credential(None, bearer) is None
    with pytest.raises(AuthError) as refused:
        await lookup_credential(lambda cfg: 42, bearer)
    assert refused.value.scheme_name == "auth"


def test_every_adapter_takes_a_toolset_or_tools_and_refuses_anything_else_naming_it() -> None:
    def ping() -> str:
        """Ping."""
        return "pong"

    static = StaticToolset([ping])
    assert toolset_of(static) is static
    assert isinstance(toolset_of([ping]), StaticToolset)
    for bad in (42, "ping", {"ping": ping}):
        with pytest.raises(ToolDefinitionError) as refused:
            toolset_of(bad)
        assert refused.value.field == "toolset"
    with pytest.raises(ToolDefinitionError):
        toolset_of(["not a tool"])
