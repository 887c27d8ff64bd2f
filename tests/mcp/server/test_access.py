"""An access policy over a served server's resources, resource templates and prompts, its
own and a gateway's upstream server's: a caller sees only those its token opens, and
reading, getting, subscribing to or completing another is refused with an error naming
what it lacks, nothing run and nothing sent upstream; a policy of tool rules only leaves
them open."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Literal

import mcp.types as mt
import pytest
from mcp import Client, MCPError
from mcp.shared.exceptions import MCPDeprecationWarning

from tests.mcp.server_helpers import connected, uvicorn_thread
from toolsets import (
    AccessPolicy,
    AccessRule,
    Identity,
    Invocation,
    StaticToolset,
    combined,
    restricted,
    tool,
)
from toolsets.mcp import McpServer, McpToolset, StreamableHttp, prompt, resource, resource_template

pytestmark = pytest.mark.anyio

RULES = [
    AccessRule(resources=["file:///reports/*", "users://{id}/profile"], scopes=["reports:read"]),
    AccessRule(prompts=["admin_*"], roles=["admin"]),
    AccessRule(tools=["wipe"], scopes=["admin"]),
]
ran: list[str] = []


@tool
def wipe() -> str:
    """Wipe everything."""
    return "wiped"


@resource("file:///reports/q1")
def q1() -> str:
    """The first quarter's report."""
    ran.append("q1")
    return "q1 figures"


@resource("file:///readme")
def readme() -> str:
    """Open to all."""
    return "hello"


def profile_of(id: str) -> str:
    """A user's profile."""
    ran.append(f"profile {id}")
    return f"profile of {id}"


profile = resource_template("users://{id}/profile")(profile_of)


@prompt
def admin_reset(target: Literal["cache", "index"]) -> str:
    """Reset something."""
    ran.append("admin_reset")
    return f"reset the {target}"


@prompt
def hello() -> str:
    """Say hello."""
    return "hello"


def caller(scopes: set[str] = frozenset(), roles: tuple[str, ...] = ()) -> Invocation:  # type: ignore[assignment]
    identity = Identity(
        subject="bob",
        issuer="https://login.example",
        scopes=frozenset(scopes),
        claims={"roles": list(roles)},
    )
    return Invocation(identity=identity, scopes=identity.scopes)


def own_server(invocation: Invocation, policy: AccessPolicy | None = None) -> McpServer:
    tools = StaticToolset([wipe])
    return McpServer(
        restricted(tools, policy or AccessPolicy(RULES)),
        resources=[q1, readme, profile],
        prompts=[admin_reset, hello],
        invocation=invocation,
    )


async def listed(client: Client) -> tuple[list[str], list[str], list[str]]:
    resources = [str(r.uri) for r in (await client.list_resources()).resources]
    templates = [
        t.uri_template for t in (await client.list_resource_templates()).resource_templates
    ]
    prompts = [p.name for p in (await client.list_prompts()).prompts]
    return resources, templates, prompts


@pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
async def test_a_caller_without_access_neither_sees_nor_reads_nor_gets_the_items(
    mode: str,
) -> None:
    ran.clear()
    async with connected(own_server(caller()), mode) as client:
        seen = await listed(client)
        with pytest.raises(MCPError) as read:
            await client.read_resource("file:///reports/q1")
        with pytest.raises(MCPError) as templated:
            await client.read_resource("users://7/profile")
        with pytest.raises(MCPError) as got:
            await client.get_prompt("admin_reset", {"target": "cache"})
        with pytest.raises(MCPError) as completed:
            await client.complete(
                mt.PromptReference(type="ref/prompt", name="admin_reset"),
                {"name": "target", "value": "c"},
            )
        open_read = await client.read_resource("file:///readme")
    assert seen == (["file:///readme"], [], ["hello"])
    assert read.value.code == mt.INVALID_PARAMS
    assert read.value.data == {"uri": "file:///reports/q1", "missing_scopes": ["reports:read"]}
    assert "needs the scope reports:read" in read.value.error.message
    assert templated.value.data["missing_scopes"] == ["reports:read"]
    assert got.value.data == {"name": "admin_reset", "missing_roles": ["admin"]}
    assert "needs the role admin" in got.value.error.message
    assert completed.value.data["missing_roles"] == ["admin"]
    assert ran == []  # nothing the caller may not use ran
    assert open_read.contents[0].text == "hello"  # type: ignore[union-attr]


