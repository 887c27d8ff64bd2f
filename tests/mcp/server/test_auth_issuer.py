"""The authorization server as the resource server finds it (`_auth._issuer`): metadata
discovery in the order the MCP spec gives (issuers with a path, as Keycloak's realms
are), an issuer whose metadata names another refused, only asymmetric signing keys
kept; and the settings `OAuthResourceServer` refuses. The network edge is an
``httpx2.MockTransport``."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import httpx2
import pytest

from tests.mcp.server.oidc import private_jwk, public_jwk
from toolsets.mcp import Introspection, OAuthResourceServer
from toolsets.mcp.server._auth._issuer import Issuer, IssuerUnavailable, KeySet, discovery_urls

pytestmark = pytest.mark.anyio

ISSUER = "https://login.example.com/realms/tools"


def issuer_answering(
    answer: Callable[[httpx2.Request], httpx2.Response], **options: Any
) -> tuple[Issuer, list[str]]:
    asked: list[str] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        asked.append(str(request.url))
        return answer(request)

    client = httpx2.AsyncClient(transport=httpx2.MockTransport(handler))

    async def http() -> httpx2.AsyncClient:
        return client

    return Issuer(OAuthResourceServer(issuer=ISSUER, **options), http), asked


def test_metadata_is_looked_for_where_rfc_8414_then_openid_connect_put_it() -> None:
    assert discovery_urls(ISSUER) == [
        "https://login.example.com/.well-known/oauth-authorization-server/realms/tools",
        "https://login.example.com/.well-known/openid-configuration/realms/tools",
        "https://login.example.com/realms/tools/.well-known/openid-configuration",
    ]
    assert discovery_urls("https://as.example.com/") == [
        "https://as.example.com/.well-known/oauth-authorization-server",
        "https://as.example.com/.well-known/openid-configuration",
    ]


async def test_an_issuer_with_a_path_is_found_at_its_openid_configuration() -> None:
    key = public_jwk(private_jwk("k1"))

    def answer(request: httpx2.Request) -> httpx2.Response:
        if request.url.path == "/realms/tools/.well-known/openid-configuration":
            return httpx2.Response(200, json={"issuer": ISSUER, "jwks_uri": f"{ISSUER}/certs"})
        if request.url.path == "/realms/tools/certs":
            return httpx2.Response(200, json={"keys": [key]})
        return httpx2.Response(404)

    issuer, asked = issuer_answering(answer)
    assert len(await issuer.keys_for("k1", "RS256")) == 1
    assert asked == [*discovery_urls(ISSUER), f"{ISSUER}/certs"]


async def test_metadata_naming_another_issuer_is_not_used() -> None:
    def answer(request: httpx2.Request) -> httpx2.Response:
        body = {"issuer": "https://evil.example.com", "jwks_uri": "https://evil.example.com/k"}
        return httpx2.Response(200, json=body)

    issuer, asked = issuer_answering(answer)
    with pytest.raises(IssuerUnavailable, match="names another issuer"):
        await issuer.keys_for("k1", "RS256")
    assert not [url for url in asked if "evil" in url]


async def test_no_metadata_and_no_answer_in_time_say_why() -> None:
    issuer, _ = issuer_answering(lambda request: httpx2.Response(404))
    with pytest.raises(IssuerUnavailable, match="publishes no authorization server metadata"):
        await issuer.keys_for("k1", "RS256")

    def timeout(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ReadTimeout("timed out", request=request)

    issuer, _ = issuer_answering(timeout, jwks_uri=f"{ISSUER}/certs")
    with pytest.raises(IssuerUnavailable, match="no answer in time"):
        await issuer.keys_for("k1", "RS256")


def test_only_asymmetric_public_signing_keys_are_kept_each_with_its_algorithm() -> None:
    rsa = public_jwk(private_jwk("rsa"))
    without_alg = {k: v for k, v in public_jwk(private_jwk("bare")).items() if k != "alg"}
    keys = KeySet(
        {
            "keys": [
                rsa,
                without_alg,
                {"kty": "oct", "kid": "shared", "k": "c2VjcmV0", "alg": "HS256"},
                private_jwk("private"),  # a private key published by mistake
                {**public_jwk(private_jwk("enc")), "use": "enc"},
                {**public_jwk(private_jwk("nonsense")), "alg": "none"},
            ]
        },
        None,
    )
    assert sorted(kid for kid in keys.by_kid if kid) == ["bare", "rsa"]
    assert keys.find("rsa", "HS256") == []
    assert keys.find("rsa", "PS256") == []  # its alg says RS256
    assert len(keys.find("bare", "RS256")) == 1  # an RSA key without alg: RS256
    assert len(keys.find(None, "RS256")) == 2  # a token naming no key: every one fitting
    configured = KeySet({"keys": [without_alg]}, ("PS256",))
    assert len(configured.find("bare", "PS256")) == 1
    assert configured.find("bare", "RS256") == []


def test_a_key_set_that_is_no_jwks_is_a_fault_of_the_issuer() -> None:
    with pytest.raises(IssuerUnavailable, match="not a JWKS"):
        KeySet({"kty": "RSA"}, None)


@pytest.mark.parametrize(
    ("options", "said"),
    [
        ({"issuer": "login.example.com"}, "absolute http(s) URL"),
        ({"issuer": "https://a.example#x"}, "fragment"),
        ({"issuer": ISSUER, "resource": "/mcp"}, "resource must be an absolute"),
        ({"issuer": ISSUER, "required_scopes": "tools"}, "a list of strings"),
        ({"issuer": ISSUER, "required_scopes": ["a b"]}, "is not a scope"),
        ({"issuer": ISSUER, "required_scopes": ['a"']}, "is not a scope"),
        ({"issuer": ISSUER, "algorithms": ["none"]}, "'none' is refused"),
        ({"issuer": ISSUER, "algorithms": ["HS256"]}, "'HS256' is refused"),
        ({"issuer": ISSUER, "leeway": -1}, "leeway"),
        ({"issuer": ISSUER, "fetch_timeout": 0}, "fetch_timeout"),
        ({"issuer": ISSUER, "refresh_interval": float("inf")}, "refresh_interval"),
    ],
)
def test_settings_that_cannot_work_are_refused_when_made(
    options: dict[str, Any], said: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(said)):
        OAuthResourceServer(**options)


def test_introspection_settings_keep_the_secret_out_of_their_repr() -> None:
    settings = Introspection(client_id="rs", client_secret="s3cr3t-value")
    assert "s3cr3t-value" not in repr(settings)
    assert "s3cr3t-value" not in repr(OAuthResourceServer(issuer=ISSUER, introspection=settings))
    with pytest.raises(ValueError, match="client_id"):
        Introspection(client_id="", client_secret="x")
    assert json.dumps(OAuthResourceServer(issuer=ISSUER).advertised_scopes) == "[]"
