"""Run what a user runs first, with the Python running this script: import every module
of the installed toolsets, run every file in examples/ and every python snippet of
README.md and of the documentation site's pages (docs/), and check the lines each
snippet's ``# → `` comments promise.

    python scripts/run_docs.py

`scripts/test.sh` runs it with a venv made by ``pip install .`` alone (no extras), so a
dependency the plain install lacks fails CI; ``tests/test_docs.py`` runs the same
snippets and examples one by one in the test suite. Exits 1 if anything failed.
"""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROMISE = re.compile(r"^\s*print\(.*\)\s*# → (.+)$", re.M)


def pages() -> list[Path]:
    """The pages whose snippets run: README.md, then the site's pages in docs/."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def page_snippets(page: Path) -> list[str]:
    """The python code blocks of one page, in order."""
    return re.findall(r"```python\n(.*?)```", page.read_text(), re.S)


def snippets() -> dict[str, str]:
    """Every python code block of README.md and docs/, each once, by where it first
    appears (``docs/guides/mcp.md:0``): the README shows a few of the site's own."""
    found: dict[str, str] = {}
    for page in pages():
        for number, code in enumerate(page_snippets(page)):
            if code not in found.values():
                found[f"{page.relative_to(ROOT)}:{number}"] = code
    return found


def examples() -> list[Path]:
    return sorted((ROOT / "examples").glob("*.py"))


def run_python(args: list[str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run this Python as a user would, from the repository's root; warnings are errors."""
    env = {**os.environ, "PYTHONWARNINGS": "error"}
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env
    )


def promises(code: str) -> list[str]:
    """What ``print(...)  # → text`` lines promise: a printed line equal to ``text``, or
    starting with it when it ends with ``...``."""
    found = PROMISE.findall(code)
    if len(found) != code.count("# → "):
        raise ValueError(f"a '# → ' comment that is not on a print(...) line:\n{code}")
    return found


def broken_promises(code: str, stdout: str) -> list[str]:
    """The promises of ``code`` that its output ``stdout`` does not keep."""
    printed = stdout.splitlines()
    return [
        expected
        for expected in promises(code)
        if not (
            any(line.startswith(expected[:-3]) for line in printed)
            if expected.endswith("...")
            else expected in printed
        )
    ]


INSTALL_LINE = re.compile(r"pip install '[^']*\[[a-z0-9-]+\]'")
"""What an ImportError of a module needing an extra names (`toolsets._install.install_line`:
the clone it came from, or ``'.[extra]'``)."""


NEEDS = re.compile(r"# needs the \[([a-z0-9-]+)\] extra")
"""How a snippet says it needs an extra (the plain install cannot run it): a comment
``# needs the [search] extra``, on the line that needs it."""


def declared_extras(code: str) -> set[str]:
    """The extras ``code`` says it needs."""
    return set(NEEDS.findall(code))


def missing_extra(stderr: str) -> str | None:
    """The extra a run's last line, an ImportError of a module that names the line to
    install it, asks for; None when the run did not end so."""
    last = stderr.strip().splitlines()[-1:] or [""]
    named = INSTALL_LINE.search(last[0])
    if not last[0].startswith("ImportError") or named is None:
        return None
    return named.group(0).rsplit("[", 1)[1].rstrip("]'")


def extra_problem(code: str, returncode: int, stderr: str) -> str | None:
    """Why a snippet's run breaks what the page says of it, as far as extras go: it
    needed an extra it does not declare (the page would promise it runs in the plain
    install). None when it ran, or stopped on an extra it declares."""
    if returncode == 0:
        return None
    extra = missing_extra(stderr)
    if extra is None or extra in declared_extras(code):
        return None
    return f"needs the [{extra}] extra and does not say so (# needs the [{extra}] extra)"


def module_problems() -> list[str]:
    """Import every module of the installed toolsets: each imports, or (needing an extra)
    raises ImportError naming the line that installs the extra."""
    import toolsets

    package = Path(toolsets.__file__).parent
    names = sorted(
        ".".join(("toolsets", *path.relative_to(package).with_suffix("").parts)).removesuffix(
            ".__init__"
        )
        for path in package.rglob("*.py")
    )
    problems = []
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            if INSTALL_LINE.search(str(exc)) is None:
                problems.append(f"{name}: {exc!r}")
    return problems


def main() -> int:
    failures = [f"import {problem}" for problem in module_problems()]
    print(f"{'FAIL' if failures else 'ok'}  every module of toolsets imports", flush=True)
    for example in examples():
        done = run_python([str(example)])
        ok = done.returncode == 0
        print(f"{'ok' if ok else 'FAIL'}  {example.relative_to(ROOT)}", flush=True)
        if not ok:
            failures.append(f"{example.relative_to(ROOT)}:\n{done.stderr}")
    for number, code in snippets().items():
        done = run_python(["-c", code])
        first = code.strip().splitlines()[0]
        problem = extra_problem(code, done.returncode, done.stderr)
        if problem is None and done.returncode != 0 and missing_extra(done.stderr):
            # A snippet that says it needs an extra, in a venv without it: the import
            # said which line installs it, which is what a user must see. The test suite
            # (tests/test_docs.py, every extra installed) runs it for real.
            extras = ", ".join(sorted(declared_extras(code)))
            print(f"skip  snippet {number} ({first}): needs [{extras}]", flush=True)
            continue
        if problem is not None:
            print(f"FAIL  snippet {number} ({first}): {problem}", flush=True)
            failures.append(f"snippet {number}: {problem}")
            continue
        broken = broken_promises(code, done.stdout) if done.returncode == 0 else []
        ok = done.returncode == 0 and not broken
        print(f"{'ok' if ok else 'FAIL'}  snippet {number} ({first})", flush=True)
        if not ok:
            failures.append(f"snippet {number}: {broken}\n{done.stderr}")
    for failure in failures:
        print(f"\n{failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
