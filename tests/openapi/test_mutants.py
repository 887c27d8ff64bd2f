"""Damaged specs: every load of a mutant of a real spec either succeeds, leaves operations
out as `problems` naming their pointers, or raises `SpecError` — never a foreign
exception. Mutants come from GitHub's spec (npm @octokit/openapi, a sample of its
operations), our fixtures, and npm @readme/oas-examples when installed; a fixed seed
makes every run the same."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import anyio
import pytest
import yaml
from jsonschema import Draft202012Validator

from tests.helpers import ROOT
from tests.openapi.helpers import FIXTURES, GITHUB, OAS_EXAMPLES, recording_server
from toolsets import SpecError
from toolsets.openapi import OpenApiToolset

pytestmark = pytest.mark.anyio

META = Draft202012Validator(Draft202012Validator.META_SCHEMA)
"""Checks that a schema is JSON Schema 2020-12."""
UNREACHABLE = "http://127.0.0.1:1"
"""An origin nothing listens on (refused at once: no wait)."""
_DELETE = object()
Path_ = tuple[str | int, ...]


@dataclass(frozen=True)
class Source:
    """A spec to make mutants of, and the URL its relative references resolve against."""

    name: str
    spec: dict[str, Any]
    url: str


def github_sample(rng: random.Random, paths: int) -> dict[str, Any]:
    """GitHub's spec cut to ``paths`` of its paths and the components they use."""
    spec = json.loads(GITHUB.read_text())
    chosen = sorted(rng.sample(sorted(spec["paths"]), paths))
    sample = {k: v for k, v in spec.items() if k not in ("paths", "components")}
    sample["paths"] = {path: spec["paths"][path] for path in chosen}
    components: dict[str, dict[str, Any]] = {}
    todo = [sample["paths"]]
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/components/"):
                _, _, kind, name = ref.split("/", 3)
                if name not in components.setdefault(kind, {}):
                    components[kind][name] = spec["components"][kind][name]
                    todo.append(components[kind][name])
            todo.extend(node.values())
        elif isinstance(node, list):
            todo.extend(node)
    if "securitySchemes" in spec["components"]:
        components["securitySchemes"] = spec["components"]["securitySchemes"]
    sample["components"] = components
    return sample


def sources(rng: random.Random) -> list[Source]:
    found = [Source("github", github_sample(rng, 30), f"{UNREACHABLE}/github.json")]
    files = [*sorted(FIXTURES.glob("*.yaml")), FIXTURES / "split" / "spec.yaml"]
    if OAS_EXAMPLES.is_dir():
        files += rng.sample(sorted(OAS_EXAMPLES.glob("*/json/*.json")), 12)
    for path in files:
        spec = yaml.safe_load(path.read_text())
        found.append(Source(str(path.relative_to(ROOT)), spec, path.as_uri()))
    return found


def nodes(node: Any, path: Path_ = ()) -> Iterator[tuple[Path_, Any]]:
    yield path, node
    if isinstance(node, dict):
        for key, child in node.items():
            yield from nodes(child, (*path, key))
    elif isinstance(node, list):
        for index, child in enumerate(node):
            yield from nodes(child, (*path, index))


def replaced(node: Any, path: Path_, value: Any) -> Any:
    """``node`` with the value at ``path`` replaced (or deleted): containers along the
    path are copied, the rest is shared with the original."""
    if not path:
        return value
    head, rest = path[0], path[1:]
    copy: Any = dict(node) if isinstance(node, dict) else list(node)
    if not rest and value is _DELETE:
        del copy[head]
    else:
        copy[head] = replaced(node[head], rest, value)
    return copy


# --- mutation operators: (node, rng) → a replacement, or None when it does not apply ----

WRONG_VALUES: list[Any] = [None, 7, -1.5, "text", "", [], {}, True, [1, "a"], {"k": "v"}]
BROKEN_REFS: list[Any] = [
    "#/components/schemas/Nowhere",
    "#/paths",
    "#",
    "#/components/schemas/~2bad",
    "missing-file.yaml#/Thing",
    f"{UNREACHABLE}/schemas.json#/Thing",
    "file:///nonexistent/dir/x.json",
    "urn:nothing:here",
    42,
    ["#/a"],
]


