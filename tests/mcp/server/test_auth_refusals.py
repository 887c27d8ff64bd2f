"""Every bad token and bad way of sending one, refused by `McpServer` as a resource
server of a real OpenID provider: each with the right status, a clear message, nothing
run (the tool records its calls) and nothing secret logged. Also the keys' life: a key
rotated in is found with one fetch, an unknown one costs one fetch then 401, the key set
down is 503 until it is back; and introspection that is slow is bounded."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
import jwt
import pytest
from cryptography.hazmat.primitives import serialization

from tests.mcp.server.auth_helpers import (
    Served,
    assert_nothing_secret_logged,
    call,
    challenge,
    modern_call,
    protected,
    serving,
)
from tests.mcp.server.oidc import OpenIdProvider, private_jwk, public_jwk
from toolsets import Invocation
from toolsets.mcp import OAuthResourceServer

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def served(openid_provider: OpenIdProvider) -> Iterator[Served]:
    """A protected server that fetches the keys again on every unknown key id."""
    with serving(openid_provider) as served:
        yield served


@pytest.fixture(scope="module")
def second(openid_provider: OpenIdProvider) -> Iterator[Served]:
    """Another protected server of the same issuer, with the default refresh interval."""
    with serving(openid_provider, refresh_interval=10.0) as served:
        yield served


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def part(value: dict[str, Any]) -> str:
    return b64(json.dumps(value).encode())


async def refused(
    served: Served,
    token: str | None,
    caplog: pytest.LogCaptureFixture,
    *,
    status: int = 401,
    error: str | None = "invalid_token",
    headers: dict[str, str] | None = None,
    params: dict[str, str] | None = None,
) -> str:
    """Send ``token`` to ``served`` (a whoami call): assert it is refused with ``status``
    and ``error``, runs nothing and logs nothing secret; the message."""
    before = len(served.ran)
    with caplog.at_level(logging.DEBUG):
        if params is None:
            response = await call(served.url, token, headers)
        else:
            body, sent = modern_call()
            async with httpx2.AsyncClient(timeout=20) as http:
                response = await http.post(served.url, json=body, headers=sent, params=params)
    assert response.status_code == status, response.text
    assert served.ran[before:] == []
    if token is not None:
        assert_nothing_secret_logged(caplog, token)
    description: str = response.json()["error_description"]
    if status in (400, 401, 403):
        parameters = challenge(response)
        assert parameters.get("error") == error
        assert parameters["resource_metadata"] == served.metadata_url
        assert parameters["error_description"] == description
    return description


def now() -> int:
    return int(time.time())


# --- tokens that are not good -------------------------------------------------------------


async def test_an_expired_token_is_refused(
    served: Served, openid_provider: OpenIdProvider, caplog: pytest.LogCaptureFixture
) -> None:
    token = openid_provider.sign({"aud": served.url, "iat": now() - 600, "exp": now() - 300})
    assert await refused(served, token, caplog) == "the access token has expired"


async def test_a_token_expired_within_the_leeway_is_still_good(
    served: Served, openid_provider: OpenIdProvider
) -> None:
    token = openid_provider.sign({"aud": served.url, "exp": now() - 5})
    assert (await call(served.url, token)).status_code == 200


async def test_a_token_not_valid_yet_is_refused(
    served: Served, openid_provider: OpenIdProvider, caplog: pytest.LogCaptureFixture
) -> None:
    token = openid_provider.sign({"aud": served.url, "nbf": now() + 600, "exp": now() + 900})
    assert "not valid yet" in await refused(served, token, caplog)


async def test_a_token_without_an_expiry_or_an_audience_is_refused(
    served: Served, openid_provider: OpenIdProvider, caplog: pytest.LogCaptureFixture
) -> None:
    token = openid_provider.sign({"aud": served.url, "exp": None})
    assert await refused(served, token, caplog) == "the access token lacks the exp claim"
    token = openid_provider.sign({})
    assert await refused(served, token, caplog) == "the access token lacks the aud claim"


async def test_a_token_of_another_issuer_is_refused_even_signed_with_the_right_key(
    served: Served, openid_provider: OpenIdProvider, caplog: pytest.LogCaptureFixture
) -> None:
    token = openid_provider.sign({"aud": served.url, "iss": "http://127.0.0.1:1"})
    assert "(iss)" in await refused(served, token, caplog)


async def test_a_token_for_another_audience_is_refused(
    served: Served, openid_provider: OpenIdProvider, caplog: pytest.LogCaptureFixture
) -> None:
    token = await openid_provider.token("http://127.0.0.1:1/mcp")
    assert "(aud)" in await refused(served, token, caplog)


async def test_a_token_replayed_to_a_second_served_resource_is_refused(
    served: Served,
    second: Served,
    openid_provider: OpenIdProvider,
    caplog: pytest.LogCaptureFixture,
) -> None:
    token = await openid_provider.token(served.url)
    assert (await call(served.url, token)).status_code == 200
    assert "(aud)" in await refused(second, token, caplog)


async def test_a_token_whose_claims_were_changed_after_signing_is_refused(
    served: Served, openid_provider: OpenIdProvider, caplog: pytest.LogCaptureFixture
) -> None:
    header, payload, signature = (await openid_provider.token(served.url)).split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    forged = ".".join([header, part({**claims, "sub": "admin"}), signature])
    assert "signature does not verify" in await refused(served, forged, caplog)


async def test_a_token_signed_by_another_key_under_the_issuers_key_id_is_refused(
    served: Served, openid_provider: OpenIdProvider, caplog: pytest.LogCaptureFixture
) -> None:
    impostor = {**private_jwk("x"), "kid": openid_provider.key["kid"]}
    token = openid_provider.sign({"aud": served.url}, key=impostor)
    assert "signature does not verify" in await refused(served, token, caplog)


async def test_an_unsigned_token_alg_none_is_refused(
    served: Served, openid_provider: OpenIdProvider, caplog: pytest.LogCaptureFixture
) -> None:
    header = {"alg": "none", "typ": "at+jwt", "kid": openid_provider.key["kid"]}
    claims = jwt.decode(
        openid_provider.sign({"aud": served.url}), options={"verify_signature": False}
    )
    token = f"{part(header)}.{part(claims)}."
    assert "not signed" in await refused(served, token, caplog)


async def test_a_token_signed_hs256_with_the_issuers_public_key_is_refused(
    served: Served, openid_provider: OpenIdProvider, caplog: pytest.LogCaptureFixture
) -> None:
    public = jwt.algorithms.RSAAlgorithm.from_jwk(json.dumps(public_jwk(openid_provider.key)))
    assert not isinstance(public, dict)
    pem = public.public_bytes(  # type: ignore[union-attr]
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    claims = jwt.decode(
        openid_provider.sign({"aud": served.url}), options={"verify_signature": False}
    )
    for secret in (pem, json.dumps(public_jwk(openid_provider.key)).encode()):
        header = {"alg": "HS256", "typ": "at+jwt", "kid": openid_provider.key["kid"]}
        signed = f"{part(header)}.{part(claims)}"
        mac = hmac.new(secret, signed.encode(), hashlib.sha256).digest()
        token = f"{signed}.{b64(mac)}"
        said = await refused(served, token, caplog)
        assert said == "the access token is not signed by a key and algorithm the issuer publishes"


async def test_a_token_that_is_not_an_access_token_by_its_type_is_refused(
    served: Served, openid_provider: OpenIdProvider, caplog: pytest.LogCaptureFixture
) -> None:
    token = openid_provider.sign({"aud": served.url}, headers={"typ": "dpop+jwt"})
    assert "(typ)" in await refused(served, token, caplog)


async def test_an_opaque_token_that_is_not_active_is_refused(
    served: Served, caplog: pytest.LogCaptureFixture
) -> None:
    said = await refused(served, "not-a-token-the-issuer-made-0123456789", caplog)
    assert said == "the authorization server says the access token is not active"


async def test_an_opaque_token_for_another_audience_is_refused(
    served: Served, openid_provider: OpenIdProvider, caplog: pytest.LogCaptureFixture
) -> None:
    token = await openid_provider.token("http://127.0.0.1:1/mcp", client="opaque-service")
    assert "(aud)" in await refused(served, token, caplog)


# --- tokens sent wrongly ---------------------------------------------------------------


async def test_a_token_in_the_query_string_is_refused_even_a_good_one(
    served: Served, openid_provider: OpenIdProvider, caplog: pytest.LogCaptureFixture
) -> None:
    token = await openid_provider.token(served.url)
    said = await refused(
        served,
        None,
        caplog,
        status=400,
        error="invalid_request",
        params={"access_token": token},
    )
    assert "never in the URL" in said
    assert_nothing_secret_logged(caplog, token)


@pytest.mark.parametrize(
    ("header", "status", "error", "said"),
    [
        ("Bearer " + "a" * 10_000, 401, "invalid_token", "longer than 8192"),
        ("Bearer", 400, "invalid_request", "is not 'Bearer <token>'"),
        ("Bearer two tokens", 400, "invalid_request", "is not 'Bearer <token>'"),
        ('Bearer a"b', 400, "invalid_request", "is not 'Bearer <token>'"),
        ("Bearer a,b", 400, "invalid_request", "is not 'Bearer <token>'"),
        ("Basic dXNlcjpwYXNz", 401, None, "takes bearer access tokens"),
    ],
)
async def test_a_malformed_or_huge_authorization_header_is_refused(
    served: Served,
    caplog: pytest.LogCaptureFixture,
    header: str,
    status: int,
    error: str | None,
    said: str,
) -> None:
    sent = {"Authorization": header}
    description = await refused(served, None, caplog, status=status, error=error, headers=sent)
    assert said in description


async def test_two_authorization_headers_are_refused(
    served: Served, openid_provider: OpenIdProvider
) -> None:
    token = await openid_provider.token(served.url)
    body, sent = modern_call()
    headers = [*sent.items(), ("Authorization", f"Bearer {token}"), ("Authorization", "Bearer x")]
    async with httpx2.AsyncClient(timeout=20) as http:
        response = await http.post(served.url, json=body, headers=headers)
    assert response.status_code == 400
    assert response.json()["error_description"] == "send one Authorization header, not several"


async def test_a_request_without_a_token_is_refused_before_its_body_is_read(
    served: Served,
) -> None:
    # Headers promising a body of the largest size served, and none of it sent: the 401
    # comes at once (an unauthorized client cannot make the server take megabytes).
    url = httpx2.URL(served.url)
    assert url.port is not None
    head = (
        f"POST {url.path} HTTP/1.1\r\nHost: 127.0.0.1:{url.port}\r\n"
        "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
        f"Content-Length: {4 * 1024 * 1024}\r\n\r\n"
    )
    with anyio.fail_after(20):
        async with await anyio.connect_tcp("127.0.0.1", url.port) as stream:
            await stream.send(head.encode())
            answer = await stream.receive()
    assert answer.startswith(b"HTTP/1.1 401 "), answer[:200]
    assert b"www-authenticate: Bearer" in answer.lower().replace(b"bearer", b"Bearer")


# --- the issuer's keys -----------------------------------------------------------------


async def test_a_key_rotated_in_is_found_with_one_fetch_of_the_keys(
    served: Served, openid_provider: OpenIdProvider
) -> None:
    assert (await call(served.url, await openid_provider.token(served.url))).status_code == 200
    rotated = private_jwk(f"rotated-in-{time.monotonic_ns()}")  # once per run
    await openid_provider.state(extra_jwks=[public_jwk(rotated)])
    try:
        before = (await openid_provider.state())["jwks_requests"]
        token = openid_provider.sign({"aud": served.url}, key=rotated)
        first, again = await call(served.url, token), await call(served.url, token)
        after = (await openid_provider.state())["jwks_requests"]
    finally:
        await openid_provider.state(extra_jwks=[])
    assert (first.status_code, again.status_code) == (200, 200)
    assert after == before + 1


async def test_a_token_kept_as_good_is_refused_once_the_issuer_withdraws_its_key(
    served: Served, openid_provider: OpenIdProvider, caplog: pytest.LogCaptureFixture
) -> None:
    withdrawn = private_jwk(f"withdrawn-{time.monotonic_ns()}")
    await openid_provider.state(extra_jwks=[public_jwk(withdrawn)])
    try:
        token = openid_provider.sign({"aud": served.url}, key=withdrawn)
        assert (await call(served.url, token)).status_code == 200
        assert (await call(served.url, token)).status_code == 200  # kept: no verification
    finally:
        await openid_provider.state(extra_jwks=[])
    # A token naming a key not known has the keys fetched again: the withdrawn one is gone.
    await refused(served, openid_provider.sign({"aud": served.url}, key=private_jwk("u")), caplog)
    assert "not signed by a key" in await refused(served, token, caplog)


async def test_an_unknown_key_id_costs_one_fetch_of_the_keys_then_401(
    served: Served, openid_provider: OpenIdProvider, caplog: pytest.LogCaptureFixture
) -> None:
    assert (await call(served.url, await openid_provider.token(served.url))).status_code == 200
    before = (await openid_provider.state())["jwks_requests"]
    token = openid_provider.sign({"aud": served.url}, key=private_jwk("unknown-kid"))
    assert "not signed by a key" in await refused(served, token, caplog)
    assert (await openid_provider.state())["jwks_requests"] == before + 1


async def test_unknown_key_ids_fetch_the_keys_at_most_once_per_refresh_interval(
    second: Served, openid_provider: OpenIdProvider, caplog: pytest.LogCaptureFixture
) -> None:
    assert (await call(second.url, await openid_provider.token(second.url))).status_code == 200
    before = (await openid_provider.state())["jwks_requests"]
    for kid in ("made-up-1", "made-up-2", "made-up-3"):
        token = openid_provider.sign({"aud": second.url}, key=private_jwk(kid))
        await refused(second, token, caplog)
    assert (await openid_provider.state())["jwks_requests"] <= before + 1


@asynccontextmanager
async def in_process(
    provider: OpenIdProvider, ran: list[Invocation], **options: Any
) -> AsyncIterator[Served]:
    """A protected server's app in this process and event loop (a new one: no keys
    fetched yet), reached at http://127.0.0.1:8000/mcp."""
    server = protected(provider, ran, **options)
    app = server.http_app(stateless=True)
    assert isinstance(server.auth, OAuthResourceServer)
    async with app.router.lifespan_context(app):
        transport = httpx2.ASGITransport(app=app)

        async def through(request: httpx2.Request) -> httpx2.Response:
            async with httpx2.AsyncClient(transport=transport) as http:
                return await http.send(request)

        served = Served("http://127.0.0.1:8000/mcp", server.auth, ran)
        served.send = through  # type: ignore[attr-defined]
        yield served


