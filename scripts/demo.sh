#!/usr/bin/env bash
# Install toolsets into ./.venv and run the bundled offline agent example (no network but the package
# index, no API key).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/_venv.sh
ensure_venv .
exec "$VENV/bin/python" examples/agent_offline.py
