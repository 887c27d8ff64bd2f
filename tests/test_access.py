"""Per-tool access (`AccessPolicy`, `restricted`): which tools a caller is offered and may
call, from the scopes of its invocation and the roles and groups of its identity's
claims; a refused call is an error result naming what the caller lacks, and nothing
runs. Policies written in Python and read from YAML, JSON and TOML files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.openapi.helpers import recording_server
from toolsets import (
    AccessPolicy,
    AccessRule,
    Identity,
    Invocation,
    SpecError,
    StaticToolset,
    ToolContext,
    ToolDefinitionError,
    prefixed,
    restricted,
    tool,
)
from toolsets._invoke import DEFAULT_TOOL_TIMEOUT, Done, invoke
from toolsets.openapi import OpenApiToolset

pytestmark = pytest.mark.anyio

ran: list[str] = []


@tool(read_only=True)
def list_pets() -> list[str]:
    """List the pets."""
    ran.append("list_pets")
    return ["rex"]


@tool
def delete_pet(name: str) -> str:
    """Delete a pet."""
    ran.append("delete_pet")
    return f"deleted {name}"


@tool
def audit_log() -> str:
    """Read the audit log."""
    ran.append("audit_log")
    return "nothing happened"


def caller(scopes: set[str] = frozenset(), **claims: Any) -> ToolContext:  # type: ignore[assignment]
    identity = Identity(subject="alice", issuer="https://id.example", claims=claims)
    return ToolContext(Invocation(scopes=frozenset(scopes), identity=identity))


def pets(policy: AccessPolicy) -> Any:
    return restricted(StaticToolset([list_pets, delete_pet, audit_log]), policy)


POLICY = AccessPolicy(
    [
        AccessRule(tools=["list_*"], scopes=["pets:read"]),
        AccessRule(tools=["delete_*"], scopes=["pets:read", "pets:write"]),
        AccessRule(tools=["audit_*"], roles=["auditor", "admin"]),
    ]
)


async def offered(toolset: Any, ctx: ToolContext) -> list[str]:
    return [t.name for t in await toolset.list_tools(ctx) if t.declaration() is not None]


async def call(toolset: Any, tool_name: str, ctx: ToolContext, **args: Any) -> Any:
    found = {t.name: t for t in await toolset.list_tools(ctx)}[tool_name]
    ctx.function_call_id = "call-1"
    outcome = await invoke(
        found, args, ctx, default_timeout=DEFAULT_TOOL_TIMEOUT, scopes=ctx.scopes
    )
    assert isinstance(outcome, Done)
    return outcome.result


async def test_a_caller_is_offered_only_the_tools_its_scopes_and_roles_open() -> None:
    toolset = pets(POLICY)
    assert await offered(toolset, caller()) == []
    assert await offered(toolset, caller({"pets:read"})) == ["list_pets"]
    assert await offered(toolset, caller({"pets:read", "pets:write"})) == [
        "list_pets",
        "delete_pet",
    ]
    assert await offered(toolset, caller(roles=["admin"])) == ["audit_log"]


async def test_a_call_lacking_a_scope_is_refused_naming_it_and_nothing_runs() -> None:
    ran.clear()
    toolset = pets(POLICY)
    refused = await call(toolset, "delete_pet", caller({"pets:read"}), name="rex")
    assert refused["missing_scopes"] == ["pets:write"]
    assert "pets:write" in refused["error"]
    assert "'delete_pet'" in refused["error"]
    assert ran == []
    allowed = await call(toolset, "delete_pet", caller({"pets:read", "pets:write"}), name="rex")
    assert allowed == "deleted rex"
    assert ran == ["delete_pet"]


async def test_a_call_lacking_a_role_names_the_roles_of_which_one_would_do() -> None:
    ran.clear()
    refused = await call(pets(POLICY), "audit_log", caller(roles=["viewer"]))
    assert refused["missing_roles"] == ["admin", "auditor"]
    assert "one of the roles admin, auditor" in refused["error"]
    assert ran == []


@pytest.mark.parametrize(
    "claims",
    [
        {"roles": ["auditor"]},
        {"roles": "viewer auditor"},
        {"roles": "viewer,auditor"},
        {"realm_access": {"roles": ["auditor"]}},
        {"https://pets.example/roles": ["auditor"]},
    ],
    ids=["list", "spaces", "commas", "dotted-path", "namespaced-claim"],
)
async def test_roles_are_read_from_the_claim_the_policy_names_in_any_usual_shape(
    claims: dict[str, Any],
) -> None:
    claim = next(iter(claims))
    name = "realm_access.roles" if claim == "realm_access" else claim
    policy = AccessPolicy([AccessRule(tools=["audit_log"], roles=["auditor"])], roles_claim=name)
    identity = Identity(subject="a", issuer="i", claims=claims)
    ctx = ToolContext(Invocation(identity=identity))
    assert await offered(pets(policy), ctx) == ["list_pets", "delete_pet", "audit_log"]


async def test_groups_come_from_their_own_claim() -> None:
    policy = AccessPolicy([AccessRule(tools=["audit_log"], groups=["sec"])], groups_claim="grp")
    toolset = pets(policy)
    assert "audit_log" in await offered(toolset, caller(grp=["sec"]))
    refused = await call(toolset, "audit_log", caller(groups=["sec"]))
    assert refused["missing_groups"] == ["sec"]


async def test_without_an_identity_a_tool_needing_a_role_is_refused() -> None:
    ran.clear()
    ctx = ToolContext(Invocation(scopes=frozenset({"pets:read"})))
    assert await offered(pets(POLICY), ctx) == ["list_pets"]
    assert "missing_roles" in await call(pets(POLICY), "audit_log", ctx)
    assert ran == []


async def test_every_rule_selecting_a_tool_applies_so_a_rule_never_opens_one_up() -> None:
    policy = AccessPolicy(
        [AccessRule(scopes=["pets"]), AccessRule(tools=["list_pets"], roles=["vet"])]
    )
    toolset = pets(policy)
    assert await offered(toolset, caller({"pets"})) == ["delete_pet", "audit_log"]
    assert await offered(toolset, caller(roles=["vet"])) == []
    refused = await call(toolset, "list_pets", caller())
    assert refused["missing_scopes"] == ["pets"]
    assert refused["missing_roles"] == ["vet"]
    assert "needs the scope pets and the role vet" in refused["error"]


async def test_a_deny_by_default_policy_refuses_every_tool_no_rule_selects() -> None:
    ran.clear()
    policy = AccessPolicy([AccessRule(tools=["list_pets"])], default="deny")
    toolset = pets(policy)
    assert await offered(toolset, caller()) == ["list_pets"]
    refused = await call(toolset, "audit_log", caller({"anything"}, roles=["admin"]))
    assert refused["denied_by_default"] is True
    assert ran == []


async def test_the_policys_scopes_are_part_of_the_tools_required_scopes() -> None:
    listed = await pets(POLICY).list_tools(caller())
    assert {t.name: t.required_scopes for t in listed} == {
        "list_pets": frozenset({"pets:read"}),
        "delete_pet": frozenset({"pets:read", "pets:write"}),
        "audit_log": frozenset(),
    }


async def test_names_are_matched_as_the_wrapped_toolset_offers_them() -> None:
    policy = AccessPolicy([AccessRule(tools=["shop_delete_*"], scopes=["w"])])
    toolset = restricted(prefixed(StaticToolset([list_pets, delete_pet]), "shop"), policy)
    assert await offered(toolset, caller()) == ["shop_list_pets"]
    refused = await call(toolset, "shop_delete_pet", caller(), name="rex")
    assert "'shop_delete_pet'" in refused["error"]


async def test_a_refused_tool_that_is_run_directly_still_refuses() -> None:
    ran.clear()
    listed = {t.name: t for t in await pets(POLICY).list_tools(caller())}
    result = await listed["delete_pet"].run({"name": "rex"}, caller())
    assert isinstance(result, dict)
    assert result["missing_scopes"] == ["pets:read", "pets:write"]
    assert ran == []


async def test_one_grants_listing_is_made_once_and_given_again() -> None:
    toolset = pets(POLICY)
    first = await toolset.list_tools(caller({"pets:read"}))
    assert await toolset.list_tools(caller({"pets:read"})) is first
    other = await toolset.list_tools(caller({"pets:read", "pets:write"}))
    assert other is not first
    assert other[0] is first[0]  # the same guard of the same tool
    toolset.wrapped.push(tool(name="list_owners")(lambda: []))
    grown = await toolset.list_tools(caller({"pets:read"}))
    assert [t.name for t in grown] == ["list_pets", "delete_pet", "audit_log", "list_owners"]
    assert grown[:3] == first


SPEC: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "pets", "version": "1"},
    "paths": {
        "/pets": {
            "get": {"operationId": "listPets", "tags": ["Pets"], "responses": {"200": {}}},
            "post": {"operationId": "addPet", "tags": ["pets"], "responses": {"200": {}}},
        },
        "/admin/stats": {
            "get": {"operationId": "stats", "tags": ["admin"], "responses": {"200": {}}}
        },
    },
}


@pytest.mark.parametrize(
    ("rule", "refused"),
    [
        (AccessRule(tags=["PETS"], scopes=["s"]), ["listPets", "addPet"]),
        (AccessRule(methods=["post", "PUT"], scopes=["s"]), ["addPet"]),
        (AccessRule(paths=["/admin/*"], scopes=["s"]), ["stats"]),
        (AccessRule(tags=["pets"], methods=["GET"], scopes=["s"]), ["listPets"]),
        (AccessRule(tools=["list*", "stats"], scopes=["s"]), ["listPets", "stats"]),
    ],
    ids=["tag-any-case", "method", "path-glob", "tag-and-method", "names"],
)
async def test_rules_select_operations_by_tag_method_path_and_name(
    rule: AccessRule, refused: list[str]
) -> None:
    async with recording_server() as api:
        spec = OpenApiToolset(SPEC, base_url=api.url)
        toolset = restricted(spec, AccessPolicy([rule]))
        listed = await offered(toolset, caller())
        assert sorted(listed) == sorted({"listPets", "addPet", "stats"} - set(refused))
        for name in refused:
            result = await call(toolset, name, caller())
            assert result["missing_scopes"] == ["s"]
        assert api.requests == []  # nothing sent for a refused call


def test_a_rule_refuses_a_single_string_and_a_method_that_is_not_one() -> None:
    with pytest.raises(ToolDefinitionError) as raised:
        AccessRule(scopes="pets:read")  # type: ignore[arg-type]
    assert raised.value.field == "scopes"
    with pytest.raises(ToolDefinitionError) as raised:
        AccessRule(methods=["FETCH"])
    assert raised.value.field == "methods"
    with pytest.raises(ToolDefinitionError) as raised:
        AccessPolicy([AccessRule()], default="maybe")  # type: ignore[arg-type]
    assert raised.value.field == "default"


def test_the_claims_a_policy_reads_are_named_for_the_authorization_to_keep() -> None:
    policy = AccessPolicy(roles_claim="realm_access.roles", groups_claim="grp")
    assert policy.claims == {"realm_access.roles", "realm_access", "grp"}


POLICY_YAML = """\
default: deny
roles_claim: realm_access.roles
rules:
  - tools: [list_*]
    scopes: pets:read
  - methods: [DELETE]
    roles: [admin]
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_policy_is_read_from_yaml_json_and_toml(tmp_path: Path) -> None:
    from_yaml = AccessPolicy.from_file(write(tmp_path, "p.yaml", POLICY_YAML))
    assert from_yaml.default == "deny"
    assert from_yaml.roles_claim == "realm_access.roles"
    assert from_yaml.rules == (
        AccessRule(tools=["list_*"], scopes=["pets:read"]),
        AccessRule(methods=["DELETE"], roles=["admin"]),
    )
    from_json = AccessPolicy.from_file(
        write(tmp_path, "p.json", '{"rules": [{"tags": ["admin"], "groups": ["ops"]}]}')
    )
    assert from_json.rules == (AccessRule(tags=["admin"], groups=["ops"]),)
    assert from_json.default == "allow"
    toml = 'default = "deny"\n[[rules]]\ntools = ["a"]\nscopes = ["x", "y"]\n'
    from_toml = AccessPolicy.from_file(write(tmp_path, "p.toml", toml))
    assert from_toml.rules == (AccessRule(tools=["a"], scopes=["x", "y"]),)


