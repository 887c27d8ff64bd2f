"""httpx2's errors mapped once (`toolsets._http.map_http_errors`), at every OpenAPI site:
a call, a spec fetch, OpenID Connect discovery, a token request."""

from __future__ import annotations

import inspect
import socket
from collections.abc import Iterator
from typing import Any

import anyio
import httpx2
import pytest

from tests.openapi.helpers import ONE_GET, client_credentials, recording_server, secured
from toolsets import ConnectionError, SpecError, ToolContext
from toolsets._http import HTTP_ERRORS, is_json, is_text, map_http_errors
from toolsets._urls import safe_url
from toolsets.openapi import ClientCredentials, OpenApiToolset

pytestmark = pytest.mark.anyio

SECRET = "s3cret-value-42"


def request_errors() -> list[type[httpx2.RequestError]]:
    """Every request error httpx2 exports."""
    return [
        value
        for _, value in inspect.getmembers(httpx2, inspect.isclass)
        if issubclass(value, httpx2.RequestError)
    ]


@pytest.fixture
def refused_port() -> Iterator[int]:
    """A bound socket that does not listen: connections to it are refused."""
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        yield closed.getsockname()[1]


def test_every_request_error_httpx2_defines_has_its_own_row() -> None:
    mapped = [kind for kind, _ in HTTP_ERRORS]
    assert sorted(map(repr, request_errors())) == sorted(map(repr, mapped))


def test_no_row_is_hidden_behind_a_more_general_one_above_it() -> None:
    for position, (kind, _) in enumerate(HTTP_ERRORS):
        above = [earlier for earlier, _ in HTTP_ERRORS[:position]]
        assert not [earlier for earlier in above if issubclass(kind, earlier)], kind


@pytest.mark.parametrize("kind", request_errors(), ids=lambda kind: kind.__name__)
def test_each_request_error_becomes_a_connection_error_naming_the_server(
    kind: type[httpx2.RequestError],
) -> None:
    url = f"https://user:{SECRET}@api.example/v1/items?key={SECRET}#frag"
    with pytest.raises(ConnectionError) as caught, map_http_errors("GET", url, secrets=[SECRET]):
        raise kind(f"failed while sending {SECRET}")
    error = caught.value
    assert isinstance(error.__cause__, kind)
    assert error.target == "https://api.example/v1/items"
    assert kind.__name__ in str(error)
    assert SECRET not in str(error)
    assert SECRET not in repr(error)


def test_errors_that_are_not_transport_failures_pass_through() -> None:
    with pytest.raises(httpx2.InvalidURL), map_http_errors("GET", "https://api.example"):
        raise httpx2.InvalidURL("bad")


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://ann:pw@api.example:8443/a/b?token=x#y", "https://api.example:8443/a/b"),
        ("http://[::1/spec.json?token=x", "http://[::1/spec.json"),
        ("not a url?token=x", "not a url"),
    ],
)
def test_a_url_is_shown_without_user_info_query_or_fragment(url: str, shown: str) -> None:
    assert safe_url(url) == shown


async def test_a_call_to_an_api_that_refuses_connections_raises_connection_error(
    refused_port: int,
) -> None:
    base_url = f"http://127.0.0.1:{refused_port}"
    async with OpenApiToolset(ONE_GET, base_url=base_url) as toolset:
        tool = await toolset.get_tool("get_thing")
        with anyio.fail_after(10), pytest.raises(ConnectionError) as caught:
            await tool.run({"id": "1"}, ToolContext())
    assert caught.value.target == base_url
    assert isinstance(caught.value.__cause__, httpx2.ConnectError)
    assert "GET" in str(caught.value)


async def test_a_body_cut_short_while_it_is_read_raises_connection_error() -> None:
    async def answer(stream: anyio.abc.SocketStream) -> None:
        async with stream:
            await stream.receive()
            await stream.send(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                b'Content-Length: 1000\r\n\r\n{"partial":'
            )

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with listener, anyio.create_task_group() as group:
        group.start_soon(listener.serve, answer)
        async with OpenApiToolset(ONE_GET, base_url=f"http://127.0.0.1:{port}") as toolset:
            tool = await toolset.get_tool("get_thing")
            with anyio.fail_after(10), pytest.raises(ConnectionError) as caught:
                await tool.run({"id": "1"}, ToolContext())
        group.cancel_scope.cancel()
    assert isinstance(caught.value.__cause__, httpx2.RemoteProtocolError)
    assert caught.value.target == f"http://127.0.0.1:{port}"


async def test_a_spec_url_that_cannot_be_reached_names_it_without_its_secrets(
    refused_port: int,
) -> None:
    url = f"http://ann:{SECRET}@127.0.0.1:{refused_port}/spec.json?token={SECRET}"
    with anyio.fail_after(10), pytest.raises(ConnectionError) as caught:
        await OpenApiToolset(url).load()
    assert caught.value.target == f"http://127.0.0.1:{refused_port}/spec.json"
    assert isinstance(caught.value.__cause__, httpx2.ConnectError)
    assert SECRET not in str(caught.value)


async def call_with_client_credentials(spec: dict[str, Any], name: str) -> ConnectionError:
    """The error a call raises whose token cannot be had; nothing reached the API."""
    given = ClientCredentials(client_id="app", client_secret=SECRET)
    async with (
        recording_server() as server,
        OpenApiToolset(spec, base_url=server.url, credentials={name: given}) as toolset,
    ):
        tool = await toolset.get_tool("get_thing")
        with anyio.fail_after(10), pytest.raises(ConnectionError) as caught:
            await tool.run({"id": "1"}, ToolContext())
    assert server.requests == []
    assert SECRET not in str(caught.value)
    return caught.value


async def test_a_token_endpoint_that_cannot_be_reached_raises_connection_error(
    refused_port: int,
) -> None:
    token_url = f"http://127.0.0.1:{refused_port}/token"
    error = await call_with_client_credentials(
        secured("machine", client_credentials(token_url)), "machine"
    )
    assert error.target == token_url
    assert isinstance(error.__cause__, httpx2.ConnectError)


async def test_an_openid_configuration_that_cannot_be_reached_raises_connection_error(
    refused_port: int,
) -> None:
    discovery = f"http://127.0.0.1:{refused_port}/.well-known/openid-configuration"
    scheme = {"type": "openIdConnect", "openIdConnectUrl": discovery}
    error = await call_with_client_credentials(secured("oidc", scheme), "oidc")
    assert error.target == discovery
    assert isinstance(error.__cause__, httpx2.ConnectError)


async def test_a_spec_url_answered_with_an_error_is_named_without_its_secrets() -> None:
    async with recording_server() as server:
        server.status = 404
        url = f"{server.url}/spec.json?token={SECRET}#x"
        with anyio.fail_after(10), pytest.raises(SpecError) as caught:
            await OpenApiToolset(url).load()

    assert caught.value.source == f"{server.url}/spec.json"
    assert SECRET not in str(caught.value)
    assert SECRET not in repr(caught.value)


@pytest.mark.parametrize(
    ("content_type", "json_", "text"),
    [
        ("application/json; charset=utf-8", True, True),
        ("text/json", True, True),
        ("application/problem+json", True, True),
        ("text/plain", False, True),
        ("application/xml", False, True),
        ("image/svg+xml", False, True),
        ("application/octet-stream", False, False),
        ("image/png", False, False),
        ("", False, False),
    ],
)
def test_one_rule_says_what_is_json_and_what_is_text(
    content_type: str, json_: bool, text: bool
) -> None:
    assert (is_json(content_type), is_text(content_type)) == (json_, text)
