"""Per-tool access from the caller's token: an `AccessPolicy` (rules of `AccessRule`)
says which tools a caller may use, and `restricted` applies it to a toolset.

A rule selects tools (by name, and for OpenAPI operations by tag, HTTP method and path)
and says what a caller must hold to use them: scopes (every one), roles and groups (one
of each list, read from a claim of the caller's token). Every rule that selects a tool
applies to it, so adding a rule never opens a tool up; a tool no rule selects is open
to everyone, or to nobody with ``default="deny"``.

Who the caller is comes from the call's context: its scopes are the invocation's
(`ToolContext.scopes`, which a served request's token gives), its roles and groups the
claims of its `Identity` (`ToolContext.identity`; none without one, as over stdio).

A tool the caller may not use is not offered (it is passive, so neither a model nor an
MCP client's ``tools/list`` sees it), yet known by its name: a call to it is refused
before anything else is done, with an error result naming what the caller lacks
(``missing_scopes``, ``missing_roles``, ``missing_groups``, or ``denied_by_default``).
Checked again when it runs, should a wrapper not forward the refusal.

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
"""

from __future__ import annotations

import contextlib
import sys
import weakref
from collections import OrderedDict
from collections.abc import Awaitable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from toolsets._concurrency import Ready
from toolsets._context import ToolContext
from toolsets._errors import SpecError, ToolDefinitionError, close_names
from toolsets._forwarding import ForwardingTool
from toolsets._json import JsonValue
from toolsets._results import error_result
from toolsets._tool import LlmRequest, Tool
from toolsets._toolset import BaseToolset, ListingVaries, Toolset
from toolsets._wrappers import WrapperToolset

if TYPE_CHECKING:  # yaml and tomllib are imported when a file is read
    import yaml

__all__ = ["ACCESS_REFUSAL_KEYS", "AccessPolicy", "AccessRule", "restricted"]

HTTP_METHODS = frozenset(("get", "put", "post", "delete", "options", "head", "patch", "trace"))
"""The methods an OpenAPI operation may have (a rule naming another is a typo)."""
ACCESS_REFUSAL_KEYS = frozenset(
    ("missing_scopes", "missing_roles", "missing_groups", "denied_by_default")
)
"""The fields of an error result refusing a call for want of access (any one is there)."""
MAX_GRANTS = 256
"""Distinct callers' grants (scopes, roles, groups) whose listings a `restricted`
toolset keeps made (the least recently used are made again when next asked for)."""

_SELECTORS = ("tools", "tags", "methods", "paths")
_REQUIREMENTS = ("scopes", "roles", "groups")
_POLICY_KEYS = ("default", "roles_claim", "groups_claim", "rules")