@pytest.mark.parametrize(
    ("text", "pointer", "said"),
    [
        ("rules:\n  - tools: [a]\n    scope: [x]\n", "/rules/0/scope", "line 3: rules.0.scope: "),
        ("default: maybe\n", "/default", "line 1: default: must be 'allow' or 'deny'"),
        ("rules:\n  - methods: [FETCH]\n", "/rules/0/methods", "line 2: "),
        ("rules:\n  - {}\n", "/rules/0", "an empty rule"),
        ("rules:\n  - tools: [a]\n    tools: [b]\n", "/rules/0/tools", "line 3: 'tools' is given"),
        ("rules:\n  - tools: []\n", "/rules/0/tools", "non-empty list"),
        ("rules:\n  - tools: [1]\n", "/rules/0/tools/0", "1 is not a non-empty string"),
        ("rules: {tools: [a]}\n", "/rules", "must be a list of rules"),
        ("rule:\n  - tools: [a]\n", "/rule", "did you mean 'rules'?"),
        ("- tools: [a]\n", "", "must be a mapping"),
    ],
    ids=[
        "unknown-key",
        "default",
        "method",
        "empty-rule",
        "duplicate-key",
        "empty-list",
        "not-a-string",
        "rules-not-a-list",
        "misspelt-top-key",
        "not-a-mapping",
    ],
)
def test_a_policy_file_that_is_wrong_names_the_key_and_its_line(
    tmp_path: Path, text: str, pointer: str, said: str
) -> None:
    path = write(tmp_path, "policy.yaml", text)
    with pytest.raises(SpecError) as raised:
        AccessPolicy.from_file(path)
    assert raised.value.pointer == pointer
    assert raised.value.source == str(path)
    assert said in str(raised.value)