def swap_type(node: Any, rng: random.Random) -> Any:
    return rng.choice([v for v in WRONG_VALUES if type(v) is not type(node)])


def delete(node: Any, rng: random.Random) -> Any:
    return _DELETE


def wrong_container(node: Any, rng: random.Random) -> Any:
    if isinstance(node, dict):
        return list(node.values())
    if isinstance(node, list):
        return {str(i): item for i, item in enumerate(node)}
    return None


def break_ref(node: Any, rng: random.Random) -> Any:
    if not isinstance(node, dict):
        return None
    ref = node.get("$ref")
    typo = [f"{ref}x", f"{ref[:-1]}"] if isinstance(ref, str) and ref else []
    return {**node, "$ref": rng.choice(BROKEN_REFS + typo)}


def self_ref(node: Any, rng: random.Random) -> Any:
    if not isinstance(node, dict):
        return None
    return {"$ref": "#/components/schemas/Loop", **node} if rng.random() < 0.5 else {"$ref": "#"}


OPERATORS: dict[str, Callable[[Any, random.Random], Any]] = {
    "swap_type": swap_type,
    "delete": delete,
    "wrong_container": wrong_container,
    "break_ref": break_ref,
    "self_ref": self_ref,
}
KEYS = frozenset(
    (
        "in",
        "name",
        "required",
        "security",
        "components",
        "schemas",
        "paths",
        "parameters",
        "requestBody",
        "content",
        "schema",
        "properties",
        "items",
        "allOf",
        "servers",
        "variables",
        "style",
        "explode",
        "responses",
        "$ref",
        "securitySchemes",
        "flows",
        "scopes",
        "encoding",
        "type",
        "enum",
    )
)
"""Keys where damage reaches the loader: half the mutations pick one of them."""


def mutants(source: Source, rng: random.Random, count: int) -> Iterator[tuple[str, Any]]:
    everything = list(nodes(source.spec))
    keyed = [(p, n) for p, n in everything if p and p[-1] in KEYS]
    made = 0
    while made < count:
        path, node = rng.choice(keyed if keyed and rng.random() < 0.5 else everything)
        name = rng.choice(sorted(OPERATORS))
        value = OPERATORS[name](node, rng)
        if value is None or not path:  # (a spec that is not an object is not a spec)
            continue
        made += 1
        where = "/" + "/".join(map(str, path))
        yield f"{source.name} {name} {where}", replaced(source.spec, path, value)


async def load(spec: Any, url: str, unchanged: dict[str, Any]) -> str | None:
    """What was wrong with loading ``spec``; None when it behaved. The argument schema of
    each tool must be valid JSON Schema (those ``unchanged`` from the original spec's are
    not checked again)."""
    try:
        async with OpenApiToolset(spec, spec_url=url, base_url="http://127.0.0.1:9") as ts:
            tools = await ts.list_tools()
            for tool in tools:
                if unchanged.get(tool.name) != tool.parameters:
                    errors = list(META.iter_errors(tool.parameters))
                    if errors:
                        return f"{tool.name}'s schema is not JSON Schema: {errors[0].message}"
            for problem in ts.problems:
                if not isinstance(problem, SpecError) or not problem.pointer.startswith("/paths/"):
                    return f"a problem not naming an operation: {problem!r}"
    except SpecError as error:
        if not isinstance(error.pointer, str):
            return f"a SpecError without a pointer: {error!r}"
    except Exception as error:  # what this test looks for
        return f"{type(error).__name__}: {error}"
    return None


def test_mutants_of_real_specs_load_or_fail_with_spec_errors_only() -> None:
    rng = random.Random(18)
    failures: list[str] = []
    total = 0

    async def sweep() -> None:
        nonlocal total
        with anyio.fail_after(120):
            for source in sources(rng):
                async with OpenApiToolset(
                    source.spec, spec_url=source.url, base_url="http://127.0.0.1:9"
                ) as toolset:
                    tools = await toolset.list_tools()
                    unchanged = {tool.name: tool.parameters for tool in tools}
                assert await load(source.spec, source.url, {}) is None, source.name
                count = 300 if source.name == "github" else 40
                for label, spec in mutants(source, rng, count):
                    total += 1
                    wrong = await load(spec, source.url, unchanged)
                    if wrong is not None:
                        failures.append(f"{label}: {wrong}")

    anyio.run(sweep)
    assert total >= 600
    assert not failures, f"{len(failures)} of {total}:\n" + "\n".join(failures[:20])


