"""The layers of `src/toolsets`: the import graph has no cycle, and nothing below the
agent imports the agent.

The graph is read from the source (every ``import`` statement: at module level, under
``if TYPE_CHECKING:`` and inside functions), so a cycle the type checker or a late import
hides is found too. An edge goes to the module an import names: ``from toolsets.x import
y`` goes to ``toolsets.x.y`` when that is a module, else to ``toolsets.x``. A package's
``__init__`` importing its own submodules is an edge like any other; it closes a cycle
only when a submodule imports the package face back.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import toolsets

PACKAGE = "toolsets"
SRC = Path(toolsets.__file__).resolve().parent.parent
"""Where the package is read from: the one imported (``src/`` in a clone)."""
AGENT = f"{PACKAGE}.agent"
BELOW_THE_AGENT = ["mcp", "openapi", "schema", "models", "adapters"]
"""The subpackages that must work without the agent (with the core, `toolsets._*`)."""


@dataclass(frozen=True, kw_only=True)
class Edge:
    source: str
    target: str
    line: int
    kind: str
    """``"runtime"``, ``"TYPE_CHECKING"`` or ``"local"`` (inside a function)."""

    def __str__(self) -> str:
        where = "" if self.kind == "runtime" else f", {self.kind}"
        return f"{self.source} -> {self.target} (line {self.line}{where})"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(path): path for path in sorted((SRC / PACKAGE).rglob("*.py"))}


def is_package(module: str) -> bool:
    return MODULES[module].name == "__init__.py"


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(
    node: ast.AST, kind: str = "runtime"
) -> Iterator[tuple[ast.Import | ast.ImportFrom, str]]:
    """Every import statement under ``node``, with the kind of place it is in."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Import | ast.ImportFrom):
            yield child, kind
        elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            yield from _imports(child, "local" if kind == "runtime" else kind)
        elif isinstance(child, ast.If) and _is_type_checking(child.test):
            for stmt in child.body:
                yield from _imports(ast.Module(body=[stmt], type_ignores=[]), "TYPE_CHECKING")
            for stmt in child.orelse:
                yield from _imports(ast.Module(body=[stmt], type_ignores=[]), kind)
        else:
            yield from _imports(child, kind)


