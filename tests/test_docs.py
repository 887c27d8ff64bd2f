"""Every snippet of the README and of the documentation site (docs/) and every example
runs, as a user would run it (the snippets and the promise check come from
scripts/run_docs.py, which scripts/test.sh also runs in a venv made by a plain
`pip install .`). tests/test_site.py checks the site itself."""

from __future__ import annotations

from pathlib import Path

import pytest
from scripts.run_docs import (
    ROOT,
    broken_promises,
    declared_extras,
    examples,
    extra_problem,
    module_problems,
    page_snippets,
    run_python,
    snippets,
)

SNIPPETS = snippets()
EXAMPLES = examples()


def test_the_pages_have_snippets_and_the_repo_has_examples() -> None:
    assert len(SNIPPETS) >= 34  # the 34 of the README before the site took them over
    assert all("# → " in code for code in SNIPPETS.values()), "every snippet promises output"
    assert EXAMPLES


def test_the_readme_shows_snippets_the_site_runs() -> None:
    readme = page_snippets(ROOT / "README.md")
    assert len(readme) >= 3  # one per job
    assert [code for code in readme if code not in SNIPPETS.values()] == []


@pytest.mark.parametrize("code", SNIPPETS.values(), ids=SNIPPETS.keys())
def test_a_snippet_runs_and_prints_what_its_comments_promise(code: str) -> None:
    done = run_python(["-c", code])
    assert done.returncode == 0, done.stderr
    assert broken_promises(code, done.stdout) == [], done.stdout


def test_a_promise_is_kept_by_an_equal_line_or_a_prefix_ending_in_dots() -> None:
    code = "print(a)  # → 1\nprint(b)  # → two...\nprint(c)  # → 3\n"
    assert broken_promises(code, "1\ntwo and more\n33\n") == ["3"]
    with pytest.raises(ValueError, match="not on a print"):
        broken_promises("x = 1  # → 1\n", "1\n")


def test_a_snippet_may_stop_on_an_extra_only_when_it_says_it_needs_it() -> None:
    """What keeps the page's promise true: the plain install runs every snippet except
    those that say which extra they need (scripts/run_docs.py runs them there)."""
    stopped = "Traceback...\nImportError: x needs bm25s: pip install '/clone[search]'\n"
    said = "from toolsets import searchable  # needs the [search] extra\n"
    assert extra_problem(said, 1, stopped) is None
    assert extra_problem(said, 0, "") is None
    problem = extra_problem("from toolsets import searchable\n", 1, stopped)
    assert problem is not None
    assert "# needs the [search] extra" in problem
    other = "from toolsets import searchable  # needs the [code] extra\n"
    assert extra_problem(other, 1, stopped) is not None
    assert extra_problem("raise ImportError('x')", 1, "ImportError: x") is None  # no extra


@pytest.mark.parametrize("page", ["README.md", "docs/getting-started.md"])
def test_the_set_up_section_names_every_extra_a_snippet_needs(page: str) -> None:
    text = (ROOT / page).read_text()
    set_up = text.split("## Set up", 1)[1].split("\n## ", 1)[0]
    needed = set().union(*(declared_extras(code) for code in SNIPPETS.values()))
    assert {"search", "code", "pydantic-ai", "smolagents"} <= needed
    assert {extra for extra in needed if f"[{extra}]" not in set_up} == set()
    assert "# needs the [...] extra" in set_up


def test_every_module_imports_or_names_the_extra_it_needs() -> None:
    assert module_problems() == []


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_an_example_runs(example: Path) -> None:
    done = run_python([str(example)])
    assert done.returncode == 0, done.stderr


def test_the_quickstart_example_shows_a_result_an_action_and_a_field_error() -> None:
    out = run_python([str(ROOT / "examples" / "quickstart.py")]).stdout
    assert "units_convert_distance" in out
    assert "26.219" in out
    assert "'marathon.txt': 0" in out
    assert '"to_unit"' in out


def test_the_offline_agent_example_runs_the_whole_cycle() -> None:
    out = run_python([str(ROOT / "examples" / "agent_offline.py")]).stdout
    assert 'get_weather → "sunny, 24 °C"' in out
    assert '"fields": {"km"' in out
    assert "(waiting)" in out
    assert "Book a trip to Lisbon for 3 nights?" in out
    assert "TRIP-0042" in out
    assert "'booking': 'Lisbon, 3 nights'" in out


def test_the_mcp_agent_example_confirms_calls_and_survives_a_crash() -> None:
    out = run_python([str(ROOT / "examples" / "agent_mcp.py")]).stdout
    assert "delete_file: read-only=False needs confirmation=True" in out
    assert "The sum is 42; deleted /tmp/report.txt." in out
    assert "server crashed:" in out
    assert "next call, new server: {'result': 'back'}" in out


def test_the_openapi_agent_example_shows_the_real_apis_answers() -> None:
    out = run_python([str(ROOT / "examples" / "agent_openapi.py")]).stdout
    assert "books_remove: Remove a book from the catalogue (writes, asks first)" in out
    assert "health" not in out  # untagged: left out by select_operations(tags=...)
    assert 'stock_get → {"isbn": "9780141439587", "copies": 3}' in out
    (asked,) = [line for line in out.splitlines() if line.startswith("asks ann: Allow DELETE")]
    assert "9780141439686" in asked
    assert "On the shelf: Emma (€7.50, 3 copies). Persuasion had sold out" in out
    assert '"status": 404' in out
    # The server's own log: the calls went over HTTP, the API key with them.
    assert "GET /api/v1/books?q=austen&max_price=10 → 200" in out
    assert "DELETE /api/v1/books/9780141439686 → 204" in out
