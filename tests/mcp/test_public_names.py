"""The public face of `toolsets.mcp`, read by reflection and pinned: every name of
``__all__``, what kind of thing it is, its qualified name, and for each class and function
its signature and public members. Where the modules behind the face live is free (they
moved into ``client/`` and ``server/``); what a user imports from ``toolsets.mcp`` is not.

The pins are in ``public_names.json``, beside this file. A change of the public API
changes them on purpose: regenerate with ``python -m tests.mcp.test_public_names`` and
review the diff.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import toolsets.mcp

PINS = Path(__file__).with_name("public_names.json")

_OURS = re.compile(r"\btoolsets(?:\.\w+)*\.(\w+)")
"""A dotted path into toolsets, shortened to its last part: where a name is defined may
change; what it is called may not."""


def _shown(value: object) -> str:
    return _OURS.sub(r"\1", repr(value) if not isinstance(value, str) else value)


def _signature(member: Any) -> str | None:
    try:
        return _shown(str(inspect.signature(member)))
    except (TypeError, ValueError):  # a builtin without one
        return None


def _members(cls: type) -> dict[str, str | None]:
    """The public members of ``cls`` (its own and inherited), each as a signature, or
    the kind of attribute it is."""
    names = {name for name in dir(cls) if not name.startswith("_")}
    if dataclasses.is_dataclass(cls):
        names |= {field.name for field in dataclasses.fields(cls)}
    found: dict[str, str | None] = {}
    for name in sorted(names):
        raw = inspect.getattr_static(cls, name, None)
        if isinstance(raw, property | staticmethod | classmethod):
            kind = type(raw).__name__
            found[name] = kind if kind == "property" else f"{kind} {_signature(getattr(cls, name))}"
        elif callable(raw):
            found[name] = _signature(raw)
        else:
            found[name] = "attribute"
    return found


def fingerprint(name: str, value: object) -> dict[str, Any]:
    """What ``value``, exported as ``name``, is, as far as a user can tell."""
    if inspect.isclass(value):
        return {
            "kind": "class",
            "qualname": value.__qualname__,
            "init": _signature(value),
            "members": _members(value),
        }
    if inspect.isfunction(value):
        return {"kind": "function", "qualname": value.__qualname__, "signature": _signature(value)}
    if name.isupper():  # a constant
        return {"kind": type(value).__name__, "value": value}
    return {"kind": "alias", "shown": _shown(value)}


def public_names() -> dict[str, dict[str, Any]]:
    return {name: fingerprint(name, getattr(toolsets.mcp, name)) for name in toolsets.mcp.__all__}


def test_the_mcp_package_exports_exactly_the_pinned_names_each_as_it_was() -> None:
    pinned = json.loads(PINS.read_text())
    found = public_names()
    assert sorted(found) == sorted(pinned)
    assert len(toolsets.mcp.__all__) == len(set(toolsets.mcp.__all__))
    for name, expected in pinned.items():
        assert found[name] == expected, name


def test_every_public_name_imports_from_the_package_face_in_a_fresh_process() -> None:
    names = ", ".join(toolsets.mcp.__all__)
    code = f"from toolsets.mcp import {names}\nfrom toolsets.mcp import *\nprint('ok')"
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert run.stdout.strip() == "ok"


def test_a_server_keeps_its_public_attributes() -> None:
    server = toolsets.mcp.McpServer([])
    public = sorted(name for name in vars(server) if not name.startswith("_"))
    assert public == [
        "auth",
        "callbacks",
        "default_timeout",
        "name",
        "page_size",
        "server",
        "spent_states",
        "toolset",
    ]


def test_each_class_and_function_is_the_very_object_its_module_defines() -> None:
    for name in toolsets.mcp.__all__:
        value = getattr(toolsets.mcp, name)
        if inspect.isclass(value) or inspect.isfunction(value):
            assert value.__module__.startswith("toolsets.mcp."), name
            home = importlib.import_module(value.__module__)
            assert getattr(home, value.__qualname__) is value, name


if __name__ == "__main__":
    PINS.write_text(json.dumps(public_names(), indent=1, sort_keys=True) + "\n")


def test_the_names_the_face_gives_on_first_use_are_the_server_packages_own() -> None:
    """The face keeps its own list of the server's names (reading the server package's
    would import it): the two lists are one."""
    import toolsets.mcp.server

    assert set(toolsets.mcp.server.__all__) == toolsets.mcp._SERVER
    for name in toolsets.mcp.server.__all__:
        assert getattr(toolsets.mcp, name) is getattr(toolsets.mcp.server, name)
