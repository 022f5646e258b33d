"""Fixtures of the store tests: a database file in a temporary folder and a hand-driven clock."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.store import SqliteStore


class FakeClock:
    """A wall clock the test moves by hand (unix seconds)."""

    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        """Move the clock forward by ``seconds``."""
        self.now += seconds


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    """A not-yet-existing database file in a fresh folder."""
    return tmp_path / "data" / "desk.db"


@pytest.fixture
def clock() -> FakeClock:
    """A clock at a fixed time."""
    return FakeClock()


@pytest.fixture
def store(db_path: Path, clock: FakeClock) -> Iterator[SqliteStore]:
    """A store on ``db_path`` with the fake clock."""
    s = SqliteStore(db_path, clock=clock)
    try:
        yield s
    finally:
        s.close()
