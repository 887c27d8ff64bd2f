"""Per-tool access from the caller's token: an `AccessPolicy` (rules of `AccessRule`)
says which tools a caller may use, and `restricted` applies it to a toolset; a served
`McpServer` applies it to its resources and prompts too.

A rule selects tools (by name, and for OpenAPI operations by tag, HTTP method and path),
resources (by URI glob, or a resource template's URI template) and prompts (by name
glob), and says what a caller must hold to use them: scopes (every one), roles and
groups (one of each list, read from a claim of the caller's token). Every rule that
selects an item applies to it, so adding a rule never opens anything up; a tool no rule
selects is open to everyone, or to nobody with ``default="deny"``. Resources and prompts
are governed only by a policy with a rule for them: a policy of tool rules leaves every
resource and prompt open (as it did before rules could select them), and one with a
``resources`` rule applies its ``default`` to the resources no rule selects (likewise
``prompts``).

Who the caller is comes from the call's context: its scopes are the invocation's
(`ToolContext.scopes`, which a served request's token gives), its roles and groups the
claims of its `Identity` (`ToolContext.identity`; none without one, as over stdio).

A tool the caller may not use is not offered (it is passive, so neither a model nor an
MCP client's ``tools/list`` sees it), yet known by its name: a call to it is refused
before anything else is done, with an error result naming what the caller lacks
(``missing_scopes``, ``missing_roles``, ``missing_groups``, or ``denied_by_default``).
Checked again when it runs, should a wrapper not forward the refusal. A resource or
prompt it may not use is not listed, and reading or getting it anyway is a JSON-RPC
error naming the same (see `McpServer`).

Policies are written in Python or read from a small YAML, JSON or TOML file
(`AccessPolicy.from_file`)::

    default: allow              # or deny: a tool no rule selects is refused
    roles_claim: roles          # the claim holding the caller's roles
    groups_claim: groups        # ... and groups (a dotted path reaches into an object)
    rules:
      - methods: [POST, PUT, PATCH, DELETE]
        scopes: [pets:write]
      - tags: [admin]
        roles: [admin, ops]
      - resources: ["file:///reports/*", "users://{id}/profile"]
        scopes: [reports:read]
      - prompts: ["admin_*"]
        roles: [admin]
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeAlias

from toolsets._access_file import read_policy, read_policy_file
from toolsets._access_rule import AccessRule
from toolsets._context import ToolContext
from toolsets._errors import ToolDefinitionError
from toolsets._json import JsonValue
from toolsets._results import error_result
from toolsets._tool import Tool

__all__ = ["ACCESS_REFUSAL_KEYS", "AccessPolicy", "AccessRule", "Grant", "ItemKind"]

ACCESS_REFUSAL_KEYS = frozenset(
    ("missing_scopes", "missing_roles", "missing_groups", "denied_by_default")
)
"""The fields of an error result refusing a call for want of access (any one is there)."""
ItemKind: TypeAlias = Literal["resource", "prompt"]
"""What `AccessPolicy.allows_item` is asked about: a resource (by URI; a template by its
URI template), or a prompt (by name)."""


@dataclass(frozen=True, slots=True)
class _Needs:
    """What the rules selecting one tool (resource, prompt) ask of its callers."""

    scopes: frozenset[str]
    roles: tuple[tuple[str, ...], ...]
    """One tuple per rule: the caller must hold one role of each."""
    groups: tuple[tuple[str, ...], ...]
    denied: bool
    """No rule selects the tool, and the policy's default is to deny."""


_OPEN = _Needs(scopes=frozenset(), roles=(), groups=(), denied=False)
"""What an item no rule of its kind governs asks: nothing."""
_MAX_ITEM_NEEDS = 4096
"""Resources and prompts whose needs a policy keeps worked out."""


Grant: TypeAlias = tuple[frozenset[str], frozenset[str], frozenset[str]]
"""What a caller holds: scopes, roles, groups."""


