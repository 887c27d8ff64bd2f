"""Every operation of GitHub's spec, judged by others (issue 5): arguments made from our own
schema, sent through `RestApiTool` to Prism, and each request checked by openapi-core and
read back the way a server reads it. No request may be rejected for our serialization.

Two argument sets per operation: the required arguments alone, with plain values, and
every argument the schema offers (bodies included), with strings that need
percent-encoding. Rejections whose cause lies with a judge are listed in `QUIRKS` with
that cause and asserted exactly: the test fails when one goes away or a new one appears.
"""

from __future__ import annotations

import json
import math
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio
import anyio.to_process
import httpx2
import pytest
from anyio.streams.memory import MemoryObjectReceiveStream

from tests.helpers import NODE, PEERS
from tests.openapi.helpers import GITHUB
from tests.openapi.judge import (
    ArgumentMaker,
    CoreJudge,
    GenerationError,
    Prism,
    WireRequest,
    core_errors,
    misread,
    prism_document,
    prism_shards,
    violations,
)
from toolsets import ToolContext
from toolsets.openapi import OpenApiToolset, RestApiTool
from toolsets.openapi._serialize import SerializationError

GITHUB_API = "https://api.github.com"
PRISM_CLI = PEERS / "@stoplight" / "prism-cli" / "dist" / "index.js"
OPERATIONS = 1223
PRISMS = 3
"""Prism processes, each judging a third of the paths (see `prism_shards`)."""
PRISM_START_TIMEOUT = 150.0
"""Seconds for a Prism to listen: ~8 s for a third of GitHub's spec, more on a busy CI."""
CONCURRENT = 6
"""Requests in flight, two per Prism."""
CORE_BATCH = 16
"""Requests sent to openapi-core's worker process at a time."""

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # one backend is enough: the judges, not the event loop, are tested


@pytest.fixture(scope="module")
def github_spec() -> dict[str, Any]:
    spec: dict[str, Any] = json.loads(GITHUB.read_text())
    return spec


@dataclass(frozen=True)
class Shard:
    """One Prism and the spec paths it judges."""

    prism: Prism
    paths: frozenset[str]


