"""What the source of `src/toolsets` says, and where: an attribute's docstring is the
string right under that attribute (two strings in a row mean one describes the wrong
attribute, or none); comments give reasons, not figures that age; protocol constants
come from the protocol's own package, not from local copies."""

from __future__ import annotations

import ast
import io
import itertools
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

import toolsets

SRC = Path(toolsets.__file__).resolve().parent


def is_text(statement: ast.stmt) -> bool:
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Constant)
        and isinstance(statement.value.value, str)
    )


def strings_in_a_row(path: Path) -> Iterator[str]:
    """``file:line`` of each string statement right after another one in ``path``."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        body = getattr(node, "body", None)
        if not isinstance(body, list):
            continue
        for before, after in itertools.pairwise(body):
            if is_text(before) and is_text(after):
                yield f"{path.relative_to(SRC)}:{after.lineno}"


def test_no_docstring_follows_another_so_each_describes_the_attribute_above_it() -> None:
    assert [where for path in sorted(SRC.rglob("*.py")) for where in strings_in_a_row(path)] == []


TIMING = re.compile(
    r"""
    \b[\d.,]+\s*(?:ms|µs|ns)\b
    | \b(?:[\d.,]+|an?|few)\s*(?:milli|micro|nano)seconds?\b
    | \b(?:about|around|nearly|roughly)\s+[\d.,]+\s*s\b
    | \bin\s+(?:a\s+second\s+or\s+two|half\s+the\s+time)
    | \b(?:twice|half|a\s+third|a\s+fifth|a\s+quarter|ten\s+times|several\s+times|
        \d+(?:\.\d+)?\s*[x\u00d7])\s+(?:as\s+)?(?:quick|fast|slow|the\s+time|the\s+cost|less\s+time)
    | \bat\s+(?:a\s+third|a\s+fifth|a\s+quarter|half)\s+(?:of\s+)?the\s+cost
    | \b(?:faster|quicker|slower)\s+than\b[^.]*\d
    | \bmeasured\s+(?:better|worse|faster|slower)
    | \b(?:third|fifth|quarter|half|tenth)s?\s+(?:of\s+a\s+second|less\s+time)
    | \bof\s+its\s+[\d.,]+\s*s\b
    | \b(?:takes?|took)\s+(?:several\s+|a\s+few\s+)?(?:seconds|minutes)\b
    | \b[\d.,]+\s*s\s+(?:for|on)\s+[^.]*\d
    """,
    re.VERBOSE | re.IGNORECASE,
)
"""How a comment or docstring quotes a measurement: a duration, a speed-up, a ratio."""


def prose(path: Path) -> Iterator[tuple[int, str]]:
    """Each comment and docstring of ``path``, with its line."""
    text = path.read_text()
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string
    for node in ast.walk(ast.parse(text, str(path))):
        body = getattr(node, "body", None)
        for statement in body if isinstance(body, list) else ():
            if is_text(statement):
                value = statement.value
                assert isinstance(value, ast.Constant)
                yield statement.lineno, " ".join(str(value.value).split())


def test_no_comment_or_docstring_quotes_a_timing_that_ages() -> None:
    """A figure measured on one machine with one release of each dependency belongs in
    the output of the benchmark that measures it; the source says the reason."""
    found = [
        f"{path.relative_to(SRC)}:{line}: {match.group(0)!r}"
        for path in sorted(SRC.rglob("*.py"))
        for line, text in prose(path)
        for match in TIMING.finditer(text)
    ]
    assert found == []


def test_the_timing_pattern_finds_what_a_measurement_says() -> None:
    for said in [
        "made in half the time",
        "at a fifth of the cost",
        "about 15 µs for two plain arguments",
        "costs a call a few tenths of a millisecond",
        "indexes in a second or two",
        "twice as quick",
        "the vectors measured better with the whole sentence",
        "several times faster than copy.deepcopy, 3x",
        "about 0.1 ms",
        "the SDK's import takes a fifth less time",
        "the MCP SDK alone takes a third of a second to import",
        "24 of its 34 s",
        "Microsoft Graph's 11,422 take seconds",
        "10 s for Microsoft Graph's 11,422 tools",
    ]:
        assert TIMING.search(said), said
    for reason in [
        "connecting waits at most 10 s",
        "a stdio server gets 2 s to exit on its own, then SIGTERM",
        "waits 10 s for the server's answer",
        'a protobuf Duration in JSON (``"37s"``) in seconds',
        "a loop: all() of a generator is slower",
        "Milliseconds from the request's arrival to its answer.",
        "Seconds one value may take to match one pattern",
    ]:
        assert not TIMING.search(reason), reason


JSON_RPC_RESERVED = range(-32768, -32000 + 1)
"""The error codes JSON-RPC 2.0 reserves (its own and the implementation-defined ones)."""


def json_rpc_codes(path: Path) -> Iterator[str]:
    """``file:line`` of each integer in the JSON-RPC reserved range in ``path``'s code."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if (
            isinstance(node, ast.UnaryOp)
            and isinstance(node.op, ast.USub)
            and isinstance(node.operand, ast.Constant)
            and type(node.operand.value) is int
            and -node.operand.value in JSON_RPC_RESERVED
        ):
            yield f"{path.relative_to(SRC)}:{node.lineno}"


def test_json_rpc_error_codes_come_from_the_mcp_sdk_not_local_copies() -> None:
    """``mcp.types`` names them (``METHOD_NOT_FOUND``, ``INVALID_PARAMS``, ...). (Not
    yet in ``mcp/``, whose re-layer of issue 26 replaces its copies.)"""
    found = [
        where
        for path in sorted(SRC.rglob("*.py"))
        if path.relative_to(SRC).parts[0] != "mcp"
        for where in json_rpc_codes(path)
    ]
    assert found == []
