"""The documentation site: it builds in strict mode, every link and anchor resolves, every
public name has its reference, the troubleshooting page covers the error tree, and a real
browser (Debian's chromium, driven by playwright) reads it from a local HTTP server.

The site is built once for the module (scripts/site.py, about ten seconds); its snippets
run in tests/test_docs.py. The browser's screenshots go to artifacts/site-screenshots/.

The browser is driven by playwright's Python package given Debian's chromium as its
``executable_path`` (``TOOLSETS_CHROMIUM``, else ``chromium`` on PATH): nothing is
downloaded (the package carries its driver; no ``playwright install``), it reports console
errors, page errors and failed requests as events, and its locators wait by themselves
and reach into the search's shadow DOM. Selenium would need Debian's chromium-driver too,
and reads console logs and shadow roots less directly.
"""

from __future__ import annotations

import contextlib
import functools
import html.parser
import http.server
import importlib
import os
import pkgutil
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest
from scripts import site as site_script

import toolsets
from tests.helpers import ROOT

SITE = site_script.SITE
SCREENSHOTS = ROOT / "artifacts" / "site-screenshots"


@pytest.fixture(scope="module")
def built() -> Path:
    done = site_script.build()
    assert done.returncode == 0, done.stdout + done.stderr
    return SITE


class _Page(html.parser.HTMLParser):
    """The ids and the links of one built page."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if found.get("id"):
            self.ids.add(str(found["id"]))
        if tag == "a" and found.get("href"):
            self.links.append(str(found["href"]))


@functools.cache
def parsed(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def target_of(page: Path, href: str) -> tuple[Path, str] | None:
    """The built file and fragment an internal link of ``page`` leads to (None for a link
    to elsewhere; an absolute path is the site's, as the 404 page has them)."""
    parts = urlsplit(href)
    if parts.scheme or parts.netloc or href.startswith(("mailto:", "javascript:")):
        return None
    if not parts.path:
        return page, unquote(parts.fragment)
    base = SITE if parts.path.startswith("/") else page.parent
    path = (base / unquote(parts.path).lstrip("/")).resolve()
    if path.is_dir() or parts.path.endswith("/"):
        path = path / "index.html"
    return path, unquote(parts.fragment)


def public_modules() -> list[str]:
    """Every public module of toolsets that exports names (``__all__`` not empty)."""
    names = ["toolsets"]
    for found in pkgutil.walk_packages(toolsets.__path__, "toolsets."):
        if not any(part.startswith("_") for part in found.name.split(".")):
            names.append(found.name)
    return [name for name in names if getattr(importlib.import_module(name), "__all__", [])]


def test_the_site_builds_in_strict_mode(built: Path) -> None:
    assert (built / "index.html").exists()
    assert (built / "search.json").exists()


def test_strict_mode_fails_on_a_link_to_an_anchor_no_page_has(tmp_path: Path) -> None:
    # What the strict build promises, with the pinned Zensical: a broken anchor fails it.
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("# Home\n\nSee [there](other.md#nowhere).\n")
    (tmp_path / "docs" / "other.md").write_text("# Other\n\n## Somewhere\n")
    (tmp_path / "mkdocs.yml").write_text("site_name: t\ntheme:\n  font: false\n")
    zensical = Path(sys.executable).with_name("zensical")
    env = {**os.environ, "NO_COLOR": "1"}
    done = subprocess.run(
        [str(zensical), "build", "--strict", "-f", str(tmp_path / "mkdocs.yml")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    assert done.returncode != 0
    assert "anchor does not exist" in done.stdout + done.stderr


def test_every_internal_link_of_the_built_site_and_its_anchor_resolve(built: Path) -> None:
    broken = []
    for page in sorted(built.rglob("*.html")):
        for href in parsed(page).links:
            target = target_of(page, href)
            if target is None:
                continue
            path, fragment = target
            if not path.exists():
                broken.append(f"{page.relative_to(built)}: {href} (no such page)")
            elif fragment and path.suffix == ".html" and fragment not in parsed(path).ids:
                broken.append(f"{page.relative_to(built)}: {href} (no such anchor)")
    assert broken == []


def test_every_link_of_the_readme_resolves_on_the_site(built: Path) -> None:
    readme = (ROOT / "README.md").read_text()
    broken = []
    for href in re.findall(r"\]\(([^)\s]+)\)", readme):
        if urlsplit(href).scheme:
            continue
        path, _, fragment = href.partition("#")
        if not (ROOT / path).exists():
            broken.append(href)
        elif path.startswith("docs/") and path.endswith(".md") and fragment:
            page = built / path.removeprefix("docs/").replace(".md", ".html")
            if fragment not in parsed(page).ids:
                broken.append(href)
    assert broken == []


def test_the_readme_stays_short_and_links_every_guide() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 300
    for page in ["guides/mcp.md", "guides/openapi.md", "guides/frameworks.md"]:
        assert f"(docs/{page})" in readme


def test_the_reference_pages_cover_every_public_module() -> None:
    assert sorted(public_modules()) == sorted(module for module, _ in site_script.MODULES)


def test_every_public_name_has_its_reference_and_no_private_one_does(built: Path) -> None:
    missing, private = [], []
    for module, _ in site_script.MODULES:
        page = built / "reference" / f"{module}.html"
        ids = parsed(page).ids
        for name in importlib.import_module(module).__all__:
            if f"{module}.{name}" not in ids:
                missing.append(f"{module}.{name}")
        private += [i for i in ids if "." in i and any(p.startswith("_") for p in i.split("."))]
    assert missing == []
    assert private == []


def test_the_command_reference_is_every_commands_own_help(built: Path) -> None:
    import click

    from toolsets.cli._app import cli

    text = (ROOT / "docs" / "cli" / "commands.md").read_text()
    context = click.Context(cli, info_name="toolsets")
    for name in cli.list_commands(context):
        command = cli.get_command(context, name)
        assert command is not None
        assert f"`toolsets {name}`" in text
        first = (command.help or "").strip().splitlines()[0]
        assert " ".join(first.split()[:6]) in " ".join(text.split())
    assert (built / "cli" / "commands.html").exists()


def error_classes() -> set[type[BaseException]]:
    """Every class of the error tree, each module of toolsets imported."""
    for found in pkgutil.walk_packages(toolsets.__path__, "toolsets."):
        importlib.import_module(found.name)
    seen: set[type[BaseException]] = set()
    todo: list[type[BaseException]] = [toolsets.ToolsetError]
    while todo:
        cls = todo.pop()
        if cls.__module__.startswith("toolsets") and cls not in seen:
            seen.add(cls)
            todo += cls.__subclasses__()
    return seen


def test_the_troubleshooting_page_has_a_section_for_every_error_class() -> None:
    text = (ROOT / "docs" / "troubleshooting.md").read_text()
    sections = set(re.findall(r"^## `(\w+)`$", text, re.M))
    classes = {cls.__name__ for cls in error_classes()}
    assert sections == classes
    tree = text.split("```\nToolsetError\n", 1)[1].split("```", 1)[0]
    assert {name for name in classes if name not in tree} == {"ToolsetError"}
    for cls in error_classes():
        section = text.split(f"## `{cls.__name__}`\n", 1)[1].split("\n## ", 1)[0]
        assert "**Cause:**" in section
        assert "**Fix:**" in section


def test_the_benchmarks_page_shows_every_chart_with_its_machine_date_and_command() -> None:
    from scripts import charts

    page = (ROOT / "docs" / "benchmarks.md").read_text()
    shown = re.findall(r"!\[[^\]]+\]\((charts/[\w.]+\.svg)\)", page)
    assert sorted(shown) == sorted(f"charts/{name}.svg" for name in charts.DRAW)
    for name in charts.DRAW:
        svg = (ROOT / "docs" / "charts" / f"{name}.svg").read_text()
        assert re.search(r"\d+ CPUs .*, \d{4}-\d{2}-\d{2}", svg), name
        assert f"$ python {charts.BENCHES[name].args[0]}" in svg, name


# --- in a real browser -------------------------------------------------------------------


def chromium() -> str:
    found = os.environ.get("TOOLSETS_CHROMIUM") or shutil.which("chromium")
    if found is None:
        pytest.fail("the site's browser check needs Debian's chromium (apt-get install chromium)")
    return found


@pytest.fixture(scope="module")
def served(built: Path) -> Iterator[str]:
    handler = functools.partial(_QuietHandler, directory=str(built))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def failed(request: Any) -> list[str]:
    """A request that failed, unless a navigation cut it short (the page it was for left:
    Chromium's ERR_ABORTED, e.g. the search's worker still loading)."""
    reason = request.failure or ""
    return [] if "ERR_ABORTED" in reason else [f"failed: {request.url} ({reason})"]


@contextlib.contextmanager
def browser_page() -> Iterator[tuple[Any, list[str]]]:
    """A page of headless chromium, and the problems it met: console errors, uncaught
    exceptions, failed requests."""
    from playwright.sync_api import sync_playwright

    problems: list[str] = []
    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=chromium(), args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.set_default_timeout(15_000)
            page.on(
                "console",
                lambda message: problems.append(message.text) if message.type == "error" else None,
            )
            page.on("pageerror", lambda error: problems.append(str(error)))
            page.on("requestfailed", lambda request: problems.extend(failed(request)))
            yield page, problems
        finally:
            browser.close()


def heading(page: Any) -> str:
    return str(page.locator("h1").first.inner_text()).rstrip("¶")


def test_a_browser_reads_the_site_navigates_it_and_finds_a_name_by_search(served: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    with browser_page() as (page, problems):
        # The home page renders.
        page.goto(f"{served}/")
        assert heading(page) == "toolsets"
        page.screenshot(path=str(SCREENSHOTS / "home.png"))

        # The navigation leads to a guide.
        page.get_by_role("link", name="MCP servers to agents").first.click()
        page.wait_for_url(f"{served}/guides/mcp.html")
        assert heading(page) == "MCP servers to agents"
        assert page.locator(".highlight pre").count() >= 1  # its example, highlighted
        page.screenshot(path=str(SCREENSHOTS / "guide.png"))

        # The search box finds a public name's reference page.
        page.locator("button.md-search__button").first.click()
        page.get_by_role("combobox", name="Search").fill("OpenApiToolset")
        found = page.locator("a[role=option][href*='#toolsets.openapi.OpenApiToolset']")
        found.first.wait_for()
        page.screenshot(path=str(SCREENSHOTS / "search.png"))
        found.first.click()
        page.wait_for_url(re.compile(r".*/reference/toolsets\.openapi\.html.*"))
        named = page.locator("[id='toolsets.openapi.OpenApiToolset']")
        assert named.count() == 1
        assert "OpenApiToolset" in named.inner_text()

        # A reference page renders its docstrings.
        page.goto(f"{served}/reference/toolsets.html")
        assert page.locator("[id='toolsets.Tool']").count() == 1
        assert page.locator(".doc-contents").count() > 50
        page.screenshot(path=str(SCREENSHOTS / "reference.png"))
    assert problems == []


def test_the_built_files_read_in_a_browser_without_a_server(built: Path) -> None:
    # Plain files: opened from the file system, the pages render and their links work
    # (the search needs them served: browsers do not let a page fetch file:// URLs).
    with browser_page() as (page, problems):
        page.goto((built / "index.html").as_uri())
        assert heading(page) == "toolsets"
        page.get_by_role("link", name="OpenAPI specs to tools").first.click()
        page.wait_for_url((built / "guides" / "openapi.html").as_uri())
        assert heading(page) == "OpenAPI specs to tools"
        page.get_by_role("link", name="Troubleshooting").first.click()
        page.wait_for_url((built / "troubleshooting.html").as_uri())
        assert page.locator("[id='toolseterror']").count() == 1
    # What the search asks for from there (its index, its script) is all that may fail:
    # each failed request is named (the console's lines of them are not).
    unnamed = "Failed to load resource: net::ERR_FILE_NOT_FOUND"
    assert [p for p in problems if "/search." not in p and p != unnamed] == []