def _resolved(source: str, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = source.split(".")
    if not is_package(source):
        base.pop()
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def edges_of(source: str, text: str | None = None) -> Iterator[Edge]:
    """The imports of module ``source`` (its file, or ``text`` in its place) of modules
    of `src`."""
    if text is None:
        text = MODULES[source].read_text()
    tree = ast.parse(text, str(MODULES[source]))
    for node, kind in _imports(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            module = _resolved(source, node)
            targets = [
                f"{module}.{alias.name}" if f"{module}.{alias.name}" in MODULES else module
                for alias in node.names
            ]
        for target in dict.fromkeys(targets):
            if target in MODULES and target != source:
                yield Edge(source=source, target=target, line=node.lineno, kind=kind)


GRAPH = {module: list(edges_of(module)) for module in MODULES}


def tangles(graph: dict[str, list[Edge]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan): each holds
    at least one cycle, and a graph without any is a DAG."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for edge in graph[module]:
            if edge.target not in index:
                visit(edge.target)
                low[module] = min(low[module], low[edge.target])
            elif edge.target in stack:
                low[module] = min(low[module], index[edge.target])
        if low[module] == index[module]:
            component = set()
            while True:
                member = stack.pop()
                component.add(member)
                if member == module:
                    break
            if len(component) > 1:
                found.append(component)

    for module in graph:
        if module not in index:
            visit(module)
    return found


def cycle_in(graph: dict[str, list[Edge]], component: set[str]) -> list[Edge]:
    """One cycle through the first module of ``component``, as its edges in order."""
    start = min(component)
    paths: dict[str, list[Edge]] = {start: []}
    todo = [start]
    while todo:  # the shortest way round, breadth first
        module = todo.pop(0)
        for edge in graph[module]:
            if edge.target == start:
                return [*paths[module], edge]
            if edge.target in component and edge.target not in paths:
                paths[edge.target] = [*paths[module], edge]
                todo.append(edge.target)
    raise AssertionError(f"no cycle through {start}")


def cycles(graph: dict[str, list[Edge]]) -> list[list[Edge]]:
    """One cycle for each tangle of the graph."""
    return [cycle_in(graph, component) for component in tangles(graph)]


def described(graph: dict[str, list[Edge]]) -> str:
    """Each tangle's modules and one cycle among them, for a failure message."""
    return "\n".join(
        f"{', '.join(sorted(component))}; for one:\n"
        + "".join(f"  {edge}\n" for edge in cycle_in(graph, component))
        for component in tangles(graph)
    )


def reaching(graph: dict[str, list[Edge]], start: str, goal: str) -> list[Edge] | None:
    """A path of imports from ``start`` to a module of package ``goal``, if any."""
    paths: dict[str, list[Edge]] = {start: []}
    todo = [start]
    while todo:
        module = todo.pop(0)
        for edge in graph[module]:
            if edge.target in paths:
                continue
            paths[edge.target] = [*paths[module], edge]
            if edge.target == goal or edge.target.startswith(f"{goal}."):
                return paths[edge.target]
            todo.append(edge.target)
    return None


def below_the_agent() -> list[str]:
    """The core (`toolsets` and its `_modules`) and every module of `BELOW_THE_AGENT`."""
    core = [m for m in MODULES if m == PACKAGE or (m.count(".") == 1 and not is_package(m))]
    packages = [f"{PACKAGE}.{sub}" for sub in BELOW_THE_AGENT]
    subpackages = [m for m in MODULES for p in packages if m == p or m.startswith(f"{p}.")]
    return sorted({*core, *subpackages})


def test_the_walk_sees_every_kind_of_import_and_resolves_each_to_a_module() -> None:
    text = """
from __future__ import annotations
import typing
from typing import TYPE_CHECKING
from toolsets._tool import Tool, LlmRequest
from .. import _convert
from ... import _json
import toolsets.schema
if TYPE_CHECKING:
    from toolsets.agent import _runner
elif typing.TYPE_CHECKING:
    pass
else:
    from toolsets._errors import ToolsetError
class Holder:
    def method(self) -> None:
        import toolsets.models._llm
"""
    found = [(e.target, e.kind) for e in edges_of("toolsets.mcp.client._toolset", text)]
    assert found == [
        ("toolsets._tool", "runtime"),
        ("toolsets.mcp._convert", "runtime"),
        ("toolsets._json", "runtime"),
        ("toolsets.schema", "runtime"),
        ("toolsets.agent._runner", "TYPE_CHECKING"),
        ("toolsets._errors", "runtime"),
        ("toolsets.models._llm", "local"),
    ]


def test_the_graph_holds_every_module_of_src_and_their_imports() -> None:
    # The tests below would pass on an empty graph.
    assert len(MODULES) > 40
    assert {PACKAGE, f"{PACKAGE}._tool", f"{PACKAGE}.mcp.client._toolset", AGENT} <= GRAPH.keys()
    assert sum(len(edges) for edges in GRAPH.values()) > 200
    assert any(e.target == f"{PACKAGE}._tool" for e in GRAPH[f"{PACKAGE}.mcp.client._toolset"])


def test_the_modules_of_src_import_each_other_without_a_cycle() -> None:
    assert cycles(GRAPH) == [], "modules importing each other:\n" + described(GRAPH)


def test_the_cycle_finder_reports_each_cycle_through_its_edges() -> None:
    def edge(source: str, target: str) -> Edge:
        return Edge(source=source, target=target, line=1, kind="runtime")

    graph = {
        "a": [edge("a", "b")],
        "b": [edge("b", "c"), edge("b", "d")],
        "c": [edge("c", "a")],
        "d": [edge("d", "e")],
        "e": [edge("e", "d")],
    }
    found = sorted(cycles(graph), key=len)
    assert found == [
        [edge("d", "e"), edge("e", "d")],
        [edge("a", "b"), edge("b", "c"), edge("c", "a")],
    ]
    assert cycles({"a": [edge("a", "b")], "b": []}) == []


def test_the_layer_check_reports_the_path_into_the_agent() -> None:
    def edge(source: str, target: str) -> Edge:
        return Edge(source=source, target=target, line=1, kind="local")

    graph = {
        "toolsets.mcp": [edge("toolsets.mcp", "toolsets._tool")],
        "toolsets._tool": [edge("toolsets._tool", "toolsets.agent._run")],
        "toolsets.agent._run": [],
        "toolsets.agents_elsewhere": [],
    }
    assert reaching(graph, "toolsets.mcp", AGENT) == [
        edge("toolsets.mcp", "toolsets._tool"),
        edge("toolsets._tool", "toolsets.agent._run"),
    ]
    graph["toolsets._tool"] = [edge("toolsets._tool", "toolsets.agents_elsewhere")]
    assert reaching(graph, "toolsets.mcp", AGENT) is None


@pytest.mark.parametrize("module", below_the_agent())
def test_nothing_below_the_agent_imports_the_agent(module: str) -> None:
    path = reaching(GRAPH, module, AGENT)
    assert path is None, f"{module} reaches {AGENT}:\n" + "\n".join(f"  {e}" for e in path)


@pytest.mark.parametrize("package", BELOW_THE_AGENT)
def test_importing_a_package_below_the_agent_leaves_the_agent_unimported(package: str) -> None:
    code = (
        f"import sys, {PACKAGE}.{package}\n"
        f"print(sorted(m for m in sys.modules if m == {AGENT!r} or m.startswith({AGENT!r} + '.')))"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert run.stdout.strip() == "[]"


# --- toolsets.mcp: the client never imports the server --------------------------------

MCP = f"{PACKAGE}.mcp"
MCP_CLIENT = f"{MCP}.client"
MCP_SERVER = f"{MCP}.server"
MCP_SHARED = [f"{MCP}._convert", f"{MCP}._relay"]
"""What both sides of MCP use, and may import neither."""
SERVER_SIDE = ("mcp.server", "starlette", "sse_starlette", "uvicorn")
"""The libraries only a server needs."""
SERVER_SIDE_ROOTS = ("starlette", "sse_starlette", "uvicorn")
GATEWAY = [f"{MCP_CLIENT}._toolset"]
"""All the server imports of the client: a gateway serves `McpToolset`s."""


def modules_of(package: str) -> list[str]:
    return [m for m in MODULES if m == package or m.startswith(f"{package}.")]


def foreign_imports(source: str, text: str | None = None) -> Iterator[tuple[str, int]]:
    """The modules outside `src` that ``source`` imports (any kind of import), with
    the line of each."""
    tree = ast.parse(text if text is not None else MODULES[source].read_text())
    for node, _ in _imports(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif node.level == 0 and node.module is not None:
            names = [node.module]
        else:
            continue
        for name in names:
            if name != PACKAGE and not name.startswith(f"{PACKAGE}."):
                yield name, node.lineno


def server_side(name: str) -> bool:
    return any(name == lib or name.startswith(f"{lib}.") for lib in SERVER_SIDE)


def test_the_foreign_import_walk_sees_each_library_module() -> None:
    text = "import mcp.types as mt\nfrom mcp.server.context import X\nfrom . import _convert\n"
    found = list(foreign_imports(f"{MCP_CLIENT}._toolset", text))
    assert found == [("mcp.types", 1), ("mcp.server.context", 2)]
    assert [server_side(name) for name, _ in found] == [False, True]


def test_the_mcp_layout_has_a_client_a_server_and_what_both_share() -> None:
    assert len(modules_of(MCP_CLIENT)) > 5
    assert len(modules_of(MCP_SERVER)) > 5
    assert set(MCP_SHARED) <= MODULES.keys()


@pytest.mark.parametrize("module", [*modules_of(MCP_CLIENT), *MCP_SHARED])
def test_the_mcp_client_and_what_it_shares_never_import_the_server(module: str) -> None:
    path = reaching(GRAPH, module, MCP_SERVER)
    assert path is None, f"{module} reaches {MCP_SERVER}:\n" + "\n".join(f"  {e}" for e in path)
    libraries = [
        f"{name} (line {line})" for name, line in foreign_imports(module) if server_side(name)
    ]
    assert libraries == [], f"{module} imports what only a server needs"


@pytest.mark.parametrize("module", MCP_SHARED)
def test_what_mcp_client_and_server_share_imports_neither(module: str) -> None:
    assert reaching(GRAPH, module, MCP_CLIENT) is None


def test_the_mcp_server_imports_of_the_client_only_what_a_gateway_serves() -> None:
    into_client = {
        edge.target
        for module in modules_of(MCP_SERVER)
        for edge in GRAPH[module]
        if edge.target == MCP_CLIENT or edge.target.startswith(f"{MCP_CLIENT}.")
    }
    assert sorted(into_client) == GATEWAY


LOADED_SERVER_SIDE = f"""
import sys
{{imports}}
print(sorted(m for m in sys.modules if m.startswith({MCP_SERVER!r})))
print(sorted(m for m in sys.modules if m.split(".")[0] in {SERVER_SIDE_ROOTS!r}
             or m == "mcp.server" or m.startswith("mcp.server.")))
"""


def test_importing_the_mcp_client_loads_nothing_of_the_server_side_beyond_the_sdk() -> None:
    """The SDK's own ``import mcp`` loads some of ``mcp.server``, Starlette and uvicorn
    (its package face imports its stdio server); importing our client adds none."""

    def loaded(imports: str) -> tuple[list[str], set[str]]:
        code = LOADED_SERVER_SIDE.format(imports=imports)
        run = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
        )
        ours, libraries = run.stdout.strip().splitlines()
        return ast.literal_eval(ours), set(ast.literal_eval(libraries))

    _, sdk = loaded("import mcp")
    ours, libraries = loaded(
        "import toolsets.mcp\nfrom toolsets.mcp import McpToolset, Stdio, load_mcp_config\n"
        "import toolsets.mcp.client"
    )
    assert ours == []
    assert sorted(libraries - sdk) == []
    served, _ = loaded("from toolsets.mcp import McpServer")
    assert f"{MCP_SERVER}._server" in served  # the check sees a server when there is one


# --- toolsets.mcp: small modules, short functions -------------------------------------

MAX_FUNCTION_LINES = 60
"""The longest function (or method) of `toolsets.mcp`, from its ``def`` line to its last,
docstring included."""
SERVER_MODULE = f"{MCP_SERVER}._server"
MAX_SERVER_LINES = 300
"""`McpServer`'s own module: the composition of the features, not the features."""
MAX_MODULE_LINES = 400
"""Every other module of `toolsets.mcp` (client, server and what both share): a module
that grows past it is split along a seam, into modules named for what they hold."""


def long_functions(source: str, text: str | None = None) -> list[str]:
    """The functions of ``source`` longer than `MAX_FUNCTION_LINES`, as ``name (line,
    length)``."""
    tree = ast.parse(text if text is not None else MODULES[source].read_text())
    return [
        f"{node.name} (line {node.lineno}, {node.end_lineno - node.lineno + 1} lines)"
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    ]


def lines_of(module: str) -> int:
    return len(MODULES[module].read_text().splitlines())


def test_the_length_check_counts_a_function_from_its_def_to_its_last_line() -> None:
    body = "".join(f"    x = {n}\n" for n in range(MAX_FUNCTION_LINES - 2))
    fits = f'def fits():\n    """Doc."""\n{body}'
    too_long = f'class C:\n  async def too_long(self):\n    """Doc."""\n{body}    pass\n'
    assert long_functions(SERVER_MODULE, fits) == []
    assert long_functions(SERVER_MODULE, too_long) == [
        f"too_long (line 2, {MAX_FUNCTION_LINES + 1} lines)"
    ]


@pytest.mark.parametrize("module", modules_of(MCP))
def test_no_function_of_the_mcp_package_is_over_sixty_lines(module: str) -> None:
    assert long_functions(module) == []


def test_mcp_servers_own_module_composes_and_stays_small() -> None:
    assert lines_of(SERVER_MODULE) < MAX_SERVER_LINES


@pytest.mark.parametrize("module", modules_of(MCP))
def test_each_module_of_the_mcp_package_stays_under_four_hundred_lines(module: str) -> None:
    assert lines_of(module) < MAX_MODULE_LINES
