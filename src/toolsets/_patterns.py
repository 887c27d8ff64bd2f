"""JSON Schema validators for spec schemas, whose ``pattern``s are ECMA-262 regular
expressions (JSON Schema says so, and specs are written for JavaScript tools): ``\\p{L}``,
``(?<name>...)`` and the like, which Python's ``re`` refuses.

``pattern`` and ``patternProperties`` (and so what ``additionalProperties`` finds
additional) are matched with the ``regex`` package, which reads that syntax. A pattern
it cannot read either is skipped, with a warning logged
once per pattern: a spec's unreadable pattern must not make every call that supplies
the argument fail. A match that takes longer than `MATCH_TIMEOUT` (a pattern that
backtracks without end, such as ``^(a|aa)+$`` on ``"aaa…!"``) gives the pattern up
alike: it is never matched again in the process, and the warning is logged once. The
check runs on the event loop, so a pathological pattern costs `MATCH_TIMEOUT` once,
however many values or calls it meets.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, Final

# regex and jsonschema are imported where they are used: a program that never checks a
# value (a server answering its first tools/list) does not wait for them.
if TYPE_CHECKING:
    import regex
    from jsonschema import ValidationError
    from jsonschema.protocols import Validator

__all__ = ["ECMA_KEYWORDS", "MATCH_TIMEOUT", "SchemaValidator", "matches", "with_ecma_patterns"]

logger = logging.getLogger("toolsets")

MATCH_TIMEOUT: Final = 0.1
"""Seconds one value may take to match one pattern before the pattern is given up: far
more than an ordinary pattern ever needs, so only a pattern that backtracks without end
reaches it."""

_given_up: set[str] = set()
"""The patterns a match took too long with: never matched again."""
_given_up_guard = threading.Lock()


@functools.lru_cache(maxsize=2048)
def _compiled(pattern: str) -> regex.Pattern[str] | None:
    import regex

    try:
        return regex.compile(pattern)
    except (regex.error, ValueError, OverflowError, RecursionError) as exc:
        logger.warning(
            "the schema pattern %r cannot be read (%s): values are not checked against it",
            pattern[:200],
            exc,
        )
        return None


def matches(pattern: str, text: str) -> bool:
    """Whether ``text`` matches ``pattern`` somewhere (JSON Schema's unanchored match);
    True when the pattern cannot be read, or the match takes too long (or once did)."""
    compiled = _compiled(pattern)
    if compiled is None or pattern in _given_up:
        return True
    try:
        return compiled.search(text, timeout=MATCH_TIMEOUT) is not None
    except TimeoutError:
        _give_up(pattern)
        return True


def _give_up(pattern: str) -> None:
    with _given_up_guard:  # loops in several threads may time out on it at once
        if pattern in _given_up:
            return
        _given_up.add(pattern)
    logger.warning(
        "matching a value against the schema pattern %r took over %s s: "
        "values are not checked against it any more",
        pattern[:200],
        MATCH_TIMEOUT,
    )


def _pattern(
    validator: Any, pattern: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    if (
        isinstance(pattern, str)
        and validator.is_type(instance, "string")
        and not matches(pattern, instance)
    ):
        from jsonschema import ValidationError

        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(
    validator: Any, properties: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object") or not isinstance(properties, Mapping):
        return
    for pattern, subschema in properties.items():
        for key, value in instance.items():
            if isinstance(pattern, str) and matches(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(
    validator: Any, additional: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    """jsonschema's ``additionalProperties``, but what is additional is found with
    ``patternProperties``' ECMA-262 patterns (jsonschema's own joins them into one Python
    ``re`` pattern, which refuses ``\\p{L}``)."""
    if not validator.is_type(instance, "object"):
        return
    declared = schema.get("properties", {})
    patterns = [p for p in schema.get("patternProperties", {}) if isinstance(p, str)]
    extras = [
        key
        for key in instance
        if key not in declared and not any(matches(pattern, key) for pattern in patterns)
    ]
    if validator.is_type(additional, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], additional, path=extra)
    elif additional is False and extras:
        from jsonschema import ValidationError

        listed = ", ".join(repr(extra) for extra in sorted(extras, key=str))
        yield ValidationError(f"Additional properties are not allowed ({listed} unexpected)")


ECMA_KEYWORDS: Final = {
    "pattern": _pattern,
    "patternProperties": _pattern_properties,
    "additionalProperties": _additional_properties,
}
"""The keywords to put in a jsonschema validator class (``validators.extend``)."""


@functools.cache
def with_ecma_patterns(cls: type[Validator]) -> type[Validator]:
    """``cls`` (a jsonschema validator class of any dialect) matching ``pattern`` and
    ``patternProperties`` as ECMA-262 regular expressions, made once per class."""
    from jsonschema import validators

    extended: type[Validator] = validators.extend(cls, ECMA_KEYWORDS)  # type: ignore[no-untyped-call]
    return extended


if TYPE_CHECKING:
    SchemaValidator: type[Validator]
    """JSON Schema 2020-12 with ECMA-262 patterns: checks the arguments of a tool."""


def __getattr__(name: str) -> Any:
    """`SchemaValidator`, made when first asked for (it imports jsonschema)."""
    if name == "SchemaValidator":
        from jsonschema import Draft202012Validator

        return with_ecma_patterns(Draft202012Validator)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