def test_a_toml_policy_that_is_wrong_names_the_key(tmp_path: Path) -> None:
    path = write(tmp_path, "policy.toml", '[[rules]]\ntools = ["a"]\nrole = ["x"]\n')
    with pytest.raises(SpecError) as raised:
        AccessPolicy.from_file(path)
    assert raised.value.pointer == "/rules/0/role"
    assert "did you mean 'roles'?" in str(raised.value)


def test_a_policy_file_that_is_not_there_or_not_parsable_is_a_spec_error(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="cannot read"):
        AccessPolicy.from_file(tmp_path / "missing.yaml")
    with pytest.raises(SpecError, match="not YAML"):
        AccessPolicy.from_file(write(tmp_path, "bad.yaml", "rules: [\n"))
    with pytest.raises(SpecError, match="not TOML"):
        AccessPolicy.from_file(write(tmp_path, "bad.toml", "rules = [\n"))
    with pytest.raises(SpecError, match="empty"):
        AccessPolicy.from_file(write(tmp_path, "empty.yaml", "# nothing\n"))


async def test_beneath_a_search_a_caller_finds_only_its_tools_and_one_called_by_name_refuses() -> (
    None
):
    from toolsets import searchable

    ran.clear()
    toolset = searchable(pets(POLICY))
    ctx = caller({"pets:read"})
    search = {t.name: t for t in await toolset.list_tools(ctx)}["search_tools"]
    ctx.function_call_id = "search-1"
    found = await invoke(
        search, {"query": "delete a pet"}, ctx, default_timeout=DEFAULT_TOOL_TIMEOUT
    )
    assert isinstance(found, Done)
    assert "delete_pet" not in str(found.result)
    refused = await call(toolset, "delete_pet", caller({"pets:read"}), name="rex")
    assert refused["missing_scopes"] == ["pets:write"]
    assert ran == []