class AccessPolicy:
    """Which tools (and a served server's resources and prompts) a caller may use, from
    the scopes and the roles or groups of its token (see the module's docstring);
    applied to a toolset by `restricted`.

    Args:
        rules: The rules; each one that selects a tool (resource, prompt) applies to it.
        roles_claim: The claim of the caller's `Identity` holding its roles: a list of
            strings, or one string of them separated by spaces or commas. A name that
            is not a claim itself is read as a dotted path into one
            (``realm_access.roles``).
        groups_claim: The claim holding its groups, read alike.
        default: What a tool no rule selects is: ``"allow"`` (open to every caller)
            or ``"deny"`` (refused to every caller). So are the resources (prompts) no
            rule selects, when a rule selects some: without, they are all open.

    Raises:
        ToolDefinitionError: a rule that is not an `AccessRule`, an empty claim name, or
            a default that is neither ``"allow"`` nor ``"deny"`` (``field`` names it).
    """

    def __init__(
        self,
        rules: Iterable[AccessRule] = (),
        *,
        roles_claim: str = "roles",
        groups_claim: str = "groups",
        default: Literal["allow", "deny"] = "allow",
    ) -> None:
        self.rules = tuple(rules)
        """The rules, in order."""
        for index, rule in enumerate(self.rules):
            if not isinstance(rule, AccessRule):
                raise ToolDefinitionError(
                    f"AccessPolicy: rule #{index} is a {type(rule).__name__}, not an AccessRule",
                    field="rules",
                )
        for key, claim in (("roles_claim", roles_claim), ("groups_claim", groups_claim)):
            if not isinstance(claim, str) or not claim:
                raise ToolDefinitionError(f"AccessPolicy: {key} must be a claim name", field=key)
        if default not in ("allow", "deny"):
            raise ToolDefinitionError(
                f"AccessPolicy: default must be 'allow' or 'deny', not {default!r}",
                field="default",
            )
        self.roles_claim = roles_claim
        """The claim holding the caller's roles."""
        self.groups_claim = groups_claim
        """The claim holding the caller's groups."""
        self.default: Literal["allow", "deny"] = default
        """What a tool no rule selects is."""
        self._needs: weakref.WeakKeyDictionary[Tool, _Needs] = weakref.WeakKeyDictionary()
        self._item_needs: dict[tuple[ItemKind, str], _Needs] = {}

    @property
    def claims(self) -> frozenset[str]:
        """The claims the policy reads (the top-level names): an authorization that keeps
        only some claims of a token on its `Identity` must keep these."""
        names = (self.roles_claim, self.groups_claim)
        return frozenset((*names, *(name.partition(".")[0] for name in names)))

    def required_scopes(self, tool: Tool) -> frozenset[str]:
        """The scopes the rules selecting ``tool`` ask of its callers."""
        return self._needs_of(tool).scopes

    def _needs_of(self, tool: Tool) -> _Needs:
        try:
            found = self._needs.get(tool)
        except TypeError:  # a tool that cannot be a weak key: worked out every time
            found = None
        if found is not None:
            return found
        made = _needs([rule for rule in self.rules if rule.selects(tool)], self.default)
        with contextlib.suppress(TypeError):
            self._needs[tool] = made
        return made

    def grant(self, ctx: ToolContext) -> Grant:
        """What the caller of ``ctx`` holds: its scopes, roles and groups."""
        identity = ctx.identity
        claims = identity.claims if identity is not None else {}
        return (
            frozenset(ctx.scopes),
            _claim_values(claims, self.roles_claim),
            _claim_values(claims, self.groups_claim),
        )

    def allows(self, tool: Tool, grant: Grant) -> bool:
        """Whether a caller holding ``grant`` (see `grant`) may use ``tool``."""
        return _allowed(self._needs_of(tool), grant)

    def refusal(
        self, tool: Tool, ctx: ToolContext, *, name: str | None = None
    ) -> dict[str, JsonValue] | None:
        """The error result refusing the caller of ``ctx`` a call to ``tool`` (called
        ``name``, by default its own), naming what it lacks; None when it may call it."""
        grant = self.grant(ctx)
        needs = self._needs_of(tool)
        if _allowed(needs, grant):
            return None
        called = name or tool.name
        return _refused(needs, grant, f"calling {called!r}", repr(called), "the call did not run")

    @property
    def governs_resources(self) -> bool:
        """Whether a rule selects resources: without one, every resource and template
        is open to every caller (whatever ``default`` says, which is about tools)."""
        return any(rule.resources for rule in self.rules)

    @property
    def governs_prompts(self) -> bool:
        """Whether a rule selects prompts: without one, every prompt is open."""
        return any(rule.prompts for rule in self.rules)

    def _needs_of_item(self, kind: ItemKind, name: str) -> _Needs:
        found = self._item_needs.get((kind, name))
        if found is not None:
            return found
        if kind == "prompt":
            if not self.governs_prompts:
                return _OPEN
            matching = [rule for rule in self.rules if rule.selects_prompt(name)]
        else:
            if not self.governs_resources:
                return _OPEN
            matching = [rule for rule in self.rules if rule.selects_resource(name)]
        made = _needs(matching, self.default)
        if len(self._item_needs) >= _MAX_ITEM_NEEDS:
            self._item_needs.clear()
        self._item_needs[kind, name] = made
        return made

    def allows_item(self, kind: ItemKind, name: str, grant: Grant) -> bool:
        """Whether a caller holding ``grant`` (see `grant`) may use the resource at the
        URI ``name`` (``kind`` ``"resource"``; a template's URI template alike) or the
        prompt ``name`` (``"prompt"``)."""
        return _allowed(self._needs_of_item(kind, name), grant)

    def item_refusal(
        self, kind: ItemKind, name: str, ctx: ToolContext
    ) -> dict[str, JsonValue] | None:
        """Why the caller of ``ctx`` may not use the resource (prompt) ``name`` (see
        `allows_item`): a message naming what it lacks, and the fields
        ``missing_scopes``, ``missing_roles``, ``missing_groups`` or
        ``denied_by_default``; None when it may."""
        grant = self.grant(ctx)
        needs = self._needs_of_item(kind, name)
        if _allowed(needs, grant):
            return None
        doing = f"getting the prompt {name!r}" if kind == "prompt" else f"reading {name!r}"
        return _refused(needs, grant, doing, f"{kind} {name!r}", "nothing was read or sent")

    @classmethod
    def from_dict(cls, given: object, *, source: str | None = None) -> AccessPolicy:
        """A policy from its plain form (as `from_file` reads one: ``default``,
        ``roles_claim``, ``groups_claim``, ``rules``; each rule's keys are
        `AccessRule`'s, each value a list of strings or one string).

        Raises:
            SpecError: naming the key (``pointer``) and what is wrong with it.
        """
        return cls(**read_policy(given, source))

    @classmethod
    def from_file(cls, path: str | Path) -> AccessPolicy:
        """A policy read from a YAML or JSON file (or TOML, for a ``.toml`` one).

        Raises:
            SpecError: the file cannot be read or parsed, or is not a policy: the message
                names the key (``pointer``) and, in YAML and JSON, its line.
        """
        return cls(**read_policy_file(path))

    def __repr__(self) -> str:
        return f"AccessPolicy({len(self.rules)} rules, default={self.default!r})"


