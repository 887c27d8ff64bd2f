"""Run ``toolsets``'s CLI with telemetry on, recording to memory (``_otel_memory``: what
telemetry costs a served call before any export; benchmarks/serve_load.py's
``ours 1 telemetry`` row).

    python in_memory_telemetry.py serve SPEC ...   (the CLI's arguments)
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _otel_memory import record_in_memory


def main() -> None:
    record_in_memory()
    sys.argv = ["toolsets.cli", *sys.argv[1:]]
    runpy.run_module("toolsets.cli", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
