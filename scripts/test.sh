#!/usr/bin/env bash
# Install toolsets with its dev extra into ./.venv and the real MCP peers into
# ./peers/node_modules, then run every check and test: ruff (lint and format),
# mypy --strict, what a user runs first in a venv made by a plain `pip install .`
# (no extras), and the pytest suite with branch coverage.
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

echo "== HAProxy, Redis and Chromium (the deployment tests' load balancer and shared store; the browser that reads the documentation site)"
# Debian's packages, installed once: a run with all three on PATH skips this at once.
if ! command -v haproxy >/dev/null 2>&1 || ! command -v redis-server >/dev/null 2>&1 ||
    ! command -v chromium >/dev/null 2>&1; then
    if ! command -v apt-get >/dev/null 2>&1; then
        echo "the tests need haproxy, redis-server and chromium on PATH (Debian: apt-get install haproxy redis-server chromium)" >&2
        exit 1
    fi
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
        haproxy redis-server chromium >/dev/null
fi

echo "== ruff"
"$VENV/bin/ruff" check .
"$VENV/bin/ruff" format --check .
echo "== mypy --strict"
"$VENV/bin/mypy"
echo "== a plain 'pip install .' (no extras): every module, example and snippet of the README and docs/"
# A throwaway venv, so only what the plain install declares is there: a dependency that
# arrives only through the dev extra (as sniffio once did, through trio) fails here.
PLAIN="$(mktemp -d)"
trap 'rm -rf "$PLAIN"' EXIT
"$(find_python)" -m venv "$PLAIN"
"$PLAIN/bin/python" -m pip install --quiet --disable-pip-version-check .
"$PLAIN/bin/python" scripts/run_docs.py
rm -rf "$PLAIN"

echo "== pytest"
# Worker processes, each a test file at a time (a module's servers start once): most
# tests wait on servers and subprocesses, so more workers than cores measure faster
# (TOOLSETS_TEST_WORKERS=0 runs in this process). pytest exits 5 when it collected no
# tests; that must fail the run, and set -e does so.
"$VENV/bin/python" -m pytest -n "${TOOLSETS_TEST_WORKERS:-3}" --dist loadfile "$@"
