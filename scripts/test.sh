#!/usr/bin/env bash
# Install toolsets with its dev extra into ./.venv and the real MCP peers into
# ./peers/node_modules, then run every check and test: ruff (lint and format),
# mypy --strict, and the pytest suite with branch coverage.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/_venv.sh
ensure_venv ".[dev]"

echo "== npm peers (MCP reference server, conformance suite, Node 22)"
if ! command -v npm >/dev/null 2>&1; then
    echo "npm is required for the real MCP peers the tests use (Node.js 18+ with npm)" >&2
    exit 1
fi
npm ci --prefix peers --no-audit --no-fund --loglevel=error

echo "== ruff"
"$VENV/bin/ruff" check .
"$VENV/bin/ruff" format --check .
echo "== mypy --strict"
"$VENV/bin/mypy"
echo "== pytest"
# pytest exits 5 when it collected no tests; that must fail the run, and set -e does so.
"$VENV/bin/python" -m pytest "$@"
