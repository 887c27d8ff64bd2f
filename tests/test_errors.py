from __future__ import annotations

import builtins
import importlib
import pkgutil
from types import ModuleType

import pytest

import toolsets
from toolsets import (
    AuthError,
    ConnectionError,
    ServiceNotConfiguredError,
    SpecError,
    ToolCallError,
    ToolDefinitionError,
    ToolNotFoundError,
    ToolsetError,
)
from toolsets.agent import SessionNotFoundError
from toolsets.models import ScriptExhaustedError


def public_modules() -> list[ModuleType]:
    """``toolsets`` and each of its packages and modules whose path has no private part."""
    found = [toolsets]
    for info in pkgutil.walk_packages(toolsets.__path__, "toolsets."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            found.append(importlib.import_module(info.name))
    return found


def test_every_error_a_public_module_exports_is_in_the_one_tree() -> None:
    exported = [getattr(module, name) for module in public_modules() for name in module.__all__]
    errors = {e for e in exported if isinstance(e, type) and issubclass(e, BaseException)}
    assert {ToolsetError, ToolCallError, SpecError} <= errors  # the walk found the exports
    assert sorted(e.__qualname__ for e in errors if not issubclass(e, ToolsetError)) == []


def test_the_tree_is_drawn_in_the_module_docstring() -> None:
    from toolsets import _errors

    doc = _errors.__doc__
    assert doc is not None
    for name in _errors.__all__:
        assert name in doc, name


def test_every_error_class_of_every_package_is_drawn_in_the_tree() -> None:
    import importlib
    import pkgutil

    from toolsets import _errors

    for info in pkgutil.walk_packages(toolsets.__path__, "toolsets."):
        importlib.import_module(info.name)
    found: set[str] = set()
    pending = [ToolsetError]
    while pending:
        cls = pending.pop()
        for sub in cls.__subclasses__():
            if sub.__module__.startswith("toolsets.") and not sub.__name__.startswith("_"):
                found.add(sub.__name__)
            pending.append(sub)
    assert {SessionNotFoundError.__name__, ScriptExhaustedError.__name__} <= found
    assert _errors.__doc__ is not None
    assert [name for name in sorted(found) if name not in _errors.__doc__] == []


def test_connection_error_is_also_the_builtin_one() -> None:
    error = ConnectionError("down", target="stdio: python server.py")
    assert isinstance(error, builtins.ConnectionError)
    assert error.target == "stdio: python server.py"
    assert str(error) == "down"
    with pytest.raises(builtins.ConnectionError):
        raise error


def test_spec_error_names_the_json_pointer_and_source() -> None:
    error = SpecError("missing 'responses'", pointer="/paths/~1pets/get", source="pets.yaml")
    assert error.pointer == "/paths/~1pets/get"
    assert error.source == "pets.yaml"
    assert str(error) == "pets.yaml#/paths/~1pets/get: missing 'responses'"
    assert str(SpecError("empty")) == "#: empty"


def test_tool_not_found_lists_the_sorted_names() -> None:
    error = ToolNotFoundError("x", ["b", "a"])
    assert (error.name, error.available) == ("x", ("a", "b"))
    assert str(error) == "no tool named 'x'; available: a, b"
    assert str(ToolNotFoundError("x")) == "no tool named 'x'; available: none"


@pytest.mark.parametrize(
    "error",
    [
        ToolDefinitionError("bad", tool_name="t"),
        ToolNotFoundError("t", ["a", "b"]),
        SpecError("broken", pointer="/paths", source="x.yaml"),
        ConnectionError("down", target="http://127.0.0.1:1"),
        ToolCallError("failed", tool_name="t"),
        ServiceNotConfiguredError("memory_service"),
        AuthError("refused", scheme_name="oauth"),
        SessionNotFoundError("s1"),
        ScriptExhaustedError("no step left"),
    ],
    ids=lambda e: type(e).__name__,
)
def test_errors_survive_pickling_with_their_attributes(error: ToolsetError) -> None:
    import pickle

    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is type(error)
    assert str(copy) == str(error)
    assert copy.__dict__ == error.__dict__


def test_tool_not_found_among_many_names_the_closest_few_not_all() -> None:
    names = [f"repos_{verb}_{thing}" for verb in ("get", "list", "create") for thing in "abcdefg"]
    error = ToolNotFoundError("repos_gett_a", names)
    assert error.available == tuple(sorted(names))  # all of them, as data
    assert error.suggestions[0] == "repos_get_a"
    assert len(error.suggestions) <= 3
    assert "repos_list_g" not in str(error)
    assert f"{len(names)} tools" in str(error)


def test_tool_not_found_bounds_a_huge_name_in_its_message() -> None:
    error = ToolNotFoundError("x" * 1_000_000, ["a", "b"])
    assert len(error.name) == 1_000_000  # the attribute keeps it whole
    assert error.suggestions == ()
    assert str(error) == f"no tool named {'x' * 80!r}...; available: a, b"