@dataclass(frozen=True, kw_only=True)
class AccessRule:
    """One rule of an `AccessPolicy`: the tools it selects, and what a caller must hold
    to use them.

    It selects a tool when every selector given matches (within one, any value does);
    with none given, it selects every tool. ``tags``, ``methods`` and ``paths`` match
    OpenAPI operations only (under any wrapper: `prefixed`, `confirmed`, ...).

    Raises:
        ToolDefinitionError: a value is a single string rather than a list, an empty
            string, or a method no HTTP operation has (``field`` names the key).
    """

    tools: Sequence[str] = ()
    """Tool names, or glob patterns over them (``"delete_*"``), as the toolset the
    policy is applied to offers them."""
    tags: Sequence[str] = ()
    """OpenAPI tags, any case."""
    methods: Sequence[str] = ()
    """HTTP methods, any case."""
    paths: Sequence[str] = ()
    """OpenAPI path templates, or glob patterns over them (``"/admin/*"``; ``*``
    matches across ``/``)."""
    scopes: Sequence[str] = ()
    """Scopes the caller must hold, every one."""
    roles: Sequence[str] = ()
    """Roles of which the caller must hold one (in the policy's ``roles_claim``)."""
    groups: Sequence[str] = ()
    """Groups of which the caller must be in one (in the policy's ``groups_claim``)."""

    def __post_init__(self) -> None:
        for key in (*_SELECTORS, *_REQUIREMENTS):
            given = getattr(self, key)
            if isinstance(given, str):
                raise ToolDefinitionError(
                    f"AccessRule({key}=...) takes a list of strings: [{given!r}]", field=key
                )
            values = tuple(given)
            for value in values:
                if not isinstance(value, str) or not value:
                    raise ToolDefinitionError(
                        f"AccessRule({key}=...): {value!r} is not a non-empty string", field=key
                    )
            object.__setattr__(self, key, values)
        unknown = sorted({m.lower() for m in self.methods} - HTTP_METHODS)
        if unknown:
            raise ToolDefinitionError(
                f"AccessRule(methods=...): {', '.join(unknown)} is not an HTTP method "
                f"({', '.join(sorted(HTTP_METHODS))})",
                field="methods",
            )

    def selects(self, tool: Tool) -> bool:
        """Whether this rule applies to ``tool`` (offered under its name)."""
        if self.tools and not any(fnmatchcase(tool.name, p) for p in self.tools):
            return False
        if not (self.tags or self.methods or self.paths):
            return True
        operation = _operation(tool)
        if operation is None:
            return False
        method, path, tags = operation
        if self.methods and method.lower() not in {m.lower() for m in self.methods}:
            return False
        if self.paths and not any(fnmatchcase(path, p) for p in self.paths):
            return False
        wanted = {t.casefold() for t in self.tags}
        return not wanted or not wanted.isdisjoint(t.casefold() for t in tags)


def _operation(tool: Tool) -> tuple[str, str, Sequence[str]] | None:
    """The HTTP method, path template and tags of the OpenAPI operation ``tool`` calls
    (under its wrappers), or None (without importing the OpenAPI source when no spec
    was loaded)."""
    module = sys.modules.get("toolsets.openapi._tool")
    if module is None:
        return None
    while isinstance(tool, ForwardingTool):
        tool = tool.tool
    if not isinstance(tool, module.RestApiTool):
        return None
    operation = tool.operation
    return operation.method, operation.path, operation.tags


@dataclass(frozen=True, slots=True)
class _Needs:
    """What the rules selecting one tool ask of its callers."""

    scopes: frozenset[str]
    roles: tuple[tuple[str, ...], ...]
    """One tuple per rule: the caller must hold one role of each."""
    groups: tuple[tuple[str, ...], ...]
    denied: bool
    """No rule selects the tool, and the policy's default is to deny."""


_Grant = tuple[frozenset[str], frozenset[str], frozenset[str]]
"""What a caller holds: scopes, roles, groups."""