# --- each crash the first sweep found, named ----------------------------------------


def bookshop() -> dict[str, Any]:
    spec: dict[str, Any] = yaml.safe_load((FIXTURES / "bookshop.yaml").read_text())
    return spec


async def problems_of(spec: Any) -> dict[str, SpecError]:
    async with OpenApiToolset(spec, base_url="http://127.0.0.1:9") as toolset:
        await toolset.load()  # every schema built (listing builds them on demand)
        return {problem.pointer: problem for problem in toolset.problems}


@pytest.mark.parametrize("value", [["query"], {"q": 1}, 3])
async def test_a_parameter_whose_in_is_not_a_string_drops_its_operation(value: Any) -> None:
    spec = bookshop()
    spec["paths"]["/books/{isbn}"]["get"]["parameters"] = [
        {"name": "isbn", "in": value, "schema": {"type": "string"}}
    ]
    problems = await problems_of(spec)
    assert list(problems) == ["/paths/~1books~1{isbn}/get"]
    cause = problems["/paths/~1books~1{isbn}/get"].__cause__
    assert isinstance(cause, SpecError)
    assert cause.pointer == "/paths/~1books~1{isbn}/get/parameters/0"


async def test_a_broken_ref_in_a_schema_two_operations_share_drops_both_by_their_pointers() -> None:
    # A typo in a shared schema's name: each operation using it is left out, by its own
    # pointer; neither gets the half-made schema (one that would accept anything).
    order = {"$ref": "#/components/schemas/Order"}
    spec = {
        "openapi": "3.0.3",
        "info": {"title": "t", "version": "1"},
        "paths": {
            "/orders": {
                "post": {
                    "operationId": "add",
                    "requestBody": {"content": {"application/json": {"schema": order}}},
                    "responses": {},
                },
                "put": {
                    "operationId": "replace",
                    "requestBody": {
                        "content": {
                            "application/json": {"schema": {"type": "array", "items": order}}
                        }
                    },
                    "responses": {},
                },
            },
            "/notes": {
                "post": {
                    "operationId": "note",
                    "requestBody": {
                        "content": {
                            "application/json": {"schema": {"$ref": "#/components/schemas/Note"}}
                        }
                    },
                    "responses": {},
                },
            },
        },
        "components": {
            "schemas": {
                "Order": {
                    "type": "object",
                    "properties": {
                        "item": {"$ref": "#/components/schemas/Itemm"},
                        "note": {"$ref": "#/components/schemas/Note"},
                    },
                },
                "Note": {
                    "type": "object",
                    "properties": {
                        "text": {"type": "string"},
                        "order": {"$ref": "#/components/schemas/Order"},
                    },
                },
                "Item": {"type": "string"},
            }
        },
    }
    problems = await problems_of(spec)
    assert set(problems) == {"/paths/~1orders/post", "/paths/~1orders/put", "/paths/~1notes/post"}
    for problem in problems.values():
        assert "Itemm" in str(problem)
    spec["components"]["schemas"]["Order"]["properties"]["item"] = {
        "$ref": "#/components/schemas/Item"
    }
    assert await problems_of(spec) == {}


async def test_a_required_of_true_in_a_schema_is_passed_over_as_validators_do() -> None:
    spec = bookshop()
    spec["components"]["schemas"]["NewBook"]["properties"]["title"]["required"] = True
    assert await problems_of(spec) == {}


@pytest.mark.parametrize("value", [3, "isbn", [["isbn"]], [{"name": "x"}]])
async def test_a_required_list_that_is_not_a_list_of_names_drops_its_operations(
    value: Any,
) -> None:
    spec = bookshop()
    spec["components"]["schemas"]["NewBook"]["required"] = value
    problems = await problems_of(spec)
    assert list(problems) == ["/paths/~1books/post"]
    assert "required" in str(problems["/paths/~1books/post"])


