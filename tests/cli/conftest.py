"""Fixtures the command-line tests share."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.adapters.helpers import NotesApi, notes_api
from tests.cli.helpers import write_sources


@pytest.fixture(scope="module")
def api() -> Iterator[NotesApi]:
    """The notes API on 127.0.0.1, one per test module."""
    with notes_api() as api:
        yield api


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The sources of `write_sources`, written once per test module."""
    return write_sources(tmp_path_factory.mktemp("sources"))