class AccessPolicy:
    """Which tools a caller may use, from the scopes and the roles or groups of its
    token (see the module's docstring); applied to a toolset by `restricted`.

    Args:
        rules: The rules; each one that selects a tool applies to it.
        roles_claim: The claim of the caller's `Identity` holding its roles: a list of
            strings, or one string of them separated by spaces or commas. A name that
            is not a claim itself is read as a dotted path into one
            (``realm_access.roles``).
        groups_claim: The claim holding its groups, read alike.
        default: What a tool no rule selects is: ``"allow"`` (open to every caller)
            or ``"deny"`` (refused to every caller).

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
        matching = [rule for rule in self.rules if rule.selects(tool)]
        made = _Needs(
            scopes=frozenset(scope for rule in matching for scope in rule.scopes),
            roles=tuple(tuple(rule.roles) for rule in matching if rule.roles),
            groups=tuple(tuple(rule.groups) for rule in matching if rule.groups),
            denied=not matching and self.default == "deny",
        )
        with contextlib.suppress(TypeError):
            self._needs[tool] = made
        return made

    def grant(self, ctx: ToolContext) -> _Grant:
        """What the caller of ``ctx`` holds: its scopes, roles and groups."""
        identity = ctx.identity
        claims = identity.claims if identity is not None else {}
        return (
            frozenset(ctx.scopes),
            _claim_values(claims, self.roles_claim),
            _claim_values(claims, self.groups_claim),
        )

    def allows(self, tool: Tool, grant: _Grant) -> bool:
        """Whether a caller holding ``grant`` (see `grant`) may use ``tool``."""
        needs = self._needs_of(tool)
        scopes, roles, groups = grant
        return (
            not needs.denied
            and needs.scopes <= scopes
            and all(not roles.isdisjoint(one_of) for one_of in needs.roles)
            and all(not groups.isdisjoint(one_of) for one_of in needs.groups)
        )

    def refusal(
        self, tool: Tool, ctx: ToolContext, *, name: str | None = None
    ) -> dict[str, JsonValue] | None:
        """The error result refusing the caller of ``ctx`` a call to ``tool`` (called
        ``name``, by default its own), naming what it lacks; None when it may call it."""
        grant = self.grant(ctx)
        if self.allows(tool, grant):
            return None
        called = name or tool.name
        needs = self._needs_of(tool)
        if needs.denied:
            return error_result(
                f"Not permitted: {called!r} is open to no caller under this server's access "
                "policy, so the call did not run.",
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
            f"Not permitted: calling {called!r} needs {' and '.join(wanted)}, which this "
            "user does not have, so the call did not run.",
            **details,
        )

    @classmethod
    def from_dict(cls, given: object, *, source: str | None = None) -> AccessPolicy:
        """A policy from its plain form (as `from_file` reads one: ``default``,
        ``roles_claim``, ``groups_claim``, ``rules``; each rule's keys are
        `AccessRule`'s, each value a list of strings or one string).

        Raises:
            SpecError: naming the key (``pointer``) and what is wrong with it.
        """
        return _read(given, source, lines=None)

    @classmethod
    def from_file(cls, path: str | Path) -> AccessPolicy:
        """A policy read from a YAML or JSON file (or TOML, for a ``.toml`` one).

        Raises:
            SpecError: the file cannot be read or parsed, or is not a policy: the message
                names the key (``pointer``) and, in YAML and JSON, its line.
        """
        import tomllib

        import yaml

        where = str(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise SpecError(f"cannot read the access policy: {exc}", source=where) from exc
        if where.lower().endswith(".toml"):
            try:
                data: object = tomllib.loads(text)
            except tomllib.TOMLDecodeError as exc:
                raise SpecError(f"not TOML: {exc}", source=where) from exc
            return _read(data, where, lines=None)
        loader = yaml.SafeLoader(text)
        try:
            node = loader.get_single_node()
            if node is None:
                raise SpecError("the access policy is empty", source=where)
            lines: dict[str, int] = {}
            _lines(node, "", lines, where)
            data = loader.construct_document(node)
        except yaml.YAMLError as exc:
            raise SpecError(f"not YAML or JSON: {exc}", source=where) from exc
        finally:
            loader.dispose()
        return _read(data, where, lines=lines)

    def __repr__(self) -> str:
        return f"AccessPolicy({len(self.rules)} rules, default={self.default!r})"


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


# --- reading a policy file ---------------------------------------------------------------


def _lines(node: yaml.Node, pointer: str, lines: dict[str, int], source: str) -> None:
    """Keep in ``lines`` the line of each node under ``node`` by its JSON pointer, and
    refuse a key given twice (YAML would keep the last one, silently)."""
    import yaml

    lines[pointer] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        seen: set[object] = set()
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
            child = f"{pointer}/{_escaped(str(key))}"
            if key in seen:
                raise SpecError(
                    f"line {key_node.start_mark.line + 1}: {key!r} is given twice",
                    pointer=child,
                    source=source,
                )
            seen.add(key)
            _lines(value_node, child, lines, source)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _lines(item, f"{pointer}/{index}", lines, source)


def _escaped(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _read(data: object, source: str | None, *, lines: Mapping[str, int] | None) -> AccessPolicy:
    def fail(pointer: str, message: str) -> SpecError:
        line = lines.get(pointer) if lines is not None else None
        where = f"line {line}: " if line is not None else ""
        shown = pointer.lstrip("/").replace("/", ".") or "the policy"
        return SpecError(f"{where}{shown}: {message}", pointer=pointer, source=source)

    if not isinstance(data, Mapping):
        raise fail("", f"must be a mapping of {', '.join(_POLICY_KEYS)}")
    _known_keys(data, _POLICY_KEYS, "", fail)
    default = data.get("default", "allow")
    if default not in ("allow", "deny"):
        raise fail("/default", f"must be 'allow' or 'deny', not {default!r}")
    claims: dict[str, str] = {}
    for key in ("roles_claim", "groups_claim"):
        if key in data:
            value = data[key]
            if not isinstance(value, str) or not value:
                raise fail(f"/{key}", "must be a claim name (a string)")
            claims[key] = value
    rules_given = data.get("rules", [])
    if not isinstance(rules_given, list):
        raise fail("/rules", "must be a list of rules")
    rules = []
    for index, given in enumerate(rules_given):
        at = f"/rules/{index}"
        if not isinstance(given, Mapping):
            raise fail(
                at,
                "a rule must be a mapping (of tools, tags, methods, paths, scopes, roles, groups)",
            )
        _known_keys(given, (*_SELECTORS, *_REQUIREMENTS), at, fail)
        if not given:
            raise fail(at, "an empty rule: give what it selects and what it requires")
        values: dict[str, tuple[str, ...]] = {}
        for key, value in given.items():
            listed = [value] if isinstance(value, str) else value
            if not isinstance(listed, list) or not listed:
                raise fail(f"{at}/{key}", "must be a string or a non-empty list of strings")
            for position, item in enumerate(listed):
                if not isinstance(item, str) or not item:
                    pointer = f"{at}/{key}/{position}" if listed is value else f"{at}/{key}"
                    raise fail(pointer, f"{item!r} is not a non-empty string")
            values[key] = tuple(listed)
        try:
            rules.append(AccessRule(**values))
        except ToolDefinitionError as exc:
            raise fail(f"{at}/{exc.field}", str(exc).partition(": ")[2] or str(exc)) from exc
    return AccessPolicy(rules, default=default, **claims)


def _known_keys(given: Mapping[str, Any], known: Sequence[str], at: str, fail: Any) -> None:
    for key in given:
        if key not in known:
            close = close_names(str(key), known, limit=1)
            hint = f" (did you mean {close[0]!r}?)" if close else f" (known: {', '.join(known)})"
            raise fail(f"{at}/{_escaped(str(key))}", f"unknown key{hint}")


# --- the wrapper -----------------------------------------------------------------------


class _GuardedTool(ForwardingTool):
    """A tool under an access policy, as one caller's listing offers it: declared when
    that caller may use it; otherwise known by name but passive, and a call refused."""

    def __init__(self, tool: Tool, policy: AccessPolicy, *, offered: bool) -> None:
        super().__init__(tool)
        self._policy = policy
        self._offered = offered

    def declaration(self) -> Any:
        return super().declaration() if self._offered else None

    async def process_llm_request(self, req: LlmRequest, ctx: ToolContext) -> None:
        if self._offered:
            await super().process_llm_request(req, ctx)
        else:  # callable, not offered: a call gets the refusal, not "no such tool"
            req.tools.setdefault(self.name, self)

    @property
    def required_scopes(self) -> frozenset[str]:
        """The wrapped tool's, and those the policy asks for it."""
        return self.tool.required_scopes | self._policy.required_scopes(self.tool)

    def refusal(self, args: Mapping[str, Any], ctx: ToolContext) -> JsonValue | None:
        refused = self._policy.refusal(self.tool, ctx, name=ctx.tool_name or self.name)
        return refused if refused is not None else super().refusal(args, ctx)

    def run(self, args: Mapping[str, Any], ctx: ToolContext) -> Awaitable[JsonValue]:
        # Checked again here: a wrapper of the caller's own that does not forward
        # ``refusal`` must not let a refused call through.
        refused = self._policy.refusal(self.tool, ctx, name=ctx.tool_name or self.name)
        return Ready(refused) if refused is not None else super().run(args, ctx)

    def __repr__(self) -> str:
        return f"_GuardedTool({self.tool!r}, offered={self._offered})"


class _Restricted(WrapperToolset):
    keeps_names = True
    listing_varies: ListingVaries = "caller"  # by the caller's scopes and claims

    def __init__(self, toolset: Toolset, policy: AccessPolicy) -> None:
        super().__init__(toolset)
        if not isinstance(policy, AccessPolicy):
            raise ToolDefinitionError(
                f"restricted() takes an AccessPolicy, not a {type(policy).__name__}",
                field="policy",
            )
        self.policy = policy
        """The policy applied."""
        self._guards: weakref.WeakKeyDictionary[Tool, dict[bool, _GuardedTool]] = (
            weakref.WeakKeyDictionary()
        )
        self._listings: OrderedDict[_Grant, tuple[tuple[Tool, ...], tuple[Tool, ...]]] = (
            OrderedDict()
        )
        """Per grant: the wrapped listing's tools, and what was made of them for it."""

    def _guarded(self, tool: Tool, offered: bool) -> _GuardedTool:
        """The same guard of ``tool`` from one listing to the next (so what keeps a
        tool's listing by the tool, as the MCP server does, keeps it)."""
        try:
            known = self._guards.get(tool)
        except TypeError:  # not a weak key: a new guard each time
            return _GuardedTool(tool, self.policy, offered=offered)
        if known is None:
            known = self._guards[tool] = {}
        guard = known.get(offered)
        if guard is None:
            guard = known[offered] = _GuardedTool(tool, self.policy, offered=offered)
        return guard

    async def list_tools(self, ctx: ToolContext | None = None) -> Sequence[Tool]:
        tools = await self.wrapped.list_tools(ctx)
        grant = self.policy.grant(ctx if ctx is not None else ToolContext())
        kept = self._listings.get(grant)
        if kept is not None and (kept[0] is tools or _same(tools, kept[0])):
            # The same tools for the same grant: what was made is given back as it was
            # (what indexes a listing by identity, as the server does, indexes it once).
            self._listings.move_to_end(grant)
            return kept[1]
        made: tuple[Tool, ...] = tuple(
            self._guarded(t, self.policy.allows(t, grant)) for t in tools
        )
        # A copy of a list's items: a list may change in place.
        self._listings[grant] = (tools if isinstance(tools, tuple) else tuple(tools), made)
        self._listings.move_to_end(grant)
        while len(self._listings) > MAX_GRANTS:
            self._listings.popitem(last=False)
        return made

    def __repr__(self) -> str:
        return f"restricted({self.wrapped!r}, {self.policy!r})"


def _same(tools: Sequence[Tool], kept: tuple[Tool, ...]) -> bool:
    """Whether ``tools`` are the very tools of ``kept``, in order (a toolset may list
    the same tools in a new tuple each time)."""
    return len(tools) == len(kept) and all(a is b for a, b in zip(tools, kept, strict=True))


def restricted(toolset: Toolset, policy: AccessPolicy) -> BaseToolset:
    """``toolset`` under ``policy``: each caller is offered the tools it may use; the
    others are passive (no model and no ``tools/list`` sees them), and a call to one is
    refused before anything else is done, with an error result naming the scopes,
    roles or groups the caller lacks (see the module's docstring).

    Apply it beneath what calls tools from inside (`code_mode`) or loads them
    (`searchable`): ``code_mode(restricted(api, policy))`` checks each call a program
    makes; the other way round, only ``run_code`` itself would be.

    Raises:
        ToolDefinitionError: ``toolset`` is not a toolset, or ``policy`` not an
            `AccessPolicy` (``field`` says which).
    """
    return _Restricted(toolset, policy)
