"""The garbage collector paused while long-lived objects are made (internal)."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable, Iterator

__all__ = ["collector_paused"]


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
