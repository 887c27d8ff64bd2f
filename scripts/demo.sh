#!/usr/bin/env bash
# Install toolsets into ./.venv and run the bundled example (no network but the package
# index, no API key).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/_venv.sh
ensure_venv .
exec "$VENV/bin/python" examples/quickstart.py
