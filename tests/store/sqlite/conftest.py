"""Fixtures of the SQLite store's own tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.store import SqliteStore
from tests.store.conftest import FakeClock


@pytest.fixture
def sqlite_store(db_path: Path, clock: FakeClock) -> Iterator[SqliteStore]:
    """A SQLite store on ``db_path`` with the fake clock."""
    with SqliteStore(db_path, clock=clock) as store:
        yield store
