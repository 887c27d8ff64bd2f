"""Token exchanges the issuer refuses, remembered for a while, against the real OpenID
provider (npm ``oidc-provider``, which counts the requests to its token endpoint and can
answer 503 there): a refused user's calls, however many and however concurrent, cost one
request to the issuer and one WARNING per refusal period; another token of the user,
`TokenExchange.forget`, or the period's end asks again; the period never outlasts the
caller's own token; a 503 (the issuer failing, not refusing) is asked again by the next
call."""

from __future__ import annotations

import logging
import time
from typing import Any

import anyio
import pytest

from tests.mcp.helpers import eventually
from tests.mcp.server.helpers import KEY
from tests.mcp.server.oidc import SECRETS, OpenIdProvider
from toolsets import AuthCredential, AuthError, Identity
from toolsets.mcp import TokenExchange

pytestmark = pytest.mark.anyio

ELSEWHERE = "https://elsewhere.example"
"""An audience the provider gives no token for (not on this machine): invalid_target."""
HERE = "http://127.0.0.1:9/api"
"""An audience it gives tokens for."""


class Caller:
    """A `TokenExchange` with the provider as the ``exchanger`` client, and the caller's
    token it sends (``token``, changed at will)."""

    def __init__(self, provider: OpenIdProvider, audience: str, **options: Any) -> None:
        self.provider = provider
        self.token = provider.sign({"sub": "carol"})
        self.exchange = TokenExchange(
            token_endpoint=provider.token_endpoint,
            audience=audience,
            client_id="exchanger",
            client_secret=SECRETS["exchanger"],
            subject_token=lambda: self.token,
            **options,
        )
        self.identity = Identity(subject="carol", issuer=provider.issuer)

    async def call(self) -> AuthCredential | AuthError:
        with anyio.fail_after(20):
            try:
                return await self.exchange(self.identity, KEY)
            except AuthError as exc:
                return exc


async def token_requests(provider: OpenIdProvider) -> int:
    return int((await provider.state())["token_requests"])


def warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "toolsets.mcp.server" and r.levelno == logging.WARNING
    ]


async def test_a_refused_user_costs_one_issuer_request_and_one_warning_however_many_calls(
    openid_provider: OpenIdProvider, caplog: pytest.LogCaptureFixture
) -> None:
    caller = Caller(openid_provider, ELSEWHERE)
    before = await token_requests(openid_provider)
    caplog.set_level(logging.DEBUG, logger="toolsets.mcp.server")
    answers = [await caller.call() for _ in range(10)]
    async with anyio.create_task_group() as tg:
        for _ in range(10):

            async def one() -> None:
                answers.append(await caller.call())

            tg.start_soon(one)
    assert await token_requests(openid_provider) == before + 1
    assert all(isinstance(each, AuthError) for each in answers)
    assert {str(each) for each in answers} == {str(answers[0])}
    assert "invalid_target" in str(answers[0])
    assert "could not be obtained by token exchange" in str(answers[0])
    (warned,) = warnings(caplog)
    assert "refused (the answer for 30 s)" in warned
    assert caller.token not in caplog.text
    # Another token of the same user is asked about anew; forget asks again too.
    caller.token = openid_provider.sign({"sub": "carol"})
    assert isinstance(await caller.call(), AuthError)
    assert isinstance(await caller.call(), AuthError)
    caller.exchange.forget(caller.identity, KEY)
    assert isinstance(await caller.call(), AuthError)
    assert await token_requests(openid_provider) == before + 3
    assert len(warnings(caplog)) == 3


async def test_a_refusal_is_asked_again_after_its_period(openid_provider: OpenIdProvider) -> None:
    caller = Caller(openid_provider, ELSEWHERE, refusal_period=0.3)
    before = await token_requests(openid_provider)
    assert isinstance(await caller.call(), AuthError)

    async def asked_again() -> bool:
        assert isinstance(await caller.call(), AuthError)
        return await token_requests(openid_provider) > before + 1

    await eventually(asked_again, within=10)
    assert await token_requests(openid_provider) == before + 2


async def test_a_refusal_is_not_remembered_past_the_callers_own_token(
    openid_provider: OpenIdProvider,
) -> None:
    caller = Caller(openid_provider, ELSEWHERE)
    caller.identity = Identity(
        subject="carol", issuer=openid_provider.issuer, expires_at=int(time.time()) - 1
    )
    before = await token_requests(openid_provider)
    for _ in range(3):
        assert isinstance(await caller.call(), AuthError)
    assert await token_requests(openid_provider) == before + 3
    with pytest.raises(ValueError, match="refusal_period"):
        Caller(openid_provider, ELSEWHERE, refusal_period=-1)


async def test_an_issuer_that_fails_is_asked_again_by_the_next_call(
    openid_provider: OpenIdProvider, caplog: pytest.LogCaptureFixture
) -> None:
    caller = Caller(openid_provider, HERE)
    before = await token_requests(openid_provider)
    await openid_provider.state(token_down=1)
    failed = await caller.call()
    assert isinstance(failed, AuthError)
    assert "HTTP 503" in str(failed)
    token = await caller.call()
    assert isinstance(token, AuthCredential)
    assert await token_requests(openid_provider) == before + 2
    assert len(warnings(caplog)) == 1


async def test_calls_waiting_on_an_exchange_that_fails_share_its_error_and_the_next_asks_again(
    openid_provider: OpenIdProvider,
) -> None:
    caller = Caller(openid_provider, HERE)
    before = await token_requests(openid_provider)
    await openid_provider.state(token_down=1)
    answers: list[AuthCredential | AuthError] = []

    async def one() -> None:
        answers.append(await caller.call())

    async with anyio.create_task_group() as tg:
        for _ in range(5):
            tg.start_soon(one)
    assert all(isinstance(each, AuthError) and "HTTP 503" in str(each) for each in answers)
    assert await token_requests(openid_provider) == before + 1
    assert isinstance(await caller.call(), AuthCredential)
    assert await token_requests(openid_provider) == before + 2
