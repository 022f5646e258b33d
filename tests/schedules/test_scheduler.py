"""Schedules on one host (real SQLite, the demo model): each firing is a turn of the schedule's
session, titled with its name; a person's stop through the API is theirs, the timeout and the
shutdown are the system's; a firing missed while no host ran is run once at start."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent.provider.client import ProviderConfig
from agent.store import SqliteStore
from contract.results import ResumedSession
from demo_model.server import DemoModelServer
from tests.schedules.conftest import START, Clock, Host, every, fired
from tests.support import cut_short, poll_until
from tui_gateway.gateway import Gateway, GatewayConfig
from tui_gateway.schedules import Scheduler
from tui_gateway.settings.schedule_settings import ScheduleApproval
from tui_gateway.wire.http_server import HttpServer


def test_each_due_time_fires_one_turn_in_the_schedule_s_session(
    sqlite_host: Callable[[], Host],
) -> None:
    gateway, _log = sqlite_host()
    clock = Clock()
    scheduler = Scheduler(gateway, {"tick": every()}, clock=clock, tick_s=0.02).start()
    try:
        for second in (1, 2, 3):
            clock.set(START + second + 0.5)
            scheduler.wake()
            assert fired(scheduler, second)
    finally:
        scheduler.stop()
    assert [(d - START, o) for _, d, o in scheduler.ran] == [
        (1.0, "completed"),
        (2.0, "completed"),
        (3.0, "completed"),
    ]
    store = gateway.store
    assert store is not None
    session_id = store.firings.schedule_session("tick")
    assert session_id is not None
    turns = store.turns.list_turns(session_id)
    assert [t.exit_reason for t in turns] == ["completed"] * 3
    listed = gateway.session_list()
    assert [s.title for s in listed if s.session_id == session_id] == ["tick"]
    rows = store.firings.last_firings("tick", limit=10)
    assert sorted(r.turn_id for r in rows) == sorted(t.id for t in turns)


def test_a_firing_stopped_through_the_api_is_the_user_s(
    sqlite_host: Callable[[], Host], demo_server: DemoModelServer
) -> None:
    gateway, log = sqlite_host()
    demo_server.configure(tokens_per_second=20.0)
    clock = Clock()
    scheduler = Scheduler(gateway, {"tick": every()}, clock=clock, tick_s=0.02).start()
    server = HttpServer(gateway, "secret-token").start()
    try:
        clock.set(START + 1.5)
        scheduler.wake()
        assert poll_until(lambda: bool(scheduler.running()))
        (firing,) = scheduler.running()
        assert log.wait_for(lambda events: any(e.payload.TYPE == "message.delta" for e in events))
        cut = httpx.post(
            f"{server.base_url}/v1/runs/{firing.turn_id}/stop",
            headers={"Authorization": "Bearer secret-token"},
            timeout=10,
        )
        assert cut.status_code == 200 and cut.json()["stopped"]
        assert fired(scheduler, 1)
        cut_short(demo_server)
        assert scheduler.ran[0][2] == "interrupted_by_user"
        store = gateway.store
        assert store is not None
        turn = store.turns.get_turn(firing.turn_id)
        assert turn is not None and (turn.exit_reason, turn.stop_surface) == (
            "interrupted_by_user",
            "api.stop",
        )
        (row,) = store.firings.last_firings("tick")
        assert row.outcome == "interrupted_by_user"
    finally:
        scheduler.stop()
        server.stop()


def test_a_firing_past_its_timeout_is_stopped_by_the_system(
    sqlite_host: Callable[[], Host], demo_server: DemoModelServer
) -> None:
    gateway, _log = sqlite_host()
    demo_server.configure(tokens_per_second=5.0)
    clock = Clock()
    spec = every(timeout_s=0.3)
    scheduler = Scheduler(gateway, {"tick": spec}, clock=clock, tick_s=0.02).start()
    try:
        clock.set(START + 1.5)
        scheduler.wake()
        assert fired(scheduler, 1)
    finally:
        scheduler.stop()
    (_name, _due, outcome) = scheduler.ran[0]
    assert outcome == "interrupted_by_system(schedule.timeout)"
    store = gateway.store
    assert store is not None
    (row,) = store.firings.last_firings("tick")
    turn = store.turns.get_turn(row.turn_id or "")
    assert turn is not None and (turn.exit_reason, turn.stop_issuer, turn.stop_surface) == (
        "interrupted_by_system(schedule.timeout)",
        "system",
        "schedule.timeout",
    )
    assert gateway.worker_threads() == []


def test_the_shutdown_mid_firing_books_gateway_shutdown(
    sqlite_host: Callable[[], Host], demo_server: DemoModelServer
) -> None:
    gateway, log = sqlite_host()
    demo_server.configure(tokens_per_second=5.0)
    clock = Clock()
    scheduler = Scheduler(gateway, {"tick": every()}, clock=clock, tick_s=0.02).start()
    clock.set(START + 1.5)
    scheduler.wake()
    assert poll_until(lambda: bool(scheduler.running()))
    assert log.wait_for(lambda events: any(e.payload.TYPE == "message.delta" for e in events))
    store = gateway.store
    assert store is not None
    scheduler.stop()
    report = gateway.shutdown(timeout_s=5)
    assert scheduler.ran[0][2] == "interrupted_by_system(gateway.shutdown)"
    assert gateway.worker_threads() == [] and report.threads_left == []
    cut_short(demo_server)  # the model server saw the connection close


def test_a_firing_missed_while_no_host_ran_is_run_once_at_start(
    sqlite_host: Callable[[], Host],
) -> None:
    gateway, _log = sqlite_host()
    store = gateway.store
    assert store is not None
    assert store.firings.claim_firing("tick", START - 10.0)  # the last run, long ago
    store.firings.end_firing("tick", START - 10.0, "completed")
    clock = Clock(START + 0.5)  # due at START - 9 ... START: all missed
    scheduler = Scheduler(gateway, {"tick": every()}, clock=clock, tick_s=0.02).start()
    try:
        assert fired(scheduler, 1)
        assert [(d - START, o) for _, d, o in scheduler.ran] == [(0.0, "completed")]
        clock.set(START + 1.5)  # then on as usual
        scheduler.wake()
        assert fired(scheduler, 2)
    finally:
        scheduler.stop()
    assert [d - START for _, d, _ in scheduler.ran] == [0.0, 1.0]


def test_a_schedule_that_never_ran_waits_for_its_first_due_time(
    sqlite_host: Callable[[], Host],
) -> None:
    gateway, _log = sqlite_host()
    clock = Clock(START + 0.5)
    scheduler = Scheduler(
        gateway, {"tick": dataclasses.replace(every(), every_s=60.0)}, clock=clock, tick_s=0.02
    ).start()
    try:
        clock.set(START + 60.5)
        scheduler.wake()
        assert fired(scheduler, 1)
    finally:
        scheduler.stop()
    assert [d - START for _, d, _ in scheduler.ran] == [60.0]


class _SlowRelease(Gateway):
    """A gateway whose session release waits (bounded) until a firing claimed meanwhile has
    opened the session: the moment a release and a new firing cross."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.releasing = threading.Event()
        self.resumed = threading.Event()
        self.hold = True

    def session_resume(self, session_id: str | None = None) -> ResumedSession:
        if self.releasing.is_set():
            self.resumed.set()
        return super().session_resume(session_id)

    def session_release(self, session_id: str) -> bool:
        if self.hold:
            self.hold = False
            self.releasing.set()
            self.resumed.wait(2)  # times out when the new firing waits for the release
        return super().session_release(session_id)