@pytest.mark.parametrize("value", [1.5, "read", {"read": True}])
async def test_a_security_scope_list_that_is_not_a_list_drops_its_operation(value: Any) -> None:
    spec = bookshop()
    spec["paths"]["/books"]["post"]["security"] = [{"shop_key": value}]
    problems = await problems_of(spec)
    assert list(problems) == ["/paths/~1books/post"]
    cause = problems["/paths/~1books/post"].__cause__
    assert isinstance(cause, SpecError)
    assert cause.pointer == "/paths/~1books/post/security/0/shop_key"


@pytest.mark.parametrize("value", [[], "components", 7, False])
async def test_components_that_are_not_an_object_are_a_spec_error_at_their_pointer(
    value: Any,
) -> None:
    spec = bookshop()
    spec["components"] = value
    with pytest.raises(SpecError) as caught:
        await problems_of(spec)
    assert caught.value.pointer == "/components"


async def test_a_ref_to_an_unreachable_url_drops_only_its_operation() -> None:
    spec = bookshop()
    spec["paths"]["/books"]["post"]["requestBody"]["content"]["application/json"]["schema"] = {
        "$ref": f"{UNREACHABLE}/schemas.json#/NewBook"
    }
    async with OpenApiToolset(
        spec, spec_url=f"{UNREACHABLE}/spec.json", base_url="http://127.0.0.1:9"
    ) as toolset:
        assert len(await toolset.list_tools()) == 5
        (problem,) = toolset.problems
    assert problem.pointer == "/paths/~1books/post"
    assert UNREACHABLE in str(problem)


async def test_a_document_that_cannot_be_fetched_is_asked_for_once() -> None:
    async with recording_server() as server:
        server.status = 503
        schema = {"$ref": f"{server.url}/schemas.json#/Book"}
        spec = bookshop()
        for path in ("/books", "/books/{isbn}/stock"):
            for operation in spec["paths"][path].values():
                if isinstance(operation, dict) and "responses" in operation:
                    operation["requestBody"] = {"content": {"application/json": {"schema": schema}}}
        async with OpenApiToolset(
            spec, spec_url=f"{server.url}/spec.json", base_url="http://127.0.0.1:9"
        ) as toolset:
            await toolset.list_tools()
            assert len(toolset.problems) == 3
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    "keyword",
    [
        {"type": 7},
        {"type": "date"},
        {"type": ["string", "string"]},
        {"minimum": "5"},
        {"enum": 5},
        {"maxLength": "10"},
        {"minItems": -1},
        {"multipleOf": 0},
        {"description": 7},
        {"uniqueItems": "yes"},
    ],
)
async def test_a_schema_keyword_a_validator_trips_over_drops_its_operation(
    keyword: dict[str, Any],
) -> None:
    # Loaded, such a schema would fail every call (TypeError, UnknownType,
    # ZeroDivisionError in the argument check) and could make a model reject the request.
    spec = bookshop()
    spec["components"]["schemas"]["NewBook"]["properties"]["price"] = keyword
    problems = await problems_of(spec)
    assert list(problems) == ["/paths/~1books/post"]
    cause = problems["/paths/~1books/post"].__cause__
    assert isinstance(cause, SpecError)
    (key,) = keyword
    assert cause.pointer == f"/components/schemas/NewBook/properties/price/{key}"


async def test_draft_4_exclusive_bounds_in_a_3_1_spec_are_translated() -> None:
    spec = bookshop()
    spec["openapi"] = "3.1.0"
    spec["components"]["schemas"]["NewBook"]["properties"]["price"] = {
        "type": "number",
        "minimum": 0,
        "exclusiveMinimum": True,
    }
    async with OpenApiToolset(spec, base_url="http://127.0.0.1:9") as toolset:
        tool = await toolset.get_tool("books_add")
    assert tool.parameters["properties"]["price"] == {"type": "number", "exclusiveMinimum": 0}
