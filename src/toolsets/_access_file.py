"""Reading an access policy from its plain form or a YAML, JSON or TOML file: the
arguments of `AccessPolicy`, every mistake a `SpecError` naming its key (its JSON
pointer) and, in YAML and JSON, its line."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolsets._access_rule import REQUIREMENTS, SELECTORS, AccessRule
from toolsets._errors import SpecError, ToolDefinitionError, close_names

if TYPE_CHECKING:  # yaml and tomllib are imported when a file is read
    import yaml

__all__ = ["POLICY_KEYS", "read_policy", "read_policy_file"]

POLICY_KEYS = ("default", "roles_claim", "groups_claim", "rules")
"""The keys of a policy."""


def read_policy_file(path: str | Path) -> dict[str, Any]:
    """`AccessPolicy`'s arguments from a YAML or JSON file (or TOML, for a ``.toml`` one).

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
        return read_policy(data, where)
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
    return read_policy(data, where, lines=lines)


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


def read_policy(
    data: object, source: str | None, *, lines: Mapping[str, int] | None = None
) -> dict[str, Any]:
    """`AccessPolicy`'s arguments from a policy's plain form (``lines``: the line of
    each key by its JSON pointer, for the messages).

    Raises:
        SpecError: naming the key (``pointer``) and what is wrong with it.
    """

    def fail(pointer: str, message: str) -> SpecError:
        line = lines.get(pointer) if lines is not None else None
        where = f"line {line}: " if line is not None else ""
        shown = pointer.lstrip("/").replace("/", ".") or "the policy"
        return SpecError(f"{where}{shown}: {message}", pointer=pointer, source=source)

    if not isinstance(data, Mapping):
        raise fail("", f"must be a mapping of {', '.join(POLICY_KEYS)}")
    _known_keys(data, POLICY_KEYS, "", fail)
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
                f"a rule must be a mapping (of {', '.join((*SELECTORS, *REQUIREMENTS))})",
            )
        _known_keys(given, (*SELECTORS, *REQUIREMENTS), at, fail)
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
    return {"rules": rules, "default": default, **claims}


def _known_keys(given: Mapping[str, Any], known: Sequence[str], at: str, fail: Any) -> None:
    for key in given:
        if key not in known:
            close = close_names(str(key), known, limit=1)
            hint = f" (did you mean {close[0]!r}?)" if close else f" (known: {', '.join(known)})"
            raise fail(f"{at}/{_escaped(str(key))}", f"unknown key{hint}")
