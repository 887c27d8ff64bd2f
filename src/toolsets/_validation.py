"""Checking a tool's arguments against its JSON Schema before anything is sent, for every
source of tools whose parameters are a JSON Schema (MCP tools, API operations), and for
the call path's check before it asks the user to approve a call.

The formats with one meaning are checked too (`toolsets._formats`: dates and times as
RFC 3339 writes them, UUIDs, email addresses, IP addresses, URIs, host names, base64,
and the ranges of OpenAPI's number formats); other formats stay annotations.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Collection, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from toolsets._errors import close_names
from toolsets._formats import FORMAT_HINTS, FORMATS, format_checker
from toolsets._json import JsonValue
from toolsets._jsonschema import join_pointer
from toolsets._metaschema import surely_valid
from toolsets._patterns import matches, with_ecma_patterns
from toolsets._quickcheck import QuickCheck, Unsure
from toolsets._results import invalid_arguments_result

# jsonschema is imported when a value does not fit (to find its problems) or a schema
# cannot be vouched for without it: a server answers its first tools/list, and most
# first calls, without waiting for it.
if TYPE_CHECKING:
    from jsonschema import ValidationError
    from jsonschema.protocols import Validator

__all__ = ["ArgumentChecker", "TrustedSchema"]

logger = logging.getLogger("toolsets")

_DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"
"""The dialect MCP and our declarations use (``$schema``, without its empty fragment)."""


class TrustedSchema(dict[str, Any]):
    """A JSON Schema (draft 2020-12) toolsets made itself, valid against the meta-schema
    by construction (an API operation's arguments, which `SchemaBuilder` checks keyword
    by keyword as it translates the spec): checkers use it as it is, without checking it
    again, wherever it travels (a declaration, the call path's check before a pause).
    A copy is a plain dict: what is made of it is no longer vouched for."""

    __slots__ = ()

    def __copy__(self) -> dict[str, Any]:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        return copy.deepcopy(dict(self), memo)

    def __reduce__(self) -> tuple[type[dict[str, Any]], tuple[dict[str, Any]]]:
        return dict, (dict(self),)


class ArgumentChecker:
    """Checks arguments against one tool's parameter schema.

    The validator follows the schema's ``$schema`` (JSON Schema 2020-12 without one, as
    MCP says) and is made on the first check: most tools of a big catalogue are never
    called. The schema is checked against its meta-schema then, in one quick walk for
    2020-12 (`toolsets._metaschema`, where jsonschema's own check would follow the
    meta-schema's references through every vocabulary) and not at all for a
    `TrustedSchema`. A schema that cannot be used
    (invalid, or with a ``$ref`` that does not resolve) must not make the tool unusable:
    it is logged once, and calls are then sent unchecked, leaving the checking to the
    server. Values that fit a 2020-12 schema are told so by a `QuickCheck`; jsonschema
    finds the problems of those that do not.

    Args:
        schema: The tool's parameter schema (an object schema).
        tool_name: The tool's name, for the log line.
        checks: What is checked, for the log line.
        formats: Whether the formats of `toolsets._formats` are checked (a result's
            formats are annotations: a tool's answer is not refused for them).
    """

    def __init__(
        self,
        schema: Mapping[str, Any],
        *,
        tool_name: str,
        checks: str = "arguments",
        formats: bool = True,
    ) -> None:
        self._schema = schema
        self._tool_name = tool_name
        self._checks = checks
        self._formats = formats
        self._checked: dict[str, Any] | None = None
        """The schema as checked (``$schema`` left out unless it names a dialect), once
        it is known to be usable."""
        self._class: type[Validator] | None = None
        self._validator: Validator | None = None
        self._quick: QuickCheck | None = None
        self._unusable = False

    def result(self, args: object) -> JsonValue | None:
        """The invalid-arguments result (with ``fields``) for ``args``, or None when
        they fit (or cannot be checked)."""
        problems = self.problems(args)
        return invalid_arguments_result(problems) if problems else None

    def without_null_options(self, args: Mapping[str, Any]) -> Mapping[str, Any]:
        """``args`` without the ``null`` given for optional parameters that do not take
        null: hosts in strict mode (OpenAI's, among others) declare every optional
        parameter nullable and send ``null`` for "not given", which is what it means
        then. A copy when anything is left out; ``args`` is never changed."""
        for value in args.values():
            if value is None:
                break
        else:  # most calls: no null
            return args
        if not self._usable() or self._fits(args):
            return args
        validator = self._compiled()
        if validator is None:
            return args
        from referencing.exceptions import Unresolvable

        required = self._schema.get("required")
        needed = set(required) if isinstance(required, list) else set()
        try:
            dropped = {
                error.absolute_path[0]
                for error in validator.iter_errors(args)
                if len(error.absolute_path) == 1
                and error.instance is None
                and error.absolute_path[0] not in needed
            }
        except (Unresolvable, RecursionError) as exc:
            self._give_up(exc)
            return args
        if not dropped:
            return args
        return {key: value for key, value in args.items() if key not in dropped}

    @staticmethod
    def unknown(args: Iterable[str], known: Collection[str]) -> list[tuple[str, str]]:
        """One problem per name in ``args`` that is not in ``known``, with the known
        names most like it as a hint (an ``additionalProperties: false`` error would be
        one for them all, naming no field)."""
        problems: list[tuple[str, str]] = []
        for key in args:
            if key not in known:
                near = close_names(str(key), known)
                hint = f" (did you mean {', '.join(map(repr, near))}?)" if near else ""
                problems.append((str(key), f"this tool takes no such argument{hint}"))
        return problems

    def problems(self, args: object) -> list[tuple[str, str]]:
        """``(field path, what is wrong)`` for each problem of ``args``; the path is
        dotted (``items.0.name``), ``""`` for the arguments object itself."""
        if type(args) is not dict and not isinstance(args, Mapping):
            return [("", f"expected a JSON object, got {type(args).__name__}")]
        quick = self._quick
        if quick is not None:  # every call but the first, of a 2020-12 schema
            try:
                if quick(args):
                    return []
            except Unsure:
                pass
        elif not self._usable() or self._fits(args):
            return []
        validator = self._compiled()
        if validator is None:
            return []
        from referencing.exceptions import Unresolvable

        try:
            errors = sorted(validator.iter_errors(args), key=_path_key)
        except (Unresolvable, RecursionError) as exc:
            self._give_up(exc)
            return []
        problems: dict[tuple[str, str], None] = {}  # in order, without repeats
        for error in errors:
            problems.update(dict.fromkeys(_described(error)))
        return list(problems)

    def first_problem(self, value: JsonValue) -> tuple[str, str] | None:
        """The first problem of ``value`` (any JSON, e.g. a result checked against an
        output schema): its JSON pointer (a missing property's own) and what is wrong;
        None when it fits (or cannot be checked)."""
        if not self._usable() or self._fits(value):
            return None
        validator = self._compiled()
        if validator is None:
            return None
        from jsonschema.exceptions import best_match
        from referencing.exceptions import Unresolvable

        try:
            error = best_match(validator.iter_errors(value))
        except (Unresolvable, RecursionError) as exc:
            self._give_up(exc)
            return None
        if error is None:
            return None
        path = [str(part) for part in error.absolute_path]
        instance, required = error.instance, error.validator_value
        if (
            error.validator == "required"
            and isinstance(instance, Mapping)
            and isinstance(required, list)
        ):
            missing = [name for name in required if name not in instance]
            if missing:
                return join_pointer("", *path, missing[0]), "a required property is missing"
        return join_pointer("", *path), error.message

    def _fits(self, value: object) -> bool:
        """Whether ``value`` surely fits (False: it may not; ask the validator)."""
        quick = self._quick
        if quick is None:
            return False
        try:
            return quick(value)
        except Unsure:
            return False

    def _usable(self) -> bool:
        """Whether the schema can check anything: checked against its meta-schema the
        first time (and its `QuickCheck` made, for 2020-12); False once given up.
        jsonschema is imported only for another dialect, or a schema the quick walk
        cannot vouch for: most first calls never wait for it."""
        if self._unusable:
            return False
        if self._checked is not None:
            return True
        schema = dict(self._schema)
        dialect = schema.get("$schema")
        if not isinstance(dialect, str):
            schema.pop("$schema", None)
            dialect = None
        latest = dialect is None or dialect.rstrip("#") == _DRAFT_2020_12
        cls: type[Validator] | None = None
        if not latest:
            from jsonschema import Draft202012Validator, validators

            cls = validators.validator_for(schema, default=Draft202012Validator)
            latest = cls is Draft202012Validator
        trusted = latest and isinstance(self._schema, TrustedSchema)
        if not trusted and not (latest and surely_valid(schema)):
            from jsonschema import Draft202012Validator, SchemaError

            try:
                # Formats unchecked: a pattern is ECMA-262, which the meta-schema's
                # "regex" check (Python's re) would refuse; one nothing can read is
                # skipped when matching, with a warning.
                (cls or Draft202012Validator).check_schema(schema, format_checker=None)  # type: ignore[call-arg]
            except SchemaError as exc:
                self._give_up(exc)
                return False
        if latest:
            self._quick = QuickCheck(schema, formats=FORMATS if self._formats else None)
        self._class, self._checked = cls, schema
        return True

    def _compiled(self) -> Validator | None:
        """The jsonschema validator, made when a value is not surely valid (most never
        need it: it takes longer to make than a quick check of a call's arguments)."""
        if not self._usable():
            return None
        if self._validator is None:
            from jsonschema import Draft202012Validator
            from referencing import Registry

            schema = self._checked
            assert schema is not None, "_usable made it"
            cls = with_ecma_patterns(self._class or Draft202012Validator)
            formats = format_checker() if self._formats else None
            # An empty registry that retrieves nothing: a schema's $ref to a URL is never
            # fetched (jsonschema would, with urllib: on the event loop, with no timeout,
            # wherever a server's schema points); it is unresolvable, so unchecked.
            self._validator = cls(schema, registry=Registry(), format_checker=formats)
        return self._validator

    def _give_up(self, error: BaseException) -> None:
        self._unusable = True
        logger.warning(
            "tool %r: its schema cannot be used to check %s (%s: %s); they go unchecked",
            self._tool_name,
            self._checks,
            type(error).__name__,
            str(error).splitlines()[0][:200] if str(error) else "",
        )


def _path_key(error: ValidationError) -> list[str]:
    return [str(part) for part in error.absolute_path]


def _described(error: ValidationError) -> list[tuple[str, str]]:
    """The problems one validation error stands for. A missing or an unexpected property
    is named by its own path, as function tools name it, rather than by its parent's."""
    path = ".".join(str(part) for part in error.absolute_path)
    instance, schema = error.instance, error.schema
    if error.validator == "required" and isinstance(instance, Mapping):
        # One error per missing name: each names them all, the repeats are dropped.
        required = error.validator_value if isinstance(error.validator_value, list) else []
        missing = [name for name in required if name not in instance]
        if missing:
            return [(_join(path, name), "Field required") for name in missing]
    if (
        error.validator == "additionalProperties"
        and error.validator_value is False
        and isinstance(instance, Mapping)
        and isinstance(schema, Mapping)
    ):
        unexpected = _unexpected(instance, schema)
        if unexpected:
            return [(_join(path, name), "Extra inputs are not permitted") for name in unexpected]
    named = error.validator_value
    if error.validator == "format" and isinstance(named, str) and named in FORMAT_HINTS:
        return [(path, f"{error.instance!r} is not a valid {named}: send {FORMAT_HINTS[named]}")]
    return [(path, error.message)]


def _unexpected(instance: Mapping[str, Any], schema: Mapping[str, Any]) -> list[str]:
    declared = schema.get("properties")
    patterns = schema.get("patternProperties")
    names = set(declared) if isinstance(declared, Mapping) else set()
    regexes = list(patterns) if isinstance(patterns, Mapping) else []
    return [str(key) for key in instance if key not in names and not _matches(regexes, str(key))]


def _matches(regexes: list[str], name: str) -> bool:
    return any(not isinstance(regex, str) or matches(regex, name) for regex in regexes)


def _join(path: str, name: object) -> str:
    return f"{path}.{name}" if path else str(name)
