"""The docstrings of `src/toolsets` sit where readers and tools look for them: an
attribute's docstring is the string right under that attribute, so two strings in a row
mean one of them describes the wrong attribute (or none)."""

from __future__ import annotations

import ast
import itertools
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