async def test_beneath_code_mode_a_program_cannot_call_a_tool_its_caller_may_not_use() -> None:
    from toolsets import code_mode

    ran.clear()
    toolset = code_mode(pets(POLICY))
    result = await call(
        toolset, "run_code", caller({"pets:read"}), code="await tools.delete_pet(name='rex')"
    )
    assert "needs the scope pets:write" in result["error"]  # the refusal, in the program
    assert ran == []
    listed = await call(toolset, "run_code", caller({"pets:read"}), code="await tools.list_pets()")
    assert "rex" in str(listed)
    assert ran == ["list_pets"]


def test_a_policy_is_made_from_its_plain_form_and_a_wrong_one_names_the_key() -> None:
    policy = AccessPolicy.from_dict({"default": "deny", "rules": [{"tools": "list_*"}]})
    assert policy.rules == (AccessRule(tools=["list_*"]),)
    with pytest.raises(SpecError) as raised:
        AccessPolicy.from_dict({"rules": [{"tools": ["a"], "roles": ""}]}, source="settings")
    assert raised.value.pointer == "/rules/0/roles"
    assert raised.value.source == "settings"


@tool
def echo() -> str:
    """Echo."""
    return ""


def test_resource_and_prompt_rules_select_by_uri_glob_template_and_name_never_a_tool() -> None:
    rule = AccessRule(resources=["file:///reports/*", "users://{id}/profile"], scopes=["r"])
    assert rule.selects_resource("file:///reports/2024/q1")
    assert rule.selects_resource("users://{id}/profile")  # the template, as listed
    assert rule.selects_resource("users://42/profile")  # a URI read through it
    assert not rule.selects_resource("users://42/settings")
    assert not rule.selects(echo)
    prompts = AccessRule(prompts=["admin_*"], roles=["admin"])
    assert prompts.selects_prompt("admin_reset")
    assert not prompts.selects_prompt("hello")
    assert not prompts.selects_resource("admin_reset")
    # A rule with no selector of any kind selects every tool (as before), no resource.
    assert AccessRule(scopes=["s"]).selects_tools
    assert not AccessRule(scopes=["s"]).selects_resource("file:///a")


