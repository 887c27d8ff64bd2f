"""A clone and a plain install work on their own. What `pyproject.toml` declares is what
`src/` imports: a plain `pip install` (no extras) brings every package a module imports
unless the module names its extra, and the core brings nothing `src/` does not use. The
test suite reads nothing outside the repository (and the npm peers `scripts/test.sh`
installs).

A module needs an extra when it, or the `__init__.py` of a package around it, names the
install line (`pip install '<distribution>[extra]'`), as STYLE's optional-extras rule has
every such module do. `scripts/test.sh` checks the same from the outside: a venv with
`pip install .` alone runs every example and every snippet of the README and docs/
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from importlib.metadata import packages_distributions
from pathlib import Path

from tests.helpers import ROOT

SRC = ROOT / "src" / "toolsets"
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
DISTRIBUTION: str = PROJECT["name"]
INSTALL_LINE = re.compile(r"pip install\s+['\"]?(toolsets[\w.-]*)(?:\[([^\]]*)\])?")


def normalized(name: str) -> str:
    """A distribution name as the package index compares it (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def names(requirements: list[str]) -> list[str]:
    """The normalized distribution names of requirement strings like ``"mcp>=2.3,<3"``."""
    return [normalized(re.split(r"[\s\[<>=!~;@]", r, maxsplit=1)[0]) for r in requirements]


def declared(requirements: list[str]) -> set[str]:
    return set(names(requirements))


CORE = declared(PROJECT["dependencies"])
EXTRAS = {name: declared(reqs) for name, reqs in PROJECT["optional-dependencies"].items()}


def brought_by(extra: str) -> set[str]:
    """What installing the extra brings beside the core, following ``<us>[other]`` lines."""
    found = set(EXTRAS[extra])
    for requirement in PROJECT["optional-dependencies"][extra]:
        name, _, others = requirement.partition("[")
        if normalized(name) == normalized(DISTRIBUTION):
            for other in others.rstrip("]").split(","):
                found |= brought_by(other.strip())
    return found


DISTRIBUTIONS_OF = packages_distributions()


@dataclass(frozen=True, kw_only=True)
class Import:
    where: str
    """``path:line`` of the import statement."""
    module: str
    """The imported top-level module, e.g. ``yaml``."""
    type_only: bool
    """Under ``if TYPE_CHECKING:``: needed by the type checker, not at run time."""

    @property
    def distributions(self) -> set[str]:
        # A module that is not installed here is assumed to be its own distribution.
        return {normalized(d) for d in DISTRIBUTIONS_OF.get(self.module, [self.module])}


def third_party_imports(path: Path, local: frozenset[str] = frozenset()) -> Iterator[Import]:
    tree = ast.parse(path.read_text(), str(path))
    type_only: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            type_only.update(id(child) for stmt in node.body for child in ast.walk(stmt))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules = [node.module]
        else:
            continue
        for name in modules:
            top = name.partition(".")[0]
            if top in sys.stdlib_module_names or top in {"toolsets", "__future__", *local}:
                continue
            where = f"{path.relative_to(ROOT)}:{node.lineno}"
            yield Import(where=where, module=top, type_only=id(node) in type_only)


def extras_named_for(path: Path) -> set[str]:
    """The extras a module names in its install lines, or its enclosing packages do."""
    texts = [path.read_text()]
    for package in path.relative_to(SRC).parents:
        init = SRC / package / "__init__.py"
        if package != Path(".") and init != path and init.exists():
            texts.append(init.read_text())
    return {
        extra.strip()
        for text in texts
        for _, extras in INSTALL_LINE.findall(text)
        for extra in extras.split(",")
        if extra.strip()
    }


IMPORTS = [
    (path, found) for path in sorted(SRC.rglob("*.py")) for found in third_party_imports(path)
]


def test_every_third_party_import_of_src_is_a_declared_dependency_of_its_extra() -> None:
    assert IMPORTS, "the walk found no third-party import at all"
    undeclared = []
    for path, found in IMPORTS:
        allowed = set(CORE)
        for extra in extras_named_for(path) & EXTRAS.keys():
            allowed |= brought_by(extra)
        if found.type_only:
            allowed |= brought_by("dev")
        if not found.distributions & allowed:
            undeclared.append((found.where, found.module, sorted(found.distributions)))
    assert not undeclared, "\n".join(f"{w}: {m} (from {', '.join(d)})" for w, m, d in undeclared)


def test_the_dev_extra_brings_every_package_the_tests_import() -> None:
    allowed = CORE | brought_by("dev")
    local = frozenset({"tests", "scripts", "fixtures"})
    undeclared = [
        f"{found.where}: {found.module}"
        for path in sorted((ROOT / "tests").rglob("*.py"))
        for found in third_party_imports(path, local)
        if not found.distributions & allowed
    ]
    assert undeclared == []


def test_the_core_dependencies_are_each_imported_by_src() -> None:
    imported = {d for _, found in IMPORTS if not found.type_only for d in found.distributions}
    assert sorted(CORE - imported) == []


def test_the_dependency_lists_are_sorted_one_per_line() -> None:
    # Sorted lists merge cleanly when several branches each add a dependency.
    text = (ROOT / "pyproject.toml").read_text()
    for requirements in [PROJECT["dependencies"], *PROJECT["optional-dependencies"].values()]:
        assert names(requirements) == sorted(names(requirements))
        assert [r for r in requirements if f'\n    "{r}",\n' not in text] == []


def test_every_install_line_names_this_distribution_and_an_extra_it_declares() -> None:
    texts = [*SRC.rglob("*.py"), *ROOT.glob("examples/*.py"), ROOT / "README.md"]
    texts += ROOT.glob("docs/**/*.md")
    lines = [(p, m) for p in texts for m in INSTALL_LINE.findall(p.read_text())]
    for path, (name, extras) in lines:
        assert name == DISTRIBUTION, path
        for extra in filter(None, (e.strip() for e in extras.split(","))):
            assert extra in EXTRAS, (path, extra)


def test_the_distribution_is_not_named_like_the_unrelated_toolsets_on_pypi() -> None:
    # `toolsets` on PyPI is another project: pip would offer it as an "upgrade" of ours.
    assert normalized(DISTRIBUTION) != "toolsets"
    urls = PROJECT.get("urls", {}).values()
    assert not [url for url in urls if "pypi.org/project/toolsets/" in url]


def test_the_tests_read_nothing_beside_the_repository() -> None:
    # CI and a user's clone have nothing beside the repository: real documents come
    # from the npm peers (peers/package.json) or are fixtures here.
    outside = re.compile(r"ROOT\.parent\b|\.\./shared|/work/")
    found = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in sorted((ROOT / "tests").rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if outside.search(line) and path != Path(__file__)
    ]
    assert found == []


def test_the_mcp_sdk_is_not_shadowed_by_the_tests_mcp_folder() -> None:
    # tests/ is a package: pytest puts the repository root on sys.path, not tests/, where
    # the folder mirroring toolsets.mcp would stand in for the SDK of the same name.
    import mcp

    assert not Path(mcp.__file__ or "").is_relative_to(ROOT / "tests")
    assert str(ROOT / "tests") not in sys.path