async def send(served: Served, token: str) -> httpx2.Response:
    body, sent = modern_call()
    request = httpx2.Request(
        "POST", served.url, json=body, headers={**sent, "Authorization": f"Bearer {token}"}
    )
    with anyio.fail_after(20):
        response: httpx2.Response = await served.send(request)  # type: ignore[attr-defined]
    return response


async def test_the_key_set_down_is_503_without_running_anything_until_it_is_back(
    openid_provider: OpenIdProvider, caplog: pytest.LogCaptureFixture
) -> None:
    ran: list[Invocation] = []
    async with in_process(openid_provider, ran) as served:
        token = await openid_provider.token(served.url)
        await openid_provider.state(jwks_down=True)
        try:
            with caplog.at_level(logging.DEBUG):
                down = await send(served, token)
        finally:
            await openid_provider.state(jwks_down=False)
        back = await send(served, token)
    assert down.status_code == 503
    assert down.headers["retry-after"] == "1"
    assert down.json()["error"] == "temporarily_unavailable"
    assert "answered 503" in caplog.text
    assert_nothing_secret_logged(caplog, token)
    assert back.status_code == 200
    assert len(ran) == 1


async def test_keys_fetched_before_serve_their_tokens_while_the_key_set_is_down(
    openid_provider: OpenIdProvider,
) -> None:
    ran: list[Invocation] = []
    async with in_process(openid_provider, ran, keys_ttl=0.001) as served:
        token = await openid_provider.token(served.url)
        assert (await send(served, token)).status_code == 200
        await openid_provider.state(jwks_down=True)
        try:
            again = await send(served, token)
            unknown = openid_provider.sign({"aud": served.url}, key=private_jwk("new"))
            cannot_tell = await send(served, unknown)
        finally:
            await openid_provider.state(jwks_down=False)
    assert again.status_code == 200  # the keys are old, the issuer is down: still used
    assert cannot_tell.status_code == 503, cannot_tell.text  # a key not known, no way to ask
    assert len(ran) == 2


async def test_slow_introspection_is_bounded_by_the_fetch_timeout(
    openid_provider: OpenIdProvider, caplog: pytest.LogCaptureFixture
) -> None:
    ran: list[Invocation] = []
    async with in_process(openid_provider, ran, fetch_timeout=0.5) as served:
        token = await openid_provider.token(served.url, client="opaque-service")
        await openid_provider.state(introspection_delay_ms=20_000)
        try:
            with caplog.at_level(logging.DEBUG), anyio.fail_after(10):
                slow = await send(served, token)
        finally:
            await openid_provider.state(introspection_delay_ms=0)
        quick = await send(served, token)
    assert slow.status_code == 503
    assert "no answer in time" in caplog.text
    assert_nothing_secret_logged(caplog, token)
    assert quick.status_code == 200
    assert len(ran) == 1