@pytest.fixture(scope="module")
def shards(
    github_spec: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[list[Shard]]:
    """Prisms on GitHub's spec, started but not waited for (`all_ready`): their start
    overlaps the tests' other work."""
    folder = tmp_path_factory.mktemp("prism")
    started: list[Shard] = []
    try:
        for index, paths in enumerate(prism_shards(github_spec, PRISMS)):
            document = folder / f"github-requests-{index}.json"
            document.write_text(json.dumps(prism_document(github_spec, paths)))
            prism = Prism(
                node=NODE, cli=PRISM_CLI, document=document, log=folder / f"prism-{index}.log"
            )
            started.append(Shard(prism, frozenset(paths)))
            prism.start()
        yield started
    finally:
        for shard in started:
            shard.prism.stop()


@pytest.fixture(scope="module")
def core(github_spec: dict[str, Any]) -> CoreJudge:
    return CoreJudge(github_spec)


async def all_ready(shards: Sequence[Shard]) -> None:
    async with anyio.create_task_group() as group:
        for shard in shards:
            group.start_soon(shard.prism.wait_ready, PRISM_START_TIMEOUT)


def shard_of(shards: Sequence[Shard], path: str) -> Shard:
    (shard,) = [shard for shard in shards if path in shard.paths]
    return shard


# --- the verdicts -------------------------------------------------------------------------

Kind = Literal["minimal", "rich"]


@dataclass
class Verdict:
    """One request and what each judge said of it."""

    tool: RestApiTool
    kind: Kind
    args: dict[str, Any]
    core: list[str] = field(default_factory=list)
    misread: list[str] = field(default_factory=list)
    prism: list[str] = field(default_factory=list)
    refused: str | None = None
    """Our own tool refused the arguments (its schema check or its serializer)."""
    wire: WireRequest | None = None

    @property
    def key(self) -> str:
        return f"{self.tool.name}/{self.kind}"


def prepare(tool: RestApiTool, kind: Kind, args: dict[str, Any]) -> Verdict:
    """The request for ``args``, and how a server reads it back."""
    verdict = Verdict(tool, kind, args)
    try:
        request = tool.build_request(args)
    except SerializationError as error:  # arguments our schema allows, our encoder refuses
        verdict.refused = str(error)
        return verdict
    verdict.wire = WireRequest.of(request)
    verdict.misread = misread(tool.operation, args, request)
    return verdict


async def judge_by_core(verdicts: list[Verdict]) -> None:
    sent = [(verdict, verdict.wire) for verdict in verdicts if verdict.wire is not None]
    batch = [(wire, verdict.tool.operation.servers[0].url) for verdict, wire in sent]
    found = await anyio.to_process.run_sync(core_errors, str(GITHUB), batch)
    for (verdict, _), errors in zip(sent, found, strict=True):
        verdict.core = errors


async def judge_by_prism(verdict: Verdict) -> None:
    if verdict.refused:
        return
    result = await verdict.tool.run(verdict.args, ToolContext())
    if isinstance(result, dict) and "fields" in result:
        verdict.refused = str(result["error"])
    elif isinstance(result, dict) and "error" in result:
        status = result.get("status")
        body = result.get("body")
        verdict.prism = violations(status, body) if isinstance(status, int) else [str(result)]


# --- rejections that are a judge's doing ----------------------------------------------------


@dataclass(frozen=True)
class Quirk:
    """A judge rejecting requests for a reason that is not our serialization."""

    judge: Literal["core", "prism"]
    sign: str
    """Every complaint of the judge about such a request contains this."""
    cause: str
    operations: frozenset[str]
    """Tool names; both argument sets of each are rejected."""


QUIRKS = (
    Quirk(
        judge="core",
        sign="Tried to write read-only property",
        cause=(
            "openapi-core applies readOnly to a parameter's schema; GitHub's alert-number "
            "schema, used for path parameters, is readOnly (OpenAPI 3.0 gives readOnly a "
            "meaning for properties only)"
        ),
        operations=frozenset(
            {
                "code_scanning_get_alert",
                "code_scanning_update_alert",
                "code_scanning_get_autofix",
                "code_scanning_create_autofix",
                "code_scanning_commit_autofix",
                "code_scanning_list_alert_instances",
                "dependabot_get_alert",
                "dependabot_update_alert",
                "secret_scanning_get_alert",
                "secret_scanning_update_alert",
                "secret_scanning_list_locations_for_alert",
            }
        ),
    ),
    Quirk(
        judge="prism",
        sign="must match exactly one schema in oneOf",
        cause=(
            "GitHub declares these path parameters oneOf [integer, string]; a path segment "
            "has no type, so Prism finds '1' matches both branches (anyOf was meant)"
        ),
        operations=frozenset(
            {
                "actions_get_workflow",
                "actions_disable_workflow",
                "actions_create_workflow_dispatch",
                "actions_enable_workflow",
                "actions_list_workflow_runs",
                "actions_get_workflow_usage",
                "repos_get_pages_deployment",
                "repos_cancel_pages_deployment",
            }
        ),
    ),
)


def quirk_of(judge: str, complaints: list[str]) -> Quirk | None:
    for quirk in QUIRKS:
        if quirk.judge == judge and all(quirk.sign in complaint for complaint in complaints):
            return quirk
    return None


# --- every operation --------------------------------------------------------------------------


@pytest.mark.timeout(420)
async def test_no_request_for_any_github_operation_is_rejected_for_its_serialization(
    shards: list[Shard], core: CoreJudge
) -> None:
    started = time.monotonic()
    verdicts: list[Verdict] = []
    generation: dict[str, str] = {}
    prisms_up = anyio.Event()
    send, receive = anyio.create_memory_object_stream[Verdict](math.inf)
    send_batch, receive_batch = anyio.create_memory_object_stream[list[Verdict]](math.inf)

    async def wait_for_prisms() -> None:
        await all_ready(shards)
        prisms_up.set()

    async def prepare_all(tools: Sequence[RestApiTool]) -> None:
        async with send, send_batch:
            batch: list[Verdict] = []
            for tool in tools:
                maker = ArgumentMaker(tool.arguments_schema)
                for kind in ("minimal", "rich"):
                    try:
                        args = maker.minimal() if kind == "minimal" else maker.rich()
                    except GenerationError as error:
                        generation[f"{tool.name}/{kind}"] = str(error)
                        continue
                    verdict = prepare(tool, kind, args)
                    verdicts.append(verdict)
                    batch.append(verdict)
                    await send.send(verdict)
                if len(batch) >= CORE_BATCH:
                    await send_batch.send(batch)
                    batch = []
            await send_batch.send(batch)

    async def judge_by_core_all() -> None:
        # In a worker process: openapi-core's checks take as long as Prism's.
        async with receive_batch:
            async for batch in receive_batch:
                await judge_by_core(batch)

    async def judge_by_prism_all(stream: MemoryObjectReceiveStream[Verdict]) -> None:
        await prisms_up.wait()
        async with stream:
            async for verdict in stream:
                await judge_by_prism(verdict)

    async with AsyncExitStack() as stack:
        client = await stack.enter_async_context(httpx2.AsyncClient(timeout=20))
        tools: list[RestApiTool] = []
        for shard in shards:
            toolset = OpenApiToolset(GITHUB, base_url=shard.prism.url, client=client)
            await stack.enter_async_context(toolset)
            tools.extend(t for t in await toolset.list_tools() if t.operation.path in shard.paths)
        with anyio.fail_after(360):
            async with anyio.create_task_group() as group, receive:
                group.start_soon(wait_for_prisms)
                group.start_soon(prepare_all, tools)
                group.start_soon(judge_by_core_all)
                for _ in range(CONCURRENT):
                    group.start_soon(judge_by_prism_all, receive.clone())

    excluded: dict[Quirk, set[str]] = {quirk: set() for quirk in QUIRKS}
    failures: list[str] = []
    for verdict in verdicts:
        if verdict.refused:
            failures.append(f"{verdict.key}: refused by our tool: {verdict.refused}")
        if verdict.misread:
            failures.append(f"{verdict.key}: misread: {verdict.misread}")
        for judge, complaints in (("core", verdict.core), ("prism", verdict.prism)):
            quirk = quirk_of(judge, complaints) if complaints else None
            if quirk is not None:
                excluded[quirk].add(verdict.key)
            elif complaints:
                failures.append(f"{verdict.key}: {judge}: {complaints}")

    kinds = Counter(verdict.kind for verdict in verdicts)
    summary = (
        f"judged {len({v.tool.name for v in verdicts})} operations, {len(verdicts)} requests "
        f"({kinds['minimal']} minimal, {kinds['rich']} rich) in "
        f"{time.monotonic() - started:.0f} s: Prism accepted {sum(not v.prism for v in verdicts)}, "
        f"openapi-core {sum(not v.core for v in verdicts)}, read back as meant "
        f"{sum(not v.misread for v in verdicts)}; excluded with cause: "
        + ", ".join(f"{q.judge} {len(keys)} ({q.sign!r})" for q, keys in excluded.items())
        + f"; serialization failures: {len(failures)}"
    )
    print(f"\n{summary}")  # noqa: T201 - the figures the issue asks for, in the test log
    assert generation == {}
    assert failures == [], summary
    assert {quirk.cause: keys for quirk, keys in excluded.items()} == {
        quirk.cause: {f"{name}/{kind}" for name in quirk.operations for kind in kinds}
        for quirk in QUIRKS
    }
    assert kinds == {"minimal": OPERATIONS, "rich": OPERATIONS}
    assert len({verdict.tool.name for verdict in verdicts}) == OPERATIONS


# --- the judges can say no (after the test above, which overlaps the Prisms' start) ------


async def test_the_judges_reject_requests_that_break_githubs_spec(
    shards: list[Shard], core: CoreJudge
) -> None:
    json_type = {"content-type": "application/json"}
    form_type = {"content-type": "application/x-www-form-urlencoded"}
    issues = ("/repos/{owner}/{repo}/issues", "/repos/o/r/issues")
    repos = ("/user/repos", "/user/repos")
    bad = {
        "not an integer": (issues, "GET", "?per_page=many", {}, b""),
        "not in the enum": (issues, "GET", "?state=bogus", {}, b""),
        "not a string": (repos, "POST", "", json_type, b'{"name":5}'),
        "missing": (repos, "POST", "", json_type, b"{}"),
        "not JSON": (repos, "POST", "", form_type, b"name=n"),
    }
    await all_ready(shards)
    async with httpx2.AsyncClient(timeout=20) as client:
        good = await client.get(shard_of(shards, issues[0]).prism.url + "/repos/o/r/issues?page=2")
        assert good.status_code == 204
        assert core.errors(good.request, GITHUB_API) == []
        for label, ((template, path), method, query, headers, content) in bad.items():
            url = shard_of(shards, template).prism.url + path + query
            response = await client.request(method, url, headers=headers, content=content)
            assert violations(response.status_code, response.json()), label
            assert core.errors(response.request, GITHUB_API), label


PRISM_BLIND_BODIES = frozenset(
    {
        "dependency-graph/create-repository-snapshot",
        "issues/create",
        "issues/update",
        "orgs/custom-properties-for-repos-create-or-update-organization-definition",
        "orgs/custom-properties-for-repos-create-or-update-organization-definitions",
        "orgs/custom-properties-for-repos-create-or-update-organization-values",
        "projects/update-item-for-org",
        "projects/update-item-for-user",
        "repos/custom-properties-for-repos-create-or-update-repository-values",
    }
)
"""Operations whose JSON bodies Prism does not check at all: it compiles each body schema
with ajv inside a try, and for these (``nullable`` without ``type``) the compile fails and
the body passes whatever it holds (``{"title": {}}`` creates an issue). openapi-core and the
read-back judge those bodies; the rest of Prism's verdict on these requests still counts."""


async def test_prism_checks_the_json_body_of_every_operation_but_a_known_few(
    shards: list[Shard], core: CoreJudge, github_spec: dict[str, Any]
) -> None:
    probes: list[tuple[str, str, str]] = []
    for path, item in github_spec["paths"].items():
        for method, operation in item.items():
            body = operation.get("requestBody") if isinstance(operation, dict) else None
            if body is not None and "application/json" in body["content"]:
                values = {
                    parameter["name"]: str(parameter["schema"].get("enum", ["1"])[0])
                    for parameter in resolved(github_spec, item, operation)
                    if parameter["in"] == "path"
                }
                filled = path
                for name, value in values.items():
                    filled = filled.replace(f"{{{name}}}", value)
                url = shard_of(shards, path).prism.url + filled
                probes.append((operation["operationId"], method.upper(), url))
    blind: set[str] = set()
    valid: set[str] = set()
    await all_ready(shards)
    async with httpx2.AsyncClient(timeout=20) as client:

        async def probe(operation_id: str, method: str, url: str) -> None:
            # An array, where GitHub's bodies are objects: wrong unless the schema says
            # nothing of the type, which openapi-core tells.
            headers = {"content-type": "application/json"}
            response = await client.request(method, url, headers=headers, content=b"[1]")
            if not any("RequestBody" in e for e in core.errors(response.request, GITHUB_API)):
                valid.add(operation_id)
                return
            said = violations(response.status_code, response.json() if response.content else None)
            if not any(complaint.startswith("body") for complaint in said):
                blind.add(operation_id)

        async def probe_all(some: list[tuple[str, str, str]]) -> None:
            for operation_id, method, url in some:
                await probe(operation_id, method, url)

        with anyio.fail_after(120):
            async with anyio.create_task_group() as group:
                for start in range(CONCURRENT):
                    group.start_soon(probe_all, probes[start::CONCURRENT])
    assert len(probes) == 342
    # Schemas that do not say the body is an object: the probe tells nothing there.
    assert valid == {
        "orgs/enable-or-disable-security-product-on-all-org-repos",
        "secret-scanning/update-org-custom-pattern",
        "secret-scanning/update-repo-custom-pattern",
    }
    assert blind == PRISM_BLIND_BODIES


def resolved(
    spec: dict[str, Any], item: dict[str, Any], operation: dict[str, Any]
) -> list[dict[str, Any]]:
    """The parameters of a path item and its operation, references followed."""
    components = spec["components"]["parameters"]
    return [
        components[p["$ref"].split("/")[-1]] if "$ref" in p else p
        for p in [*item.get("parameters", []), *operation.get("parameters", [])]
    ]


async def test_a_request_is_read_back_as_a_server_would_read_it() -> None:
    async with OpenApiToolset(GITHUB, base_url="http://127.0.0.1:9") as toolset:
        tools = {tool.name: tool for tool in await toolset.list_tools()}
    create = tools["issues_create"]
    args: dict[str, Any] = {"owner": "a b/c", "repo": "r", "title": "ü", "labels": ["x", "y"]}
    request = create.build_request(args)
    assert misread(create.operation, args, request) == []
    assert misread(create.operation, {**args, "title": "u"}, request)
    assert misread(create.operation, {**args, "owner": "a b%2Fc"}, request)
    listing = tools["issues_list_for_repo"]
    args = {"owner": "o", "repo": "r", "labels": "a,b", "per_page": 5}
    request = listing.build_request(args)
    assert misread(listing.operation, args, request) == []
    assert misread(listing.operation, {**args, "per_page": 6}, request)
    spliced = httpx2.Request("GET", "http://x/repos/a/b/c/issues")
    assert misread(listing.operation, {"owner": "a/b", "repo": "c"}, spliced)