def _needs(matching: Sequence[AccessRule], default: str) -> _Needs:
    """What the rules ``matching`` one item ask (denied: none does, by ``default``)."""
    return _Needs(
        scopes=frozenset(scope for rule in matching for scope in rule.scopes),
        roles=tuple(tuple(rule.roles) for rule in matching if rule.roles),
        groups=tuple(tuple(rule.groups) for rule in matching if rule.groups),
        denied=not matching and default == "deny",
    )


def _allowed(needs: _Needs, grant: Grant) -> bool:
    scopes, roles, groups = grant
    return (
        not needs.denied
        and needs.scopes <= scopes
        and all(not roles.isdisjoint(one_of) for one_of in needs.roles)
        and all(not groups.isdisjoint(one_of) for one_of in needs.groups)
    )


def _refused(needs: _Needs, grant: Grant, doing: str, what: str, so: str) -> dict[str, JsonValue]:
    """The error result refusing ``doing`` (on ``what``) for want of ``needs``."""
    if needs.denied:
        return error_result(
            f"Not permitted: {what} is open to no caller under this server's access "
            f"policy, so {so}.",
            denied_by_default=True,
        )
    scopes, roles, groups = grant
    missing_scopes = sorted(needs.scopes - scopes)
    missing_roles = sorted(
        {r for one_of in needs.roles if roles.isdisjoint(one_of) for r in one_of}
    )
    missing_groups = sorted(
        {g for one_of in needs.groups if groups.isdisjoint(one_of) for g in one_of}
    )
    wanted: list[str] = []
    details: dict[str, JsonValue] = {}
    if missing_scopes:
        wanted.append(_named("the scope", "the scopes", missing_scopes))
        details["missing_scopes"] = list(missing_scopes)
    if missing_roles:
        wanted.append(_named("the role", "one of the roles", missing_roles))
        details["missing_roles"] = list(missing_roles)
    if missing_groups:
        wanted.append(_named("the group", "one of the groups", missing_groups))
        details["missing_groups"] = list(missing_groups)
    return error_result(
        f"Not permitted: {doing} needs {' and '.join(wanted)}, which this user does not "
        f"have, so {so}.",
        **details,
    )


def _named(one: str, several: str, names: Sequence[str]) -> str:
    """``the scope a`` or ``the scopes a, b`` (``one`` or ``several``, then the names)."""
    return f"{one} {names[0]}" if len(names) == 1 else f"{several} {', '.join(names)}"


def _claim_values(claims: Mapping[str, Any], name: str) -> frozenset[str]:
    """The strings the claim ``name`` holds (a list, or one string of them separated by
    spaces or commas); a name that is not a claim is read as a dotted path into one."""
    value: Any = claims.get(name)
    if value is None and "." in name:
        value = claims
        for part in name.split("."):
            value = value.get(part) if isinstance(value, Mapping) else None
    if isinstance(value, str):
        return frozenset(value.replace(",", " ").split())
    if isinstance(value, list | tuple | set | frozenset):
        return frozenset(item for item in value if isinstance(item, str))
    return frozenset()