def test_a_policy_governs_resources_and_prompts_only_when_a_rule_selects_some() -> None:
    grant = (frozenset[str](), frozenset[str](), frozenset[str]())
    tools_only = AccessPolicy([AccessRule(tools=["a"], scopes=["s"])], default="deny")
    assert tools_only.allows_item("resource", "file:///a", grant)
    assert tools_only.allows_item("prompt", "p", grant)
    with_resources = AccessPolicy([AccessRule(resources=["file:///a"])], default="deny")
    assert with_resources.allows_item("resource", "file:///a", grant)
    assert not with_resources.allows_item("resource", "file:///b", grant)
    assert with_resources.allows_item("prompt", "p", grant)  # no prompt rule
    refused = with_resources.item_refusal("resource", "file:///b", ToolContext())
    assert refused is not None
    assert refused["denied_by_default"] is True


def test_a_policy_file_has_resources_and_prompts_rules(tmp_path: Path) -> None:
    text = (
        "rules:\n"
        "  - resources: ['file:///reports/*', 'users://{id}/profile']\n"
        "    scopes: [reports:read]\n"
        "  - prompts: admin_*\n"
        "    roles: [admin]\n"
    )
    from_yaml = AccessPolicy.from_file(write(tmp_path, "p.yaml", text))
    toml = '[[rules]]\nresources = ["file:///reports/*", "users://{id}/profile"]\n'
    toml += 'scopes = ["reports:read"]\n[[rules]]\nprompts = ["admin_*"]\nroles = ["admin"]\n'
    from_toml = AccessPolicy.from_file(write(tmp_path, "p.toml", toml))
    expected = (
        AccessRule(
            resources=["file:///reports/*", "users://{id}/profile"], scopes=["reports:read"]
        ),
        AccessRule(prompts=["admin_*"], roles=["admin"]),
    )
    assert from_yaml.rules == from_toml.rules == expected
    with pytest.raises(SpecError) as raised:
        AccessPolicy.from_file(write(tmp_path, "typo.yaml", "rules:\n  - resource: [a]\n"))
    assert raised.value.pointer == "/rules/0/resource"
    assert "line 2" in str(raised.value)
    assert "did you mean 'resources'?" in str(raised.value)


def test_the_documented_policy_file_is_a_policy(tmp_path: Path) -> None:
    page = Path(__file__).parent.parent / "docs" / "serving" / "auth.md"
    text = page.read_text(encoding="utf-8").split("a policy file such as\n\n```yaml\n", 1)[1]
    text = text.split("```", 1)[0]
    policy = AccessPolicy.from_file(write(tmp_path, "policy.yaml", text))
    assert policy.governs_resources
    assert policy.governs_prompts
    assert len(policy.rules) == 4
