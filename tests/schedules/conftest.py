"""Gateways with a store, schedules and a clock the test moves, for the schedule tests."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agent.provider.client import ProviderConfig
from agent.store import SessionStore, SqliteStore
from tests.support import EventLog, poll_until
from tui_gateway.gateway import Gateway, GatewayConfig
from tui_gateway.schedules import Scheduler
from tui_gateway.settings.schedule_settings import ScheduleSettings

START = 1_800_000_000.0
"""Where a test's clock starts (a whole second, so ``every`` due times are whole seconds)."""


class Clock:
    """A wall clock the test moves by hand (unix seconds), shared by every host of a test."""

    def __init__(self, now: float = START) -> None:
        self.now = now
        self._read = threading.Condition()
        self._reads: dict[int, int] = {}  # schedulers' loop threads' reads since the last set

    def __call__(self) -> float:
        with self._read:
            if threading.current_thread().name == "desk-schedules":
                ident = threading.get_ident()
                self._reads[ident] = self._reads.get(ident, 0) + 1
                self._read.notify_all()
            return self.now

    def set(self, now: float) -> None:
        with self._read:
            self.now = now
            self._reads.clear()

    def seen_by(self, loops: int, timeout: float = 30.0) -> bool:
        """Whether ``loops`` schedulers' loops each went once through the time set last (two
        reads: the pass that claims what is due, then the wait it computes), in time."""

        with self._read:
            return self._read.wait_for(
                lambda: sum(n >= 2 for n in self._reads.values()) >= loops, timeout
            )


def every(
    name: str = "tick", seconds: float = 1.0, prompt: str = "say hi", **fields: object
) -> ScheduleSettings:
    """A schedule firing every ``seconds`` with ``prompt`` (a short one by default)."""
    return ScheduleSettings(name=name, prompt=prompt, every_s=seconds, **fields)  # type: ignore[arg-type]


Host = tuple[Gateway, EventLog]


@pytest.fixture
def sqlite_host(provider: ProviderConfig, tmp_path: Path) -> Iterator[Callable[[], Host]]:
    """Opens a gateway on the test's SQLite file (one host; shut down at the end)."""
    made: list[Gateway] = []

    def make() -> Host:
        store: SessionStore = SqliteStore(tmp_path / "desk.db")
        gateway = Gateway(GatewayConfig(provider=provider), store=store)
        log = EventLog()
        gateway.subscribe(log)
        made.append(gateway)
        return gateway, log

    yield make
    for gateway in made:
        gateway.shutdown(timeout_s=5)


def fired(scheduler: Scheduler, count: int, timeout: float = 20.0) -> bool:
    """Whether ``scheduler`` ran ``count`` firings to their outcome in time."""
    return poll_until(lambda: len(scheduler.ran) >= count, timeout)
