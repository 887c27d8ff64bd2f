"""Ids: unique within a process and across forked children, with the asked prefix."""

from __future__ import annotations

import os

from toolsets._ids import new_id


def test_ids_are_unique_and_prefixed() -> None:
    ids = {new_id("call_") for _ in range(10_000)}
    assert len(ids) == 10_000
    assert all(i.startswith("call_") for i in ids)


def test_a_forked_child_does_not_repeat_its_parents_ids() -> None:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.write(write, new_id().encode())
        os._exit(0)
    os.close(write)
    child_id = os.read(read, 100).decode()
    os.close(read)
    os.waitpid(pid, 0)
    parent_id = new_id()
    assert child_id
    assert child_id[:16] != parent_id[:16]
