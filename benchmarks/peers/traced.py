"""Run a Python program (a module with ``-m``, or a script) under the benchmark's memory
probe: on SIGUSR1 Python starts tracing its allocations (``tracemalloc``), on SIGUSR2 it
collects garbage, writes the bytes still held of what was allocated since (one integer)
to FILE, and stops tracing. So a served process reports what it kept of a batch of work
(benchmarks/serve_load.py: 2025-11-25 sessions), whatever its allocator keeps free.
Standard library only: it runs under a peer's Python too.

    python traced.py FILE -m MODULE [ARGS...]
    python traced.py FILE SCRIPT [ARGS...]
"""

from __future__ import annotations

import gc
import runpy
import signal
import sys
import tracemalloc
from pathlib import Path
from types import FrameType


def main() -> None:
    out, *rest = sys.argv[1:]

    def start(signum: int, frame: FrameType | None) -> None:
        tracemalloc.start()

    def report(signum: int, frame: FrameType | None) -> None:
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] if tracemalloc.is_tracing() else -1
        tracemalloc.stop()
        Path(out).write_text(str(held))

    signal.signal(signal.SIGUSR1, start)
    signal.signal(signal.SIGUSR2, report)
    if rest[0] == "-m":
        sys.argv = [rest[1], *rest[2:]]
        runpy.run_module(rest[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = rest
        sys.path.insert(0, str(Path(rest[0]).resolve().parent))
        runpy.run_path(rest[0], run_name="__main__")


if __name__ == "__main__":
    main()
