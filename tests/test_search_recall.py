"""benchmarks/search_recall.py and its evaluation set (benchmarks/search_eval/): every
request well-formed and naming tools the real spec has, so the set cannot rot as the
specs and our tool names change."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = ROOT / "benchmarks"


def _load_search_recall() -> ModuleType:
    sys.path.insert(0, str(BENCHMARKS))  # it imports _common as the scripts do
    try:
        spec = importlib.util.spec_from_file_location(
            "bench_search_recall", BENCHMARKS / "search_recall.py"
        )
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # dataclasses look their module up there
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCHMARKS))
    return module


recall = _load_search_recall()


@pytest.mark.parametrize(("name", "at_least"), [("github", 150), ("stripe", 100)])
def test_every_request_names_only_tools_the_spec_has(name: str, at_least: int) -> None:
    pairs = recall.read_pairs(recall.EVAL_DIR / f"{name}.jsonl")
    tools = recall.load_tools(recall.SPECS[name])
    assert len(pairs) >= at_least
    assert recall.unknown_names(pairs, {tool.name for tool in tools}) == []


def test_the_set_has_at_least_250_requests_none_asked_twice() -> None:
    queries = [
        " ".join(pair.query.lower().split())
        for name in recall.SPECS
        for pair in recall.read_pairs(recall.EVAL_DIR / f"{name}.jsonl")
    ]
    assert len(queries) >= 250
    assert len(set(queries)) == len(queries)


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("not json", "not JSON"),
        ('{"query": "star it"}', "not an object"),
        ('{"query": "star it", "expected": [], "why": "x"}', "not an object"),
        ('{"query": " ", "expected": ["a"]}', "query"),
        ('{"query": "star it", "expected": []}', "expected"),
        ('{"query": "star it", "expected": ["a", 3]}', "expected"),
        ('{"query": "star it", "expected": ["a", "a"]}', "twice"),
        ('{"query": "Bookmark  the repo", "expected": ["a"]}', "line 1 again"),
    ],
)
def test_a_malformed_line_is_refused_with_its_number(
    tmp_path: Path, line: str, problem: str
) -> None:
    path = tmp_path / "set.jsonl"
    path.write_text('{"query": "bookmark the repo", "expected": ["star"]}\n' + line + "\n")
    with pytest.raises(recall.EvalSetError) as refused:
        recall.read_pairs(path)
    assert refused.value.line == 2
    assert refused.value.path == path
    assert problem in refused.value.problem


def test_a_request_is_found_at_k_when_any_expected_tool_is_in_the_first_k() -> None:
    pairs = [
        recall.Pair("refund her", ("PostRefunds", "PostChargesChargeRefunds"), 1),
        recall.Pair("stop her plan", ("DeleteSubscriptionsSubscriptionExposedId",), 2),
    ]
    results = [
        ["GetRefunds", "PostChargesChargeRefunds"],
        ["GetSubscriptions", "PostSubscriptions"],
    ]
    assert recall.found_at(pairs, results, 1) == [False, False]
    assert recall.found_at(pairs, results, 5) == [True, False]


def test_the_scorer_prints_the_baselines_recall_on_both_specs() -> None:
    done = subprocess.run(
        [sys.executable, "search_recall.py", "--json", "--repeats", "1"],
        cwd=BENCHMARKS,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout.splitlines()[-1])["figures"]
    for spec in ("github", "stripe", "overall"):
        assert 0 < figures[f"baseline {spec} recall@1"] <= figures[f"baseline {spec} recall@5"]
        assert figures[f"baseline {spec} recall@5"] < 1
    assert figures["baseline github build ms"] > 0


@pytest.mark.parametrize("dev_set", ["search_dev2.jsonl", "search_dev3.jsonl"])
def test_the_later_dev_sets_name_only_tools_the_specs_have(dev_set: str) -> None:
    text = (BENCHMARKS / dev_set).read_text(encoding="utf-8")
    rows = [json.loads(line) for line in text.splitlines()]
    assert all(set(row) == {"spec", "query", "expected"} and row["expected"] for row in rows)
    queries = [" ".join(row["query"].lower().split()) for row in rows]
    assert len(set(queries)) == len(queries) >= 300
    for name in ("github", "stripe"):
        tools = {tool.name for tool in recall.load_tools(recall.SPECS[name])}
        wanted = {n for row in rows if row["spec"] == name for n in row["expected"]}
        assert wanted
        assert wanted - tools == set()
