"""Fixtures of the store tests: a database file in a temporary folder, a hand-driven clock and
owner liveness the test decides."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from agent.store import SqliteStore, current_owner, owner_alive


class FakeClock:
    """A wall clock the test moves by hand (unix seconds)."""

    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        """Move the clock forward by ``seconds``."""
        self.now += seconds


@dataclass(frozen=True)
class ScriptedLiveness:
    """Owner liveness chosen by the test: this store's owner string, and which owners run.

    Attributes:
        owner: the owner string the store writes (default: this process's real one).
        alive: answers whether another owner still runs (default: the real ``/proc`` check).
    """

    owner: str = field(default_factory=current_owner)
    alive: Callable[[str], bool] = owner_alive

    def is_alive(self, owner: str) -> bool:
        return self.alive(owner)


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
