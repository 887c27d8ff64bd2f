"""Fixtures the command-line tests share."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.adapters.helpers import NotesApi, notes_api


@pytest.fixture(scope="module")
def api() -> Iterator[NotesApi]:
    """The notes API on 127.0.0.1, one per test module."""
    with notes_api() as api:
        yield api
