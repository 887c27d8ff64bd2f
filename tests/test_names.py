"""One tool-name legalizer with parameters: each consumer's rule (MCP listing, OpenAPI
operation names, provider name maps, server prefixes) is a `NameRule`, and gives the very
names its own implementation gave before (pinned below as digests over a corpus of
names), plus the rules issue 13 needs (Anthropic, Python identifiers) as parameter
choices."""

from __future__ import annotations

import hashlib
import keyword
import random
import re

import pytest

from tests.openapi.helpers import GITHUB
from toolsets._names import (
    MCP_TOOL_NAMES,
    OPENAPI_TOOL_NAMES,
    PREFIX_NAMES,
    PROVIDER_TOOL_NAMES,
    NameRule,
)
from toolsets.openapi import OpenApiToolset
from toolsets.openapi._model import Operation
from toolsets.openapi._names import tool_names
from toolsets.schema import ToolNameMap, legal_tool_name


def _corpus() -> list[str]:
    """531 distinct names: short and long (around the 64 and 128 limits), legal and not,
    many that clean to the same text."""
    rng = random.Random(12)
    alphabet = "aZ09_-.:/ ~ü$#"
    names = []
    for _ in range(600):
        n = rng.choice([0, 1, 3, 8, 20, 60, 63, 64, 65, 70, 120, 128, 129, 140])
        names.append("".join(rng.choice(alphabet) for _ in range(n)))
    return list(dict.fromkeys(names))


def _digest(values: list[str]) -> str:
    return hashlib.sha256("\n".join(values).encode()).hexdigest()[:16]


def _unique_all(rule: NameRule, names: list[str]) -> list[str]:
    taken: set[str] = set()
    out = []
    for name in names:
        out.append(rule.unique(name, taken))
        taken.add(out[-1])
    return out


CORPUS = _corpus()


def test_the_mcp_rule_gives_the_names_mcp_listing_gave() -> None:
    names = _unique_all(MCP_TOOL_NAMES, CORPUS)
    assert _digest(names) == "bc89dbae2bf27a24"
    assert _unique_all(MCP_TOOL_NAMES, ["get_user", "a b", "a.b:c/d-e", "", "x" * 130]) == [
        "get_user",
        "a_b_c8687a08",
        "a.b:c/d-e",
        "tool_e3b0c442",
        "x" * 119 + "_3afbb132",
    ]


def test_the_prefix_rule_gives_the_prefixes_mcp_configs_gave() -> None:
    assert _digest([PREFIX_NAMES.legal(name) for name in CORPUS]) == "2fe92218d26d3889"
    assert PREFIX_NAMES.legal("my server") == "my_server"
    assert PREFIX_NAMES.legal("") == "server"
    assert PREFIX_NAMES.legal("s" * 200) == "s" * 200  # no limit on prefixes


def test_the_openapi_rule_gives_the_names_operations_got() -> None:
    operations = [
        Operation(method="get", path="/" + name, pointer="", operation_id=name if i % 3 else None)
        for i, name in enumerate(CORPUS)
    ]
    assert _digest(tool_names(operations)) == "d958013e0edbb341"
    clashing = [
        Operation(method="get", path="/a", pointer="", operation_id="repos/get-branch"),
        Operation(method="get", path="/b", pointer="", operation_id="repos get branch"),
        Operation(method="post", path="/", pointer="", operation_id="__"),
    ]
    assert tool_names(clashing) == ["repos_get_branch", "repos_get_branch_2", "post"]


def test_the_provider_rule_gives_the_names_legal_tool_name_and_tool_name_map_gave() -> None:
    assert _digest([legal_tool_name(name) for name in CORPUS]) == "e828f149bbe27752"
    assert _digest([legal_tool_name(n, max_length=20) for n in CORPUS]) == "b2be8fb45189faf7"
    assert _digest(list(ToolNameMap.build(CORPUS).as_dict().values())) == "20b5d0615f11808c"
    short = ToolNameMap.build(CORPUS, max_length=12).as_dict()
    assert _digest(list(short.values())) == "26acb9d9e9516562"
    assert ToolNameMap.build(["a.b", "a:b", "a_b"]).as_dict() == {
        "a.b": "a_b_2e7336dc",
        "a:b": "a_b_6783a31e",
        "a_b": "a_b",
    }


def test_each_rule_gives_legal_and_distinct_names_for_every_corpus_name() -> None:
    rules = {
        MCP_TOOL_NAMES: r"[A-Za-z0-9_.:/-]{1,128}",
        OPENAPI_TOOL_NAMES: r"[A-Za-z0-9_]{1,64}",
        PROVIDER_TOOL_NAMES: r"[A-Za-z0-9_-]{1,64}",
    }
    for rule, legal in rules.items():
        names = _unique_all(rule, CORPUS)
        assert len(set(names)) == len(names)
        assert all(re.fullmatch(legal, name) for name in names)
        if rule.dedupe == "hash":  # a numbered name may end "_" + "_2": legal, not clean
            assert all(rule.is_legal(name) for name in names)


def test_an_mcp_server_listing_one_name_twice_gets_two_distinct_names() -> None:
    # One hash suffix is not enough when the hashed name is itself taken: the next
    # attempt hashes "name#1", as provider name maps always did.
    taken: set[str] = set()
    names = []
    for name in ["a b", "a b", "a b"]:
        names.append(MCP_TOOL_NAMES.unique(name, taken))
        taken.add(names[-1])
    assert len(set(names)) == 3
    assert names[0] == "a_b_c8687a08"


def test_anthropic_names_are_the_provider_rule() -> None:
    anthropic = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
    for name in ["get_user", "ns.tool/x", "", "é" * 80]:
        assert anthropic.match(PROVIDER_TOOL_NAMES.legal(name))


def test_gemini_names_are_a_choice_of_parameters() -> None:
    # Gemini: letters, digits, "_", ".", ":" and "-", starting with a letter or "_".
    gemini = NameRule(
        illegal=re.compile(r"[^A-Za-z0-9_.:-]"), max_length=64, first=re.compile(r"[A-Za-z_]")
    )
    assert gemini.legal("github.get-repo") == "github.get-repo"
    assert gemini.legal("3d/render") == "_3d_render"
    names = _unique_all(gemini, CORPUS)
    assert all(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.:-]{0,63}", name) for name in names)
    assert len(set(names)) == len(names)


def test_python_identifiers_are_a_choice_of_parameters() -> None:
    identifiers = NameRule(
        illegal=re.compile(r"[^A-Za-z0-9_]"),
        max_length=64,
        first=re.compile(r"[A-Za-z_]"),
        reserved=frozenset(keyword.kwlist),
    )
    assert identifiers.legal("get-user") == "get_user"
    assert identifiers.legal("2fa") == "_2fa"
    assert identifiers.legal("class") == "class_"
    assert identifiers.legal("") == "_"
    assert not identifiers.is_legal("lambda")
    names = _unique_all(identifiers, CORPUS)
    assert all(name.isidentifier() and not keyword.iskeyword(name) for name in names)
    assert len(set(names)) == len(names)


@pytest.mark.anyio
async def test_githubs_1223_operations_keep_their_names() -> None:
    async with OpenApiToolset(GITHUB) as toolset:
        names = [tool.name for tool in await toolset.list_tools()]
    assert len(names) == 1223
    assert _digest(names) == "c73b8998cba5b865"
