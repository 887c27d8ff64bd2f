"""Unique ids for events, calls and runs, cheaply.

An id is a random per-process prefix and a counter: unique across processes and
machines like a uuid4, without a uuid4's system call and object per id. Ids made here are
not secrets; use `secrets` for anything that must be unguessable (session ids are).
"""

from __future__ import annotations

import itertools
import os

__all__ = ["new_id"]


def _reseed() -> None:
    global _prefix, _counter
    _prefix = os.urandom(8).hex()
    _counter = itertools.count()


_prefix: str
_counter: itertools.count[int]
_reseed()
os.register_at_fork(after_in_child=_reseed)  # a forked child must not repeat the parent's


def new_id(prefix: str = "") -> str:
    """A new unique id, starting with ``prefix``."""
    return f"{prefix}{_prefix}{next(_counter)}"
