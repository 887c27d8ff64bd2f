"""The garbage collector paused while long-lived objects are made, and tuned for a
process that serves (internal)."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable, Iterator

__all__ = ["SERVING_THRESHOLDS", "collector_paused", "tuned_for_serving"]

SERVING_THRESHOLDS = (20_000, 50, 100)
"""`gc.set_threshold` of a process serving tools: a pass over the young objects after
twenty thousand allocations rather than CPython's few hundred. A served call makes
thousands of short-lived objects, with many calls in flight at once; at the default, the
collector went over the calls in flight again and again (a quarter of a call's CPU with
telemetry on, under 64 concurrent clients: benchmarks/serve_load.py). Reference counting
frees nearly all of them anyway; cycles wait a little longer."""


def tuned_for_serving() -> None:
    """Set `SERVING_THRESHOLDS` (a process that serves: ``toolsets serve``, its
    workers). A library never changes its user's collector: only the command does."""
    gc.set_threshold(*SERVING_THRESHOLDS)


@contextlib.contextmanager
def collector_paused() -> Iterator[Callable[[], None]]:
    """The garbage collector paused while the block runs (making many objects that live
    on and hold no cycles, its passes over them as they pile up are wasted), or until
    the function given is called: that spares everything alive by then the collector's
    passes for as long as the process runs (`gc.freeze`: what is dropped later is still
    freed by reference counting), and ends the pause. The collector runs after only if
    it ran before (a pause within a pause is one pause)."""
    enabled = gc.isenabled()
    gc.disable()

    def loaded() -> None:
        gc.freeze()
        if enabled:
            gc.enable()

    try:
        yield loaded
    finally:
        if enabled:
            gc.enable()
