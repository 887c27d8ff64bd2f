"""Checking a tool's arguments against its JSON Schema before anything is sent, for every
source of tools whose parameters are a JSON Schema (MCP tools, API operations)."""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from toolsets._errors import close_names
from toolsets._json import JsonValue
from toolsets._jsonschema import join_pointer
from toolsets._patterns import matches, with_ecma_patterns
from toolsets._results import invalid_arguments_result

# jsonschema is imported on the first check (a validator is compiled then anyway): a
# server answers its first tools/list without waiting for it.
if TYPE_CHECKING:
    from jsonschema import ValidationError
    from jsonschema.protocols import Validator

__all__ = ["ArgumentChecker"]

logger = logging.getLogger("toolsets")


class ArgumentChecker:
    """Checks arguments against one tool's parameter schema.

    The validator follows the schema's ``$schema`` (JSON Schema 2020-12 without one, as
    MCP says) and is compiled on the first check: most tools of a big catalogue are never
    called. A schema that cannot be used (invalid, or with a ``$ref`` that does not
    resolve) must not make the tool unusable: it is logged once, and calls are then sent
    unchecked, leaving the checking to the server.

    Args:
        schema: The tool's parameter schema (an object schema).
        tool_name: The tool's name, for the log line.
    """

    def __init__(
        self, schema: Mapping[str, Any], *, tool_name: str, checks: str = "arguments"
    ) -> None:
        self._schema = schema
        self._tool_name = tool_name
        self._checks = checks
        self._validator: Validator | None = None
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
        validator = self._compiled()
        if validator is None or not any(value is None for value in args.values()):
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
        if not isinstance(args, Mapping):
            return [("", f"expected a JSON object, got {type(args).__name__}")]
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

    def _compiled(self) -> Validator | None:
        if self._unusable:
            return None
        if self._validator is None:
            from jsonschema import Draft202012Validator, SchemaError, validators
            from referencing import Registry

            schema = dict(self._schema)
            dialect = schema.get("$schema")
            if not isinstance(dialect, str):
                schema.pop("$schema", None)
            cls = validators.validator_for(schema, default=Draft202012Validator)
            try:
                # Formats unchecked: a pattern is ECMA-262, which the meta-schema's
                # "regex" check (Python's re) would refuse; one nothing can read is
                # skipped when matching, with a warning.
                cls.check_schema(schema, format_checker=None)  # type: ignore[call-arg]
            except SchemaError as exc:
                self._give_up(exc)
                return None
            # An empty registry that retrieves nothing: a schema's $ref to a URL is never
            # fetched (jsonschema would, with urllib: on the event loop, with no timeout,
            # wherever a server's schema points); it is unresolvable, so unchecked.
            self._validator = with_ecma_patterns(cls)(schema, registry=Registry())
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