def test_a_firing_claimed_while_the_last_lets_its_session_go_still_runs_its_turn(
    provider: ProviderConfig, tmp_path: Path
) -> None:
    gateway = _SlowRelease(GatewayConfig(provider=provider), store=SqliteStore(tmp_path / "d.db"))
    clock = Clock()
    scheduler = Scheduler(gateway, {"tick": every()}, clock=clock, tick_s=0.02).start()
    try:
        clock.set(START + 1.5)
        scheduler.wake()
        assert gateway.releasing.wait(30)  # the first firing ended and lets the session go
        clock.set(START + 2.5)
        scheduler.wake()
        assert fired(scheduler, 2)
    finally:
        scheduler.stop()
        gateway.shutdown(timeout_s=5)
    assert [(d - START, o) for _, d, o in scheduler.ran] == [(1.0, "completed"), (2.0, "completed")]


@pytest.mark.parametrize(
    ("approval", "seen"),
    [
        (ScheduleApproval.DENY, "calls that need approval are refused in the schedule tick"),
        (ScheduleApproval.ALLOW, "ran-by-the-schedule"),
    ],
)
@pytest.mark.parametrize("child", [False, True], ids=["turn", "child_agent"])
def test_a_firing_s_calls_that_ask_first_are_answered_as_the_schedule_says(
    sqlite_host: Callable[[], Host], approval: ScheduleApproval, seen: str, child: bool
) -> None:
    gateway, _log = sqlite_host()
    call = 'call tool shell with {"command": "echo ran-by-the-schedule"}'
    spec = every(prompt=f"delegate: {call}" if child else call, approval=approval)
    clock = Clock()
    scheduler = Scheduler(gateway, {"tick": spec}, clock=clock, tick_s=0.02).start()
    try:
        clock.set(START + 1.5)
        scheduler.wake()
        assert fired(scheduler, 1, timeout=60)  # nobody else answers: unanswered, it would hang
    finally:
        scheduler.stop()
    assert [o for _, _, o in scheduler.ran] == ["completed"]
    store = gateway.store
    assert store is not None
    session_id = store.firings.schedule_session("tick")
    assert session_id is not None
    results = [m.content for m in store.transcript.all_messages(session_id) if m.role == "tool"]
    assert len(results) == 1 and seen in results[0], results


def test_a_gateway_shut_down_under_its_scheduler_ends_the_claiming(
    sqlite_host: Callable[[], Host],
) -> None:
    gateway, _log = sqlite_host()
    clock = Clock()
    said: list[str] = []
    scheduler = Scheduler(
        gateway, {"tick": every()}, clock=clock, tick_s=0.02, say=said.append
    ).start()
    try:
        assert scheduler.claiming
        gateway.shutdown(timeout_s=5)  # as ``gateway.shutdown`` over the API does
        assert poll_until(lambda: not scheduler.claiming, 30)
        clock.set(START + 1.5)
        scheduler.wake()
    finally:
        scheduler.stop()
    assert (scheduler.ran, said) == ([], [])