async def test_a_caller_with_the_scope_and_role_sees_reads_and_gets_them() -> None:
    ran.clear()
    invocation = caller({"reports:read"}, ("admin",))
    async with connected(own_server(invocation), "legacy") as client:
        seen = await listed(client)
        read = await client.read_resource("users://7/profile")
        got = await client.get_prompt("admin_reset", {"target": "cache"})
        completed = await client.complete(
            mt.PromptReference(type="ref/prompt", name="admin_reset"),
            {"name": "target", "value": "c"},
        )
    assert seen == (
        ["file:///reports/q1", "file:///readme"],
        ["users://{id}/profile"],
        ["admin_reset", "hello"],
    )
    assert read.contents[0].text == "profile of 7"  # type: ignore[union-attr]
    assert got.messages[0].content.text == "reset the cache"  # type: ignore[union-attr]
    assert completed.completion.values == ["cache"]
    assert ran == ["profile 7", "admin_reset"]


async def test_a_policy_of_tool_rules_only_leaves_resources_and_prompts_open() -> None:
    policy = AccessPolicy([AccessRule(tools=["wipe"], scopes=["admin"])], default="deny")
    async with connected(own_server(caller(), policy), "legacy") as client:
        resources, templates, prompts = await listed(client)
        read = await client.read_resource("file:///reports/q1")
        tools = (await client.list_tools()).tools
    assert (len(resources), len(templates), len(prompts)) == (2, 1, 2)
    assert read.contents
    assert tools == []


async def test_a_resource_rule_with_default_deny_closes_the_resources_no_rule_selects() -> None:
    policy = AccessPolicy([AccessRule(resources=["file:///readme"], scopes=[])], default="deny")
    async with connected(own_server(caller(), policy), "legacy") as client:
        resources, templates, prompts = await listed(client)
        with pytest.raises(MCPError) as refused:
            await client.read_resource("file:///reports/q1")
    assert (resources, templates) == (["file:///readme"], [])
    assert prompts == ["admin_reset", "hello"]  # no prompt rule: prompts stay open
    assert refused.value.data == {"uri": "file:///reports/q1", "denied_by_default": True}


@asynccontextmanager
async def upstream() -> AsyncIterator[McpToolset]:
    """An upstream MCP server over HTTP on 127.0.0.1 serving the resources and prompts
    (which record when they run), as an `McpToolset`."""

    def app() -> object:
        server = McpServer([], resources=[q1, readme, profile], prompts=[admin_reset, hello])
        return server.http_app(stateless=True)

    async with uvicorn_thread(app) as url:
        yield McpToolset(StreamableHttp(url=url))


async def test_a_gateways_upstream_items_are_guarded_and_nothing_refused_is_sent() -> None:
    ran.clear()
    async with upstream() as source:
        guarded = McpServer(
            combined(restricted(source, AccessPolicy(RULES)), StaticToolset([wipe])),
            invocation=caller(),
        )
        async with connected(guarded, "legacy") as client:
            seen = await listed(client)
            with pytest.raises(MCPError) as read:
                await client.read_resource("users://9/profile")
            with pytest.raises(MCPError) as got:
                await client.get_prompt("admin_reset", {"target": "index"})
            with pytest.raises(MCPError) as completed:
                await client.complete(
                    mt.ResourceTemplateReference(type="ref/resource", uri="users://{id}/profile"),
                    {"name": "id", "value": "1"},
                )
            with pytest.raises(MCPError) as subscribed, pytest.warns(MCPDeprecationWarning):
                await client.subscribe_resource("file:///reports/q1")
            allowed = await client.read_resource("file:///readme")
    assert seen == (["file:///readme"], [], ["hello"])
    for refused in (read, got, completed, subscribed):
        assert refused.value.code == mt.INVALID_PARAMS
    assert read.value.data["missing_scopes"] == ["reports:read"]
    assert got.value.data["missing_roles"] == ["admin"]
    assert ran == []  # the upstream server was asked for none of them
    assert allowed.contents[0].text == "hello"  # type: ignore[union-attr]
