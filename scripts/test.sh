#!/usr/bin/env bash
# Install toolsets with its dev extra into ./.venv, then run every check and test:
# ruff (lint and format), mypy --strict, and the pytest suite with branch coverage.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/_venv.sh
ensure_venv ".[dev]"

echo "== ruff"
"$VENV/bin/ruff" check .
"$VENV/bin/ruff" format --check .
echo "== mypy --strict"
"$VENV/bin/mypy"
echo "== pytest"
# pytest exits 5 when it collected no tests; that must fail the run, and set -e does so.
"$VENV/bin/python" -m pytest "$@"
